#include "actors/project.hpp"

#include "actors/error.hpp"
#include "actors/host.hpp"
#include "actors/work_sequence.hpp"

#include <caf/all.hpp>

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace cobble {

// -- configuration ------------------------------------------------------------

autoflops_settings autoflops_settings_from(const config::app_config& ac) {
  const auto& c = ac.autoflops;
  autoflops_settings s;
  s.estimates = c.estimates == config::estimate_clients::off      ? estimate_mode::off
                : c.estimates == config::estimate_clients::client ? estimate_mode::client
                                                                  : estimate_mode::all;
  s.est_x = c.est_x;
  s.bound_x = c.bound_x;
  s.min_samples = static_cast<std::uint32_t>(c.min_samples);
  s.warmup_bound_factor = c.warmup_bound_factor;
  s.log_ratio = c.log_ratio;
  s.flops_samples = static_cast<std::uint32_t>(c.flops_samples);
  s.flops_percentile = c.flops_percentile;
  s.flops_alpha = c.flops_alpha;
  s.reference_job = c.reference_job;
  s.policy = ac.credit_policy == config::credit_policy_kind::app_units ? credit_policy::app_units
                                                                       : credit_policy::pfc;
  s.abort_quota_factor = c.abort_quota_factor;
  s.resend_probability = c.resend_probability;
  s.suspicion_error_rate = c.suspicion_error_rate;
  s.host_min_spread = c.host_min_spread;
  return s;
}

std::vector<app_rec>
apps_from_config(const config::project_config& cfg, const std::vector<app_rec>& current) {
  std::vector<app_rec> apps = current;
  std::uint32_t next_version = 1;
  for (const auto& a : current)
    for (const auto& v : a.versions)
      next_version = std::max(next_version, v.id + 1);
  for (const auto& ac : cfg.apps) {
    auto it = std::find_if(apps.begin(), apps.end(), [&](auto& a) { return a.name == ac.name; });
    if (it == apps.end()) {
      apps.push_back(app_rec{});
      it = std::prev(apps.end());
      it->id = static_cast<std::uint32_t>(apps.size());
      it->name = ac.name;
    }
    auto& a = *it;
    a.user_friendly_name = ac.user_friendly_name.empty() ? ac.name : ac.user_friendly_name;
    a.min_quorum = ac.min_quorum;
    a.target_nresults = ac.target_nresults;
    a.max_error_results = ac.max_error_results;
    a.max_total_results = ac.max_total_results;
    a.max_success_results = ac.max_success_results;
    a.delay_bound = ac.delay_bound;
    a.max_jobs_per_rpc = ac.max_jobs_per_rpc;
    a.validator = ac.validator == config::validator_kind::accept_all ? 1 : 0;
    a.rsc_fpops_est = ac.rsc_fpops_est;
    a.rsc_fpops_bound = ac.rsc_fpops_bound;
    a.rsc_memory_bound = ac.rsc_memory_bound;
    a.rsc_disk_bound = ac.rsc_disk_bound;
    a.max_output_nbytes = ac.max_output_nbytes;
    a.output_names = ac.output_names;
    a.host_scale_check = ac.host_scale_check;
    a.max_jobs_per_day = ac.max_jobs_per_day;
    a.autoflops = autoflops_settings_from(ac);
    for (const auto& vc : ac.versions) {
      auto res = parse_resource_type(vc.coproc_type).value_or(resource_type::cpu);
      auto vit = std::find_if(a.versions.begin(), a.versions.end(), [&](auto& v) {
        return v.platform == vc.platform && v.version_num == vc.version_num
               && v.plan_class == vc.plan_class;
      });
      if (vit == a.versions.end()) {
        a.versions.push_back(app_version_rec{});
        vit = std::prev(a.versions.end());
        vit->id = next_version++;
        vit->platform = vc.platform;
        vit->version_num = vc.version_num;
        vit->plan_class = vc.plan_class;
      }
      vit->avg_ncpus = vc.avg_ncpus;
      vit->resource = static_cast<std::uint8_t>(res);
      vit->coproc_count = vc.coproc_count;
    }
  }
  return apps;
}

credit_settings credit_settings_from(const config::credit_config& c) {
  credit_settings s;
  s.normalization_interval = c.normalization_interval;
  s.version_average_samples = c.version_average_samples;
  s.host_average_samples = c.host_average_samples;
  s.version_alpha = c.version_alpha;
  s.host_alpha = c.host_alpha;
  s.version_sample_threshold = c.version_sample_threshold;
  s.host_sample_threshold = c.host_sample_threshold;
  s.sample_cap = c.sample_cap;
  s.host_scale_cap = c.host_scale_cap;
  s.cheat_factor = c.cheat_factor;
  s.flops_per_cobblestone = c.flops_per_cobblestone;
  s.credit_half_life = c.credit_half_life;
  s.error_rate_initial = c.error_rate_initial;
  s.error_rate_alpha = c.error_rate_alpha;
  s.version_pfc_median = c.version_pfc == config::version_pfc_estimator::median;
  return s;
}

std::string plan_class_key(const std::string& plan_class, std::uint8_t resource) {
  if (!plan_class.empty())
    return plan_class;
  return to_string(static_cast<resource_type>(resource));
}

plan_class_scales aggregate_scales(const std::vector<credit_export>& exports) {
  struct acc {
    double weighted = 0, weight = 0, plain = 0;
    int n = 0;
  };
  std::map<std::string, acc> by_class;
  // An import may repeat what a local project exports (or another import): count each
  // (project, app, platform, plan class) once, the first time it is seen.
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  auto add = [&](const credit_export_rec& r) {
    if (!r.app_has_cpu_and_gpu || !std::isfinite(r.scale) || !(r.scale > 0))
      return;
    if (!seen.emplace(r.project, r.app, r.platform, r.plan_class).second)
      return;
    auto& a = by_class[plan_class_key(r.plan_class, r.resource)];
    double w = std::isfinite(r.expavg_credit) && r.expavg_credit > 0 ? r.expavg_credit : 0;
    a.weighted += w * r.scale;
    a.weight += w;
    a.plain += r.scale;
    ++a.n;
  };
  for (const auto& e : exports)
    for (const auto& r : e.versions)
      add(r);
  for (const auto& e : exports)
    for (const auto& r : e.imported)
      add(r);
  plan_class_scales out;
  for (const auto& [key, a] : by_class) {
    out.scales[key] = a.weight > 0 ? a.weighted / a.weight : a.plain / a.n;
    out.weights[key] = a.weight;
  }
  return out;
}

std::string random_authenticator() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw std::runtime_error("OpenSSL random generator failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (auto b : bytes) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

// -- project_logic ------------------------------------------------------------

event project_logic::make(payload p, time_us now) const {
  event e;
  e.time = now;
  e.project = state.index;
  e.data = std::move(p);
  return e;
}

void project_logic::emit(std::vector<event>& out, payload p, time_us now) {
  auto e = make(std::move(p), now);
  apply(state, e);
  out.push_back(std::move(e));
}

std::vector<event> project_logic::configure(const config::project_config& cfg, time_us now) {
  std::vector<event> out;
  auto apps = apps_from_config(cfg, state.apps);
  auto credit = credit_settings_from(cfg.credit);
  if (apps != state.apps || state.name != cfg.name || state.long_name != cfg.long_name
      || !(credit == state.credit))
    emit(out, ev::project_configured{cfg.name, cfg.long_name, std::move(apps), credit}, now);
  for (const auto& u : cfg.users) {
    bool exists = std::any_of(state.users.begin(), state.users.end(),
                              [&](auto& kv) { return kv.second.name == u.name; });
    if (exists)
      continue;
    auto auth = u.authenticator.empty() ? random_authenticator() : u.authenticator;
    if (state.user_by_auth.count(auth))
      continue;
    emit(out, ev::user_created{state.next_user, u.name, u.email, auth, u.team}, now);
  }
  return out;
}

caf::expected<event> project_logic::create_user(const std::string& name, const std::string& email,
                                                const std::string& authenticator, time_us now) {
  if (name.empty())
    return caf::make_error(ec::invalid_argument, "user name is empty");
  for (const auto& [id, u] : state.users)
    if (u.name == name)
      return caf::make_error(ec::duplicate, "user " + name + " exists");
  if (state.user_by_auth.count(authenticator))
    return caf::make_error(ec::duplicate, "authenticator in use");
  auto e = make(ev::user_created{state.next_user, name, email, authenticator, {}}, now);
  apply(state, e);
  return e;
}

event project_logic::register_host(id_type user, const host_info_rec& info, time_us now) {
  auto e = make(ev::host_registered{state.next_host, user, info}, now);
  apply(state, e);
  return e;
}

namespace {

bool valid_wu_name(const std::string& name) {
  if (name.empty() || name.size() > 200)
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return name.find("..") == std::string::npos;
}

template <class T>
caf::error positive(const char* what, const std::optional<T>& x) {
  if (x && !(*x > 0))
    return caf::make_error(ec::invalid_argument, std::string{what} + " must be positive");
  return {};
}

} // namespace

caf::expected<std::vector<event>>
project_logic::create_work(const work_batch& batch, time_us now, work_created& out) {
  if (batch.items.empty())
    return caf::make_error(ec::invalid_argument, "no work in the batch");
  std::set<std::string> names;
  std::vector<ev::workunit_created> planned;
  auto next = state.next_wu;
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    const auto& w = batch.items[i];
    auto where = "item " + std::to_string(i) + ": ";
    auto app = state.app(w.app);
    if (app == nullptr)
      return caf::make_error(ec::unknown_app, where + "no app named '" + w.app + "'");
    ev::workunit_created c;
    c.id = next++;
    c.name = w.name.empty() ? app->name + "_wu" + std::to_string(c.id) : w.name;
    if (!valid_wu_name(c.name))
      return caf::make_error(ec::invalid_argument,
                             where + "workunit name '" + c.name
                               + "' must be 1-200 characters of letters, digits, _ - .");
    if (state.find_workunit(c.name) != nullptr || !names.insert(c.name).second)
      return caf::make_error(ec::duplicate, where + "a workunit named '" + c.name + "' exists");
    for (const auto& err :
         {positive("rsc_fpops_est", w.rsc_fpops_est),
          positive("rsc_fpops_bound", w.rsc_fpops_bound),
          positive("rsc_memory_bound", w.rsc_memory_bound),
          positive("rsc_disk_bound", w.rsc_disk_bound), positive("delay_bound", w.delay_bound)})
      if (err)
        return caf::make_error(ec::invalid_argument, where + describe(err));
    if (w.predicted_app_units
        && !(std::isfinite(*w.predicted_app_units) && *w.predicted_app_units > 0))
      return caf::make_error(ec::invalid_argument,
                             where + "predicted_app_units must be a positive number");
    for (auto x : {w.rsc_fpops_est, w.rsc_fpops_bound})
      if (x && !std::isfinite(*x))
        return caf::make_error(ec::invalid_argument, where + "rsc_fpops_* must be finite");
    auto& p = c.params;
    p.predicted_app_units = w.predicted_app_units.value_or(1);
    p.command_line = w.command_line;
    p.rsc_fpops_est = w.rsc_fpops_est.value_or(app->rsc_fpops_est);
    p.rsc_fpops_bound = w.rsc_fpops_bound.value_or(
      std::max(app->rsc_fpops_bound, p.rsc_fpops_est * 10));
    p.rsc_memory_bound = w.rsc_memory_bound.value_or(app->rsc_memory_bound);
    p.rsc_disk_bound = w.rsc_disk_bound.value_or(app->rsc_disk_bound);
    p.delay_bound = w.delay_bound.value_or(app->delay_bound);
    p.min_quorum = w.min_quorum.value_or(app->min_quorum);
    p.target_nresults = w.target_nresults.value_or(std::max(app->target_nresults, p.min_quorum));
    p.max_error_results = w.max_error_results.value_or(app->max_error_results);
    p.max_total_results = w.max_total_results.value_or(app->max_total_results);
    p.max_success_results = w.max_success_results.value_or(app->max_success_results);
    if (p.rsc_fpops_bound < p.rsc_fpops_est)
      return caf::make_error(ec::invalid_argument,
                             where + "rsc_fpops_bound must be at least rsc_fpops_est");
    if (p.min_quorum < 1 || p.target_nresults < p.min_quorum
        || p.max_total_results < p.target_nresults || p.max_total_results > 255
        || p.max_error_results < 0 || p.max_success_results < p.min_quorum)
      return caf::make_error(ec::invalid_argument, where
                                                     + "need 1 <= min_quorum <= target_nresults <= "
                                                       "max_total_results <= 255 and "
                                                       "max_success_results >= min_quorum");
    for (const auto& in : w.inputs) {
      if (in.stored_name.empty() || in.open_name.empty())
        return caf::make_error(ec::invalid_argument, where + "input without a name");
      p.inputs.push_back(file_rec{in.stored_name, in.nbytes, in.md5});
      p.input_open_names.push_back(in.open_name);
    }
    c.app = app->id;
    c.n_results = static_cast<std::uint32_t>(p.target_nresults);
    c.submitter = batch.submitter;
    planned.push_back(std::move(c));
  }
  std::vector<event> events;
  for (auto& c : planned) {
    out.ids.push_back(c.id);
    out.names.push_back(c.name);
    emit(events, std::move(c), now);
  }
  return events;
}

namespace {

struct version_choice {
  const app_version_rec* version = nullptr;
  version_echo echo;
  double flops = 0;       // the speed the client assumes (runtime = rsc_fpops_est / flops)
  double peak_flops = 0;  // peak_flops(J)
  double instances = 1;   // CPUs or GPUs one job uses
  int devices = 1;        // CPUs or GPUs of this type the host has (for the daily quota)
  double client_spau = 0; // seconds_per_app_unit the client reported for it (0: none)
};

std::optional<version_choice>
choose_version(const app_rec& app, const job_request& req, resource_type t) {
  auto res = static_cast<std::uint8_t>(t);
  // The newest version for this resource on the client's platform (any platform for
  // anonymous clients, whose own versions are matched below).
  const app_version_rec* best = nullptr;
  for (const auto& v : app.versions)
    if (v.resource == res && (req.anonymous || req.platform.empty() || v.platform == req.platform)
        && (best == nullptr || v.version_num > best->version_num))
      best = &v;
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
    if (best == nullptr)
      return std::nullopt;
    c.version = best;
    c.echo = version_echo{best->id, best->platform, best->version_num, best->plan_class};
    c.instances = t == resource_type::cpu ? best->avg_ncpus : best->coproc_count;
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
  // peak_flops(J): the CPUs the version uses at the benchmark, plus its GPUs at their peak.
  if (c.version != nullptr)
    c.peak_flops = job_peak_flops(req.info.p_fpops, c.version->avg_ncpus, gpu_peak,
                                  t == resource_type::cpu ? 0.0 : c.version->coproc_count);
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

bool host_has_result_of(const workunit_rec& wu, id_type host) {
  return std::any_of(wu.results.begin(), wu.results.end(), [&](const result_rec& r) {
    return r.state != result_state::unsent && r.host == host;
  });
}

} // namespace

granted_job
project_logic::dispatch(const app_rec& app, result_ref ref, id_type host, const version_echo& echo,
                        time_us now, std::vector<event>& events, const dispatch_credit& credit) {
  const auto& wu = state.workunits.at(ref.wu);
  granted_job job;
  auto deadline = now + seconds_to_us(wu.params->delay_bound);
  ev::result_dispatched d{ref,
                          host,
                          deadline,
                          echo,
                          credit.peak_flops,
                          credit.jobs_per_day,
                          wu.params->predicted_app_units};
  job.dispatched = d;
  job.time = now;
  job.runtime_estimate = credit.runtime;
  job.app = app.id;
  emit(events, d, now);
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
  bool outputs = !wu.sequence || wu.sequence->kind == seq_element_kind::state;
  for (std::size_t i = 0; outputs && i < app.output_names.size(); ++i) {
    auto out_name = rname + "_" + std::to_string(i);
    r.outputs.push_back(file_ref{out_name, app.output_names[i], true, false});
    job.files.push_back(file_description{out_name, true, 0, {}, app.max_output_nbytes, {}});
  }
  return job;
}

std::vector<granted_job>
project_logic::select_jobs(const job_request& req, time_us now, std::vector<event>& events) {
  std::vector<granted_job> jobs;
  constexpr std::size_t scan_limit = 256; // candidates looked at per app and resource
  std::map<std::uint32_t, int> per_app;
  for (int ti = 0; ti < n_resource_types; ++ti) {
    auto t = static_cast<resource_type>(ti);
    if (static_cast<std::size_t>(ti) >= req.requests.size())
      break;
    auto want = req.requests[ti];
    if (!want.wants_work())
      continue;
    double secs = want.req_secs;
    double inst = want.req_instances;
    for (const auto& app : state.apps) {
      if (!(secs > 0 || inst > 0))
        break;
      auto choice = choose_version(app, req, t);
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
        auto af = autoflops_estimate(state, app, wu.params, *choice, hint);
        double runtime = af       ? af->estimate
                         : use_et ? wu.params->rsc_fpops_est * hint.et.avg
                                  : wu.params->rsc_fpops_est / choice->flops;
        dc = dispatch_credit{choice->peak_flops,
                             quota,
                             runtime,
                             use_et ? runtime * choice->flops / wu.params->rsc_fpops_est : 1.0,
                             af ? af->estimate : 0.0,
                             af ? af->bound : 0.0,
                             choice->flops};
        return use_et || af.has_value();
      };
      int sent_now = 0;
      // AutoFlops reference job: every host runs it once, before other work of the app.
      if (!app.autoflops.reference_job.empty() && per_app[app.id] < app.max_jobs_per_rpc
          && jobs_left > 0) {
        auto rid = state.wu_by_name.find(app.autoflops.reference_job);
        if (rid != state.wu_by_name.end()) {
          const auto& rwu = state.workunits.at(rid->second);
          if (rwu.app == app.id && !rwu.sequence && rwu.state != wu_state::failed
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
      std::size_t scanned = 0;
      for (std::size_t qi = 0; qi < queue.size() && scanned < scan_limit; ++qi, ++scanned) {
        if (!(secs > 0 || inst > 0) || per_app[app.id] >= app.max_jobs_per_rpc)
          break;
        if (sent_now >= jobs_left)
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
        dispatch_credit dc;
        bool check = plan(wu, dc);
        double runtime = dc.runtime;
        // Completion check: a job the host cannot finish before its deadline is not sent.
        if (check && std::max(want.estimated_delay, 0.0) + runtime > wu.params->delay_bound)
          continue;
        auto job = dispatch(app, ref, req.host, choice->echo, now, events, dc);
        jobs.push_back(std::move(job));
        ++per_app[app.id];
        ++sent_now;
        secs -= runtime;
        inst -= choice->instances;
      }
    }
  }
  return jobs;
}

// -- work sequences -------------------------------------------------------------

namespace {

/// The first version of an app the host can run, over the resource types in order.
std::optional<version_choice> any_version(const app_rec& app, const job_request& req) {
  for (int t = 0; t < n_resource_types; ++t)
    if (auto c = choose_version(app, req, static_cast<resource_type>(t)))
      return c;
  return std::nullopt;
}

} // namespace

caf::expected<event> project_logic::create_sequence(const sequence_spec& spec, time_us now) {
  auto bad = [](std::string text) {
    return caf::make_error(ec::invalid_argument, std::move(text));
  };
  if (!valid_wu_name(spec.name))
    return bad("sequence name '" + spec.name
               + "' must be 1-200 characters of letters, digits, _ - .");
  if (state.seq_by_name.count(spec.name))
    return caf::make_error(ec::duplicate, "a sequence named '" + spec.name + "' exists");
  auto app = state.app(spec.app);
  if (app == nullptr)
    return caf::make_error(ec::unknown_app, "no app named '" + spec.app + "'");
  if (spec.count < 1 || spec.count > 100000)
    return bad("count must be from 1 to 100000");
  if (spec.replicas < 1 || spec.replicas > 2)
    return bad("replicas must be 1 or 2");
  if (static_cast<std::uint64_t>(spec.count) * spec.replicas > max_sequence_wus)
    return bad("a sequence has at most " + std::to_string(max_sequence_wus) + " workunits");
  if (!(spec.max_result_time >= 0))
    return bad("max_result_time must not be negative");
  for (const auto& err :
       {positive("rsc_fpops_est", spec.rsc_fpops_est),
        positive("rsc_fpops_bound", spec.rsc_fpops_bound),
        positive("rsc_memory_bound", spec.rsc_memory_bound),
        positive("rsc_disk_bound", spec.rsc_disk_bound), positive("delay_bound", spec.delay_bound)})
    if (err)
      return bad(describe(err));
  if (state.next_seq > max_sequence_id)
    return caf::make_error(ec::invalid_argument, "no sequence ids left");
  ev::sequence_created c;
  c.id = state.next_seq;
  c.name = spec.name;
  c.app = app->id;
  c.replicas = spec.replicas;
  c.accept_all = app->validator == 1;
  c.by = spec.by.empty() ? "admin" : spec.by;
  auto& p = c.params;
  p.command_line = spec.command_line;
  p.rsc_fpops_est = spec.rsc_fpops_est.value_or(app->rsc_fpops_est);
  p.rsc_fpops_bound = spec.rsc_fpops_bound.value_or(
    std::max(app->rsc_fpops_bound, p.rsc_fpops_est * 10));
  p.rsc_memory_bound = spec.rsc_memory_bound.value_or(app->rsc_memory_bound);
  p.rsc_disk_bound = spec.rsc_disk_bound.value_or(app->rsc_disk_bound);
  p.delay_bound = spec.delay_bound.value_or(app->delay_bound);
  if (p.rsc_fpops_bound < p.rsc_fpops_est)
    return bad("rsc_fpops_bound must be at least rsc_fpops_est");
  // One result per workunit: the sequence, not the workunit, replicates and relocates.
  p.min_quorum = 1;
  p.target_nresults = 1;
  p.max_error_results = 0;
  p.max_total_results = 1;
  p.max_success_results = 1;
  for (const auto& in : spec.inputs) {
    if (in.stored_name.empty() || in.open_name.empty())
      return bad("input without a name");
    p.inputs.push_back(file_rec{in.stored_name, in.nbytes, in.md5});
    p.input_open_names.push_back(in.open_name);
  }
  c.max_result_time = spec.max_result_time > 0 ? spec.max_result_time : p.delay_bound;
  c.elements = make_sequence_elements(c.id, c.name, c.replicas, 0, 1, spec.count, spec.state_every,
                                      spec.final_state);
  auto e = make(std::move(c), now);
  apply(state, e);
  return e;
}

std::optional<double> project_logic::estimate_seconds(const app_rec& app, const wu_params& params,
                                                      const job_request& req) const {
  auto choice = any_version(app, req);
  if (!choice)
    return std::nullopt;
  if (auto i = req.avg_elapsed.find(choice->echo.app_version_id);
      i != req.avg_elapsed.end() && i->second > 0)
    return i->second;
  return params.rsc_fpops_est / choice->flops;
}

project_logic::sequence_plan
project_logic::plan_sequences(const job_request& req, std::uint32_t high_water,
                              std::uint32_t per_host) const {
  sequence_plan out;
  auto holds = [&](const seq_entry& e) {
    return std::find(e.hosts.begin(), e.hosts.end(), req.host) != e.hosts.end();
  };
  for (const auto& name : req.sequences_held) {
    auto e = state.sequence(name);
    if (e == nullptr || e->ended || !holds(*e))
      out.revoked.push_back(name);
  }
  std::uint32_t held = 0;
  for (const auto& [id, e] : state.sequences)
    if (!e.ended && holds(e)) {
      out.queries.emplace_back(id, seq_query{req.host, 0, false, high_water, req.reported});
      ++held;
    }
  if (!req.send_work)
    return out;
  for (const auto& [id, e] : state.sequences) {
    if (held >= per_host)
      break;
    if (e.ended || holds(e) || std::find(e.hosts.begin(), e.hosts.end(), 0) == e.hosts.end())
      continue;
    auto app = state.app(e.app);
    if (app == nullptr)
      continue;
    auto est = estimate_seconds(*app, e.params, req);
    // Only a host that can finish an element within the maximum result time.
    if (!est || (e.max_result_time > 0 && *est > e.max_result_time))
      continue;
    out.queries.emplace_back(id, seq_query{req.host, *est, true, high_water, req.reported});
    ++held;
  }
  return out;
}

std::vector<granted_job>
project_logic::dispatch_sequence(const job_request& req, const std::vector<id_type>& wus,
                                 time_us now, std::vector<event>& events) {
  std::vector<granted_job> jobs;
  std::map<std::uint32_t, int> sent; // per app version, against its daily quota
  for (auto id : wus) {
    auto wu = state.workunit(id);
    if (wu == nullptr || !wu->sequence || wu->sequence->dead || wu->state != wu_state::active
        || wu->results.empty() || wu->results[0].state != result_state::unsent)
      continue;
    auto app = state.app(wu->app);
    auto choice = app ? any_version(*app, req) : std::nullopt;
    if (!choice) {
      spdlog::warn("sequence element {} not sent to host {}: it runs no version of the app",
                   wu->name, req.host);
      continue;
    }
    // The (host, version) pair's daily quota holds for sequence elements too: an element
    // over it stays unsent for a later RPC (the chain waits; the relocation check decides
    // whether the host keeps the sequence).
    auto vid = choice->echo.app_version_id;
    version_hint hint;
    if (auto h = req.hints.find(vid); h != req.hints.end())
      hint = h->second;
    int quota = initial_jobs_per_day(app->max_jobs_per_day, choice->devices);
    if (sent[vid] >= (hint.jobs_left >= 0 ? hint.jobs_left : quota))
      continue;
    bool use_et = hint.et.n >= state.credit.host_sample_threshold && hint.et.avg > 0;
    auto af = autoflops_estimate(state, *app, wu->params, *choice, hint);
    double runtime = af       ? af->estimate
                     : use_et ? wu->params->rsc_fpops_est * hint.et.avg
                              : wu->params->rsc_fpops_est / choice->flops;
    dispatch_credit dc{choice->peak_flops,
                       quota,
                       runtime,
                       use_et ? runtime * choice->flops / wu->params->rsc_fpops_est : 1.0,
                       af ? af->estimate : 0.0,
                       af ? af->bound : 0.0,
                       choice->flops};
    jobs.push_back(dispatch(*app, result_ref{id, 0}, req.host, choice->echo, now, events, dc));
    ++sent[vid];
  }
  return jobs;
}

std::vector<std::string> project_logic::sequence_aborts(const job_request& req) const {
  std::vector<std::string> out;
  for (const auto& name : req.other_results) {
    if (!is_sequence_name(name))
      continue;
    auto ref = state.parse_result_name(name);
    if (!ref)
      continue;
    auto wu = state.workunit(ref->wu);
    auto r = state.result(*ref);
    if (wu && r && wu->sequence && wu->sequence->dead && r->host == req.host
        && r->outcome == result_outcome::didnt_need)
      out.push_back(name);
  }
  return out;
}

std::set<id_type> project_logic::apply_sequence_events(const std::vector<event>& events) {
  std::set<id_type> dirty;
  for (const auto& e : events) {
    apply(state, e);
    if (auto x = std::get_if<ev::sequence_element_checked>(&e.data))
      dirty.insert(x->wus.begin(), x->wus.end());
  }
  return dirty;
}

namespace {

/// What two successful replicas must share to agree, under the bitwise validator.
std::string signature(const result_rec& r) {
  std::vector<std::string> parts;
  for (const auto& f : r.report->outputs)
    parts.push_back(f.md5 + ":" + std::to_string(static_cast<long long>(f.nbytes)));
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (auto& p : parts)
    out += p + ";";
  return out;
}

verdict make_verdict(const result_rec& r, std::uint32_t index, bool valid) {
  return verdict{index, valid, r.host, r.version.app_version_id, r.report->elapsed, r.report->cpu};
}

std::optional<double> min_avg_pfc_of(const project_state& st, std::uint32_t app) {
  if (auto m = st.min_avg_pfc.find(app); m != st.min_avg_pfc.end())
    return m->second;
  return std::nullopt;
}

/// The claimed credit of one valid replica, from what dispatch, the report and the last
/// normalization recorded.
credit_rec claim_of(const project_state& st, const app_rec* app, const workunit_rec& wu,
                    const result_rec& r, time_us now) {
  replica_credit_input in;
  in.elapsed = r.report->elapsed;
  in.elapsed_plausible = (r.report->flags & flag_bad_elapsed) == 0;
  in.peak_flops = r.peak_flops;
  in.anonymous = is_anonymous_version(r.version.app_version_id);
  if (auto v = st.version_credit.find(r.version.app_version_id); v != st.version_credit.end()) {
    in.version_pfc = v->second.pfc;
    in.version_scale = v->second.scale;
  }
  in.host_pfc = r.host_pfc;
  // Cherry-picking protection: not before host_scale_time, and not while on probation.
  in.probation = app != nullptr && app->host_scale_check && (r.probation || now < r.scale_time);
  return claim_credit(in, wu.params->rsc_fpops_est, wu.params->rsc_fpops_bound,
                      min_avg_pfc_of(st, wu.app), st.credit);
}

/// True when an app version (configured or anonymous) runs on a GPU.
bool gpu_version(const app_rec* app, std::uint32_t id) {
  if (is_anonymous_version(id))
    return (id & 0xfu) != 2; // anonymous_version_id: 2 + resource
  if (app != nullptr)
    for (const auto& v : app->versions)
      if (v.id == id)
        return v.resource != static_cast<std::uint8_t>(resource_type::cpu);
  return false;
}

/// What AutoFlops learns from valid results of a workunit: the canonical result's app units
/// against the prediction (when `canonical` is set) and each valid replica's
/// raw_flops_per_au = T × raw_flops_per_sec(J) / A (the client's figure when it sent one,
/// else peak_flops(J)). With a reference job only that workunit's replicas are samples.
std::optional<ev::autoflops_sampled>
autoflops_sample(const app_rec* app, const workunit_rec& wu,
                 const std::vector<std::uint32_t>& valid, std::optional<std::uint32_t> canonical) {
  if (app == nullptr)
    return std::nullopt;
  ev::autoflops_sampled x;
  x.app = app->id;
  x.wu = wu.id;
  if (canonical && *canonical < wu.results.size()) {
    x.predicted = wu.params->predicted_app_units;
    // A report without app units (BOINC clients) is no actual sample: 0.
    x.actual = std::max(wu.results[*canonical].report->app_units, 0.0);
  }
  bool reference_only = !app->autoflops.reference_job.empty();
  if (!reference_only || wu.name == app->autoflops.reference_job)
    for (auto i : valid) {
      if (i >= wu.results.size())
        continue;
      const auto& r = wu.results[i];
      if ((r.report->flags & flag_bad_elapsed) != 0)
        continue;
      double v = r.report->raw_flops_per_au;
      if (!(v > 0) || !std::isfinite(v))
        v = raw_flops_per_au(r.report->elapsed, r.peak_flops,
                             r.report->app_units > 0 ? r.report->app_units
                                                     : wu.params->predicted_app_units)
              .value_or(0);
      if (v > 0)
        x.samples.push_back({v, gpu_version(app, r.version.app_version_id)});
    }
  if (!(x.predicted > 0) && x.samples.empty())
    return std::nullopt;
  return x;
}

/// The app_units credit policy: every valid replica is granted app.mean_app_units ×
/// app.est_flops_per_au FLOPs in Cobblestones, once est_flops_per_au exists (the PFC grant
/// until then). The PFC figures stay in the record (samples for the averages).
void app_units_credit(const project_state& st, const app_rec* app, std::vector<credit_rec>& recs) {
  if (app == nullptr || app->autoflops.policy != credit_policy::app_units)
    return;
  auto i = st.autoflops.find(app->id);
  if (i == st.autoflops.end() || !(i->second.est_flops_per_au > 0) || i->second.actual.n == 0)
    return;
  double c = cobblestones(i->second.actual.mean * i->second.est_flops_per_au, st.credit);
  for (auto& r : recs) {
    r.claimed = r.granted = c;
    r.flags |= credit_app_units;
  }
}

} // namespace

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

std::vector<event> project_logic::transition(id_type wu_id, time_us now) {
  std::vector<event> out;
  auto wit = state.workunits.find(wu_id);
  if (wit == state.workunits.end())
    return out;
  const auto& wu = wit->second;
  if (wu.state == wu_state::failed)
    return out;
  auto app = state.app(wu.app);
  bool accept_all = app != nullptr && app->validator == 1;
  auto agree = [&](const result_rec& a, const result_rec& b) {
    return accept_all || signature(a) == signature(b);
  };
  if (wu.canonical) {
    // Late successes are checked against the canonical result.
    const auto& canon = wu.results[*wu.canonical];
    ev::workunit_validated v{wu.id, std::nullopt, {}, {}};
    for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
      const auto& r = wu.results[i];
      if (r.outcome == result_outcome::success && r.validation == validate_state::init) {
        bool valid = agree(r, canon);
        v.verdicts.push_back(make_verdict(r, i, valid));
        // A late valid result gets the credit the quorum was granted.
        credit_rec c;
        if (valid) {
          c = claim_of(state, app, wu, r, now);
          c.granted = canon.credit->granted;
        }
        v.credit.push_back(c);
      }
    }
    std::vector<std::uint32_t> late_valid;
    for (std::size_t k = 0; k < v.verdicts.size(); ++k)
      if (v.verdicts[k].valid)
        late_valid.push_back(v.verdicts[k].index);
    auto sample = autoflops_sample(app, wu, late_valid, std::nullopt);
    if (!v.verdicts.empty())
      emit(out, std::move(v), now);
    if (sample)
      emit(out, std::move(*sample), now);
    if (wu.state == wu_state::validated)
      emit(out, ev::workunit_assimilated{wu.id, *wu.canonical}, now);
    return out;
  }
  if (wu.state == wu_state::assimilated)
    return out;
  if (wu.sequence) {
    // A sequence element has one result. Alone it is valid when it succeeds; replicated,
    // when the corresponding element of the other chain agrees. Errors and timeouts make no
    // replacement here: the sequence relocates.
    const auto& link = *wu.sequence;
    if (link.dead || wu.results.empty())
      return out;
    const auto& r = wu.results[0];
    if (r.outcome != result_outcome::success || r.validation != validate_state::init)
      return out;
    if (!link.replicated || link.check == seq_check::agree) {
      // Credit as for a workunit validated alone: the element's own claim, granted through
      // the same path (host_result_validated follows from the verdict).
      std::vector<credit_rec> claims{claim_of(state, app, wu, r, now)};
      grant_credit(claims, wu.params->rsc_fpops_est, min_avg_pfc_of(state, wu.app), state.credit);
      app_units_credit(state, app, claims);
      auto sample = autoflops_sample(app, wu, {0}, 0u);
      emit(out, ev::workunit_validated{wu.id, 0u, {make_verdict(r, 0, true)}, claims}, now);
      if (sample)
        emit(out, std::move(*sample), now);
      emit(out, ev::workunit_assimilated{wu.id, 0}, now);
    } else if (link.check == seq_check::disagree) {
      emit(out,
           ev::workunit_validated{wu.id, std::nullopt, {make_verdict(r, 0, false)}, {credit_rec{}}},
           now);
    }
    return out;
  }
  const wu_params& p = *wu.params;
  int errors = 0, active = 0;
  std::vector<std::uint32_t> successes;
  for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
    const auto& r = wu.results[i];
    if (r.state != result_state::over)
      ++active;
    else if (r.outcome == result_outcome::client_error || r.outcome == result_outcome::no_reply)
      ++errors;
    else if (r.outcome == result_outcome::success && r.validation != validate_state::invalid)
      successes.push_back(i);
  }
  if (errors > p.max_error_results) {
    emit(out, ev::workunit_failed{wu.id, "too many errors (" + std::to_string(errors) + ")"}, now);
    return out;
  }
  // Largest group of agreeing successes.
  std::vector<std::uint32_t> best;
  for (auto i : successes) {
    std::vector<std::uint32_t> group;
    for (auto j : successes)
      if (agree(wu.results[i], wu.results[j]))
        group.push_back(j);
    if (group.size() > best.size())
      best = std::move(group);
  }
  if (static_cast<int>(best.size()) >= p.min_quorum && app != nullptr
      && app->autoflops.policy == credit_policy::app_units && p.min_quorum == 1) {
    // Cherry-picking countermeasure: a job validated alone is sometimes checked by a second
    // host: at random, and always when its host is under suspicion.
    const auto& r = wu.results[best.front()];
    bool suspect = (r.report->flags & flag_suspect) != 0;
    if (suspect || unit_draw(wu.id, 0x636865636bULL) < app->autoflops.resend_probability) {
      emit(out,
           ev::results_created{wu.id, 1,
                               suspect ? "cherry-picking check (host under suspicion)"
                                       : "cherry-picking check (random)",
                               true},
           now);
      return out;
    }
  }
  if (static_cast<int>(best.size()) >= p.min_quorum) {
    ev::workunit_validated v{wu.id, best.front(), {}, {}};
    std::vector<credit_rec> claims;
    claims.reserve(best.size());
    for (auto i : best)
      claims.push_back(claim_of(state, app, wu, wu.results[i], now));
    grant_credit(claims, wu.params->rsc_fpops_est, min_avg_pfc_of(state, wu.app), state.credit);
    app_units_credit(state, app, claims);
    for (auto i : successes) {
      auto pos = std::find(best.begin(), best.end(), i);
      bool valid = pos != best.end();
      v.verdicts.push_back(make_verdict(wu.results[i], i, valid));
      v.credit.push_back(valid ? claims[static_cast<std::size_t>(pos - best.begin())]
                               : credit_rec{});
    }
    auto canonical = best.front();
    auto sample = autoflops_sample(app, wu, best, canonical);
    emit(out, std::move(v), now);
    if (sample)
      emit(out, std::move(*sample), now);
    emit(out, ev::workunit_assimilated{wu.id, canonical}, now);
    return out;
  }
  if (static_cast<int>(successes.size()) > p.max_success_results) {
    emit(out,
         ev::workunit_failed{wu.id, "no consensus among " + std::to_string(successes.size())
                                      + " successful results"},
         now);
    return out;
  }
  int needed = p.min_quorum - static_cast<int>(best.size()) - active;
  if (static_cast<int>(successes.size()) >= p.min_quorum)
    needed = std::max(needed, 1 - active); // inconclusive: one more opinion at a time
  if (needed <= 0)
    return out;
  if (static_cast<int>(wu.results.size()) + needed > p.max_total_results) {
    emit(out, ev::workunit_failed{wu.id, "too many total results"}, now);
    return out;
  }
  emit(out,
       ev::results_created{wu.id, static_cast<std::uint32_t>(needed),
                           successes.size() >= static_cast<std::size_t>(p.min_quorum)
                             ? "inconclusive"
                             : "replacing errors or timeouts"},
       now);
  return out;
}

std::map<id_type, std::vector<validation_notice>>
project_logic::notices(const event& validated) const {
  std::map<id_type, std::vector<validation_notice>> out;
  auto x = std::get_if<ev::workunit_validated>(&validated.data);
  if (x == nullptr)
    return out;
  auto wu = state.workunit(x->wu);
  if (wu == nullptr)
    return out;
  double est = wu->params->rsc_fpops_est;
  for (std::size_t k = 0; k < x->verdicts.size(); ++k) {
    const auto& v = x->verdicts[k];
    if (v.index >= wu->results.size())
      continue;
    const auto& r = wu->results[v.index];
    ev::host_result_validated n;
    n.host = v.host;
    n.result = {x->wu, v.index};
    n.app_version_id = v.app_version_id;
    n.valid = v.valid;
    if (k < x->credit.size()) {
      const auto& c = x->credit[k];
      n.pfc_sample = c.pfc_sample;
      n.cheat = (c.flags & credit_one_time_cheat) != 0;
      n.granted = c.granted;
    }
    if (v.valid && est > 0 && (r.report->flags & flag_bad_elapsed) == 0 && r.report->elapsed > 0)
      n.et_sample = r.report->elapsed / est;
    out[v.host].push_back(validation_notice{state.result_name(n.result), n});
  }
  return out;
}

std::vector<event> project_logic::normalize(const std::vector<app_version_state>& stats,
                                            const plan_class_scales& cross_project, time_us now) {
  std::vector<event> out;
  std::map<std::uint32_t, const app_version_state*> by_id;
  for (const auto& st : stats)
    by_id[st.id] = &st;
  for (const auto& app : state.apps) {
    std::vector<version_credit_input> inputs;
    std::map<std::uint32_t, double> gpu_only;
    for (const auto& v : app.versions) {
      version_credit_input in;
      in.id = v.id;
      in.gpu = v.resource != static_cast<std::uint8_t>(resource_type::cpu);
      if (auto i = by_id.find(v.id); i != by_id.end())
        in.pfc = version_pfc(*i->second, state.credit);
      inputs.push_back(in);
      if (auto f = cross_project.scales.find(plan_class_key(v.plan_class, v.resource));
          f != cross_project.scales.end() && in.gpu)
        gpu_only[v.id] = f->second;
    }
    auto norm = normalize_versions(inputs, state.credit, gpu_only);
    ev::credit_normalized e;
    e.app = app.id;
    e.min_avg_pfc = norm.min_avg_pfc.value_or(0);
    bool changed = e.min_avg_pfc != min_avg_pfc_of(state, app.id).value_or(0);
    for (const auto& in : inputs) {
      auto prev = state.version_credit.find(in.id);
      double scale = prev != state.version_credit.end() ? prev->second.scale : 1.0;
      if (auto sc = norm.scales.find(in.id); sc != norm.scales.end())
        scale = sc->second;
      version_scale vs{in.id, in.pfc, scale};
      if (prev == state.version_credit.end() || !(prev->second == vs))
        changed = true;
      e.versions.push_back(vs);
    }
    if (changed && in_use(inputs))
      emit(out, std::move(e), now);
  }
  return out;
}

credit_export project_logic::export_credit(const std::map<std::uint32_t, app_version_state>& stats,
                                           time_us now) const {
  credit_export out;
  out.project = state.name;
  for (const auto& app : state.apps) {
    bool cpu = false, gpu = false;
    for (const auto& v : app.versions)
      (v.resource == static_cast<std::uint8_t>(resource_type::cpu) ? cpu : gpu) = true;
    if (auto m = min_avg_pfc_of(state, app.id))
      out.min_avg_pfc[app.name] = *m;
    for (const auto& v : app.versions) {
      credit_export_rec r;
      r.project = state.name;
      r.app = app.name;
      r.platform = v.platform;
      r.plan_class = v.plan_class;
      r.resource = v.resource;
      r.app_has_cpu_and_gpu = cpu && gpu;
      if (auto i = stats.find(v.id); i != stats.end())
        r.expavg_credit = i->second.credit.expavg_at(now, state.credit.credit_half_life);
      if (auto i = state.version_credit.find(v.id); i != state.version_credit.end())
        r.scale = i->second.scale;
      out.versions.push_back(std::move(r));
    }
  }
  for (const auto& [source, records] : state.credit_imports)
    out.imported.insert(out.imported.end(), records.begin(), records.end());
  return out;
}

caf::expected<event> project_logic::import_credit(ev::credit_imported import, time_us now) {
  if (import.source.empty())
    return caf::make_error(ec::invalid_argument, "an import needs a source name");
  for (std::size_t i = 0; i < import.records.size(); ++i) {
    const auto& r = import.records[i];
    auto where = "record " + std::to_string(i) + ": ";
    if (r.app.empty())
      return caf::make_error(ec::invalid_argument, where + "app is empty");
    if (!std::isfinite(r.scale) || !(r.scale > 0))
      return caf::make_error(ec::invalid_argument, where + "scale must be a positive number");
    if (!std::isfinite(r.expavg_credit) || r.expavg_credit < 0)
      return caf::make_error(ec::invalid_argument,
                             where + "expavg_credit must be a non-negative number");
    if (r.resource >= n_resource_types)
      return caf::make_error(ec::invalid_argument, where + "unknown resource type");
  }
  auto e = make(std::move(import), now);
  apply(state, e);
  return e;
}

std::optional<double> project_logic::upload_limit(std::string_view name, id_type host) const {
  // Output names are "<result name>_<i>".
  auto split = split_indexed_name(name);
  if (!split)
    return std::nullopt;
  auto [result_name, index] = *split;
  auto ref = state.parse_result_name(result_name);
  if (!ref)
    return std::nullopt;
  auto r = state.result(*ref);
  auto wu = state.workunit(ref->wu);
  auto app = wu ? state.app(wu->app) : nullptr;
  if (r == nullptr || app == nullptr || r->state != result_state::in_progress
      || (host != 0 && r->host != host) || index >= app->output_names.size())
    return std::nullopt;
  if (wu->sequence && wu->sequence->kind == seq_element_kind::heartbeat)
    return std::nullopt; // heartbeats upload nothing
  return app->max_output_nbytes;
}

wu_files
project_logic::files_of(id_type wu_id, double delete_after_seconds, double quiet_seconds) const {
  wu_files out;
  out.project = state.name;
  out.wu = wu_id;
  out.delete_after_seconds = delete_after_seconds;
  out.input_quiet_seconds = quiet_seconds;
  auto wu = state.workunit(wu_id);
  if (wu == nullptr)
    return out;
  out.wu_name = wu->name;
  out.assimilated = wu->state == wu_state::assimilated;
  auto app = state.app(wu->app);
  auto n_out = app ? app->output_names.size() : 0;
  if (wu->sequence && wu->sequence->kind == seq_element_kind::heartbeat)
    n_out = 0;
  for (std::uint32_t i = 0; i < wu->results.size(); ++i) {
    auto rname = state.result_name({wu_id, i});
    for (std::size_t k = 0; k < n_out; ++k) {
      auto file = rname + "_" + std::to_string(k);
      out.outputs.push_back(file);
      if (out.assimilated && wu->canonical && *wu->canonical == i)
        out.canonical_outputs.emplace_back(file, app->output_names[k]);
    }
  }
  const seq_entry* seq = nullptr;
  if (wu->sequence)
    if (auto i = state.sequences.find(wu->sequence->seq); i != state.sequences.end())
      seq = &i->second;
  for (const auto& in : wu->params->inputs)
    if (auto r = state.input_refs.find(in.name); r != state.input_refs.end() && r->second <= 1) {
      // A restart point's state file (not one of the sequence's own inputs) is staged by the
      // assimilator only: no quiet period.
      bool restart_input = seq != nullptr
                           && std::none_of(seq->params.inputs.begin(), seq->params.inputs.end(),
                                           [&](const file_rec& f) { return f.name == in.name; });
      (restart_input ? out.staged : out.inputs).push_back(in.name);
    }
  if (wu->sequence && !wu->sequence->staged.empty()) {
    // A full state upload of a sequence: staged as inputs and kept while it may be the
    // restart point; once released, deleted unless something else uses the same content.
    out.keep = wu->sequence->released == 0;
    if (out.keep && out.assimilated && wu->canonical && app && *wu->canonical < wu->results.size())
      for (auto& f : state_files_of(wu->results[*wu->canonical].report->outputs,
                                    state.result_name({wu_id, *wu->canonical}), app->output_names))
        out.state_files.emplace_back(f.output, f.staged);
    if (!out.keep)
      for (const auto& name : wu->sequence->staged)
        if (!state.state_file_in_use(*wu, name)
            && std::find(out.inputs.begin(), out.inputs.end(), name) == out.inputs.end()
            && std::find(out.staged.begin(), out.staged.end(), name) == out.staged.end())
          out.staged.push_back(name);
  }
  return out;
}

std::vector<id_type> project_logic::released_by(const event& e) const {
  std::vector<id_type> out;
  id_type seq = 0;
  if (auto saved = std::get_if<ev::sequence_restart_saved>(&e.data))
    seq = saved->seq;
  else if (auto gone = std::get_if<ev::sequence_deassigned>(&e.data))
    seq = gone->seq;
  else if (auto ended = std::get_if<ev::sequence_ended>(&e.data))
    seq = ended->seq;
  if (seq == 0)
    return out;
  for (std::uint32_t n = 0; n < max_sequence_wus; ++n) {
    auto wu = state.workunit(sequence_wu_id(seq, n));
    if (wu == nullptr)
      break;
    if (wu->sequence && !wu->sequence->staged.empty() && !wu->files_deleted
        && wu->sequence->released == std::max<time_us>(e.time, 1))
      out.push_back(wu->id);
  }
  return out;
}

std::vector<event>
project_logic::files_deleted(id_type wu, std::vector<std::string> inputs, time_us now) {
  std::vector<event> out;
  auto w = state.workunit(wu);
  if (w == nullptr || w->files_deleted)
    return out;
  emit(out, ev::workunit_files_deleted{wu, std::move(inputs)}, now);
  return out;
}

std::map<id_type, std::vector<std::string>> project_logic::overdue(time_us now) {
  std::map<id_type, std::vector<std::string>> out;
  while (!state.deadlines.empty() && state.deadlines.top().first <= now) {
    auto [deadline, ref] = state.deadlines.top();
    state.deadlines.pop();
    auto r = state.result(ref);
    if (r == nullptr || r->state != result_state::in_progress || r->deadline != deadline)
      continue;
    out[r->host].push_back(state.result_name(ref));
  }
  return out;
}

project_summary summarize(const project_state& ps) {
  project_summary s;
  s.name = ps.name;
  s.long_name = ps.long_name;
  s.users = ps.users.size();
  s.hosts = ps.hosts.size();
  s.workunits = ps.workunits.size();
  s.counters = ps.counters;
  s.active_workunits = ps.active_workunits; // kept by apply: not yet assimilated or failed
  std::map<std::uint32_t, std::size_t> unsent;
  for (const auto& [id, wu] : ps.workunits) {
    for (const auto& r : wu.results) {
      if (r.state == result_state::in_progress)
        ++s.results_in_progress;
      else if (r.state == result_state::unsent)
        ++unsent[wu.app];
    }
  }
  for (const auto& a : ps.apps)
    s.apps.push_back(app_summary{a.name, a.versions.size(), unsent[a.id]});
  s.teams = ps.teams;
  return s;
}

// -- the actor ----------------------------------------------------------------

namespace {

struct project_actor_state {
  project_logic logic;
  config::project_config config;
  log_actor log;
  clock_ptr clk;
  assimilator_actor assimilator;
  std::unordered_map<id_type, host_actor> live_hosts;
  std::unordered_map<id_type, host_state> dormant_hosts;
  std::map<id_type, work_sequence_actor> sequences;
  /// Released state uploads whose grace period is over but whose files were still in use
  /// (by an element that restarted from them); looked at again as workunit files go.
  std::set<id_type> release_due;
  std::map<std::uint32_t, app_version_actor> versions;
  plan_class_scales cross_project;                       ///< From the aggregator (not durable).
  std::map<std::uint32_t, app_version_state> last_stats; ///< Of the last normalization.
  static inline const char* name = "project";
};

using project_ptr = project_actor::stateful_pointer<project_actor_state>;

/// The kinds of events decided by host actors that the project learns from the log.
constexpr std::uint16_t kinds_from_log[] = {ev::result_reported::kind, ev::result_timed_out::kind};

bool learned_from_log(const event& e) {
  auto k = kind_of(e.data);
  return std::find(std::begin(kinds_from_log), std::end(kinds_from_log), k)
         != std::end(kinds_from_log);
}

/// Hands the events of sequence workunits (dispatches, reports, timeouts, validations) to
/// their sequences, in the order the project applied them.
void forward_to_sequences(project_ptr self, const std::vector<event>& events) {
  std::map<id_type, std::vector<event>> by_seq;
  for (const auto& e : events) {
    auto [kind, id] = entity_of(e.data);
    if (kind != entity_kind::workunit)
      continue;
    if (auto seq = sequence_of_wu(id); seq != 0)
      by_seq[seq].push_back(e);
  }
  for (auto& [seq, xs] : by_seq)
    if (auto i = self->state.sequences.find(seq); i != self->state.sequences.end())
      self->send(i->second, atom::deliver_v,
                 event_batch_ptr{std::make_shared<std::vector<event>>(std::move(xs))});
}

void append(project_ptr self, std::vector<event> events) {
  if (events.empty())
    return;
  forward_to_sequences(self, events);
  self->send(self->state.log, atom::append_v,
             event_batch_ptr{std::make_shared<std::vector<event>>(std::move(events))});
}

work_sequence_actor spawn_sequence(project_ptr self, sequence_state st) {
  auto& ps = self->state;
  auto id = st.id;
  std::vector<std::string> output_names;
  if (auto app = ps.logic.state.app(st.app))
    output_names = app->output_names;
  work_sequence_init init{std::move(st),
                          ps.log,
                          project_actor{self},
                          ps.clk,
                          ps.logic.state.index,
                          std::move(output_names),
                          ps.config.sequence_check_interval,
                          static_cast<std::uint32_t>(ps.config.sequence_slow_replica_lag)};
  auto a = spawn_work_sequence(self->system(), std::move(init));
  // Sequence actors end with their project, like host actors.
  self->link_to(a);
  ps.sequences[id] = a;
  return a;
}

host_actor host_for(project_ptr self, id_type id, host_state initial) {
  auto& st = self->state;
  if (auto i = st.live_hosts.find(id); i != st.live_hosts.end())
    return i->second;
  if (auto d = st.dormant_hosts.find(id); d != st.dormant_hosts.end()) {
    initial = std::move(d->second);
    st.dormant_hosts.erase(d);
  }
  host_init init{std::move(initial),
                 st.log,
                 project_actor{self},
                 st.clk,
                 st.logic.state.index,
                 st.logic.state.credit,
                 autoflops_by_version(st.logic.state.apps)};
  auto h = spawn_host(self->system(), std::move(init));
  // Host actors end with their project (ordered shutdown; a failing host fails the project).
  self->link_to(h);
  st.live_hosts.emplace(id, h);
  return h;
}

void run_transitions(project_ptr self, const std::set<id_type>& dirty);
void hand_over_files(project_ptr self, id_type wu, double delay);

/// Arms the end of the grace period of a sequence element's released state files.
void schedule_release(project_ptr self, id_type wu, double delay) {
  auto addr = self->address();
  self->state.clk->schedule(seconds_to_us(std::max(delay, 0.0)), [addr, wu] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::cleanup_v, wu);
  });
}

/// The grace period of a released state upload is over: its files go unless the same
/// content is still in use, in which case it waits for the files that use it to go.
void release_files(project_ptr self, id_type wu) {
  auto& st = self->state;
  auto w = st.logic.state.workunit(wu);
  if (w == nullptr || w->files_deleted || !w->sequence || w->sequence->released == 0)
    return;
  for (const auto& name : w->sequence->staged)
    if (st.logic.state.state_file_in_use(*w, name)) {
      st.release_due.insert(wu);
      return;
    }
  st.release_due.erase(wu);
  hand_over_files(self, wu, 0);
}

/// Applies events a sequence decided (and appended): the project's workunits and directory,
/// the hosts they take results from, and the transitions they allow.
void absorb_sequence_events(project_ptr self, const std::vector<event>& events) {
  if (events.empty())
    return;
  auto& st = self->state;
  auto dirty = st.logic.apply_sequence_events(events);
  for (const auto& e : events) {
    for (auto wu : st.logic.released_by(e))
      schedule_release(self, wu, st.config.file_grace_period);
    // Elements a dead branch or the end cancelled are finished: their files go too.
    std::vector<id_type> retired;
    if (auto gone = std::get_if<ev::sequence_deassigned>(&e.data))
      retired = gone->dead;
    else if (auto ended = std::get_if<ev::sequence_ended>(&e.data))
      retired = ended->cancelled;
    for (auto id : retired)
      if (auto w = st.logic.state.workunit(id);
          w && w->state == wu_state::failed && !w->files_deleted && w->finished == e.time)
        hand_over_files(self, id, st.config.file_grace_period);
  }
  for (const auto& e : events)
    for (auto h : hosts_of_sequence_event(e.data)) {
      if (auto i = st.live_hosts.find(h); i != st.live_hosts.end())
        self->send(i->second, atom::deliver_v,
                   event_batch_ptr{std::make_shared<std::vector<event>>(1, e)});
      else if (auto d = st.dormant_hosts.find(h); d != st.dormant_hosts.end())
        apply(d->second, e, {}, st.logic.state.credit);
    }
  run_transitions(self, dirty);
}

/// Hands a finished workunit's files to the assimilator (copy now, delete after the grace).
void hand_over_files(project_ptr self, id_type wu, double delay) {
  auto& st = self->state;
  if (!st.assimilator)
    return;
  auto files = std::make_shared<wu_files>(
    st.logic.files_of(wu, std::max(delay, 0.0), st.config.file_grace_period));
  auto w = st.logic.state.workunit(wu);
  if (w && w->sequence && !w->sequence->staged.empty() && !files->keep && delay > 0) {
    // Released state files: what to delete is decided when the grace period ends (another
    // element may keep the same content by then).
    files->keep = true;
    schedule_release(self, wu, delay);
  }
  self->send(st.assimilator, atom::assimilate_v, wu_files_ptr{std::move(files)});
}

/// True when transition() has nothing to decide for `wu`: a plain active workunit without a
/// canonical result, none of whose results is over, with at least a quorum of them out (so
/// no errors, no successes to validate, no replacement needed).
bool only_waiting(const workunit_rec& wu) {
  if (wu.state != wu_state::active || wu.canonical || wu.sequence)
    return false;
  if (wu.params->max_error_results < 0
      || static_cast<std::int64_t>(wu.results.size()) < wu.params->min_quorum)
    return false;
  for (const auto& r : wu.results)
    if (r.state == result_state::over)
      return false;
  return true;
}

void run_transitions(project_ptr self, const std::set<id_type>& dirty) {
  std::vector<event> events;
  auto now = self->state.clk->now();
  for (auto id : dirty) {
    auto more = self->state.logic.transition(id, now);
    events.insert(events.end(), std::make_move_iterator(more.begin()),
                  std::make_move_iterator(more.end()));
  }
  std::vector<id_type> finished;
  for (const auto& e : events) {
    if (auto a = std::get_if<ev::workunit_assimilated>(&e.data))
      finished.push_back(a->wu);
    else if (auto f = std::get_if<ev::workunit_failed>(&e.data))
      finished.push_back(f->wu);
  }
  std::map<id_type, std::vector<validation_notice>> notices;
  for (const auto& e : events)
    if (std::holds_alternative<ev::workunit_validated>(e.data))
      for (auto& [host, list] : self->state.logic.notices(e))
        notices[host].insert(notices[host].end(), list.begin(), list.end());
  append(self, std::move(events));
  // Hosts learn the verdicts after the validation is in the log; each records its own
  // statistics update.
  for (auto& [host, list] : notices) {
    if (!self->state.logic.state.hosts.count(host))
      continue;
    auto h = host_for(self, host, host_state{});
    self->send(h, atom::validated_v,
               validation_notices_ptr{
                 std::make_shared<std::vector<validation_notice>>(std::move(list))});
  }
  for (auto wu : finished)
    hand_over_files(self, wu, self->state.config.file_grace_period);
}

/// Arms the next cross-version normalization on the project's clock.
void schedule_normalization(project_ptr self) {
  auto period = seconds_to_us(std::max(self->state.logic.state.credit.normalization_interval, 1.0));
  auto addr = self->address();
  self->state.clk->schedule(period, [addr] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::normalize_v);
  });
}

