#pragma once

/// The project actor: one per project. It owns the project's state (accounts, apps, hosts,
/// workunits and results) and every host's state, and serves its hosts' scheduler RPCs in one
/// step: admission, the host's decisions (host_logic), job selection and validation
/// (project_logic), then one append of the RPC's events with its answer, which the log hands
/// to the edge once durable. It routes every event it decides or learns to the sequence and
/// app-version actors that own the rest of the state (owners_of, actors/routing.hpp), hands
/// finished work to the assimilator, and runs the deadline sweep and the periodic credit
/// normalization.
///
/// The decisions live in project_logic and host_logic (plain methods, testable without
/// actors); the behavior is a list of short handlers that call them.

#include "actors/actors.hpp"
#include "actors/assimilator.hpp"
#include "actors/clock.hpp"
#include "actors/host_logic.hpp"
#include "actors/host_table.hpp"
#include "actors/project_logic.hpp"
#include "config/config.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <map>
#include <set>
#include <unordered_map>

namespace cobble {

/// Everything the project actor needs at spawn.
struct project_init {
  config::project_config config;
  std::uint16_t index = 0;
  project_state state;                           ///< Recovered state.
  std::unordered_map<id_type, host_state> hosts; ///< Recovered host states.
  log_actor log;
  clock_ptr clk;
  assimilator_actor assimilator;               ///< May be null (tests): files are then left alone.
  std::map<id_type, sequence_state> sequences; ///< Recovered sequence states.
  /// The project's app-version actors by version id (they get the events that change their
  /// statistics; normalization reads them).
  std::map<std::uint32_t, app_version_actor> versions;
};

/// The state of a project actor.
struct project_actor_state {
  project_logic logic;
  config::project_config config;
  log_actor log;
  clock_ptr clk;
  assimilator_actor assimilator;
  /// Every host's state, live or passivated: the project decides for its hosts
  /// (host_logic). Idle hosts are passivated on the tick (config: passivate_hosts_after,
  /// max_live_hosts).
  host_table hosts;
  host_settings host_config; ///< What host_logic needs of the configuration.
  /// When each host last had a work request served (limits.min_sendwork_interval). Not
  /// durable, and no event: a rate limit is soft state, and an event per RPC for it would
  /// be the log growth it guards against. After a restart every host starts afresh.
  std::unordered_map<id_type, time_us> last_work_request;
  std::map<id_type, work_sequence_actor> sequences;
  /// Routed events waiting for the next append to go to their sequence and app-version
  /// actors (route, append in actors/project_flow.hpp). Empty between messages.
  std::map<id_type, std::vector<event>> to_sequences;
  std::map<std::uint32_t, std::vector<event>> to_versions;
  time_us next_sequence_check = 0; ///< When the sequences next check their hosts.
  /// Released state uploads whose grace period is over but whose files were still in use
  /// (by an element that restarted from them); looked at again as workunit files go.
  std::set<id_type> release_due;
  std::map<std::uint32_t, app_version_actor> versions;
  plan_class_scales cross_project;                       ///< From the aggregator (not durable).
  std::map<std::uint32_t, app_version_state> last_stats; ///< Of the last normalization.
  static inline const char* name = "project";
};

using project_ptr = project_actor::stateful_pointer<project_actor_state>;

/// The project actor's behavior.
project_actor::behavior_type project(project_ptr self, project_init init);

/// Spawns a project actor.
project_actor spawn_project(caf::actor_system& sys, project_init init);

} // namespace cobble
