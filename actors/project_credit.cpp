#include "actors/error.hpp"
#include "actors/project_logic_detail.hpp"

#include <algorithm>
#include <cmath>

namespace cobble {

using namespace detail;

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

} // namespace cobble