void finish_normalization(project_ptr self, std::vector<app_version_state> stats) {
  auto& st = self->state;
  std::sort(stats.begin(), stats.end(), [](auto& a, auto& b) { return a.id < b.id; });
  st.last_stats.clear();
  for (const auto& s : stats)
    st.last_stats[s.id] = s;
  append(self, st.logic.normalize(stats, st.cross_project, st.clk->now()));
}

/// Gathers every app version's statistics, then normalizes.
void run_normalization(project_ptr self) {
  auto& st = self->state;
  if (st.versions.empty())
    return;
  auto pending = std::make_shared<std::size_t>(st.versions.size());
  auto gathered = std::make_shared<std::vector<app_version_state>>();
  for (const auto& [id, av] : st.versions) {
    self->request(av, std::chrono::seconds(30), atom::state_v)
      .then(
        [self, pending, gathered](const app_version_state_ptr& s) {
          gathered->push_back(*s);
          if (--*pending == 0)
            finish_normalization(self, std::move(*gathered));
        },
        [self, pending, gathered, id = id](caf::error& err) {
          spdlog::warn("normalization: app version {} did not answer: {}", id, caf::to_string(err));
          if (--*pending == 0)
            finish_normalization(self, std::move(*gathered));
        });
  }
}

/// Arms the next deadline sweep on the project's clock (virtual in tests and the emulator).
void schedule_tick(project_ptr self) {
  auto period = seconds_to_us(std::max(self->state.config.deadline_check_interval, 0.01));
  auto addr = self->address();
  self->state.clk->schedule(period, [addr] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::tick_v);
  });
}

