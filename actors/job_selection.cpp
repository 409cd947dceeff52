#include "actors/error.hpp"
#include "actors/project_logic_detail.hpp"
#include "actors/version_choice.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace cobble {

using namespace detail;

namespace detail {

std::optional<version_choice>
choose_version(const app_rec& app, const job_request& req, resource_type t,
               const std::vector<config::plan_class_config>& plan_classes) {
  auto res = static_cast<std::uint8_t>(t);
  version_choice c;
  if (req.anonymous) {
    // The client's own version, echoed exactly; statistics go to the matching configured
    // version, or to the app's best version of that resource type.
    const client_app_version* offered = nullptr;
    for (const auto& o : req.offered)
      if (o.app_name == app.name && o.coproc_type == t
          && (offered == nullptr || o.version_num > offered->version_num))
        offered = &o;
    if (offered == nullptr)
      return std::nullopt;
    // Statistics of anonymous versions are kept under their own identity per app and
    // resource type (the credit design's -2/-3/-4), never mixed with the project's builds.
    c.version = nullptr;
    c.echo = version_echo{anonymous_version_id(app.id, res), offered->platform,
                          offered->version_num, offered->plan_class};
    c.instances = t == resource_type::cpu ? std::max(offered->avg_ncpus, 0.001)
                                          : std::max(offered->coproc_count, 0.001);
    c.flops = offered->flops;
  } else {
    auto pick = choose_app_version(app, req, t, plan_classes);
    if (!pick)
      return std::nullopt;
    const auto* best = pick->version;
    c.version = best;
    c.echo = version_echo{best->id, best->platform, best->version_num, best->plan_class};
    c.instances = t == resource_type::cpu ? pick->avg_ncpus : pick->coproc_count;
    c.flops = pick->flops;
    c.avg_ncpus = pick->avg_ncpus;
  }
  for (const auto& u : req.unit_versions)
    if (u.app_name == app.name && u.version_num == c.echo.version_num
        && u.plan_class == c.echo.plan_class && std::isfinite(u.seconds_per_app_unit)
        && u.seconds_per_app_unit > 0)
      c.client_spau = u.seconds_per_app_unit;
  double gpu_peak = 0;
  c.devices = t == resource_type::cpu ? std::max(req.info.p_ncpus, 1) : 1;
  for (std::size_t i = 0; i < req.info.coprocs.size(); ++i)
    if (t != resource_type::cpu && req.info.coprocs[i].first == res) {
      if (i < req.info.coproc_peak_flops.size())
        gpu_peak = req.info.coproc_peak_flops[i];
      c.devices = std::max(req.info.coprocs[i].second, 1);
    }
  if (c.flops <= 0) {
    if (t == resource_type::cpu) {
      c.flops = std::max(req.info.p_fpops, 1e6) * c.instances;
    } else {
      c.flops = gpu_peak * c.instances;
      if (c.flops <= 0)
        c.flops = 1e10;
    }
  }
  // peak_flops(J): the CPUs the version uses on this host at the benchmark, plus its GPUs at
  // their peak.
  if (c.version != nullptr)
    c.peak_flops = job_peak_flops(req.info.p_fpops, c.avg_ncpus, gpu_peak,
                                  t == resource_type::cpu ? 0.0 : c.instances);
  return c;
}

/// True when some version of the app has validated samples (normalizing an unused app would
/// only write events that say nothing).
bool in_use(const std::vector<version_credit_input>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](auto& in) { return in.pfc.n > 0; });
}

/// The AutoFlops completion time estimate and bound of a job on the requesting host, when
/// the app gives them to this client (see estimate_mode) and its seconds_per_app_unit(V)
/// is known.
std::optional<completion_time>
autoflops_estimate(const project_state& st, const app_rec& app, const wu_params& p,
                   const version_choice& c, const version_hint& hint) {
  auto mode = app.autoflops.estimates;
  double spau = 0;
  bool own_record = false;
  if (mode != estimate_mode::off && c.client_spau > 0) {
    spau = c.client_spau;
  } else if (mode == estimate_mode::all && hint.spau.n > 0 && hint.spau.avg > 0) {
    spau = hint.spau.avg;
    // No report of the pair carried app units (a BOINC client): its samples are per
    // predicted unit, so the ratio of actual to predicted is in them already and the
    // spread is the host's own (docs/autoflops.md).
    own_record = hint.spau_var.with_units == 0;
  }
  if (!(spau > 0))
    return std::nullopt;
  static const app_units_stats none;
  auto it = st.autoflops.find(app.id);
  auto ct = own_record
              ? host_completion_times(spau, p.predicted_app_units, hint.spau_var, app.autoflops)
              : completion_times(spau, p.predicted_app_units,
                                 it == st.autoflops.end() ? none : it->second, app.autoflops);
  // While the host's own record warms up, its bound is never tighter than the one the client
  // would get without AutoFlops: rsc_fpops_bound / flops, or × ETmean(H,V) once known.
  if (own_record && hint.spau_var.log.n < std::max<std::uint32_t>(app.autoflops.min_samples, 2)
      && c.flops > 0 && p.rsc_fpops_bound > 0) {
    bool use_et = hint.et.n >= st.credit.host_sample_threshold && hint.et.avg > 0;
    ct.bound = std::max(ct.bound,
                        use_et ? p.rsc_fpops_bound * hint.et.avg : p.rsc_fpops_bound / c.flops);
  }
  if (!(ct.estimate > 0) || !std::isfinite(ct.bound))
    return std::nullopt;
  return ct;
}

