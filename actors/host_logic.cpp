#include "actors/host_logic.hpp"

#include "actors/autoflops.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>

namespace cobble {

host_info_rec host_info_from(const sched_request& req) {
  host_info_rec h;
  h.host_cpid = req.host.host_cpid;
  h.domain_name = req.host.domain_name;
  h.p_ncpus = req.host.p_ncpus;
  h.p_vendor = req.host.p_vendor;
  h.p_model = req.host.p_model;
  h.p_fpops = req.host.p_fpops;
  h.p_iops = req.host.p_iops;
  h.m_nbytes = req.host.m_nbytes;
  h.d_free = req.host.d_free;
  h.os_name = req.host.os_name;
  h.os_version = req.host.os_version;
  for (const auto& c : req.coprocs) {
    h.coprocs.emplace_back(static_cast<std::uint8_t>(c.type), c.count);
    h.coproc_peak_flops.push_back(c.peak_flops);
  }
  return h;
}

report_rec report_from(const reported_result& r) {
  constexpr double year = 365.0 * 86400;
  report_rec rep;
  rep.client_state = r.state;
  rep.exit_status = r.exit_status;
  // BOINC's "files uploaded" state with exit 0 is a success; anything else is an error.
  rep.success = r.state == 5 && r.exit_status == 0;
  rep.elapsed = r.final_elapsed_time;
  rep.cpu = r.final_cpu_time;
  // A success in no time would drag the host's runtime averages to 0 (and its estimates
  // with them, so that it is sent more work than it can do).
  if (!std::isfinite(rep.elapsed) || rep.elapsed < 0 || rep.elapsed > year
      || (rep.success && !(rep.elapsed > 0)))
    rep.flags |= flag_bad_elapsed;
  if (!std::isfinite(rep.cpu) || rep.cpu < 0 || rep.cpu > 64 * year)
    rep.flags |= flag_bad_cpu;
  for (const auto& f : r.files)
    rep.outputs.push_back(file_rec{f.name, f.nbytes, f.md5_cksum});
  return rep;
}

std::map<std::uint32_t, autoflops_settings> autoflops_by_version(const std::vector<app_rec>& apps) {
  std::map<std::uint32_t, autoflops_settings> out;
  for (const auto& a : apps) {
    for (const auto& v : a.versions)
      out[v.id] = a.autoflops;
    for (std::uint8_t t = 0; t < n_resource_types; ++t)
      out[anonymous_version_id(a.id, t)] = a.autoflops;
  }
  return out;
}

std::map<std::uint32_t, std::uint8_t> resources_by_version(const std::vector<app_rec>& apps) {
  std::map<std::uint32_t, std::uint8_t> out;
  for (const auto& a : apps) {
    for (const auto& v : a.versions)
      out[v.id] = v.resource;
    for (std::uint8_t t = 0; t < n_resource_types; ++t)
      out[anonymous_version_id(a.id, t)] = t;
  }
  return out;
}

double sendwork_wait(std::optional<time_us> last, time_us now, double interval) {
  if (!last || !(interval > 0))
    return 0;
  double since = us_to_seconds(now - *last);
  return since >= interval ? 0.0 : interval - std::max(since, 0.0);
}

bool same_description(const host_info_rec& kept, const host_info_rec& now) {
  auto a = kept;
  a.d_free = now.d_free;
  if (!(a == now))
    return false;
  return std::abs(now.d_free - kept.d_free) <= 0.1 * std::abs(kept.d_free);
}

void add_grant(sched_reply& reply, const job_grant& grant) {
  std::set<std::string> files;
  for (const auto& f : reply.files)
    files.insert(f.name);
  // The versions' files come before the jobs' (sched_reply::files).
  for (const auto& f : grant.version_files)
    if (files.insert(f.name).second)
      reply.files.push_back(f);
  reply.apps.insert(reply.apps.end(), grant.apps.begin(), grant.apps.end());
  reply.app_versions.insert(reply.app_versions.end(), grant.app_versions.begin(),
                            grant.app_versions.end());
  if (!grant.code_sign_key.empty()) {
    reply.code_sign_key = grant.code_sign_key;
    reply.code_sign_key_signature = grant.code_sign_key_signature;
  }
  for (const auto& job : grant.jobs) {
    for (const auto& f : job.files)
      if (files.insert(f.name).second)
        reply.files.push_back(f);
    reply.workunits.push_back(job.workunit);
    reply.results.push_back(job.result);
  }
  reply.sequences_revoked = grant.sequences_revoked;
  reply.result_aborts.insert(reply.result_aborts.end(), grant.aborts.begin(), grant.aborts.end());
  reply.messages.insert(reply.messages.end(), grant.messages.begin(), grant.messages.end());
  reply.app_units = grant.app_units;
}

bool wants_project(const job_request& req) {
  return req.send_work || !req.sequences_held.empty()
         || std::any_of(req.other_results.begin(), req.other_results.end(),
                        [](const std::string& n) { return is_sequence_name(n); });
}

// -- host_logic -------------------------------------------------------------------------

event host_logic::make(payload p, time_us now) const {
  event e;
  e.time = now;
  e.project = settings_.project;
  e.data = std::move(p);
  return e;
}

const autoflops_settings* host_logic::app_units_policy(std::uint32_t version) const {
  auto i = settings_.autoflops.find(version);
  if (i == settings_.autoflops.end() || i->second.policy != credit_policy::app_units)
    return nullptr;
  return &i->second;
}

std::optional<event> host_logic::describe(const host_info_rec& info, time_us now) {
  if (same_description(state_.info, info))
    return std::nullopt;
  auto e = make(ev::host_described{state_.id, info}, now);
  apply(state_, e, {}, settings_.credit);
  return e;
}

namespace {

/// A client's text for a log line: at most 100 characters, anything but printable ASCII as '?'.
std::string loggable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 100))
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return out;
}

