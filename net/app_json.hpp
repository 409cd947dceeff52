#pragma once

/// The bodies of the admin API's app routes (docs/admin-api.md): an app added with its
/// policy, a version with its signed files, a version deprecated or offered again, a
/// code-signing key. Each parser yields the app_change the project decides on; each to_json
/// is what the CLI sends (the inverse of the parser).

#include "actors/messages.hpp"
#include "net/admin_json.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace cobble::net {

/// `POST .../apps`: {"name", and any of the app's policy fields}; a field left out takes the
/// configuration's default (config/config.hpp app_config).
parsed<app_change>
parse_new_app(const nlohmann::json& body, const std::string& default_by = "admin");

/// `POST .../apps/A/versions`: {"platform", "version_num", "plan_class", "avg_ncpus",
/// "resource", "coproc_count", "api_version", "files": [{"name", "open_name", "nbytes", "md5",
/// "signature", "executable", "main_program", "copy_file"}]}.
parsed<app_change> parse_new_version(const nlohmann::json& body, const std::string& app,
                                     const std::string& default_by = "admin");

/// `POST .../apps/A/versions/V/deprecate`: {"deprecated": true (default) or false}; a null
/// body is an empty object.
parsed<app_change>
parse_deprecation(const nlohmann::json& body, const std::string& app, std::uint32_t version_id,
                  const std::string& default_by = "admin");

/// `POST .../keys`: {"public_key", "signature" (the new key signed with the current one)}.
parsed<app_change>
parse_new_key(const nlohmann::json& body, const std::string& default_by = "admin");

/// The body of the route that takes `change` (its app and version id go in the path).
nlohmann::json to_json(const app_change& change);

} // namespace cobble::net
