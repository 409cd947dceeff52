#pragma once

/// The credit system of the design (../shared/seeds/002, docs/credit.md): peak FLOP counts,
/// cross-version and host normalization, claimed and granted credit, recent average credit,
/// cheat prevention, per (host, app version) error rate, job quota and runtime statistics.
///
/// Everything here is pure: the project, host and app-version actors call these functions to
/// decide, and the `apply` functions (host_state.cpp, app_version_state.cpp) call them to advance
/// state from events, so the live server, recovery and `cobble log replay` compute the same numbers.

#include "actors/types.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cobble {

/// The numbers the design leaves open (docs/configuration.md, `credit:` of a project). They
/// travel in the project_configured event, so replay uses the values the server used.
struct credit_settings {
  double normalization_interval = 600;         ///< Seconds between Scale(V) recomputations.
  std::uint64_t version_average_samples = 100; ///< Straight mean for this many, then exponential.
  std::uint64_t host_average_samples = 10;
  double version_alpha = 0.01; ///< Weight of a new sample once exponential.
  double host_alpha = 0.1;
  std::uint64_t version_sample_threshold = 100; ///< Samples before a version is normalized.
  std::uint64_t host_sample_threshold = 10;     ///< Samples before Scale(H) and R(J,H) apply.
  double sample_cap = 10;               ///< A non-first sample is capped at this × average.
  double host_scale_cap = 10;           ///< Scale(H) is at most this.
  double cheat_factor = 20;             ///< PFC/E over this × PFCmean(V) is a one-time cheat.
  double flops_per_cobblestone = 864e9; ///< C = F / this (the design's F × 100 / 86400e9).
  double credit_half_life = 7 * 86400;  ///< Seconds; of recent average credit.
  double error_rate_initial = 0.1;      ///< Error rate of a new (host, version) and after a cheat.
  double error_rate_alpha = 0.05;       ///< Weight of one outcome in the error rate.
  /// PFCmean(V) for normalization and Scale(H): false, the mean of all samples (the design's
  /// first formulation); true (the default), the median of the hosts' PFCmean(H,V), the
  /// design's remedy against cheaters who would otherwise raise PFCmean(V) and so everyone's
  /// credit (see version_pfc in state.hpp for when the median is defined).
  bool version_pfc_median = true;
  friend bool operator==(const credit_settings&, const credit_settings&) = default;
};

/// The median of the hosts' PFCmean(H,V) stands for PFCmean(V) only once at least this many
/// hosts have host_sample_threshold samples; before, the mean of all samples does. With one or
/// two hosts the "median" is one host's mean or the mean of two, which one cheater moves as
/// much as the plain mean; from three on, one outlier cannot move it outside the others'
/// range. (A constant, not a setting: it follows from what a median is.)
inline constexpr std::size_t median_min_hosts = 3;

template <class F>
void inspect_fields(F& f, credit_settings& x) {
  f(x.normalization_interval, x.version_average_samples, x.host_average_samples, x.version_alpha,
    x.host_alpha, x.version_sample_threshold, x.host_sample_threshold, x.sample_cap,
    x.host_scale_cap, x.cheat_factor, x.flops_per_cobblestone, x.credit_half_life,
    x.error_rate_initial, x.error_rate_alpha, x.version_pfc_median);
}

/// A running average: the straight mean of the first `straight` samples, then exponential
/// with weight `alpha`; a sample after the first is capped at `cap` × the current average.
struct average_var {
  std::uint64_t n = 0;
  double avg = 0;
  /// Adds a sample (non-finite or negative samples are ignored).
  void update(double sample, std::uint64_t straight, double alpha, double cap);
  friend bool operator==(const average_var&, const average_var&) = default;
};

template <class F>
void inspect_fields(F& f, average_var& x) {
  f(x.n, x.avg);
}

/// Total and recent average credit (exponentially decaying with a half-life), as BOINC's
/// total_credit / expavg_credit / expavg_time.
struct credit_totals {
  double total = 0;
  double expavg = 0;
  time_us expavg_time = 0;
  /// Adds granted credit at `now`.
  void add(double credit, time_us now, double half_life);
  /// The recent average as of `now` (decayed since the last grant), without changing it.
  double expavg_at(time_us now, double half_life) const;
  friend bool operator==(const credit_totals&, const credit_totals&) = default;
};

template <class F>
void inspect_fields(F& f, credit_totals& x) {
  f(x.total, x.expavg, x.expavg_time);
}

/// Cobblestones for a FLOP count: C = F / flops_per_cobblestone.
inline double cobblestones(double flops, const credit_settings& s) {
  return flops / s.flops_per_cobblestone;
}

/// peak_flops(J): the peak speed of what the job's version uses on that host: avg_ncpus CPUs
/// at the CPU's benchmark plus coproc_count GPUs at their peak.
double job_peak_flops(double p_fpops, double avg_ncpus, double gpu_peak_flops, double coproc_count);

// -- cross-version normalization ----------------------------------------------

