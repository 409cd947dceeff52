#include "tools/client/cpu_sched.hpp"

#include <algorithm>
#include <cmath>

namespace cobble::client {

namespace {

/// Slot bookkeeping: each instance holds up to one unit of instances.
struct slots {
  std::vector<double> used;
  explicit slots(int n) : used(static_cast<std::size_t>(std::max(n, 0)), 0.0) {}
  int take(double inst) {
    double need = std::min(inst, 1.0);
    for (std::size_t i = 0; i < used.size(); ++i)
      if (used[i] + need <= 1.0 + 1e-9) {
        used[i] += need;
        return static_cast<int>(i);
      }
    return used.empty() ? -1 : 0;
  }
  void hold(int slot, double inst) {
    if (slot >= 0 && static_cast<std::size_t>(slot) < used.size())
      used[static_cast<std::size_t>(slot)] += std::min(inst, 1.0);
  }
};

bool before(const job& a, const job& b) {
  if (a.received != b.received)
    return a.received < b.received;
  return a.id < b.id;
}

/// The job of project p to give an instance, in the design's preference order; -1 if none.
int pick(const std::vector<job>& jobs, int r, int p, double room, bool running_ok,
         const std::vector<char>& taken) {
  int found = -1;
  int rank = 9;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& j = jobs[i];
    if (taken[i] || j.rsc != r || j.project != p || j.instances > room + 1e-9)
      continue;
    int k = j.state == job_state::running     ? (running_ok ? 0 : 9)
            : j.state == job_state::preempted ? 1
            : j.state == job_state::queued    ? 2
                                              : 9;
    if (k == 9)
      continue;
    if (k < rank || (k == rank && before(j, jobs[static_cast<std::size_t>(found)]))) {
      rank = k;
      found = static_cast<int>(i);
    }
  }
  return found;
}

/// The repeated argmax of 003: gives instances to projects by expected future debt.
void fill(std::vector<project>& ps, std::vector<job>& jobs, int r, double room, double pay_off,
          bool running_ok, std::vector<char>& taken) {
  std::vector<char> out(ps.size(), 0);
  while (room > 1e-9) {
    bool found = false;
    std::fill(out.begin(), out.end(), 0);
    for (std::size_t tries = 0; tries < ps.size(); ++tries) {
      int best = -1;
      for (std::size_t i = 0; i < ps.size(); ++i)
        if (!out[i]
            && (best < 0
                || ps[i].expected_future_debt
                     > ps[static_cast<std::size_t>(best)].expected_future_debt))
          best = static_cast<int>(i);
      if (best < 0)
        break;
      int ji = pick(jobs, r, best, room, running_ok, taken);
      if (ji < 0) {
        out[static_cast<std::size_t>(best)] = 1;
        continue;
      }
      auto& j = jobs[static_cast<std::size_t>(ji)];
      taken[static_cast<std::size_t>(ji)] = 1;
      j.expected_pay_off = pay_off * j.instances;
      ps[static_cast<std::size_t>(best)].expected_future_debt -= j.expected_pay_off;
      room -= j.instances;
      found = true;
      break;
    }
    if (!found)
      break;
  }
}

/// Applies the decision: `taken` jobs run (keeping their slot), other running jobs of r are
/// preempted.
void apply(std::vector<job>& jobs, const std::vector<resource>& rs, int r,
           const std::vector<char>& taken) {
  slots sl(rs[static_cast<std::size_t>(r)].ninstances);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto& j = jobs[i];
    if (j.rsc != r)
      continue;
    if (j.state == job_state::running && taken[i])
      sl.hold(j.slot, j.instances);
    else if (j.state == job_state::running) {
      j.state = job_state::preempted;
      j.slot = -1;
      j.expected_pay_off = 0;
    }
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto& j = jobs[i];
    if (j.rsc == r && taken[i] && j.state != job_state::running) {
      j.state = job_state::running;
      j.slot = sl.take(j.instances);
    }
  }
}

