#pragma once

/// Every change of state in Cobble is one of these events (see docs/event-log.md).
///
/// An event is `{seq, time, project, payload}`. The payload is one of the structs below; its
/// kind number is fixed forever (`kind` members) and its encoding is versioned: the first
/// payload byte is the format version, then the fields in `inspect_fields` order. A new field
/// goes at the end and bumps that kind's `payload_version`; decoders accept every older version.

#include "actors/autoflops.hpp"
#include "actors/compact.hpp"
#include "actors/credit.hpp"
#include "actors/types.hpp"
#include "storage/event_store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cobble {

/// The first payload format version (every kind's format at its introduction). Versions are
/// per kind: a kind whose format changed has a `payload_version` member.
inline constexpr std::uint8_t current_payload_version = 1;

/// The format version written today for a payload type: its `payload_version`, else 1.
template <class T>
constexpr std::uint8_t payload_version_of() {
  if constexpr (requires { T::payload_version; })
    return T::payload_version;
  else
    return current_payload_version;
}

/// Entity kinds in event headers (what `cobble log replay --entity KIND:ID` filters on).
enum class entity_kind : std::uint8_t {
  project = 1,
  user = 2,
  host = 3,
  workunit = 4,
  sequence = 5,
};

const char* to_string(entity_kind x);

/// An app version a project offers (from the configuration).
struct app_version_rec {
  std::uint32_t id = 0; ///< Project-wide app version id, from 1.
  std::string platform;
  int version_num = 0;
  std::string plan_class;
  double avg_ncpus = 1;
  std::uint8_t resource = 0; ///< resource_type: 0 CPU, 1 NVIDIA, 2 ATI, 3 intel_gpu.
  double coproc_count = 0;
  friend bool operator==(const app_version_rec&, const app_version_rec&) = default;
};

