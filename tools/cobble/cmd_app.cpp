/// `cobble app list|show|add|add-version|deprecate-version`: the project's apps and the
/// versions it distributes, through the admin API while the server runs (docs/cli.md).
///
/// `add-version` does the whole operator path of docs/admin-api.md: each file is hashed and
/// signed here (with --key, or from FILE.sig made by `cobble key sign`), staged on the server
/// as `app_<md5>`, and then named by the new version; the private key never leaves this
/// machine.

#include "actors/code_sign.hpp"
#include "actors/error.hpp"
#include "actors/rpc.hpp"
#include "net/app_json.hpp"
#include "storage/file_store.hpp"
#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace cobble::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// "created" or "already there" for an app change the server answered.
std::string outcome(const json& res) {
  return res.value("changed", false) ? "" : " (already so: nothing changed)";
}

// -- list, show -----------------------------------------------------------------------------

/// One row per version of `app`.
void print_versions(std::ostream& out, const json& app) {
  table t{{"VERSION", "PLATFORM", "NUM", "PLAN CLASS", "RESOURCE", "FILES", "STATE"}};
  for (const auto& v : app.at("versions")) {
    auto files = v.contains("files") ? v.at("files").size() : 0;
    t.add({field(v, "id"), field(v, "platform"), field(v, "version_num"),
           v.value("plan_class", "").empty() ? "-" : field(v, "plan_class"), field(v, "resource"),
           files == 0 ? "client's own" : std::to_string(files),
           v.value("deprecated", false) ? "deprecated" : "offered"});
  }
  t.print(out, "  ");
}

void print_apps(std::ostream& out, const json& apps) {
  table t{{"ID", "NAME", "QUORUM", "VALIDATOR", "VERSIONS"}};
  for (const auto& a : apps)
    t.add({field(a, "id"), field(a, "name"),
           field(a, "min_quorum") + "/" + field(a, "target_nresults"), field(a, "validator"),
           std::to_string(a.at("versions").size())});
  t.print(out);
}

void print_app(std::ostream& out, const json& a) {
  out << "app " << field(a, "name") << " (id " << field(a, "id") << ")";
  if (!a.value("user_friendly_name", "").empty())
    out << ": " << field(a, "user_friendly_name");
  out << "\nquorum " << field(a, "min_quorum") << " of " << field(a, "target_nresults")
      << ", validator " << field(a, "validator") << ", deadline " << field(a, "delay_bound")
      << " s, outputs";
  for (const auto& o : a.at("output_names"))
    out << ' ' << text(o);
  out << "\nversions:\n";
  print_versions(out, a);
}

void add_app_list(CLI::App& app, context& ctx) {
  auto cmd = app.add_subcommand("list", "List the project's apps");
  on_run(*cmd, ctx, [&ctx] {
    auto& on = ctx.server;
    return show(ctx, on.api().get(on.project_path() + "/apps"), print_apps);
  });
}

void add_app_show(CLI::App& app, context& ctx) {
  add_show_command(app, ctx, "Show an app with its policy and versions", "app", "App name",
                   "/apps/", print_app);
}

// -- add ------------------------------------------------------------------------------------

/// `app add`: the app's name and the policy fields given on the command line; the server
/// gives every other field the configuration's default.
struct app_options {
  std::string name;
  std::string by;
  std::string friendly_name;
  std::vector<std::string> outputs;
  std::string validator;
  std::map<std::string, long long> integers; ///< By JSON field name; node addresses are stable.
  std::map<std::string, double> numbers;
  std::vector<std::pair<std::string, const CLI::Option*>> given; ///< JSON field, its option.
};

int app_add(context& ctx, const app_options& o) {
  json body = {{"name", o.name}, {"by", operator_name(o.by)}};
  if (!o.friendly_name.empty())
    body["user_friendly_name"] = o.friendly_name;
  if (!o.outputs.empty())
    body["output_names"] = o.outputs;
  if (!o.validator.empty())
    body["validator"] = o.validator;
  for (const auto& [key, opt] : o.given) {
    if (opt->count() == 0)
      continue;
    if (auto i = o.integers.find(key); i != o.integers.end())
      body[key] = i->second;
    else
      body[key] = o.numbers.at(key);
  }
  auto& on = ctx.server;
  auto res = on.api().post(on.project_path() + "/apps", body);
  if (ctx.options.json)
    print_json(res);
  else
    std::cout << "app " << o.name << " (id " << field(res, "id") << ")" << outcome(res) << '\n';
  return exit_ok;
}

