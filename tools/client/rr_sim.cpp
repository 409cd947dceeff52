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

double weight(const project& p) {
  return std::max(p.share, 1e-9);
}

/// Water-filling: `total` instances go to the projects in proportion to their shares; a
/// project never gets more than it can use, and what it leaves goes to the others.
void allocate(const std::vector<double>& demand, const std::vector<project>& ps, double total,
              std::vector<double>& alloc) {
  std::fill(alloc.begin(), alloc.end(), 0.0);
  std::vector<char> open(demand.size(), 0);
  bool any = false;
  for (std::size_t p = 0; p < demand.size(); ++p)
    if (demand[p] > 0) {
      open[p] = 1;
      any = true;
    }
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
double overlap(double a, double b, double h) {
  return std::max(0.0, std::min(b, h) - std::min(a, h));
}

} // namespace

rr_result rr_simulate(std::vector<job>& jobs, const std::vector<project>& ps,
                      const std::vector<resource>& rs, double now, const settings& s) {
  rr_result out;
  out.has_runnable.assign(ps.size(), 0);
  const double ci = s.connect_interval;
  const double horizon = s.connect_interval + s.additional_work;
  const std::size_t np = ps.size();
  std::vector<double> demand(np), alloc(np), done(np), rate(np);
  // Per project, its jobs of the resource by remaining work: all jobs of a project progress
  // at the same rate, so they finish in this order and one offset per project suffices.
  std::vector<std::vector<sim_job>> queue(np);
  std::vector<std::size_t> pos(np);
  for (std::size_t r = 0; r < rs.size() && r < static_cast<std::size_t>(max_resources); ++r) {
    const double n = rs[r].ninstances;
    if (n <= 0) { // the host has none: never short of work for it
      out.rsc[r].saturated = std::numeric_limits<double>::infinity();
      continue;
    }
    std::size_t live = 0;
    for (auto& q : queue)
      q.clear();
    std::fill(demand.begin(), demand.end(), 0.0);
    std::fill(done.begin(), done.end(), 0.0);
    std::fill(pos.begin(), pos.end(), 0);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto& j = jobs[i];
      if (j.state == job_state::done || j.rsc != static_cast<int>(r))
        continue;
      j.deadline_trouble = false;
      auto p = static_cast<std::size_t>(j.project);
      out.has_runnable[p] = 1;
      double inst = std::min(std::max(j.instances, 1e-6), n);
      queue[p].push_back(sim_job{i, j.project, inst, j.remaining()});
      demand[p] += inst;
      ++live;
    }
    for (auto& q : queue)
      std::sort(q.begin(), q.end(),
                [](const sim_job& a, const sim_job& b) { return a.left < b.left; });
    auto& res = out.rsc[r];
    res.saturated = -1;
    double t = 0;
    bool first = true;
    while (live > 0) {
      allocate(demand, ps, n, alloc);
      double busy = 0;
      for (std::size_t p = 0; p < np; ++p)
        busy += alloc[p];
      double idle = std::max(0.0, n - busy);
      if (first) {
        res.idle_now = idle;
        first = false;
      }
      // Next completion: a project's jobs progress at alloc/demand of full speed.
      double step = std::numeric_limits<double>::infinity();
      for (std::size_t p = 0; p < np; ++p) {
        rate[p] = demand[p] > 0 ? alloc[p] / demand[p] : 0;
        if (rate[p] > 0 && pos[p] < queue[p].size())
          step = std::min(step, (queue[p][pos[p]].left - done[p]) / rate[p]);
      }
      if (!(step < std::numeric_limits<double>::infinity()))
        break;
      step = std::max(step, 0.0);
      if (idle > 1e-9 && res.saturated < 0)
        res.saturated = t;
      res.shortfall_ci += idle * overlap(t, t + step, ci);
      res.shortfall += idle * overlap(t, t + step, horizon);
      t += step;
      for (std::size_t p = 0; p < np; ++p) {
        if (rate[p] <= 0)
          continue;
        done[p] += rate[p] * step;
        auto& q = queue[p];
        while (pos[p] < q.size()
               && q[pos[p]].left - done[p] <= 1e-6 * std::max(1.0, q[pos[p]].left)) {
          auto& jj = jobs[q[pos[p]].index];
          jj.deadline_trouble = now + t > jj.deadline - s.deadline_margin;
          demand[p] -= q[pos[p]].inst;
          if (demand[p] < 1e-9)
            demand[p] = 0;
          ++pos[p];
          --live;
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
