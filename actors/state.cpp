#include "actors/state.hpp"

#include "storage/codec.hpp"

#include <charconv>
#include <set>

namespace cobble {

namespace {

result_rec* find_result(project_state& s, result_ref r) {
  auto i = s.workunits.find(r.wu);
  if (i == s.workunits.end() || r.index >= i->second.results.size())
    return nullptr;
  return &i->second.results[r.index];
}

void mark_unneeded(workunit_rec& wu) {
  for (auto& r : wu.results)
    if (r.state == result_state::unsent) {
      r.state = result_state::over;
      r.outcome = result_outcome::didnt_need;
    }
}

void add_results(project_state& s, workunit_rec& wu, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i) {
    auto index = static_cast<std::uint32_t>(wu.results.size());
    wu.results.emplace_back();
    s.unsent[wu.app].push_back({wu.id, index});
  }
  s.counters.results_created += count;
}

} // namespace

// -- names --------------------------------------------------------------------

const char* to_string(result_state x) {
  switch (x) {
    case result_state::unsent:
      return "unsent";
    case result_state::in_progress:
      return "in_progress";
    case result_state::over:
      return "over";
  }
  return "?";
}

const char* to_string(result_outcome x) {
  switch (x) {
    case result_outcome::none:
      return "none";
    case result_outcome::success:
      return "success";
    case result_outcome::client_error:
      return "client_error";
    case result_outcome::no_reply:
      return "timed_out";
    case result_outcome::didnt_need:
      return "didnt_need";
  }
  return "?";
}

const char* to_string(validate_state x) {
  switch (x) {
    case validate_state::init:
      return "unchecked";
    case validate_state::valid:
      return "valid";
    case validate_state::invalid:
      return "invalid";
  }
  return "?";
}

const char* to_string(wu_state x) {
  switch (x) {
    case wu_state::active:
      return "active";
    case wu_state::validated:
      return "validated";
    case wu_state::assimilated:
      return "assimilated";
    case wu_state::failed:
      return "failed";
  }
  return "?";
}

// -- project_state ------------------------------------------------------------

const app_rec* project_state::app(std::uint32_t id) const {
  if (id == 0 || id > apps.size())
    return nullptr;
  return &apps[id - 1];
}

const app_rec* project_state::app(std::string_view app_name) const {
  for (const auto& a : apps)
    if (a.name == app_name)
      return &a;
  return nullptr;
}

const workunit_rec* project_state::workunit(id_type id) const {
  auto i = workunits.find(id);
  return i == workunits.end() ? nullptr : &i->second;
}

const result_rec* project_state::result(result_ref r) const {
  auto wu = workunit(r.wu);
  if (wu == nullptr || r.index >= wu->results.size())
    return nullptr;
  return &wu->results[r.index];
}

std::optional<result_ref> project_state::parse_result_name(std::string_view name) const {
  auto split = split_indexed_name(name);
  if (!split)
    return std::nullopt;
  auto [base, index] = *split;
  auto i = wu_by_name.find(std::string{base});
  if (i == wu_by_name.end())
    return std::nullopt;
  result_ref r{i->second, index};
  if (result(r) == nullptr)
    return std::nullopt;
  return r;
}

std::string project_state::result_name(result_ref r) const {
  auto wu = workunit(r.wu);
  std::string base = wu != nullptr ? wu->name : "wu" + std::to_string(r.wu);
  return base + "_" + std::to_string(r.index);
}

bool operator==(const project_state& a, const project_state& b) {
  return a.index == b.index && a.name == b.name && a.long_name == b.long_name
         && a.apps == b.apps && a.credit == b.credit && a.version_credit == b.version_credit
         && a.min_avg_pfc == b.min_avg_pfc && a.credit_imports == b.credit_imports
         && a.teams == b.teams
         && a.users == b.users && a.hosts == b.hosts
         && a.workunits == b.workunits && a.next_user == b.next_user
         && a.next_host == b.next_host && a.next_wu == b.next_wu && a.counters == b.counters;
}

