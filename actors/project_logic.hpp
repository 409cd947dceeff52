#pragma once

/// The decisions of a project, over its state: configuration, accounts and hosts, work
/// creation, job selection, work sequences, validation and transitions, credit
/// normalization, the files of finished work. Plain methods, testable without actors; the
/// project actor (actors/project.hpp) calls them.

#include "actors/messages.hpp"
#include "actors/state.hpp"
#include "config/config.hpp"

#include <caf/expected.hpp>

#include <functional>
#include <set>
#include <unordered_map>

namespace cobble {

/// Converts a configured project into the apps of a project_configured event, keeping the
/// ids of apps and versions that `current` already has (ids are never reused).
std::vector<app_rec>
apps_from_config(const config::project_config& cfg, const std::vector<app_rec>& current);

/// The AutoFlops settings and credit policy of a configured app, as events carry them.
autoflops_settings autoflops_settings_from(const config::app_config& ac);

/// The credit settings of a project's configuration, as events carry them.
credit_settings credit_settings_from(const config::credit_config& cfg);

/// The key under which a version's scale is aggregated across projects: its plan class, or
/// its resource name ("CPU", "NVIDIA", ...) when it has none.
std::string plan_class_key(const std::string& plan_class, std::uint8_t resource);

/// The cross-project aggregation: per plan class, the mean Scale(V) of the versions of apps
/// that have both CPU and GPU versions, weighted by their recent average credit (a plain mean
/// when none has credit yet), over every export given (local projects and imports).
plan_class_scales aggregate_scales(const std::vector<credit_export>& exports);

/// A random account key (32 hex characters from OpenSSL's generator).
std::string random_authenticator();

/// The standing of `held` (BOINC's text form, any whitespace around it) against `keys`.
key_standing standing_of(const std::vector<code_sign_key_rec>& keys, const std::string& held);

/// The decisions of a project, over its state. Every method that returns events has already
/// applied them to `state`.
class project_logic {
public:
  project_state state;
  /// The project's plan classes (configuration, set by configure): what a host must have to
  /// run the versions that name one. Replay needs none: dispatch events record the choice.
  std::vector<config::plan_class_config> plan_classes{};

  /// Events that bring the state in line with the configuration (apps, seed users).
  std::vector<event> configure(const config::project_config& cfg, time_us now);

  /// Validates and creates a batch of work (all or nothing). A batch with a key the project
  /// holds creates nothing: `out` is the first batch's answer, marked replayed (same digest),
  /// or the error is a conflict (another digest).
  caf::expected<std::vector<event>>
  create_work(const work_batch& batch, time_us now, work_created& out);

  /// Creates a user account.
  caf::expected<event> create_user(const std::string& name, const std::string& email,
                                   const std::string& authenticator, time_us now);

  /// A volunteer's new account (create_account.php, the site), with `authenticator` as its
  /// key: invalid_argument for an empty or oversized name or e-mail, duplicate when an account
  /// has the e-mail address (any case). Joins spec.team when the directory has it.
  caf::expected<event>
  create_account(const account_spec& spec, const std::string& authenticator, time_us now);

  /// An account's owner changes it (actors/accounts.cpp): unknown_account for an unknown key,
  /// duplicate for an e-mail address another account has, invalid_argument for an oversized
  /// field or a team the directory lacks.
  caf::expected<event> change_account(const account_update& update, time_us now);

  /// A volunteer makes a team and joins it: unknown_account, invalid_argument (empty or
  /// oversized fields), duplicate (the name is taken, any case).
  caf::expected<event> create_team(const team_spec& spec, time_us now);

  /// An operator cancels a workunit (actors/cancel.cpp), by name or id: unknown_workunit;
  /// conflict for a sequence's element (the sequence decides those) or a workunit that is not
  /// active any more; invalid_argument for a reason or name over 1,000 bytes. An empty
  /// reason reads "by the operator".
  caf::expected<event> cancel_workunit(const std::string& key, const std::string& reason,
                                       const std::string& by, time_us now);

  /// Registers a new host of a user.
  event register_host(id_type user, const host_info_rec& info, time_us now);

  /// Gives a client that came without its host id the host `host` of `user` it was
  /// recognised as, `how` (project_state::host_with_cpid, host_with_traits).
  event reattach_host(id_type host, id_type user, ev::host_match how, time_us now);

  /// Hosts `user` registered at `since` or later (host ids grow with time: counted from the
  /// newest host back, so the cost is the registrations since then, not all hosts).
  std::size_t hosts_registered_since(id_type user, time_us since) const;

  /// Why `user` may not register one more host at `now` under a cap of `per_day` hosts in
  /// 24 hours (0: no cap); nullopt when it may.
  std::optional<std::string>
  host_registration_refusal(id_type user, time_us now, int per_day) const;

