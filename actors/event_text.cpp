#include "actors/event_text.hpp"

#include "actors/code_sign.hpp"
#include "actors/routing.hpp"
#include "actors/state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <string>
#include <variant>

namespace cobble {

namespace {

/// The event's fields as key=value text (describe's detail).
std::string detail_of(const event& e) {
  return std::visit(
    overload{
      [](const ev::project_configured& x) {
        return fmt::format("name={} apps={}", x.name, x.apps.size());
      },
      [](const ev::user_created& x) { return fmt::format("name={}", x.name); },
      [](const ev::host_registered& x) {
        return fmt::format("user={} ncpus={} fpops={:g}", x.user, x.info.p_ncpus, x.info.p_fpops);
      },
      [](const ev::host_described& x) {
        return fmt::format("ncpus={} fpops={:g}", x.info.p_ncpus, x.info.p_fpops);
      },
      [](const ev::workunit_created& x) {
        auto text = fmt::format("name={} app={} results={} by={}", x.name, x.app, x.n_results,
                                x.submitter);
        if (!x.batch_key.empty())
          text += fmt::format(" batch_key={} batch_size={}", x.batch_key, x.batch_size);
        return text;
      },
      [](const ev::results_created& x) {
        return fmt::format("count={} reason={}{}", x.count, x.reason, x.check ? " CHECK" : "");
      },
      [](const ev::result_dispatched& x) {
        return fmt::format("result={} host={} deadline={:.0f} version={}", x.result.index, x.host,
                           us_to_seconds(x.deadline), x.version.app_version_id);
      },
      [](const ev::result_reported& x) {
        return fmt::format("result={} host={} success={} exit={} elapsed={:g} aus={:g}{}{}{}",
                           x.result.index, x.host, x.report.success, x.report.exit_status,
                           x.report.elapsed, reported_app_units(x.report),
                           (x.report.flags & (flag_bad_elapsed | flag_bad_cpu | flag_bad_app_units))
                             ? " FLAGGED"
                             : "",
                           (x.report.flags & flag_suspect) ? " SUSPECT" : "",
                           x.late ? " LATE" : "");
      },
      [](const ev::result_timed_out& x) {
        return fmt::format("result={} host={}", x.result.index, x.host);
      },
      [](const ev::workunit_validated& x) {
        std::string v;
        for (const auto& d : x.verdicts)
          v += fmt::format(" {}:{}", d.index, d.valid ? "valid" : "invalid");
        double granted = 0;
        for (const auto& c : x.credit)
          granted = std::max(granted, c.granted);
        return fmt::format("canonical={}{}{}",
                           x.canonical ? std::to_string(*x.canonical) : std::string{"-"}, v,
                           x.credit.empty() ? std::string{}
                                            : fmt::format(" granted={:g}", granted));
      },
      [](const ev::workunit_assimilated& x) { return fmt::format("canonical={}", x.canonical); },
      [](const ev::workunit_failed& x) { return fmt::format("reason={}", x.reason); },
      [](const ev::workunit_files_deleted& x) {
        return fmt::format("inputs_deleted={}", x.inputs.size());
      },
      [](const ev::sequence_created& x) {
        return fmt::format("name={} app={} elements={} replicas={} max_result_time={:g} by={}",
                           x.name, x.app, x.elements.size(), x.replicas, x.max_result_time, x.by);
      },
      [](const ev::sequence_extended& x) {
        return fmt::format("elements={} by={}", x.elements.size(), x.by);
      },
      [](const ev::sequence_ended& x) {
        return fmt::format("cancelled={} reason={} by={}", x.cancelled.size(), x.reason, x.by);
      },
      [](const ev::sequence_assigned& x) {
        return fmt::format("replica={} host={} by={}", x.replica, x.host, x.by);
      },
      [](const ev::sequence_deassigned& x) {
        return fmt::format("replica={} host={} restart={} dead={} state_files={} reason={} by={}",
                           x.replica, x.host, x.restart, x.dead.size(), x.restart_inputs.size(),
                           x.reason, x.by);
      },
      [](const ev::sequence_restart_saved& x) {
        std::string files;
        for (std::size_t i = 0; i < x.files.size(); ++i)
          files += fmt::format("{}{}={}", i ? "," : "",
                               i < x.open_names.size() ? x.open_names[i] : "?", x.files[i].name);
        return fmt::format("replica={} position={} wu={} files={}", x.replica, x.position, x.wu,
                           files);
      },
      [](const ev::sequence_element_checked& x) {
        return fmt::format("position={} {}", x.position, x.agree ? "agree" : "DISAGREE");
      },
      [](const ev::host_result_validated& x) {
        return fmt::format("result={}_{} version={} valid={} pfc/E={:g} et/E={:g}{} granted={:g}",
                           x.result.wu, x.result.index, version_label(x.app_version_id), x.valid,
                           x.pfc_sample, x.et_sample, x.cheat ? " CHEAT" : "", x.granted);
      },
      [](const ev::credit_normalized& x) {
        std::string v;
        for (const auto& s : x.versions)
          v += fmt::format(" v{}:pfc={:g}/n={}/scale={:g}", s.id, s.pfc.avg, s.pfc.n, s.scale);
        return fmt::format("app={} min_avg_pfc={:g}{}", x.app, x.min_avg_pfc, v);
      },
      [](const ev::credit_imported& x) {
        return fmt::format("source={} records={}", x.source, x.records.size());
      },
      [](const ev::autoflops_sampled& x) {
        std::string v;
        for (const auto& s : x.samples)
          v += fmt::format(" {}:{:g}", s.gpu ? "gpu" : "cpu", s.value);
        return fmt::format("app={} predicted={:g} actual={:g} raw_flops_per_au:{}", x.app,
                           x.predicted, x.actual, v.empty() ? std::string{" -"} : v);
      },
      [](const ev::output_received& x) {
        return fmt::format("result={}_{} host={} output={} file={} nbytes={:g} md5={}", x.result.wu,
                           x.result.index, x.host, x.index, x.file.name, x.file.nbytes, x.file.md5);
      },
      [](const ev::app_added& x) { return fmt::format("name={} by={}", x.app.name, x.by); },
      [](const ev::app_version_added& x) {
        const auto& v = x.version;
        std::string main;
        for (const auto& f : v.files)
          if (f.main_program)
            main = f.name;
        return fmt::format("version={} platform={} version_num={} plan_class={} files={} main={} "
                           "by={}",
                           v.id, v.platform, v.version_num,
                           v.plan_class.empty() ? std::string{"-"} : v.plan_class, v.files.size(),
                           main.empty() ? std::string{"-"} : main, x.by);
      },
      [](const ev::app_version_deprecated& x) {
        return fmt::format("version={} {} by={}", x.version,
                           x.deprecated ? "deprecated" : "offered again", x.by);
      },
      [](const ev::code_sign_key_added& x) {
        return fmt::format("key_md5={} {} by={}", key_fingerprint(x.public_key),
                           x.signature.empty() ? "first key" : "signed by the previous key", x.by);
      },
      [](const ev::host_reattached& x) {
        using match = ev::host_match;
        auto how = static_cast<match>(x.match);
        return fmt::format("user={} match={}", x.user,
                           how == match::cpid     ? "cpid"
                           : how == match::traits ? "traits"
                                                  : std::to_string(x.match));
      },
      [](const ev::result_written_off& x) {
        using reason = ev::write_off_reason;
        auto why = static_cast<reason>(x.reason);
        return fmt::format("result={} host={} reason={}", x.result.index, x.host,
                           why == reason::detached ? "detached"
                           : why == reason::lost   ? "lost"
                                                   : std::to_string(x.reason));
      },
      [](const ev::result_resent& x) {
        return fmt::format("result={} host={} deadline={:.0f}", x.result.index, x.host,
                           us_to_seconds(x.deadline));
      },
      [](const ev::user_changed& x) {
        return fmt::format("name={} team={}", x.name, x.team.empty() ? "-" : x.team);
      },
      [](const ev::team_created& x) {
        return fmt::format("name={} founder={}", x.name, x.founder);
      },
      [](const ev::workunit_cancelled& x) {
        std::string aborted;
        for (const auto& [host, name] : x.aborted)
          aborted += fmt::format("{}{}@{}", aborted.empty() ? "" : ",", name, host);
        return fmt::format("aborted={} reason={} by={}", aborted.empty() ? "-" : aborted, x.reason,
                           x.by);
      },
    },
    e.data);
}

/// A moment as UTC date and time, for sentences.
std::string utc_text(time_us t) {
  std::time_t seconds = static_cast<std::time_t>(t / us_per_second);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

/// Seconds as people read a run time: 42 s, 12.5 min, 3.2 h.
std::string duration_text(double seconds) {
  if (seconds < 120)
    return fmt::format("{:.0f} s", seconds);
  if (seconds < 7200)
    return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

const char* plural(std::uint64_t n) {
  return n == 1 ? "" : "s";
}

} // namespace

std::string describe(const event& e) {
  auto [k, id] = entity_of(e.data);
  return fmt::format("#{} {:.3f} p{} {} {}:{}", e.seq, us_to_seconds(e.time), e.project,
                     kind_name(kind_of(e.data)), to_string(k), id)
         + " " + detail_of(e);
}

std::string story_of(const event& e, const result_namer& name) {
  return std::visit(
    overload{
      [&](const ev::user_created& x) {
        return fmt::format("Account {} made, named {}{}.", x.id, x.name,
                           x.team.empty() ? "" : ", in team " + x.team);
      },
      [&](const ev::user_changed& x) {
        return fmt::format("Account {} changed: named {}, team {}.", x.id, x.name,
                           x.team.empty() ? "none" : x.team);
      },
      [&](const ev::host_registered& x) {
        return fmt::format("Host {} attached for account {}: {} processor{}, {:.2f} GFLOPS each.",
                           x.id, x.user, x.info.p_ncpus, plural(x.info.p_ncpus),
                           x.info.p_fpops / 1e9);
      },
      [&](const ev::host_described& x) {
        return fmt::format("Host {} described itself again: {} processor{}, {:.2f} GFLOPS each.",
                           x.id, x.info.p_ncpus, plural(x.info.p_ncpus), x.info.p_fpops / 1e9);
      },
      [&](const ev::host_reattached& x) {
        return fmt::format("Host {} attached again for account {} and was recognised as the same "
                           "computer.",
                           x.host, x.user);
      },
      [&](const ev::workunit_created& x) {
        return fmt::format("Workunit {} created by {}, {} result{} to start with.", x.name,
                           x.submitter.empty() ? "the operator" : x.submitter, x.n_results,
                           plural(x.n_results));
      },
      [&](const ev::results_created& x) {
        return fmt::format("{} more result{} made: {}.", x.count, plural(x.count), x.reason);
      },
      [&](const ev::result_dispatched& x) {
        auto plan = x.version.plan_class.str();
        return fmt::format("Result {} sent to host {}, which asked for work: app version {}{}, "
                           "due {}{}.",
                           name(x.result), x.host, x.version.version_num,
                           plan.empty() ? "" : " (" + plan + ")", utc_text(x.deadline),
                           x.jobs_per_day > 0
                             ? fmt::format("; the host may take {} a day of it", x.jobs_per_day)
                             : std::string{});
      },
      [&](const ev::result_resent& x) {
        return fmt::format("Result {} sent again to host {}, which had lost it; due {}.",
                           name(x.result), x.host, utc_text(x.deadline));
      },
      [&](const ev::result_reported& x) {
        const auto& r = x.report;
        std::string how;
        if (r.success)
          how = "finished";
        else if (r.client_state == client_state_aborted)
          how = "aborted";
        else
          how = fmt::format("failed (exit status {})", r.exit_status);
        return fmt::format("Result {} {} on host {} after {} ({} of CPU){}.", name(x.result), how,
                           x.host, duration_text(r.elapsed), duration_text(r.cpu),
                           x.late ? "; reported after its deadline" : "");
      },
      [&](const ev::output_received& x) {
        return fmt::format("Output {} of result {} uploaded by host {} ({} bytes).", x.index,
                           name(x.result), x.host, x.file.nbytes);
      },
      [&](const ev::result_timed_out& x) {
        return fmt::format("Result {} timed out on host {}: no report by its deadline.",
                           name(x.result), x.host);
      },
      [&](const ev::result_written_off& x) {
        auto why = static_cast<ev::write_off_reason>(x.reason);
        return fmt::format("Result {} written off from host {}: {}.", name(x.result), x.host,
                           why == ev::write_off_reason::lost
                             ? "the host no longer had it"
                             : "the host attached again without it");
      },
      [&](const ev::workunit_validated& x) {
        std::string verdicts;
        for (std::size_t i = 0; i < x.verdicts.size(); ++i) {
          const auto& d = x.verdicts[i];
          verdicts += fmt::format("{}{} {}", verdicts.empty() ? "" : ", ", name({x.wu, d.index}),
                                  d.valid ? "valid" : "invalid");
          if (d.valid && i < x.credit.size())
            verdicts += fmt::format(" ({:.2f} credit)", x.credit[i].granted);
        }
        return fmt::format("Validated: {}{}.", verdicts.empty() ? "nothing" : verdicts,
                           x.canonical ? "; canonical " + name({x.wu, *x.canonical}) : "");
      },
      [&](const ev::host_result_validated& x) {
        return fmt::format("Host {} credited {:.2f} for result {} ({}){}.", x.host, x.granted,
                           name(x.result), x.valid ? "valid" : "invalid",
                           x.cheat ? "; judged a one-time cheat" : "");
      },
      [&](const ev::workunit_assimilated& x) {
        return fmt::format("Assimilated: the project kept result {}.", name({x.wu, x.canonical}));
      },
      [&](const ev::workunit_failed& x) { return fmt::format("Workunit failed: {}.", x.reason); },
      [&](const ev::workunit_cancelled& x) {
        std::string aborted;
        for (const auto& [host, result] : x.aborted)
          aborted += fmt::format("{}{} on host {}", aborted.empty() ? "" : ", ", result, host);
        return fmt::format("Workunit cancelled by {}: {}{}.", x.by.empty() ? "the operator" : x.by,
                           x.reason, aborted.empty() ? "" : "; taken back: " + aborted);
      },
      [&](const ev::workunit_files_deleted& x) {
        return fmt::format("Files deleted ({} input{} no other workunit used).", x.inputs.size(),
                           plural(x.inputs.size()));
      },
      [&](const ev::team_created& x) {
        return fmt::format("Team {} founded by account {}.", x.name, x.founder);
      },
      [&](const auto&) { return fmt::format("{}: {}.", kind_name(kind_of(e.data)), detail_of(e)); },
    },
    e.data);
}

} // namespace cobble
