#pragma once

/// Plain structs carried by actor messages (through the shared pointers of atoms.hpp).

#include "actors/atoms.hpp"
#include "actors/state.hpp"
#include "config/config.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cobble {

/// What a host's state says of one of its app versions that job selection needs.
struct version_hint {
  int jobs_left = -1;     ///< Jobs it may still get today; negative: no quota yet.
  average_var et{};       ///< ETmean(H,V): elapsed/E(J).
  average_var spau{};     ///< The server's seconds_per_app_unit(H,V).
  spau_spread spau_var{}; ///< The spread of its samples.
};

/// How the code-signing key a client holds stands against the project's keys (oldest first):
/// no keys at all or the current key (`current`), none held, the one before the current one
/// (the reply carries the current key with its signature), a key the project never had, or
/// one replaced at least twice since.
enum class key_standing : std::uint8_t { current, none, previous, never_had, too_old };

/// A host's request for jobs, per resource type (host_logic::job_request_for).
struct job_request {
  id_type host = 0;
  host_info_rec info;
  std::vector<resource_request> requests;   ///< Indexed by resource_type.
  bool anonymous = false;                   ///< Client runs app_info.xml versions.
  std::vector<client_app_version> offered;  ///< Its versions (anonymous platform).
  std::string platform;                     ///< Its platform when not anonymous.
  std::vector<std::string> alt_platforms{}; ///< Other platforms it runs, best first.
  /// Its GPUs as described, with what plan classes test (driver, memory, CUDA, OpenCL).
  std::vector<coproc_description> coprocs{};
  int client_version = 0;                  ///< major*10000 + minor*100 + release (0: not said).
  bool send_work = true;                   ///< False: only sequence notices, no jobs.
  std::vector<std::string> sequences_held; ///< Sequences the client lists (by name).
  std::vector<std::string> other_results;  ///< Results the client holds, not reporting.
  /// Workunits whose results this RPC reported (their events may not have reached the
  /// project yet): sequences no longer count them as held.
  std::vector<id_type> reported;
  /// The host's average elapsed seconds per app version (its runtime statistics).
  std::map<std::uint32_t, double> avg_elapsed;
  std::map<std::uint32_t, version_hint> hints{}; ///< By app version id (anonymous ids too).
  /// AutoFlops figures the client reported per app version (its seconds_per_app_unit).
  std::vector<app_unit_version> unit_versions{};
  /// Jobs the host may still be sent per resource type under the jobs-in-progress caps;
  /// negative or absent: no cap.
  std::vector<int> in_progress_left{};
  /// The code-signing key the client holds for the project (empty: none).
  std::string code_sign_key{};
  /// How code_sign_key stands against the project's keys (project_logic::key_standing_of).
  key_standing code_sign = key_standing::current;

  /// Whether the client can check the files of the versions the project distributes once it
  /// has this RPC's reply (its key is the current one or one it can move to the current one
  /// from); when not, none of those versions is chosen and add_deliveries tells it why.
  bool checks_files() const {
    return code_sign != key_standing::never_had && code_sign != key_standing::too_old;
  }
};

/// One job sent to a host: what the reply carries and the event that recorded it.
struct granted_job {
  workunit_description workunit;
  result_description result;
  std::vector<file_description> files;
  ev::result_dispatched dispatched;
  time_us time = 0;            ///< Time of the dispatch event.
  double runtime_estimate = 0; ///< R(J,H), seconds: E(J) × ETmean(H,V), else E(J) / flops.
  std::uint32_t app = 0;       ///< The job's app id.
};

/// The validator's word to a host on one of its results (host_logic::learn records it as a
/// host_result_validated event).
struct validation_notice {
  std::string result_name;
  ev::host_result_validated data;
};

/// Per-plan-class scale factors from the cross-project aggregator (key: plan class, or the
/// resource name for versions without one).
struct plan_class_scales {
  std::map<std::string, double> scales;
  std::map<std::string, double> weights; ///< Recent average credit behind each factor.
};

/// A project's credit data for export and for the aggregator.
struct credit_export {
  std::string project;
  std::vector<credit_export_rec> versions;   ///< Its own app versions.
  std::vector<credit_export_rec> imported;   ///< Imported from other servers.
  std::map<std::string, double> min_avg_pfc; ///< By app name, where X is defined.
};

