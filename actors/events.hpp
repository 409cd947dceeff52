#pragma once

/// Every change of state in Cobble is one of these events (see docs/event-log.md).
///
/// An event is `{seq, time, project, payload}`. The payload is one of the structs below; its
/// kind number is fixed forever (`kind` members) and its encoding is versioned: the first
/// payload byte is the format version, then the fields in `inspect_fields` order. A new field
/// goes at the end and bumps that kind's `payload_version`; decoders accept every older version.
///
/// Beside the payloads: the records they carry (actors/records.hpp), their encoding
/// (actors/event_codec.hpp), the states they concern (actors/routing.hpp) and their text
/// (actors/event_text.hpp).

#include "actors/credit.hpp"
#include "actors/records.hpp"
#include "actors/types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
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

namespace ev {

/// The project's apps and versions as configured; recorded whenever the configuration changes.
struct project_configured {
  static constexpr std::uint16_t kind = 1;
  /// 2: credit settings, per-app credit settings; 3: per-app autoflops settings; 4: their
  /// host_min_spread; 5: per-app one_result_per_user_per_wu; 6: app versions' files,
  /// api_version and deprecation. app_added and app_version_added carry the same records
  /// and keep the same version (static_assert below).
  static constexpr std::uint8_t payload_version = 6;
  std::string name;
  std::string long_name;
  std::vector<app_rec> apps;
  credit_settings credit{};
};

/// A user account with its authenticator (account key): made by the operator (configuration,
/// admin API) or by a volunteer (create_account.php, the web site). A team it names that the
/// directory lacks is added to it (configuration teams have no team_created).
struct user_created {
  static constexpr std::uint16_t kind = 2;
  /// 2: team; 3: password and profile.
  static constexpr std::uint8_t payload_version = 3;
  id_type id = 0;
  std::string name;
  std::string email;
  std::string authenticator;
  std::string team{};   ///< Empty: none.
  std::string passwd{}; ///< As stored (user_rec::passwd); empty: none.
  std::string country{};
  std::string postal_code{};
  std::string cross_project_id{}; ///< 32 random hex digits (user_rec::cross_project_id).
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
  /// 2: params.predicted_app_units; 3: batch_key, batch_digest, batch_size.
  static constexpr std::uint8_t payload_version = 3;
  id_type id = 0;
  std::string name;
  std::uint32_t app = 0;
  wu_params params;
  std::uint32_t n_results = 0;
  std::string submitter; ///< Who created it (admin API caller).
  /// On the first workunit of a batch created under an idempotency key: the key, the digest
  /// of the request and the batch's size (its workunits have the ids id .. id+size-1).
  /// Empty on every other workunit.
  std::string batch_key{};
  std::string batch_digest{};
  std::uint32_t batch_size = 0;
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
  /// 2: the host's scale statistics; 3: report app units, raw_flops_per_au, quota_factor;
  /// 4: late.
  static constexpr std::uint8_t payload_version = 4;
  result_ref result;
  id_type host = 0;
  report_rec report;
  average_var host_pfc{}; ///< PFCmean(H,V) when the host reported.
  bool probation = true;  ///< The (host, version) was on scale probation.
  time_us scale_time = 0; ///< Its host_scale_time.
  /// Cherry-picking countermeasure (app_units policy): an abort multiplies the (host,
  /// version)'s max_jobs_per_day by this (1: no change). Decided by the host actor.
  double quota_factor = 1;
  /// The result was over when the report came (timed out, or written off) on this host, and
  /// its workunit could still use it: decided by the project (project_logic::late_reports),
  /// applied over the earlier outcome; the host's statistics are left as they were.
  bool late = false;
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
  if (f.version >= 3)
    f(x.passwd, x.country, x.postal_code, x.cross_project_id);
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
  if (f.version >= 3)
    f(x.batch_key, x.batch_digest, x.batch_size);
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
  if (f.version >= 4)
    f(x.late);
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

/// An output file of a result finished uploading: the server's own size and MD5 of what it
/// stored (hashed as it was written), never the client's. The validator compares these.
/// Decided by the project when the upload handler stored the last byte.
struct output_received {
  static constexpr std::uint16_t kind = 25;
  result_ref result;
  id_type host = 0;        ///< The host the result was sent to (that signed the upload).
  std::uint32_t index = 0; ///< Which of the app's outputs ("<result>_<index>").
  file_rec file;           ///< name "<result>_<index>", size and MD5 as stored.
};

template <class F>
void inspect_fields(F& f, output_received& x) {
  f(x.result, x.host, x.index, x.file);
}

/// An operator added an app while the server runs (admin API: POST .../apps). Decided and
/// applied by the project; the app's id is the next index + 1.
struct app_added {
  static constexpr std::uint16_t kind = 26;
  /// The records are written at the version of the payload that carries them.
  static constexpr std::uint8_t payload_version = 6;
  app_rec app;
  std::string by; ///< Who added it.
};

template <class F>
void inspect_fields(F& f, app_added& x) {
  f(x.app, x.by);
}

/// An operator added a version of an app, with its signed files (admin API: POST
/// .../apps/A/versions). Decided and applied by the project; the world creates the version's
/// statistics.
struct app_version_added {
  static constexpr std::uint16_t kind = 27;
  static constexpr std::uint8_t payload_version = 6; ///< As app_added.
  std::uint32_t app = 0;
  app_version_rec version;
  std::string by;
};

template <class F>
void inspect_fields(F& f, app_version_added& x) {
  f(x.app, x.version, x.by);
}

/// A version stopped (or started again) being offered to hosts. Results already sent with it
/// are unaffected.
struct app_version_deprecated {
  static constexpr std::uint16_t kind = 28;
  std::uint32_t app = 0;
  std::uint32_t version = 0;
  bool deprecated = true; ///< False: offered again.
  std::string by;
};

template <class F>
void inspect_fields(F& f, app_version_deprecated& x) {
  f(x.app, x.version, x.deprecated, x.by);
}

/// The project's code-signing public key, first or next (BOINC's text form). A next key
/// carries its own text signed with the previous private key (`<code_sign_key_signature>`),
/// which a client holding the previous key checks before it accepts the new one.
struct code_sign_key_added {
  static constexpr std::uint16_t kind = 29;
  std::string public_key;
  std::string signature; ///< Empty for the first key.
  std::string by;
};

template <class F>
void inspect_fields(F& f, code_sign_key_added& x) {
  f(x.public_key, x.signature, x.by);
}

/// How a host that came without its host id was recognised (host_reattached::match).
enum class host_match : std::uint8_t {
  cpid = 1, ///< The client's cross-project id (CPID), among the user's hosts.
  /// A client without a known CPID, by its host name, OS, CPU model and memory (traits_key),
  /// unless it runs beside other clients (allow_multiple_clients).
  traits = 2,
};

/// A client that came without a host id (attached again after a detach, or reinstalled with
/// its data kept) was recognised as a host of the same user, newest first: it keeps its id,
/// credit and history, and is told its id in the reply. Decided by project_logic::reattach.
struct host_reattached {
  static constexpr std::uint16_t kind = 30;
  id_type host = 0;
  id_type user = 0;
  std::uint8_t match = static_cast<std::uint8_t>(host_match::cpid);
};

template <class F>
void inspect_fields(F& f, host_reattached& x) {
  f(x.host, x.user, x.match);
}

/// Why a result was written off (result_written_off::reason).
enum class write_off_reason : std::uint8_t {
  /// The client attached again without it (BOINC's "client detached"): it no longer has the
  /// job, so waiting for its deadline would only delay the workunit.
  detached = 1,
  /// The client no longer lists it in `<other_results>` (a project reset, a lost reply), and it
  /// could not be resent (recover_lost): too close to its deadline, no longer needed, or the
  /// host can no longer run its version.
  lost = 2,
};

/// A result in progress was given up before its deadline: it is over (outcome
/// client_detached, not an error of the host) and the workunit gets a replacement at once.
/// Decided by host_logic::write_off.
struct result_written_off {
  static constexpr std::uint16_t kind = 31;
  result_ref result;
  id_type host = 0;
  std::uint8_t reason = static_cast<std::uint8_t>(write_off_reason::detached);
};

template <class F>
void inspect_fields(F& f, result_written_off& x) {
  f(x.result, x.host, x.reason);
}

/// A result in progress that the client no longer listed was sent to it again, with a new
/// deadline (BOINC's "resent lost task"): now + half the time it had, never earlier than the
/// old deadline nor later than a delay bound from now. Decided by project_logic::recover_lost.
struct result_resent {
  static constexpr std::uint16_t kind = 32;
  result_ref result;
  id_type host = 0;
  time_us deadline = 0;
};

template <class F>
void inspect_fields(F& f, result_resent& x) {
  f(x.result, x.host, x.deadline);
}

/// A volunteer changed their account (am_set_info.php, the web site): the account's editable
/// fields as they are now, all of them. `team` is the team's name; empty: in no team.
/// Decided by project_logic::change_account.
struct user_changed {
  static constexpr std::uint16_t kind = 33;
  id_type id = 0;
  std::string name;
  std::string email;
  std::string passwd;
  std::string country;
  std::string postal_code;
  std::string url;
  std::string team;
};

template <class F>
void inspect_fields(F& f, user_changed& x) {
  f(x.id, x.name, x.email, x.passwd, x.country, x.postal_code, x.url, x.team);
}

/// A volunteer made a team (create_team.php, the web site) and joined it. Decided by
/// project_logic::create_team.
struct team_created {
  static constexpr std::uint16_t kind = 34;
  id_type id = 0;
  std::string name;
  id_type founder = 0;
  std::string url;
  std::string description;
  std::string country;
};

template <class F>
void inspect_fields(F& f, team_created& x) {
  f(x.id, x.name, x.founder, x.url, x.description, x.country);
}

/// An operator cancelled the workunit (`cobble work cancel`, the admin API): no replica is
/// sent any more, every result not reported yet is over as not needed, the hosts still
/// running one lose it (the client is told to abort it at its next RPC), and the workunit ends
/// cancelled (not failed), its files deleted after the grace period. Decided by
/// project_logic::cancel_workunit.
struct workunit_cancelled {
  static constexpr std::uint16_t kind = 35;
  id_type wu = 0;
  std::string reason;
  std::vector<std::pair<id_type, std::string>> aborted; ///< (host, result) taken back.
  std::string by;                                       ///< Who cancelled it.
};

template <class F>
void inspect_fields(F& f, workunit_cancelled& x) {
  f(x.wu, x.reason, x.aborted, x.by);
}

static_assert(app_added::payload_version == project_configured::payload_version
                && app_version_added::payload_version == project_configured::payload_version,
              "app records are written at the version of their payload: keep these equal");

} // namespace ev

/// Any event payload.
using payload = std::variant<
  ev::project_configured, ev::user_created, ev::host_registered, ev::host_described,
  ev::workunit_created, ev::results_created, ev::result_dispatched, ev::result_reported,
  ev::result_timed_out, ev::workunit_validated, ev::workunit_assimilated, ev::workunit_failed,
  ev::workunit_files_deleted, ev::sequence_created, ev::sequence_extended, ev::sequence_ended,
  ev::sequence_assigned, ev::sequence_deassigned, ev::sequence_element_checked,
  ev::sequence_restart_saved, ev::host_result_validated, ev::credit_normalized, ev::credit_imported,
  ev::autoflops_sampled, ev::output_received, ev::app_added, ev::app_version_added,
  ev::app_version_deprecated, ev::code_sign_key_added, ev::host_reattached, ev::result_written_off,
  ev::result_resent, ev::user_changed, ev::team_created, ev::workunit_cancelled>;

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

} // namespace cobble