void rebuild_indices(project_state& s) {
  s.user_by_auth.clear();
  for (const auto& [id, u] : s.users)
    s.user_by_auth.emplace(u.authenticator, id);
  s.wu_by_name.clear();
  s.unsent.clear();
  s.deadlines = {};
  s.active_workunits = 0;
  s.input_refs.clear();
  // Unsent results are served in creation order: workunit id, then index.
  std::vector<id_type> ids;
  ids.reserve(s.workunits.size());
  for (const auto& [id, wu] : s.workunits)
    ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (auto id : ids) {
    const auto& wu = s.workunits.at(id);
    s.wu_by_name.emplace(wu.name, id);
    if (!wu.files_deleted)
      for (const auto& in : wu.params.inputs)
        ++s.input_refs[in.name];
    if (wu.state == wu_state::active || wu.state == wu_state::validated)
      ++s.active_workunits;
    for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
      const auto& r = wu.results[i];
      if (r.state == result_state::unsent)
        s.unsent[wu.app].push_back({id, i});
      else if (r.state == result_state::in_progress)
        s.deadlines.push({r.deadline, {id, i}});
    }
  }
}

void apply(project_state& s, const event& e) {
  std::visit(
    overload{
      [&](const ev::project_configured& x) {
        s.name = x.name;
        s.long_name = x.long_name;
        s.apps = x.apps;
        s.credit = x.credit;
      },
      [&](const ev::user_created& x) {
        s.users[x.id] = user_rec{x.id, x.name, x.email, x.authenticator, e.time, {}, x.team};
        s.user_by_auth[x.authenticator] = x.id;
        s.next_user = std::max(s.next_user, x.id + 1);
      },
      [&](const ev::host_registered& x) {
        s.hosts[x.id] = host_reg{x.id, x.user, e.time, {}};
        s.next_host = std::max(s.next_host, x.id + 1);
      },
      [&](const ev::host_described&) {},
      [&](const ev::workunit_created& x) {
        auto& wu = s.workunits[x.id];
        wu = workunit_rec{};
        wu.id = x.id;
        wu.name = x.name;
        wu.app = x.app;
        wu.params = x.params;
        wu.created = e.time;
        s.wu_by_name[x.name] = x.id;
        s.next_wu = std::max(s.next_wu, x.id + 1);
        ++s.counters.workunits_created;
        ++s.active_workunits;
        for (const auto& in : x.params.inputs)
          ++s.input_refs[in.name];
        add_results(s, wu, x.n_results);
      },
      [&](const ev::results_created& x) {
        auto i = s.workunits.find(x.wu);
        if (i != s.workunits.end())
          add_results(s, i->second, x.count);
      },
      [&](const ev::result_dispatched& x) {
        if (auto r = find_result(s, x.result); r && r->state == result_state::unsent) {
          r->state = result_state::in_progress;
          r->host = x.host;
          r->sent = e.time;
          r->deadline = x.deadline;
          r->version = x.version;
          r->peak_flops = x.peak_flops;
          s.deadlines.push({x.deadline, x.result});
          ++s.counters.results_dispatched;
        }
      },
      [&](const ev::result_reported& x) {
        if (auto r = find_result(s, x.result);
            r && r->state == result_state::in_progress && r->host == x.host) {
          r->state = result_state::over;
          r->outcome = x.report.success ? result_outcome::success : result_outcome::client_error;
          r->received = e.time;
          r->report = x.report;
          r->host_pfc = x.host_pfc;
          r->probation = x.probation;
          r->scale_time = x.scale_time;
          ++s.counters.results_reported;
        }
      },
      [&](const ev::result_timed_out& x) {
        if (auto r = find_result(s, x.result); r && r->state == result_state::in_progress) {
          r->state = result_state::over;
          r->outcome = result_outcome::no_reply;
          ++s.counters.results_timed_out;
        }
      },
      [&](const ev::workunit_validated& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end())
          return;
        auto& wu = i->second;
        for (std::size_t k = 0; k < x.verdicts.size(); ++k) {
          const auto& v = x.verdicts[k];
          if (v.index >= wu.results.size())
            continue;
          auto& r = wu.results[v.index];
          r.validation = v.valid ? validate_state::valid : validate_state::invalid;
          if (k >= x.credit.size())
            continue;
          r.credit = x.credit[k];
          auto granted = x.credit[k].granted;
          if (!(granted > 0))
            continue;
          if (auto h = s.hosts.find(v.host); h != s.hosts.end()) {
            h->second.credit.add(granted, e.time, s.credit.credit_half_life);
            if (auto u = s.users.find(h->second.user); u != s.users.end()) {
              u->second.credit.add(granted, e.time, s.credit.credit_half_life);
              if (!u->second.team.empty())
                s.teams[u->second.team].add(granted, e.time, s.credit.credit_half_life);
            }
          }
        }
        if (x.canonical && !wu.canonical) {
          wu.canonical = x.canonical;
          wu.state = wu_state::validated;
          mark_unneeded(wu);
          ++s.counters.workunits_validated;
        }
      },
      [&](const ev::workunit_assimilated& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || i->second.state == wu_state::assimilated)
          return;
        i->second.state = wu_state::assimilated;
        i->second.finished = e.time;
        ++s.counters.workunits_assimilated;
        if (s.active_workunits > 0)
          --s.active_workunits;
      },
      [&](const ev::workunit_failed& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || i->second.state == wu_state::failed)
          return;
        i->second.state = wu_state::failed;
        i->second.failure = x.reason;
        i->second.finished = e.time;
        mark_unneeded(i->second);
        ++s.counters.workunits_failed;
        if (s.active_workunits > 0)
          --s.active_workunits;
      },
      [&](const ev::workunit_files_deleted& x) {
        auto i = s.workunits.find(x.wu);
        if (i == s.workunits.end() || i->second.files_deleted)
          return;
        i->second.files_deleted = true;
        for (const auto& in : i->second.params.inputs)
          if (auto r = s.input_refs.find(in.name); r != s.input_refs.end() && --r->second == 0)
            s.input_refs.erase(r);
      },
      [&](const ev::host_result_validated&) {},
      [&](const ev::credit_normalized& x) {
        if (x.min_avg_pfc > 0)
          s.min_avg_pfc[x.app] = x.min_avg_pfc;
        else
          s.min_avg_pfc.erase(x.app);
        for (const auto& v : x.versions)
          s.version_credit[v.id] = v;
      },
      [&](const ev::credit_imported& x) {
        if (x.records.empty())
          s.credit_imports.erase(x.source);
        else
          s.credit_imports[x.source] = x.records;
      },
    },
    e.data);
}

