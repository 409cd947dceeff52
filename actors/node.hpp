#pragma once

/// The node: recovers the world from the log, spawns the log, assimilator, aggregator,
/// app-version and project actors, monitors every one of them (an abnormal exit of any stops
/// the process: fail-stop), and shuts them down in order (projects, then a final snapshot,
/// then the log).

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "actors/log.hpp"
#include "actors/rpc_port.hpp"
#include "actors/state.hpp"
#include "config/config.hpp"
#include "storage/disk_space.hpp"
#include "storage/event_store.hpp"
#include "storage/file_store.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace cobble {

/// The node's interface.
using node_actor = caf::typed_actor<
  // Stops the projects, takes a snapshot, stops the log; answers when done.
  caf::replies_to<atom::snapshot, atom::sync>::with<std::uint64_t>>;

/// Handles of a running node.
struct node_handles {
  node_actor node;
  log_actor log;
  std::map<std::string, project_actor> projects; ///< By project name.
  std::map<std::string, std::uint16_t> project_index;
  aggregator_actor aggregator;     ///< Cross-project credit normalization.
  std::uint64_t recovered_seq = 0; ///< Last event applied at start.
};

/// Options of a node.
struct node_options {
  bool detached_log = true; ///< Off in deterministic tests (also for the assimilator).
  /// The data directory's files; null: no assimilator (files are left alone).
  std::shared_ptr<storage::file_store> files;
  /// Where scheduler RPC answers go once durable (the edge; a test's collector); null: they
  /// are dropped.
  std::shared_ptr<rpc_port> port;
  /// Called with the recovered world before any actor starts; an error refuses the start
  /// (nothing was changed). cobbled checks its secrets against the results in progress.
  std::function<caf::error(const world&)> before_start;
  /// The data directory's free space against server.min_free_disk (storage/disk_space.hpp),
  /// checked by the snapshotter once a second; null: not watched.
  std::shared_ptr<storage::disk_space> disk;
  /// Reads a rebuilt world now and then on the snapshotter's thread (actors/log.hpp); cobbled
  /// makes the statistics export with it.
  periodic_reader reader;
};

/// Recovers state from `store` and starts every actor. Fails (changing nothing) when the log
/// or a snapshot is corrupt.
caf::expected<node_handles> start_node(caf::actor_system& sys, const config::cobble_config& cfg,
                                       const std::shared_ptr<storage::event_store>& store,
                                       const clock_ptr& clk, const node_options& opts = {});

/// Registers Cobble's message types and error renderers with a CAF configuration.
void register_types(caf::actor_system_config& cfg);

} // namespace cobble
