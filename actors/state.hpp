#pragma once

/// The state the actors own, and the pure `apply` functions that advance it by one event.
///
/// Each actor owns one of these structs (project_state, host_state, app_version_state); the
/// `world` holds all of them for recovery, snapshots and offline replay. `apply(state, event)`
/// reads nothing but its arguments: no clock, no randomness, no I/O. Members marked "derived"
/// are indices rebuilt by `rebuild_indices` after decoding; they are not part of a snapshot
/// and not compared by `==`.

#include "actors/events.hpp"
#include "actors/records.hpp"
#include "actors/sequence_state.hpp"
#include "actors/user_credit.hpp"

#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cobble {

// -- project ------------------------------------------------------------------

/// BOINC's server state of a result.
enum class result_state : std::uint8_t { unsent = 0, in_progress = 1, over = 2 };

/// How a result ended (meaningful once `over`).
enum class result_outcome : std::uint8_t {
  none = 0,
  success = 1,
  client_error = 2,
  no_reply = 3,   ///< Timed out.
  didnt_need = 4, ///< Not sent: the workunit finished first.
  /// Written off: the client attached again without it (result_written_off). Not an error of
  /// the host, as in BOINC; the workunit gets a replacement at once.
  client_detached = 5,
};

/// The validator's verdict on a result.
enum class validate_state : std::uint8_t { init = 0, valid = 1, invalid = 2 };

/// The life of a workunit.
/// `cancelled`: by an operator (workunit_cancelled), which is not a failure of the work.
enum class wu_state : std::uint8_t {
  active = 0,
  validated = 1,
  assimilated = 2,
  failed = 3,
  cancelled = 4
};

/// Ended without a canonical result to keep: failed or cancelled.
inline bool ended_unfinished(wu_state s) {
  return s == wu_state::failed || s == wu_state::cancelled;
}

const char* to_string(result_state x);
const char* to_string(result_outcome x);
const char* to_string(validate_state x);
const char* to_string(wu_state x);
/// The state named as to_string names it ("failed"); nullopt for any other text.
std::optional<wu_state> parse_wu_state(std::string_view name);

/// What the host knew of its scale for the result's version when it reported
/// (result_reported): what the validator needs to compute Scale(H).
struct reported_scale {
  average_var host_pfc{}; ///< PFCmean(H,V).
  time_us scale_time = 0; ///< host_scale_time(H,V).
  friend bool operator==(const reported_scale&, const reported_scale&) = default;
};

/// One replica of a workunit. Compact (issue #8): the app version is echoed through shared
/// strings, and what exists only once the result was sent back (its report, scale, outputs
/// and credit) lives on the heap, so a queued result takes at most 128 bytes and two of them (a
/// workunit's usual replication) fit one 256-byte allocation.
struct result_rec {
  result_state state = result_state::unsent;
  result_outcome outcome = result_outcome::none;
  validate_state validation = validate_state::init;
  bool probation = true; ///< The (host, version) was on scale probation when it reported.
  id_type host = 0;
  time_us sent = 0;
  time_us deadline = 0;
  time_us received = 0;
  version_echo version;
  boxed<report_rec> report;    ///< Read as `report->x`; empty (all zero) until reported.
  double peak_flops = 0;       ///< peak_flops(J) at dispatch.
  boxed<reported_scale> scale; ///< Read as `scale->x`; set with the report.
  boxed<credit_rec> credit{};  ///< Claimed and granted credit, once validated (`credit->x`).
  /// The server's digests of the outputs that finished uploading (output_received), by
  /// output index; an entry with an empty name has not arrived. What the validator compares.
  boxed<std::vector<file_rec>> arrived{};
  friend bool operator==(const result_rec&, const result_rec&) = default;
};
static_assert(sizeof(result_rec) <= 128, "two results per workunit must fit 256 bytes");

/// A result's state in words for people (the operator pages, the CLI's tables): "unsent",
/// "in progress", "waiting for validation", "valid", "invalid", "aborted", "client error",
/// "timed out", "not needed" or "written off".
const char* result_words(const result_rec& r);

