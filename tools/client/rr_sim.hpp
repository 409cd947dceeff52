#pragma once

/// The round-robin simulation of the queued jobs (001, 003): each resource's instances are
/// shared among the projects with jobs for it in proportion to their resource shares (a
/// project that cannot use its part leaves it to the others), every job of a project
/// progressing at the same rate. It answers, per resource, when the first instance goes idle
/// and how many instance-seconds stay idle within the work-buffer horizons, and per job
/// whether it would finish after its deadline (deadline trouble, high priority).

#include "tools/client/types.hpp"

#include <array>
#include <vector>

namespace cobble::client {

/// What the simulation found for one resource.
struct rr_resource {
  double saturated = 0;    ///< Seconds from now until an instance is first idle.
  double shortfall_ci = 0; ///< Idle instance-seconds within [now, now + CI].
  double shortfall = 0;    ///< Idle instance-seconds within [now, now + CI + AW].
  double idle_now = 0;     ///< Instances no queued job can use now.
};

/// What the simulation found.
struct rr_result {
  std::array<rr_resource, max_resources> rsc{};
  /// Per project: it has a job not yet done, for any resource.
  std::vector<char> has_runnable;
};

/// Simulates the jobs not done from `now` and sets each job's deadline_trouble.
rr_result rr_simulate(std::vector<job>& jobs, const std::vector<project>& ps,
                      const std::vector<resource>& rs, double now, const settings& s);

} // namespace cobble::client
