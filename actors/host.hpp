#pragma once

/// The host actor: one per active host. It handles its host's scheduler RPC (reports,
/// description, work request), owns the host_app_version statistics and the results the
/// host holds, and times out the results the project finds overdue.

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "actors/messages.hpp"
#include "actors/state.hpp"

#include <caf/actor_system.hpp>

#include <map>
#include <vector>

namespace cobble {

/// Everything a host actor needs at spawn.
struct host_init {
  host_state state;
  log_actor log;
  project_actor project;
  clock_ptr clk;
  std::uint16_t project_index = 0;
  credit_settings credit; ///< The project's credit settings (for apply).
  /// AutoFlops settings of each app version's app (cherry-picking countermeasures).
  std::map<std::uint32_t, autoflops_settings> autoflops{};
};

/// The AutoFlops settings of every app version (configured and anonymous) of the apps.
std::map<std::uint32_t, autoflops_settings> autoflops_by_version(const std::vector<app_rec>& apps);

/// Spawns a host actor.
host_actor spawn_host(caf::actor_system& sys, host_init init);

/// The host description in a request, as the server keeps it.
host_info_rec host_info_from(const sched_request& req);

/// Adds what the project granted (jobs and their files, revoked sequences, aborts, messages,
/// AutoFlops figures) to a reply.
void add_grant(sched_reply& reply, const job_grant& grant);

/// Builds the record of one reported result, flagging implausible times.
report_rec report_from(const reported_result& r);

} // namespace cobble
