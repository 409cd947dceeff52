#pragma once

/// Cobble's configuration: one YAML file describing the server and its projects (see
/// docs/configuration.md). With no file, the embedded demo project is used.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::config {

/// When an acknowledged reply is on disk: `sync` before the reply, `async` eventually.
enum class durability { sync, async };

/// How the replicas of a workunit are compared.
enum class validator_kind {
  bitwise,    ///< Replicas agree when their output files have equal md5 and size.
  accept_all, ///< Every successful replica is valid (tests, trusted hosts).
};

/// One app version of an app.
struct app_version_config {
  std::string platform = "x86_64-pc-linux-gnu";
  int version_num = 100;
  std::string plan_class; ///< Empty for a plain CPU version.
  double avg_ncpus = 1;
  std::string coproc_type; ///< Empty (CPU only), "NVIDIA", "ATI" or "intel_gpu".
  double coproc_count = 0; ///< GPUs used, when coproc_type is set.

  /// Field-by-field equality (tests, reload detection).
  bool operator==(const app_version_config&) const = default;
};

/// Which clients get AutoFlops completion time estimates and bounds (docs/autoflops.md).
enum class estimate_clients {
  off,    ///< None: rsc_fpops_est / rsc_fpops_bound as given.
  client, ///< Clients that report seconds_per_app_unit (Cobble's client library).
  all,    ///< Also BOINC clients, from the server's seconds_per_app_unit per (host, version).
};

/// How an app's validated jobs are credited.
enum class credit_policy_kind {
  pfc,       ///< Peak FLOP count, normalized (docs/credit.md).
  app_units, ///< app.mean_app_units × app.est_flops_per_au (docs/autoflops.md).
};

/// The numbers AutoFlops leaves open, per app (docs/autoflops.md).
struct autoflops_config {
  estimate_clients estimates = estimate_clients::client;
  double est_x = 2;                  ///< X of the completion time estimate.
  double bound_x = 4;                ///< X of the completion time bound.
  std::uint64_t min_samples = 30;    ///< App-unit samples before the spread is used.
  double warmup_bound_factor = 10;   ///< Bound = estimate × this before min_samples.
  bool log_ratio = true;             ///< Spread of log(actual/predicted); false: of the ratio.
  std::uint64_t flops_samples = 100; ///< N: raw_flops_per_au values kept per device class.
  double flops_percentile = 0.05;    ///< Order statistic of a full array.
  double flops_alpha = 0.1;          ///< Weight of a new percentile in est_flops_per_au.
  std::string reference_job;         ///< Workunit name run on every host; empty: none.
  double abort_quota_factor = 0.5;   ///< app_units policy: quota × this per abort/timeout.
  double resend_probability = 0.05;  ///< app_units policy: random check of a lone result.
  double suspicion_error_rate = 0.3; ///< app_units policy: check every job above this.
  double host_min_spread = 0.1;      ///< Least spread of a host's elapsed/predicted record.

  /// Field-by-field equality.
  bool operator==(const autoflops_config&) const = default;
};

/// One application of a project, with the replication policy of its workunits.
struct app_config {
  std::string name;
  std::string user_friendly_name;
  int min_quorum = 2;             ///< Valid results needed to pick a canonical one.
  int target_nresults = 2;        ///< Replicas created at first.
  int max_error_results = 3;      ///< More errors than this fails the workunit.
  int max_total_results = 10;     ///< More results than this fails the workunit.
  int max_success_results = 6;    ///< More successes without consensus fails it.
  double delay_bound = 86400 * 7; ///< Seconds from dispatch to report deadline.
  int max_jobs_per_rpc = 10;      ///< Jobs of this app sent in one reply at most.
  validator_kind validator = validator_kind::bitwise;
  double rsc_fpops_est = 3.6e12; ///< Defaults for work created without them.
  double rsc_fpops_bound = 3.6e13;
  double rsc_memory_bound = 1e8;
  double rsc_disk_bound = 1e9;
  double max_output_nbytes = 64e6;                     ///< max_nbytes of each output file.
  std::vector<std::string> output_names = {"out.txt"}; ///< Open names of the outputs.
  /// Cherry-picking protection: host scaling waits for scale probation to end (docs/credit.md).
  bool host_scale_check = false;
  /// Initial daily job quota of a (host, app version), per CPU (CPU versions) or GPU (GPU
  /// versions); one less per crash, doubled per success, never above the initial value.
  int max_jobs_per_day = 200;
  /// At most one result of a workunit goes to the hosts of one user (BOINC's
  /// one_result_per_user_per_wu), so that one volunteer cannot make up a quorum alone. One
  /// result per host holds always.
  bool one_result_per_user_per_wu = true;
  credit_policy_kind credit_policy = credit_policy_kind::pfc; ///< pfc | app_units.
  autoflops_config autoflops; ///< AutoFlops settings (docs/autoflops.md).
  std::vector<app_version_config> versions;

