#pragma once

/// The AutoFlops lab (`cobble-sim autoflops SCENARIO.yaml`): emulated hosts of mixed speed and
/// efficiency, with CPU and GPU versions, run jobs whose app units vary over orders of
/// magnitude and whose predictions are noisy but linearly correlated, through the real
/// project, host and app-version actors in virtual time (tools/sim/harness). Each host
/// reports its seconds_per_app_unit and each job's app units, as Cobble's client library
/// does; a job running past the bound the server sent is aborted (the BOINC client's
/// elapsed-time limit). It measures what the AutoFlops design promises: the fraction of jobs
/// finishing within the estimate (~95%) and within the bound (~99.99%), how many jobs
/// est_flops_per_au takes to settle, and credit per unit of true work on CPUs and GPUs.

#include "config/config.hpp"
#include "tools/sim/lab.hpp"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace cobble::sim {

/// A group of emulated hosts.
using af_population = host_population;

/// A scenario file.
struct af_scenario {
  std::string file;
  std::uint64_t seed = 1;
  int jobs = 3000;          ///< Jobs dispatched in all (then hosts stop asking).
  double max_days = 400;    ///< Virtual time limit.
  double predicted_min = 1; ///< Predicted app units, log-uniform in [min, max].
  double predicted_max = 100;
  double units_per_predicted = 3; ///< Actual = this × predicted × noise (systematic bias).
  double noise = 0.2;             ///< Spread of actual/predicted (sigma).
  std::string noise_kind
    = "lognormal";            ///< lognormal (exp(N(0, sigma))) | normal (1 + N(0, sigma)).
  double time_noise = 0.02;   ///< Per-job jitter of a host's speed (lognormal sigma).
  double flops_per_au = 1e11; ///< True FLOPs per app unit.
  bool cpu_version = true;
  bool gpu_version = true;
  double delay_bound = 30 * 86400;
  std::string credit_policy = "app_units"; ///< pfc | app_units
  config::autoflops_config autoflops;      ///< The app's AutoFlops settings.
  std::vector<af_population> populations;
};

/// A scenario that cannot be used: what() reads "FILE:LINE: KEY: message".
using af_scenario_error = lab_scenario_error;

/// Reads a scenario file; throws af_scenario_error.
af_scenario load_af_scenario(const std::filesystem::path& file);
/// Parses scenario text; `source` names it in errors; throws af_scenario_error.
af_scenario parse_af_scenario(const std::string& yaml, const std::string& source);

/// Completion-time figures of one device class (or "all").
struct af_version_figure {
  std::string version;
  std::uint64_t jobs = 0;      ///< Jobs that finished or hit the bound.
  std::uint64_t estimated = 0; ///< ... of them sent with an AutoFlops estimate and bound.
  std::uint64_t within_estimate = 0;
  std::uint64_t within_bound = 0; ///< The others were aborted at the bound.
  std::uint64_t warm = 0;         ///< Estimated jobs sent after the statistics' warm-up.
  std::uint64_t warm_within_estimate = 0;
  std::uint64_t warm_within_bound = 0;
  double fraction_estimate() const { return estimated ? double(within_estimate) / estimated : 0; }
  double fraction_bound() const { return estimated ? double(within_bound) / estimated : 0; }
};

/// Credit per unit of true work of one device class.
struct af_credit_figure {
  std::string device;
  std::uint64_t jobs = 0;
  double credit_per_tflop = 0; ///< Granted Cobblestones per 1e12 true FLOPs.
};

/// A run's figures.
struct af_result : lab_totals {
  std::uint64_t checks = 0;                ///< Cherry-picking check replicas created.
  std::vector<af_version_figure> versions; ///< CPU, GPU, all.
  double est_flops_per_au = 0;             ///< Final estimate.
  double true_flops_per_au = 0;
  std::uint64_t array_full_at = 0; ///< Validated jobs when the first array filled.
  std::uint64_t settled_at = 0;    ///< Validated jobs until est stays within 5% of final.
  std::vector<af_credit_figure> credit;
  std::string credit_policy;
};

/// Runs a scenario in a fresh temporary data directory, or in `data_dir` (kept).
af_result run_autoflops_lab(const af_scenario& s, const std::filesystem::path& data_dir = {});

/// The table the command prints.
std::string format_af_table(const af_result& r);

/// Registers `autoflops SCENARIO.yaml [--seed N] [--data-dir DIR]`.
void add_autoflops_command(CLI::App& app);

} // namespace cobble::sim