/// Encodes the scale's two fields where they were before they moved into a box (snapshot
/// format unchanged).
template <class F>
void inspect_fields(F& f, result_rec& x) {
  auto scale = *x.scale;
  f(x.state, x.outcome, x.validation, x.host, x.sent, x.deadline, x.received, x.version, x.report,
    x.peak_flops, scale.host_pfc, x.probation, scale.scale_time, x.credit, x.arrived);
  if constexpr (requires { f.r; }) // decoding
    x.scale = scale;
}

/// What a workunit of a work sequence knows of its place in it.
struct seq_link {
  id_type seq = 0;
  std::uint8_t replica = 0;
  std::uint32_t position = 0;
  seq_element_kind kind = seq_element_kind::heartbeat;
  bool replicated = false;              ///< Validated across replicas, not on its own.
  seq_check check = seq_check::pending; ///< Replicated: the comparison with the other replica.
  bool dead = false;                    ///< In a dead branch, or cancelled by the sequence's end.
  /// A full state upload, assimilated: its state files in the download area ("in_<md5>"),
  /// kept (and counted in input_refs) until released.
  std::vector<std::string> staged;
  /// When the state files were released (a later restart point of the chain, a dead
  /// branch or the sequence's end); 0: kept. They are deleted a grace period after this.
  time_us released = 0;
  friend bool operator==(const seq_link&, const seq_link&) = default;
};

template <class F>
void inspect_fields(F& f, seq_link& x) {
  f(x.seq, x.replica, x.position, x.kind, x.replicated, x.check, x.dead, x.staged, x.released);
}

/// A workunit with its results (result i is named "<name>_<i>").
/// The small members come last so that padding is not repeated between them (152 bytes, not
/// 168); the encoding follows inspect_fields below, not this order.
struct workunit_rec {
  id_type id = 0;
  std::string name;
  /// Shared with the workunit before it when equal (a batch): read as `params->x`.
  shared_value<wu_params> params;
  std::string failure;
  time_us created = 0;
  time_us finished = 0;
  std::vector<result_rec> results;
  heap_optional<seq_link> sequence; ///< Set for the elements of work sequences.
  std::uint32_t app = 0;
  std::optional<std::uint32_t> canonical;
  wu_state state = wu_state::active;
  bool files_deleted = false; ///< Uploads and unused inputs removed after the grace period.
  friend bool operator==(const workunit_rec&, const workunit_rec&) = default;
};

template <class F>
void inspect_fields(F& f, workunit_rec& x) {
  f(x.id, x.name, x.app, x.params, x.state, x.canonical, x.failure, x.created, x.finished,
    x.files_deleted, x.results, x.sequence);
}

/// The workunits of a project by id, in id order. Plain workunits have dense ids from 1
/// (next_wu), so they live in a deque indexed by id - 1: no hash node, no bucket, no
/// rehashing. Other ids (work sequences' range, or a gap) go to an ordered map. The interface
/// is the part of a map's that the code uses; elements are `pair<const id_type, workunit_rec>`.
class wu_table {
public:
  using value_type = std::pair<const id_type, workunit_rec>;

  template <bool Const>
  class iter {
  public:
    using table_t = std::conditional_t<Const, const wu_table, wu_table>;
    using map_it = std::conditional_t<Const, std::map<id_type, workunit_rec>::const_iterator,
                                      std::map<id_type, workunit_rec>::iterator>;
    using ref_t = std::conditional_t<Const, const value_type&, value_type&>;
    using ptr_t = std::conditional_t<Const, const value_type*, value_type*>;
    iter() = default;
    iter(table_t* t, std::size_t i, map_it m) : t_(t), i_(i), m_(m) {}
    operator iter<true>() const { return {t_, i_, m_}; } // NOLINT
    ref_t operator*() const {
      if (i_ < t_->dense_.size())
        return t_->dense_[i_];
      return *m_;
    }
    ptr_t operator->() const { return &**this; }
    iter& operator++() {
      if (i_ < t_->dense_.size())
        ++i_;
      else
        ++m_;
      return *this;
    }
    friend bool operator==(const iter& a, const iter& b) { return a.i_ == b.i_ && a.m_ == b.m_; }

