#include "actors/autoflops.hpp"

#include <algorithm>
#include <cmath>

namespace cobble {

void running_stats::add(double x) {
  if (!std::isfinite(x))
    return;
  ++n;
  double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

double running_stats::variance() const {
  return n < 2 ? 0.0 : std::max(m2, 0.0) / static_cast<double>(n - 1);
}

double running_stats::stdev() const {
  return std::sqrt(variance());
}

void spread_stats::add(double x, std::uint64_t straight, double alpha) {
  if (!std::isfinite(x))
    return;
  double d = x - mean;
  if (n < straight || n == 0) {
    ++n;
    mean += d / static_cast<double>(n);
    var += (d * (x - mean) - var) / static_cast<double>(n);
  } else {
    ++n;
    alpha = std::clamp(alpha, 0.0, 1.0);
    mean += alpha * d;
    var = (1 - alpha) * (var + alpha * d * d);
  }
}

double spread_stats::variance() const {
  if (n < 2)
    return 0;
  return std::max(var, 0.0) * static_cast<double>(n) / static_cast<double>(n - 1);
}

double spread_stats::stdev() const {
  return std::sqrt(variance());
}

void spau_spread::add(double sample, bool reported_units, std::uint64_t straight, double alpha) {
  if (!std::isfinite(sample) || !(sample > 0))
    return;
  if (reported_units)
    ++with_units;
  value.add(sample, straight, alpha);
  log.add(std::log(sample), straight, alpha);
}

double percentile(std::vector<double> values, double p) {
  if (values.empty())
    return 0;
  p = std::clamp(p, 0.0, 1.0);
  auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  auto k = rank == 0 ? 0 : rank - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

void add_flops_sample(flops_array& a, double value, const autoflops_settings& s) {
  if (!std::isfinite(value) || !(value > 0))
    return;
  auto n = std::max<std::uint32_t>(s.flops_samples, 1);
  a.values.push_back(value);
  if (a.values.size() < n)
    return;
  // A full array: its percentile is averaged in and the next N values make a new one, so
  // that the averaged percentiles are independent (a sliding window would average nearly
  // the same order statistic N times).
  double p = percentile(a.values, s.flops_percentile);
  if (a.updates == 0 || !(a.estimate > 0))
    a.estimate = p;
  else
    a.estimate += std::clamp(s.flops_alpha, 0.0, 1.0) * (p - a.estimate);
  ++a.updates;
  a.values.clear();
}

double combined_flops_per_au(const flops_array& cpu, const flops_array& gpu) {
  bool c = cpu.estimate > 0, g = gpu.estimate > 0;
  if (c && g)
    return std::min(cpu.estimate, gpu.estimate);
  return c ? cpu.estimate : (g ? gpu.estimate : 0.0);
}

void add_app_units(app_units_stats& st, double actual, double predicted) {
  if (!std::isfinite(actual) || !std::isfinite(predicted) || !(actual > 0) || !(predicted > 0))
    return;
  st.actual.add(actual);
  st.predicted.add(predicted);
  st.ratio.add(actual / predicted);
  st.log_ratio.add(std::log(actual / predicted));
}

double prediction_factor(const app_units_stats& st, const autoflops_settings& s, bool bound) {
  double x = bound ? s.bound_x : s.est_x;
  double scale = st.predicted.n > 0 && st.predicted.mean > 0 ? st.actual.mean / st.predicted.mean
                                                             : 1.0;
  if (!(scale > 0) || !std::isfinite(scale))
    scale = 1;
  if (st.ratio.n < std::max<std::uint32_t>(s.min_samples, 2))
    return bound ? scale * std::max(s.warmup_bound_factor, 1.0) : scale;
  if (s.log_ratio) {
    // The ratio of the means scales the prediction; the spread is that of the logarithm
    // around its own mean (multiplicative noise), added as a factor.
    return scale * std::exp(x * st.log_ratio.stdev());
  }
  return scale + x * st.ratio.stdev();
}

completion_time completion_times(double seconds_per_app_unit, double predicted_aus,
                                 const app_units_stats& st, const autoflops_settings& s) {
  completion_time t;
  double base = std::max(seconds_per_app_unit, 0.0) * std::max(predicted_aus, 0.0);
  t.estimate = base * prediction_factor(st, s, false);
  t.bound = std::max(base * prediction_factor(st, s, true), t.estimate);
  return t;
}

completion_time host_completion_times(double seconds_per_app_unit, double predicted_aus,
                                      const spau_spread& h, const autoflops_settings& s) {
  completion_time t;
  double base = std::max(seconds_per_app_unit, 0.0) * std::max(predicted_aus, 0.0);
  if (h.log.n < std::max<std::uint32_t>(s.min_samples, 2)) {
    t.estimate = base;
    t.bound = base * std::max(s.warmup_bound_factor, 1.0);
    return t;
  }
  double floor = std::max(s.host_min_spread, 0.0);
  if (s.log_ratio) {
    // The samples' mean (seconds_per_app_unit) scales; the spread of their logarithm
    // (multiplicative noise) is added as a factor, as prediction_factor does for the app.
    double sd = std::max(h.log.stdev(), floor);
    t.estimate = base * std::exp(s.est_x * sd);
    t.bound = base * std::exp(s.bound_x * sd);
  } else {
    double cv = h.value.mean > 0 ? h.value.stdev() / h.value.mean : 0.0;
    cv = std::max(cv, floor);
    t.estimate = base * (1 + s.est_x * cv);
    t.bound = base * (1 + s.bound_x * cv);
  }
  t.bound = std::max(t.bound, t.estimate);
  return t;
}

std::optional<double> raw_flops_per_au(double elapsed, double raw_flops_per_sec, double app_units) {
  double v = elapsed * raw_flops_per_sec / app_units;
  if (!std::isfinite(v) || !(v > 0) || !(app_units > 0))
    return std::nullopt;
  return v;
}

std::optional<double> propagated_flops_per_au(const std::vector<double>& mixed_app_estimates) {
  double sum = 0;
  int n = 0;
  for (double e : mixed_app_estimates)
    if (std::isfinite(e) && e > 0) {
      sum += e;
      ++n;
    }
  if (n == 0)
    return std::nullopt;
  return sum / n;
}

double unit_draw(std::uint64_t id, std::uint64_t salt) {
  // splitmix64
  std::uint64_t z = id * 0x9e3779b97f4a7c15ULL + salt + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

} // namespace cobble
