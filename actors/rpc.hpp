#pragma once

/// Plain C++ forms of a scheduler RPC. net/ turns the BOINC XML into a `sched_request` and a
/// `sched_reply` back into XML; no actor sees XML. Field names follow the BOINC protocol
/// (docs and ../shared/reference/boinc-protocol.md) so the mapping stays obvious.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cobble {

/// Processing resource types of the work-fetch design (CPU first, then coprocessors).
enum class resource_type : std::uint8_t { cpu = 0, nvidia = 1, ati = 2, intel_gpu = 3 };

/// Number of resource types.
inline constexpr int n_resource_types = 4;

/// The name BOINC uses for a resource type ("CPU", "NVIDIA", "ATI", "intel_gpu").
const char* to_string(resource_type x);

/// Parses a BOINC coprocessor type name (case-insensitive; "CUDA" means NVIDIA). Empty or
/// "CPU" gives cpu; unknown names give nullopt.
std::optional<resource_type> parse_resource_type(std::string_view name);

/// What a client asks for, for one resource type.
struct resource_request {
  double req_secs = 0;        ///< Seconds of work wanted for this resource.
  double req_instances = 0;   ///< Idle instances to fill.
  double estimated_delay = 0; ///< Seconds until an instance frees up.

  /// True when the client wants work of this type.
  bool wants_work() const { return req_secs > 0 || req_instances > 0; }
};

/// One coprocessor block (`<coproc_cuda>`, `<coproc_ati>`, `<coproc_intel_gpu>`). The
/// figures after `request` are what plan classes test; 0 or false when the client did not
/// say (a plan class then leaves that test out, as BOINC's does).
struct coproc_description {
  resource_type type = resource_type::nvidia;
  int count = 0;
  double peak_flops = 0;
  resource_request request;
  double available_ram = 0; ///< Bytes free on one device (`<available_ram>`).
  double total_ram = 0;     ///< Bytes on one device (`<totalGlobalMem>`; AMD: `<localRAM>` MB).
  /// NVIDIA: `<drvVersion>` (e.g. 53523 for 535.23); AMD: the `<CALVersion>` a.b.c as
  /// a × 1000000 + b × 10000 + c, as BOINC's plan classes compare them.
  int driver_version = 0;
  int cuda_version = 0; ///< NVIDIA `<cudaVersion>` (e.g. 12020 for 12.2).
  bool have_cuda = false;
  bool have_cal = false;
  bool have_opencl = false;
};

/// The host description a client sends in `<host_info>` and `<time_stats>`.
struct host_description {
  std::string host_cpid;
  std::string domain_name;
  int p_ncpus = 0;
  std::string p_vendor;
  std::string p_model;
  double p_fpops = 0;
  double p_iops = 0;
  double p_membw = 0;
  double m_nbytes = 0;
  double m_swap = 0;
  double d_total = 0;
  double d_free = 0;
  std::string os_name;
  std::string os_version;
  std::string ip_addr; ///< The address the client sees for itself (matches re-attached hosts).
  double on_frac = 0;
  double active_frac = 0;
  double gpu_active_frac = 0;
};

/// An app version the client offers (`<app_versions>`; anonymous platform).
struct client_app_version {
  std::string app_name;
  int version_num = 0;
  std::string platform;
  std::string plan_class;
  double avg_ncpus = 1;
  double flops = 0;
  resource_type coproc_type = resource_type::cpu; ///< cpu when there is no `<coproc>`.
  double coproc_count = 0;
};

/// An uploaded output file as reported in `<result><file_info>`.
struct reported_file {
  std::string name;
  double nbytes = 0;
  std::string md5_cksum;
};

/// One completed job a client reports (`<result>` in the request).
struct reported_result {
  std::string name;
  int state = 0; ///< BOINC result state: 5 success, 3 compute error, 6 aborted, ...
  int exit_status = 0;
  double final_cpu_time = 0;
  double final_elapsed_time = 0;
  std::string platform;
  int version_num = 0;
  std::string plan_class;
  int app_version_num = 0;
  std::string stderr_out;
  std::vector<reported_file> files;
  /// AutoFlops (`<app_units>`, `<raw_flops_per_au>`; Cobble's client library only, BOINC
  /// clients send neither): app units the job did (0: none, counts as one) and the client's
  /// raw_flops_per_au for it (0: none; the server uses T × raw_flops_per_sec / A).
  double app_units = 0;
  double raw_flops_per_au = 0;
};