  private:
    friend class wu_table;
    table_t* t_ = nullptr;
    std::size_t i_ = 0;
    map_it m_{};
  };
  using iterator = iter<false>;
  using const_iterator = iter<true>;

  iterator begin() { return {this, 0, sparse_.begin()}; }
  iterator end() { return {this, dense_.size(), sparse_.end()}; }
  const_iterator begin() const { return {this, 0, sparse_.begin()}; }
  const_iterator end() const { return {this, dense_.size(), sparse_.end()}; }

  iterator find(id_type id) {
    if (id >= 1 && id <= dense_.size())
      return {this, id - 1, sparse_.begin()};
    auto m = sparse_.find(id);
    return m == sparse_.end() ? end() : iterator{this, dense_.size(), m};
  }
  const_iterator find(id_type id) const {
    if (id >= 1 && id <= dense_.size())
      return {this, id - 1, sparse_.begin()};
    auto m = sparse_.find(id);
    return m == sparse_.end() ? end() : const_iterator{this, dense_.size(), m};
  }
  std::size_t count(id_type id) const { return find(id) == end() ? 0 : 1; }
  /// The first workunit whose id is at least `id` (sparse ids are all above the dense ones).
  const_iterator lower_bound(id_type id) const {
    if (id <= dense_.size())
      return {this, id == 0 ? 0 : id - 1, sparse_.begin()};
    return {this, dense_.size(), sparse_.lower_bound(id)};
  }
  workunit_rec& at(id_type id);
  const workunit_rec& at(id_type id) const;
  /// The workunit with this id, created (default) when there is none.
  workunit_rec& operator[](id_type id);
  std::size_t size() const { return dense_.size() + sparse_.size(); }
  bool empty() const { return size() == 0; }
  void clear() {
    dense_.clear();
    sparse_.clear();
  }

  friend bool operator==(const wu_table& a, const wu_table& b);

  template <class Encoder>
  void codec_put(Encoder& e) const {
    // As the map it replaces: count, then (id, workunit) in id order.
    e.w.put_varint(size());
    for (const auto& [id, wu] : *this) {
      e.put(id);
      e.put(wu);
    }
  }
  template <class Decoder>
  void codec_get(Decoder& d) {
    clear();
    auto n = d.r.get_varint();
    if (n > d.r.remaining()) {
      d.r.set_failed();
      return;
    }
    for (std::uint64_t i = 0; i < n && !d.r.failed(); ++i) {
      id_type id = 0;
      d.get(id);
      if (count(id)) {
        d.r.set_failed(); // a duplicate id
        return;
      }
      auto& wu = (*this)[id];
      d.get(wu);
      // Workunits of a batch share their parameters, as apply makes them.
      if (auto prev = find(id - 1); prev != end())
        wu.params.share_if_equal(prev->second.params);
    }
  }

private:
  std::deque<value_type> dense_;           ///< Ids 1..dense_.size().
  std::map<id_type, workunit_rec> sparse_; ///< Every other id (all above the dense ones).
};

/// The project's directory entry of a work sequence (the sequence's actor owns the rest).
struct seq_entry {
  id_type id = 0;
  std::string name;
  std::uint32_t app = 0;
  double max_result_time = 0;
  wu_params params;           ///< Of every element.
  std::vector<id_type> hosts; ///< Assigned host per replica chain; 0: unassigned.
  bool ended = false;
  friend bool operator==(const seq_entry&, const seq_entry&) = default;
};

template <class F>
void inspect_fields(F& f, seq_entry& x) {
  f(x.id, x.name, x.app, x.max_result_time, x.params, x.hosts, x.ended);
}

