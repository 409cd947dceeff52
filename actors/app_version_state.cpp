#include "actors/state.hpp"

#include <cmath>

namespace cobble {

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
            s.pfc.update(c.pfc_sample, cs.version_average_samples, cs.version_alpha, cs.sample_cap);
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
  if (means.size() < median_min_hosts)
    return s.pfc;
  std::sort(means.begin(), means.end());
  auto mid = means.size() / 2;
  average_var out = s.pfc;
  out.avg = means.size() % 2 == 1 ? means[mid] : (means[mid - 1] + means[mid]) / 2;
  return out;
}

} // namespace cobble