  /// Field-by-field equality.
  bool operator==(const app_config&) const = default;
};

/// A user account created at start when it does not exist yet (matched by name).
struct user_config {
  std::string name;
  std::string email;
  std::string authenticator; ///< Empty: a random one is generated and stored.
  std::string team{};        ///< Empty: no team. Credit also adds up per team.

  /// Field-by-field equality.
  bool operator==(const user_config&) const = default;
};

/// How PFCmean(V) is estimated (docs/credit.md).
enum class version_pfc_estimator {
  mean,   ///< The mean of all samples (the design's first formulation).
  median, ///< The median of the hosts' PFCmean(H,V), the default (the design's remedy against
          ///< cheaters); the mean of all samples while fewer than median_min_hosts qualify.
};

/// The numbers of the credit system the design leaves open (docs/credit.md).
struct credit_config {
  double normalization_interval = 600;         ///< Seconds between Scale(V) recomputations.
  std::uint64_t version_average_samples = 100; ///< Straight mean first, then exponential.
  std::uint64_t host_average_samples = 10;
  double version_alpha = 0.01; ///< Exponential weight of a new sample.
  double host_alpha = 0.1;
  std::uint64_t version_sample_threshold = 100; ///< Samples before a version is normalized.
  std::uint64_t host_sample_threshold = 10;     ///< Samples before Scale(H) and R(J,H) apply.
  double sample_cap = 10;                       ///< Non-first samples capped at this × average.
  double host_scale_cap = 10;                   ///< Scale(H) at most this.
  double cheat_factor = 20;                     ///< PFC/E over this × PFCmean(V): one-time cheat.
  double flops_per_cobblestone = 864e9;         ///< Credit C = F / this (100 / 86400e9 per FLOP).
  double credit_half_life = 7 * 86400;          ///< Seconds; of recent average credit.
  double error_rate_initial = 0.1;
  double error_rate_alpha = 0.05;
  version_pfc_estimator version_pfc = version_pfc_estimator::median;

  /// Field-by-field equality.
  bool operator==(const credit_config&) const = default;
};

/// The longest delay bound of a workunit, in seconds: ten years. A deadline is a dispatch
/// time plus the bound in microseconds since 1970, which must not overflow.
inline constexpr double max_delay_bound = 10 * 365 * 86400.0;

/// Who may make an account through BOINC's web RPCs and the project's site.
enum class account_creation {
  open,       ///< Anyone.
  closed,     ///< No one: accounts come from the operator (configuration, admin API).
  invitation, ///< Whoever gives one of the invitation codes.
};

/// Volunteers' accounts (docs/web.md).
struct accounts_config {
  account_creation creation = account_creation::open;
  std::vector<std::string> invitation_codes{}; ///< For `invitation`; none may be empty.
  /// The shortest password the BOINC Manager and the site accept (get_project_config.php).
  int min_password_length = 6;
  std::string terms_of_use{}; ///< Shown before an account is made; empty: none.
  bool operator==(const accounts_config&) const = default;
};

/// Limits a hostile client cannot widen (docs/security.md, "Limits a client cannot widen").
struct limits_config {
  /// Seconds between two work requests of one host that are served; a sooner one gets
  /// `request_delay` with the remaining time and no work (BOINC's min_sendwork_interval).
  /// Unset: the project's request_delay, which clients are told to honour anyway; 0: off.
  std::optional<double> min_sendwork_interval;
  int max_ncpus = 64; ///< CPUs a host's claim counts for at most (quotas scale with them).
  int max_ngpus = 8;  ///< GPUs of one type a host's claim counts for at most.
  /// Jobs a host may hold in progress per (capped) CPU, and per (capped) GPU of a type
  /// (BOINC's max_jobs_in_progress / max_gpu_jobs_in_progress with per_proc); 0: no cap.
  int max_jobs_in_progress = 10;
  int max_gpu_jobs_in_progress = 10;
  int max_new_hosts_per_day = 10; ///< Hosts one account may register in 24 hours; 0: no cap.
  /// A report's app units more than this factor from its job's prediction are implausible:
  /// flagged and kept out of the running means.
  double app_units_factor = 100;