/// A user account.
struct user_rec {
  id_type id = 0;
  std::string name;
  std::string email;
  std::string authenticator;
  time_us created = 0;
  credit_totals credit{}; ///< Total and recent average credit.
  std::string team{};     ///< Empty: none.
  /// The password as stored (snapshot 14): an Argon2id string (libsodium's crypto_pwhash_str)
  /// of what the BOINC protocol sends, md5(password + lowercase e-mail); empty: the account
  /// has no password (made by the operator) and logs in only with its account key.
  std::string passwd{};
  std::string country{};     ///< As the volunteer chose it; empty: none (snapshot 14).
  std::string postal_code{}; ///< Snapshot 14.
  std::string url{};         ///< The volunteer's web page; empty: none (snapshot 14).
  /// 32 random hex digits, never shown: the public cross-project id is
  /// md5(cross_project_id + e-mail) (public_cpid). Empty for accounts made before payload 3
  /// of user_created (snapshot 14).
  std::string cross_project_id{};
  /// Credit per app and per day (snapshot 16), derived from validations; empty until the
  /// account's first grant (8 bytes for accounts that never earn credit).
  heap_optional<user_credit> credit_detail{};
  friend bool operator==(const user_rec&, const user_rec&) = default;
};

template <class F>
void inspect_fields(F& f, user_rec& x) {
  f(x.id, x.name, x.email, x.authenticator, x.created, x.credit, x.team, x.passwd, x.country,
    x.postal_code, x.url, x.cross_project_id, x.credit_detail);
}

/// A team in the project's directory (snapshot 14). Credit stays in project_state::teams,
/// by name, as before the directory.
struct team_rec {
  id_type id = 0;
  std::string name;
  id_type founder = 0; ///< The user who made it (0: a team named in the configuration).
  time_us created = 0;
  std::string url{};
  std::string description{};
  std::string country{};
  friend bool operator==(const team_rec&, const team_rec&) = default;
};

template <class F>
void inspect_fields(F& f, team_rec& x) {
  f(x.id, x.name, x.founder, x.created, x.url, x.description, x.country);
}

/// The key of a name or e-mail address that must be unique regardless of case: ASCII letters
/// in lower case, everything else as it is.
std::string fold_case(std::string_view text);

/// The project's record of a host: who owns it (the host actor keeps the rest).
struct host_reg {
  id_type id = 0;
  id_type user = 0;
  time_us created = 0;
  credit_totals credit{}; ///< Total and recent average credit.
  /// cpid_key() of the CPID the host last reported (0: none); snapshot 10.
  std::uint64_t cpid = 0;
  /// traits_key() of the host's last description (0: too little to match on); snapshot 13.
  std::uint64_t traits = 0;
  friend bool operator==(const host_reg&, const host_reg&) = default;
};

template <class F>
void inspect_fields(F& f, host_reg& x) {
  f(x.id, x.user, x.created, x.credit, x.cpid, x.traits);
}

/// A stable 64-bit key of a client's cross-project id (FNV-1a of its text; 0 for none), so
/// that hosts are found by CPID without keeping the 32-digit text per host. Collisions only
/// matter between one user's hosts.
std::uint64_t cpid_key(std::string_view cpid);

/// A stable 64-bit key of what BOINC's scheduler compares to find a client that lost its CPID
/// among its user's hosts: host name, OS, CPU model and memory (BOINC also compares the
/// client's IP address, which Cobble does not keep). 0 when the host name, OS or CPU model
/// is empty: too little to tell machines apart.
std::uint64_t traits_key(const host_info_rec& info);

/// Counters of a project, derived from its events.
struct project_counters {
  std::uint64_t workunits_created = 0;
  std::uint64_t results_created = 0;
  std::uint64_t results_dispatched = 0;
  std::uint64_t results_reported = 0;
  std::uint64_t results_timed_out = 0;
  std::uint64_t workunits_validated = 0;
  std::uint64_t workunits_assimilated = 0;
  std::uint64_t workunits_failed = 0;
  std::uint64_t hosts_reattached = 0;    ///< host_reattached (snapshot 10).
  std::uint64_t results_written_off = 0; ///< result_written_off (snapshot 10).
  std::uint64_t results_resent = 0;      ///< result_resent (snapshot 11).
  std::uint64_t results_late = 0;        ///< Late reports accepted (snapshot 12).
  std::uint64_t workunits_cancelled = 0; ///< workunit_cancelled (snapshot 15).
  friend bool operator==(const project_counters&, const project_counters&) = default;
};