/// Jobs in deadline trouble first, earliest deadline first.
double run_endangered(std::vector<project>& ps, std::vector<job>& jobs, int r, double room,
                      double pay_off, std::vector<char>& taken) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].rsc == r && jobs[i].deadline_trouble && jobs[i].state != job_state::done)
      idx.push_back(i);
  std::sort(idx.begin(), idx.end(),
            [&](auto a, auto b) { return jobs[a].deadline < jobs[b].deadline; });
  for (auto i : idx) {
    if (jobs[i].instances > room + 1e-9)
      continue;
    taken[i] = 1;
    jobs[i].expected_pay_off = pay_off * jobs[i].instances;
    ps[static_cast<std::size_t>(jobs[i].project)].expected_future_debt -= jobs[i].expected_pay_off;
    room -= jobs[i].instances;
  }
  return room;
}

} // namespace

double instances_used(const std::vector<job>& jobs, int r) {
  double n = 0;
  for (const auto& j : jobs)
    if (j.rsc == r && j.state == job_state::running)
      n += j.instances;
  return n;
}

void preempt_apps(std::vector<project>& ps, std::vector<job>& jobs, const std::vector<resource>& rs,
                  int r, const settings& s) {
  auto ri = static_cast<std::size_t>(r);
  const double pay_off = s.sched_period * relative_speed(rs, r);
  for (auto& p : ps)
    p.expected_future_debt = p.overall_debt;
  std::vector<char> taken(jobs.size(), 0);
  double room = rs[ri].ninstances;
  room = run_endangered(ps, jobs, r, room, pay_off, taken);
  fill(ps, jobs, r, room, pay_off, true, taken);
  apply(jobs, rs, r, taken);
  for (auto& j : jobs)
    if (j.rsc == r)
      j.work_done_this_period = 0;
  for (auto& p : ps)
    p.done_this_period[ri] = 0;
}

void start_apps(std::vector<project>& ps, std::vector<job>& jobs, const std::vector<resource>& rs,
                int r, double fraction_left, const settings& s) {
  auto ri = static_cast<std::size_t>(r);
  double room = rs[ri].ninstances - instances_used(jobs, r);
  if (room <= 1e-9)
    return;
  const double speed = relative_speed(rs, r);
  const double pay_off = std::clamp(fraction_left, 0.0, 1.0) * s.sched_period * speed;
  for (auto& p : ps)
    p.expected_future_debt = p.overall_debt - p.done_this_period[ri];
  std::vector<char> taken(jobs.size(), 0);
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (jobs[i].rsc == r && jobs[i].state == job_state::running) {
      taken[i] = 1;
      ps[static_cast<std::size_t>(jobs[i].project)].expected_future_debt -= jobs[i].expected_pay_off;
    }
  room = run_endangered(ps, jobs, r, room, pay_off, taken);
  fill(ps, jobs, r, room, pay_off, false, taken);
  apply(jobs, rs, r, taken);
}

void handle_finished_app(std::vector<project>& ps, job& j, const std::vector<resource>& rs) {
  auto& p = ps[static_cast<std::size_t>(j.project)];
  p.done_this_period[static_cast<std::size_t>(j.rsc)] += j.work_done_this_period
                                                         * relative_speed(rs, j.rsc);
  j.state = job_state::done;
  j.slot = -1;
  j.expected_pay_off = 0;
}

need_work need_to_get_work(const std::vector<job>& jobs, const std::vector<project>& ps, int ncpus,
                           double min_work_buf_secs) {
  need_work out;
  out.avail_work_secs.assign(ps.size(), 0.0);
  std::vector<const job*> cpu;
  for (const auto& j : jobs)
    if (j.rsc == 0 && j.state != job_state::done)
      cpu.push_back(&j);
  std::sort(cpu.begin(), cpu.end(), [](auto a, auto b) { return a->remaining() > b->remaining(); });
  double one_cpu = 0;
  for (const auto* j : cpu) {
    double secs = j->remaining();
    one_cpu += secs;
    out.avail_work_secs[static_cast<std::size_t>(j->project)] += secs;
    if (one_cpu >= min_work_buf_secs) {
      one_cpu = 0;
      ++out.num_cpus_busy;
    }
  }
  double shares = 0;
  for (const auto& p : ps)
    shares += p.share;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    double frac = shares > 0 ? ps[i].share / shares : 0;
    out.total_work_secs += std::min(out.avail_work_secs[i], frac * min_work_buf_secs * ncpus);
  }
  out.need = out.num_cpus_busy < ncpus || out.total_work_secs < min_work_buf_secs * ncpus;
  return out;
}

} // namespace cobble::client
