#pragma once

/// The lab base: what the credit lab and the AutoFlops lab (`cobble-sim credit|autoflops`)
/// share. Both read a YAML scenario of host populations, run emulated hosts against the real
/// actors on the deterministic harness in virtual time, one event-driven RPC at a time, keep
/// the truth of every job they create, read their figures from the log and print a Markdown
/// table from a CLI11 subcommand. Each lab keeps only its own scenario keys, host behaviour
/// and figures.

#include "actors/messages.hpp"
#include "config/config.hpp"
#include "tools/sim/harness.hpp"
#include "tools/sim/lab_yaml.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace cobble::sim {

// -- scenario files -----------------------------------------------------------------

/// Rules for checked_map::read: above zero and finite.
inline constexpr auto positive = [](auto x) {
  return x > 0 && std::isfinite(static_cast<double>(x));
};
/// 1 or more.
inline constexpr auto at_least_one = [](auto x) { return x >= 1; };
/// In (0, 1].
inline constexpr auto fraction = [](double x) { return x > 0 && x <= 1; };
/// In [0, 1].
inline constexpr auto probability = [](double x) { return x >= 0 && x <= 1; };

/// The YAML of a scenario's text; a syntax error reads "FILE:LINE: message".
YAML::Node parse_lab_yaml(const std::string& yaml, const std::string& source);
/// The text of a scenario file; throws lab_scenario_error when it cannot be read.
std::string read_lab_file(const std::filesystem::path& file);

/// Reads the list `key` of the top mapping: at least one `what` is required, and each item
/// is a mapping of the `known` keys, handed to `item(map, node, path, index)`.
void read_lab_list(const checked_map& top, const char* key, const char* what,
                   std::initializer_list<const char*> known,
                   const std::function<void(const checked_map&, const YAML::Node&,
                                            const std::string&, std::size_t)>& item);

/// A group of emulated hosts of one kind of device: what the labs' populations share.
struct host_population {
  std::string name;
  int count = 1;
  std::string device = "cpu"; ///< cpu | gpu (one NVIDIA GPU; it asks only for GPU work)
  double cpu_flops_min = 2e9; ///< CPU benchmark (p_fpops), uniform in [min, max].
  double cpu_flops_max = 4e9;
  double gpu_factor_min = 10; ///< GPU peak = CPU benchmark × factor, log-uniform.
  double gpu_factor_max = 100;
  double efficiency_min = 0; ///< Actual/peak FLOPS, uniform; 0: the device's default
  double efficiency_max = 0; ///< (CPU 0.35-0.65, GPU 0.05-0.15).
};

/// Reads a population's count, then its device through `device` (each lab checks it against
/// its own versions), then its speeds; `n` is its node, `path` its key path.
void read_host_population(const checked_map& m, const YAML::Node& n, const std::string& path,
                          host_population& p, const std::function<void()>& device);

// -- the run ------------------------------------------------------------------------

/// The platform of the labs' hosts and versions.
inline constexpr const char* lab_platform = "x86_64-pc-linux-gnu";
/// The version number of every lab app version.
inline constexpr int lab_version_num = 100;

/// The harness options of a lab: a configuration with no project yet, named after the
/// scenario file; an empty `data_dir` is a fresh temporary directory.
harness_options
lab_harness_options(const std::string& source, const std::filesystem::path& data_dir);

/// Adds a project with one app for a lab's hosts: the user "lab" that all its hosts share,
/// the limits of lab_limits(), one job per RPC, replication `quorum`, a CPU and/or a CUDA
/// version. Returns the app, for the lab's own settings.
config::app_config&
add_lab_project(config::cobble_config& cfg, const std::string& name, std::string long_name,
                std::string app, int quorum, double delay_bound, bool cpu, bool gpu);

/// An emulated host's device and its id at the project.
struct emulated_host {
  bool gpu = false;
  double cpu_flops = 0; ///< CPU benchmark.
  double gpu_flops = 0; ///< GPU peak (0: no GPU).
  double efficiency = 0;
  id_type id = 0; ///< 0 until the first reply names it.

  /// The peak of the device that runs its jobs.
  double peak() const { return gpu ? gpu_flops : cpu_flops; }
};

/// The workunits a lab created and their truth (known to the lab only).
template <class Truth>
struct job_book {
  std::map<id_type, Truth> truth;
  std::map<std::string, id_type> wu_ids; ///< By workunit name.

