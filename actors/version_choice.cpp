#include "actors/version_choice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace cobble {

namespace {

constexpr double mebibyte = 1024.0 * 1024.0; // BOINC's MEGA in plan-class memory figures

resource_type resource_of(const std::string& gpu_type) {
  if (gpu_type == "nvidia")
    return resource_type::nvidia;
  if (gpu_type == "amd")
    return resource_type::ati;
  if (gpu_type == "intel_gpu")
    return resource_type::intel_gpu;
  return resource_type::cpu;
}

const char* device_name(resource_type t) {
  switch (t) {
    case resource_type::nvidia:
      return "an NVIDIA GPU";
    case resource_type::ati:
      return "an AMD GPU";
    case resource_type::intel_gpu:
      return "an Intel GPU";
    case resource_type::cpu:
      break;
  }
  return "CPUs";
}

/// A client version as major.minor.release (from major*10000 + minor*100 + release).
std::string client_version_text(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "."
         + std::to_string(v % 100);
}

/// A CUDA version as major.minor (from major*1000 + minor*10).
std::string cuda_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

/// Devices of type `t` the host has (capped by host_logic), and its description of them.
int device_count(const job_request& req, resource_type t) {
  for (const auto& [type, count] : req.info.coprocs)
    if (type == static_cast<std::uint8_t>(t))
      return count;
  return 0;
}

const coproc_description* description_of(const job_request& req, resource_type t) {
  for (const auto& c : req.coprocs)
    if (c.type == t)
      return &c;
  return nullptr;
}

double gpu_peak_of(const job_request& req, resource_type t) {
  for (std::size_t i = 0; i < req.info.coprocs.size(); ++i)
    if (req.info.coprocs[i].first == static_cast<std::uint8_t>(t)
        && i < req.info.coproc_peak_flops.size())
      return req.info.coproc_peak_flops[i];
  return 0;
}

/// The projected FLOPS of one job using `avg_ncpus` CPUs (CPU versions) or `gpus` GPUs.
double projected_flops(const job_request& req, resource_type t, double avg_ncpus, double gpus) {
  if (t == resource_type::cpu)
    return std::max(req.info.p_fpops, 1e6) * avg_ncpus;
  double f = gpu_peak_of(req, t) * gpus;
  return f > 0 ? f : 1e10;
}

/// Position of `platform` among the client's platforms (primary first); -1: not one of them.
/// A request without a platform (internal tests, old clients) takes every platform as its own.
int platform_rank(const job_request& req, const std::string& platform) {
  if (req.platform.empty() || platform == req.platform)
    return 0;
  for (std::size_t i = 0; i < req.alt_platforms.size(); ++i)
    if (req.alt_platforms[i] == platform)
      return static_cast<int>(i) + 1;
  return -1;
}

/// The newest non-deprecated version per (platform, plan class) of resource `t` on the
/// client's platforms: the candidates (BOINC's feeder keeps only these).
std::vector<const app_version_rec*>
candidates(const app_rec& app, const job_request& req, resource_type t) {
  std::map<std::pair<std::string, std::string>, const app_version_rec*> newest;
  for (const auto& v : app.versions) {
    if (v.resource != static_cast<std::uint8_t>(t) || v.deprecated
        || (!req.checks_files() && !v.files.empty()) || platform_rank(req, v.platform) < 0)
      continue;
    auto& slot = newest[{v.platform, v.plan_class}];
    if (slot == nullptr || v.version_num > slot->version_num)
      slot = &v;
  }
  std::vector<const app_version_rec*> out;
  out.reserve(newest.size());
  for (const auto& [key, v] : newest)
    out.push_back(v);
  return out;
}

} // namespace

resource_type plan_class_resource(const config::plan_class_config& pc) {
  return resource_of(pc.gpu_type);
}

const config::plan_class_config*
find_plan_class(const std::vector<config::plan_class_config>& classes, const std::string& name) {
  if (name.empty())
    return nullptr;
  auto it = std::find_if(classes.begin(), classes.end(), [&](auto& c) { return c.name == name; });
  return it == classes.end() ? nullptr : &*it;
}