/// loggable() of the text between `open` and `close` in `s` (empty when absent).
std::string loggable_between(std::string_view s, std::string_view open, std::string_view close) {
  auto a = s.find(open);
  if (a == std::string_view::npos)
    return {};
  a += open.size();
  auto b = s.find(close, a);
  return loggable(s.substr(a, b == std::string_view::npos ? std::string_view::npos : b - a));
}

/// A client that could not accept a file reports each job that needed it with a
/// `<file_xfer_error>` in its stderr (BOINC's FILE_INFO::failure_message): logged, so that the
/// operator hears of an app file that fails its signature (-120, ERR_RSA_FAILED), has none
/// (-123) or fails its checksum (-119): changed in the download area after it was signed.
/// One line per job the host held, for its first complaint: a client cannot flood the log.
void log_file_error(id_type host, const reported_result& r) {
  std::string_view s = r.stderr_out;
  auto at = s.find("<file_xfer_error>");
  if (at == std::string_view::npos)
    return;
  auto block = s.substr(at, s.find("</file_xfer_error>", at) - at);
  // BOINC writes the code with its name: "-120 (RSA key check failed for file)".
  auto code = loggable_between(block, "<error_code>", "</error_code>");
  auto number = std::string_view{code}.substr(0, code.find(' '));
  bool integrity = number == "-119" || number == "-120" || number == "-123";
  spdlog::warn("host {} could not accept file {} for result '{}': error {}, {}{}", host,
               loggable_between(block, "<file_name>", "</file_name>"), loggable(r.name), code,
               loggable_between(block, "<error_message>", "</error_message>"),
               integrity ? "; the file in the download area no longer matches what was "
                           "signed: compare its MD5 with the version's (cobble app show)"
                         : "");
}

} // namespace

