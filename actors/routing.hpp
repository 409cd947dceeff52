#pragma once

/// Which state an event changes: the one routing table of Cobble. Replay (apply(world&)) and
/// the live actors (the project actor, which applies an event to the states it holds and
/// forwards it to the sequence and app-version actors that own the rest) both read it, so the
/// two cannot drift apart.

#include "actors/events.hpp"

#include <cstdint>
#include <vector>

namespace cobble {

/// The owners of an event's state, beyond its project (every event changes its project's
/// state, if only its counters).
struct event_owners {
  /// Hosts whose state the event changes. A host's state exists from its host_registered
  /// event on; the other events name hosts that exist.
  std::vector<id_type> hosts;
  /// The work sequence whose state the event changes (0: none): the sequence's own events
  /// and those of its workunits.
  id_type sequence = 0;
  /// App versions whose statistics the event changes (a validation's versions, a
  /// normalization's), or which it creates (a configuration's, anonymous identities included).
  std::vector<std::uint32_t> app_versions;
};

/// The owners of `p`. Pure: it reads nothing but the payload.
event_owners owners_of(const payload& p);

} // namespace cobble