template <class F>
void inspect_fields(F& f, project_counters& x) {
  f(x.workunits_created, x.results_created, x.results_dispatched, x.results_reported,
    x.results_timed_out, x.workunits_validated, x.workunits_assimilated, x.workunits_failed,
    x.hosts_reattached, x.results_written_off, x.results_resent, x.results_late,
    x.workunits_cancelled);
}

/// How long a project holds an admin batch's idempotency key (24 h), and how many keys it
/// holds at most (the oldest go first). Fixed, not configured: replay must prune as the live
/// project did.
inline constexpr time_us batch_key_retention = 86'400'000'000;
inline constexpr std::size_t max_batch_keys = 10'000;

/// One of the project's code-signing public keys, oldest first (code_sign_key_added); the
/// last is the current one.
struct code_sign_key_rec {
  std::string public_key; ///< BOINC's text form.
  std::string signature;  ///< The key's text signed with the previous key; empty for the first.
  time_us added = 0;
  friend bool operator==(const code_sign_key_rec&, const code_sign_key_rec&) = default;
};

template <class F>
void inspect_fields(F& f, code_sign_key_rec& x) {
  f(x.public_key, x.signature, x.added);
}

/// An admin batch created under an idempotency key (workunit_created v3 of its first
/// workunit): enough to answer a retry as the batch was answered.
struct batch_key_rec {
  std::string digest; ///< Of the request that created the batch.
  id_type first = 0;  ///< Its workunits are first .. first+count-1.
  std::uint32_t count = 0;
  time_us created = 0;
  friend bool operator==(const batch_key_rec&, const batch_key_rec&) = default;
};

template <class F>
void inspect_fields(F& f, batch_key_rec& x) {
  f(x.digest, x.first, x.count, x.created);
}

/// Everything the project actor owns.
struct project_state {
  std::uint16_t index = 0;
  std::string name;
  std::string long_name;
  std::vector<app_rec> apps;
  credit_settings credit{}; ///< From the last project_configured.
  /// Scale(V) and the PFCmean(V) it came from, by app version id (last normalization).
  std::map<std::uint32_t, version_scale> version_credit;
  /// min_avg_pfc(A) by app id, once X is defined.
  std::map<std::uint32_t, double> min_avg_pfc;
  /// Other servers' exported credit data, by source.
  std::map<std::string, std::vector<credit_export_rec>> credit_imports;
  /// Credit of each team (by name), from its members' grants.
  std::map<std::string, credit_totals> teams;
  std::map<id_type, user_rec> users;
  /// The team directory, by id (snapshot 14).
  std::map<id_type, team_rec> team_dir{};
  id_type next_team = 1;
  std::map<id_type, host_reg> hosts;
  wu_table workunits;
  id_type next_user = 1;
  id_type next_host = 1;
  id_type next_wu = 1;
  project_counters counters;
  std::map<id_type, seq_entry> sequences; ///< The directory of work sequences.
  id_type next_seq = 1;
  /// AutoFlops statistics per app id (app units, raw_flops_per_au arrays, est_flops_per_au).
  std::map<std::uint32_t, app_units_stats> autoflops{};
  /// Idempotency keys of admin batches, held for batch_key_retention, at most
  /// max_batch_keys of them.
  std::map<std::string, batch_key_rec> batch_keys{};
  /// The code-signing public keys, oldest first; the last is current (snapshot 9).
  std::vector<code_sign_key_rec> code_sign_keys{};

