#pragma once

/// Which state an event changes: the one routing table of Cobble. Replay (apply(world&)) and
/// the live actors (the project actor, which applies an event to the states it holds and
/// forwards it to the sequence and app-version actors that own the rest) both read it, so the
/// two cannot drift apart.

#include "actors/events.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace cobble {

/// Entity kinds in event headers (what `cobble log replay --entity KIND:ID` filters on).
enum class entity_kind : std::uint8_t {
  project = 1,
  user = 2,
  host = 3,
  workunit = 4,
  sequence = 5,
  app = 6,  ///< An app and its versions (id: the app's).
  team = 7, ///< A team of the directory.
};

const char* to_string(entity_kind x);

/// The entity an event is about (its header), e.g. {workunit, 17}.
std::pair<entity_kind, id_type> entity_of(const payload& p);

/// True when the event concerns that entity (for `--entity` filters): a host is touched by
/// its registration and every dispatch, report and timeout of its results.
bool touches(const event& e, entity_kind kind, id_type id);

/// The host an event concerns, if any (registration, description, dispatch, report, timeout).
std::optional<id_type> host_of(const payload& p);

/// The hosts an event takes results or sequence assignments from or gives them to: sequence
/// assignments and ends, cancelled workunits.
std::vector<id_type> hosts_taken_from(const payload& p);

/// The result an event concerns, if any.
std::optional<result_ref> result_of(const payload& p);

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
  /// normalization's), or which it creates (a configuration's configured versions).
  std::vector<std::uint32_t> app_versions;
};

/// The owners of `p`. Pure: it reads nothing but the payload.
event_owners owners_of(const payload& p);

} // namespace cobble
