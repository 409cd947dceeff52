/// Results the client and the server see differently. Results a client lost (a project
/// reset, a reply that never arrived): sent again, or given up so that their workunits are
/// replaced at once (project_logic::recover_lost). Results reported after they were over
/// (timed out, written off): counted late while their workunits can use them
/// (project_logic::late_reports).

#include "actors/host_logic.hpp"
#include "actors/project_logic_detail.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

namespace cobble {

using namespace detail;

namespace {

/// The version `wanted` as the host would get it today, if it still runs it: the same app
/// version chosen for one of its resource types.
std::optional<version_choice>
same_version(const app_rec& app, const job_request& req, std::uint32_t wanted,
             const std::vector<config::plan_class_config>& plan_classes) {
  for (int t = 0; t < n_resource_types; ++t)
    if (auto c = choose_version(app, req, static_cast<resource_type>(t), plan_classes);
        c && c->echo.app_version_id == wanted)
      return c;
  return std::nullopt;
}

/// The deadline of a result sent again (BOINC's rule): now + half the time it was given,
/// never earlier than its deadline nor later than a delay bound from now.
time_us resend_deadline(const result_rec& r, double delay_bound, time_us now) {
  auto half = (r.deadline - r.sent) / 2;
  auto d = std::max(now + half, r.deadline);
  return std::min(d, now + seconds_to_us(delay_bound));
}

} // namespace

project_logic::lost_recovery
project_logic::recover_lost(const job_request& req, const std::vector<std::string>& lost,
                            time_us now, std::vector<event>& events) {
  lost_recovery out;
  for (const auto& name : lost) {
    auto ref = state.parse_result_name(name);
    const auto* r = ref ? state.result(*ref) : nullptr;
    if (r == nullptr || r->state != result_state::in_progress || r->host != req.host)
      continue;
    const auto& wu = state.workunits.at(ref->wu);
    const auto* app = state.app(wu.app);
    std::string why;
    std::optional<version_choice> choice;
    if (wu.state != wu_state::active || wu.canonical || wu.files_deleted || app == nullptr) {
      why = "it is no longer needed";
    } else {
      choice = same_version(*app, req, r->version.app_version_id, plan_classes);
      if (!choice)
        why = "this computer no longer runs the version it was sent with";
    }
    std::optional<time_us> deadline;
    std::optional<dispatch_credit> credit;
    if (why.empty()) {
      version_hint hint;
      if (auto h = req.hints.find(choice->echo.app_version_id); h != req.hints.end())
        hint = h->second;
      int quota = initial_jobs_per_day(app->max_jobs_per_day, choice->devices);
      credit = job_dispatch_credit(state, *app, wu.params, *choice, hint, quota);
      deadline = resend_deadline(*r, wu.params->delay_bound, now);
      if (!(credit->runtime <= us_to_seconds(*deadline - now)))
        why = "it could not be finished before its deadline";
    }
    if (!why.empty()) {
      emit(events,
           ev::result_written_off{*ref, req.host,
                                  static_cast<std::uint8_t>(ev::write_off_reason::lost)},
           now);
      out.written_off.push_back(ref->wu);
      std::string text = "Task " + name;
      text += " was lost and will not be sent again: ";
      text += why;
      text += wu.state == wu_state::active && !wu.canonical ? "; another computer will run it."
                                                            : ".";
      out.messages.push_back({std::move(text), false});
      continue;
    }
    auto job = describe_job(*app, *ref, choice->echo, *deadline, *credit);
    job.time = now;
    emit(events, ev::result_resent{*ref, req.host, *deadline}, now);
    out.resent.push_back(std::move(job));
    out.messages.push_back({"Resent lost task " + name + ".", false});
  }
  return out;
}

project_logic::late_outcome
project_logic::late_reports(id_type host, const std::vector<reported_result>& reports, time_us now,
                            std::vector<event>& events) {
  late_outcome out;
  for (const auto& rep : reports) {
    auto ref = state.parse_result_name(rep.name);
    const auto* r = ref ? state.result(*ref) : nullptr;
    bool over_here = r != nullptr && r->host == host && r->state == result_state::over
                     && (r->outcome == result_outcome::no_reply
                         || r->outcome == result_outcome::client_detached);
    if (!over_here) {
      spdlog::info("host {} reported result '{}' it does not hold (not sent to it, or already "
                   "reported): acknowledged, not applied",
                   host, rep.name);
      continue;
    }
    const auto& wu = state.workunits.at(ref->wu);
    if (ended_unfinished(wu.state) || wu.files_deleted || wu.sequence) {
      spdlog::info("host {} reported result '{}' after its deadline; its workunit no longer "
                   "uses it",
                   host, rep.name);
      out.messages.push_back({"Task " + rep.name
                                + " arrived after its deadline and is no longer needed: it "
                                  "gets no credit.",
                              false});
      continue;
    }
    // Late: no app units (they feed statistics the timeout has already settled), no scale of
    // the host's (on probation: its credit is the quorum's or the canonical result's).
    ev::result_reported x{*ref, host, report_from(rep), {}, true, 0};
    x.late = true;
    emit(events, std::move(x), now);
    out.workunits.push_back(ref->wu);
    spdlog::info("host {} reported result '{}' after its deadline: counted late", host, rep.name);
  }
  return out;
}

} // namespace cobble
