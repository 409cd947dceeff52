#pragma once

/// AutoFlops (../shared/seeds/000, docs/autoflops.md): app units, the per-app statistics of
/// actual and predicted app units, completion time estimates and bounds, and the automatic
/// estimate of FLOPs per app unit (est_flops_per_au) from the raw FLOPs per app unit of
/// validated jobs.
///
/// Everything here is pure: the project decides with these functions and `apply` advances
/// the statistics from `autoflops_sampled` events with them, so replay computes the same.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cobble {

/// How an app's validated jobs are credited (docs/credit.md, docs/autoflops.md).
enum class credit_policy : std::uint8_t {
  pfc = 0,       ///< Peak FLOP count, normalized (the credit design).
  app_units = 1, ///< app.mean_app_units × app.est_flops_per_au, the same for every job.
};

/// Which clients get AutoFlops completion time estimates and bounds.
enum class estimate_mode : std::uint8_t {
  off = 0,    ///< None: rsc_fpops_est / rsc_fpops_bound as given (and R(J,H)).
  client = 1, ///< Clients that report seconds_per_app_unit (Cobble's client library).
  all = 2,    ///< Also BOINC clients, from the server's seconds_per_app_unit(H,V).
};

/// The numbers AutoFlops leaves open, per app (`autoflops:` of an app in the configuration).
struct autoflops_settings {
  estimate_mode estimates = estimate_mode::client;
  double est_x = 2;   ///< X of the completion time estimate.
  double bound_x = 4; ///< X of the completion time bound.
  /// App-unit samples before the estimate uses the statistics' spread; before that the
  /// bound is the estimate × warmup_bound_factor.
  std::uint32_t min_samples = 30;
  double warmup_bound_factor = 10; ///< Bound = estimate × this while warming up.
  /// Statistics of actual/predicted in log space (the ratio's logarithm: mean and variance),
  /// for multiplicative noise; false: of the ratio itself, as the design writes it.
  bool log_ratio = true;
  std::uint32_t flops_samples = 100; ///< N: raw_flops_per_au values kept per device class.
  double flops_percentile = 0.05;    ///< The order statistic of a full array.
  double flops_alpha = 0.1;          ///< Weight of a new percentile in est_flops_per_au.
  /// A workunit run on every host; when set only its results feed est_flops_per_au.
  std::string reference_job;
  credit_policy policy = credit_policy::pfc;
  /// app_units policy, cherry picking: an abort or timeout multiplies the (host, version)'s
  /// max_jobs_per_day by this (at least 1 job).
  double abort_quota_factor = 0.5;
  /// app_units policy: a job validated alone gets a check replica with this probability...
  double resend_probability = 0.05;
  /// ...and always when the host's error rate for the version (aborts, timeouts, errors) is
  /// above this (the host is under suspicion).
  double suspicion_error_rate = 0.3;
  /// The smallest spread a host's own record of elapsed / predicted app units is taken to
  /// have (stdev of the logarithm, or with log_ratio false the coefficient of variation):
  /// a host that was steady so far still gets this much room (clients without app units).
  double host_min_spread = 0.1;
  friend bool operator==(const autoflops_settings&, const autoflops_settings&) = default;
};

/// Fields by payload version of project_configured (3: all but host_min_spread; 4: it too).
template <class F>
void inspect_fields(F& f, autoflops_settings& x) {
  f(x.estimates, x.est_x, x.bound_x, x.min_samples, x.warmup_bound_factor, x.log_ratio,
    x.flops_samples, x.flops_percentile, x.flops_alpha, x.reference_job, x.policy,
    x.abort_quota_factor, x.resend_probability, x.suspicion_error_rate);
  if (f.version >= 4)
    f(x.host_min_spread);
}

/// Count, mean and variance of a series (Welford's update; exact for any order of size).
struct running_stats {
  std::uint64_t n = 0;
  double mean = 0;
  double m2 = 0; ///< Sum of squared deviations from the mean.
  /// Adds a sample (non-finite samples are ignored).
  void add(double x);
  /// Sample variance (n - 1 in the denominator; 0 below two samples).
  double variance() const;
  double stdev() const;
  friend bool operator==(const running_stats&, const running_stats&) = default;
};

template <class F>
void inspect_fields(F& f, running_stats& x) {
  f(x.n, x.mean, x.m2);
}

/// Mean and variance of a series averaged as the credit system averages (average_var): the
/// plain mean and variance (Welford) of the first `straight` samples, then exponentially with
/// weight alpha (mean += α d, var = (1 − α)(var + α d²) with d the deviation from the mean).
struct spread_stats {
  std::uint64_t n = 0;
  double mean = 0;
  double var = 0; ///< Population variance (straight phase), then the exponential one.
  /// Adds a sample (non-finite samples are ignored).
  void add(double x, std::uint64_t straight, double alpha);
  /// The variance (with n - 1 in the straight phase; 0 below two samples).
  double variance() const;
  double stdev() const;
  friend bool operator==(const spread_stats&, const spread_stats&) = default;
};

template <class F>
void inspect_fields(F& f, spread_stats& x) {
  f(x.n, x.mean, x.var);
}

