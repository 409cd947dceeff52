#include "tools/client/app_units.hpp"

#include <algorithm>
#include <cmath>

namespace cobble::client {

void seconds_per_app_unit::add(const std::string& version, double elapsed, double app_units,
                               double weight) {
  if (!(elapsed > 0) || !(app_units > 0) || !std::isfinite(elapsed) || !std::isfinite(app_units))
    return;
  double sample = elapsed / app_units;
  auto [it, fresh] = avg_.try_emplace(version, sample);
  if (!fresh) {
    double w = std::clamp(weight, 1e-6, 1.0);
    it->second += w * (sample - it->second);
  }
}

std::optional<double> seconds_per_app_unit::get(const std::string& version) const {
  auto it = avg_.find(version);
  if (it == avg_.end())
    return std::nullopt;
  return it->second;
}

} // namespace cobble::client
