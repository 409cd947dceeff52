#pragma once

/// One emulated (or real) client: the state and the policies of this folder wired together
/// in the order the BOINC client runs them. Whoever owns it executes the jobs and talks to
/// the servers: each step it calls run(), schedule() and plan_rpc(), and after an RPC
/// add_job() and after_rpc(). No actor, no network, no clock of its own.

#include "tools/client/app_units.hpp"
#include "tools/client/cpu_sched.hpp"
#include "tools/client/debt.hpp"
#include "tools/client/rr_sim.hpp"
#include "tools/client/sequences.hpp"
#include "tools/client/types.hpp"
#include "tools/client/work_fetch.hpp"

#include <optional>
#include <vector>

namespace cobble::client {

/// A scheduler RPC the client wants to make now.
struct rpc_plan {
  int project = -1;
  work_request request; ///< Empty for a report-only RPC.
  bool report_only = false;
  fetch_reason reason = fetch_reason::major_shortfall;
  int rsc = 0;
};

class client {
public:
  client(std::vector<resource> rs, settings s, double now);

  /// Attaches a project (it starts debt-free: every debt is at most zero). Returns its index.
  int attach(project p);

  /// Runs the running jobs for `dt` seconds from `now` when `computing` (the host is on and
  /// BOINC may compute); jobs whose `actual_secs` are reached finish. Answers the number of
  /// jobs that finished.
  int run(double now, double dt, bool computing);

  /// Every step after run(): at a period boundary the debts are updated and preempt_apps
  /// runs for each resource; otherwise start_apps fills idle instances.
  void schedule(double now);

  /// The RPC to make now, if any: a work fetch (work_fetch.hpp), or a report of results that
  /// waited report_delay or whose deadline is near.
  std::optional<rpc_plan> plan_rpc(double now);

  /// Completed jobs of project `p`, removed from the client (to put in a request).
  std::vector<job> take_reports(int p);

  /// A job the server sent; est_secs is filled from seconds_per_app_unit when the version has
  /// one, otherwise from `fpops_est` and the resource's peak FLOPS.
  void add_job(job j, double fpops_est);

  /// The server aborted job `name` (`<result_abort>`): it is dropped without a report.
  /// Answers its id, or 0 when the client does not hold it.
  std::uint64_t abort(const std::string& name);

  /// The reply to an RPC of `plan` arrived: per-resource backoffs, and no RPC to that project
  /// before now + request_delay.
  void after_rpc(const rpc_plan& plan, const std::array<int, max_resources>& jobs_got, double now,
                 double request_delay);

  std::vector<resource>& resources() { return rs_; }
  const std::vector<resource>& resources() const { return rs_; }
  std::vector<project>& projects() { return ps_; }
  const std::vector<project>& projects() const { return ps_; }
  std::vector<job>& jobs() { return jobs_; }
  const std::vector<job>& jobs() const { return jobs_; }
  const settings& config() const { return s_; }
  seconds_per_app_unit& spau() { return spau_; }
  /// The sequences held at project p.
  sequence_list& sequences(int p) { return seqs_[static_cast<std::size_t>(p)]; }
  /// Instance-seconds each project used of each resource in the last run().
  const std::vector<std::array<double, max_resources>>& last_usage() const { return usage_; }
  /// Forces the next plan_rpc() to decide afresh (something changed outside).
  void touch() {
    next_check_ = 0;
    start_needed_ = true;
    running_stale_ = true;
  }

private:
  std::vector<resource> rs_;
  settings s_;
  std::vector<project> ps_;
  std::vector<job> jobs_;
  std::vector<sequence_list> seqs_;
  seconds_per_app_unit spau_;
  std::vector<std::array<double, max_resources>> usage_;
  double period_start_;
  double last_debt_update_;
  double next_check_ = 0;
  std::uint64_t next_id_ = 1;
  bool start_needed_ = true;         ///< An instance may have freed up, or a job arrived.
  bool running_stale_ = true;        ///< running_ must be rebuilt.
  std::vector<std::size_t> running_; ///< Indices of the running jobs (run() only).
};

} // namespace cobble::client
