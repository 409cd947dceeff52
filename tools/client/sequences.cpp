#include "tools/client/sequences.hpp"

#include <algorithm>

namespace cobble::client {

void sequence_list::add(const std::string& name) {
  if (!name.empty() && !holds(name))
    names_.push_back(name);
}

bool sequence_list::revoke(const std::string& name) {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end())
    return false;
  names_.erase(it);
  return true;
}

void sequence_list::revoke_all(const std::vector<std::string>& revoked) {
  for (const auto& n : revoked)
    revoke(n);
}

bool sequence_list::holds(const std::string& name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

} // namespace cobble::client