void add_app_add(CLI::App& app, context& ctx) {
  auto o = std::make_shared<app_options>();
  auto cmd = app.add_subcommand(
    "add", "Add an app while the server runs (an app_added event); a policy field left out "
           "takes the configuration's default");
  cmd->add_option("name", o->name, "App name (lower-case letters, digits, _ and -)")->required();
  cmd->add_option("--friendly-name", o->friendly_name, "The name volunteers see");
  cmd->add_option("--output", o->outputs,
                  "Open name of an output file the app writes (repeat for more; default "
                  "out.txt)");
  cmd->add_option("--validator", o->validator, "bitwise (default) or accept_all")
    ->check(CLI::IsMember({"bitwise", "accept_all"}));
  // One option per policy field: --min-quorum sets min_quorum; `given` tells which were.
  auto policy_options = [&](auto& values, std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      std::string flag = std::string("--") + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      auto* opt = cmd->add_option(flag, values[key], std::string("The app's ") + key);
      o->given.emplace_back(key, opt);
    }
  };
  policy_options(o->integers,
                 {"min_quorum", "target_nresults", "max_error_results", "max_total_results",
                  "max_success_results", "max_jobs_per_rpc", "max_jobs_per_day"});
  policy_options(o->numbers, {"delay_bound", "rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound",
                              "rsc_disk_bound", "max_output_nbytes"});
  cmd->add_option("--by", o->by, "Who adds it (default: your login name)");
  on_run(*cmd, ctx, [&ctx, o] { return app_add(ctx, *o); });
}

// -- add-version ----------------------------------------------------------------------------

struct version_options {
  std::string app;
  std::vector<std::string> files; ///< PATH[:OPEN_NAME]
  std::string platform;
  int version_num = 0;
  std::string plan_class;
  double avg_ncpus = 1;
  std::string resource = "cpu";
  double coproc_count = 0;
  std::string api_version;
  std::string main;              ///< Open name of the main program; empty: the first file's.
  std::vector<std::string> copy; ///< Open names copied into the slot, not linked.
  std::string key;               ///< Private key file; empty: each FILE.sig.
  std::string by;
};

/// One file of the version: where it is here and what the server is told.
struct version_file {
  std::string path;
  app_file_rec rec;
};

bool has_execute_bit(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & 0111U) != 0;
}

/// The files hashed and signed, before anything is sent: a missing file, signature or key is
/// named while the server still holds nothing of this version.
std::vector<version_file> prepare_files(const version_options& o) {
  std::string priv;
  if (!o.key.empty()) {
    priv = read_file(o.key, "private key");
    if (auto pub = public_code_sign_key(priv); !pub)
      throw failure(o.key + ": " + describe(pub.error()));
  }
  std::vector<version_file> out;
  for (const auto& spec : o.files) {
    auto colon = spec.rfind(':');
    version_file f;
    f.path = colon == std::string::npos ? spec : spec.substr(0, colon);
    f.rec.open_name = colon == std::string::npos ? fs::path{spec}.filename().string()
                                                 : spec.substr(colon + 1);
    if (!fs::is_regular_file(f.path))
      throw failure("no file " + f.path);
    for (const auto& other : out)
      if (other.rec.open_name == f.rec.open_name)
        throw usage_error("two files open as '" + f.rec.open_name + "'; give one PATH:OPEN_NAME");
    auto md5 = storage::md5_of_file(f.path);
    if (!md5)
      throw failure("cannot read " + f.path);
    f.rec.md5 = *md5;
    if (!priv.empty()) {
      auto sig = sign_md5(priv, *md5);
      if (!sig)
        throw failure(o.key + ": " + describe(sig.error()));
      f.rec.signature = std::move(*sig);
    } else {
      auto sig_path = f.path + ".sig";
      if (!fs::exists(sig_path))
        throw failure("no signature " + sig_path
                      + ": sign the files with `cobble key sign FILE... --key PRIVATE` or give "
                        "--key");
      f.rec.signature = read_file(sig_path, "signature");
    }
    f.rec.executable = has_execute_bit(f.path);
    f.rec.copy_file = std::find(o.copy.begin(), o.copy.end(), f.rec.open_name) != o.copy.end();
    out.push_back(std::move(f));
  }
  auto main = o.main.empty() ? out.front().rec.open_name : o.main;
  auto it = std::find_if(out.begin(), out.end(),
                         [&](const version_file& f) { return f.rec.open_name == main; });
  if (it == out.end())
    throw usage_error("--main " + main + " is none of the files' open names");
  it->rec.main_program = true;
  it->rec.executable = true; // the client must be able to start it
  for (const auto& c : o.copy)
    if (std::none_of(out.begin(), out.end(),
                     [&](const version_file& f) { return f.rec.open_name == c; }))
      throw usage_error("--copy " + c + " is none of the files' open names");
  return out;
}

