/// The project's decisions on its apps while the server runs: apps added, versions added with
/// their signed files, versions deprecated, code-signing keys (project_logic::change_apps);
/// and what a host is sent to run them (project_logic::add_deliveries).

#include "actors/code_sign.hpp"
#include "actors/project_logic_detail.hpp"
#include "actors/version_choice.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

namespace cobble {

using namespace detail;

namespace {

caf::error invalid(std::string what) {
  return caf::make_error(ec::invalid_argument, std::move(what));
}

/// A platform or plan class name: letters, digits, '_', '-' and '.', at most 64 (empty when
/// `may_be_empty`).
bool valid_label(const std::string& s, bool may_be_empty) {
  if (s.empty())
    return may_be_empty;
  if (s.size() > 64)
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

bool lower_md5(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool finite_positive(double x) {
  return std::isfinite(x) && x > 0;
}

/// Why a version's own fields and files are refused (signatures aside); empty when fine.
std::string version_problem(const app_version_rec& v) {
  if (!valid_label(v.platform, false) || v.platform == "anonymous")
    return "platform '" + v.platform
           + "' must be a BOINC platform name (letters, digits, '_', '-', '.')";
  if (!valid_label(v.plan_class, true))
    return "plan_class '" + v.plan_class + "' must be letters, digits, '_', '-', '.'";
  if (v.version_num == 0)
    return "version_num must be at least 1";
  if (v.resource >= n_resource_types)
    return "unknown resource type " + std::to_string(v.resource);
  if (!finite_positive(v.avg_ncpus))
    return "avg_ncpus must be a positive number";
  bool gpu = v.resource != 0;
  if (gpu != finite_positive(v.coproc_count) || !std::isfinite(v.coproc_count))
    return gpu ? "a GPU version needs coproc_count > 0" : "a CPU version has no coproc_count";
  if (!v.api_version.empty()
      && (v.api_version.size() > 16
          || !std::all_of(v.api_version.begin(), v.api_version.end(),
                          [](char c) { return (c >= '0' && c <= '9') || c == '.'; })))
    return "api_version '" + v.api_version + "' must be digits and dots (7.22.0)";
  if (v.files.empty())
    return "a version needs its files (one of them the main program)";
  std::set<std::string> names, open_names;
  int mains = 0;
  for (const auto& f : v.files) {
    if (!storage::safe_file_name(f.name))
      return "file name '" + f.name + "' is not a plain file name";
    if (f.name.rfind("in_", 0) == 0)
      return "file name '" + f.name
             + "' is a workunit input's (in_...): inputs are deleted "
               "when their workunits end";
    if (!storage::safe_file_name(f.open_name))
      return "open name '" + f.open_name + "' of " + f.name + " is not a plain file name";
    if (!names.insert(f.name).second || !open_names.insert(f.open_name).second)
      return "file " + f.name + " (open name " + f.open_name + ") is listed twice";
    if (!lower_md5(f.md5))
      return "the MD5 of " + f.name + " must be 32 lower-case hex digits";
    if (!finite_positive(f.nbytes))
      return "the size of " + f.name + " must be a positive number of bytes";
    if (f.signature.empty())
      return f.name + " has no signature (cobble key sign)";
    mains += f.main_program ? 1 : 0;
  }
  if (mains != 1)
    return "exactly one file must be the main program, " + std::to_string(mains) + " are";
  return {};
}

/// Equal but for the id the project gave (a retry of the same version).
bool same_version(app_version_rec a, app_version_rec b) {
  a.id = b.id = 0;
  a.deprecated = b.deprecated = false;
  return a == b;
}

} // namespace

caf::expected<std::vector<event>>
project_logic::change_apps(const app_change& c, time_us now, app_changed& out) {
  using op = app_change::op;
  std::vector<event> events;
  if (c.what == op::add_key) {
    // One key, one text: keys are stored and compared as `cobble key generate` writes them.
    auto text = canonical_public_key(c.public_key);
    if (!text)
      return text.error();
    const auto& keys = state.code_sign_keys;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i].public_key == *text) {
        if (i + 1 < keys.size())
          return caf::make_error(ec::conflict, "this key was replaced by a later one: a "
                                               "project never goes back to an older key");
        out = app_changed{static_cast<std::uint32_t>(keys.size()), false};
        return events;
      }
    std::string signature;
    if (!keys.empty()) {
      if (c.signature.empty())
        return caf::make_error(ec::conflict,
                               "the project has a key: a new key must be signed with the "
                               "current private key (cobble key sign --new-key)");
      auto sig = canonical_signature(c.signature);
      if (!sig)
        return sig.error();
      if (auto err = verify_text(keys.back().public_key, *text, *sig))
        return invalid("the new key's signature does not verify with the current key: "
                       + describe(err));
      signature = std::move(*sig);
      // A client checks a file against the key it holds after the reply, so every version
      // offered must be signed with the current key: no change while one is offered.
      for (const auto& a : state.apps)
        for (const auto& v : a.versions)
          if (!v.files.empty() && !v.deprecated)
            return caf::make_error(
              ec::conflict, "version " + std::to_string(v.id) + " of " + a.name
                              + " is offered, signed with the current key: deprecate the "
                                "versions the project distributes first, then add them again "
                                "signed with the new key");
    }
    emit(events, ev::code_sign_key_added{std::move(*text), std::move(signature), c.by}, now);
    out = app_changed{static_cast<std::uint32_t>(state.code_sign_keys.size()), true};
    return events;
  }
  if (c.what == op::add_app) {
    // The configuration's rules and conversion: an app added so is one a YAML file could
    // have named.
    config::project_config one;
    auto& ac = one.apps.emplace_back(c.new_app);
    ac.name = c.app;
    ac.versions.clear();
    if (auto problem = config::app_policy_problem(ac); !problem.empty())
      return invalid(problem);
    auto a = apps_from_config(one, {}).at(0);
    if (auto held = state.app(std::string_view{a.name})) {
      auto mine = *held;
      a.id = mine.id;
      a.versions = mine.versions;
      if (!(a == mine))
        return caf::make_error(ec::duplicate, "an app named '" + a.name + "' exists");
      out = app_changed{a.id, false};
      return events;
    }
    a.id = static_cast<std::uint32_t>(state.apps.size() + 1);
    emit(events, ev::app_added{a, c.by}, now);
    out = app_changed{a.id, true};
    return events;
  }
  const auto* app = state.app(std::string_view{c.app});
  if (app == nullptr)
    return caf::make_error(ec::unknown_app, "no app named '" + c.app + "'");
  if (c.what == op::deprecate_version) {
    auto v = std::find_if(app->versions.begin(), app->versions.end(),
                          [&](const app_version_rec& x) { return x.id == c.version_id; });
    if (v == app->versions.end())
      return caf::make_error(ec::unknown_app, "app " + app->name + " has no version with id "
                                                + std::to_string(c.version_id));
    out = app_changed{v->id, v->deprecated != c.deprecated};
    if (out.changed && !c.deprecated && !v->files.empty())
      for (const auto& f : v->files)
        if (verify_md5(state.code_sign_keys.back().public_key, f.md5, f.signature))
          return caf::make_error(ec::conflict,
                                 "version " + std::to_string(v->id)
                                   + " is signed with an "
                                     "earlier code-signing key, which clients no longer check "
                                     "files with: add it again signed with the current key");
    if (out.changed)
      emit(events, ev::app_version_deprecated{app->id, v->id, c.deprecated, c.by}, now);
    return events;
  }
  // add_version
  auto v = c.version;
  for (auto& f : v.files)
    if (f.open_name.empty())
      f.open_name = f.name;
  if (auto problem = version_problem(v); !problem.empty())
    return invalid(problem);
  if (!v.plan_class.empty()) {
    const auto* pc = find_plan_class(plan_classes, v.plan_class);
    if (pc == nullptr)
      return invalid("plan class '" + v.plan_class
                     + "' is not defined: add it under the project's plan_classes in the "
                       "configuration first (docs/apps.md)");
    auto want = plan_class_resource(*pc);
    if (want != static_cast<resource_type>(v.resource))
      return invalid("plan class " + v.plan_class + " is for "
                     + (want == resource_type::cpu ? std::string{"CPUs"} : to_string(want))
                     + ", the version for "
                     + (v.resource == 0 ? std::string{"CPUs"}
                                        : to_string(static_cast<resource_type>(v.resource))));
  }
  for (auto& f : v.files) {
    auto sig = canonical_signature(f.signature);
    if (!sig)
      return invalid("the signature of " + f.name + ": " + describe(sig.error()));
    f.signature = std::move(*sig);
  }
  for (const auto& held : app->versions)
    if (same_version(held, v)) {
      out = app_changed{held.id, false};
      return events;
    }
  int last = 0;
  for (const auto& held : app->versions)
    if (held.platform == v.platform && held.plan_class == v.plan_class)
      last = std::max(last, held.version_num);
  if (v.version_num <= last)
    return caf::make_error(ec::duplicate,
                           "version_num must be above " + std::to_string(last) + ", the last of "
                             + app->name + " on " + v.platform
                             + (v.plan_class.empty() ? "" : " (" + v.plan_class + ")"));
  // A file name names the same bytes for ever: clients keep files by name.
  std::uint32_t next_id = 1;
  for (const auto& a : state.apps)
    for (const auto& held : a.versions) {
      next_id = std::max(next_id, held.id + 1);
      for (const auto& hf : held.files)
        for (const auto& f : v.files)
          if (hf.name == f.name && (hf.md5 != f.md5 || hf.nbytes != f.nbytes))
            return caf::make_error(ec::duplicate, "file name " + f.name
                                                    + " is used for other bytes (by version "
                                                    + std::to_string(held.id) + "): rename it");
    }
  if (state.code_sign_keys.empty())
    return caf::make_error(ec::conflict, "the project has no code-signing key yet: add its "
                                         "public key first (POST .../keys)");
  const auto& key = state.code_sign_keys.back().public_key;
  for (const auto& f : v.files)
    if (auto err = verify_md5(key, f.md5, f.signature))
      return invalid("the signature of " + f.name
                     + " does not verify with the project's current key: " + describe(err));
  v.id = next_id;
  v.deprecated = false;
  auto id = v.id;
  emit(events, ev::app_version_added{app->id, std::move(v), c.by}, now);
  out = app_changed{id, true};
  return events;
}

// -- what hosts get -----------------------------------------------------------------------

namespace {

/// The `<app_version>` of `v` as fitted to the requesting host (`p`: what it uses there, its
/// projected FLOPS, the command line of a multi-threaded class).
app_version_description
describe_version(const app_rec& app, const app_version_rec& v, const version_pick& p) {
  app_version_description d;
  d.app_name = app.name;
  d.version_num = v.version_num;
  d.api_version = v.api_version;
  d.platform = v.platform;
  d.plan_class = v.plan_class;
  d.avg_ncpus = p.avg_ncpus;
  d.max_ncpus = p.avg_ncpus;
  d.flops = p.flops;
  d.cmdline = p.cmdline;
  d.coproc_type = static_cast<resource_type>(v.resource);
  d.coproc_count = v.resource == 0 ? 0 : p.coproc_count;
  d.gpu_ram = p.gpu_ram;
  for (const auto& f : v.files)
    d.files.push_back(file_ref{f.name, f.open_name, f.copy_file, false, f.main_program});
  return d;
}

/// Sends the project's key when the client holds another (see add_deliveries).
void add_key(const std::vector<code_sign_key_rec>& keys, key_standing held, job_grant& grant) {
  switch (held) {
    case key_standing::current:
      return;
    case key_standing::none:
      grant.code_sign_key = keys.back().public_key;
      return;
    case key_standing::previous:
      grant.code_sign_key = keys.back().public_key;
      grant.code_sign_key_signature = keys.back().signature;
      return;
    case key_standing::never_had:
      grant.messages.push_back(
        {"Your client holds a code-signing key this project never had, so it cannot check the "
         "project's applications. Detach from the project and attach again.",
         true});
      return;
    case key_standing::too_old:
      grant.messages.push_back(
        {"Your client holds a code-signing key this project has replaced twice since, so it "
         "cannot check the project's applications. Detach from the project and attach again.",
         true});
      return;
  }
}

} // namespace

key_standing standing_of(const std::vector<code_sign_key_rec>& keys, const std::string& held) {
  if (keys.empty())
    return key_standing::current;
  if (held.empty())
    return key_standing::none;
  auto text = canonical_public_key(held);
  auto it = text ? std::find_if(keys.begin(), keys.end(),
                                [&](const code_sign_key_rec& k) { return k.public_key == *text; })
                 : keys.end();
  if (it == keys.end())
    return key_standing::never_had;
  auto behind = std::distance(it, keys.end()) - 1;
  // A client accepts a new key only signed with the one it holds, and checks the files of a
  // reply with the key it then holds: the current one, so only from the one before.
  return behind == 0   ? key_standing::current
         : behind == 1 ? key_standing::previous
                       : key_standing::too_old;
}

key_standing project_logic::key_standing_of(const std::string& held) const {
  return standing_of(state.code_sign_keys, held);
}

void project_logic::add_deliveries(const job_request& req, job_grant& grant) const {
  std::set<std::uint32_t> apps_sent;
  std::set<std::uint32_t> versions_sent;
  std::set<std::string> files_sent;
  for (const auto& j : grant.jobs) {
    const auto* app = state.app(j.app);
    if (app == nullptr)
      continue;
    auto vid = j.dispatched.version.app_version_id;
    auto v = std::find_if(app->versions.begin(), app->versions.end(),
                          [&](const app_version_rec& x) { return x.id == vid; });
    // A configured version without files is the client's own (anonymous platform). A version
    // goes with every reply that has its jobs, also to a client that lists it: receiving it
    // again is how a client retries downloads that failed (BOINC servers do the same).
    if (v == app->versions.end() || v->files.empty() || !versions_sent.insert(vid).second)
      continue;
    if (apps_sent.insert(app->id).second)
      grant.apps.push_back(app_description{app->name, app->user_friendly_name, false});
    // Fitted again as job selection did (a pure function of the same request and records);
    // the record's own figures should that ever differ, never a job without its version.
    auto pick = fit_version(*v, req, plan_classes)
                  .value_or(version_pick{&*v, v->avg_ncpus, v->coproc_count, 0, 0, {}});
    grant.app_versions.push_back(describe_version(*app, *v, pick));
    for (const auto& f : v->files)
      if (files_sent.insert(f.name).second) {
        file_description d;
        d.name = f.name;
        d.nbytes = f.nbytes;
        d.md5_cksum = f.md5;
        d.executable = f.executable;
        d.file_signature = f.signature;
        grant.version_files.push_back(std::move(d));
      }
  }
  add_key(state.code_sign_keys, req.code_sign, grant);
}

} // namespace cobble
