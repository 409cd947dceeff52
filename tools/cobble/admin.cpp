#include "tools/cobble/admin.hpp"

#include "tools/cobble/commands.hpp"
#include "tools/common/admin_url.hpp"

#include <boost/beast/http/status.hpp>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace cobble::cli {

namespace {

namespace http = boost::beast::http;
using nlohmann::json;

} // namespace

// -- api_client ---------------------------------------------------------------------------

api_client::api_client(common::http_url url, std::string token, std::chrono::milliseconds timeout)
  : http_(std::move(url), {"cobble-cli", timeout, 256u << 20}), token_(std::move(token)) {}

json api_client::get(const std::string& path) const {
  return call(http::verb::get, path, {});
}

json api_client::post(const std::string& path, const json& body) const {
  return call(http::verb::post, path, body.dump());
}

json api_client::post_bytes(const std::string& path, const std::string& bytes) const {
  return call(http::verb::post, path, bytes);
}

json api_client::call(http::verb verb, const std::string& path, std::string body) const {
  common::http_request req;
  req.verb = verb;
  req.target = path;
  req.body = std::move(body);
  req.content_type = verb == http::verb::post ? "application/json" : "";
  req.accept = "application/json";
  req.token = token_;
  common::http_response res;
  try {
    res = http_.send(req);
  } catch (const common::http_error& e) {
    throw failure(e.what());
  }
  json parsed = json::parse(res.body, nullptr, false);
  if (res.status >= 200 && res.status < 300) {
    if (parsed.is_discarded())
      throw failure("the server answered " + path + " with something that is not JSON");
    return parsed;
  }
  std::string message;
  if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error")
      && parsed["error"].is_string())
    message = parsed["error"].get<std::string>();
  else
    message = res.body.substr(0, 200);
  while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back())))
    message.pop_back();
  auto reason = std::string{http::obsolete_reason(static_cast<http::status>(res.status))};
  throw failure(message + " (HTTP " + std::to_string(res.status) + " " + reason + ")");
}

// -- online -------------------------------------------------------------------------------

const api_client& online::api() {
  if (!api_) {
    auto [base, from] = server();
    common::http_url url;
    try {
      url = common::parse_http_url(base, from);
    } catch (const common::url_error& e) {
      throw usage_error(e.what());
    }
    api_.emplace(url, token(),
                 std::chrono::milliseconds(static_cast<std::int64_t>(g_.timeout * 1000)));
  }
  return *api_;
}

std::string online::project_path() {
  if (project_.empty()) {
    if (!g_.project.empty()) {
      project_ = g_.project;
    } else {
      auto all = api().get("/api/projects");
      if (!all.is_array() || all.empty())
        throw failure("the server has no projects");
      project_ = all[0].at("name").get<std::string>();
    }
  }
  return "/api/projects/" + path_escape(project_);
}

std::pair<std::string, std::string> online::server() const {
  if (!g_.server.empty())
    return {g_.server, "--server"};
  if (!g_.data_dir.empty())
    if (auto url = common::read_admin_url(g_.data_dir))
      return {*url, (std::filesystem::path{g_.data_dir} / common::admin_url_file).string()};
  return {common::default_admin_url, "the default server"};
}

std::string online::token() const {
  if (!g_.token.empty())
    return g_.token;
  if (g_.data_dir.empty())
    throw usage_error("no admin token: give --token, set COBBLE_ADMIN_TOKEN, or give "
                      "--data-dir of the server (its admin_token file)");
  auto path = std::filesystem::path{g_.data_dir} / "admin_token";
  std::ifstream in{path};
  if (!in)
    throw failure("cannot read the admin token from " + path.string());
  std::string t;
  std::getline(in, t);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())))
    t.pop_back();
  if (t.empty())
    throw failure(path.string() + " is empty");
  return t;
}

// -- helpers ------------------------------------------------------------------------------

std::string path_escape(const std::string& s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string operator_name(const std::string& by) {
  if (!by.empty())
    return by;
  for (const char* var : {"USER", "LOGNAME"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0')
      return v;
  return "cobble-cli";
}

std::vector<input_spec> stage_inputs(online& on, const std::vector<std::string>& inputs) {
  std::vector<input_spec> out;
  for (const auto& in : inputs) {
    auto colon = in.rfind(':');
    auto path = colon == std::string::npos ? in : in.substr(0, colon);
    auto open = colon == std::string::npos ? std::filesystem::path{in}.filename().string()
                                           : in.substr(colon + 1);
    // Server URL and token first, then the file, then the server: a missing file is named
    // before the server is asked anything, whichever compiler built this.
    const auto& api = on.api();
    auto bytes = read_file(path, "input file");
    auto staged = api.post_bytes(on.project_path() + "/files", bytes);
    out.push_back(input_spec{staged.at("stored_name").get<std::string>(), open,
                             staged.at("nbytes").get<double>(),
                             staged.at("md5").get<std::string>()});
  }
  return out;
}

} // namespace cobble::cli