  /// Picks jobs for a host's request, per resource type, and dispatches them. `why`, when
  /// given, gets a message for each app whose work the host was refused: its daily quota is
  /// used up, or its jobs would not finish before their deadlines.
  std::vector<granted_job>
  select_jobs(const job_request& req, time_us now, std::vector<event>& events,
              std::vector<reply_message>* why = nullptr);

  /// Why the host got no jobs of a resource it asked for, where the reason is the project's
  /// versions: none for its platforms, or plan classes it does not meet (each reason once).
  std::vector<reply_message>
  no_version_messages(const job_request& req, const std::vector<granted_job>& jobs) const;

  /// What the credit system records of a dispatch, and the runtime the host is told.
  struct dispatch_credit {
    double peak_flops = 0;  ///< peak_flops(J), in the dispatch event.
    int jobs_per_day = 0;   ///< Initial daily quota of the (host, version) (0: unlimited).
    double runtime = 0;     ///< R(J,H), seconds.
    double fpops_scale = 1; ///< Scales rsc_fpops_est/bound so the client arrives at R(J,H).
    /// AutoFlops completion time estimate and bound (seconds; 0: none) and the FLOPS the
    /// client divides by: rsc_fpops_est/bound become estimate/bound × flops.
    double est_seconds = 0;
    double bound_seconds = 0;
    double flops = 0;
  };

  /// AutoFlops figures of the apps for a reply: every app of `sent` and every app with both
  /// CPU and GPU versions.
  std::vector<app_units_info> app_units_infos(const std::set<std::uint32_t>& sent) const;

  /// Dispatches one unsent result to a host with the chosen version (the job for the reply).
  granted_job dispatch(const app_rec& app, result_ref ref, id_type host, const version_echo& echo,
                       time_us now, std::vector<event>& events, const dispatch_credit& credit);

  // -- work sequences --

  /// Validates a new work sequence and creates it with its first elements.
  caf::expected<event> create_sequence(const sequence_spec& spec, time_us now);

  /// What a host's RPC means for sequences: the listed sequences it no longer holds, and
  /// the sequences to ask (those assigned to it, and unassigned ones it may take).
  struct sequence_plan {
    std::vector<std::string> revoked;
    std::vector<std::pair<id_type, seq_query>> queries;
  };
  sequence_plan
  plan_sequences(const job_request& req, std::uint32_t high_water, std::uint32_t per_host) const;

  /// Dispatches the elements a sequence picked for the host (those still unsent).
  std::vector<granted_job>
  dispatch_sequence(const job_request& req, const std::vector<id_type>& wus, time_us now,
                    std::vector<event>& events);

  /// What recover_lost decided.
  struct lost_recovery {
    std::vector<granted_job> resent;     ///< Sent again, with new deadlines (result_resent).
    std::vector<id_type> written_off;    ///< Workunits of the results given up, to transition.
    std::vector<reply_message> messages; ///< One for each lost result, for the volunteer.
  };

  /// The results in progress on the requesting host that its client no longer has (`lost`:
  /// host_logic::lost), treated as BOINC's scheduler treats them (lost_results.cpp). Each is
  /// sent again (result_resent, deadline now + half the time it had, within [old deadline,
  /// now + delay bound]) when its workunit still needs it (active, no canonical result), the
  /// host still runs the version it was sent with, and the job's runtime estimate fits
  /// before the new deadline; else it is written off (result_written_off, reason lost), so
  /// that its workunit is replaced at once instead of at the deadline.
  lost_recovery recover_lost(const job_request& req, const std::vector<std::string>& lost,
                             time_us now, std::vector<event>& events);

  /// What late_reports decided.
  struct late_outcome {
    std::vector<id_type> workunits;      ///< Of the reports counted late, to transition.
    std::vector<reply_message> messages; ///< For late reports no longer needed.
  };

  /// Reports of results the host no longer holds (host_logic::report's `unheld`): one over
  /// on this host as timed out or written off counts late (result_reported, `late`) while its
  /// workunit can use it (not failed, files not deleted, no sequence element): an active
  /// workunit counts it towards its quorum, a validated one checks it against the canonical
  /// result and grants the canonical credit when it agrees (lost_results.cpp). Otherwise the
  /// volunteer is told it arrived too late; reports of results never sent to the host are
  /// only acknowledged.
  late_outcome late_reports(id_type host, const std::vector<reported_result>& reports, time_us now,
                            std::vector<event>& events);

  /// The results the client holds (`other_results`) that were taken back from it: elements
  /// a sequence's end or a dead branch cancelled, results of cancelled workunits.
  std::vector<std::string> result_aborts(const job_request& req) const;

  /// Estimated seconds of one job of `app` with `params` on the requesting host: its
  /// average elapsed time with the version it would run, else the FLOPs estimate.
  std::optional<double>
  estimate_seconds(const app_rec& app, const wu_params& params, const job_request& req) const;