/// The project's answer to a job_request.
struct job_grant {
  std::vector<granted_job> jobs;
  std::vector<std::string> sequences_revoked; ///< Listed sequences the host no longer holds.
  std::vector<std::string> aborts;            ///< Results the client should abort.
  std::vector<reply_message> messages;
  std::vector<app_units_info> app_units{}; ///< AutoFlops figures of apps (the reply's).
  /// The apps, versions and version files of the jobs sent that the project distributes
  /// (add_deliveries).
  std::vector<app_description> apps{};
  std::vector<app_version_description> app_versions{};
  std::vector<file_description> version_files{};
  std::string code_sign_key{};           ///< The key to send; empty: none.
  std::string code_sign_key_signature{}; ///< code_sign_key signed with the held key.
};

/// An input file of new work, already staged into the data directory.
struct input_spec {
  std::string stored_name; ///< Name in the download area (content-addressed).
  std::string open_name;   ///< Name the app opens.
  double nbytes = 0;
  std::string md5;
};

/// One workunit to create. Unset fields take the app's defaults.
struct work_spec {
  std::string app;
  std::string name; ///< Empty: generated.
  std::string command_line;
  std::optional<double> rsc_fpops_est;
  std::optional<double> rsc_fpops_bound;
  std::optional<double> rsc_memory_bound;
  std::optional<double> rsc_disk_bound;
  std::optional<double> delay_bound;
  std::optional<int> min_quorum;
  std::optional<int> target_nresults;
  std::optional<int> max_error_results;
  std::optional<int> max_total_results;
  std::optional<int> max_success_results;
  std::vector<input_spec> inputs;
  std::optional<double> predicted_app_units; ///< AutoFlops; default 1.
};

/// A batch of work to create atomically (all or none).
struct work_batch {
  std::string submitter;
  std::vector<work_spec> items;
  /// The client's idempotency key (the admin API's `Idempotency-Key`); empty: none. A batch
  /// whose key the project holds is not created again: the first batch's answer is replayed.
  std::string key;
  /// A digest of the whole request (set with `key`): the same key with another digest is a
  /// conflict, not a replay.
  std::string digest;
};

/// The workunits a batch created.
struct work_created {
  std::vector<id_type> ids;
  std::vector<std::string> names;
  bool replayed = false; ///< The batch's key was known: nothing was created now.
};

/// One app's counts, for status pages.
struct app_summary {
  std::string name;
  std::size_t versions = 0;
  std::size_t unsent = 0;
};

/// A project's status.
struct project_summary {
  std::string name;
  std::string long_name;
  std::size_t users = 0;
  std::size_t hosts = 0;
  std::size_t workunits = 0;
  std::size_t active_workunits = 0;
  std::size_t results_in_progress = 0;
  project_counters counters;
  std::vector<app_summary> apps;
  std::map<std::string, credit_totals> teams{}; ///< Credit per team.
};

/// What a project holds in memory, for /metrics; cheap enough for every scrape.
struct project_gauges {
  std::string project;
  std::size_t hosts = 0;             ///< Hosts held in memory (every host that ever called).
  std::size_t host_bytes = 0;        ///< Their estimated bytes (state and registration).
  std::size_t hosts_sampled = 0;     ///< Live hosts measured for the estimate (all, up to a cap).
  std::size_t hosts_live = 0;        ///< Hosts whose state is decoded (used lately).
  std::size_t hosts_passivated = 0;  ///< Hosts whose state is kept encoded.
  std::size_t passivated_bytes = 0;  ///< The passivated states' bytes (exact).
  std::size_t host_passivations = 0; ///< Hosts passivated since start.
  std::size_t host_activations = 0;  ///< Passivated hosts decoded again since start.
  std::size_t workunits = 0;         ///< Workunits held in memory.
  std::size_t active_workunits = 0;
};

/// The summary of a project's state (the admin API's status, the CLI's offline replay).
project_summary summarize(const project_state& s);

/// A workunit with the names the admin API shows.
struct workunit_view {
  workunit_rec wu;
  std::string app_name;
  std::vector<std::string> result_names;
};