project_logic::dispatch_credit
job_dispatch_credit(const project_state& st, const app_rec& app, const wu_params& p,
                    const version_choice& c, const version_hint& hint, int quota) {
  bool use_et = hint.et.n >= st.credit.host_sample_threshold && hint.et.avg > 0;
  auto af = autoflops_estimate(st, app, p, c, hint);
  double runtime = af       ? af->estimate
                   : use_et ? p.rsc_fpops_est * hint.et.avg
                            : p.rsc_fpops_est / c.flops;
  return project_logic::dispatch_credit{c.peak_flops,
                                        quota,
                                        runtime,
                                        use_et ? runtime * c.flops / p.rsc_fpops_est : 1.0,
                                        af ? af->estimate : 0.0,
                                        af ? af->bound : 0.0,
                                        c.flops};
}

bool host_has_result_of(const workunit_rec& wu, id_type host) {
  return std::any_of(wu.results.begin(), wu.results.end(), [&](const result_rec& r) {
    return r.state != result_state::unsent && r.host == host;
  });
}

bool user_has_result_of(const project_state& st, const workunit_rec& wu, id_type user) {
  return std::any_of(wu.results.begin(), wu.results.end(), [&](const result_rec& r) {
    if (r.state == result_state::unsent)
      return false;
    auto h = st.hosts.find(r.host);
    return h != st.hosts.end() && h->second.user == user;
  });
}

} // namespace detail

granted_job
project_logic::dispatch(const app_rec& app, result_ref ref, id_type host, const version_echo& echo,
                        time_us now, std::vector<event>& events, const dispatch_credit& credit) {
  const auto& wu = state.workunits.at(ref.wu);
  auto deadline = now + seconds_to_us(wu.params->delay_bound);
  ev::result_dispatched d{ref,
                          host,
                          deadline,
                          echo,
                          credit.peak_flops,
                          credit.jobs_per_day,
                          wu.params->predicted_app_units};
  auto job = describe_job(app, ref, echo, deadline, credit);
  job.dispatched = d;
  job.time = now;
  emit(events, d, now);
  return job;
}

granted_job
project_logic::describe_job(const app_rec& app, result_ref ref, const version_echo& echo,
                            time_us deadline, const dispatch_credit& credit) const {
  const auto& wu = state.workunits.at(ref.wu);
  granted_job job;
  job.runtime_estimate = credit.runtime;
  job.app = app.id;
  job.dispatched.version = echo;
  auto rname = state.result_name(ref);
  auto& w = job.workunit;
  w.name = wu.name;
  w.app_name = app.name;
  w.command_line = wu.params->command_line;
  // The client estimates rsc_fpops_est / its flops: both figures are scaled so that it
  // arrives at R(J,H) (the bound keeps its ratio to the estimate).
  w.rsc_fpops_est = wu.params->rsc_fpops_est * credit.fpops_scale;
  w.rsc_fpops_bound = wu.params->rsc_fpops_bound * credit.fpops_scale;
  if (credit.est_seconds > 0 && credit.flops > 0) {
    // AutoFlops: a BOINC client's estimate (est / flops) and elapsed-time limit (bound /
    // flops) follow the completion time estimate and bound.
    w.rsc_fpops_est = credit.est_seconds * credit.flops;
    w.rsc_fpops_bound = credit.bound_seconds * credit.flops;
  }
  w.rsc_memory_bound = wu.params->rsc_memory_bound;
  w.rsc_disk_bound = wu.params->rsc_disk_bound;
  for (std::size_t i = 0; i < wu.params->inputs.size(); ++i) {
    const auto& in = wu.params->inputs[i];
    w.inputs.push_back(file_ref{in.name, wu.params->input_open_names[i], true, false});
    job.files.push_back(file_description{in.name, false, in.nbytes, in.md5, 0, {}});
  }
  auto& r = job.result;
  r.name = rname;
  r.wu_name = wu.name;
  r.report_deadline = us_to_seconds(deadline);
  r.platform = echo.platform;
  r.version_num = echo.version_num;
  r.plan_class = echo.plan_class;
  r.peak_flops_per_sec = credit.peak_flops;
  r.predicted_app_units = wu.params->predicted_app_units;
  r.est_seconds = credit.est_seconds;
  r.bound_seconds = credit.bound_seconds;
  // Heartbeat elements of a sequence upload nothing.
  auto declared = declared_outputs(wu, &app);
  for (std::size_t i = 0; i < declared; ++i) {
    auto out_name = rname + "_" + std::to_string(i);
    r.outputs.push_back(file_ref{out_name, app.output_names[i], true, false});
    job.files.push_back(file_description{out_name, true, 0, {}, app.max_output_nbytes, {}});
  }
  return job;
}