  /// Field-by-field equality.
  bool operator==(const limits_config&) const = default;
};

/// A plan class: what a host must have to run the app versions that name it, and what such a
/// version uses there (docs/apps.md, "Plan classes"). BOINC's plan_class_spec.xml elements
/// of the same names; 0 or empty: no requirement.
struct plan_class_config {
  std::string name;
  // Any host.
  int min_core_client_version = 0;  ///< The client's major*10000 + minor*100 + release.
  double projected_flops_scale = 1; ///< Favours (above 1) or disfavours the class's versions.
  // CPU versions.
  int min_ncpus = 0;             ///< CPUs the host must have.
  int max_threads = 0;           ///< Multi-threaded: threads = min(host CPUs, this); 0: 1.
  bool nthreads_cmdline = false; ///< Pass ` --nthreads N` on the version's command line.
  double avg_ncpus = 0;          ///< CPUs a job uses (overrides the thread count); 0: unset.
  // GPU versions.
  std::string gpu_type;       ///< Empty (CPU), "nvidia", "amd" or "intel_gpu".
  bool cuda = false;          ///< Needs CUDA (NVIDIA).
  bool opencl = false;        ///< Needs OpenCL.
  double ngpus = 1;           ///< GPUs (or a fraction of one) a job uses.
  double cpu_frac = 0.1;      ///< CPUs a GPU job uses beside its GPUs.
  double min_gpu_ram_mb = 0;  ///< Memory one device must have, in MB.
  double gpu_ram_used_mb = 0; ///< Memory a job uses (sent as <gpu_ram>); 0: min_gpu_ram_mb.
  int min_driver_version = 0; ///< NVIDIA: e.g. 53523; AMD: CAL a*1000000+b*10000+c.
  int min_cuda_version = 0;   ///< NVIDIA, with cuda: e.g. 11080 for 11.8.

  /// Field-by-field equality.
  bool operator==(const plan_class_config&) const = default;
};

/// One project hosted by the server.
struct project_config {
  std::string name;                     ///< URL path component: the master URL is <url>/<name>/.
  std::string long_name;                ///< Shown to volunteers.
  std::string description{};            ///< A paragraph on the site's home page; empty: none.
  double request_delay = 5;             ///< Minimum seconds between a client's RPCs.
  std::optional<double> next_rpc_delay; ///< Ask clients to come back after this many seconds.
  double deadline_check_interval = 10;  ///< Seconds between deadline sweeps.
  /// Seconds after a workunit finishes before its uploaded outputs and no-longer-used inputs
  /// are deleted (the canonical outputs are kept under results/).
  double file_grace_period = 86400;
  /// Work sequences (docs/sequences.md): elements a host holds at once (the high-water mark).
  int sequence_high_water = 2;
  /// Sequences one host may hold at once (more for multiprocessors).
  int sequences_per_host = 1;
  /// Seconds between relocation checks of each sequence.
  double sequence_check_interval = 60;
  /// Replicated sequences: take the chain from a host this many elements behind its peer
  /// (a slow host holding back the other's credit); 0: never.
  int sequence_slow_replica_lag = 0;
  /// Hosts in memory (docs/architecture.md): a host's state not used for this many seconds
  /// is passivated (kept encoded, decoded again on its next use); 0: never for its age.
  double passivate_hosts_after = 600;
  /// Host states kept decoded at most: beyond it the least recently used are passivated on
  /// the next deadline sweep; 0: no cap.
  int max_live_hosts = 100000;
  /// A job the server has in progress for a host that its client no longer lists
  /// (`<other_results>`: after a project reset, or a reply that never arrived) is sent again
  /// when its deadline allows, else given up and replaced at once (docs/real-clients.md);
  /// false: it waits for its deadline.
  bool resend_lost_results = true;
  accounts_config accounts{};
  credit_config credit;
  limits_config limits;
  std::vector<app_config> apps;
  std::vector<user_config> users;
  /// What the project's app versions need of a host, by name (versions name one in their
  /// plan_class; a name not listed here asks nothing beyond the version's resource).
  std::vector<plan_class_config> plan_classes{};

  /// Field-by-field equality.
  bool operator==(const project_config&) const = default;
};

/// How CAF runs actors on its threads.
enum class actor_scheduler {
  sharing,  ///< One shared queue; idle threads sleep until work arrives.
  stealing, ///< Work stealing; idle threads poll, then back off (CAF's default).
};

