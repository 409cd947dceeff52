#include "actors/project_logic_detail.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <map>

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
    a.one_result_per_user_per_wu = ac.one_result_per_user_per_wu;
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
      // A version added with its signed files is the admin API's: a configuration naming the
      // same platform, number and plan class does not change what clients were sent.
      if (!vit->files.empty())
        continue;
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

} // namespace cobble
