#pragma once

/// The credit lab (`cobble-sim credit SCENARIO.yaml`): it drives the real project, host and
/// app-version actors in-process (tools/sim/harness) with a virtual clock, runs populations of
/// emulated hosts — honest CPU and GPU hosts and adversaries — through many validated jobs,
/// and measures what the credit design promises: device neutrality, project neutrality, the
/// bound on granted/deserved credit for cheaters, and how fast a new host's scale settles.
/// Every figure is computed from the event log the run leaves (workunit_validated events).

#include "config/config.hpp"
#include "tools/sim/lab.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace cobble::sim {

/// A project of a scenario: one app ("labapp") with a CPU and/or an NVIDIA version.
struct lab_project {
  std::string name;
  int replication = 1;           ///< min_quorum = target_nresults.
  bool host_scale_check = false; ///< Cherry-picking protection.
  bool cpu_version = true;
  bool gpu_version = true;
  double job_min = 1e12; ///< E(J) is log-uniform in [job_min, job_max].
  double job_max = 1e14;
  /// True size = E(J) × f, f log-uniform in [1/size_noise, size_noise] (1: E(J) is exact).
  double size_noise = 1;
  double bound_factor = 1000; ///< rsc_fpops_bound = this × E(J).
  double delay_bound = 14 * 86400;
  config::credit_config credit; ///< The project's credit settings.
};

/// A group of emulated hosts attached to one project.
struct lab_population : host_population {
  std::string project;
  /// "" (honest), inflate_elapsed, inflate_benchmark, huge_pfc, cherry_picker,
  /// slow_multithread.
  std::string adversary;
  double factor = 10; ///< Inflation factor (and the multithread slowdown).
  int cheat_at = 150; ///< huge_pfc: the job that claims PFC ~1e304.
  int jobs = 0;       ///< Jobs each host completes (default: jobs_per_host).
};

/// A scenario file.
struct lab_scenario {
  std::string file;
  std::uint64_t seed = 1;
  int jobs_per_host = 300; ///< Each host stops after completing this many jobs.
  int skip_jobs = 100;     ///< Figures count validated jobs after the first this many.
  double max_days = 400;   ///< Virtual time limit.
  std::vector<lab_project> projects;
  std::vector<lab_population> populations;
};

/// A scenario that cannot be used: what() reads "FILE:LINE: KEY: message".
using scenario_error = lab_scenario_error;

/// Reads a scenario file; throws scenario_error.
lab_scenario load_lab_scenario(const std::filesystem::path& file);
/// Parses scenario text; `source` names it in errors; throws scenario_error.
lab_scenario parse_lab_scenario(const std::string& yaml, const std::string& source);

/// Credit per unit of true work of one device class in one project.
struct device_figure {
  std::string project;
  std::string device;
  int hosts = 0;
  std::uint64_t jobs = 0;
  double credit_per_tflop = 0; ///< Granted Cobblestones per 1e12 FLOPs of true work.
};

/// One adversary population's outcome.
struct adversary_figure {
  std::string project;
  std::string name;
  std::string kind;
  bool protection = false;
  std::uint64_t jobs = 0; ///< Validated jobs counted (after skip_jobs).
  double ratio = 0;       ///< Granted / deserved (deserved: honest credit per work).
};

/// One project's figures.
struct project_figure {
  std::string name;
  bool protection = false;
  std::uint64_t jobs = 0;          ///< Validated jobs of honest hosts.
  double credit_per_host_hour = 0; ///< Honest CPU hosts, over their busy time.
  double gpu_cpu_ratio = 0;        ///< Device neutrality (0: not both device classes).
  double settle_median = 0;        ///< Validated jobs until Scale(H) stays within 5%.
  double settle_max = 0;
  double honest_min = 0; ///< Lowest and highest granted/deserved of one honest
  double honest_max = 0; ///< host (the noise floor of the adversaries' ratios).
};

/// A run's figures.
struct lab_result : lab_totals {
  double wall_seconds = 0;
  std::vector<project_figure> projects;
  std::vector<device_figure> devices;
  std::vector<adversary_figure> adversaries;
};

/// Runs a scenario in a fresh temporary data directory, or in `data_dir` (which then keeps
/// the event log for `cobble log tail|replay DIR`).
lab_result run_credit_lab(const lab_scenario& s, const std::filesystem::path& data_dir = {});

/// The table the command prints.
std::string format_table(const lab_result& r);

/// Registers `credit SCENARIO.yaml [--seed N]` on a CLI11 app.
void add_credit_command(CLI::App& app);

} // namespace cobble::sim