template <class F>
void inspect_fields(F& f, app_version_rec& x) {
  f(x.id, x.platform, x.version_num, x.plan_class, x.avg_ncpus, x.resource, x.coproc_count);
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
  bool host_scale_check = false;  ///< Cherry-picking protection (scale probation); v2.
  int max_jobs_per_day = 200;     ///< Initial daily quota per CPU or GPU; v2.
  autoflops_settings autoflops{}; ///< AutoFlops and the credit policy; v3.
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
  flag_bad_elapsed = 1, ///< Elapsed time negative, NaN, infinite or over a year.
  flag_bad_cpu = 2,     ///< CPU time negative, NaN, infinite or over a year per CPU.
  /// The (host, version) was under suspicion of cherry picking when it reported (its error
  /// rate over the app's suspicion_error_rate; AutoFlops app_units policy).
  flag_suspect = 4,
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

namespace ev {

/// The project's apps and versions as configured; recorded whenever the configuration changes.
struct project_configured {
  static constexpr std::uint16_t kind = 1;
  /// 2: credit settings, per-app credit settings; 3: per-app autoflops settings; 4: their
  /// host_min_spread.
  static constexpr std::uint8_t payload_version = 4;
  std::string name;
  std::string long_name;
  std::vector<app_rec> apps;
  credit_settings credit{};
};

/// A user account with its authenticator (account key).
struct user_created {
  static constexpr std::uint16_t kind = 2;
  static constexpr std::uint8_t payload_version = 2; ///< 2: team.
  id_type id = 0;
  std::string name;
  std::string email;
  std::string authenticator;
  std::string team{}; ///< Empty: none.
};

/// A host's first scheduler RPC gave it an id.
struct host_registered {
  static constexpr std::uint16_t kind = 3;
  id_type id = 0;
  id_type user = 0;
  host_info_rec info;
};

/// A host's description changed.
struct host_described {
  static constexpr std::uint16_t kind = 4;
  id_type id = 0;
  host_info_rec info;
};

/// Work was created, with its first replicas (target_nresults of them).
struct workunit_created {
  static constexpr std::uint16_t kind = 5;
  static constexpr std::uint8_t payload_version = 2; ///< 2: params.predicted_app_units.
  id_type id = 0;
  std::string name;
  std::uint32_t app = 0;
  wu_params params;
  std::uint32_t n_results = 0;
  std::string submitter; ///< Who created it (admin API caller).
};

/// More replicas of a workunit (after errors, timeouts or an inconclusive validation).
struct results_created {
  static constexpr std::uint16_t kind = 6;
  static constexpr std::uint8_t payload_version = 2; ///< 2: check.
  id_type wu = 0;
  std::uint32_t count = 0;
  std::string reason;
  /// A cherry-picking check (AutoFlops app_units policy): the workunit's min_quorum and
  /// target_nresults grow by `count`, so the result validated alone needs a second opinion.
  bool check = false;
};

/// A result was sent to a host.
struct result_dispatched {
  static constexpr std::uint16_t kind = 7;
  /// 2: peak_flops, jobs_per_day; 3: predicted_app_units.
  static constexpr std::uint8_t payload_version = 3;
  result_ref result;
  id_type host = 0;
  time_us deadline = 0;
  version_echo version;
  double peak_flops = 0; ///< peak_flops(J): peak speed of what the job uses on that host.
  int jobs_per_day = 0;  ///< Initial daily quota of the (host, version) (0: unlimited).
  /// The job's predicted app units (AutoFlops; 1 in older payloads): the host counts them
  /// for a report that carries no app units.
  double predicted_app_units = 1;
};

/// A host reported a result it had been sent.
struct result_reported {
  static constexpr std::uint16_t kind = 8;
  /// 2: the host's scale statistics; 3: report app units, raw_flops_per_au, quota_factor.
  static constexpr std::uint8_t payload_version = 3;
  result_ref result;
  id_type host = 0;
  report_rec report;
  average_var host_pfc{}; ///< PFCmean(H,V) when the host reported.
  bool probation = true;  ///< The (host, version) was on scale probation.
  time_us scale_time = 0; ///< Its host_scale_time.
  /// Cherry-picking countermeasure (app_units policy): an abort multiplies the (host,
  /// version)'s max_jobs_per_day by this (1: no change). Decided by the host actor.
  double quota_factor = 1;
};

/// A result's deadline passed without a report.
struct result_timed_out {
  static constexpr std::uint16_t kind = 9;
  static constexpr std::uint8_t payload_version = 2; ///< 2: quota_factor.
  result_ref result;
  id_type host = 0;
  double quota_factor = 1; ///< As in result_reported, for the timeout.
};

/// The validator compared replicas: verdicts, and the canonical result once there is one.
struct workunit_validated {
  static constexpr std::uint16_t kind = 10;
  static constexpr std::uint8_t payload_version = 2; ///< 2: credit.
  id_type wu = 0;
  std::optional<std::uint32_t> canonical; ///< Set when this validation chose it.
  std::vector<verdict> verdicts;
  std::vector<credit_rec> credit{}; ///< Parallel to verdicts (zero for invalid ones).
};

/// The assimilation hook took the canonical result.
struct workunit_assimilated {
  static constexpr std::uint16_t kind = 11;
  id_type wu = 0;
  std::uint32_t canonical = 0;
};

/// The workunit gave up (too many errors, results or disagreeing successes).
struct workunit_failed {
  static constexpr std::uint16_t kind = 12;
  id_type wu = 0;
  std::string reason;
};

/// The files of a finished workunit were deleted after the grace period.
struct workunit_files_deleted {
  static constexpr std::uint16_t kind = 13;
  id_type wu = 0;
  std::vector<std::string> inputs; ///< Inputs deleted with it (no other workunit used them).
};

template <class F>
void inspect_fields(F& f, workunit_files_deleted& x) {
  f(x.wu, x.inputs);
}

/// A work sequence was created with its first elements (one result per workunit, on every
/// replica chain). Decided by the project (it owns the names); applied by the project (the
/// workunits) and the sequence.
struct sequence_created {
  static constexpr std::uint16_t kind = 14;
  id_type id = 0;
  std::string name;
  std::uint32_t app = 0;
  double max_result_time = 0; ///< Seconds a host may need for one element.
  std::uint8_t replicas = 1;  ///< Parallel chains on different hosts (1 or 2).
  bool accept_all = false;    ///< The app's validator accepts every success.
  wu_params params;           ///< Of every element (min_quorum = target_nresults = 1).
  std::vector<seq_element_rec> elements;
  std::string by; ///< Who created it.
};

/// More elements at the end of every replica chain (the result handler or an operator).
struct sequence_extended {
  static constexpr std::uint16_t kind = 15;
  id_type seq = 0;
  std::vector<seq_element_rec> elements;
  std::string by;
};

/// The sequence has ended: no more elements; what was not reported yet is cancelled and its
/// hosts lose the assignment.
struct sequence_ended {
  static constexpr std::uint16_t kind = 16;
  id_type seq = 0;
  std::string reason;
  std::vector<id_type> cancelled;                       ///< Workunits not yet reported.
  std::vector<std::pair<id_type, std::string>> aborted; ///< (host, result) taken back.
  std::string by;
};

/// A replica chain of the sequence was assigned to a host (by the scheduler or an operator).
struct sequence_assigned {
  static constexpr std::uint16_t kind = 17;
  id_type seq = 0;
  std::uint8_t replica = 0;
  id_type host = 0;
  std::string by; ///< "scheduler" or the operator.
};

/// A replica chain was taken from its host (relocation check or operator). The elements after
/// the last full state upload become a dead branch; copies of them continue the chain.
struct sequence_deassigned {
  static constexpr std::uint16_t kind = 18;
  id_type seq = 0;
  std::uint8_t replica = 0;
  id_type host = 0;
  std::string reason;
  std::uint32_t restart = 0;        ///< Position of the last full state upload kept (0: none).
  std::vector<id_type> dead;        ///< Workunits of the dead branch.
  std::vector<std::string> aborted; ///< Results of the dead branch the host still held.
  std::vector<seq_element_rec> replacements; ///< Copies of the dead positions.
  std::string by;                            ///< "relocation check" or the operator.
  /// Since payload version 2: the restart point's state files (staged as "in_<md5>", with md5
  /// and size) and their open names. The first replacement gets them as inputs: each replaces
  /// the sequence's input of the same open name, or is added. Empty: the original inputs.
  std::vector<file_rec> restart_inputs;
  std::vector<std::string> restart_open_names;       ///< Parallel to restart_inputs.
  static constexpr std::uint8_t payload_version = 2; ///< 2: restart_inputs, restart_open_names.
};

/// Corresponding elements of a replicated sequence were compared across their workunits.
struct sequence_element_checked {
  static constexpr std::uint16_t kind = 19;
  id_type seq = 0;
  std::uint32_t position = 0;
  bool agree = false;
  std::vector<id_type> wus; ///< One per replica, in replica order.
};

/// A replica chain's restart point moved to a later validated full state upload: its state
/// files (the canonical result's outputs, staged in the download area as "in_<md5>") are kept
/// for a relocation; the files of the chain's earlier state uploads are released (deleted
/// after the grace period). Decided by the sequence.
struct sequence_restart_saved {
  static constexpr std::uint16_t kind = 20;
  id_type seq = 0;
  std::uint8_t replica = 0;
  std::uint32_t position = 0;
  id_type wu = 0;                      ///< The element that uploaded the state.
  std::vector<file_rec> files;         ///< name = "in_<md5>", md5, size.
  std::vector<std::string> open_names; ///< Parallel to files.
};

template <class F>
void inspect_fields(F& f, sequence_restart_saved& x) {
  f(x.seq, x.replica, x.position, x.wu, x.files, x.open_names);
}

template <class F>
void inspect_fields(F& f, sequence_created& x) {
  f(x.id, x.name, x.app, x.max_result_time, x.replicas, x.accept_all, x.params, x.elements, x.by);
}
template <class F>
void inspect_fields(F& f, sequence_extended& x) {
  f(x.seq, x.elements, x.by);
}
template <class F>
void inspect_fields(F& f, sequence_ended& x) {
  f(x.seq, x.reason, x.cancelled, x.aborted, x.by);
}
template <class F>
void inspect_fields(F& f, sequence_assigned& x) {
  f(x.seq, x.replica, x.host, x.by);
}
template <class F>
void inspect_fields(F& f, sequence_deassigned& x) {
  f(x.seq, x.replica, x.host, x.reason, x.restart, x.dead, x.aborted, x.replacements, x.by);
  if (f.version >= 2)
    f(x.restart_inputs, x.restart_open_names);
}
template <class F>
void inspect_fields(F& f, sequence_element_checked& x) {
  f(x.seq, x.position, x.agree, x.wus);
}

/// A host learned the verdict on one of its results and updated its statistics for that app
/// version (decided by the host actor, in its own order, from the validator's notice).
struct host_result_validated {
  static constexpr std::uint16_t kind = 21;
  id_type host = 0;
  result_ref result;
  std::uint32_t app_version_id = 0;
  bool valid = false;
  double pfc_sample = 0; ///< PFC(J)/E(J) for PFCmean(H,V); 0: none.
  double et_sample = 0;  ///< elapsed/E(J) for ETmean(H,V); 0: none.
  bool cheat = false;    ///< One-time cheat: error rate reset, scale probation.
  double granted = 0;    ///< Cobblestones granted.
};

template <class F>
void inspect_fields(F& f, host_result_validated& x) {
  f(x.host, x.result, x.app_version_id, x.valid, x.pfc_sample, x.et_sample, x.cheat, x.granted);
}

} // namespace ev

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

namespace ev {

/// The periodic cross-version normalization of one app: min_avg_pfc(A) and Scale(V).
struct credit_normalized {
  static constexpr std::uint16_t kind = 22;
  std::uint32_t app = 0;
  double min_avg_pfc = 0; ///< 0: X undefined.
  std::vector<version_scale> versions{};
};

template <class F>
void inspect_fields(F& f, credit_normalized& x) {
  f(x.app, x.min_avg_pfc, x.versions);
}

} // namespace ev

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

namespace ev {

/// Another server's exported app-version credit data, imported by the operator (replaces the
/// previous import from the same source).
struct credit_imported {
  static constexpr std::uint16_t kind = 23;
  std::string source;
  std::vector<credit_export_rec> records{};
};

template <class F>
void inspect_fields(F& f, credit_imported& x) {
  f(x.source, x.records);
}

template <class F>
void inspect_fields(F& f, project_configured& x) {
  f(x.name, x.long_name, x.apps);
  if (f.version >= 2)
    f(x.credit);
}
template <class F>
void inspect_fields(F& f, user_created& x) {
  f(x.id, x.name, x.email, x.authenticator);
  if (f.version >= 2)
    f(x.team);
}
template <class F>
void inspect_fields(F& f, host_registered& x) {
  f(x.id, x.user, x.info);
}
template <class F>
void inspect_fields(F& f, host_described& x) {
  f(x.id, x.info);
}
template <class F>
void inspect_fields(F& f, workunit_created& x) {
  f(x.id, x.name, x.app, x.params, x.n_results, x.submitter);
}
template <class F>
void inspect_fields(F& f, results_created& x) {
  f(x.wu, x.count, x.reason);
  if (f.version >= 2)
    f(x.check);
}
template <class F>
void inspect_fields(F& f, result_dispatched& x) {
  f(x.result, x.host, x.deadline, x.version);
  if (f.version >= 2)
    f(x.peak_flops, x.jobs_per_day);
  if (f.version >= 3)
    f(x.predicted_app_units);
}
template <class F>
void inspect_fields(F& f, result_reported& x) {
  f(x.result, x.host, x.report);
  if (f.version >= 2)
    f(x.host_pfc, x.probation, x.scale_time);
  if (f.version >= 3)
    f(x.quota_factor);
}
template <class F>
void inspect_fields(F& f, result_timed_out& x) {
  f(x.result, x.host);
  if (f.version >= 2)
    f(x.quota_factor);
}
template <class F>
void inspect_fields(F& f, workunit_validated& x) {
  f(x.wu, x.canonical, x.verdicts);
  if (f.version >= 2)
    f(x.credit);
}
template <class F>
void inspect_fields(F& f, workunit_assimilated& x) {
  f(x.wu, x.canonical);
}
template <class F>
void inspect_fields(F& f, workunit_failed& x) {
  f(x.wu, x.reason);
}

/// One raw_flops_per_au value of a validated job, by device class.
struct flops_sample {
  double value = 0;
  bool gpu = false;
  friend bool operator==(const flops_sample&, const flops_sample&) = default;
};

template <class F>
void inspect_fields(F& f, flops_sample& x) {
  f(x.value, x.gpu);
}

/// AutoFlops statistics of an app learned from one validation (decided by the validator,
/// applied by the project): the job's actual (canonical result) and predicted app units,
/// and the raw_flops_per_au of each valid replica that counts (with a reference job, only
/// the reference job's).
struct autoflops_sampled {
  static constexpr std::uint16_t kind = 24;
  std::uint32_t app = 0;
  id_type wu = 0;
  double predicted = 0; ///< 0: no app-unit sample (e.g. a late replica).
  double actual = 0;
  std::vector<flops_sample> samples{};
};

template <class F>
void inspect_fields(F& f, autoflops_sampled& x) {
  f(x.app, x.wu, x.predicted, x.actual, x.samples);
}

} // namespace ev

/// Any event payload.
using payload = std::variant<
  ev::project_configured, ev::user_created, ev::host_registered, ev::host_described,
  ev::workunit_created, ev::results_created, ev::result_dispatched, ev::result_reported,
  ev::result_timed_out, ev::workunit_validated, ev::workunit_assimilated, ev::workunit_failed,
  ev::workunit_files_deleted, ev::sequence_created, ev::sequence_extended, ev::sequence_ended,
  ev::sequence_assigned, ev::sequence_deassigned, ev::sequence_element_checked,
  ev::sequence_restart_saved, ev::host_result_validated, ev::credit_normalized, ev::credit_imported,
  ev::autoflops_sampled>;

/// A decoded event.
struct event {
  std::uint64_t seq = 0;     ///< 0 until the log assigns it.
  time_us time = 0;          ///< When the decision was made; apply reads time only from here.
  std::uint16_t project = 0; ///< Index of the project in the configuration.
  payload data;
};

/// The kind number of a payload.
std::uint16_t kind_of(const payload& p);

/// The payload format version written today for a kind (0 for an unknown kind).
std::uint8_t payload_version(std::uint16_t kind);

/// The name of a kind ("result_reported"), for logs and the CLI.
const char* kind_name(std::uint16_t kind);

/// The entity an event is about (its header), e.g. {workunit, 17}.
std::pair<entity_kind, id_type> entity_of(const payload& p);

/// True when the event concerns that entity (for `--entity` filters): a host is touched by
/// its registration and every dispatch, report and timeout of its results.
bool touches(const event& e, entity_kind kind, id_type id);

/// The host an event concerns, if any (registration, description, dispatch, report, timeout).
std::optional<id_type> host_of(const payload& p);

/// The hosts a sequence event takes results or assignments from or gives them to.
std::vector<id_type> hosts_of_sequence_event(const payload& p);

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

/// The result an event concerns, if any.
std::optional<result_ref> result_of(const payload& p);

/// Encodes an event into a log record (seq is copied; the log assigns it on append).
storage::event_record to_record(const event& e);

/// Decodes a log record; nullopt when the kind is unknown or the payload does not decode.
std::optional<event> from_record(const storage::event_record& r);

/// One line of text describing an event (the CLI's `log tail`).
std::string describe(const event& e);

} // namespace cobble