  // -- derived indices (rebuilt, not snapshotted) --
  std::unordered_map<std::string, id_type> user_by_auth;
  /// Users by fold_case(e-mail); accounts without an e-mail are not indexed. Two accounts made
  /// by the operator may share an address: the older one is indexed.
  std::unordered_map<std::string, id_type> user_by_email;
  /// Teams by fold_case(name).
  std::unordered_map<std::string, id_type> team_by_name;
  /// The newest host per (user, CPID), keyed by user_cpid_key(); entries may be stale (a host
  /// that reported another CPID since: checked on use).
  std::unordered_map<std::uint64_t, id_type> host_by_cpid;
  /// The newest host per (user, traits_key()); entries may be stale, as host_by_cpid's.
  std::unordered_map<std::uint64_t, id_type> host_by_traits;
  /// A user's hosts as a chain, newest first: newest_host_of_user[user] is the user's newest
  /// host, older_host_of_user[host] the next older one of its user (0 ends the chain). Both are
  /// indexed by id (ids are dense from 1): 8 bytes per user and per host.
  std::vector<id_type> newest_host_of_user;
  std::vector<id_type> older_host_of_user;
  /// Workunits by custom name; generated names ("<app>_wu<id>") are not indexed (see
  /// find_workunit).
  std::unordered_map<std::string, id_type> wu_by_name;
  std::unordered_map<std::string, id_type> seq_by_name;
  /// Unsent results per app id, in creation order; entries may be stale (checked on use).
  std::map<std::uint32_t, std::deque<result_ref>> unsent;
  /// (deadline, result) of results in progress; entries may be stale (checked on use).
  std::priority_queue<std::pair<time_us, result_ref>, std::vector<std::pair<time_us, result_ref>>,
                      std::greater<>>
    deadlines;
  /// Workunits not yet assimilated or failed (derived; the status page's count).
  std::size_t active_workunits = 0;
  /// Input file name -> workunits whose files are not deleted yet that use it, plus the
  /// sequence state uploads that keep it (seq_link::staged, not yet released).
  std::unordered_map<std::string, std::uint32_t> input_refs;

  /// The app with this id, or null.
  const app_rec* app(std::uint32_t id) const;
  /// The app with this name, or null.
  const app_rec* app(std::string_view name) const;
  /// The workunit with this id, or null.
  const workunit_rec* workunit(id_type id) const;
  /// The result, or null.
  const result_rec* result(result_ref r) const;
  /// The workunit with this name (custom, or generated "<app>_wu<id>"), or null.
  const workunit_rec* find_workunit(std::string_view name) const;
  /// Parses "<wu name>_<index>" into a result of this project.
  std::optional<result_ref> parse_result_name(std::string_view text) const;
  /// "<wu name>_<index>".
  std::string result_name(result_ref r) const;
  /// True when a staged state file of `wu` counts as used by anything but `wu` itself.
  bool state_file_in_use(const workunit_rec& wu, const std::string& file) const;

  /// The sequence with this name, or with this numeric id; null if none.
  const seq_entry* sequence(std::string_view key) const;
  /// The newest host of `user` whose last reported CPID is `cpid`, or 0.
  id_type host_with_cpid(id_type user, std::string_view cpid) const;
  /// The newest host of `user` whose last description has the traits of `info`
  /// (traits_key()), or 0.
  id_type host_with_traits(id_type user, const host_info_rec& info) const;
  /// The hosts of `user`, newest first, at most `max` of them.
  std::vector<id_type> hosts_of(id_type user, std::size_t max) const;
  /// The user with this e-mail address (any case), or 0.
  id_type user_with_email(std::string_view email) const;
  /// The team with this name (any case), or 0.
  id_type team_named(std::string_view team) const;

  friend bool operator==(const project_state& a, const project_state& b);
};

template <class F>
void inspect_fields(F& f, project_state& x) {
  f(x.index, x.name, x.long_name, x.apps, x.credit, x.version_credit, x.min_avg_pfc,
    x.credit_imports, x.teams, x.users, x.hosts, x.workunits, x.next_user, x.next_host, x.next_wu,
    x.counters, x.sequences, x.next_seq, x.autoflops, x.batch_keys, x.code_sign_keys, x.team_dir,
    x.next_team);
}

/// Rebuilds the derived indices of a project after decoding.
void rebuild_indices(project_state& s);

/// Advances the project's state by one event of its project.
void apply(project_state& s, const event& e);

