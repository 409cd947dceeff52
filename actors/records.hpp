#pragma once

/// The durable records that events carry and states hold: apps and their versions, a host's
/// description, a workunit's parameters, a result's report and verdict, a sequence element;
/// the identities of anonymous-platform versions and of work sequences' workunits. Each has
/// `inspect_fields`, the order in which the codec writes its fields (actors/event_codec.hpp).

#include "actors/autoflops.hpp"
#include "actors/compact.hpp"
#include "actors/credit.hpp"
#include "actors/types.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cobble {

/// A file of an app version, as the server keeps it and clients download it.
struct app_file_rec {
  std::string name;      ///< Physical (download) name, immutable: never reused for other bytes.
  std::string open_name; ///< The name the app opens (the client links or copies it so).
  double nbytes = 0;
  std::string md5;
  std::string signature;     ///< BOINC's code signature text of the MD5 (actors/code_sign.hpp).
  bool executable = false;   ///< The client sets the execute bit.
  bool main_program = false; ///< The program the client starts (exactly one per version).
  bool copy_file = false;    ///< Copied into the slot rather than linked.
  friend bool operator==(const app_file_rec&, const app_file_rec&) = default;
};

template <class F>
void inspect_fields(F& f, app_file_rec& x) {
  f(x.name, x.open_name, x.nbytes, x.md5, x.signature, x.executable, x.main_program, x.copy_file);
}

/// An app version a project offers (from the configuration, or added while the server runs).
struct app_version_rec {
  std::uint32_t id = 0; ///< Project-wide app version id, from 1.
  std::string platform;
  int version_num = 0;
  std::string plan_class;
  double avg_ncpus = 1;
  std::uint8_t resource = 0; ///< resource_type: 0 CPU, 1 NVIDIA, 2 ATI, 3 intel_gpu.
  double coproc_count = 0;
  bool deprecated = false; ///< Offered to no host (app_version_deprecated); v6.
  /// The files the server sends (app_version_added); empty for a configured version, which
  /// clients must hold already (anonymous platform). v6.
  std::vector<app_file_rec> files{};
  std::string api_version{}; ///< The BOINC API version the app was built with ("7.22.0"); v6.
  friend bool operator==(const app_version_rec&, const app_version_rec&) = default;
};

/// Fields by the version of the payload that carries the record (project_configured,
/// app_added, app_version_added; snapshots have every field).
template <class F>
void inspect_fields(F& f, app_version_rec& x) {
  f(x.id, x.platform, x.version_num, x.plan_class, x.avg_ncpus, x.resource, x.coproc_count);
  if (f.version >= 6)
    f(x.deprecated, x.files, x.api_version);
}

/// An app and its replication policy (from the configuration).
struct app_rec {
  std::uint32_t id = 0; ///< Index + 1 in the project's app list.
  std::string name;
  std::string user_friendly_name;
  int min_quorum = 2;
  int target_nresults = 2;
  int max_error_results = 3;
  int max_total_results = 10;
  int max_success_results = 6;
  double delay_bound = 604800; ///< Seconds.
  int max_jobs_per_rpc = 10;
  std::uint8_t validator = 0; ///< 0 bitwise, 1 accept_all.
  double rsc_fpops_est = 0;
  double rsc_fpops_bound = 0;
  double rsc_memory_bound = 0;
  double rsc_disk_bound = 0;
  double max_output_nbytes = 0;
  std::vector<std::string> output_names;
  std::vector<app_version_rec> versions;
  bool host_scale_check = false;          ///< Cherry-picking protection (scale probation); v2.
  int max_jobs_per_day = 200;             ///< Initial daily quota per CPU or GPU; v2.
  autoflops_settings autoflops{};         ///< AutoFlops and the credit policy; v3.
  bool one_result_per_user_per_wu = true; ///< No two results of a workunit to one user; v5.
  friend bool operator==(const app_rec&, const app_rec&) = default;
};

template <class F>
void inspect_fields(F& f, app_rec& x) {
  f(x.id, x.name, x.user_friendly_name, x.min_quorum, x.target_nresults, x.max_error_results,
    x.max_total_results, x.max_success_results, x.delay_bound, x.max_jobs_per_rpc, x.validator,
    x.rsc_fpops_est, x.rsc_fpops_bound, x.rsc_memory_bound, x.rsc_disk_bound, x.max_output_nbytes,
    x.output_names, x.versions);
  if (f.version >= 2)
    f(x.host_scale_check, x.max_jobs_per_day);
  if (f.version >= 3)
    f(x.autoflops);
  if (f.version >= 5)
    f(x.one_result_per_user_per_wu);
}