std::vector<granted_job>
project_logic::select_jobs(const job_request& req, time_us now, std::vector<event>& events,
                           std::vector<reply_message>* why) {
  std::vector<granted_job> jobs;
  auto say = [&](std::string text) {
    if (why != nullptr && std::none_of(why->begin(), why->end(), [&](const reply_message& m) {
          return m.text == text;
        }))
      why->push_back({std::move(text), false});
  };
  constexpr std::size_t scan_limit = 256; // candidates looked at per app and resource
  std::map<std::uint32_t, int> per_app;
  // The requesting host's user, for one result of a workunit per user (0: not known).
  auto owner = state.hosts.find(req.host);
  id_type user = owner == state.hosts.end() ? 0 : owner->second.user;
  for (int ti = 0; ti < n_resource_types; ++ti) {
    auto t = static_cast<resource_type>(ti);
    if (static_cast<std::size_t>(ti) >= req.requests.size())
      break;
    auto want = req.requests[ti];
    if (!want.wants_work())
      continue;
    double secs = want.req_secs;
    double inst = want.req_instances;
    // The jobs-in-progress cap of this resource (host_logic::job_request_for).
    int left = static_cast<std::size_t>(ti) < req.in_progress_left.size() ? req.in_progress_left[ti]
                                                                          : -1;
    for (const auto& app : state.apps) {
      if (!(secs > 0 || inst > 0) || left == 0)
        break;
      auto choice = choose_version(app, req, t, plan_classes);
      if (!choice)
        continue;
      // The (host, version) pair's daily quota and runtime statistics.
      version_hint hint;
      if (auto h = req.hints.find(choice->echo.app_version_id); h != req.hints.end())
        hint = h->second;
      bool use_et = hint.et.n >= state.credit.host_sample_threshold && hint.et.avg > 0;
      int quota = initial_jobs_per_day(app.max_jobs_per_day, choice->devices);
      // A pair the host has no record of yet (its first job of this version) has the whole
      // initial quota; the dispatch event tells the host what it is.
      int jobs_left = hint.jobs_left >= 0 ? hint.jobs_left : quota;
      // R(J,H): the AutoFlops estimate when there is one; else E(J) × ETmean(H,V) once the
      // pair has enough samples, else E(J) / flops. Also whether the completion check applies.
      auto plan = [&](const workunit_rec& wu, dispatch_credit& dc) {
        dc = job_dispatch_credit(state, app, wu.params, *choice, hint, quota);
        return use_et || dc.est_seconds > 0; // an AutoFlops estimate is positive
      };
      int sent_now = 0;
      // AutoFlops reference job: every host runs it once, before other work of the app.
      if (!app.autoflops.reference_job.empty() && per_app[app.id] < app.max_jobs_per_rpc
          && jobs_left > 0 && left != 0) {
        auto rid = state.wu_by_name.find(app.autoflops.reference_job);
        if (rid != state.wu_by_name.end()) {
          const auto& rwu = state.workunits.at(rid->second);
          if (rwu.app == app.id && !rwu.sequence && !ended_unfinished(rwu.state)
              && !host_has_result_of(rwu, req.host)) {
            std::optional<std::uint32_t> index;
            for (std::uint32_t i = 0; i < rwu.results.size() && !index; ++i)
              if (rwu.results[i].state == result_state::unsent)
                index = i;
            if (!index) {
              index = static_cast<std::uint32_t>(rwu.results.size());
              emit(events,
                   ev::results_created{rwu.id, 1,
                                       "reference job for host " + std::to_string(req.host), false},
                   now);
            }
            dispatch_credit dc;
            plan(state.workunits.at(rid->second), dc);
            jobs.push_back(
              dispatch(app, {rid->second, *index}, req.host, choice->echo, now, events, dc));
            ++per_app[app.id];
            ++sent_now;
            --left;
            secs -= dc.runtime;
            inst -= choice->instances;
          }
        }
      }
      auto qit = state.unsent.find(app.id);
      if (qit == state.unsent.end())
        continue;
      auto& queue = qit->second;
      // Drop stale entries at the front (sent, or no longer needed).
      while (!queue.empty()) {
        auto r = state.result(queue.front());
        if (r != nullptr && r->state == result_state::unsent)
          break;
        queue.pop_front();
      }
      if (!queue.empty() && jobs_left <= 0 && sent_now == 0)
        say("This computer has reached its daily quota of " + app.name
            + " tasks; it gets more tomorrow, and more each day as its tasks succeed.");
      int too_slow = 0;
      std::size_t scanned = 0;
      for (std::size_t qi = 0; qi < queue.size() && scanned < scan_limit; ++qi, ++scanned) {
        if (!(secs > 0 || inst > 0) || per_app[app.id] >= app.max_jobs_per_rpc)
          break;
        if (sent_now >= jobs_left || left == 0)
          break;
        auto ref = queue[qi];
        auto wit = state.workunits.find(ref.wu);
        if (wit == state.workunits.end())
          continue;
        const auto& wu = wit->second;
        if (wu.state != wu_state::active || wu.sequence || ref.index >= wu.results.size()
            || wu.results[ref.index].state != result_state::unsent)
          continue;
        if (host_has_result_of(wu, req.host))
          continue;
        if (app.one_result_per_user_per_wu && user != 0 && user_has_result_of(state, wu, user))
          continue;
        dispatch_credit dc;
        bool check = plan(wu, dc);
        double runtime = dc.runtime;
        // Completion check: a job the host cannot finish before its deadline is not sent.
        if (check && std::max(want.estimated_delay, 0.0) + runtime > wu.params->delay_bound) {
          ++too_slow;
          continue;
        }
        auto job = dispatch(app, ref, req.host, choice->echo, now, events, dc);
        jobs.push_back(std::move(job));
        ++per_app[app.id];
        ++sent_now;
        --left;
        secs -= runtime;
        inst -= choice->instances;
      }
      if (too_slow > 0 && sent_now == 0)
        say("Tasks of " + app.name
            + " would not finish before their deadlines on this computer (with the work it "
              "has queued): none sent.");
    }
  }
  return jobs;
}