/// Completes a job request: applies what the sequences decided, dispatches the elements
/// they picked, then fills the rest of the request with ordinary work.
void finish_jobs(project_ptr self, const job_request& req, job_grant& grant,
                 const std::vector<seq_answer_ptr>& answers) {
  auto& st = self->state;
  auto now = st.clk->now();
  std::vector<event> decided;
  for (const auto& a : answers)
    decided.insert(decided.end(), a->events.begin(), a->events.end());
  absorb_sequence_events(self, decided);
  std::vector<event> events;
  double seq_secs = 0;
  // One call for every sequence's elements, so that the (host, version) daily quota holds
  // across them.
  std::vector<id_type> send;
  for (const auto& a : answers)
    send.insert(send.end(), a->send.begin(), a->send.end());
  std::map<std::uint32_t, int> seq_sent;  // per app version
  std::map<std::uint32_t, int> seq_quota; // its initial daily quota
  for (auto& j : st.logic.dispatch_sequence(req, send, now, events)) {
    seq_secs += j.runtime_estimate;
    ++seq_sent[j.dispatched.version.app_version_id];
    seq_quota[j.dispatched.version.app_version_id] = j.dispatched.jobs_per_day;
    grant.jobs.push_back(std::move(j));
  }
  if (req.send_work) {
    auto rest = req;
    if (!rest.requests.empty())
      rest.requests[0].req_secs = std::max(0.0, rest.requests[0].req_secs - seq_secs);
    // Elements sent now count against the day's quota of ordinary jobs too (also when the
    // host had no record of the version yet: then against the initial quota).
    for (auto& [vid, n] : seq_sent) {
      auto& hint = rest.hints[vid];
      int left = hint.jobs_left >= 0 ? hint.jobs_left : seq_quota[vid];
      if (left > 0 || hint.jobs_left >= 0)
        hint.jobs_left = std::max(0, left - n);
    }
    auto jobs = st.logic.select_jobs(rest, now, events);
    for (auto& j : jobs)
      grant.jobs.push_back(std::move(j));
  }
  if (!grant.jobs.empty() || !req.unit_versions.empty()) {
    std::set<std::uint32_t> sent;
    for (const auto& j : grant.jobs)
      sent.insert(j.app);
    grant.app_units = st.logic.app_units_infos(sent);
  }
  append(self, std::move(events));
}

