#include "tools/sim/http_link.hpp"

#include "net/boinc_xml.hpp"
#include "storage/file_store.hpp"
#include "tools/common/http_client.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <thread>

namespace cobble::sim {

namespace {

namespace http = boost::beast::http;
using json = nlohmann::json;
using common::http_response;

class http_server_link final : public server_link {
public:
  http_server_link(common::http_url url, common::http_url admin_url, std::string token,
                   std::chrono::milliseconds timeout)
    : http_(std::move(url), {"cobble-sim", timeout}),
      admin_(std::move(admin_url), {"cobble-sim", timeout}), token_(std::move(token)),
      start_(std::chrono::steady_clock::now()) {
    run_tag_ = "r"
               + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
  }

  double now() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
  }

  void advance(double dt) override {
    elapsed_ += dt;
    std::this_thread::sleep_until(start_
                                  + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::duration<double>(elapsed_)));
  }

  std::string authenticator(const std::string& project) override {
    auto users = call(http::verb::get, "/api/projects/" + project + "/users", {}, true);
    if (users.status != 200)
      throw std::runtime_error("cannot list the users of project " + project + ": HTTP "
                               + std::to_string(users.status) + " " + users.body);
    for (const auto& u : json::parse(users.body))
      if (u.value("name", "") == "sim")
        return u.value("authenticator", "");
    auto made = call(http::verb::post, "/api/projects/" + project + "/users",
                     json{{"name", "sim"}, {"email", "sim@example.org"}}.dump(), true);
    if (made.status != 201)
      throw std::runtime_error("cannot create user sim in project " + project + ": HTTP "
                               + std::to_string(made.status) + " " + made.body);
    return json::parse(made.body).value("authenticator", "");
  }

  std::optional<sched_reply>
  rpc(const std::string& project, const sched_request& req, std::string& error) override {
    try {
      auto a = call(http::verb::post, "/" + project + "/cgi", net::write_sched_request(req), false);
      if (a.status != 200) {
        error = "HTTP " + std::to_string(a.status);
        return std::nullopt;
      }
      auto r = net::parse_sched_reply(a.body);
      if (!r.ok()) {
        error = r.error;
        return std::nullopt;
      }
      return std::move(*r.value);
    } catch (const std::exception& e) {
      error = e.what();
      return std::nullopt;
    }
  }

  bool
  create_work(const std::string& project, const work_batch& batch, std::string& error) override {
    json items = json::array();
    for (const auto& w : batch.items) {
      json j{{"app", w.app}, {"name", run_tag_ + "_" + w.name}};
      if (w.rsc_fpops_est)
        j["rsc_fpops_est"] = *w.rsc_fpops_est;
      if (w.rsc_fpops_bound)
        j["rsc_fpops_bound"] = *w.rsc_fpops_bound;
      if (w.delay_bound)
        j["delay_bound"] = *w.delay_bound;
      items.push_back(std::move(j));
    }
    try {
      auto a = call(http::verb::post, "/api/projects/" + project + "/workunits",
                    json{{"submitter", batch.submitter}, {"items", items}}.dump(), true);
      if (a.status != 201) {
        error = "HTTP " + std::to_string(a.status) + " " + a.body;
        return false;
      }
      return true;
    } catch (const std::exception& e) {
      error = e.what();
      return false;
    }
  }

  bool
  upload(const std::string& project, std::uint64_t, const std::string& file,
         const std::string& signature, const std::string& content, std::string& error) override {
    // The BOINC client's upload request (file_xfer.cpp's header, then the raw bytes).
    std::string body = "<data_server_request>\n"
                       "    <core_client_major_version>7</core_client_major_version>\n"
                       "    <core_client_minor_version>20</core_client_minor_version>\n"
                       "    <core_client_release>5</core_client_release>\n"
                       "<file_upload>\n<file_info>\n    <name>"
                       + file + "</name>\n<xml_signature>\n" + signature
                       + "\n</xml_signature>\n</file_info>\n<nbytes>"
                       + std::to_string(content.size()) + "</nbytes>\n<md5_cksum>"
                       + storage::md5_hex(content) + "</md5_cksum>\n<offset>0</offset>\n<data>\n"
                       + content;
    try {
      auto a = call(http::verb::post, "/" + project + "/upload", std::move(body), false);
      if (a.status == 200 && a.body.find("<status>0</status>") != std::string::npos)
        return true;
      error = "upload of " + file + ": HTTP " + std::to_string(a.status) + " " + a.body;
    } catch (const std::exception& e) {
      error = e.what();
    }
    return false;
  }

  std::string work_name(const std::string& name) const override { return run_tag_ + "_" + name; }

private:
  /// An admin API request carries the token and JSON and goes to the admin listener; a
  /// scheduler RPC or an upload carries XML and goes to the public one.
  http_response call(http::verb verb, const std::string& path, std::string body, bool admin) {
    common::http_request req;
    req.verb = verb;
    req.target = path;
    req.body = std::move(body);
    if (verb == http::verb::post)
      req.content_type = admin ? "application/json" : "text/xml";
    if (admin)
      req.token = token_;
    return (admin ? admin_ : http_).send(req);
  }

  common::http_client http_;  ///< The public listener.
  common::http_client admin_; ///< The admin API's listener.
  std::string token_;
  std::chrono::steady_clock::time_point start_;
  double elapsed_ = 0;
  std::string run_tag_;
};

} // namespace

void check_server_url(const std::string& url, std::string_view option) {
  common::parse_http_url(url, option);
}

std::unique_ptr<server_link>
http_link(const std::string& url, const std::string& admin_url, const std::string& token,
          std::chrono::milliseconds timeout) {
  return std::make_unique<http_server_link>(common::parse_http_url(url, "--server"),
                                            common::parse_http_url(admin_url, "--admin-server"),
                                            token, timeout);
}

} // namespace cobble::sim