std::vector<reply_message>
project_logic::no_version_messages(const job_request& req,
                                   const std::vector<granted_job>& jobs) const {
  std::vector<reply_message> out;
  if (!req.send_work || req.anonymous)
    return out;
  std::set<std::uint8_t> served;
  for (const auto& j : jobs)
    if (const auto* app = state.app(j.app))
      for (const auto& v : app->versions)
        if (v.id == j.dispatched.version.app_version_id)
          served.insert(v.resource);
  std::set<std::string> said;
  for (std::uint8_t t = 0; t < n_resource_types && t < req.requests.size(); ++t) {
    if (!req.requests[t].wants_work() || served.count(t))
      continue;
    for (const auto& app : state.apps) {
      auto text = no_version_message(app, req, static_cast<resource_type>(t), plan_classes);
      if (!text.empty() && said.insert(text).second)
        out.push_back({std::move(text), false});
    }
  }
  return out;
}

std::vector<app_units_info>
project_logic::app_units_infos(const std::set<std::uint32_t>& sent) const {
  std::vector<app_units_info> out;
  for (const auto& app : state.apps) {
    bool cpu = false, gpu = false;
    for (const auto& v : app.versions)
      (v.resource == static_cast<std::uint8_t>(resource_type::cpu) ? cpu : gpu) = true;
    if (!sent.count(app.id) && !(cpu && gpu))
      continue;
    app_units_info a;
    a.app_name = app.name;
    a.has_cpu_and_gpu = cpu && gpu;
    if (auto i = state.autoflops.find(app.id); i != state.autoflops.end())
      a.est_flops_per_au = i->second.est_flops_per_au;
    out.push_back(std::move(a));
  }
  return out;
}

} // namespace cobble
