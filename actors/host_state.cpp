#include "actors/state.hpp"

#include <algorithm>
#include <cmath>

namespace cobble {

namespace {

/// A std::map or std::set node: three pointers and the colour, then the value.
constexpr std::size_t map_node_overhead = 4 * sizeof(void*);

std::size_t heap_bytes(const std::string& s) {
  // libstdc++ keeps up to 15 characters in the object itself.
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

std::size_t heap_bytes(const host_info_rec& i) {
  return heap_bytes(i.host_cpid) + heap_bytes(i.domain_name) + heap_bytes(i.p_vendor)
         + heap_bytes(i.p_model) + heap_bytes(i.os_name) + heap_bytes(i.os_version)
         + i.coprocs.capacity() * sizeof(decltype(i.coprocs)::value_type)
         + i.coproc_peak_flops.capacity() * sizeof(double);
}

} // namespace

std::size_t memory_bytes(const host_state& s) {
  auto n = sizeof(host_state) + heap_bytes(s.info);
  for (const auto& entry : s.in_progress)
    n += map_node_overhead + sizeof(std::pair<const std::string, held_result>)
         + heap_bytes(entry.first);
  n += s.app_versions.size()
       * (map_node_overhead + sizeof(std::pair<const std::uint32_t, host_app_version_rec>));
  n += s.finished.capacity() * sizeof(result_ref);
  return n;
}

int host_app_version_rec::jobs_left(time_us now) const {
  if (jobs_per_day_init <= 0 || max_jobs_per_day <= 0)
    return -1;
  int used = day_of(now) == jobs_day ? n_jobs_today : 0;
  return std::max(0, max_jobs_per_day - used);
}

namespace {

void error_outcome(host_app_version_rec& hav, const credit_settings& cs, time_us now,
                   time_us delay_bound) {
  hav.error_rate = hav.error_rate * (1 - cs.error_rate_alpha) + cs.error_rate_alpha;
  // Cherry-picking protection: an error or timeout puts the pair back on probation for a
  // delay bound.
  hav.scale_probation = true;
  hav.host_scale_time = std::max(hav.host_scale_time, now + delay_bound);
}

/// The host no longer holds the result: it goes to the host's recent results.
void finish(host_state& s, std::map<std::string, held_result>::iterator i) {
  if (s.finished.size() >= host_finished_kept)
    s.finished.erase(s.finished.begin(),
                     s.finished.begin()
                       + static_cast<std::ptrdiff_t>(s.finished.size() + 1 - host_finished_kept));
  s.finished.push_back(i->second.result);
  s.in_progress.erase(i);
}

void finish(host_state& s, const std::string& name) {
  if (auto i = s.in_progress.find(name); i != s.in_progress.end())
    finish(s, i);
}

} // namespace

void apply(host_state& s, const event& e, std::string_view result_name, const credit_settings& cs) {
  std::visit(
    overload{
      [&](const ev::host_registered& x) {
        s.id = x.id;
        s.user = x.user;
        s.created = e.time;
        s.last_rpc = e.time;
        s.info = x.info;
      },
      [&](const ev::host_described& x) {
        s.info = x.info;
        s.last_rpc = e.time;
      },
      [&](const ev::result_dispatched& x) {
        s.in_progress[std::string{result_name}] = held_result{x.result, x.deadline,
                                                              x.version.app_version_id, e.time,
                                                              std::isfinite(x.predicted_app_units)
                                                                  && x.predicted_app_units > 0
                                                                ? x.predicted_app_units
                                                                : 1.0};
        auto [it, fresh] = s.app_versions.try_emplace(x.version.app_version_id);
        auto& hav = it->second;
        if (fresh)
          hav.error_rate = cs.error_rate_initial;
        ++hav.n_sent;
        if (x.jobs_per_day > 0) {
          if (hav.jobs_per_day_init != x.jobs_per_day || hav.max_jobs_per_day <= 0)
            hav.max_jobs_per_day = x.jobs_per_day;
          hav.jobs_per_day_init = x.jobs_per_day;
        }
        if (day_of(e.time) != hav.jobs_day) {
          hav.jobs_day = day_of(e.time);
          hav.n_jobs_today = 0;
        }
        ++hav.n_jobs_today;
        // Entering probation (new pair, or after a cheat), host scaling waits a delay
        // bound from the next job sent; later jobs do not push it further, or a
        // host that always works would never leave probation.
        if (hav.scale_probation && hav.host_scale_time == 0)
          hav.host_scale_time = x.deadline;
        s.last_rpc = e.time;
      },
      [&](const ev::result_reported& x) {
        auto i = s.in_progress.find(std::string{result_name});
        if (i == s.in_progress.end())
          return;
        auto& hav = s.app_versions[i->second.app_version_id];
        hav.turnaround.update(us_to_seconds(e.time - i->second.sent), cs.host_average_samples,
                              cs.host_alpha, cs.sample_cap);
        if (x.report.success) {
          ++hav.n_success;
          if ((x.report.flags & flag_bad_elapsed) == 0) {
            hav.elapsed_sum += x.report.elapsed;
            ++hav.elapsed_n;
            // seconds_per_app_unit: per reported app unit, else (BOINC clients)
            // per predicted app unit of the job; its spread as well, of the sample
            // capped as the average caps it.
            bool units = x.report.app_units > 0;
            double sample = x.report.elapsed
                            / (units ? x.report.app_units : i->second.predicted_app_units);
            double capped = hav.spau.n > 0 && hav.spau.avg > 0
                              ? std::min(sample, cs.sample_cap * hav.spau.avg)
                              : sample;
            hav.spau_var.add(capped, units, cs.host_average_samples, cs.host_alpha);
            hav.spau.update(sample, cs.host_average_samples, cs.host_alpha, cs.sample_cap);
          }
          if (hav.jobs_per_day_init > 0)
            hav.max_jobs_per_day = std::min(hav.jobs_per_day_init,
                                            std::max(1, hav.max_jobs_per_day) * 2);
        } else {
          ++hav.n_error;
          // A crash costs a job of the daily quota; an abort does not.
          if (x.report.client_state != client_state_aborted && hav.jobs_per_day_init > 0)
            hav.max_jobs_per_day = std::max(1, hav.max_jobs_per_day - 1);
          // AutoFlops app_units policy: an abort costs a share of the quota.
          if (x.quota_factor < 1 && hav.jobs_per_day_init > 0)
            hav.max_jobs_per_day = std::max(1, static_cast<int>(std::floor(hav.max_jobs_per_day
                                                                           * x.quota_factor)));
          error_outcome(hav, cs, e.time, i->second.deadline - i->second.sent);
        }
        ++s.results_reported;
        s.last_rpc = e.time;
        finish(s, i);
      },
      [&](const ev::result_timed_out& x) {
        auto i = s.in_progress.find(std::string{result_name});
        if (i == s.in_progress.end())
          return;
        auto& hav = s.app_versions[i->second.app_version_id];
        ++hav.n_timeout;
        if (x.quota_factor < 1 && hav.jobs_per_day_init > 0)
          hav.max_jobs_per_day = std::max(1, static_cast<int>(
                                               std::floor(hav.max_jobs_per_day * x.quota_factor)));
        error_outcome(hav, cs, e.time, i->second.deadline - i->second.sent);
        finish(s, i);
      },
      // The client no longer has it: no error of the host's, no quota change (as BOINC).
      [&](const ev::result_written_off&) { finish(s, std::string{result_name}); },
      // Sent again (the client had lost it): a new deadline, counted from now (as BOINC).
      [&](const ev::result_resent& x) {
        if (auto i = s.in_progress.find(std::string{result_name}); i != s.in_progress.end()) {
          i->second.deadline = x.deadline;
          i->second.sent = e.time;
        }
      },
      // A sequence taken from the host takes the results of its dead branch along:
      // the host no longer holds them (a later report changes nothing).
      [&](const ev::sequence_deassigned& x) {
        if (x.host == s.id)
          for (const auto& name : x.aborted)
            finish(s, name);
      },
      [&](const ev::sequence_ended& x) {
        for (const auto& [host, name] : x.aborted)
          if (host == s.id)
            finish(s, name);
      },
      // A cancelled workunit's results are taken back too (the client is told to abort).
      [&](const ev::workunit_cancelled& x) {
        for (const auto& [host, name] : x.aborted)
          if (host == s.id)
            finish(s, name);
      },
      [&](const ev::host_result_validated& x) {
        auto& hav = s.app_versions[x.app_version_id];
        if (x.valid) {
          if (x.pfc_sample > 0)
            hav.pfc.update(x.pfc_sample, cs.host_average_samples, cs.host_alpha, cs.sample_cap);
          if (x.et_sample > 0)
            hav.et.update(x.et_sample, cs.host_average_samples, cs.host_alpha, cs.sample_cap);
          hav.error_rate *= 1 - cs.error_rate_alpha;
          if (!x.cheat && hav.scale_probation && hav.host_scale_time != 0
              && e.time > hav.host_scale_time)
            hav.scale_probation = false;
        } else {
          hav.error_rate = hav.error_rate * (1 - cs.error_rate_alpha) + cs.error_rate_alpha;
        }
        if (x.cheat) {
          // A one-time cheat: no single replication for a while, and scale probation.
          hav.error_rate = cs.error_rate_initial;
          hav.scale_probation = true;
          hav.host_scale_time = 0; // armed by the next job sent
        }
      },
      [](const auto&) {},
    },
    e.data);
}

} // namespace cobble
