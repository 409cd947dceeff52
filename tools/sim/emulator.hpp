#pragma once

/// The emulator behind `cobble-sim run`: emulated hosts, each running the client library's
/// policies (tools/client), attached to the scenario's projects on a server reached through
/// a server_link — the in-process harness in virtual time, or a running cobbled over HTTP.
/// It keeps the projects supplied with work, executes jobs (a job's actual FLOPs over the
/// device's peak FLOPS times the host's efficiency for the app), reports results whose
/// output md5 is a function of the workunit (so replicas agree), and measures the figures.

#include "actors/messages.hpp"
#include "actors/rpc.hpp"
#include "config/config.hpp"
#include "tools/client/client.hpp"
#include "tools/sim/scenario.hpp"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cobble::sim {

/// How the emulator reaches the server.
class server_link {
public:
  virtual ~server_link() = default;
  /// Server time, seconds since the Unix epoch.
  virtual double now() const = 0;
  /// Lets `dt` seconds pass on the server (virtual time in-process).
  virtual void advance(double dt) = 0;
  /// The account key of user `sim` of `project`; throws std::runtime_error when it cannot.
  virtual std::string authenticator(const std::string& project) = 0;
  /// One scheduler RPC; nullopt (with `error` set) when it failed.
  virtual std::optional<sched_reply>
  rpc(const std::string& project, const sched_request& req, std::string& error) = 0;
  /// Uploads output file `file` of host `hostid` with `content`, as a BOINC client does before
  /// it reports the result (`signature`: the xml_signature the reply gave it; empty
  /// in-process); false (with `error` set) when it failed or was refused.
  virtual bool upload(const std::string& project, std::uint64_t hostid, const std::string& file,
                      const std::string& signature, const std::string& content, std::string& error)
    = 0;
  /// Creates workunits; false (with `error` set) when it failed.
  virtual bool create_work(const std::string& project, const work_batch& batch, std::string& error)
    = 0;
  /// The name a workunit the emulator calls `name` gets on the server (a server reused by
  /// several runs needs them unique).
  virtual std::string work_name(const std::string& name) const { return name; }
};

/// The server configuration a scenario needs: one project per scenario project, each with a
/// user `sim` and one app per scenario app (a version per resource type, plan class
/// "" for the CPU and the lower-case type name for a GPU).
config::cobble_config make_config(const scenario& sc);

/// Figures for one resource type or for all of them (docs/emulator.md defines each).
struct resource_figures {
  bool present = false; ///< Some host has this resource.
  double capacity = 0;  ///< FLOPs the devices could have done while allowed to compute.
  double used = 0;      ///< FLOPs they did.
  double wasted = 0;    ///< FLOPs of results reported after their deadline.
  double idle_fraction = 0;
  double wasted_fraction = 0;
  double share_violation = 0;
  double monotony = 0;
  long rpcs = 0; ///< RPCs that asked for this resource (overall: every RPC).
  long jobs = 0; ///< Results reported.
  double rpcs_per_job = 0;
};

/// Per project.
struct project_figures {
  std::string name;
  double target_share = 0; ///< Resource share fraction.
  double flops_share = 0;  ///< Fraction of all FLOPs done for it.
  long deadlines_met = 0;
  long deadlines_missed = 0;
};

struct figures {
  resource_figures overall;
  std::array<resource_figures, client::max_resources> rsc{};
  std::vector<project_figures> projects;
  long rpc_errors = 0;
};

/// A stretch of time during which one project ran on one device instance (host 0).
struct timeline_segment {
  int rsc = 0;
  int slot = 0;
  int project = 0;
  double start = 0;
  double end = 0;
};

/// What a run measured. Times are seconds from the start of the run.
struct run_result {
  figures fig;
  double duration = 0;
  double warmup = 0;
  double sample_interval = 3600;
  std::vector<std::string> projects;
  std::vector<double> shares; ///< Resource share of each project.
  /// Per resource: the projects that have an app for it.
  std::array<std::vector<char>, client::max_resources> has_app{};
  std::array<int, client::max_resources> host0_instances{}; ///< Devices of the first host.
  /// usage[bucket][project][rsc]: instance-seconds over every host.
  std::vector<std::vector<std::array<double, client::max_resources>>> usage;
  /// debts[bucket][project]: the first host's overall debt at the end of the bucket.
  std::vector<std::vector<double>> debts;
  std::vector<timeline_segment> timeline;
  double wall_seconds = 0;
  long host_steps = 0;

  /// Project p's fraction of resource r's use within [from, to) (sample resolution).
  double share(int p, int r, double from, double to) const;
  /// Project p's fraction of the weighted use of every resource (FLOPs, with the speeds of
  /// the first host) within [from, to).
  double flops_share(int p, double from, double to) const;
  std::array<double, client::max_resources> speeds{}; ///< First host's peak FLOPS per type.
};

/// Options of a run besides the scenario.
struct run_options {
  /// Called now and then with the virtual time done and the total (progress output).
  std::function<void(double done, double total)> progress;
  /// Seconds of wall time between progress calls.
  double progress_every = 2;
};

/// Runs the scenario against `link`. Throws std::runtime_error when the server cannot be
/// used at all (no account key).
run_result run_scenario(const scenario& sc, server_link& link, const run_options& opts = {});

/// A server_link to a node in this process, in virtual time (tools/sim/harness.hpp).
std::unique_ptr<server_link> in_process_link(const scenario& sc);

} // namespace cobble::sim