/// What the server keeps of a host's self-description.
struct host_info_rec {
  std::string host_cpid;
  std::string domain_name;
  int p_ncpus = 0;
  std::string p_vendor;
  std::string p_model;
  double p_fpops = 0;
  double p_iops = 0;
  double m_nbytes = 0;
  double d_free = 0;
  std::string os_name;
  std::string os_version;
  std::vector<std::pair<std::uint8_t, int>> coprocs; ///< (resource type, count)
  std::vector<double> coproc_peak_flops;             ///< Parallel to coprocs.
  friend bool operator==(const host_info_rec&, const host_info_rec&) = default;
};

template <class F>
void inspect_fields(F& f, host_info_rec& x) {
  f(x.host_cpid, x.domain_name, x.p_ncpus, x.p_vendor, x.p_model, x.p_fpops, x.p_iops, x.m_nbytes,
    x.d_free, x.os_name, x.os_version, x.coprocs, x.coproc_peak_flops);
}

/// The parameters of a workunit.
struct wu_params {
  std::string command_line;
  double rsc_fpops_est = 0;
  double rsc_fpops_bound = 0;
  double rsc_memory_bound = 0;
  double rsc_disk_bound = 0;
  double delay_bound = 0; ///< Seconds.
  int min_quorum = 0;
  int target_nresults = 0;
  int max_error_results = 0;
  int max_total_results = 0;
  int max_success_results = 0;
  std::vector<file_rec> inputs; ///< name = stored file name (content-addressed), md5, size.
  std::vector<std::string> input_open_names; ///< Parallel to inputs.
  /// AutoFlops: the predicted app units of the job (workunit_created v2; 1 before).
  double predicted_app_units = 1;
  friend bool operator==(const wu_params&, const wu_params&) = default;
};

template <class F>
void inspect_fields(F& f, wu_params& x) {
  f(x.command_line, x.rsc_fpops_est, x.rsc_fpops_bound, x.rsc_memory_bound, x.rsc_disk_bound,
    x.delay_bound, x.min_quorum, x.target_nresults, x.max_error_results, x.max_total_results,
    x.max_success_results, x.inputs, x.input_open_names);
  // In workunit_created since v2 (and snapshots); events of other kinds that carry wu_params
  // at version 1 (sequence_created) leave it at 1.
  if (f.version >= 2)
    f(x.predicted_app_units);
}

/// The identity under which statistics of an anonymous-platform version are kept: one per
/// app and resource type, as the credit design's -2 (CPU), -3 (NVIDIA), -4 (ATI); -5 is
/// Intel GPUs. The high bit keeps them apart from configured version ids.
std::uint32_t anonymous_version_id(std::uint32_t app, std::uint8_t resource);

/// True for ids made by anonymous_version_id.
inline bool is_anonymous_version(std::uint32_t id) {
  return (id & 0x80000000u) != 0;
}

/// "-2", "-3", ... for anonymous ids, the number otherwise.
std::string version_label(std::uint32_t id);

/// The app version a result was sent with, echoed to the client exactly.
/// The two 4-byte members come first so that no padding is left (40 bytes, not 48: with it a
/// result record is 128 bytes and two fit a 256-byte allocation); the encoding keeps the
/// order of inspect_fields below, which is the order of the constructor's arguments.
struct version_echo {
  std::uint32_t app_version_id = 0; ///< The project's version it maps to.
  int version_num = 0;
  shared_str platform; ///< Shared: a handful of values across millions of results.
  shared_str plan_class;
  version_echo() = default;
  version_echo(std::uint32_t id, shared_str platform_, int num, shared_str plan)
    : app_version_id(id), version_num(num), platform(std::move(platform_)),
      plan_class(std::move(plan)) {}
  friend bool operator==(const version_echo&, const version_echo&) = default;
};

template <class F>
void inspect_fields(F& f, version_echo& x) {
  f(x.app_version_id, x.platform, x.version_num, x.plan_class);
}

/// Flags on a report whose numbers are not plausible (stored as reported).
enum report_flags : std::uint8_t {
  /// Elapsed time negative, NaN, infinite or over a year, or not positive for a success.
  flag_bad_elapsed = 1,
  flag_bad_cpu = 2, ///< CPU time negative, NaN, infinite or over a year per CPU.
  /// The (host, version) was under suspicion of cherry picking when it reported (its error
  /// rate over the app's suspicion_error_rate; AutoFlops app_units policy).
  flag_suspect = 4,
  /// App units more than limits.app_units_factor from the job's prediction: not kept in the
  /// report (its app_units are 0), so they stay out of the running means.
  flag_bad_app_units = 8,
};

/// What a host reported about one result.
struct report_rec {
  bool success = false; ///< Client state 5 and outputs uploaded.
  int client_state = 0;
  int exit_status = 0;
  double elapsed = 0;
  double cpu = 0;
  std::uint8_t flags = 0; ///< report_flags
  std::vector<file_rec> outputs;
  /// AutoFlops (result_reported v3): the app units the job reported (0: none, counts as 1)
  /// and its raw_flops_per_au when the client sent it or a raw_flops_per_sec (0: none; the
  /// validator then uses T × peak_flops(J) / A).
  double app_units = 0;
  double raw_flops_per_au = 0;
  friend bool operator==(const report_rec&, const report_rec&) = default;
};

