#pragma once

/// The log actor: owns the event store, group-commits appends (one WriteBatch and one sync
/// for every append that arrived while the previous commit ran), answers syncs and hands
/// scheduler RPC answers to the RPC port once durable, and tells the snapshotter how far the
/// log is.

#include "actors/actors.hpp"
#include "actors/rpc_port.hpp"
#include "actors/state.hpp"
#include "storage/disk_space.hpp"
#include "storage/event_store.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace cobble {

/// Work on a whole world at most every `every` (cobbled's statistics export): run on the
/// snapshotter's thread with the world a snapshot was just made from, before it is freed,
/// once `due` has passed; when no snapshot is due by then the world is rebuilt for the reader
/// alone, so an idle project is still read on time. Never the live actors' state; skipped
/// while the disk is low. What `read` throws is logged, never fatal.
struct periodic_reader {
  std::function<void(const world&)> read; ///< Empty: no reader.
  std::chrono::seconds every{86400};
  std::chrono::steady_clock::time_point due{}; ///< The first turn (default: at once).
};

/// Settings of the log actor.
struct log_options {
  std::uint64_t snapshot_every_events = 100000;
  std::chrono::seconds snapshot_interval{300};
  /// Snapshots take at most this share of the time: after one that took T, the next waits
  /// at least T * (1 / share - 1), whatever the two triggers above say.
  double snapshot_time_share = 0.1;
  std::size_t snapshots_kept = 3;
  bool detached = true; ///< Off in deterministic tests (a detached actor gets its own thread).
  /// The free space of the data directory, read once a second on the snapshotter's thread;
  /// while it is low no snapshot is written. Null: not watched.
  std::shared_ptr<storage::disk_space> disk;
  periodic_reader reader; ///< Empty: none.
};

/// Whether the snapshotter takes a snapshot now: after `events_since` durable events, `since_last`
/// after the previous snapshot ended, which took `last_took` (zero when there was none). A
/// snapshot rebuilds and writes the whole state, so its cost grows with the state, not with
/// the events since the last one; the time share keeps that cost a bounded part of the server's
/// time however large the state grows, at the price of a longer tail to replay at recovery.
bool snapshot_due(const log_options& opts, std::uint64_t events_since,
                  std::chrono::steady_clock::duration since_last,
                  std::chrono::steady_clock::duration last_took);

/// Spawns the log actor. `recovered_seq` is the seq of the world rebuilt at start; `port`
/// receives the scheduler RPC answers (null: they are dropped). The snapshotter keeps no
/// copy of the world: a snapshot rebuilds the state at the last durable seq from the store
/// (newest snapshot plus the events after it), writes it and frees it.
log_actor
spawn_log(caf::actor_system& sys, std::shared_ptr<storage::event_store> store,
          std::uint64_t recovered_seq, log_options opts, std::shared_ptr<rpc_port> port = nullptr);

/// Rebuilds the world from the newest snapshot and the events after it. With `from_scratch`
/// it ignores snapshots and folds every event. A snapshot that cannot be read (missing file,
/// wrong size, checksum, does not decode) is passed over with a warning naming it and its
/// file, for the one before it or, failing all, the first event; its seq is added to
/// `fallbacks` (optional). Fails on a corrupt event, naming its seq. `progress` (optional) is
/// called every 1M events with the seq reached.
caf::expected<world>
recover(const storage::event_store& store, bool from_scratch = false,
        std::uint64_t up_to = UINT64_MAX, const std::function<void(std::uint64_t)>& progress = {},
        std::vector<std::uint64_t>* fallbacks = nullptr);

} // namespace cobble