  /// Creates `batch` in `project`, `made[i]` the truth of its i-th item; returns how many
  /// workunits were created.
  std::size_t
  create(harness& h, const std::string& project, work_batch batch, const std::vector<Truth>& made) {
    auto out = h.create_work(project, std::move(batch));
    if (!out)
      throw std::runtime_error("lab: creating work failed: " + caf::to_string(out.error()));
    for (std::size_t i = 0; i < (*out)->ids.size(); ++i) {
      truth[(*out)->ids[i]] = made[i];
      wu_ids[(*out)->names[i]] = (*out)->ids[i];
    }
    return (*out)->ids.size();
  }

  /// The workunit of a result sent to a host ("<wu>_<index>"), with its truth.
  std::pair<id_type, const Truth&> of_result(const std::string& result) const {
    auto wu = wu_ids.at(std::string{split_indexed_name(result)->first});
    return {wu, truth.at(wu)};
  }
};

/// A lab's run: its random numbers, the harness, and what every lab does with them.
class lab_run {
public:
  lab_run(std::uint64_t seed, harness_options options);

  /// Uniform in [lo, hi].
  double uniform(double lo, double hi);
  /// Log-uniform in [lo, hi].
  double log_uniform(double lo, double hi);
  /// Normal, mean 0.
  double normal(double sigma);

  /// A host of population `p`: benchmark, GPU peak and efficiency drawn.
  emulated_host draw_host(const host_population& p);
  /// The account key of the user "lab" in `project`.
  std::string lab_account(const std::string& project);

  /// A request of host `x` (account `auth`, CPID `cpid`), benchmark and GPU peak × `bench`,
  /// asking for one job of its device when `want_work`.
  sched_request request(const emulated_host& x, const std::string& auth, std::string cpid,
                        bool want_work, double bench = 1) const;
  /// The report of result `name`; a success has state 5 and its one output file.
  static reported_result report(const std::string& name, std::string plan_class, bool success);
  /// One scheduler RPC of `x` in `project`, its outputs uploaded before the report as a
  /// client does; x.id takes the id the reply gives. Throws when no reply came.
  sched_reply_ptr rpc(const std::string& project, sched_request req, emulated_host& x);

  /// Runs `hosts` hosts in virtual time: host i first at start + i s, each time at the
  /// earliest; `step(i)` makes host i's RPC and says when it comes back (nullopt: never).
  /// Stops once no host comes back or past `max_days`; returns the virtual days run.
  double run_hosts(std::size_t hosts, double max_days,
                   const std::function<std::optional<time_us>(std::size_t)>& step);
  /// Processes what is pending, then hands `fn` the log's records from `from` on; returns
  /// the last seq. Throws when the log cannot be read.
  std::uint64_t
  scan_log(std::uint64_t from, const std::function<bool(const storage::event_record&)>& fn);

  std::mt19937_64 rng;
  harness h;
  std::uint64_t rpcs = 0;    ///< RPCs made.
  std::uint64_t next_wu = 1; ///< The number in the next workunit's name.
};

// -- figures ------------------------------------------------------------------------

/// What every lab's table opens with.
struct lab_totals {
  std::string scenario;
  std::uint64_t seed = 0;
  int hosts = 0;
  std::uint64_t rpcs = 0;
  std::uint64_t validated = 0; ///< Validated results.
  double virtual_days = 0;
};

/// Credit per 1e12 FLOPs of true work (0 without work).
inline double credit_per_tflop(double credit, double flops) {
  return flops > 0 ? credit / flops * 1e12 : 0;
}

// -- the command --------------------------------------------------------------------

/// Runs a loaded scenario in a data directory (empty: a temporary one); yields the table.
using lab_runner = std::function<std::string(const std::filesystem::path& data_dir)>;
/// Loads a scenario file, the seed overridden when given; throws lab_scenario_error.
using lab_loader
  = std::function<lab_runner(const std::string& file, std::optional<std::uint64_t> seed)>;

/// What a lab's subcommand says of itself.
struct lab_command_text {
  const char* name;
  const char* description;
  const char* scenario_help;
  const char* data_dir_help;
};

/// Registers `NAME SCENARIO.yaml [--seed N] [OPTIONS] [--data-dir DIR]` on `app`: `options`
/// adds the lab's own; the table goes to stdout, errors to stderr (exit 2 for a bad
/// scenario, 1 for the rest).
void add_lab_command(CLI::App& app, const lab_command_text& text,
                     const std::function<void(CLI::App&)>& options, lab_loader load);

} // namespace cobble::sim
