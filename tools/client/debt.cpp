#include "tools/client/debt.hpp"

#include <algorithm>
#include <limits>

namespace cobble::client {

double relative_speed(const std::vector<resource>& rs, int r) {
  if (rs.empty() || rs[0].peak_flops <= 0)
    return 1;
  return rs[static_cast<std::size_t>(r)].peak_flops / rs[0].peak_flops;
}

bool debt_eligible(const project& p, int r, double now, const settings& s) {
  if (p.suspended || p.no_more_tasks)
    return false;
  if (s.eligibility == debt_eligibility::attached)
    return true;
  const auto& bo = p.rsc[static_cast<std::size_t>(r)].bo;
  return !bo.backed_off(now) && !bo.at_max(s.backoff_max);
}

void update_ltd(std::vector<project>& ps, int r, const resource& res, double dt, double now,
                const settings& s) {
  auto ri = static_cast<std::size_t>(r);
  std::vector<char> eligible(ps.size(), 0);
  double total_share = 0;
  std::size_t n_eligible = 0;
  for (std::size_t i = 0; i < ps.size(); ++i)
    if (debt_eligible(ps[i], r, now, s)) {
      eligible[i] = 1;
      total_share += ps[i].share;
      ++n_eligible;
    }
  if (n_eligible > 0 && total_share > 0) {
    double net = 0;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (!eligible[i])
        continue;
      auto& pr = ps[i].rsc[ri];
      double delta = dt * res.ninstances * ps[i].share / total_share - pr.secs_this_period;
      pr.ltd += delta;
      net += delta;
    }
    double offset = -net / static_cast<double>(n_eligible);
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (eligible[i]) {
        ps[i].rsc[ri].ltd += offset;
        top = std::max(top, ps[i].rsc[ri].ltd);
      }
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (eligible[i])
        ps[i].rsc[ri].ltd -= top;
  }
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (!eligible[i])
      ps[i].rsc[ri].ltd = std::min(ps[i].rsc[ri].ltd, 0.0);
    ps[i].rsc[ri].secs_this_period = 0;
  }
}

void update_overall_debts(std::vector<project>& ps, const std::vector<resource>& rs) {
  for (auto& p : ps) {
    double d = 0;
    for (std::size_t r = 0; r < rs.size(); ++r)
      d += p.rsc[r].ltd * relative_speed(rs, static_cast<int>(r));
    p.overall_debt = d;
  }
}

} // namespace cobble::client
