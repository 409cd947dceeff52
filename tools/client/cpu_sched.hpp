#pragma once

/// Job scheduling by debt (003), for each resource type on its own instances:
///  - preempt_apps, every scheduling period: jobs in deadline trouble first (earliest
///    deadline first, "high priority"), then repeatedly the project with the largest expected
///    future debt gets an instance, preferring its running job, then a preempted one, then a
///    new one; its expected future debt drops by the pay-off expected for the period;
///  - start_apps, when an instance frees up mid-period: the same choice among preempted and
///    new jobs, with debts net of the work done and expected this period;
///  - handle_finished_app: the accounting of a job that ended.
/// The debt is the project's overall long-term debt (debt.hpp), updated each period; pay-offs
/// are in the same unit (CPU-seconds: instance-seconds times the resource's relative speed).
/// need_to_get_work is 003's older fetch predicate (bin packing, per-project cap).

#include "tools/client/types.hpp"

#include <vector>

namespace cobble::client {

/// At a period boundary, for resource `r`: decides which jobs run this period.
void preempt_apps(std::vector<project>& ps, std::vector<job>& jobs, const std::vector<resource>& rs,
                  int r, const settings& s);

/// Mid-period, for resource `r`: fills idle instances. `fraction_left` is the part of the
/// period still to come (0..1).
void start_apps(std::vector<project>& ps, std::vector<job>& jobs, const std::vector<resource>& rs,
                int r, double fraction_left, const settings& s);

/// A running job finished: its work this period is counted for its project and its
/// instance is freed.
void handle_finished_app(std::vector<project>& ps, job& j, const std::vector<resource>& rs);

/// Instances of `r` used by running jobs.
double instances_used(const std::vector<job>& jobs, int r);

/// 003's need_to_get_work, for the CPU jobs.
struct need_work {
  bool need = false;
  int num_cpus_busy = 0;               ///< CPU bins filled with min_work_buf_secs of work.
  double total_work_secs = 0;          ///< Sum of the per-project capped work.
  std::vector<double> avail_work_secs; ///< Per project, before the cap.
};
need_work need_to_get_work(const std::vector<job>& jobs, const std::vector<project>& ps, int ncpus,
                           double min_work_buf_secs);

} // namespace cobble::client