/// One result as the operator pages list it: where it is, its names and the record itself.
struct result_listing_row {
  result_ref ref{};
  std::string name;    ///< The result's name ("wu_a_1").
  std::string wu_name; ///< Its workunit's name.
  std::string app;     ///< Its app's name.
  result_rec rec{};
};

/// A host as the admin API shows it.
struct host_view {
  host_reg reg;
  std::optional<host_state> state; ///< Present for `show`, absent in lists.
  time_us last_contact = 0;        ///< Its last scheduler RPC; 0: none yet.
  /// With `state`: the results it finished last (host_state::finished), newest first.
  std::vector<result_listing_row> finished{};
};

// -- accounts and teams (BOINC's web RPCs, the volunteer site) -------------------

/// A question about one account: by e-mail address (any case), account key or id.
struct account_query {
  enum class key : std::uint8_t { email, authenticator, id };
  key by = key::email;
  std::string text; ///< The e-mail address or account key.
  id_type id = 0;
  /// Also the account's hosts (all of them, newest first) and when each last made contact.
  bool hosts = false;
  /// Also its credit per app and its recent results (the account page); implies `hosts`.
  bool detail = false;
};

/// The most recent results an account view lists.
inline constexpr std::size_t max_account_results = 20;

/// One app's line of an account's credit.
struct app_credit_row {
  std::string app; ///< The app's user-friendly name (its name when it has none).
  std::uint64_t jobs = 0;
  credit_totals credit{};
};

/// A result an account's host finished, as the account page lists it.
struct result_row {
  std::string name;
  id_type host = 0;
  std::string app;
  std::string state;  ///< result_words().
  double granted = 0; ///< Credit granted; 0: none (yet).
  time_us at = 0;     ///< When it was reported; for a timed-out result, its deadline.
};

/// One account with what the web shows of it.
struct account_view {
  user_rec user;
  id_type team = 0;                   ///< Its team's directory id; 0: none.
  bool team_founder = false;          ///< It made its team.
  std::vector<host_reg> hosts{};      ///< Its hosts, newest first (with `hosts`).
  std::vector<time_us> contact{};     ///< Each host's last contact; 0: never (with `hosts`).
  std::vector<app_credit_row> apps{}; ///< Credit per app, by app id (with `detail`).
  std::vector<result_row> recent{};   ///< Results its hosts finished, newest first (`detail`).
};

/// A new account. `passwd` is already in stored form (user_rec::passwd); `team` names a team
/// to join when it exists (BOINC's create_account.php ignores one that does not).
struct account_spec {
  std::string name;
  std::string email;
  std::string passwd;
  std::string country{};
  std::string postal_code{};
  std::string team{};
};

/// A volunteer's changes to their account: every present field is set. A new e-mail address
/// comes with a new password hash (the BOINC hash covers the address).
struct account_update {
  std::string authenticator;
  std::optional<std::string> name{};
  std::optional<std::string> email{};
  std::optional<std::string> passwd{};
  std::optional<std::string> country{};
  std::optional<std::string> postal_code{};
  std::optional<std::string> url{};
  std::optional<id_type> team{}; ///< 0: leave the team.
};

/// A team a volunteer makes (and joins).
struct team_spec {
  std::string authenticator; ///< The founder's account key.
  std::string name;
  std::string url{};
  std::string description{};
  std::string country{};
};

/// One member of a team as its page lists them.
struct team_member {
  id_type id = 0;
  std::string name;
  credit_totals credit{};
};

/// A team with what the web shows of it.
struct team_view {
  team_rec team;
  std::size_t members = 0;
  credit_totals credit{};
  std::string founder_name{}; ///< Empty: no founder (a configuration team).
  /// With team_query::roster: its members with the most total credit first, at most
  /// team_query::roster_limit of them.
  std::vector<team_member> roster{};
};

/// Teams by id, or whose name contains `name` (any case), at most `limit`, by id.
struct team_query {
  std::string name{};
  id_type id = 0; ///< Non-zero: only this team.
  std::size_t limit = 100;
  bool roster = false; ///< Also each team's members (team_view::roster).
  std::size_t roster_limit = 100;
};

