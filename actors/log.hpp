#pragma once

/// The log actor: owns the event store, group-commits appends (one WriteBatch and one sync
/// for every append that arrived while the previous commit ran), answers syncs once durable,
/// delivers durable events in seq order to subscribers, and tells the snapshotter how far the
/// log is.

#include "actors/actors.hpp"
#include "actors/state.hpp"
#include "storage/event_store.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <memory>

namespace cobble {

/// Settings of the log actor.
struct log_options {
  std::uint64_t snapshot_every_events = 100000;
  std::chrono::seconds snapshot_interval{300};
  std::size_t snapshots_kept = 3;
  bool detached = true; ///< Off in deterministic tests (a detached actor gets its own thread).
};

/// Spawns the log actor. `recovered_seq` is the seq of the world rebuilt at start. The
/// snapshotter keeps no copy of the world: a snapshot rebuilds the state at the last durable
/// seq from the store (newest snapshot plus the events after it), writes it and frees it.
log_actor spawn_log(caf::actor_system& sys, std::shared_ptr<storage::event_store> store,
                    std::uint64_t recovered_seq, log_options opts);

/// Rebuilds the world from the newest snapshot and the events after it. With `from_scratch`
/// it ignores snapshots and folds every event. Fails on a corrupt event or snapshot, naming
/// its seq. `progress` (optional) is called every 1M events with the seq reached.
caf::expected<world> recover(const storage::event_store& store, bool from_scratch = false,
                             std::uint64_t up_to = UINT64_MAX,
                             const std::function<void(std::uint64_t)>& progress = {});

} // namespace cobble