report_outcome host_logic::report(const sched_request& req, time_us now) {
  report_outcome out;
  for (const auto& r : req.results) {
    out.acks.push_back(r.name);
    auto held = state_.in_progress.find(r.name);
    if (held == state_.in_progress.end()) {
      if (!is_sequence_name(r.name)) {
        out.unheld.push_back(r);
        continue;
      }
      spdlog::info("host {} reported sequence element '{}' it does not hold: acknowledged, "
                   "not applied",
                   state_.id, r.name);
      out.messages.push_back({"Result " + r.name
                                + " was not accepted: this host no longer holds it (its work "
                                  "sequence was taken from the host, or ended).",
                              false});
      continue;
    }
    log_file_error(state_.id, r);
    auto rep = report_from(r);
    if ((rep.flags & (flag_bad_elapsed | flag_bad_cpu)) != 0)
      spdlog::warn("host {} reported result '{}' with implausible times (elapsed {}, cpu {}): "
                   "stored as reported, flagged",
                   state_.id, r.name, r.final_elapsed_time, r.final_cpu_time);
    out.workunits.push_back(held->second.result.wu);
    // AutoFlops: the job's app units, and its raw_flops_per_au when the client says what its
    // raw FLOPS were (its own figure, or T × raw_flops_per_sec / A).
    // Units far from the job's prediction would move the app's running means for good (one
    // report of 1e6 made every later completion estimate miss its deadline): flagged and
    // left out of the report.
    if (std::isfinite(r.app_units) && r.app_units > 0) {
      double predicted = held->second.predicted_app_units;
      double k = settings_.limits.app_units_factor;
      if (predicted > 0 && k > 1 && (r.app_units > k * predicted || r.app_units * k < predicted)) {
        rep.flags |= flag_bad_app_units;
        spdlog::warn("host {} reported result '{}' with {} app units against {} predicted: "
                     "flagged, kept out of the statistics",
                     state_.id, r.name, r.app_units, predicted);
      } else {
        rep.app_units = r.app_units;
      }
    }
    if (std::isfinite(r.raw_flops_per_au) && r.raw_flops_per_au > 0) {
      rep.raw_flops_per_au = r.raw_flops_per_au;
    } else {
      const app_unit_version* match = nullptr;
      int matches = 0;
      for (const auto& u : req.app_unit_versions)
        if (u.version_num == r.version_num && u.plan_class == r.plan_class
            && u.raw_flops_per_sec > 0) {
          match = &u;
          ++matches;
        }
      if (matches == 1)
        rep.raw_flops_per_au = raw_flops_per_au(rep.elapsed, match->raw_flops_per_sec,
                                                reported_app_units(rep))
                                 .value_or(0);
    }
    // The report carries what the host knows of its scale for that version, so the validator
    // can compute Scale(H) without asking.
    ev::result_reported x{held->second.result, state_.id, rep, {}, true, 0};
    auto policy = app_units_policy(held->second.app_version_id);
    if (auto hav = state_.app_versions.find(held->second.app_version_id);
        hav != state_.app_versions.end()) {
      x.host_pfc = hav->second.pfc;
      x.probation = hav->second.scale_probation;
      x.scale_time = hav->second.host_scale_time;
      // Cherry picking: a host whose error rate (aborts, timeouts, errors) is high is under
      // suspicion; its jobs validated alone are checked.
      if (policy && hav->second.error_rate > policy->suspicion_error_rate)
        x.report.flags |= flag_suspect;
    }
    if (policy && rep.client_state == client_state_aborted)
      x.quota_factor = policy->abort_quota_factor;
    auto e = make(std::move(x), now);
    apply(state_, e, r.name, settings_.credit);
    out.events.push_back(std::move(e));
  }
  return out;
}