/// AutoFlops figures of one app version the client has (`<app_unit_versions>`).
struct app_unit_version {
  std::string app_name;
  int version_num = 0;
  std::string plan_class;
  double seconds_per_app_unit = 0; ///< The client's estimate (0: none yet).
  double raw_flops_per_sec = 0;    ///< What a job of it reports as raw FLOPS (0: peak).
};

/// A job the client holds but is not reporting (`<other_results>`).
struct other_result {
  std::string name;
  int app_version_index = -1; ///< Index into `sched_request::app_versions`, -1 if absent.
  std::string plan_class;
};

/// A scheduler request, as parsed from the client's XML.
struct sched_request {
  std::string authenticator;
  std::uint64_t hostid = 0;
  std::int64_t rpc_seqno = 0;
  int core_client_major_version = 0;
  int core_client_minor_version = 0;
  int core_client_release = 0;
  std::string platform_name; ///< "anonymous" under app_info.xml.
  /// Other platforms the client runs, best first (`<alt_platform><name>`; e.g.
  /// i686-pc-linux-gnu on x86_64 Linux).
  std::vector<std::string> alt_platforms;
  /// The code-signing key the client holds for the project (whitespace trimmed; empty: none
  /// yet). The server sends its key, or a signed new one, when this is not its current key.
  std::string code_sign_key;
  /// The volunteer runs more than one client on this machine (cc_config.xml): a host that
  /// looks like an earlier one is not taken for it.
  bool allow_multiple_clients = false;
  bool dont_send_work = false;
  double resource_share_fraction = 0;
  double duration_correction_factor = 1;

  double work_req_seconds = 0; ///< Legacy overall request (older clients).
  resource_request cpu;        ///< cpu_req_secs, cpu_req_instances, estimated_delay.
  std::vector<coproc_description> coprocs;

  host_description host;
  std::vector<reported_result> results;
  std::vector<client_app_version> app_versions;
  std::vector<other_result> other_results;
  /// The request had an `<other_results>` element (7.x clients always send one, empty when
  /// they hold nothing): only then does a missing result mean the client lost it.
  bool other_results_listed = false;
  /// The work sequences the host believes it holds (`<work_sequences><name>`; sent by
  /// Cobble's client library, never by BOINC clients).
  std::vector<std::string> sequences_held;
  /// AutoFlops statistics per app version (Cobble's client library; BOINC clients send none).
  std::vector<app_unit_version> app_unit_versions;

  /// The request for one resource type (for cpu: the cpu_* fields, falling back to
  /// work_req_seconds when a client sends only that).
  resource_request request_for(resource_type t) const;
};

/// A text for the client's event log; `notice` makes it a notice.
struct reply_message {
  std::string text;
  bool notice = false;
};

/// A reference from a workunit or result to a file, with the name the app opens.
struct file_ref {
  std::string file_name;
  std::string open_name;
  bool copy_file = true;
  bool optional = false;
  bool main_program = false; ///< App versions: the file the client runs.
};

/// A file the client must know about: an input to download or an output to upload. URLs are
/// added by net/ from the server's base URL, the project and the file name.
struct file_description {
  std::string name;
  bool is_output = false;
  double nbytes = 0;         ///< Inputs: exact size (0 = unchecked).
  std::string md5_cksum;     ///< Inputs: checksum (empty = unchecked).
  double max_nbytes = 0;     ///< Outputs: size limit.
  std::string xml_signature; ///< Outputs: token the client echoes when uploading (net/).
  bool executable = false;   ///< App files: the client makes it executable.
  /// App files: the code signature of the file (BOINC's hex text); a 7.x client refuses an
  /// app file without a valid one.
  std::string file_signature{};
};

/// An app as sent with a version of it (`<app>`).
struct app_description {
  std::string name;
  std::string user_friendly_name;
  bool non_cpu_intensive = false;
};