std::string
plan_class_refusal(const config::plan_class_config& pc, const job_request& req, resource_type t) {
  auto prefix = "plan class " + pc.name + " ";
  if (pc.min_core_client_version > 0 && req.client_version < pc.min_core_client_version)
    return prefix + "needs BOINC " + client_version_text(pc.min_core_client_version) + " or later"
           + (req.client_version > 0
                ? " (this computer runs " + client_version_text(req.client_version) + ")"
                : "");
  if (resource_of(pc.gpu_type) != t)
    return prefix + "is for " + device_name(resource_of(pc.gpu_type)) + ", the version for "
           + device_name(t);
  if (t == resource_type::cpu) {
    if (pc.min_ncpus > 0 && req.info.p_ncpus < pc.min_ncpus)
      return prefix + "needs " + std::to_string(pc.min_ncpus) + " CPUs (this computer has "
             + std::to_string(req.info.p_ncpus) + ")";
    return {};
  }
  if (device_count(req, t) <= 0)
    return prefix + "needs " + device_name(t) + " (this computer reports none)";
  static const coproc_description unknown;
  const auto* d = description_of(req, t);
  const auto& dev = d == nullptr ? unknown : *d;
  if (pc.cuda && !(dev.have_cuda || dev.cuda_version > 0))
    return prefix + "needs CUDA (this computer's GPU driver reports none)";
  if (pc.opencl && !dev.have_opencl)
    return prefix + "needs OpenCL (this computer's GPU driver reports none)";
  // Figures the client did not report are not tested, as BOINC's plan classes do.
  double ram = dev.available_ram > 0 ? dev.available_ram : dev.total_ram;
  if (pc.min_gpu_ram_mb > 0 && ram > 0 && ram < pc.min_gpu_ram_mb * mebibyte)
    return prefix + "needs " + std::to_string(std::lround(pc.min_gpu_ram_mb))
           + " MB of GPU memory (this computer's GPU has "
           + std::to_string(std::lround(ram / mebibyte)) + " MB)";
  if (pc.min_driver_version > 0 && dev.driver_version > 0
      && dev.driver_version < pc.min_driver_version)
    return prefix + "needs GPU driver version " + std::to_string(pc.min_driver_version)
           + " or later (this computer has " + std::to_string(dev.driver_version) + ")";
  if (pc.cuda && pc.min_cuda_version > 0 && dev.cuda_version > 0
      && dev.cuda_version < pc.min_cuda_version)
    return prefix + "needs CUDA " + cuda_text(pc.min_cuda_version) + " or later (this computer has "
           + cuda_text(dev.cuda_version) + ")";
  return {};
}

std::optional<version_pick> fit_version(const app_version_rec& v, const job_request& req,
                                        const std::vector<config::plan_class_config>& classes) {
  auto t = static_cast<resource_type>(v.resource);
  version_pick p;
  p.version = &v;
  const auto* pc = find_plan_class(classes, v.plan_class);
  if (pc == nullptr) {
    p.avg_ncpus = v.avg_ncpus;
    p.coproc_count = t == resource_type::cpu ? 0 : v.coproc_count;
    p.flops = projected_flops(req, t, p.avg_ncpus, p.coproc_count);
    return p;
  }
  if (!plan_class_refusal(*pc, req, t).empty())
    return std::nullopt;
  if (t == resource_type::cpu) {
    int threads = pc->max_threads > 0 ? std::clamp(req.info.p_ncpus, 1, pc->max_threads) : 0;
    p.avg_ncpus = pc->avg_ncpus > 0 ? pc->avg_ncpus : threads > 0 ? threads : v.avg_ncpus;
    if (pc->nthreads_cmdline)
      p.cmdline = "--nthreads " + std::to_string(std::max(1L, std::lround(p.avg_ncpus)));
    p.flops = projected_flops(req, t, p.avg_ncpus, 0);
  } else {
    p.coproc_count = pc->ngpus > 0 ? pc->ngpus : v.coproc_count;
    p.avg_ncpus = pc->avg_ncpus > 0 ? pc->avg_ncpus : pc->cpu_frac;
    double ram_mb = pc->gpu_ram_used_mb > 0 ? pc->gpu_ram_used_mb : pc->min_gpu_ram_mb;
    p.gpu_ram = ram_mb * mebibyte;
    p.flops = projected_flops(req, t, p.avg_ncpus, p.coproc_count);
  }
  if (pc->projected_flops_scale > 0)
    p.flops *= pc->projected_flops_scale;
  return p;
}

std::optional<version_pick>
choose_app_version(const app_rec& app, const job_request& req, resource_type t,
                   const std::vector<config::plan_class_config>& classes) {
  std::optional<version_pick> best;
  auto key = [&](const version_pick& p) {
    return std::make_tuple(p.flops, -platform_rank(req, p.version->platform),
                           p.version->version_num);
  };
  for (const auto* v : candidates(app, req, t))
    if (auto p = fit_version(*v, req, classes); p && (!best || key(*p) > key(*best)))
      best = std::move(p);
  return best;
}

std::string no_version_message(const app_rec& app, const job_request& req, resource_type t,
                               const std::vector<config::plan_class_config>& classes) {
  if (req.anonymous || !req.checks_files())
    return {};
  auto name = app.user_friendly_name.empty() ? app.name : app.user_friendly_name;
  auto cands = candidates(app, req, t);
  if (cands.empty()) {
    // Silent when the app has no version for this resource anywhere: it simply does not
    // run there.
    bool elsewhere = std::any_of(app.versions.begin(), app.versions.end(), [&](auto& v) {
      return v.resource == static_cast<std::uint8_t>(t) && !v.deprecated;
    });
    if (!elsewhere)
      return {};
    auto platforms = req.platform;
    for (const auto& a : req.alt_platforms)
      platforms += ", " + a;
    return "This project has no version of " + name + " for your computer's "
           + (t == resource_type::cpu ? std::string{"CPUs"} : std::string{to_string(t)}) + " ("
           + platforms + ").";
  }
  std::string reasons;
  for (const auto* v : cands) {
    const auto* pc = find_plan_class(classes, v->plan_class);
    if (pc == nullptr)
      return {};
    auto why = plan_class_refusal(*pc, req, t);
    if (why.empty())
      return {};
    reasons += (reasons.empty() ? "" : "; ") + why;
  }
  return "No tasks of " + name + " for this computer: " + reasons + ".";
}

} // namespace cobble
