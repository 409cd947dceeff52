#include "tools/sim/http_link.hpp"

#include "net/boinc_xml.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace cobble::sim {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

struct endpoint {
  std::string host, port, base, text;
};

endpoint parse_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    throw std::runtime_error("--server must be an http:// URL, got '" + url + "'");
  endpoint e;
  e.text = url;
  auto rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  if (slash != std::string::npos)
    e.base = rest.substr(slash);
  while (!e.base.empty() && e.base.back() == '/')
    e.base.pop_back();
  auto colon = authority.rfind(':');
  e.host = colon == std::string::npos ? authority : authority.substr(0, colon);
  e.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (e.host.empty() || e.port.empty()
      || !std::all_of(e.port.begin(), e.port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw std::runtime_error("--server has no usable host:port: '" + url + "'");
  return e;
}

struct answer {
  unsigned status = 0;
  std::string body;
};

class http_server_link final : public server_link {
public:
  http_server_link(endpoint e, std::string token, std::chrono::milliseconds timeout)
    : ep_(std::move(e)), token_(std::move(token)), timeout_(timeout),
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

  std::string work_name(const std::string& name) const override { return run_tag_ + "_" + name; }

private:
  answer call(http::verb verb, const std::string& path, const std::string& body, bool admin) {
    asio::io_context ioc;
    tcp::resolver resolver{ioc};
    beast::tcp_stream stream{ioc};
    beast::error_code ec;
    auto endpoints = resolver.resolve(ep_.host, ep_.port, ec);
    if (ec)
      throw std::runtime_error("cannot resolve " + ep_.host + ": " + ec.message());
    http::request<http::string_body> req{verb, ep_.base + path, 11};
    req.set(http::field::host, ep_.host + ":" + ep_.port);
    req.set(http::field::user_agent, "cobble-sim");
    if (admin)
      req.set(http::field::authorization, "Bearer " + token_);
    if (verb == http::verb::post) {
      req.set(http::field::content_type, admin ? "application/json" : "text/xml");
      req.body() = body;
    }
    req.prepare_payload();
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    beast::error_code result;
    stream.expires_after(timeout_);
    stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
      if (e) {
        result = e;
        return;
      }
      http::async_write(stream, req, [&](beast::error_code e2, std::size_t) {
        if (e2) {
          result = e2;
          return;
        }
        http::async_read(stream, buffer, parser,
                         [&](beast::error_code e3, std::size_t) { result = e3; });
      });
    });
    ioc.run();
    if (result)
      throw std::runtime_error(ep_.text + path + ": " + result.message());
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return {parser.get().result_int(), parser.get().body()};
  }

  endpoint ep_;
  std::string token_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_;
  double elapsed_ = 0;
  std::string run_tag_;
};

} // namespace

void check_server_url(const std::string& url) {
  try {
    parse_url(url);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

std::unique_ptr<server_link>
http_link(const std::string& url, const std::string& token, std::chrono::milliseconds timeout) {
  return std::make_unique<http_server_link>(parse_url(url), token, timeout);
}

} // namespace cobble::sim
