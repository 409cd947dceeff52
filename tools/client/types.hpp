#pragma once

/// The client's state as its policies see it: processing resources, attached projects and
/// queued jobs. Pure data; the policies (backoff, debt, rr_sim, work_fetch, cpu_sched) are
/// functions over it, so each can be tested alone. Time is seconds (any origin) as a double.
///
/// Designs: ../shared/seeds/001 (work fetch and GPUs), 003 (client CPU scheduling), the client
/// side of 000 (seconds per app unit) and 004 (the sequences a host holds).

#include "tools/client/backoff.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cobble::client {

/// Resource types a client can have: CPU (index 0) and up to three coprocessor types.
inline constexpr int max_resources = 4;

/// One processing resource type of the host.
struct resource {
  std::string name = "CPU"; ///< "CPU", "NVIDIA", "ATI", "intel_gpu".
  int ninstances = 1;       ///< CPUs, or GPUs of this type.
  double peak_flops = 1e9;  ///< Per instance.
};

/// Which projects accrue long-term debt for a resource (001, "debt eligible").
enum class debt_eligibility {
  /// The design's rule: not backed off for the resource, backoff not at its maximum, not
  /// suspended, "no more tasks" not set. A project that has no work for a resource stops
  /// accruing debt for it once its backoff reaches the maximum.
  design,
  /// Every attached project that is not suspended and accepts tasks accrues debt for every
  /// resource, so a project that cannot use a resource is compensated on the ones it can use.
  attached,
};

/// The client's preferences and policy parameters.
struct settings {
  double sched_period = 3600;     ///< 003: seconds between preempt_apps.
  double connect_interval = 8640; ///< CI: work_buf_min (0.1 day).
  double additional_work = 21600; ///< AW: work_buf_additional (0.25 day).
  double backoff_min = 60;        ///< First per-resource backoff.
  double backoff_max = 86400;     ///< The cap the backoff doubles up to (1 day).
  debt_eligibility eligibility = debt_eligibility::design;
  /// A project is overworked when its overall debt is below minus this (CPU-seconds).
  double overworked_debt = 3600;
  /// Weight of a new sample in seconds_per_app_unit's exponential average.
  double spau_weight = 0.1;
  /// Completed results are reported within this many seconds (or on the next RPC).
  double report_delay = 3600;
  /// A job is in deadline trouble (high priority) when the round-robin simulation finishes
  /// it later than its deadline minus this margin.
  double deadline_margin = 0;
};

/// Work-fetch and debt state of one (project, resource) pair (001: RSC_PROJECT_WORK_FETCH).
struct project_rsc {
  backoff bo;                  ///< Per-resource backoff.
  double ltd = 0;              ///< Long-term debt in instance-seconds.
  double secs_this_period = 0; ///< Instance-seconds used since the last debt update.
  double last_asked = -1e300;  ///< When work of this type was last asked of the project.
};

/// One attached project.
struct project {
  std::string name;
  double share = 100;     ///< Resource share.
  bool suspended = false; ///< Suspended via GUI.
  bool no_more_tasks = false;
  double min_rpc_time = 0; ///< No RPC before this (request_delay, overall backoff).
  std::array<project_rsc, max_resources> rsc{};
  /// 003: expected future debt while choosing (per resource being scheduled), overall units.
  double expected_future_debt = 0;
  /// Overall debt: sum of the resources' LTDs weighted by their speed (CPU-seconds).
  double overall_debt = 0;
  /// 003: work of jobs that finished this period, per resource, in overall units.
  std::array<double, max_resources> done_this_period{};
};

/// Where a job is in its life on the client.
enum class job_state : std::uint8_t { queued, running, preempted, done };

/// One job (result) the client holds.
struct job {
  std::uint64_t id = 0;
  std::string name;
  int project = 0;      ///< Index into the projects.
  int rsc = 0;          ///< Index into the resources.
  double instances = 1; ///< Instances of `rsc` one job uses.
  double est_secs = 0;  ///< Estimated elapsed seconds in total.
  double elapsed = 0;   ///< Elapsed seconds so far.
  double deadline = 0;  ///< Report deadline.
  double received = 0;  ///< When it arrived.
  job_state state = job_state::queued;
  double expected_pay_off = 0;      ///< 003, overall units; reset when preempted.
  double work_done_this_period = 0; ///< 003: instance-seconds since preempt_apps.
  bool deadline_trouble = false;    ///< Set by the round-robin simulation.
  int slot = -1;                    ///< Device instance it runs on (first one), -1 if none.
  std::string app_version;          ///< Key of seconds_per_app_unit (app and plan class).
  double app_units = 1;             ///< Predicted app units.
  /// Set by whoever executes jobs (the emulator); no policy reads it.
  double actual_secs = 0;
  double finished_at = 0; ///< When it completed (state done).

  /// Estimated seconds left (never below one second while not done).
  double remaining() const { return est_secs > elapsed + 1 ? est_secs - elapsed : 1; }
  bool active() const { return state == job_state::running; }
};

/// The speed of a resource relative to the CPU (FLOPs per instance-second over the CPU's).
double relative_speed(const std::vector<resource>& rs, int r);

} // namespace cobble::client
