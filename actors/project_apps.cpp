/// The project's decisions on its apps while the server runs: apps added, versions added with
/// their signed files, versions deprecated, code-signing keys (project_logic::change_apps).

#include "actors/code_sign.hpp"
#include "actors/project_logic_detail.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace cobble {

using namespace detail;

namespace {

caf::error invalid(std::string what) {
  return caf::make_error(ec::invalid_argument, std::move(what));
}

/// Lower-case letters, digits, '_' and '-' (as configured app names), 1-64 characters.
bool valid_app_name(const std::string& s) {
  if (s.empty() || s.size() > 64)
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
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

/// Why an app's policy is refused; empty when it is acceptable.
std::string app_problem(const app_rec& a) {
  if (!valid_app_name(a.name))
    return "invalid app name '" + a.name + "': use lower-case letters, digits, '_' and '-' only";
  if (a.min_quorum < 1 || a.target_nresults < a.min_quorum
      || a.max_total_results < a.target_nresults || a.max_success_results < a.min_quorum)
    return "replication must satisfy 1 <= min_quorum <= target_nresults <= max_total_results "
           "and min_quorum <= max_success_results";
  for (double x : {a.delay_bound, a.rsc_fpops_est, a.rsc_fpops_bound, a.rsc_memory_bound,
                   a.rsc_disk_bound, a.max_output_nbytes})
    if (!finite_positive(x))
      return "delay_bound, rsc_* and max_output_nbytes must be positive numbers";
  if (a.rsc_fpops_bound < a.rsc_fpops_est)
    return "rsc_fpops_bound is below rsc_fpops_est";
  if (a.max_jobs_per_rpc < 1 || a.max_jobs_per_day < 1)
    return "max_jobs_per_rpc and max_jobs_per_day must be at least 1";
  if (a.output_names.empty())
    return "at least one output file name is required";
  std::set<std::string> outputs;
  for (const auto& n : a.output_names)
    if (!storage::safe_file_name(n) || !outputs.insert(n).second)
      return "output file name '" + n + "' is not a plain file name or is repeated";
  return {};
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
    auto text = std::string{strip_key_text(c.public_key)} + "\n";
    if (auto err = check_public_key(text))
      return err;
    const auto& keys = state.code_sign_keys;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (strip_key_text(keys[i].public_key) == strip_key_text(text)) {
        if (i + 1 < keys.size())
          return caf::make_error(ec::conflict, "this key was replaced by a later one: a "
                                               "project never goes back to an older key");
        out = app_changed{static_cast<std::uint32_t>(keys.size()), false};
        return events;
      }
    if (!keys.empty()) {
      if (c.signature.empty())
        return caf::make_error(ec::conflict,
                               "the project has a key: a new key must be signed with the "
                               "current private key (cobble key sign --key-file NEW)");
      if (auto err = verify_text(keys.back().public_key, text, c.signature))
        return invalid("the new key's signature does not verify with the current key: "
                       + describe(err));
    }
    emit(events, ev::code_sign_key_added{text, keys.empty() ? std::string{} : c.signature, c.by},
         now);
    out = app_changed{static_cast<std::uint32_t>(state.code_sign_keys.size()), true};
    return events;
  }
  if (c.what == op::add_app) {
    auto a = c.new_app;
    a.name = c.app;
    a.versions.clear();
    if (auto problem = app_problem(a); !problem.empty())
      return invalid(problem);
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
    if (a.user_friendly_name.empty())
      a.user_friendly_name = a.name;
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
                                         "public key first (cobble key add)");
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

} // namespace cobble