int app_add_version(context& ctx, const version_options& o) {
  auto type = parse_resource_type(o.resource);
  if (!type)
    throw usage_error("--resource must be cpu, nvidia, ati or intel_gpu");
  if (*type != resource_type::cpu && !(o.coproc_count > 0))
    throw usage_error("a GPU version needs --coproc-count (GPUs a job uses, e.g. 1)");
  auto files = prepare_files(o);
  auto& on = ctx.server;
  const auto& api = on.api();
  app_change change;
  change.what = app_change::op::add_version;
  change.app = o.app;
  change.by = operator_name(o.by);
  auto& v = change.version;
  v.platform = o.platform;
  v.version_num = o.version_num;
  v.plan_class = o.plan_class;
  v.avg_ncpus = o.avg_ncpus;
  v.resource = static_cast<std::uint8_t>(*type);
  v.coproc_count = o.coproc_count;
  v.api_version = o.api_version;
  for (auto& f : files) {
    auto staged = api.post_bytes(on.project_path() + "/app-files", read_file(f.path, "file"));
    if (staged.value("md5", "") != f.rec.md5)
      throw failure(f.path + " changed while it was sent (the server stored md5 "
                    + field(staged, "md5") + ", it was " + f.rec.md5 + "): run again");
    f.rec.name = staged.at("stored_name").get<std::string>();
    f.rec.nbytes = staged.at("nbytes").get<double>();
    if (!ctx.options.json)
      std::cout << "staged " << f.path << " as " << f.rec.name
                << (staged.value("existed", false) ? " (already there)" : "") << '\n';
    v.files.push_back(f.rec);
  }
  auto res = api.post(on.project_path() + "/apps/" + path_escape(o.app) + "/versions",
                      net::to_json(change));
  if (ctx.options.json)
    print_json(res);
  else
    std::cout << "version " << field(res, "id") << " of " << o.app << " (" << o.platform << ' '
              << o.version_num << (o.plan_class.empty() ? "" : " " + o.plan_class) << ")"
              << outcome(res) << '\n';
  return exit_ok;
}

void add_app_add_version(CLI::App& app, context& ctx) {
  auto o = std::make_shared<version_options>();
  auto cmd = app.add_subcommand(
    "add-version",
    "Add a version that the server sends to hosts: each FILE is signed (with --key, else "
    "from FILE.sig), staged and named by the version (an app_version_added event)");
  cmd->add_option("app", o->app, "App name")->required();
  cmd
    ->add_option("files", o->files,
                 "PATH[:OPEN_NAME]: the version's files; the app opens OPEN_NAME (default "
                 "the file's name); a file with an execute bit is marked executable")
    ->required();
  cmd->add_option("--platform", o->platform, "BOINC platform, e.g. x86_64-pc-linux-gnu")->required();
  cmd
    ->add_option("--version-num", o->version_num,
                 "Version number, above the last of this platform and plan class (e.g. 101 "
                 "for 1.01)")
    ->required();
  cmd->add_option("--plan-class", o->plan_class,
                  "Plan class, one of the project's plan_classes (configuration; default: none, "
                  "plain CPU)");
  cmd->add_option("--avg-ncpus", o->avg_ncpus, "CPUs a job uses (default 1)");
  cmd->add_option("--resource", o->resource, "cpu (default), nvidia, ati or intel_gpu");
  cmd->add_option("--coproc-count", o->coproc_count, "GPUs a job uses (GPU versions)");
  cmd->add_option("--api-version", o->api_version, "BOINC API version the app was built with");
  cmd->add_option("--main", o->main, "Open name of the main program (default: the first file)");
  cmd->add_option("--copy", o->copy, "Open name of a file copied into the job's slot, not linked");
  cmd->add_option("--key", o->key,
                  "Private key file (code_sign_private) to sign the files with; without it "
                  "each FILE.sig is used");
  cmd->add_option("--by", o->by, "Who adds it (default: your login name)");
  on_run(*cmd, ctx, [&ctx, o] { return app_add_version(ctx, *o); });
}

// -- deprecate-version ----------------------------------------------------------------------

struct deprecate_options {
  std::string app;
  unsigned version = 0;
  bool undo = false;
  std::string by;
};

void add_app_deprecate(CLI::App& app, context& ctx) {
  auto o = std::make_shared<deprecate_options>();
  auto cmd = app.add_subcommand("deprecate-version",
                                "Stop offering a version to hosts (they get the newest other one); "
                                "--undo offers it again");
  cmd->add_option("app", o->app, "App name")->required();
  cmd->add_option("version", o->version, "Version id (`cobble app show APP`)")->required();
  cmd->add_flag("--undo", o->undo, "Offer the version again");
  cmd->add_option("--by", o->by, "Who does it (default: your login name)");
  on_run(*cmd, ctx, [&ctx, o] {
    auto& on = ctx.server;
    auto res = on.api().post(on.project_path() + "/apps/" + path_escape(o->app) + "/versions/"
                               + std::to_string(o->version) + "/deprecate",
                             json{{"deprecated", !o->undo}, {"by", operator_name(o->by)}});
    if (ctx.options.json)
      print_json(res);
    else
      std::cout << "version " << o->version << " of " << o->app
                << (o->undo ? " is offered again" : " is deprecated") << outcome(res) << '\n';
    return exit_ok;
  });
}

} // namespace

void add_app_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "app", "The project's apps and the versions it distributes",
            {add_app_list, add_app_show, add_app_add, add_app_add_version, add_app_deprecate});
}

} // namespace cobble::cli
