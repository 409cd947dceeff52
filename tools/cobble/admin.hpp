#pragma once

/// The admin JSON API of a running cobbled (docs/admin-api.md) as the online commands use it:
/// JSON in and out, the server's error message turned into a `failure`, and the server,
/// token and project resolved from the global options only when a command needs them, so the
/// offline commands never ask for them.

#include "actors/messages.hpp"
#include "tools/cobble/cli.hpp"
#include "tools/common/http_client.hpp"

#include <boost/beast/http/verb.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cobble::cli {

/// The admin API of one server.
class api_client {
public:
  /// A client of the server at `url`, authenticating with `token`; `timeout` per request.
  api_client(common::http_url url, std::string token, std::chrono::milliseconds timeout);

  /// GET; the JSON answer, or a failure with the server's error message.
  nlohmann::json get(const std::string& path) const;

  /// POST with a JSON body.
  nlohmann::json post(const std::string& path, const nlohmann::json& body) const;

  /// POST with raw bytes (input staging).
  nlohmann::json post_bytes(const std::string& path, const std::string& bytes) const;

private:
  nlohmann::json
  call(boost::beast::http::verb verb, const std::string& path, std::string body) const;

  common::http_client http_;
  std::string token_;
};

/// Everything an online command needs, resolved lazily from the global options.
class online {
public:
  /// Reads the options when first asked, so they may still change until then (parsing).
  explicit online(const global_options& g) : g_(g) {}

  /// The client of the admin API (see server()) with the token of --token or --data-dir; a
  /// usage_error for a bad URL or no token at all.
  const api_client& api();

  /// "/api/projects/<name>", the project from --project or the server's first project.
  std::string project_path();

private:
  /// The admin API's base URL and where it came from (for errors): --server, else the URL in
  /// <data-dir>/admin_url, else the default.
  std::pair<std::string, std::string> server() const;
  std::string token() const;

  const global_options& g_;
  std::optional<api_client> api_;
  std::string project_;
};

/// Escapes a path segment (workunit names are plain, but a user may type anything).
std::string path_escape(const std::string& s);

/// Who an operator command is recorded as: --by, else the login name.
std::string operator_name(const std::string& by);

/// Uploads input files given as PATH[:OPEN_NAME] (the app opens OPEN_NAME, by default the
/// file's name) to the project's staging area; their references for a workunit or sequence.
std::vector<input_spec> stage_inputs(online& on, const std::vector<std::string>& inputs);

} // namespace cobble::cli
