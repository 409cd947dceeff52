#include "tools/client/client.hpp"

#include <algorithm>
#include <limits>

namespace cobble::client {

client::client(std::vector<resource> rs, settings s, double now)
  : rs_(std::move(rs)), s_(s), period_start_(now - s.sched_period), last_debt_update_(now) {
  if (rs_.empty())
    rs_.push_back(resource{});
  if (rs_.size() > static_cast<std::size_t>(max_resources))
    rs_.resize(static_cast<std::size_t>(max_resources));
}

int client::attach(project p) {
  for (auto& r : p.rsc)
    r.ltd = std::min(r.ltd, 0.0);
  ps_.push_back(std::move(p));
  seqs_.emplace_back();
  usage_.emplace_back();
  update_overall_debts(ps_, rs_);
  next_check_ = 0;
  start_needed_ = true;
  return static_cast<int>(ps_.size()) - 1;
}

int client::run(double now, double dt, bool computing) {
  for (auto& u : usage_)
    u.fill(0);
  if (!computing || dt <= 0)
    return 0;
  int finished = 0;
  if (running_stale_) {
    running_.clear();
    for (std::size_t i = 0; i < jobs_.size(); ++i)
      if (jobs_[i].state == job_state::running)
        running_.push_back(i);
    running_stale_ = false;
  }
  for (auto i : running_) {
    auto& j = jobs_[i];
    if (j.state != job_state::running)
      continue;
    double used = std::min(dt, std::max(0.0, j.actual_secs - j.elapsed));
    j.elapsed += used;
    double inst_secs = used * j.instances;
    j.work_done_this_period += inst_secs;
    auto pi = static_cast<std::size_t>(j.project);
    auto ri = static_cast<std::size_t>(j.rsc);
    ps_[pi].rsc[ri].secs_this_period += inst_secs;
    usage_[pi][ri] += inst_secs;
    if (j.elapsed >= j.actual_secs - 1e-9) {
      j.finished_at = now + used;
      handle_finished_app(ps_, j, rs_);
      spau_.add(j.app_version, j.elapsed, j.app_units, s_.spau_weight);
      ++finished;
    }
  }
  if (finished > 0) {
    next_check_ = 0;
    start_needed_ = true;
    running_stale_ = true;
  }
  return finished;
}

void client::schedule(double now) {
  if (now >= period_start_ + s_.sched_period) {
    double dt = now - last_debt_update_;
    for (std::size_t r = 0; r < rs_.size(); ++r)
      update_ltd(ps_, static_cast<int>(r), rs_[r], dt, now, s_);
    update_overall_debts(ps_, rs_);
    last_debt_update_ = now;
    rr_simulate(jobs_, ps_, rs_, now, s_); // sets deadline_trouble
    for (std::size_t r = 0; r < rs_.size(); ++r)
      preempt_apps(ps_, jobs_, rs_, static_cast<int>(r), s_);
    period_start_ = now;
    start_needed_ = false;
    running_stale_ = true;
    return;
  }
  if (!start_needed_)
    return;
  start_needed_ = false;
  running_stale_ = true;
  double left = 1 - (now - period_start_) / s_.sched_period;
  for (std::size_t r = 0; r < rs_.size(); ++r)
    if (instances_used(jobs_, static_cast<int>(r)) + 1e-9 < rs_[r].ninstances)
      start_apps(ps_, jobs_, rs_, static_cast<int>(r), left, s_);
}

std::optional<rpc_plan> client::plan_rpc(double now) {
  if (now < next_check_)
    return std::nullopt;
  auto rr = rr_simulate(jobs_, ps_, rs_, now, s_);
  const double inf = std::numeric_limits<double>::infinity();
  double next = now + s_.sched_period;
  auto later = [&](double t) {
    if (t > now)
      next = std::min(next, t);
  };
  if (auto d = choose_fetch(ps_, rs_, rr, now, s_)) {
    next_check_ = 0;
    return rpc_plan{d->project, d->request, false, d->reason, d->rsc};
  }
  // Reports that waited long enough, or whose deadline is near.
  for (std::size_t p = 0; p < ps_.size(); ++p) {
    double due = inf;
    for (const auto& j : jobs_)
      if (j.state == job_state::done && j.project == static_cast<int>(p))
        due = std::min({due, j.finished_at + s_.report_delay, j.deadline - s_.report_delay});
    if (due == inf)
      continue;
    if (due <= now && can_contact(ps_[p], now)) {
      next_check_ = 0;
      return rpc_plan{static_cast<int>(p), {}, true, fetch_reason::major_shortfall, 0};
    }
    later(std::max(due, ps_[p].min_rpc_time));
  }
  // Nothing now: decide again when a shortfall can first appear, or a backoff ends.
  const double horizon = s_.connect_interval + s_.additional_work;
  for (std::size_t r = 0; r < rs_.size(); ++r)
    later(now + rr.rsc[r].saturated - horizon);
  for (const auto& p : ps_) {
    later(p.min_rpc_time);
    for (std::size_t r = 0; r < rs_.size(); ++r)
      later(p.rsc[r].bo.until());
  }
  next_check_ = next;
  return std::nullopt;
}

std::vector<job> client::take_reports(int p) {
  std::vector<job> out;
  auto it = std::stable_partition(jobs_.begin(), jobs_.end(), [&](const job& j) {
    return !(j.state == job_state::done && j.project == p);
  });
  out.assign(std::make_move_iterator(it), std::make_move_iterator(jobs_.end()));
  jobs_.erase(it, jobs_.end());
  running_stale_ = true;
  return out;
}

void client::add_job(job j, double fpops_est) {
  j.id = next_id_++;
  auto ri = static_cast<std::size_t>(std::clamp(j.rsc, 0, static_cast<int>(rs_.size()) - 1));
  j.rsc = static_cast<int>(ri);
  if (auto spau = spau_.get(j.app_version))
    j.est_secs = *spau * j.app_units;
  else
    j.est_secs = fpops_est / std::max(rs_[ri].peak_flops * std::max(j.instances, 1e-3), 1.0);
  j.state = job_state::queued;
  jobs_.push_back(std::move(j));
  next_check_ = 0;
  start_needed_ = true;
  running_stale_ = true;
}

std::uint64_t client::abort(const std::string& name) {
  auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const job& j) { return j.name == name; });
  if (it == jobs_.end())
    return 0;
  auto id = it->id;
  jobs_.erase(it);
  next_check_ = 0;
  start_needed_ = true;
  running_stale_ = true;
  return id;
}

void client::after_rpc(const rpc_plan& plan, const std::array<int, max_resources>& jobs_got,
                       double now, double request_delay) {
  auto& p = ps_[static_cast<std::size_t>(plan.project)];
  handle_fetch_reply(p, plan.request, jobs_got, now, s_);
  p.min_rpc_time = now + request_delay;
  next_check_ = 0;
}

} // namespace cobble::client