job_request host_logic::job_request_for(const sched_request& req, const host_info_rec& info,
                                        std::vector<id_type> reported, time_us now) const {
  job_request jr;
  jr.host = state_.id;
  jr.info = info;
  // A claim of many processors would widen every quota that scales with them.
  const auto& lim = settings_.limits;
  jr.info.p_ncpus = std::clamp(jr.info.p_ncpus, 0, lim.max_ncpus);
  for (auto& [type, count] : jr.info.coprocs)
    count = std::clamp(count, 0, lim.max_ngpus);
  bool wants = false;
  for (int t = 0; t < n_resource_types; ++t) {
    jr.requests.push_back(req.request_for(static_cast<resource_type>(t)));
    wants = wants || jr.requests.back().wants_work();
  }
  jr.send_work = wants && !req.dont_send_work;
  jr.sequences_held = req.sequences_held;
  jr.reported = std::move(reported);
  // Jobs in progress per resource, against its cap (per capped CPU, per capped GPU).
  std::vector<int> held(n_resource_types, 0);
  for (const auto& [name, h] : state_.in_progress)
    if (auto r = settings_.resources.find(h.app_version_id);
        r != settings_.resources.end() && r->second < n_resource_types)
      ++held[r->second];
  jr.in_progress_left.assign(n_resource_types, -1);
  for (std::uint8_t t = 0; t < n_resource_types; ++t) {
    bool cpu = t == static_cast<std::uint8_t>(resource_type::cpu);
    int per = cpu ? lim.max_jobs_in_progress : lim.max_gpu_jobs_in_progress;
    if (per <= 0)
      continue;
    int devices = cpu ? jr.info.p_ncpus : 0;
    for (const auto& [type, count] : jr.info.coprocs)
      if (!cpu && type == t)
        devices = count;
    jr.in_progress_left[t] = std::max(0, per * std::max(devices, 1) - held[t]);
  }
  for (const auto& o : req.other_results)
    jr.other_results.push_back(o.name);
  // The rest only matters to job selection (most RPCs only report).
  if (!wants_project(jr))
    return jr;
  for (const auto& [id, hav] : state_.app_versions)
    if (hav.elapsed_n > 0)
      jr.avg_elapsed[id] = hav.elapsed_sum / static_cast<double>(hav.elapsed_n);
  // Only the platform says so: 7.x clients list the versions they hold in every request,
  // anonymous or not (so that <other_results> can name one by index).
  jr.anonymous = req.platform_name == "anonymous";
  jr.offered = req.app_versions;
  jr.platform = req.platform_name;
  jr.alt_platforms = req.alt_platforms;
  jr.coprocs = req.coprocs;
  jr.client_version = req.core_client_major_version * 10000 + req.core_client_minor_version * 100
                      + req.core_client_release;
  for (const auto& [id, hav] : state_.app_versions)
    jr.hints[id] = version_hint{hav.jobs_left(now), hav.et, hav.spau, hav.spau_var};
  jr.unit_versions = req.app_unit_versions;
  jr.code_sign_key = req.code_sign_key;
  return jr;
}

std::vector<reply_message> host_logic::limit_messages(const job_request& jr) const {
  std::vector<reply_message> out;
  if (!jr.send_work)
    return out;
  for (std::size_t t = 0; t < jr.requests.size() && t < jr.in_progress_left.size(); ++t)
    if (jr.requests[t].wants_work() && jr.in_progress_left[t] == 0)
      out.push_back({std::string("This computer has reached a limit on tasks in progress (")
                       + to_string(static_cast<resource_type>(t)) + ").",
                     false});
  return out;
}

std::vector<event> host_logic::time_out(const std::vector<std::string>& names, time_us now) {
  std::vector<event> events;
  for (const auto& name : names) {
    auto held = state_.in_progress.find(name);
    if (held == state_.in_progress.end())
      continue;
    ev::result_timed_out x{held->second.result, state_.id};
    if (auto policy = app_units_policy(held->second.app_version_id))
      x.quota_factor = policy->abort_quota_factor;
    auto e = make(x, now);
    apply(state_, e, name, settings_.credit);
    events.push_back(std::move(e));
  }
  return events;
}

std::vector<event> host_logic::write_off(ev::write_off_reason reason, time_us now) {
  std::vector<event> events;
  std::vector<std::string> names;
  for (const auto& [name, held] : state_.in_progress)
    if (sequence_of_wu(held.result.wu) == 0)
      names.push_back(name);
  for (const auto& name : names) {
    const auto& held = state_.in_progress.at(name);
    auto e = make(ev::result_written_off{held.result, state_.id, static_cast<std::uint8_t>(reason)},
                  now);
    apply(state_, e, name, settings_.credit);
    events.push_back(std::move(e));
  }
  return events;
}

std::vector<std::string> host_logic::lost(const sched_request& req) const {
  std::vector<std::string> out;
  if (!req.other_results_listed)
    return out;
  std::set<std::string_view> listed;
  for (const auto& o : req.other_results)
    listed.insert(o.name);
  for (const auto& r : req.results)
    listed.insert(r.name);
  for (const auto& [name, held] : state_.in_progress)
    if (sequence_of_wu(held.result.wu) == 0 && listed.count(name) == 0)
      out.push_back(name);
  return out;
}

std::vector<event> host_logic::learn(const std::vector<validation_notice>& notices, time_us now) {
  std::vector<event> events;
  for (const auto& n : notices) {
    auto e = make(n.data, now);
    apply(state_, e, n.result_name, settings_.credit);
    events.push_back(std::move(e));
  }
  return events;
}

} // namespace cobble