/// A page of a top list (the site's top users, hosts and teams), as BOINC's
/// top_users.php, top_hosts.php and top_teams.php.
struct top_query {
  enum class of : std::uint8_t { users, hosts, teams };
  of what = of::users;
  /// By recent average credit (decayed to `now` with the project's half-life); else by total.
  bool recent = false;
  std::size_t offset = 0; ///< Rows skipped: the page starts at rank offset + 1.
  std::size_t limit = 20;
  time_us now = 0;
};

/// One row of a top list.
struct top_row {
  std::size_t rank = 0; ///< 1 for the first.
  id_type id = 0;
  std::string name;   ///< The user's or team's name; a host's owner.
  std::string detail; ///< A user's team; a team's country; empty for hosts.
  credit_totals credit{};
  double recent = 0; ///< The recent average decayed to the query's `now`.
};

/// A page of a top list and how many rows the whole list has.
struct top_page {
  std::vector<top_row> rows;
  std::size_t total = 0;
};

/// A page of workunits or of results, filtered (the operator pages). Pages follow workunit
/// ids: a page starts after `after` and ends after `limit` rows, or after `budget`
/// workunits were looked at, so that a filter few workunits match never holds the project
/// for long; `listing_page::next` says where the next page starts.
struct listing_query {
  enum class of : std::uint8_t { workunits, results };
  of what = of::results;
  /// Workunits: a to_string(wu_state); results: a result_words() phrase. Empty: any.
  std::string state;
  std::string app;  ///< An app's name; empty: any.
  id_type host = 0; ///< Results only: only those sent to this host; 0: any.
  /// The page starts after this result (results) or after workunit `after.wu` (workunits).
  result_ref after{};
  std::size_t limit = 50;
  std::size_t budget = 200000;
};

/// What a listing_query found.
struct listing_page {
  std::vector<workunit_view> workunits{};    ///< what == workunits
  std::vector<result_listing_row> results{}; ///< what == results
  /// Where the next page starts (its `after`); none when the listing reached the end.
  std::optional<result_ref> next{};
  std::size_t looked_at = 0;       ///< Workunits looked at for this page.
  bool budget_spent = false;       ///< The page ended on its budget, not on `limit`.
  std::vector<std::string> apps{}; ///< Every app's name (the filter's choices).
};

/// What a project's status page shows, with BOINC's server_status.php's figures and names.
struct server_status_view {
  /// One app's jobs, and its valid results received in the past 24 hours.
  struct app_row {
    std::uint32_t id = 0;
    std::string name;
    std::size_t unsent = 0;
    std::size_t in_progress = 0;
    std::size_t valid_24h = 0;
    double min_runtime = 0; ///< Seconds, of those valid results; 0 when there are none.
    double avg_runtime = 0;
    double max_runtime = 0;
    std::size_t users_24h = 0; ///< Distinct volunteers whose hosts returned them.
  };
  time_us at = 0; ///< When the figures were taken.
  std::size_t results_ready_to_send = 0;
  std::size_t results_in_progress = 0;
  /// Active workunits with a successful report the validator has not judged yet.
  std::size_t workunits_waiting_for_validation = 0;
  /// Validated workunits the assimilator has not taken yet.
  std::size_t workunits_waiting_for_assimilation = 0;
  /// Ended workunits whose files are kept for the grace period.
  std::size_t workunits_waiting_for_deletion = 0;
  /// Their results that uploaded outputs.
  std::size_t results_waiting_for_deletion = 0;
  std::size_t users = 0;
  std::size_t users_with_credit = 0;        ///< Total credit above 1 (as BOINC).
  std::size_t users_with_recent_credit = 0; ///< Recent average above 1, decayed to `at`.
  std::size_t users_registered_24h = 0;
  std::size_t hosts = 0;
  std::size_t hosts_with_credit = 0;
  std::size_t hosts_with_recent_credit = 0;
  std::size_t hosts_registered_24h = 0;
  std::size_t hosts_contacted_24h = 0; ///< Hosts whose last RPC was in the past 24 hours.
  /// The project's speed: the users' recent average credit in FLOPS (credit per day times
  /// FLOPs per cobblestone over a day's seconds), in GigaFLOPS.
  double gigaflops = 0;
  project_counters counters{};
  std::vector<app_row> apps{};
};

