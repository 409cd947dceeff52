#pragma once

/// The work sequences a host believes are assigned to it (004). The client lists them in
/// every scheduler request (`<work_sequences>`); the server answers, for each one no longer
/// assigned to the host, `<work_sequence_revoked>`, and the client drops it.

#include <string>
#include <vector>

namespace cobble::client {

class sequence_list {
public:
  /// A job of sequence `name` arrived: the host now holds it (no duplicates).
  void add(const std::string& name);
  /// The server says the host no longer holds `name`; answers whether it was held.
  bool revoke(const std::string& name);
  /// Drops every sequence in `revoked`.
  void revoke_all(const std::vector<std::string>& revoked);
  bool holds(const std::string& name) const;
  /// The names, in the order they were first assigned (what a request lists).
  const std::vector<std::string>& names() const { return names_; }

private:
  std::vector<std::string> names_;
};

} // namespace cobble::client
