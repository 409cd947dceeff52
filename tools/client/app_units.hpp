#pragma once

/// seconds_per_app_unit (000, client side): per app version, an exponential average of the
/// elapsed seconds per app unit of the jobs it completed. It replaces the duration
/// correction factor in runtime estimates and is reported to the scheduler.

#include <map>
#include <optional>
#include <string>

namespace cobble::client {

class seconds_per_app_unit {
public:
  /// A job of `version` completed in `elapsed` seconds having done `app_units` units; the
  /// first sample sets the estimate, later ones move it by `weight` (0..1] toward the sample.
  /// Samples with non-positive or non-finite values are ignored.
  void add(const std::string& version, double elapsed, double app_units, double weight);
  /// The estimate for `version`, if it has completed a job.
  std::optional<double> get(const std::string& version) const;
  /// Every version's estimate (what the client reports).
  const std::map<std::string, double>& all() const { return avg_; }

private:
  std::map<std::string, double> avg_;
};

} // namespace cobble::client