/// The server process.
struct server_config {
  std::string listen_address = "127.0.0.1";
  std::uint16_t port = 8080; ///< 0 picks a free port (printed at start).
  /// Base URL in master pages and replies; empty: http:// and each request's Host header.
  std::string public_url;
  /// The admin API's own listener (docs/admin-api.md); the public one serves no /api/.
  std::string admin_address = "127.0.0.1";
  std::uint16_t admin_port = 8081; ///< 0 picks a free port (written to <data_dir>/admin_url).
  std::filesystem::path data_dir = "cobble-data";
  durability mode = durability::sync;
  int worker_threads = 2; ///< HTTP threads; CAF uses its own scheduler threads.
  int actor_threads = 1;  ///< CAF scheduler threads; 0: one per core (see docs/performance.md).
  actor_scheduler scheduler = actor_scheduler::sharing; ///< How actors share those threads.
  std::string admin_token;               ///< Empty: generated and stored in <data_dir>/admin_token.
  std::size_t body_limit = 4u << 20;     ///< Bytes of a scheduler or admin request.
  std::size_t upload_limit = 256u << 20; ///< Bytes of one upload request.
  std::chrono::seconds read_timeout{30}; ///< A request must arrive within this.
  std::uint64_t snapshot_every_events = 100000; ///< Snapshot after this many events...
  std::chrono::seconds snapshot_interval{300};  ///< ...or this long, whichever comes first,
  double snapshot_time_share = 0.1; ///< ...but snapshots take at most this share of the time.
  std::size_t snapshots_kept = 3;
  /// The statistics export for stats sites (<data_dir>/stats/<project>/, served at
  /// /<project>/stats/) is made this often, from the world a snapshot is made from; 0: never
  /// (docs/web.md).
  std::chrono::seconds stats_export_interval{86400};
  /// Connections open at once; one more is answered 503 and closed. cobbled lowers it to
  /// what the file-descriptor limit allows (docs/security.md).
  std::size_t max_connections = 4096;
  /// Below this many bytes free on the data directory's file system the server stops
  /// accepting changes (and refuses to start); 0: no watermark (docs/security.md).
  std::size_t min_free_disk = std::size_t{1} << 30;
  /// Workunits in one admin batch (POST .../workunits); more is answered 413 (docs/security.md).
  std::size_t max_batch_items = 10000;

  /// Field-by-field equality.
  bool operator==(const server_config&) const = default;
};

/// Everything in one file.
struct cobble_config {
  std::string source = "<embedded demo>"; ///< File the configuration came from.
  server_config server;
  std::vector<project_config> projects;

  /// Field-by-field equality, `source` included.
  bool operator==(const cobble_config&) const = default;
};

/// A configuration that cannot be used. `what()` reads "FILE:LINE: KEY: message" (or
/// "FILE:LINE: message" when no key applies: YAML syntax errors, unreadable files).
class config_error : public std::runtime_error {
public:
  /// Builds the error; `line` is 1-based, 0 when no line applies.
  config_error(std::string file, int line, std::string key, std::string message);
  /// Name of the file (or `source`) the configuration came from.
  const std::string& file() const { return file_; }
  int line() const { return line_; } ///< 1-based; 0 when the file could not be read.
  const std::string& key() const {
    return key_;
  } ///< Dotted path, e.g. projects[0].apps[1].min_quorum
  /// The message alone, without location.
  const std::string& message() const { return message_; }

private:
  std::string file_;
  int line_;
  std::string key_;
  std::string message_;
};

/// Reads and validates a YAML file. Throws config_error.
cobble_config load_file(const std::filesystem::path& file);

/// Parses and validates YAML text; `source` names it in errors. Throws config_error.
cobble_config load_string(std::string_view yaml, std::string_view source);

/// The embedded demo project (one app, "testapp", for x86_64-pc-linux-gnu, one user "demo").
cobble_config demo();

/// The YAML text of the embedded demo (docs and `cobbled --print-config`).
std::string_view demo_yaml();

/// Checks cross-field rules (quorum <= target <= max_total, unique names, ...). Throws.
void validate(const cobble_config& cfg);

/// Why an app's name and policy are refused, as validate() words it ("app.delay_bound: must
/// be at most ten years ..."); empty when acceptable. Its versions are not looked at (an app
/// added while the server runs has none yet).
std::string app_policy_problem(const app_config& app);

/// Writes `cfg` as YAML, every key spelled out, such that load_string() reads it back to an
/// equal configuration (`cobbled --print-config` of a loaded file).
std::string to_yaml(const cobble_config& cfg);

} // namespace cobble::config
