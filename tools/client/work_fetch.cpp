#include "tools/client/work_fetch.hpp"

#include <algorithm>
#include <cmath>

namespace cobble::client {

double work_request::work_req_seconds() const {
  return *std::max_element(secs.begin(), secs.end());
}

bool work_request::any() const {
  for (int r = 0; r < max_resources; ++r)
    if (wants(r))
      return true;
  return false;
}

bool work_request::wants(int r) const {
  auto i = static_cast<std::size_t>(r);
  return secs[i] > 0 || instances[i] > 0;
}

const char* to_string(fetch_reason r) {
  switch (r) {
    case fetch_reason::major_shortfall:
      return "major shortfall";
    case fetch_reason::minor_shortfall:
      return "minor shortfall";
    case fetch_reason::starved:
      return "starved project";
  }
  return "?";
}

bool can_contact(const project& p, double now) {
  return !p.suspended && !p.no_more_tasks && now >= p.min_rpc_time;
}

bool overworked(const project& p, const settings& s) {
  return p.overall_debt < -s.overworked_debt;
}

namespace {

/// Resource order of the design: coprocessors first, then the CPU.
std::vector<int> order(std::size_t n) {
  std::vector<int> o;
  for (std::size_t r = 1; r < n; ++r)
    o.push_back(static_cast<int>(r));
  if (n > 0)
    o.push_back(0);
  return o;
}

/// True when a's claim on resource r beats b's: the greater overall debt; on equal debts the
/// project asked for this resource longest ago (so equal projects take turns).
bool ahead(const project& a, const project& b, int r) {
  double tol = 1e-9 * std::max({1.0, std::abs(a.overall_debt), std::abs(b.overall_debt)});
  if (std::abs(a.overall_debt - b.overall_debt) > tol)
    return a.overall_debt > b.overall_debt;
  auto ri = static_cast<std::size_t>(r);
  return a.rsc[ri].last_asked < b.rsc[ri].last_asked;
}

template <class Pred>
int best(const std::vector<project>& ps, int r, Pred ok) {
  int out = -1;
  for (std::size_t i = 0; i < ps.size(); ++i)
    if (ok(ps[i], i) && (out < 0 || ahead(ps[i], ps[static_cast<std::size_t>(out)], r)))
      out = static_cast<int>(i);
  return out;
}

/// Every resource with a shortfall (and `r` at least one second and its idle instances).
work_request all_shortfalls(const rr_result& rr, std::size_t n, int r) {
  work_request w;
  for (std::size_t i = 0; i < n; ++i)
    if (rr.rsc[i].shortfall > 0) {
      w.secs[i] = rr.rsc[i].shortfall;
      w.instances[i] = rr.rsc[i].idle_now;
    }
  auto ri = static_cast<std::size_t>(r);
  w.secs[ri] = std::max(w.secs[ri], 1.0);
  return w;
}

} // namespace

std::optional<fetch_decision>
choose_fetch(const std::vector<project>& ps, const std::vector<resource>& rs, const rr_result& rr,
             double now, const settings& s) {
  const auto n = std::min(rs.size(), static_cast<std::size_t>(max_resources));
  const double ci = s.connect_interval;
  const double horizon = s.connect_interval + s.additional_work;
  auto ord = order(n);
  auto not_backed_off = [&](int r) {
    return [&, r](const project& p, std::size_t) {
      return can_contact(p, now) && !p.rsc[static_cast<std::size_t>(r)].bo.backed_off(now);
    };
  };
  // 1. Major shortfalls.
  for (int r : ord) {
    const auto& x = rr.rsc[static_cast<std::size_t>(r)];
    if (!(x.saturated < ci))
      continue;
    int p = best(ps, r, not_backed_off(r));
    if (p >= 0) {
      fetch_decision d{p, r, fetch_reason::major_shortfall, {}};
      d.request.secs[static_cast<std::size_t>(r)] = std::max(x.shortfall, 1.0);
      d.request.instances[static_cast<std::size_t>(r)] = x.idle_now;
      return d;
    }
  }
  // 2. Minor shortfalls.
  for (int r : ord) {
    const auto& x = rr.rsc[static_cast<std::size_t>(r)];
    if (!(x.saturated < horizon))
      continue;
    auto ok = not_backed_off(r);
    int p = best(ps, r,
                 [&](const project& pr, std::size_t i) { return ok(pr, i) && !overworked(pr, s); });
    if (p >= 0)
      return fetch_decision{p, r, fetch_reason::minor_shortfall, all_shortfalls(rr, n, r)};
  }
  // 3. Starved projects.
  for (int r : ord) {
    auto ok = not_backed_off(r);
    int p = best(ps, r, [&](const project& pr, std::size_t i) {
      return ok(pr, i) && !overworked(pr, s) && i < rr.has_runnable.size() && !rr.has_runnable[i];
    });
    if (p >= 0)
      return fetch_decision{p, r, fetch_reason::starved, all_shortfalls(rr, n, r)};
  }
  return std::nullopt;
}

void handle_fetch_reply(project& p, const work_request& asked,
                        const std::array<int, max_resources>& jobs_got, double now,
                        const settings& s) {
  for (int r = 0; r < max_resources; ++r) {
    auto& bo = p.rsc[static_cast<std::size_t>(r)].bo;
    if (asked.wants(r))
      p.rsc[static_cast<std::size_t>(r)].last_asked = now;
    if (jobs_got[static_cast<std::size_t>(r)] > 0)
      bo.got_job();
    else if (asked.wants(r))
      bo.no_work(now, s.backoff_min, s.backoff_max);
  }
}

} // namespace cobble::client