/// What normalization knows of one app version.
struct version_credit_input {
  std::uint32_t id = 0;
  bool gpu = false;
  average_var pfc{}; ///< PFCmean(V): PFC(J)/E(J) over validated jobs.
};

/// The outcome for one app: min_avg_pfc(A) (nullopt: X undefined) and Scale(V) per version
/// that was above the sample threshold (others keep theirs).
struct app_normalization {
  std::optional<double> min_avg_pfc;
  std::map<std::uint32_t, double> scales;
};

/// The design's rules: PFCmean(CPU) and PFCmean(GPU) as the sample-weighted means over
/// versions above the threshold; X is their mean when only one class has versions (and at
/// least two are above the threshold), their min when both have one above it. Then
/// min_avg_pfc(A) = X and Scale(V) = X / PFCmean(V).
///
/// An app with only GPU versions has no CPU version to check it: when `gpu_only_scale` (the
/// cross-project factor of its resource/plan class) is given, its versions get that scale
/// instead, and min_avg_pfc(A) = scale × PFCmean(GPU).
app_normalization
normalize_versions(const std::vector<version_credit_input>& versions, const credit_settings& s,
                   const std::map<std::uint32_t, double>& gpu_only_scales = {});

// -- claimed and granted credit -------------------------------------------------

/// Flags of one result's credit (credit_rec::flags).
enum credit_flags : std::uint8_t {
  credit_default_pfc = 1,    ///< PFC failed the sanity check (or was not estimated): default PFC.
  credit_one_time_cheat = 2, ///< PFC/E over cheat_factor × PFCmean(V).
  credit_anonymous = 4,      ///< Anonymous platform: claimed from min_avg_pfc(A).
  credit_probation = 8,      ///< The host was on scale probation (its Scale(H) not trusted).
  credit_fallback = 16,      ///< Granted by the fallback (no replica to average).
  credit_app_units = 32,     ///< AutoFlops app_units policy: mean app units × est_flops_per_au.
};

/// What the validator knows of one valid replica.
struct replica_credit_input {
  double elapsed = 0;
  bool elapsed_plausible = true;
  double peak_flops = 0; ///< peak_flops(J) at dispatch (0: unknown).
  bool anonymous = false;
  average_var version_pfc{}; ///< PFCmean(V) as of the last normalization.
  double version_scale = 1;  ///< Scale(V).
  average_var host_pfc{};    ///< PFCmean(H,V) when the host reported.
  bool probation = false;    ///< Scale probation applies (the app checks, and the host is on it).
};

/// The credit decided for one replica.
struct credit_rec {
  double pfc = 0;        ///< PFC(J) after the sanity check, FLOPs.
  double pfc_sample = 0; ///< PFC(J)/E(J) when it is a normalization sample; else 0.
  double scale_v = 1;
  double scale_h = 1;
  double claimed = 0;     ///< Cobblestones.
  double granted = 0;     ///< Cobblestones.
  std::uint8_t flags = 0; ///< credit_flags
  friend bool operator==(const credit_rec&, const credit_rec&) = default;
};

template <class F>
void inspect_fields(F& f, credit_rec& x) {
  f(x.pfc, x.pfc_sample, x.scale_v, x.scale_h, x.claimed, x.granted, x.flags);
}

/// Claimed credit of one replica of a job with estimate `est` (E(J)) and bound `bound`:
/// PFC(J) = elapsed × peak_flops(J); the sanity check (infinite, or over the bound: default
/// PFC, no sample); the one-time-cheat check; F = PFC × Scale(V) × Scale(H); C in Cobblestones.
credit_rec claim_credit(const replica_credit_input& in, double est, double bound,
                        std::optional<double> min_avg_pfc, const credit_settings& s);

/// Granted credit of a quorum: the mean claimed credit of the replicas neither anonymous nor on
/// probation; when there are none, the fallback: min_avg_pfc(A) × E(J) when X is known, else
/// the lowest claim. One replica (no replication): its claim. Fills `granted` of every rec.
void grant_credit(std::vector<credit_rec>& recs, double est, std::optional<double> min_avg_pfc,
                  const credit_settings& s);

// -- host normalization and host_app_version ----------------------------------

/// Scale(H) = PFCmean(V)/PFCmean(H,V), capped at host_scale_cap; 1 until both have enough
/// samples. On probation (cherry-picking protection) it is at most 1: the host is never scaled
/// up without solid evidence, but a host that claims too much is still scaled down.
double host_scale(const average_var& version_pfc, const average_var& host_pfc, bool probation,
                  const credit_settings& s);

/// The job quota of a (host, app version) for a day: the app's max_jobs_per_day scaled by the
/// CPUs (CPU versions) or GPUs (GPU versions) of the host.
int initial_jobs_per_day(int per_instance, int instances);

/// The UTC day number of a time (for n_jobs_today).
inline std::int64_t day_of(time_us t) {
  return t / (86400LL * us_per_second);
}

} // namespace cobble