/// Selects jobs for a host's request (asking the work sequences involved first) and calls
/// `then` with the grant once its dispatch events are appended: at once, or when the
/// sequences have answered.
void grant_jobs(project_ptr self, const job_request_ptr& req,
                std::function<void(const job_grant_ptr&)> then) {
  auto& st = self->state;
  auto plan = st.logic.plan_sequences(*req,
                                      static_cast<std::uint32_t>(st.config.sequence_high_water),
                                      static_cast<std::uint32_t>(st.config.sequences_per_host));
  auto grant = std::make_shared<job_grant>();
  grant->sequences_revoked = plan.revoked;
  grant->aborts = st.logic.sequence_aborts(*req);
  for (const auto& name : plan.revoked)
    grant->messages.push_back(
      {"Work sequence " + name + " is no longer assigned to this host.", false});
  if (plan.queries.empty()) {
    finish_jobs(self, *req, *grant, {});
    then(job_grant_ptr{std::move(grant)});
    return;
  }
  // Ask every sequence involved, then dispatch what they picked and fill the rest of the
  // request with ordinary work.
  auto answers = std::make_shared<std::vector<seq_answer_ptr>>();
  auto pending = std::make_shared<std::size_t>(plan.queries.size());
  auto done = [self, req, grant, answers, pending, then = std::move(then)]() mutable {
    if (--*pending > 0)
      return;
    finish_jobs(self, *req, *grant, *answers);
    then(job_grant_ptr{grant});
  };
  for (auto& [id, q] : plan.queries) {
    auto it = st.sequences.find(id);
    if (it == st.sequences.end()) {
      done();
      continue;
    }
    self
      ->request(it->second, std::chrono::seconds(30), atom::rpc_v,
                seq_query_ptr{std::make_shared<seq_query>(q)})
      .then(
        [answers, done](const seq_answer_ptr& a) mutable {
          answers->push_back(a);
          done();
        },
        [id = id, done](caf::error& err) mutable {
          spdlog::error("sequence {} did not answer: {}", id, describe(err));
          done();
        });
  }
}

} // namespace

