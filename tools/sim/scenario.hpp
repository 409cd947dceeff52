#pragma once

/// A `cobble-sim run` scenario: hosts, projects with their job mixes, the client's settings,
/// a duration and a step (docs/emulator.md lists every key and its default).

#include "tools/client/types.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::sim {

/// An application of a project and the jobs the emulator creates for it.
struct scenario_app {
  std::string name;
  std::vector<std::string> resources = {"CPU"}; ///< Versions: "CPU", "NVIDIA", "ATI", "intel_gpu".
  double flops = 3.6e12;                        ///< Estimated FLOPs of a job (rsc_fpops_est).
  double flops_spread = 0; ///< Relative standard deviation of a job's actual FLOPs.
  double delay_bound = 7 * 86400.0;
  double start = 0;           ///< Jobs exist from this virtual time (seconds from the start).
  std::optional<double> stop; ///< No new jobs from this time.
  std::optional<long> count;  ///< At most this many jobs in all.
  double gpu_usage = 1;       ///< GPUs one job of a GPU version uses.
};

/// A project the hosts attach to.
struct scenario_project {
  std::string name;
  double share = 100;
  double attach_at = 0;      ///< Hosts attach at this virtual time.
  double request_delay = 60; ///< The server's minimum time between a host's RPCs.
  int replication = 1;       ///< min_quorum = target_nresults.
  int max_jobs_per_rpc = 10;
  std::vector<scenario_app> apps;
};

/// One coprocessor type of a host.
struct scenario_gpu {
  std::string type = "NVIDIA";
  int count = 1;
  double flops = 1e10; ///< Peak FLOPS per instance.
};

/// A kind of host and how many of them.
struct scenario_host {
  std::string name = "host";
  int count = 1;
  int ncpus = 1;
  double cpu_flops = 1e9; ///< Peak FLOPS per CPU.
  std::vector<scenario_gpu> gpus;
  std::map<std::string, double> efficiency; ///< Per app: fraction of peak reached (default 1).
  double on_frac = 1;                       ///< Fraction of time the host is on.
  double active_frac = 1;                   ///< Of that, fraction BOINC may compute.
  double availability_period = 86400;       ///< Mean length of an on/off (active/inactive) cycle.
  std::vector<std::string> projects;        ///< Empty: every project.
};

struct scenario {
  std::string source = "<scenario>";
  double duration = 10 * 86400.0;
  double step = 60;
  double warmup = 86400;         ///< Figures leave this much of the start out.
  double sample_interval = 3600; ///< Resolution of the report's time series.
  double monotony_window = 86400;
  std::uint64_t seed = 1;
  client::settings client;
  std::vector<scenario_project> projects;
  std::vector<scenario_host> hosts;
};

/// Reads a scenario file; throws config::config_error ("FILE:LINE: KEY: message").
scenario load_scenario(const std::filesystem::path& file);
/// Parses scenario YAML; `source` names it in errors.
scenario parse_scenario(std::string_view yaml, std::string_view source);

/// The resource index of a type name (case-insensitive; "CUDA" is NVIDIA): 0 CPU, 1 NVIDIA,
/// 2 ATI, 3 intel_gpu (the order of cobble::resource_type); -1 for an unknown name.
int resource_index(std::string_view type);
/// The canonical name of resource index r ("CPU", "NVIDIA", "ATI", "intel_gpu").
const char* resource_name(int r);

} // namespace cobble::sim
