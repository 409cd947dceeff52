/// The figures of a project's status page (server_status_of), as BOINC's server_status.php
/// counts them: jobs by state, workunits waiting for the validator, the assimilator and file
/// deletion, users and hosts with credit or new in the past 24 hours, per-app runtimes of the
/// past 24 hours, and the project's speed. One pass over the workunits, users and hosts: the
/// site caches the answer (net/web_site.cpp).

#include "actors/project_views.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace cobble {

namespace {

constexpr time_us day_us = 86400 * us_per_second;

/// An app's valid results of the past day, while counting.
struct app_tally {
  std::size_t unsent = 0;
  std::size_t in_progress = 0;
  std::size_t valid = 0;
  double sum = 0;
  double min = 0;
  double max = 0;
  std::set<id_type> users;
};

} // namespace

server_status_view server_status_of(const project_state& ps, const host_table& hosts, time_us now) {
  server_status_view out;
  out.at = now;
  out.counters = ps.counters;
  const auto since = now - day_us;
  const double half_life = ps.credit.credit_half_life;
  std::unordered_map<std::uint32_t, app_tally> apps;
  for (const auto& [id, wu] : ps.workunits) {
    auto& app = apps[wu.app];
    std::size_t unjudged = 0;
    for (const auto& r : wu.results) {
      if (r.state == result_state::unsent) {
        ++out.results_ready_to_send;
        ++app.unsent;
      } else if (r.state == result_state::in_progress) {
        ++out.results_in_progress;
        ++app.in_progress;
      } else if (r.outcome == result_outcome::success) {
        if (r.validation == validate_state::init)
          ++unjudged;
        if (r.validation == validate_state::valid && r.received >= since) {
          double t = r.report->elapsed;
          app.min = app.valid == 0 ? t : std::min(app.min, t);
          app.max = app.valid == 0 ? t : std::max(app.max, t);
          app.sum += t;
          ++app.valid;
          if (auto h = ps.hosts.find(r.host); h != ps.hosts.end())
            app.users.insert(h->second.user);
        }
      }
    }
    switch (wu.state) {
      case wu_state::active:
        if (unjudged > 0
            && unjudged >= static_cast<std::size_t>(std::max(wu.params->min_quorum, 1)))
          ++out.workunits_waiting_for_validation;
        break;
      case wu_state::validated:
        ++out.workunits_waiting_for_assimilation;
        break;
      default:
        break;
    }
    if (wu.state != wu_state::active && wu.state != wu_state::validated && !wu.files_deleted) {
      ++out.workunits_waiting_for_deletion;
      for (const auto& r : wu.results)
        if (r.outcome == result_outcome::success)
          ++out.results_waiting_for_deletion;
    }
  }
  for (const auto& a : ps.apps) {
    auto& t = apps[a.id];
    server_status_view::app_row row{a.id, a.name, t.unsent, t.in_progress, t.valid};
    if (t.valid > 0) {
      row.min_runtime = t.min;
      row.max_runtime = t.max;
      row.avg_runtime = t.sum / static_cast<double>(t.valid);
    }
    row.users_24h = t.users.size();
    out.apps.push_back(std::move(row));
  }
  double recent_credit = 0;
  out.users = ps.users.size();
  for (const auto& [id, u] : ps.users) {
    auto recent = u.credit.expavg_at(now, half_life);
    recent_credit += recent;
    out.users_with_credit += u.credit.total > 1 ? 1 : 0;
    out.users_with_recent_credit += recent > 1 ? 1 : 0;
    out.users_registered_24h += u.created > since ? 1 : 0;
  }
  out.hosts = ps.hosts.size();
  for (const auto& [id, h] : ps.hosts) {
    out.hosts_with_credit += h.credit.total > 1 ? 1 : 0;
    out.hosts_with_recent_credit += h.credit.expavg_at(now, half_life) > 1 ? 1 : 0;
    out.hosts_registered_24h += h.created > since ? 1 : 0;
  }
  out.hosts_contacted_24h = hosts.contacted_since(since);
  out.gigaflops = recent_credit * ps.credit.flops_per_cobblestone / 86400.0 / 1e9;
  return out;
}

} // namespace cobble