// -- host ---------------------------------------------------------------------

/// A result a host holds (sent, not yet reported).
struct held_result {
  result_ref result;
  time_us deadline = 0;
  std::uint32_t app_version_id = 0;
  time_us sent = 0;
  /// The job's predicted app units (result_dispatched v3; 1 before): a report without app
  /// units counts these for the server's seconds_per_app_unit (snapshot format 6).
  double predicted_app_units = 1;
  friend bool operator==(const held_result&, const held_result&) = default;
};

template <class F>
void inspect_fields(F& f, held_result& x) {
  f(x.result, x.deadline, x.app_version_id, x.sent, x.predicted_app_units);
}

/// BOINC's client state of an aborted job (an abort is no crash: the quota is kept).
inline constexpr int client_state_aborted = 6;

/// Per (host, app version) statistics: the credit design's host_app_version (anonymous
/// versions under their -2/-3/-4 identities).
struct host_app_version_rec {
  std::uint64_t n_sent = 0;
  std::uint64_t n_success = 0;
  std::uint64_t n_error = 0;
  std::uint64_t n_timeout = 0;
  double elapsed_sum = 0; ///< Over successful reports with plausible times.
  std::uint64_t elapsed_n = 0;
  average_var et{};            ///< ETmean(H,V): elapsed/E(J) of validated jobs.
  average_var pfc{};           ///< PFCmean(H,V): PFC(J)/E(J) of validated jobs.
  average_var turnaround{};    ///< Seconds from dispatch to report.
  time_us host_scale_time = 0; ///< Host scaling applies only after this (cherry picking).
  bool scale_probation = true;
  double error_rate = 0;     ///< Set to error_rate_initial at the first dispatch.
  int jobs_per_day_init = 0; ///< 0: no quota.
  int max_jobs_per_day = 0;
  std::int64_t jobs_day = 0; ///< UTC day of n_jobs_today.
  int n_jobs_today = 0;
  /// AutoFlops: the server's seconds_per_app_unit(H,V), elapsed / app units of successful
  /// reports (for clients that do not report their own); a report without app units counts
  /// the job's predicted ones.
  average_var spau{};
  /// The spread of those samples (snapshot format 6).
  spau_spread spau_var{};

  /// Jobs it may still get today at `now` (negative: no quota).
  int jobs_left(time_us now) const;
  friend bool operator==(const host_app_version_rec&, const host_app_version_rec&) = default;
};

template <class F>
void inspect_fields(F& f, host_app_version_rec& x) {
  f(x.n_sent, x.n_success, x.n_error, x.n_timeout, x.elapsed_sum, x.elapsed_n, x.et, x.pfc,
    x.turnaround, x.host_scale_time, x.scale_probation, x.error_rate, x.jobs_per_day_init,
    x.max_jobs_per_day, x.jobs_day, x.n_jobs_today, x.spau, x.spau_var);
}

/// Everything a host actor owns.
struct host_state {
  id_type id = 0;
  id_type user = 0;
  time_us created = 0;
  time_us last_rpc = 0; ///< Time of the last RPC that changed state.
  host_info_rec info;
  std::map<std::string, held_result> in_progress; ///< By result name.
  std::map<std::uint32_t, host_app_version_rec> app_versions;
  std::uint64_t results_reported = 0;
  /// The results the host finished last (reported, timed out, lost or taken back), oldest
  /// first, at most host_finished_kept (snapshot 16): the account and host pages' recent
  /// results. Their state is read from the project's workunits when shown.
  std::vector<result_ref> finished{};
  friend bool operator==(const host_state&, const host_state&) = default;
};

/// How many finished results a host remembers.
inline constexpr std::size_t host_finished_kept = 10;

template <class F>
void inspect_fields(F& f, host_state& x) {
  f(x.id, x.user, x.created, x.last_rpc, x.info, x.in_progress, x.app_versions, x.results_reported,
    x.finished);
}