/// An app version sent to a host (`<app_version>`): what every host gets (the files, the
/// API version, the flags) and what was worked out for this host (avg_ncpus, flops,
/// cmdline, the coprocessor use and its memory). Its files are among `sched_reply::files`.
struct app_version_description {
  std::string app_name;
  int version_num = 0;
  std::string api_version; ///< Empty: not sent.
  std::string platform;
  std::string plan_class;
  double avg_ncpus = 1;
  double max_ncpus = 1;
  double flops = 0;    ///< Projected FLOPS on this host; 0: not sent (the client's p_fpops).
  std::string cmdline; ///< E.g. `--nthreads 4` of a multi-threaded plan class.
  resource_type coproc_type = resource_type::cpu; ///< cpu: no `<coproc>`.
  double coproc_count = 0;
  double gpu_ram = 0; ///< Bytes of GPU memory the version needs; 0: not sent.
  std::vector<file_ref> files;
  bool dont_throttle = false;
  bool needs_network = false;
  bool is_wrapper = false;
};

/// A workunit as sent to the client.
struct workunit_description {
  std::string name;
  std::string app_name;
  std::string command_line;
  double rsc_fpops_est = 0;
  double rsc_fpops_bound = 0;
  double rsc_memory_bound = 0;
  double rsc_disk_bound = 0;
  std::vector<file_ref> inputs;
};

/// A result (job instance) as sent to the client.
struct result_description {
  std::string name;
  std::string wu_name;
  double report_deadline = 0; ///< Unix time in seconds.
  std::string platform;       ///< Echoes the client's app version; never "anonymous".
  int version_num = 0;
  std::string plan_class;
  std::vector<file_ref> outputs;
  bool report_immediately = false;
  /// AutoFlops (`<peak_flops_per_sec>`, `<predicted_app_units>`, `<est_seconds>`,
  /// `<bound_seconds>`; 0: not sent): peak_flops_per_sec(J), the job's predicted app units
  /// and its completion time estimate and bound on this host. BOINC clients get the same
  /// estimate and bound through rsc_fpops_est / rsc_fpops_bound and their version's flops.
  double peak_flops_per_sec = 0;
  double predicted_app_units = 0;
  double est_seconds = 0;
  double bound_seconds = 0;
};

/// AutoFlops figures of an app (`<app_units_info>` in the reply).
struct app_units_info {
  std::string app_name;
  double est_flops_per_au = 0;  ///< 0: not known yet.
  bool has_cpu_and_gpu = false; ///< The app has both CPU and GPU versions (note 2).
};

/// A scheduler reply, turned into XML by net/.
struct sched_reply {
  std::string project_name;
  std::uint64_t host = 0;              ///< The host this reply is for (not sent as such).
  std::optional<std::uint64_t> hostid; ///< Only on first contact.
  double request_delay = 0;
  std::optional<double> next_rpc_delay;
  std::vector<reply_message> messages;
  bool project_is_down = false;
  bool dont_use_dcf = true;

  std::string user_name;
  std::uint64_t userid = 0;
  std::string team_name; ///< Empty: not in a team (the BOINC Manager shows it).
  double user_total_credit = 0;
  double user_expavg_credit = 0;
  double host_total_credit = 0;
  double host_expavg_credit = 0;

  /// The files of the app versions sent, then the inputs and outputs of the jobs sent.
  std::vector<file_description> files;
  std::vector<app_description> apps;                 ///< Apps of the versions sent.
  std::vector<app_version_description> app_versions; ///< Versions the jobs sent need.
  std::vector<workunit_description> workunits;
  std::vector<result_description> results;
  std::vector<std::string> result_acks;
  std::vector<std::string> result_aborts;
  /// Sequences the request listed that are no longer assigned to the host
  /// (`<work_sequence_revoked>`).
  std::vector<std::string> sequences_revoked;
  /// AutoFlops: est_flops_per_au of the apps of the jobs sent (and of apps with both CPU
  /// and GPU versions, for GPU-only propagation).
  std::vector<app_units_info> app_units;
  /// The project's code-signing public key (BOINC's text form), when the request did not
  /// carry it; with `code_sign_key_signature` (the new key signed with the old private key)
  /// when it carried the previous one.
  std::string code_sign_key;
  std::string code_sign_key_signature;

  /// A reply to a request that could not be served: only a message and a request_delay, as
  /// BOINC servers answer (HTTP 200).
  static sched_reply error(std::string text, double delay);
};

} // namespace cobble
