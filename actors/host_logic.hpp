#pragma once

/// The decisions about one host, over its state: what its scheduler RPC means for the host
/// (its description, the results it reports, what it asks for), its results that time out,
/// and what it learns of the validator's verdicts. Plain methods over a `host_state`, testable
/// without actors; the project actor holds every host's state and runs them inline.

#include "actors/messages.hpp"
#include "actors/rpc.hpp"
#include "actors/state.hpp"
#include "config/config.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cobble {

/// What the host decisions need of the host's project (they change with its configuration).
struct host_settings {
  std::uint16_t project = 0; ///< The project's index, for the events.
  credit_settings credit;    ///< For apply (averages, error rate).
  /// AutoFlops settings of each app version's app (cherry-picking countermeasures), by app
  /// version id (anonymous identities too).
  std::map<std::uint32_t, autoflops_settings> autoflops;
  /// The resource type each app version id runs on (anonymous identities too), for the
  /// jobs-in-progress caps.
  std::map<std::uint32_t, std::uint8_t> resources;
  /// The limits a client cannot widen (docs/security.md).
  config::limits_config limits;
};

/// The resource type of every app version (configured and anonymous) of the apps.
std::map<std::uint32_t, std::uint8_t> resources_by_version(const std::vector<app_rec>& apps);

/// Seconds a host must still wait before a work request of it is served: 0 when it has not
/// had one served yet (`last` unset) or `interval` seconds have passed since `last`.
double sendwork_wait(std::optional<time_us> last, time_us now, double interval);

/// True when the reported description `now` says nothing new against the one kept, `kept`:
/// equal except for a free-disk figure within 10 % (it moves at every RPC, and an event per
/// RPC for it filled a quarter of the log).
bool same_description(const host_info_rec& kept, const host_info_rec& now);

/// The AutoFlops settings of every app version (configured and anonymous) of the apps.
std::map<std::uint32_t, autoflops_settings> autoflops_by_version(const std::vector<app_rec>& apps);

/// The host description in a request, as the server keeps it.
host_info_rec host_info_from(const sched_request& req);

/// Builds the record of one reported result, flagging implausible times.
report_rec report_from(const reported_result& r);

/// Adds what the project granted (jobs and their files, revoked sequences, aborts, messages,
/// AutoFlops figures) to a reply.
void add_grant(sched_reply& reply, const job_grant& grant);

/// What the reports of one request meant.
struct report_outcome {
  std::vector<event> events;           ///< result_reported, one per result the host held.
  std::vector<std::string> acks;       ///< Every reported name (the client may forget them).
  std::vector<reply_message> messages; ///< For reports that were not accepted.
  std::vector<id_type> workunits;      ///< The workunits of the accepted reports.
  /// Reports of results the host no longer holds (timed out, written off, never sent to it),
  /// except work-sequence elements: the project decides whether each counts late
  /// (project_logic::late_reports).
  std::vector<reported_result> unheld;
};

/// The decisions about one host. Every method that returns events has already applied them
/// to the host's state.
class host_logic {
public:
  host_logic(host_state& state, const host_settings& settings)
    : state_(state), settings_(settings) {}

  /// host_described when `info` differs from the description kept (same_description()).
  std::optional<event> describe(const host_info_rec& info, time_us now);

  /// The results of `req` the host reports: those it holds become result_reported events
  /// (carrying what the host knows of its scale for the validator); the others are
  /// acknowledged and left to the project (`unheld`).
  report_outcome report(const sched_request& req, time_us now);

  /// The request for jobs to hand to job selection: what the client asks for per resource,
  /// its versions and the host's per-version statistics (those only when wants_project() is
  /// true of it). `reported`: workunits this RPC reported. The claimed CPU and GPU counts are
  /// capped (limits.max_ncpus, max_ngpus) before anything scales with them, and what the host
  /// may still get per resource under the jobs-in-progress caps is set.
  job_request job_request_for(const sched_request& req, const host_info_rec& info,
                              std::vector<id_type> reported, time_us now) const;

  /// Messages for the client when a resource it asks work for is at its jobs-in-progress cap.
  std::vector<reply_message> limit_messages(const job_request& jr) const;

  /// result_timed_out for each named result the host still holds.
  std::vector<event> time_out(const std::vector<std::string>& names, time_us now);

  /// result_written_off (`reason`) for each result the host holds, except work-sequence
  /// elements (a sequence relocates its chain at the element's deadline, as before).
  std::vector<event> write_off(ev::write_off_reason reason, time_us now);

  /// The results the host holds that the client of `req` no longer has: not listed in its
  /// `<other_results>` (only when it sent that list) and not reported now; work-sequence
  /// elements excluded (their sequence relocates the chain). Call after report().
  std::vector<std::string> lost(const sched_request& req) const;

  /// host_result_validated for each verdict on one of the host's results.
  std::vector<event> learn(const std::vector<validation_notice>& notices, time_us now);

private:
  event make(payload p, time_us now) const;
  const autoflops_settings* app_units_policy(std::uint32_t version) const;

  host_state& state_;
  const host_settings& settings_;
};

/// True when a job request has something for the project to do: work to send, sequences the
/// client lists, or results a sequence may have taken back.
bool wants_project(const job_request& req);

} // namespace cobble