// -- host_state ---------------------------------------------------------------

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

} // namespace

void apply(host_state& s, const event& e, std::string_view result_name,
           const credit_settings& cs) {
  std::visit(overload{
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
                 s.in_progress[std::string{result_name}] =
                   held_result{x.result, x.deadline, x.version.app_version_id, e.time};
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
                 hav.turnaround.update(us_to_seconds(e.time - i->second.sent),
                                       cs.host_average_samples, cs.host_alpha, cs.sample_cap);
                 if (x.report.success) {
                   ++hav.n_success;
                   if ((x.report.flags & flag_bad_elapsed) == 0) {
                     hav.elapsed_sum += x.report.elapsed;
                     ++hav.elapsed_n;
                   }
                   if (hav.jobs_per_day_init > 0)
                     hav.max_jobs_per_day =
                       std::min(hav.jobs_per_day_init, std::max(1, hav.max_jobs_per_day) * 2);
                 } else {
                   ++hav.n_error;
                   // A crash costs a job of the daily quota; an abort does not.
                   if (x.report.client_state != client_state_aborted && hav.jobs_per_day_init > 0)
                     hav.max_jobs_per_day = std::max(1, hav.max_jobs_per_day - 1);
                   error_outcome(hav, cs, e.time, i->second.deadline - i->second.sent);
                 }
                 ++s.results_reported;
                 s.last_rpc = e.time;
                 s.in_progress.erase(i);
               },
               [&](const ev::result_timed_out&) {
                 auto i = s.in_progress.find(std::string{result_name});
                 if (i == s.in_progress.end())
                   return;
                 auto& hav = s.app_versions[i->second.app_version_id];
                 ++hav.n_timeout;
                 error_outcome(hav, cs, e.time, i->second.deadline - i->second.sent);
                 s.in_progress.erase(i);
               },
               [&](const ev::host_result_validated& x) {
                 auto& hav = s.app_versions[x.app_version_id];
                 if (x.valid) {
                   if (x.pfc_sample > 0)
                     hav.pfc.update(x.pfc_sample, cs.host_average_samples, cs.host_alpha,
                                    cs.sample_cap);
                   if (x.et_sample > 0)
                     hav.et.update(x.et_sample, cs.host_average_samples, cs.host_alpha,
                                   cs.sample_cap);
                   hav.error_rate *= 1 - cs.error_rate_alpha;
                   if (!x.cheat && hav.scale_probation && hav.host_scale_time != 0
                       && e.time > hav.host_scale_time)
                     hav.scale_probation = false;
                 } else {
                   hav.error_rate = hav.error_rate * (1 - cs.error_rate_alpha)
                                    + cs.error_rate_alpha;
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

// -- app_version_state --------------------------------------------------------

void apply(app_version_state& s, const event& e, const credit_settings& cs) {
  if (auto x = std::get_if<ev::workunit_validated>(&e.data)) {
    for (std::size_t k = 0; k < x->verdicts.size(); ++k) {
      const auto& v = x->verdicts[k];
      if (v.app_version_id != s.id)
        continue;
      if (v.valid) {
        ++s.n_valid;
        s.elapsed_sum += v.elapsed;
        s.cpu_sum += v.cpu;
        if (k < x->credit.size()) {
          const auto& c = x->credit[k];
          if (c.pfc_sample > 0) {
            s.pfc.update(c.pfc_sample, cs.version_average_samples, cs.version_alpha,
                         cs.sample_cap);
            s.host_pfc[v.host].update(c.pfc_sample, cs.host_average_samples, cs.host_alpha,
                                      cs.sample_cap);
          }
          s.credit.add(c.granted, e.time, cs.credit_half_life);
        }
      } else {
        ++s.n_invalid;
      }
    }
  } else if (auto n = std::get_if<ev::credit_normalized>(&e.data)) {
    for (const auto& v : n->versions)
      if (v.id == s.id)
        s.pfc_scale = v.scale;
  }
}

average_var version_pfc(const app_version_state& s, const credit_settings& cs) {
  if (!cs.version_pfc_median)
    return s.pfc;
  std::vector<double> means;
  for (const auto& [host, a] : s.host_pfc)
    if (a.n >= cs.host_sample_threshold && a.avg > 0)
      means.push_back(a.avg);
  if (means.empty())
    return s.pfc;
  std::sort(means.begin(), means.end());
  auto mid = means.size() / 2;
  average_var out = s.pfc;
  out.avg = means.size() % 2 == 1 ? means[mid] : (means[mid - 1] + means[mid]) / 2;
  return out;
}

// -- world --------------------------------------------------------------------

void apply(world& w, const event& e) {
  if (e.project >= w.projects.size())
    w.projects.resize(e.project + 1);
  auto& pw = w.projects[e.project];
  pw.project.index = e.project;
  apply(pw.project, e);
  if (auto cfg = std::get_if<ev::project_configured>(&e.data)) {
    for (const auto& a : cfg->apps)
      for (const auto& v : a.versions)
        pw.app_versions[v.id].id = v.id;
  }
  if (auto h = host_of(e.data)) {
    std::string name;
    if (auto r = result_of(e.data))
      name = pw.project.result_name(*r);
    apply(pw.hosts[*h], e, name, pw.project.credit);
  }
  if (auto x = std::get_if<ev::workunit_validated>(&e.data)) {
    std::set<std::uint32_t> versions;
    for (const auto& v : x->verdicts)
      versions.insert(v.app_version_id);
    for (auto id : versions) {
      auto& av = pw.app_versions[id];
      av.id = id;
      apply(av, e, pw.project.credit);
    }
  }
  if (auto x = std::get_if<ev::credit_normalized>(&e.data)) {
    for (const auto& v : x->versions) {
      auto& av = pw.app_versions[v.id];
      av.id = v.id;
      apply(av, e, pw.project.credit);
    }
  }
  if (e.seq != 0)
    w.seq = e.seq;
}

std::string encode_snapshot(const world& w) {
  std::string out;
  storage::writer wr{out};
  wr.put_u8(snapshot_version);
  storage::encoder enc{wr};
  enc.put(w);
  return out;
}

std::optional<world> decode_snapshot(std::string_view blob) {
  storage::reader r{blob};
  if (r.get_u8() != snapshot_version || r.failed())
    return std::nullopt;
  world w;
  storage::decoder dec{r};
  dec.get(w);
  if (r.failed() || !r.at_end())
    return std::nullopt;
  for (auto& pw : w.projects)
    rebuild_indices(pw.project);
  return w;
}

} // namespace cobble