/// Advances a host's state by one event that touches it. `result_name` is the name of the
/// result the event is about (the host keys its results by name); `settings` are its
/// project's credit settings (averages, error rate).
void apply(host_state& s, const event& e, std::string_view result_name,
           const credit_settings& cs = {});

/// Bytes a host's state holds in memory: the object, its strings beyond the small-string
/// buffer and the nodes of its maps (an estimate of the allocator's view: node headers and
/// the strings' heap blocks, not the allocator's rounding).
std::size_t memory_bytes(const host_state& s);

// -- app version --------------------------------------------------------------

/// Statistics of one app version over its validated results.
struct app_version_state {
  std::uint32_t id = 0;
  std::uint64_t n_valid = 0;
  std::uint64_t n_invalid = 0;
  double elapsed_sum = 0;
  double cpu_sum = 0;
  average_var pfc{};                         ///< PFCmean(V): PFC(J)/E(J) of validated jobs.
  double pfc_scale = 1;                      ///< Scale(V), from the last normalization.
  credit_totals credit{};                    ///< Granted credit (expavg_credit and expavg_time).
  std::map<id_type, average_var> host_pfc{}; ///< PFCmean(H,V) per host (for the median).
  friend bool operator==(const app_version_state&, const app_version_state&) = default;
};

template <class F>
void inspect_fields(F& f, app_version_state& x) {
  f(x.id, x.n_valid, x.n_invalid, x.elapsed_sum, x.cpu_sum, x.pfc, x.pfc_scale, x.credit,
    x.host_pfc);
}

/// PFCmean(V) as normalization and Scale(H) use it: the mean of the samples, or with
/// `version_pfc_median` (the default) the median of the hosts' averages that have
/// host_sample_threshold samples (the mean of the samples while fewer than median_min_hosts
/// hosts have); n is the version's sample count either way.
average_var version_pfc(const app_version_state& s, const credit_settings& cs);

/// Advances an app version's statistics by a validation or normalization event.
void apply(app_version_state& s, const event& e, const credit_settings& cs = {});

// -- world --------------------------------------------------------------------

/// One project with every actor state in it.
struct project_world {
  project_state project;
  std::unordered_map<id_type, host_state> hosts;
  std::map<std::uint32_t, app_version_state> app_versions;
  std::map<id_type, sequence_state> sequences;
  friend bool operator==(const project_world&, const project_world&) = default;
};

template <class F>
void inspect_fields(F& f, project_world& x) {
  f(x.project, x.hosts, x.app_versions, x.sequences);
}

/// The state of every actor after applying events 1..seq.
struct world {
  std::uint64_t seq = 0;
  std::vector<project_world> projects;
  friend bool operator==(const world&, const world&) = default;
};

template <class F>
void inspect_fields(F& f, world& x) {
  f(x.seq, x.projects);
}

/// Applies one event to every state it concerns. Events must come in seq order.
void apply(world& w, const event& e);

/// Snapshot format version (2: work sequences; 3: kept state files of sequences; 4: credit;
/// 5: AutoFlops; 6: predicted app units of held results, the spread of seconds_per_app_unit;
/// 7: the outputs received of results and sequence elements; 8: the idempotency keys of admin
/// batches; 9: app versions' files and deprecation, code-signing keys; 10: hosts' CPIDs and the
/// counters of reattached hosts and written-off results; 11: the counter of resent results;
/// 12: the counter of late reports; 13: hosts' traits; 14: users' passwords and profile, the
/// team directory; 15: the counter of cancelled workunits; 16: users' credit per app and per
/// day, hosts' finished results).
/// Recovery skips snapshots of older versions and replays the events instead (events are
/// never deleted).
inline constexpr std::uint8_t snapshot_version = 16;

/// The format version of a snapshot blob (its first byte; 0 when empty).
std::uint8_t snapshot_format(std::string_view blob);

/// Encodes a world as a snapshot blob (deterministic: hash maps are written sorted).
std::string encode_snapshot(const world& w);

/// Decodes a snapshot blob and rebuilds derived indices; nullopt when malformed.
std::optional<world> decode_snapshot(std::string_view blob);

} // namespace cobble