template <class F>
void inspect_fields(F& f, report_rec& x) {
  f(x.success, x.client_state, x.exit_status, x.elapsed, x.cpu, x.flags, x.outputs);
  if (f.version >= 3)
    f(x.app_units, x.raw_flops_per_au);
}

/// A report's app units (1 when the client sent none).
inline double reported_app_units(const report_rec& r) {
  return r.app_units > 0 ? r.app_units : 1.0;
}

/// One result's verdict inside a validation.
struct verdict {
  std::uint32_t index = 0;
  bool valid = false;
  id_type host = 0;
  std::uint32_t app_version_id = 0;
  double elapsed = 0;
  double cpu = 0;
  friend bool operator==(const verdict&, const verdict&) = default;
};

template <class F>
void inspect_fields(F& f, verdict& x) {
  f(x.index, x.valid, x.host, x.app_version_id, x.elapsed, x.cpu);
}

/// What the result of a sequence element uploads: the full state files (the app's output
/// files; the chain can restart from it) or nothing at all (a heartbeat).
enum class seq_element_kind : std::uint8_t { heartbeat = 0, state = 1 };

const char* to_string(seq_element_kind x);

/// One workunit of a sequence chain, as the event that creates it names it.
struct seq_element_rec {
  id_type wu = 0;             ///< In the sequence's id range (sequence_wu_id).
  std::string name;           ///< "<sequence>@<position>[r<replica>][b<branch>]".
  std::uint32_t position = 0; ///< 1-based place in the sequence.
  std::uint8_t replica = 0;   ///< Which parallel chain (0 unless replicated).
  seq_element_kind kind = seq_element_kind::heartbeat;
  friend bool operator==(const seq_element_rec&, const seq_element_rec&) = default;
};

template <class F>
void inspect_fields(F& f, seq_element_rec& x) {
  f(x.wu, x.name, x.position, x.replica, x.kind);
}

/// Scale(V) of one app version, with the PFCmean(V) it was computed from.
struct version_scale {
  std::uint32_t id = 0;
  average_var pfc{};
  double scale = 1;
  friend bool operator==(const version_scale&, const version_scale&) = default;
};

template <class F>
void inspect_fields(F& f, version_scale& x) {
  f(x.id, x.pfc, x.scale);
}

/// One app version's credit data as projects export it (the design's cross-project list).
struct credit_export_rec {
  std::string project;
  std::string app;
  std::string platform;
  std::string plan_class;
  std::uint8_t resource = 0; ///< resource_type of the version.
  bool app_has_cpu_and_gpu = false;
  double expavg_credit = 0; ///< Recent average granted credit.
  double scale = 1;         ///< Scale(V).
  friend bool operator==(const credit_export_rec&, const credit_export_rec&) = default;
};

template <class F>
void inspect_fields(F& f, credit_export_rec& x) {
  f(x.project, x.app, x.platform, x.plan_class, x.resource, x.app_has_cpu_and_gpu, x.expavg_credit,
    x.scale);
}

// -- work sequence identities ---------------------------------------------------

/// Workunits of sequences have ids of their own range, 2^52 + seq * 2^20 + n, so a sequence
/// actor names new workunits without asking the project (plain workunits count from 1 and
/// stay below 2^52; every id stays below 2^53, exact in JSON doubles).
inline constexpr id_type sequence_wu_base = id_type{1} << 52;
inline constexpr id_type max_sequence_id = (id_type{1} << 31) - 1;
inline constexpr std::uint32_t max_sequence_wus = 1u << 20;

/// The id of the n-th workunit (from 0) a sequence creates.
inline id_type sequence_wu_id(id_type seq, std::uint32_t n) {
  return sequence_wu_base + (seq << 20) + n;
}

/// The sequence a workunit id belongs to, or 0 for plain workunits.
inline id_type sequence_of_wu(id_type wu) {
  return wu >= sequence_wu_base ? (wu - sequence_wu_base) >> 20 : 0;
}

/// The name of a sequence element's workunit: "<sequence>@<position>", with "r<replica>" for
/// replicas after the first and "b<branch>" for copies made by a relocation. '@' cannot occur
/// in other workunit names.
std::string sequence_element_name(const std::string& seq, std::uint32_t position,
                                  std::uint8_t replica, std::uint32_t branch);

/// True for names of sequence elements, their results and their files.
inline bool is_sequence_name(std::string_view name) {
  return name.find('@') != std::string_view::npos;
}

} // namespace cobble
