#include "net/admin_json.hpp"

#include "net/json_reader.hpp"
#include "net/xml_text.hpp"

#include <algorithm>
#include <limits>
#include <set>

namespace cobble::net {

using nlohmann::json;

namespace {

json optional_string(const std::string& s) {
  return s.empty() ? json(nullptr) : json(s);
}

/// Files with a name (a result's received outputs have none for an output not arrived).
json files_json(const std::vector<file_rec>& files) {
  auto out = json::array();
  for (const auto& f : files)
    if (!f.name.empty())
      out.push_back({{"name", f.name}, {"nbytes", f.nbytes}, {"md5", f.md5}});
  return out;
}

json flags_json(std::uint8_t flags) {
  auto out = json::array();
  if (flags & flag_bad_elapsed)
    out.push_back("bad_elapsed");
  if (flags & flag_bad_cpu)
    out.push_back("bad_cpu");
  return out;
}

const char* resource_name(std::uint8_t r) {
  switch (r) {
    case 0:
      return "cpu";
    case 1:
      return "nvidia";
    case 2:
      return "ati";
    case 3:
      return "intel_gpu";
  }
  return "unknown";
}

json params_json(const wu_params& p) {
  json inputs = json::array();
  for (std::size_t i = 0; i < p.inputs.size(); ++i)
    inputs.push_back({{"stored_name", p.inputs[i].name},
                      {"open_name", i < p.input_open_names.size() ? p.input_open_names[i] : ""},
                      {"nbytes", p.inputs[i].nbytes},
                      {"md5", p.inputs[i].md5}});
  return {{"command_line", p.command_line},
          {"rsc_fpops_est", p.rsc_fpops_est},
          {"rsc_fpops_bound", p.rsc_fpops_bound},
          {"rsc_memory_bound", p.rsc_memory_bound},
          {"rsc_disk_bound", p.rsc_disk_bound},
          {"delay_bound", p.delay_bound},
          {"min_quorum", p.min_quorum},
          {"target_nresults", p.target_nresults},
          {"max_error_results", p.max_error_results},
          {"max_total_results", p.max_total_results},
          {"max_success_results", p.max_success_results},
          {"predicted_app_units", p.predicted_app_units},
          {"inputs", std::move(inputs)}};
}

json counts_json(const workunit_rec& wu) {
  std::size_t unsent = 0, in_progress = 0, over = 0, success = 0, errors = 0, valid = 0;
  for (const auto& r : wu.results) {
    switch (r.state) {
      case result_state::unsent:
        ++unsent;
        break;
      case result_state::in_progress:
        ++in_progress;
        break;
      case result_state::over:
        ++over;
        break;
    }
    if (r.state == result_state::over && r.outcome == result_outcome::success)
      ++success;
    else if (r.state == result_state::over && r.outcome != result_outcome::didnt_need
             && r.outcome != result_outcome::client_detached)
      ++errors;
    if (r.validation == validate_state::valid)
      ++valid;
  }
  return {{"total", wu.results.size()},
          {"unsent", unsent},
          {"in_progress", in_progress},
          {"over", over},
          {"success", success},
          {"error", errors},
          {"valid", valid}};
}

std::string canonical_name(const workunit_view& v) {
  if (!v.wu.canonical)
    return {};
  auto i = *v.wu.canonical;
  if (i < v.result_names.size())
    return v.result_names[i];
  return v.wu.name + "_" + std::to_string(i);
}

json workunit_head(const workunit_view& v) {
  auto canonical = canonical_name(v);
  return {{"id", v.wu.id},
          {"name", v.wu.name},
          {"app", v.app_name},
          {"state", to_string(v.wu.state)},
          {"created", time_json(v.wu.created)},
          {"finished", time_json(v.wu.finished)},
          {"files_deleted", v.wu.files_deleted},
          {"canonical_result", optional_string(canonical)},
          {"failure", optional_string(v.wu.failure)},
          {"granted_credit", v.wu.canonical && *v.wu.canonical < v.wu.results.size()
                               ? json(v.wu.results[*v.wu.canonical].credit->granted)
                               : json(nullptr)},
          {"result_counts", counts_json(v.wu)}};
}

// -- parsing ----------------------------------------------------------------

/// Reads an optional `inputs` array of {stored_name, open_name, nbytes, md5}.
std::optional<std::string>
parse_inputs(reader& r, const json& item, const std::string& where, std::vector<input_spec>& out) {
  if (!r.ok() || !r.has("inputs"))
    return std::nullopt;
  const auto& ins = item.at("inputs");
  if (!ins.is_array()) {
    r.fail("field 'inputs' must be an array");
    return std::nullopt;
  }
  for (std::size_t i = 0; i < ins.size() && r.ok(); ++i) {
    auto in_where = ", input " + std::to_string(i) + where;
    if (!ins[i].is_object()) {
      r.fail("an input must be an object, input " + std::to_string(i));
      break;
    }
    reader ri{ins[i], in_where};
    ri.only({"stored_name", "open_name", "nbytes", "md5"});
    input_spec in;
    ri.string("stored_name", in.stored_name, true);
    ri.string("open_name", in.open_name, true);
    ri.number("nbytes", in.nbytes);
    ri.string("md5", in.md5);
    if (!ri.ok())
      return ri.error();
    out.push_back(std::move(in));
  }
  return std::nullopt;
}

/// Largest `count` accepted in one spec (a batch is one commit and one answer).
constexpr int max_count = 100000;

std::optional<std::string>
parse_spec(const json& item, const std::string& where, std::vector<work_spec>& out) {
  if (!item.is_object())
    return "a work spec must be an object" + where;
  reader r{item, where};
  r.only({"app", "name", "command_line", "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound",
          "rsc_disk_bound", "delay_bound", "min_quorum", "target_nresults", "max_error_results",
          "max_total_results", "max_success_results", "count", "inputs", "predicted_app_units"});
  work_spec w;
  r.string("app", w.app, true);
  r.string("name", w.name);
  r.string("command_line", w.command_line);
  r.number("rsc_fpops_est", w.rsc_fpops_est);
  r.number("rsc_fpops_bound", w.rsc_fpops_bound);
  r.number("rsc_memory_bound", w.rsc_memory_bound);
  r.number("rsc_disk_bound", w.rsc_disk_bound);
  r.number("delay_bound", w.delay_bound);
  r.number("predicted_app_units", w.predicted_app_units);
  r.integer("min_quorum", w.min_quorum);
  r.integer("target_nresults", w.target_nresults);
  r.integer("max_error_results", w.max_error_results);
  r.integer("max_total_results", w.max_total_results);
  r.integer("max_success_results", w.max_success_results);
  std::optional<int> count;
  r.integer("count", count);
  if (r.ok() && w.app.empty())
    r.fail("field 'app' must not be empty");
  if (r.ok() && count && (*count < 1 || *count > max_count))
    r.fail("field 'count' must be between 1 and " + std::to_string(max_count));
  if (r.ok() && count && !w.name.empty())
    r.fail("fields 'count' and 'name' exclude each other (names are generated)");
  if (auto err = parse_inputs(r, item, where, w.inputs))
    return err;
  if (!r.ok())
    return r.error();
  for (int i = 0; i < count.value_or(1); ++i)
    out.push_back(w);
  return std::nullopt;
}

} // namespace

json time_json(time_us t) {
  if (t == 0)
    return nullptr;
  return us_to_seconds(t);
}

json teams_json(const std::map<std::string, credit_totals>& teams) {
  json out = json::object();
  for (const auto& [name, c] : teams)
    out[name] = {{"total_credit", c.total},
                 {"expavg_credit", c.expavg},
                 {"expavg_time", time_json(c.expavg_time)}};
  return out;
}

json to_json(const project_summary& s) {
  json counters = {{"workunits_created", s.counters.workunits_created},
                   {"results_created", s.counters.results_created},
                   {"results_dispatched", s.counters.results_dispatched},
                   {"results_reported", s.counters.results_reported},
                   {"results_timed_out", s.counters.results_timed_out},
                   {"workunits_validated", s.counters.workunits_validated},
                   {"workunits_assimilated", s.counters.workunits_assimilated},
                   {"workunits_failed", s.counters.workunits_failed},
                   {"workunits_cancelled", s.counters.workunits_cancelled},
                   {"hosts_reattached", s.counters.hosts_reattached},
                   {"results_written_off", s.counters.results_written_off},
                   {"results_resent", s.counters.results_resent},
                   {"results_late", s.counters.results_late}};
  json apps = json::array();
  for (const auto& a : s.apps)
    apps.push_back({{"name", a.name}, {"versions", a.versions}, {"unsent", a.unsent}});
  return {{"name", s.name},
          {"long_name", s.long_name},
          {"users", s.users},
          {"hosts", s.hosts},
          {"workunits", s.workunits},
          {"active_workunits", s.active_workunits},
          {"results_in_progress", s.results_in_progress},
          {"counters", std::move(counters)},
          {"apps", std::move(apps)},
          {"teams", teams_json(s.teams)}};
}

json average_json(const average_var& a) {
  return {{"n", a.n}, {"avg", a.avg}};
}

/// Credit totals; the recent average is as of its last grant (expavg_time).
json totals_json(const credit_totals& c) {
  return {{"total_credit", c.total},
          {"expavg_credit", c.expavg},
          {"expavg_time", time_json(c.expavg_time)}};
}

json credit_json(const result_rec& r) {
  if (r.validation != validate_state::valid)
    return nullptr;
  const auto& c = *r.credit;
  json flags = json::array();
  for (auto [bit, name] :
       {std::pair{credit_default_pfc, "default_pfc"},
        std::pair{credit_one_time_cheat, "one_time_cheat"},
        std::pair{credit_anonymous, "anonymous"}, std::pair{credit_probation, "probation"},
        std::pair{credit_fallback, "fallback"}, std::pair{credit_app_units, "app_units"}})
    if (c.flags & bit)
      flags.push_back(name);
  return {{"peak_flops", r.peak_flops}, {"pfc", c.pfc},         {"scale_v", c.scale_v},
          {"scale_h", c.scale_h},       {"claimed", c.claimed}, {"granted", c.granted},
          {"flags", std::move(flags)}};
}

json result_json(const workunit_rec& wu, std::uint32_t index, const std::string& name) {
  const auto& r = wu.results.at(index);
  bool reported = r.received != 0;
  json out = {{"name", name},
              {"index", index},
              {"state", to_string(r.state)},
              {"outcome", to_string(r.outcome)},
              {"validation", to_string(r.validation)},
              {"status", result_words(r)},
              {"canonical", wu.canonical && *wu.canonical == index},
              {"host", r.host == 0 ? json(nullptr) : json(r.host)},
              {"sent", time_json(r.sent)},
              {"deadline", time_json(r.deadline)},
              {"received", time_json(r.received)},
              {"elapsed", reported ? json(r.report->elapsed) : json(nullptr)},
              {"cpu", reported ? json(r.report->cpu) : json(nullptr)},
              {"exit_status", reported ? json(r.report->exit_status) : json(nullptr)},
              {"client_state", reported ? json(r.report->client_state) : json(nullptr)},
              {"success", reported ? json(r.report->success) : json(nullptr)},
              {"flags", flags_json(r.report->flags)},
              {"outputs", files_json(r.report->outputs)},
              {"received_outputs", files_json(*r.arrived)},
              {"credit", credit_json(r)}};
  if (r.sent != 0)
    out["app_version"] = {{"id", r.version.app_version_id},
                          {"platform", r.version.platform.str()},
                          {"version_num", r.version.version_num},
                          {"plan_class", r.version.plan_class.str()}};
  else
    out["app_version"] = nullptr;
  return out;
}

json to_json(const workunit_view& v) {
  auto out = workunit_head(v);
  out["params"] = params_json(*v.wu.params);
  json results = json::array();
  for (std::uint32_t i = 0; i < v.wu.results.size(); ++i) {
    auto name = i < v.result_names.size() ? v.result_names[i] : v.wu.name + "_" + std::to_string(i);
    results.push_back(result_json(v.wu, i, name));
  }
  out["results"] = std::move(results);
  return out;
}

json to_json_brief(const workunit_view& v) {
  return workunit_head(v);
}

workunit_view view_of(const project_state& s, const workunit_rec& wu) {
  workunit_view v;
  v.wu = wu;
  auto app = s.app(wu.app);
  v.app_name = app ? app->name : "?";
  for (std::uint32_t i = 0; i < wu.results.size(); ++i)
    v.result_names.push_back(s.result_name({wu.id, i}));
  return v;
}

json to_json(const host_info_rec& info) {
  json coprocs = json::array();
  for (std::size_t i = 0; i < info.coprocs.size(); ++i) {
    json c = {{"type", resource_name(info.coprocs[i].first)}, {"count", info.coprocs[i].second}};
    c["peak_flops"] = i < info.coproc_peak_flops.size() ? json(info.coproc_peak_flops[i])
                                                        : json(nullptr);
    coprocs.push_back(std::move(c));
  }
  return {{"host_cpid", info.host_cpid},   {"domain_name", info.domain_name},
          {"p_ncpus", info.p_ncpus},       {"p_vendor", info.p_vendor},
          {"p_model", info.p_model},       {"p_fpops", info.p_fpops},
          {"p_iops", info.p_iops},         {"m_nbytes", info.m_nbytes},
          {"d_free", info.d_free},         {"os_name", info.os_name},
          {"os_version", info.os_version}, {"coprocs", std::move(coprocs)}};
}

json to_json(const host_state& s) {
  json in_progress = json::array();
  for (const auto& [name, held] : s.in_progress)
    in_progress.push_back({{"result", name},
                           {"workunit_id", held.result.wu},
                           {"deadline", time_json(held.deadline)},
                           {"app_version_id", held.app_version_id}});
  json versions = json::array();
  for (const auto& [id, hav] : s.app_versions)
    versions.push_back(
      {{"app_version_id", id},
       {"n_sent", hav.n_sent},
       {"n_success", hav.n_success},
       {"n_error", hav.n_error},
       {"n_timeout", hav.n_timeout},
       {"elapsed_n", hav.elapsed_n},
       {"elapsed_sum", hav.elapsed_sum},
       {"avg_elapsed", hav.elapsed_n == 0
                         ? json(nullptr)
                         : json(hav.elapsed_sum / static_cast<double>(hav.elapsed_n))},
       {"et", average_json(hav.et)},
       {"pfc", average_json(hav.pfc)},
       {"turnaround", average_json(hav.turnaround)},
       {"seconds_per_app_unit", average_json(hav.spau)},
       {"seconds_per_app_unit_spread",
        {{"n", hav.spau_var.log.n},
         {"with_app_units", hav.spau_var.with_units},
         {"log_stdev", hav.spau_var.log.stdev()},
         {"cv", hav.spau_var.value.mean > 0 ? hav.spau_var.value.stdev() / hav.spau_var.value.mean
                                            : 0.0}}},
       {"scale_probation", hav.scale_probation},
       {"host_scale_time", time_json(hav.host_scale_time)},
       {"error_rate", hav.error_rate},
       {"max_jobs_per_day", hav.max_jobs_per_day},
       {"n_jobs_today", hav.n_jobs_today}});
  return {{"id", s.id},
          {"user", s.user},
          {"created", time_json(s.created)},
          {"last_rpc", time_json(s.last_rpc)},
          {"info", to_json(s.info)},
          {"results_reported", s.results_reported},
          {"in_progress", std::move(in_progress)},
          {"app_versions", std::move(versions)}};
}

json to_json(const host_view& v) {
  json out = {{"id", v.reg.id},
              {"user", v.reg.user},
              {"created", time_json(v.reg.created)},
              {"last_contact", time_json(v.last_contact)},
              {"credit", totals_json(v.reg.credit)}};
  if (v.state)
    out["state"] = to_json(*v.state);
  return out;
}

json to_json(const app_version_rec& v, bool signatures) {
  json files = json::array();
  for (const auto& f : v.files) {
    json file = {{"name", f.name},
                 {"open_name", f.open_name},
                 {"nbytes", f.nbytes},
                 {"md5", f.md5},
                 {"executable", f.executable},
                 {"main_program", f.main_program},
                 {"copy_file", f.copy_file}};
    if (signatures)
      file["signature"] = f.signature;
    files.push_back(std::move(file));
  }
  return {{"id", v.id},
          {"platform", v.platform},
          {"version_num", v.version_num},
          {"plan_class", v.plan_class},
          {"avg_ncpus", v.avg_ncpus},
          {"resource", to_string(static_cast<resource_type>(v.resource))},
          {"coproc_count", v.coproc_count},
          {"deprecated", v.deprecated},
          {"api_version", v.api_version},
          {"files", std::move(files)}};
}

json to_json(const app_rec& a) {
  json versions = json::array();
  for (const auto& v : a.versions)
    versions.push_back(to_json(v, false));
  return json{{"id", a.id},
              {"name", a.name},
              {"user_friendly_name", a.user_friendly_name},
              {"min_quorum", a.min_quorum},
              {"target_nresults", a.target_nresults},
              {"max_error_results", a.max_error_results},
              {"max_total_results", a.max_total_results},
              {"max_success_results", a.max_success_results},
              {"delay_bound", a.delay_bound},
              {"max_jobs_per_rpc", a.max_jobs_per_rpc},
              {"max_jobs_per_day", a.max_jobs_per_day},
              {"validator", a.validator == 1 ? "accept_all" : "bitwise"},
              {"rsc_fpops_est", a.rsc_fpops_est},
              {"rsc_fpops_bound", a.rsc_fpops_bound},
              {"rsc_memory_bound", a.rsc_memory_bound},
              {"rsc_disk_bound", a.rsc_disk_bound},
              {"max_output_nbytes", a.max_output_nbytes},
              {"output_names", a.output_names},
              {"versions", std::move(versions)}};
}

json to_json(const code_sign_key_rec& k, std::size_t n) {
  return json{{"id", n},
              {"public_key", k.public_key},
              {"signature", k.signature.empty() ? json(nullptr) : json(k.signature)},
              {"added", time_json(k.added)}};
}

json to_json(const user_rec& u) {
  return {{"id", u.id},
          {"name", u.name},
          {"email", u.email},
          {"authenticator", u.authenticator},
          {"created", time_json(u.created)},
          {"team", u.team},
          {"country", u.country},
          {"url", u.url},
          {"has_password", !u.passwd.empty()}, // never the stored hash itself
          {"credit", totals_json(u.credit)}};
}

json to_json(const team_rec& t) {
  return {{"id", t.id},           {"name", t.name},
          {"founder", t.founder}, {"created", time_json(t.created)},
          {"url", t.url},         {"description", t.description},
          {"country", t.country}};
}

json export_rec_json(const credit_export_rec& r) {
  return {{"project", r.project},
          {"app", r.app},
          {"platform", r.platform},
          {"plan_class", r.plan_class},
          {"resource", resource_name(r.resource)},
          {"app_has_cpu_and_gpu", r.app_has_cpu_and_gpu},
          {"expavg_credit", r.expavg_credit},
          {"scale", r.scale}};
}

json to_json(const credit_export& x) {
  json versions = json::array(), imported = json::array();
  for (const auto& r : x.versions)
    versions.push_back(export_rec_json(r));
  for (const auto& r : x.imported)
    imported.push_back(export_rec_json(r));
  return {{"project", x.project},
          {"versions", std::move(versions)},
          {"imported", std::move(imported)},
          {"min_avg_pfc", x.min_avg_pfc}};
}

json to_json(const plan_class_scales& x) {
  json out = json::object();
  for (const auto& [key, scale] : x.scales) {
    auto w = x.weights.find(key);
    out[key] = {{"scale", scale}, {"weight", w == x.weights.end() ? 0.0 : w->second}};
  }
  return {{"plan_classes", std::move(out)}};
}

parsed<json> parse_json_body(std::string_view body) {
  parsed<json> out;
  try {
    out.value = json::parse(body);
  } catch (const json::exception& e) {
    // nlohmann quotes the bytes it last read: they may be invalid UTF-8, and many.
    out.error = xml::valid_utf8(std::string{"the body is not valid JSON: "} + e.what());
    xml::cap_utf8(out.error, 512);
  }
  return out;
}

parsed<ev::credit_imported> parse_credit_import(const json& body) {
  parsed<ev::credit_imported> out;
  auto fail = [&](std::string e) {
    out.error = std::move(e);
    return out;
  };
  if (!body.is_object())
    return fail("expected an object with source and versions");
  for (const auto& [k, v] : body.items())
    if (k != "source" && k != "versions" && k != "project" && k != "imported" && k != "min_avg_pfc")
      return fail("unknown field '" + shown(k) + "'");
  if (!body.contains("source") || !body["source"].is_string()
      || body["source"].get<std::string>().empty())
    return fail("source must be a non-empty string naming the other server");
  if (!body.contains("versions") || !body["versions"].is_array())
    return fail("versions must be an array (the versions of GET .../credit)");
  ev::credit_imported x;
  x.source = body["source"].get<std::string>();
  std::size_t i = 0;
  for (const auto& r : body["versions"]) {
    auto where = "versions[" + std::to_string(i++) + "]: ";
    if (!r.is_object())
      return fail(where + "expected an object");
    credit_export_rec rec;
    for (const auto& [k, v] : r.items()) {
      if (k == "project" || k == "app" || k == "platform" || k == "plan_class") {
        if (!v.is_string())
          return fail(where + k + " must be a string");
        (k == "project"    ? rec.project
         : k == "app"      ? rec.app
         : k == "platform" ? rec.platform
                           : rec.plan_class)
          = v.get<std::string>();
      } else if (k == "resource") {
        auto t = v.is_string() ? parse_resource_type(v.get<std::string>()) : std::nullopt;
        if (!t)
          return fail(where + "resource must be CPU, NVIDIA, ATI or intel_gpu");
        rec.resource = static_cast<std::uint8_t>(*t);
      } else if (k == "app_has_cpu_and_gpu") {
        if (!v.is_boolean())
          return fail(where + "app_has_cpu_and_gpu must be true or false");
        rec.app_has_cpu_and_gpu = v.get<bool>();
      } else if (k == "expavg_credit" || k == "scale") {
        if (!v.is_number())
          return fail(std::string{where}.append(k).append(" must be a number"));
        (k == "scale" ? rec.scale : rec.expavg_credit) = v.get<double>();
      } else {
        return fail(where + "unknown field '" + shown(k) + "'");
      }
    }
    if (rec.app.empty())
      return fail(where + "app is required");
    x.records.push_back(std::move(rec));
  }
  out.value = std::move(x);
  return out;
}

json to_json(const app_version_state& s) {
  return {{"id", s.id},
          {"n_valid", s.n_valid},
          {"n_invalid", s.n_invalid},
          {"elapsed_sum", s.elapsed_sum},
          {"cpu_sum", s.cpu_sum},
          {"pfc", average_json(s.pfc)},
          {"pfc_scale", s.pfc_scale},
          {"credit", totals_json(s.credit)}};
}

std::uint64_t work_count(const json& body) {
  auto of_spec = [](const json& spec) -> std::uint64_t {
    if (!spec.is_object())
      return 1;
    auto c = spec.find("count");
    if (c == spec.end() || !c->is_number_integer() || c->get<std::int64_t>() < 1)
      return 1;
    return c->get<std::uint64_t>();
  };
  if (!body.is_object())
    return 0;
  auto items = body.find("items");
  if (items == body.end())
    return of_spec(body);
  if (!items->is_array())
    return 0;
  std::uint64_t n = 0;
  for (const auto& spec : *items)
    n += of_spec(spec);
  return n;
}

parsed<work_batch> parse_work_batch(const json& body, const std::string& default_submitter) {
  parsed<work_batch> out;
  if (!body.is_object()) {
    out.error = "the body must be a JSON object (a work spec or {\"items\": [...]})";
    return out;
  }
  work_batch batch;
  batch.submitter = default_submitter;
  if (body.contains("items")) {
    reader r{body, ""};
    r.only({"items", "submitter"});
    r.string("submitter", batch.submitter);
    if (r.ok() && !body.at("items").is_array())
      r.fail("field 'items' must be an array");
    if (r.ok() && body.at("items").empty())
      r.fail("field 'items' must not be empty");
    if (!r.ok()) {
      out.error = r.error();
      return out;
    }
    const auto& items = body.at("items");
    for (std::size_t i = 0; i < items.size(); ++i)
      if (auto err = parse_spec(items[i], " in item " + std::to_string(i), batch.items)) {
        out.error = *err;
        return out;
      }
  } else if (auto err = parse_spec(body, "", batch.items)) {
    out.error = *err;
    return out;
  }
  out.value = std::move(batch);
  return out;
}

parsed<std::pair<std::string, std::string>> parse_new_user(const json& body) {
  parsed<std::pair<std::string, std::string>> out;
  if (!body.is_object()) {
    out.error = "the body must be a JSON object {\"name\": ..., \"email\": ...}";
    return out;
  }
  reader r{body, ""};
  r.only({"name", "email"});
  std::string name, email;
  r.string("name", name, true);
  r.string("email", email);
  if (!r.ok()) {
    out.error = r.error();
    return out;
  }
  out.value.emplace(std::move(name), std::move(email));
  return out;
}

json to_json(const work_spec& w) {
  json out = {{"app", w.app}};
  if (!w.name.empty())
    out["name"] = w.name;
  if (!w.command_line.empty())
    out["command_line"] = w.command_line;
  auto put = [&out](const char* key, const auto& x) {
    if (x)
      out[key] = *x;
  };
  put("rsc_fpops_est", w.rsc_fpops_est);
  put("rsc_fpops_bound", w.rsc_fpops_bound);
  put("rsc_memory_bound", w.rsc_memory_bound);
  put("rsc_disk_bound", w.rsc_disk_bound);
  put("delay_bound", w.delay_bound);
  put("predicted_app_units", w.predicted_app_units);
  put("min_quorum", w.min_quorum);
  put("target_nresults", w.target_nresults);
  put("max_error_results", w.max_error_results);
  put("max_total_results", w.max_total_results);
  put("max_success_results", w.max_success_results);
  if (!w.inputs.empty()) {
    json ins = json::array();
    for (const auto& in : w.inputs)
      ins.push_back({{"stored_name", in.stored_name},
                     {"open_name", in.open_name},
                     {"nbytes", in.nbytes},
                     {"md5", in.md5}});
    out["inputs"] = std::move(ins);
  }
  return out;
}

} // namespace cobble::net