/// The log's counters, for /metrics.
struct log_status {
  std::uint64_t last_seq = 0;
  std::uint64_t events = 0;
  std::uint64_t batches = 0;
  std::uint64_t syncs = 0;
  std::uint64_t bytes = 0;
  std::uint64_t snapshots = 0;
  std::uint64_t last_snapshot_seq = 0;
  /// Histogram of commit batch sizes: counts of batches with <=1, <=2, <=4, ... events.
  std::vector<std::uint64_t> batch_size_buckets;
};

// -- work sequences -------------------------------------------------------------

/// A work sequence to create (admin API, `cobble seq create`). Unset fields take the app's
/// defaults.
struct sequence_spec {
  std::string name;
  std::string app;
  std::uint32_t count = 0;       ///< Elements (workunits) created now.
  std::uint32_t state_every = 0; ///< Positions that are multiples upload full state; 0: none.
  bool final_state = false;      ///< The last element created uploads full state.
  double max_result_time = 0;    ///< Seconds; 0: the elements' delay_bound.
  std::uint8_t replicas = 1;     ///< 1, or 2 for element-by-element validation.
  std::string command_line;
  std::optional<double> rsc_fpops_est;
  std::optional<double> rsc_fpops_bound;
  std::optional<double> rsc_memory_bound;
  std::optional<double> rsc_disk_bound;
  std::optional<double> delay_bound;
  std::vector<input_spec> inputs; ///< Inputs of every element (e.g. the initial state).
  std::string by;                 ///< Who creates it.
};

/// What the project asks a sequence during a host's RPC.
struct seq_query {
  id_type host = 0;
  double est_seconds = 0;        ///< Estimated runtime of one element on the host (0: unknown).
  bool may_assign = false;       ///< Assign the sequence to the host if it has a free chain.
  std::uint32_t high_water = 2;  ///< Elements the host may hold at once.
  std::vector<id_type> reported; ///< Workunits the host reported in this RPC.
};

/// A sequence's answer to a query or a command.
struct seq_answer {
  id_type seq = 0;
  bool held = false;         ///< The host holds the sequence (after the query).
  std::vector<id_type> send; ///< Element workunits to dispatch to the host, in order.
  std::vector<event> events; ///< Decided (and appended) by the sequence; apply them.
  std::shared_ptr<const sequence_state> state; ///< Commands: the state after the events.
};

/// An operator's or result handler's command to a sequence.
struct seq_command {
  enum class op : std::uint8_t { extend, end, reassign, unassign };
  op what = op::extend;
  std::string by;                ///< Who did it.
  std::uint32_t count = 0;       ///< extend: elements per replica chain.
  std::uint32_t state_every = 0; ///< extend: positions that are multiples upload full state.
  bool final_state = false;      ///< extend: the last new element uploads full state.
  std::string reason;            ///< end
  id_type to = 0;                ///< reassign: the host.
  std::uint8_t replica = 0;      ///< reassign, unassign: which chain.
};

/// A sequence as the admin API shows it.
struct sequence_view {
  sequence_state state;
  std::string app_name;
};

/// An operator's change to the project's apps or code-signing keys (admin API).
struct app_change {
  enum class op : std::uint8_t { add_app, add_version, deprecate_version, add_key };
  op what = op::add_app;
  std::string by;  ///< Who did it.
  std::string app; ///< The app's name (every op but add_key).
  /// add_app: the app's policy as the configuration states one (its name is `app`; its
  /// versions are ignored). add_version: the version with its files and their signatures
  /// (id is the project's to give).
  config::app_config new_app{};
  app_version_rec version{};
  std::uint32_t version_id = 0; ///< deprecate_version: which version.
  bool deprecated = true;       ///< deprecate_version: false offers it again.
  std::string public_key;       ///< add_key, BOINC's text form.
  std::string signature;        ///< add_key: the key signed with the previous one.
};

/// What an app_change did: the id of the app, version or key (keys count from 1), and
/// whether it changed anything (false: the same change was made before, as a retry).
struct app_changed {
  std::uint32_t id = 0;
  bool changed = false;
};

} // namespace cobble