  /// Applies events a sequence decided; returns the workunits whose transitions to run.
  std::set<id_type> apply_sequence_events(const std::vector<event>& events);

  /// Moves a workunit along: validation, assimilation, new replicas, failure.
  std::vector<event> transition(id_type wu, time_us now);

  /// Results in progress whose deadline is past, grouped by host (popped from the index).
  std::map<id_type, std::vector<std::string>> overdue(time_us now);

  /// The max_nbytes of output file `name` when it belongs to a result in progress on `host`
  /// (0: on any host) or may still be reported late (output_of); nullopt otherwise.
  std::optional<double> upload_limit(std::string_view name, id_type host) const;

  /// Output file `name` of a result in progress on `host` finished uploading with this size
  /// and MD5, as the server stored and hashed it: an output_received event (none when the
  /// same digest is recorded already). ec::unknown_workunit when the file is no output of a
  /// result in progress on that host, ec::invalid_argument when it is over max_nbytes.
  caf::expected<std::vector<event>>
  output_received(const std::string& name, id_type host, std::uint64_t nbytes,
                  const std::string& md5, time_us now);

  /// The files of a finished workunit, for the assimilator.
  wu_files files_of(id_type wu, double delete_after_seconds, double quiet_seconds) const;

  /// The sequence elements whose state files this (applied) sequence event released.
  std::vector<id_type> released_by(const event& e) const;

  /// Records that a finished workunit's files are gone.
  std::vector<event> files_deleted(id_type wu, std::vector<std::string> inputs, time_us now);

  /// Applies an event decided elsewhere (delivered by the log).
  void apply_delivered(const event& e) { apply(state, e); }

  /// What each host must learn of a workunit_validated event this project decided.
  std::map<id_type, std::vector<validation_notice>> notices(const event& validated) const;

  /// The periodic cross-version normalization, from the app versions' statistics: one
  /// credit_normalized event per app whose min_avg_pfc or scales changed. `cross_project`
  /// gives the factors for apps that have only GPU versions.
  std::vector<event> normalize(const std::vector<app_version_state>& stats,
                               const plan_class_scales& cross_project, time_us now);

  /// The per-app-version export (app, platform, plan class, recent average credit, scale).
  credit_export
  export_credit(const std::map<std::uint32_t, app_version_state>& stats, time_us now) const;

  /// Records another server's export (validated: a source name, finite positive scales).
  caf::expected<event> import_credit(ev::credit_imported import, time_us now);

  // -- apps and code signing (project_apps.cpp) --

  /// Validates an operator's change to the apps or code-signing keys and decides it (all or
  /// nothing). The same change made again (a retry) decides nothing and says so in `out`.
  /// Refusals: ec::unknown_app (no such app or version), ec::duplicate (an app of that name,
  /// a version number not above the last of its platform and plan class, a file name
  /// already used for other bytes), ec::invalid_argument (a bad name, number, file or
  /// signature), ec::conflict (a version before any code-signing key; a new key while a
  /// version with files is offered; offering again a version signed with an earlier key).
  caf::expected<std::vector<event>>
  change_apps(const app_change& change, time_us now, app_changed& out);

  /// What a host needs to run the jobs of `grant` (project_apps.cpp): the app, the
  /// `<app_version>` and the signed files of each version the project distributes (with
  /// every reply that has its jobs: a client retries failed downloads so); and the project's
  /// code-signing key when the request holds another: the current key (no key held), the
  /// current key with its signature by the one before (rotation), or a message (a key this
  /// project never had, or one replaced twice since).
  void add_deliveries(const job_request& req, job_grant& grant) const;

  /// How code-signing key `held` (empty: none) stands against the project's keys; serve_rpc
  /// puts it in the job_request (job_request::checks_files, add_deliveries).
  key_standing key_standing_of(const std::string& held) const;

private:
  /// An output file of a result in progress: which result and output, and its limit.
  struct output_ref {
    result_ref result;
    std::uint32_t index = 0;
    id_type host = 0;
    double max_nbytes = 0;
  };

  /// The output `name` is, when it belongs to a result in progress on `host` (0: any), or to
  /// one of its results over as timed out or written off whose late report its workunit can
  /// still use (late_reports).
  std::optional<output_ref> output_of(std::string_view name, id_type host) const;

  event make(payload p, time_us now) const;
  void emit(std::vector<event>& out, payload p, time_us now);

  /// The reply's part of a job of `app` (workunit, result, files) sent with version `echo`
  /// and `deadline`: for dispatch() and for a lost result sent again.
  granted_job describe_job(const app_rec& app, result_ref ref, const version_echo& echo,
                           time_us deadline, const dispatch_credit& credit) const;
};

} // namespace cobble
