#include "tools/client/rr_sim.hpp"

#include <algorithm>
#include <limits>

namespace cobble::client {

namespace {

struct sim_job {
  std::size_t index; // into jobs
  int project;
  double inst;
  double left; // seconds of work at full speed
};

double weight(const project& p) { return std::max(p.share, 1e-9); }

/// Water-filling: `total` instances go to the projects in proportion to their shares; a
/// project never gets more than it can use, and what it leaves goes to the others.
void allocate(const std::vector<double>& demand, const std::vector<project>& ps, double total,
              std::vector<double>& alloc) {
  std::fill(alloc.begin(), alloc.end(), 0.0);
  std::vector<char> open(demand.size(), 0);
  bool any = false;
  for (std::size_t p = 0; p < demand.size(); ++p)
    if (demand[p] > 0)
      open[p] = any = 1;
  double cap = total;
  while (any && cap > 1e-12) {
    double shares = 0;
    for (std::size_t p = 0; p < demand.size(); ++p)
      if (open[p])
        shares += weight(ps[p]);
    bool capped = false;
    for (std::size_t p = 0; p < demand.size(); ++p)
      if (open[p] && demand[p] <= cap * weight(ps[p]) / shares + 1e-12) {
        alloc[p] = demand[p];
        open[p] = 0;
        capped = true;
      }
    if (!capped) {
      for (std::size_t p = 0; p < demand.size(); ++p)
        if (open[p])
          alloc[p] = cap * weight(ps[p]) / shares;
      return;
    }
    cap = total;
    any = false;
    for (std::size_t p = 0; p < demand.size(); ++p) {
      if (!open[p])
        cap -= alloc[p];
      else
        any = true;
    }
  }
}

/// Length of [a, b] within [0, h].
double overlap(double a, double b, double h) { return std::max(0.0, std::min(b, h) - std::min(a, h)); }

} // namespace

rr_result rr_simulate(std::vector<job>& jobs, const std::vector<project>& ps,
                      const std::vector<resource>& rs, double now, const settings& s) {
  rr_result out;
  out.has_runnable.assign(ps.size(), 0);
  const double ci = s.connect_interval;
  const double horizon = s.connect_interval + s.additional_work;
  std::vector<double> demand(ps.size()), alloc(ps.size());
  std::vector<sim_job> live;
  for (std::size_t r = 0; r < rs.size() && r < static_cast<std::size_t>(max_resources); ++r) {
    const double n = rs[r].ninstances;
    if (n <= 0) { // the host has none: never short of work for it
      out.rsc[r].saturated = std::numeric_limits<double>::infinity();
      continue;
    }
    live.clear();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto& j = jobs[i];
      if (j.state == job_state::done || j.rsc != static_cast<int>(r))
        continue;
      j.deadline_trouble = false;
      out.has_runnable[static_cast<std::size_t>(j.project)] = 1;
      live.push_back(sim_job{i, j.project, std::min(std::max(j.instances, 1e-6), n), j.remaining()});
    }
    auto& res = out.rsc[r];
    res.saturated = -1;
    double t = 0;
    bool first = true;
    while (!live.empty()) {
      std::fill(demand.begin(), demand.end(), 0.0);
      for (const auto& j : live)
        demand[static_cast<std::size_t>(j.project)] += j.inst;
      allocate(demand, ps, n, alloc);
      double busy = 0;
      for (std::size_t p = 0; p < ps.size(); ++p)
        busy += alloc[p];
      double idle = std::max(0.0, n - busy);
      if (first) {
        res.idle_now = idle;
        first = false;
      }
      // Next completion: a job progresses at alloc/demand of full speed.
      double step = std::numeric_limits<double>::infinity();
      for (const auto& j : live) {
        auto p = static_cast<std::size_t>(j.project);
        double rate = demand[p] > 0 ? alloc[p] / demand[p] : 0;
        if (rate > 0)
          step = std::min(step, j.left / rate);
      }
      if (!(step < std::numeric_limits<double>::infinity()))
        break;
      if (idle > 1e-9 && res.saturated < 0)
        res.saturated = t;
      res.shortfall_ci += idle * overlap(t, t + step, ci);
      res.shortfall += idle * overlap(t, t + step, horizon);
      for (auto& j : live) {
        auto p = static_cast<std::size_t>(j.project);
        double rate = demand[p] > 0 ? alloc[p] / demand[p] : 0;
        j.left -= rate * step;
      }
      t += step;
      for (auto it = live.begin(); it != live.end();) {
        if (it->left <= 1e-6) {
          auto& jj = jobs[it->index];
          jj.deadline_trouble = now + t > jj.deadline - s.deadline_margin;
          it = live.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (first)
      res.idle_now = n;
    if (res.saturated < 0)
      res.saturated = t;
    // Everything idle after the last job.
    res.shortfall_ci += n * overlap(t, std::max(t, ci), ci);
    res.shortfall += n * overlap(t, std::max(t, horizon), horizon);
  }
  return out;
}

} // namespace cobble::client
