#include "net/app_json.hpp"

#include "actors/project_logic.hpp"
#include "actors/rpc.hpp"
#include "config/config.hpp"
#include "net/json_reader.hpp"

namespace cobble::net {

using nlohmann::json;

namespace {

parsed<app_change> failed(std::string why) {
  parsed<app_change> out;
  out.error = std::move(why);
  return out;
}

/// Reads `output_names`: an array of strings.
void read_names(reader& r, const json& body, std::vector<std::string>& out) {
  if (!r.ok() || !r.has("output_names"))
    return;
  const auto& names = body.at("output_names");
  if (!names.is_array())
    return r.fail("field 'output_names' must be an array of file names");
  out.clear();
  for (const auto& n : names) {
    if (!n.is_string())
      return r.fail("field 'output_names' must be an array of file names");
    out.push_back(n.get<std::string>());
  }
}

void read_file(const json& item, std::size_t i, std::vector<app_file_rec>& out, reader& r) {
  auto where = ", file " + std::to_string(i);
  if (!item.is_object())
    return r.fail("a file must be an object" + where);
  reader rf{item, where};
  rf.only(
    {"name", "open_name", "nbytes", "md5", "signature", "executable", "main_program", "copy_file"});
  app_file_rec f;
  rf.string("name", f.name, true);
  rf.string("open_name", f.open_name);
  rf.number("nbytes", f.nbytes);
  rf.string("md5", f.md5, true);
  rf.string("signature", f.signature, true);
  rf.boolean("executable", f.executable);
  rf.boolean("main_program", f.main_program);
  rf.boolean("copy_file", f.copy_file);
  if (!rf.ok())
    return r.fail(rf.error());
  out.push_back(std::move(f));
}

} // namespace

parsed<app_change> parse_new_app(const json& body, const std::string& default_by) {
  if (!body.is_object())
    return failed("the body must be a JSON object {\"name\": ..., \"output_names\": [...]}");
  reader r{body, ""};
  r.only({"name", "user_friendly_name", "min_quorum", "target_nresults", "max_error_results",
          "max_total_results", "max_success_results", "delay_bound", "rsc_fpops_est",
          "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound", "max_output_nbytes",
          "output_names", "max_jobs_per_rpc", "max_jobs_per_day", "validator", "by"});
  // The configuration's defaults, as a configured app with only a name would have them.
  config::project_config cfg;
  auto& ac = cfg.apps.emplace_back();
  app_change c;
  c.what = app_change::op::add_app;
  c.by = default_by;
  r.string("name", c.app, true);
  r.string("by", c.by);
  r.string("user_friendly_name", ac.user_friendly_name);
  std::optional<int> x;
  auto integer = [&](const char* key, int& out) {
    x.reset();
    r.integer(key, x);
    if (x)
      out = *x;
  };
  integer("min_quorum", ac.min_quorum);
  integer("target_nresults", ac.target_nresults);
  integer("max_error_results", ac.max_error_results);
  integer("max_total_results", ac.max_total_results);
  integer("max_success_results", ac.max_success_results);
  integer("max_jobs_per_rpc", ac.max_jobs_per_rpc);
  integer("max_jobs_per_day", ac.max_jobs_per_day);
  r.number("delay_bound", ac.delay_bound);
  r.number("rsc_fpops_est", ac.rsc_fpops_est);
  r.number("rsc_fpops_bound", ac.rsc_fpops_bound);
  r.number("rsc_memory_bound", ac.rsc_memory_bound);
  r.number("rsc_disk_bound", ac.rsc_disk_bound);
  r.number("max_output_nbytes", ac.max_output_nbytes);
  std::string validator;
  r.string("validator", validator);
  if (r.ok() && !validator.empty()) {
    if (validator == "bitwise")
      ac.validator = config::validator_kind::bitwise;
    else if (validator == "accept_all")
      ac.validator = config::validator_kind::accept_all;
    else
      r.fail("field 'validator' must be \"bitwise\" or \"accept_all\"");
  }
  read_names(r, body, ac.output_names);
  if (r.ok() && c.app.empty())
    r.fail("field 'name' must not be empty");
  if (!r.ok())
    return failed(r.error());
  ac.name = c.app;
  c.new_app = std::move(ac);
  parsed<app_change> out;
  out.value = std::move(c);
  return out;
}

parsed<app_change>
parse_new_version(const json& body, const std::string& app, const std::string& default_by) {
  if (!body.is_object())
    return failed("the body must be a JSON object {\"platform\": ..., \"version_num\": ..., "
                  "\"files\": [...]}");
  reader r{body, ""};
  r.only({"platform", "version_num", "plan_class", "avg_ncpus", "resource", "coproc_count",
          "api_version", "files", "by"});
  app_change c;
  c.what = app_change::op::add_version;
  c.app = app;
  c.by = default_by;
  auto& v = c.version;
  r.string("by", c.by);
  r.string("platform", v.platform, true);
  std::optional<int> num;
  r.integer("version_num", num);
  if (r.ok() && !num)
    r.fail("missing field 'version_num'");
  if (num)
    v.version_num = *num;
  r.string("plan_class", v.plan_class);
  r.number("avg_ncpus", v.avg_ncpus);
  r.number("coproc_count", v.coproc_count);
  r.string("api_version", v.api_version);
  std::string resource = "cpu";
  r.string("resource", resource);
  if (r.ok()) {
    auto t = parse_resource_type(resource);
    if (!t)
      r.fail("field 'resource' must be cpu, nvidia, ati or intel_gpu");
    else
      v.resource = static_cast<std::uint8_t>(*t);
  }
  if (r.ok() && (!r.has("files") || !body.at("files").is_array() || body.at("files").empty()))
    r.fail("field 'files' must be an array of files (the main program first of all)");
  if (r.ok())
    for (std::size_t i = 0; i < body.at("files").size() && r.ok(); ++i)
      read_file(body.at("files")[i], i, v.files, r);
  if (!r.ok())
    return failed(r.error());
  parsed<app_change> out;
  out.value = std::move(c);
  return out;
}

parsed<app_change> parse_deprecation(const json& body, const std::string& app,
                                     std::uint32_t version_id, const std::string& default_by) {
  static const json empty = json::object();
  const auto& obj = body.is_null() ? empty : body;
  if (!obj.is_object())
    return failed("the body must be a JSON object {\"deprecated\": true|false}");
  reader r{obj, ""};
  r.only({"deprecated", "by"});
  app_change c;
  c.what = app_change::op::deprecate_version;
  c.app = app;
  c.version_id = version_id;
  c.by = default_by;
  r.boolean("deprecated", c.deprecated);
  r.string("by", c.by);
  if (!r.ok())
    return failed(r.error());
  parsed<app_change> out;
  out.value = std::move(c);
  return out;
}

parsed<app_change> parse_new_key(const json& body, const std::string& default_by) {
  if (!body.is_object())
    return failed("the body must be a JSON object {\"public_key\": ..., \"signature\": ...}");
  reader r{body, ""};
  r.only({"public_key", "signature", "by"});
  app_change c;
  c.what = app_change::op::add_key;
  c.by = default_by;
  r.string("public_key", c.public_key, true);
  r.string("signature", c.signature);
  r.string("by", c.by);
  if (r.ok() && c.public_key.empty())
    r.fail("field 'public_key' must not be empty");
  if (!r.ok())
    return failed(r.error());
  parsed<app_change> out;
  out.value = std::move(c);
  return out;
}

json to_json(const app_change& c) {
  using op = app_change::op;
  json out = {{"by", c.by}};
  switch (c.what) {
    case op::add_app: {
      // The app's view without what the project gives (its id and versions).
      config::project_config one;
      one.apps.push_back(c.new_app);
      one.apps[0].name = c.app;
      auto app = to_json(apps_from_config(one, {}).at(0));
      app.erase("id");
      app.erase("versions");
      app["name"] = c.app;
      out.update(app);
      break;
    }
    case op::add_version: {
      auto version = to_json(c.version, true);
      version.erase("id");
      version.erase("deprecated");
      out.update(version);
      break;
    }
    case op::deprecate_version:
      out["deprecated"] = c.deprecated;
      break;
    case op::add_key:
      out["public_key"] = c.public_key;
      if (!c.signature.empty())
        out["signature"] = c.signature;
      break;
  }
  return out;
}

} // namespace cobble::net