/// Authenticates a scheduler RPC and finds (or registers) its host: a refusal to send back,
/// or null with `host` and `ctx` set for the host actor.
sched_reply_ptr
admit_rpc(project_ptr self, const sched_request& req, host_actor& host, rpc_context_ptr& ctx_out) {
  auto& st = self->state;
  auto& ps = st.logic.state;
  auto delay = st.config.request_delay;
  auto u = ps.user_by_auth.find(req.authenticator);
  if (u == ps.user_by_auth.end()) {
    spdlog::info("scheduler RPC with unknown account key refused");
    return std::make_shared<const sched_reply>(
      sched_reply::error("Unknown account key. Check the key you attached with.",
                         std::max(delay, 3600.0)));
  }
  auto ctx = std::make_shared<rpc_context>();
  ctx->user = ps.users.at(u->second);
  ctx->project_name = ps.long_name;
  ctx->request_delay = delay;
  ctx->next_rpc_delay = st.config.next_rpc_delay;
  ctx->credit_half_life = ps.credit.credit_half_life;
  auto h = ps.hosts.find(req.hostid);
  host_state initial;
  if (req.hostid == 0 || h == ps.hosts.end() || h->second.user != u->second) {
    auto e = st.logic.register_host(u->second, host_info_from(req), st.clk->now());
    apply(initial, e, {}, ps.credit);
    ctx->host = initial.id;
    ctx->new_host = true;
    append(self, {std::move(e)});
  } else {
    ctx->host = req.hostid;
    ctx->host_credit = h->second.credit;
  }
  host = host_for(self, ctx->host, std::move(initial));
  ctx_out = std::move(ctx);
  return nullptr;
}

