#include "actors/credit.hpp"

#include <algorithm>
#include <cmath>

namespace cobble {

void average_var::update(double sample, std::uint64_t straight, double alpha, double cap) {
  if (!std::isfinite(sample) || sample < 0)
    return;
  if (n > 0 && avg > 0 && sample > cap * avg)
    sample = cap * avg;
  if (n < straight || n == 0)
    avg += (sample - avg) / static_cast<double>(n + 1);
  else
    avg += alpha * (sample - avg);
  ++n;
}

void credit_totals::add(double credit, time_us now, double half_life) {
  if (!std::isfinite(credit) || credit <= 0)
    return;
  total += credit;
  expavg = expavg_at(now, half_life);
  // Credit per day: a grant adds what a steady rate would have added over the half-life.
  expavg += credit * std::log(2.0) * 86400.0 / half_life;
  expavg_time = now;
}

double credit_totals::expavg_at(time_us now, double half_life) const {
  if (expavg_time == 0 || now <= expavg_time)
    return expavg;
  double dt = us_to_seconds(now - expavg_time);
  return expavg * std::exp(-dt * std::log(2.0) / half_life);
}

double
job_peak_flops(double p_fpops, double avg_ncpus, double gpu_peak_flops, double coproc_count) {
  double cpu = std::max(p_fpops, 0.0) * std::max(avg_ncpus, 0.0);
  double gpu = std::max(gpu_peak_flops, 0.0) * std::max(coproc_count, 0.0);
  return cpu + gpu;
}

app_normalization
normalize_versions(const std::vector<version_credit_input>& versions, const credit_settings& s,
                   const std::map<std::uint32_t, double>& gpu_only_scales) {
  app_normalization out;
  double sum[2] = {0, 0};
  double weight[2] = {0, 0};
  int above[2] = {0, 0};
  bool has_cpu = false;
  for (const auto& v : versions) {
    has_cpu = has_cpu || !v.gpu;
    if (v.pfc.n < s.version_sample_threshold || !(v.pfc.avg > 0))
      continue;
    int c = v.gpu ? 1 : 0;
    sum[c] += v.pfc.avg * static_cast<double>(v.pfc.n);
    weight[c] += static_cast<double>(v.pfc.n);
    ++above[c];
  }
  if (!has_cpu && !gpu_only_scales.empty()) {
    // GPU-only app: the cross-project factor stands in for the missing CPU version.
    double pfc_sum = 0, pfc_n = 0;
    for (const auto& v : versions) {
      auto f = gpu_only_scales.find(v.id);
      if (f == gpu_only_scales.end())
        continue;
      out.scales[v.id] = f->second;
      if (v.pfc.n >= s.version_sample_threshold && v.pfc.avg > 0) {
        pfc_sum += f->second * v.pfc.avg * static_cast<double>(v.pfc.n);
        pfc_n += static_cast<double>(v.pfc.n);
      }
    }
    if (pfc_n > 0)
      out.min_avg_pfc = pfc_sum / pfc_n;
    return out;
  }
  std::optional<double> x;
  if (above[0] >= 1 && above[1] >= 1)
    x = std::min(sum[0] / weight[0], sum[1] / weight[1]);
  else if (above[0] >= 2 && above[1] == 0)
    x = sum[0] / weight[0];
  else if (above[1] >= 2 && above[0] == 0)
    x = sum[1] / weight[1];
  if (!x)
    return out;
  out.min_avg_pfc = *x;
  for (const auto& v : versions)
    if (v.pfc.n >= s.version_sample_threshold && v.pfc.avg > 0)
      out.scales[v.id] = *x / v.pfc.avg;
  return out;
}

double host_scale(const average_var& version_pfc, const average_var& host_pfc, bool probation,
                  const credit_settings& s) {
  double scale = 1;
  if (version_pfc.n >= s.version_sample_threshold && host_pfc.n >= s.host_sample_threshold
      && version_pfc.avg > 0 && host_pfc.avg > 0)
    scale = std::min(version_pfc.avg / host_pfc.avg, s.host_scale_cap);
  if (probation)
    scale = std::min(scale, 1.0);
  return scale;
}

credit_rec claim_credit(const replica_credit_input& in, double est, double bound,
                        std::optional<double> min_avg_pfc, const credit_settings& s) {
  credit_rec rec;
  double default_pfc = min_avg_pfc ? *min_avg_pfc * est : est;
  if (in.probation)
    rec.flags |= credit_probation;
  if (in.anonymous) {
    rec.pfc = default_pfc;
    rec.flags |= credit_anonymous | credit_default_pfc;
    rec.claimed = cobblestones(rec.pfc, s);
    return rec;
  }
  double pfc = in.elapsed * in.peak_flops;
  bool cheat = est > 0 && in.version_pfc.n >= s.version_sample_threshold && in.version_pfc.avg > 0
               && !(pfc / est <= s.cheat_factor * in.version_pfc.avg);
  if (!in.elapsed_plausible || !std::isfinite(pfc) || !(pfc > 0) || !(pfc <= bound) || !(est > 0)
      || cheat) {
    rec.pfc = default_pfc;
    rec.flags |= credit_default_pfc;
    if (cheat)
      rec.flags |= credit_one_time_cheat;
    rec.claimed = cobblestones(rec.pfc, s);
    return rec;
  }
  rec.pfc = pfc;
  rec.pfc_sample = pfc / est;
  rec.scale_v = in.version_scale > 0 ? in.version_scale : 1;
  rec.scale_h = host_scale(in.version_pfc, in.host_pfc, in.probation, s);
  rec.claimed = cobblestones(pfc * rec.scale_v * rec.scale_h, s);
  return rec;
}

void grant_credit(std::vector<credit_rec>& recs, double est, std::optional<double> min_avg_pfc,
                  const credit_settings& s) {
  if (recs.empty())
    return;
  if (recs.size() == 1) {
    recs[0].granted = recs[0].claimed;
    return;
  }
  double sum = 0;
  int n = 0;
  for (const auto& r : recs)
    if ((r.flags & (credit_anonymous | credit_probation)) == 0) {
      sum += r.claimed;
      ++n;
    }
  double granted = 0;
  bool fallback = n == 0;
  if (!fallback) {
    granted = sum / n;
  } else if (min_avg_pfc) {
    granted = cobblestones(*min_avg_pfc * est, s);
  } else {
    granted = recs[0].claimed;
    for (const auto& r : recs)
      granted = std::min(granted, r.claimed);
  }
  for (auto& r : recs) {
    r.granted = granted;
    if (fallback)
      r.flags |= credit_fallback;
  }
}

int initial_jobs_per_day(int per_instance, int instances) {
  return std::max(1, per_instance * std::max(instances, 1));
}

} // namespace cobble
