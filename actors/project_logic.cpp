#include "actors/project_logic.hpp"

#include "actors/assimilator.hpp"
#include "actors/error.hpp"
#include "actors/host_logic.hpp"
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

} // namespace cobble