/// Takes over the recovered state, subscribes to the log, moves unfinished work along and
/// starts the timers.
void start_project(project_ptr self, project_init in) {
  auto& st = self->state;
  st.logic.state = std::move(in.state);
  st.logic.state.index = in.index;
  st.config = std::move(in.config);
  st.log = in.log;
  st.clk = in.clk;
  st.assimilator = in.assimilator;
  st.dormant_hosts = std::move(in.hosts);
  st.versions = std::move(in.versions);
  for (auto& [id, seq] : in.sequences)
    spawn_sequence(self, std::move(seq));
  // Learn reports and timeouts (decided by host actors) from the log.
  self->send(st.log, atom::subscribe_v,
             std::vector<std::uint16_t>{std::begin(kinds_from_log), std::end(kinds_from_log)},
             subscriber_actor{self});
  auto now = st.clk->now();
  append(self, st.logic.configure(st.config, now));
  // Recovery: move every unfinished workunit along (work that was decided before a crash
  // but never appended is decided again here).
  // Workunits that only wait for their results (none over yet, enough of them out) have
  // nothing to decide; at scale they are nearly all of them, so they are skipped.
  std::set<id_type> active;
  for (const auto& [id, wu] : st.logic.state.workunits)
    if ((wu.state == wu_state::active || wu.state == wu_state::validated) && !only_waiting(wu))
      active.insert(id);
  run_transitions(self, active);
  // Finished workunits whose files outlived a restart: assimilate (idempotent) and delete
  // them when their grace period ends.
  for (const auto& [id, wu] : st.logic.state.workunits)
    if ((wu.state == wu_state::assimilated || wu.state == wu_state::failed) && !wu.files_deleted) {
      // Released state files of a sequence count their grace period from their release.
      auto since = wu.sequence && wu.sequence->released ? wu.sequence->released : wu.finished;
      hand_over_files(self, id, st.config.file_grace_period - us_to_seconds(now - since));
    }
  schedule_tick(self);
  schedule_normalization(self);
}