namespace cobble::net {

// -- work sequences -------------------------------------------------------------

namespace {

json element_json(const seq_element_state& el, const sequence_state& s) {
  json out = {{"position", el.position},
              {"name", el.name},
              {"workunit_id", el.wu},
              {"kind", to_string(el.kind)},
              {"status", to_string(el.status)},
              {"host", el.host == 0 ? json(nullptr) : json(el.host)},
              {"sent", time_json(el.sent)},
              {"deadline", time_json(el.deadline)},
              {"received", time_json(el.received)},
              {"valid", el.valid}};
  if (s.replicas.size() > 1 && el.position >= 1 && el.position <= s.checks.size())
    out["check"] = to_string(s.checks[el.position - 1]);
  return out;
}

json chain_json(const sequence_state& s, std::size_t i, bool elements) {
  const auto& r = s.replicas[i];
  std::size_t done = 0, valid = 0;
  for (const auto& el : r.chain) {
    done += el.status == seq_element_status::success;
    valid += el.valid;
  }
  json out = {{"replica", i},
              {"host", r.host == 0 ? json(nullptr) : json(r.host)},
              {"assigned", r.host == 0 ? json(nullptr) : time_json(r.assigned)},
              {"first_unvalidated", r.first_unvalidated},
              {"first_undispatched", r.first_undispatched},
              {"succeeded", done},
              {"validated", valid}};
  if (elements) {
    json els = json::array();
    for (const auto& el : r.chain)
      els.push_back(element_json(el, s));
    out["elements"] = std::move(els);
  }
  return out;
}

json sequence_head(const sequence_view& v, bool elements) {
  const auto& s = v.state;
  json chains = json::array();
  for (std::size_t i = 0; i < s.replicas.size(); ++i)
    chains.push_back(chain_json(s, i, elements));
  std::string head;
  if (!s.replicas.empty() && !s.replicas[0].chain.empty())
    head = s.replicas[0].chain[0].name;
  return {{"id", s.id},
          {"name", s.name},
          {"app", v.app_name},
          {"head", head},
          {"length", s.length()},
          {"replicas", s.replicas.size()},
          {"max_result_time", s.max_result_time},
          {"delay_bound", s.params.delay_bound},
          {"created", time_json(s.created)},
          {"created_by", s.created_by},
          {"ended", s.ended},
          {"ended_at", time_json(s.ended_at)},
          {"ended_by", optional_string(s.ended_by)},
          {"end_reason", optional_string(s.end_reason)},
          {"dead_branches", s.dead_branches.size()},
          {"chains", std::move(chains)}};
}

} // namespace

json to_json(const sequence_view& v) {
  auto out = sequence_head(v, true);
  json branches = json::array();
  for (const auto& b : v.state.dead_branches) {
    json els = json::array();
    for (const auto& el : b.elements)
      els.push_back(element_json(el, v.state));
    branches.push_back({{"number", b.number},
                        {"replica", b.replica},
                        {"host", b.host},
                        {"time", time_json(b.time)},
                        {"reason", b.reason},
                        {"by", b.by},
                        {"restart_after", b.restart},
                        {"elements", std::move(els)}});
  }
  out["dead_branches"] = std::move(branches);
  out["params"] = params_json(v.state.params);
  return out;
}

json to_json_brief(const sequence_view& v) {
  return sequence_head(v, false);
}

parsed<sequence_spec> parse_sequence_spec(const json& body, const std::string& default_by) {
  parsed<sequence_spec> out;
  if (!body.is_object()) {
    out.error = "the body must be a JSON object (a sequence spec)";
    return out;
  }
  reader r{body, ""};
  r.only({"name", "app", "count", "state_every", "final_state", "max_result_time", "replicas",
          "command_line", "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound",
          "delay_bound", "inputs", "by"});
  sequence_spec s;
  r.string("name", s.name, true);
  r.string("app", s.app, true);
  std::uint64_t count = 0, every = 0, replicas = 1;
  if (r.ok() && !r.has("count"))
    r.fail("missing field 'count'");
  r.unsigned_int("count", count, 100000);
  r.unsigned_int("state_every", every, 1u << 20);
  r.unsigned_int("replicas", replicas, 2);
  r.boolean("final_state", s.final_state);
  r.number("max_result_time", s.max_result_time);
  r.string("command_line", s.command_line);
  r.number("rsc_fpops_est", s.rsc_fpops_est);
  r.number("rsc_fpops_bound", s.rsc_fpops_bound);
  r.number("rsc_memory_bound", s.rsc_memory_bound);
  r.number("rsc_disk_bound", s.rsc_disk_bound);
  r.number("delay_bound", s.delay_bound);
  r.string("by", s.by);
  if (auto err = parse_inputs(r, body, "", s.inputs)) {
    out.error = *err;
    return out;
  }
  if (!r.ok()) {
    out.error = r.error();
    return out;
  }
  s.count = static_cast<std::uint32_t>(count);
  s.state_every = static_cast<std::uint32_t>(every);
  s.replicas = static_cast<std::uint8_t>(replicas);
  if (s.by.empty())
    s.by = default_by;
  out.value = std::move(s);
  return out;
}

namespace {

/// The body of an operator's command on an entity: an object, or nothing (read as {}).
/// `fill(reader, T&)` reads the command's own fields; "by" defaults to `default_by`.
template <class T, class Fill>
parsed<T> parse_command_body(const json& body, const std::string& default_by, Fill fill) {
  parsed<T> out;
  if (!body.is_object() && !body.is_null()) {
    out.error = "the body must be a JSON object";
    return out;
  }
  static const json empty = json::object();
  reader r{body.is_null() ? empty : body, ""};
  T c;
  fill(r, c);
  r.string("by", c.by);
  if (!r.ok()) {
    out.error = r.error();
    return out;
  }
  if (c.by.empty())
    c.by = default_by;
  out.value = std::move(c);
  return out;
}

} // namespace

parsed<seq_command>
parse_seq_command(const json& body, seq_command::op what, const std::string& default_by) {
  return parse_command_body<seq_command>(body, default_by, [what](reader& r, seq_command& c) {
    c.what = what;
    switch (what) {
      case seq_command::op::extend: {
        r.only({"count", "state_every", "final_state", "by"});
        std::uint64_t count = 0, every = 0;
        if (!r.has("count"))
          r.fail("missing field 'count'");
        r.unsigned_int("count", count, 100000);
        r.unsigned_int("state_every", every, 1u << 20);
        r.boolean("final_state", c.final_state);
        c.count = static_cast<std::uint32_t>(count);
        c.state_every = static_cast<std::uint32_t>(every);
        break;
      }
      case seq_command::op::end:
        r.only({"reason", "by"});
        r.string("reason", c.reason);
        break;
      case seq_command::op::reassign:
      case seq_command::op::unassign: {
        r.only({"to", "unassign", "replica", "by"});
        bool unassign = false;
        r.boolean("unassign", unassign);
        std::uint64_t to = 0, replica = 0;
        r.unsigned_int("to", to, std::numeric_limits<std::uint64_t>::max());
        r.unsigned_int("replica", replica, 1);
        if (r.ok() && unassign == r.has("to"))
          r.fail("give either 'to' (a host id) or \"unassign\": true");
        c.what = unassign ? seq_command::op::unassign : seq_command::op::reassign;
        c.to = to;
        c.replica = static_cast<std::uint8_t>(replica);
        break;
      }
    }
  });
}

parsed<work_cancel> parse_work_cancel(const json& body, const std::string& default_by) {
  return parse_command_body<work_cancel>(body, default_by, [](reader& r, work_cancel& c) {
    r.only({"reason", "by"});
    r.string("reason", c.reason);
  });
}

json to_json(const sequence_spec& s) {
  json out = {{"name", s.name}, {"app", s.app}, {"count", s.count}};
  if (s.state_every)
    out["state_every"] = s.state_every;
  if (s.final_state)
    out["final_state"] = true;
  if (s.max_result_time > 0)
    out["max_result_time"] = s.max_result_time;
  if (s.replicas != 1)
    out["replicas"] = s.replicas;
  if (!s.command_line.empty())
    out["command_line"] = s.command_line;
  auto put = [&out](const char* key, const auto& x) {
    if (x)
      out[key] = *x;
  };
  put("rsc_fpops_est", s.rsc_fpops_est);
  put("rsc_fpops_bound", s.rsc_fpops_bound);
  put("rsc_memory_bound", s.rsc_memory_bound);
  put("rsc_disk_bound", s.rsc_disk_bound);
  put("delay_bound", s.delay_bound);
  if (!s.inputs.empty()) {
    json ins = json::array();
    for (const auto& in : s.inputs)
      ins.push_back({{"stored_name", in.stored_name},
                     {"open_name", in.open_name},
                     {"nbytes", in.nbytes},
                     {"md5", in.md5}});
    out["inputs"] = std::move(ins);
  }
  if (!s.by.empty())
    out["by"] = s.by;
  return out;
}

} // namespace cobble::net
