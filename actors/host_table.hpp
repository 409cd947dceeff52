#pragma once

/// The host states a project holds, live or passivated (docs/architecture.md, "Hosts in
/// memory: live and passivated").
///
/// A live host's state is decoded in a hash map, ready for the project's decisions. A host
/// not used for a while is passivated: its state is encoded with the snapshot codec into one
/// compact string and the decoded state is freed. The next use (an RPC, a verdict, a timeout,
/// a view) decodes it again: identical, since the codec writes every field bit for bit. So
/// the decoded states in memory are bounded by the hosts in use, not by every host that ever
/// called; passivated hosts cost their encoding (a few hundred bytes, about half of a
/// decoded state).
///
/// Passivation is invisible to the event log, to replay and to snapshots: it changes where a
/// state is kept, never what it is. References returned by `find` and `add` stay valid until
/// the next `passivate` (the project actor passivates on its tick, between messages).

#include "actors/state.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace cobble {

/// When hosts are passivated.
struct passivation_policy {
  /// A live host not used for this long is passivated; 0: never for its age.
  time_us idle_after = 0;
  /// Live hosts kept at most: beyond it the least recently used are passivated; 0: no cap.
  std::size_t max_live = 0;
  /// Hosts passivated by one call at most, so that one sweep never holds the project long
  /// (after a restart every host may be idle); the rest go on later calls. 0: no cap.
  std::size_t max_per_call = 0;
};

/// What a host table holds, for /metrics.
struct host_table_gauges {
  std::size_t live = 0;           ///< Decoded host states.
  std::size_t passivated = 0;     ///< Encoded host states.
  std::size_t passive_bytes = 0;  ///< Bytes of the encodings and their map entries.
  std::uint64_t passivations = 0; ///< Since start.
  std::uint64_t activations = 0;  ///< Since start.
};

/// The host states of one project, live or passivated.
class host_table {
public:
  host_table() = default;

  /// Takes over recovered states (the map itself, not a copy: at a million hosts a second
  /// map would double the recovered states' memory for a moment), all live, each last used
  /// at its host's last RPC.
  explicit host_table(std::unordered_map<id_type, host_state> states);

  /// The state of host `id`, activated if it was passivated, marked used at `now`; null for
  /// a host the table does not hold.
  host_state* find(id_type id, time_us now);

  /// A new host's (empty) state, live and used at `now`; the host's existing state if it has
  /// one.
  host_state& add(id_type id, time_us now);

  /// A copy of host `id`'s state, live or passivated, leaving it as it is (for views).
  std::optional<host_state> copy_of(id_type id) const;

  /// Every host's state, decoded (for comparing live and replayed states).
  std::unordered_map<id_type, host_state> all() const;

  /// Passivates the live hosts not used since `now - idle_after`, then the least recently
  /// used beyond `max_live`, at most `max_per_call` in all. Invalidates references from
  /// `find` and `add`. Returns how many were passivated.
  std::size_t passivate(time_us now, const passivation_policy& policy);

  /// Hosts held, live and passivated.
  std::size_t size() const { return live_.size() + passive_.size(); }

  /// How many hosts are live and passivated, and the passivated ones' bytes.
  host_table_gauges gauges() const;

  /// Hosts whose last RPC was at `since` or later, live or passivated (a pass over every
  /// host; nothing is decoded).
  std::size_t contacted_since(time_us since) const;

  /// The last RPC of host `id`, live or passivated, without decoding it; 0 when unknown.
  time_us last_contact(id_type id) const;

  /// Calls `f(id, state)` for at most `n` live hosts (for sampling their memory).
  template <class F>
  void sample_live(std::size_t n, F f) const {
    for (const auto& [id, s] : live_) {
      if (n-- == 0)
        return;
      f(id, s);
    }
  }

  /// Bytes a live host costs besides its state: its hash-map node and bucket, and its entry
  /// in the last-use map.
  static constexpr std::size_t live_entry_bytes = 2 * (2 * sizeof(void*) + sizeof(id_type))
                                                  + sizeof(time_us);

private:
  /// When a live host was last used: from `used_`, else (not used since the start) its last
  /// RPC.
  time_us used(id_type id, const host_state& s) const;

  void passivate_one(std::unordered_map<id_type, host_state>::iterator it);

  std::unordered_map<id_type, host_state> live_;
  /// The last use of live hosts used since the start (or since they were activated).
  std::unordered_map<id_type, time_us> used_;
  /// A passivated host: its encoding, and its last RPC so that counting recent hosts needs no
  /// decoding.
  struct passive_host {
    std::string blob;
    time_us last_rpc = 0;
  };
  std::unordered_map<id_type, passive_host> passive_;
  std::size_t passive_bytes_ = 0;
  std::uint64_t passivations_ = 0;
  std::uint64_t activations_ = 0;
};

/// A host state encoded for passivation (the snapshot codec, without a format byte: the
/// encoding never leaves the process).
std::string encode_passivated(const host_state& s);

/// Decodes an encoding of encode_passivated; nullopt when it is malformed.
std::optional<host_state> decode_passivated(std::string_view blob);

} // namespace cobble