project_actor spawn_project(caf::actor_system& sys, project_init init) {
  auto fn = [](project_ptr self, project_init in) -> project_actor::behavior_type {
    start_project(self, std::move(in));
    return {
      [self](atom::deliver, const event_batch_ptr& batch) {
        // Two sources: the log (reports and timeouts decided by host actors) and the
        // sequence actors (their own decisions, e.g. a relocation).
        std::set<id_type> dirty;
        std::vector<event> from_log, from_sequences;
        for (const auto& e : *batch) {
          if (e.project != self->state.logic.state.index)
            continue;
          if (entity_of(e.data).first == entity_kind::sequence)
            from_sequences.push_back(e);
          else
            from_log.push_back(e);
        }
        absorb_sequence_events(self, from_sequences);
        for (const auto& e : from_log) {
          self->state.logic.apply_delivered(e);
          if (auto r = result_of(e.data))
            dirty.insert(r->wu);
        }
        forward_to_sequences(self, from_log);
        run_transitions(self, dirty);
      },
      [self](atom::rpc, const sched_request_ptr& req) -> caf::result<sched_reply_ptr> {
        host_actor host;
        rpc_context_ptr ctx;
        if (auto refused = admit_rpc(self, *req, host, ctx))
          return refused;
        return self->delegate(host, atom::rpc_v, std::move(ctx), req);
      },
      [self](atom::rpc, const sched_request_ptr& req, const rpc_sink_ptr& sink) {
        host_actor host;
        rpc_context_ptr ctx;
        if (auto refused = admit_rpc(self, *req, host, ctx)) {
          // Nothing of a refusal is durable: hand it over at once.
          if (auto then = sink->ready(refused))
            then();
          return;
        }
        self->send(host, atom::rpc_v, std::move(ctx), req, sink);
      },
      [self](atom::get_jobs, const job_request_ptr& req) -> caf::result<job_grant_ptr> {
        auto rp = self->make_response_promise<job_grant_ptr>();
        grant_jobs(self, req, [rp](const job_grant_ptr& grant) mutable { rp.deliver(grant); });
        return rp;
      },
      [self](atom::get_jobs, const job_request_ptr& req, const rpc_sink_ptr& sink) {
        auto& st = self->state;
        // The host's events of this RPC (its reports): in the log before the dispatches, and
        // applied here as the log would have delivered them (the log delivers nothing back
        // to the actor that appended it).
        if (req->events && !req->events->empty()) {
          std::set<id_type> dirty;
          for (const auto& e : *req->events)
            if (learned_from_log(e)) {
              st.logic.apply_delivered(e);
              if (auto r = result_of(e.data))
                dirty.insert(r->wu);
            }
          append(self, std::move(*req->events));
          run_transitions(self, dirty);
        }
        grant_jobs(self, req, [self, req, sink](const job_grant_ptr& grant) {
          auto& now_st = self->state;
          add_grant(*req->reply, *grant);
          // Before any later message to the host (its next RPC comes through here too).
          if (!grant->jobs.empty())
            if (auto h = now_st.live_hosts.find(req->host); h != now_st.live_hosts.end())
              self->send(h->second, atom::deliver_v, grant);
          auto then = sink->ready(sched_reply_ptr{req->reply});
          self->send(now_st.log, atom::sync_v,
                     durable_callback_ptr{
                       std::make_shared<const std::function<void()>>(std::move(then))});
        });
      },
      [self](atom::create, const sequence_spec_ptr& spec) -> caf::result<sequence_view_ptr> {
        auto& st = self->state;
        auto e = st.logic.create_sequence(*spec, st.clk->now());
        if (!e)
          return e.error();
        sequence_state seq;
        apply(seq, *e);
        auto view = std::make_shared<sequence_view>();
        view->state = seq;
        view->app_name = spec->app;
        spawn_sequence(self, std::move(seq));
        append(self, {std::move(*e)});
        auto rp = self->make_response_promise<sequence_view_ptr>();
        self->request(st.log, caf::infinite, atom::sync_v).then([rp, view](std::uint64_t) mutable {
          rp.deliver(sequence_view_ptr{view});
        });
        return rp;
      },
      [self](atom::sequence, const std::string& key) -> caf::result<sequence_view_ptr> {
        auto& st = self->state;
        auto entry = st.logic.state.sequence(key);
        if (entry == nullptr || !st.sequences.count(entry->id))
          return caf::make_error(ec::unknown_sequence, "no sequence '" + key + "'");
        auto app = st.logic.state.app(entry->app);
        auto app_name = app ? app->name : std::string{"?"};
        auto rp = self->make_response_promise<sequence_view_ptr>();
        self->request(st.sequences.at(entry->id), std::chrono::seconds(10), atom::state_v)
          .then(
            [rp, app_name](const sequence_state_ptr& s) mutable {
              rp.deliver(
                sequence_view_ptr{std::make_shared<sequence_view>(sequence_view{*s, app_name})});
            },
            [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
      [self](atom::list, atom::sequence, std::uint64_t offset,
             std::uint64_t limit) -> caf::result<sequence_list_ptr> {
        auto& st = self->state;
        std::vector<std::pair<work_sequence_actor, std::string>> page;
        std::uint64_t i = 0;
        for (const auto& [id, entry] : st.logic.state.sequences) {
          if (i++ < offset)
            continue;
          if (page.size() >= limit)
            break;
          auto it = st.sequences.find(id);
          if (it == st.sequences.end())
            continue;
          auto app = st.logic.state.app(entry.app);
          page.emplace_back(it->second, app ? app->name : std::string{"?"});
        }
        auto out = std::make_shared<std::vector<sequence_view>>(page.size());
        if (page.empty())
          return sequence_list_ptr{out};
        auto rp = self->make_response_promise<sequence_list_ptr>();
        auto pending = std::make_shared<std::size_t>(page.size());
        for (std::size_t k = 0; k < page.size(); ++k)
          self->request(page[k].first, std::chrono::seconds(10), atom::state_v)
            .then(
              [rp, out, pending, k, name = page[k].second](const sequence_state_ptr& s) mutable {
                (*out)[k] = sequence_view{*s, name};
                if (--*pending == 0)
                  rp.deliver(sequence_list_ptr{out});
              },
              [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
      [self](atom::command, const std::string& key,
             const seq_command_ptr& cmd) -> caf::result<sequence_view_ptr> {
        auto& st = self->state;
        const auto& ps = st.logic.state;
        auto entry = ps.sequence(key);
        if (entry == nullptr || !st.sequences.count(entry->id))
          return caf::make_error(ec::unknown_sequence, "no sequence '" + key + "'");
        if (cmd->what == seq_command::op::reassign && !ps.hosts.count(cmd->to))
          return caf::make_error(ec::unknown_host, "no host " + std::to_string(cmd->to));
        auto app = ps.app(entry->app);
        auto app_name = app ? app->name : std::string{"?"};
        auto rp = self->make_response_promise<sequence_view_ptr>();
        self->request(st.sequences.at(entry->id), std::chrono::seconds(30), atom::command_v, cmd)
          .then(
            [self, rp, app_name](const seq_answer_ptr& a) mutable {
              absorb_sequence_events(self, a->events);
              auto view = std::make_shared<sequence_view>(sequence_view{*a->state, app_name});
              self->request(self->state.log, caf::infinite, atom::sync_v)
                .then([rp, view](std::uint64_t) mutable { rp.deliver(sequence_view_ptr{view}); });
            },
            [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
      [self](atom::create, const work_batch_ptr& batch) -> caf::result<work_created_ptr> {
        auto out = std::make_shared<work_created>();
        auto events = self->state.logic.create_work(*batch, self->state.clk->now(), *out);
        if (!events)
          return events.error();
        append(self, std::move(*events));
        auto rp = self->make_response_promise<work_created_ptr>();
        self->request(self->state.log, caf::infinite, atom::sync_v)
          .then([rp, out](std::uint64_t) mutable { rp.deliver(work_created_ptr{out}); });
        return rp;
      },
      [self](atom::create, const std::string& name,
             const std::string& email) -> caf::result<id_type, std::string> {
        auto auth = random_authenticator();
        auto e = self->state.logic.create_user(name, email, auth, self->state.clk->now());
        if (!e)
          return e.error();
        auto id = std::get<ev::user_created>(e->data).id;
        append(self, {std::move(*e)});
        auto rp = self->make_response_promise<id_type, std::string>();
        self->request(self->state.log, caf::infinite, atom::sync_v)
          .then([rp, id, auth](std::uint64_t) mutable { rp.deliver(id, auth); });
        return rp;
      },
      [self](atom::status) -> project_summary_ptr {
        return std::make_shared<project_summary>(summarize(self->state.logic.state));
      },
      [self](atom::workunit, const std::string& key) -> caf::result<workunit_view_ptr> {
        const auto& ps = self->state.logic.state;
        const workunit_rec* wu = ps.find_workunit(key);
        if (wu != nullptr)
          ;
        else if (!key.empty() && std::all_of(key.begin(), key.end(), ::isdigit))
          wu = ps.workunit(std::stoull(key));
        if (wu == nullptr)
          return caf::make_error(ec::unknown_workunit, "no workunit '" + key + "'");
        auto v = std::make_shared<workunit_view>();
        v->wu = *wu;
        auto app = ps.app(wu->app);
        v->app_name = app ? app->name : "?";
        for (std::uint32_t i = 0; i < wu->results.size(); ++i)
          v->result_names.push_back(ps.result_name({wu->id, i}));
        return workunit_view_ptr{std::move(v)};
      },
      [self](atom::list, atom::workunit, std::uint64_t offset,
             std::uint64_t limit) -> workunit_list_ptr {
        const auto& ps = self->state.logic.state;
        std::vector<id_type> ids;
        ids.reserve(ps.workunits.size());
        for (const auto& [id, wu] : ps.workunits)
          ids.push_back(id);
        std::sort(ids.begin(), ids.end());
        auto out = std::make_shared<std::vector<workunit_view>>();
        for (std::size_t i = offset; i < ids.size() && out->size() < limit; ++i) {
          const auto& wu = ps.workunits.at(ids[i]);
          workunit_view v;
          v.wu = wu;
          auto app = ps.app(wu.app);
          v.app_name = app ? app->name : "?";
          for (std::uint32_t j = 0; j < wu.results.size(); ++j)
            v.result_names.push_back(ps.result_name({wu.id, j}));
          out->push_back(std::move(v));
        }
        return out;
      },
      [self](atom::host, id_type id) -> caf::result<host_view_ptr> {
        const auto& ps = self->state.logic.state;
        auto h = ps.hosts.find(id);
        if (h == ps.hosts.end())
          return caf::make_error(ec::unknown_host, "no host " + std::to_string(id));
        auto reg = h->second;
        if (auto d = self->state.dormant_hosts.find(id); d != self->state.dormant_hosts.end()) {
          auto v = std::make_shared<host_view>();
          v->reg = reg;
          v->state = d->second;
          return host_view_ptr{std::move(v)};
        }
        auto it = self->state.live_hosts.find(id);
        if (it == self->state.live_hosts.end())
          return caf::make_error(ec::unknown_host, "host " + std::to_string(id) + " has no state");
        auto rp = self->make_response_promise<host_view_ptr>();
        self->request(it->second, std::chrono::seconds(10), atom::state_v)
          .then(
            [rp, reg](const host_state_ptr& hs) mutable {
              auto v = std::make_shared<host_view>();
              v->reg = reg;
              v->state = *hs;
              rp.deliver(host_view_ptr{std::move(v)});
            },
            [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
        return rp;
      },
      [self](atom::list, atom::host, std::uint64_t offset, std::uint64_t limit) -> host_list_ptr {
        const auto& ps = self->state.logic.state;
        auto out = std::make_shared<std::vector<host_view>>();
        std::uint64_t i = 0;
        for (const auto& [id, reg] : ps.hosts) {
          if (i++ < offset)
            continue;
          if (out->size() >= limit)
            break;
          out->push_back(host_view{reg, std::nullopt});
        }
        return out;
      },
      [self](atom::upload, const std::string& name, id_type host) -> caf::result<double> {
        if (auto limit = self->state.logic.upload_limit(name, host))
          return *limit;
        return caf::make_error(ec::unknown_workunit,
                               "'" + name + "' is no output of a result in progress on host "
                                 + std::to_string(host));
      },
      [self](atom::cleanup, id_type wu) { release_files(self, wu); },
      [self](atom::cleanup, id_type wu, std::vector<std::string> inputs) {
        append(self,
               self->state.logic.files_deleted(wu, std::move(inputs), self->state.clk->now()));
        // State uploads waiting for these files to go.
        auto due = std::exchange(self->state.release_due, {});
        for (auto x : due)
          release_files(self, x);
      },
      [self](atom::list, atom::app) -> app_list_ptr {
        return std::make_shared<std::vector<app_rec>>(self->state.logic.state.apps);
      },
      [self](atom::list, atom::user) -> user_list_ptr {
        auto out = std::make_shared<std::vector<user_rec>>();
        for (const auto& [id, u] : self->state.logic.state.users)
          out->push_back(u);
        return out;
      },
      [self](atom::tick) {
        auto overdue = self->state.logic.overdue(self->state.clk->now());
        for (auto& [host, names] : overdue) {
          auto h = host_for(self, host, host_state{});
          self->send(h, atom::timeout_v,
                     result_names_ptr{
                       std::make_shared<std::vector<std::string>>(std::move(names))});
        }
        schedule_tick(self);
      },
      [self](atom::normalize) {
        run_normalization(self);
        schedule_normalization(self);
      },
      [self](atom::credit) -> credit_export_ptr {
        auto& st = self->state;
        return std::make_shared<credit_export>(
          st.logic.export_credit(st.last_stats, st.clk->now()));
      },
      [self](atom::credit, const plan_class_scales_ptr& table) {
        self->state.cross_project = *table;
      },
      [self](atom::credit, const credit_import_ptr& import) -> caf::result<std::uint64_t> {
        auto e = self->state.logic.import_credit(*import, self->state.clk->now());
        if (!e)
          return e.error();
        std::uint64_t n = import->records.size();
        append(self, {std::move(*e)});
        auto rp = self->make_response_promise<std::uint64_t>();
        self->request(self->state.log, caf::infinite, atom::sync_v)
          .then([rp, n](std::uint64_t) mutable { rp.deliver(n); });
        return rp;
      },
    };
  };
  return sys.spawn(fn, std::move(init));
}

} // namespace cobble