/// The spread of a (host, app version)'s seconds_per_app_unit samples, elapsed / app units
/// of its successful reports, where a report without app units (BOINC clients) counts the
/// job's predicted app units: the completion times of a client that reports no app units
/// come from these (host_completion_times).
struct spau_spread {
  std::uint64_t with_units = 0; ///< Samples of reports that carried app units.
  spread_stats value;           ///< Of the samples.
  spread_stats log;             ///< Of their logarithms.
  /// Adds a sample (ignored unless positive and finite).
  void add(double sample, bool reported_units, std::uint64_t straight, double alpha);
  friend bool operator==(const spau_spread&, const spau_spread&) = default;
};

template <class F>
void inspect_fields(F& f, spau_spread& x) {
  f(x.with_units, x.value, x.log);
}

/// The raw_flops_per_au values of one device class: the most recent ones (fewer than N), and
/// the exponential average of the percentiles of the full arrays.
struct flops_array {
  std::vector<double> values; ///< The current array (cleared when it reaches N).
  double estimate = 0;        ///< Averaged percentile (0: the array was never full).
  std::uint64_t updates = 0;  ///< Percentiles averaged in.
  friend bool operator==(const flops_array&, const flops_array&) = default;
};

template <class F>
void inspect_fields(F& f, flops_array& x) {
  f(x.values, x.estimate, x.updates);
}

/// Everything AutoFlops keeps for one app (owned by the project; snapshotted).
struct app_units_stats {
  running_stats actual;        ///< Actual app units of validated jobs.
  running_stats predicted;     ///< Their predicted app units.
  running_stats ratio;         ///< actual/predicted (au_variance is ratio's variance).
  running_stats log_ratio;     ///< log(actual/predicted).
  flops_array cpu;             ///< raw_flops_per_au of CPU versions.
  flops_array gpu;             ///< ... of GPU versions.
  double est_flops_per_au = 0; ///< min of the classes' estimates that exist (0: none yet).
  friend bool operator==(const app_units_stats&, const app_units_stats&) = default;
};

template <class F>
void inspect_fields(F& f, app_units_stats& x) {
  f(x.actual, x.predicted, x.ratio, x.log_ratio, x.cpu, x.gpu, x.est_flops_per_au);
}

/// The p-quantile (0..1) of values (nearest rank, the smallest value with at least p of the
/// values at or below it); 0 when empty.
double percentile(std::vector<double> values, double p);

/// Adds one raw_flops_per_au value to an array of capacity N (flops_samples); when the array
/// is full, its percentile is averaged into the estimate (the first full array sets it) and
/// a new array begins.
void add_flops_sample(flops_array& a, double value, const autoflops_settings& s);

/// est_flops_per_au from the two classes: the minimum of those that have an estimate.
double combined_flops_per_au(const flops_array& cpu, const flops_array& gpu);

/// Adds one validated job's actual and predicted app units.
void add_app_units(app_units_stats& st, double actual, double predicted);

/// The factor by which a job's predicted app units are multiplied for its estimate (x =
/// est_x) or bound (x = bound_x): mean(actual)/mean(predicted) + X × stdev(actual/predicted)
/// (the design), or with log_ratio exp(mean + X × stdev) of log(actual/predicted). While the
/// statistics have fewer than min_samples samples: the ratio of the means (1 with none), and
/// for the bound that × warmup_bound_factor.
double prediction_factor(const app_units_stats& st, const autoflops_settings& s, bool bound);

/// A completion time estimate and bound (seconds).
struct completion_time {
  double estimate = 0;
  double bound = 0;
};

/// seconds_per_app_unit(V) × J.predicted_aus × prediction_factor, for X = est_x and bound_x.
completion_time completion_times(double seconds_per_app_unit, double predicted_aus,
                                 const app_units_stats& st, const autoflops_settings& s);

/// Completion times for a client that reports no app units, from its own record (every
/// sample per predicted app unit, so the ratio of actual to predicted is already in it):
/// spau × J.predicted_aus × exp(X × σ) with log_ratio, σ the stdev of the samples'
/// logarithms, else × (1 + X × cv), cv = stdev / mean of the samples; σ and cv are at least
/// host_min_spread. While the record has fewer than min_samples samples: the estimate is
/// spau × predicted, the bound that × warmup_bound_factor.
completion_time host_completion_times(double seconds_per_app_unit, double predicted_aus,
                                      const spau_spread& h, const autoflops_settings& s);

/// raw_flops_per_au(J) = T × raw_flops_per_sec(J) / A; nullopt when a figure is unusable.
std::optional<double> raw_flops_per_au(double elapsed, double raw_flops_per_sec, double app_units);

/// GPU-only propagation (note 2 of the design), client side: for a version of an app that
/// has only GPU versions, raw_flops_per_au(J) is the average est_flops_per_au of the host's
/// other apps that have both CPU and GPU versions; nullopt when it has none (then the job's
/// own T × peak / A is used).
std::optional<double> propagated_flops_per_au(const std::vector<double>& mixed_app_estimates);

/// A deterministic draw in [0, 1) from a workunit id and a salt (the random resend decision:
/// recorded in the event it causes, so replay does not draw again).
double unit_draw(std::uint64_t id, std::uint64_t salt);

} // namespace cobble
