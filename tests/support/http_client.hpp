#pragma once

// Test support: a blocking HTTP/1.1 client on Beast (keep-alive), for tests only.

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cobble::test {

struct http_reply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string location;
  std::vector<std::string> set_cookies{};      ///< Every Set-Cookie header, in order.
  std::map<std::string, std::string> fields{}; ///< Every header by name (the last of several).

  /// The header `name` as sent (any case of the name); empty when absent.
  [[nodiscard]] std::string field(const std::string& name) const {
    for (const auto& [k, v] : fields)
      if (boost::beast::iequals(k, name))
        return v;
    return {};
  }
};

/// Percent-encodes everything but ASCII letters and digits, as the BOINC client's escape_url
/// does (and as browsers encode forms, near enough).
inline std::string percent_encode(const std::string& s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 0xf];
    }
  }
  return out;
}

class http_client {
public:
  http_client(std::string host, unsigned short port) : host_(std::move(host)), port_(port) {}

  /// More request headers, by name.
  using headers = std::vector<std::pair<std::string, std::string>>;

  http_reply request(boost::beast::http::verb verb, const std::string& target,
                     const std::string& body = {}, const std::string& token = {},
                     const std::string& content_type = "application/x-www-form-urlencoded",
                     const headers& more = {}) {
    namespace http = boost::beast::http;
    ensure_connected();
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, host_ + ":" + std::to_string(port_));
    req.set(http::field::user_agent, "BOINC client (x86_64-pc-linux-gnu 7.20.5)");
    if (!token.empty())
      req.set(http::field::authorization, "Bearer " + token);
    for (const auto& [name, value] : more)
      req.set(name, value);
    if (!body.empty() || verb == http::verb::post) {
      req.set(http::field::content_type, content_type);
      req.body() = body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    stream_->expires_after(std::chrono::seconds(60));
    http::write(*stream_, req);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1u << 30);
    parser.skip(verb == http::verb::head); // a HEAD answer has a Content-Length, no body
    http::read(*stream_, buffer, parser);
    auto res = parser.release();
    http_reply out;
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    out.content_type = std::string{res[http::field::content_type]};
    out.location = std::string{res[http::field::location]};
    for (const auto& f : res) {
      out.fields[std::string{f.name_string()}] = std::string{f.value()};
      if (f.name() == http::field::set_cookie)
        out.set_cookies.emplace_back(f.value());
    }
    if (!res.keep_alive())
      stream_.reset();
    return out;
  }

  http_reply get(const std::string& target, const std::string& token = {}) {
    return request(boost::beast::http::verb::get, target, {}, token);
  }
  http_reply post(const std::string& target, const std::string& body, const std::string& token = {},
                  const std::string& content_type = "application/x-www-form-urlencoded") {
    return request(boost::beast::http::verb::post, target, body, token, content_type);
  }

private:
  void ensure_connected() {
    if (stream_)
      return;
    stream_.emplace(ioc_);
    boost::asio::ip::tcp::endpoint ep{boost::asio::ip::make_address(host_), port_};
    stream_->expires_after(std::chrono::seconds(10));
    stream_->connect(ep);
  }
  std::string host_;
  unsigned short port_;
  boost::asio::io_context ioc_;
  std::optional<boost::beast::tcp_stream> stream_;
};

/// The account key of `user` in `project`, from the admin API (cobbled prints none with
/// --config); empty if there is no such user.
/// The port of cobbled's start-up line "admin API: http://127.0.0.1:PORT/api/ (token in ...)";
/// 0 when the line has none.
inline unsigned short admin_port_of(const std::string& line) {
  auto end = line.find("/api/");
  auto colon = end == std::string::npos ? end : line.rfind(':', end);
  if (colon == std::string::npos)
    return 0;
  return static_cast<unsigned short>(std::stoi(line.substr(colon + 1, end - colon - 1)));
}

inline std::string account_key_of(unsigned short port, const std::string& token,
                                  const std::string& project, const std::string& user) {
  http_client api("127.0.0.1", port);
  auto r = api.get("/api/projects/" + project + "/users", token);
  if (r.status != 200)
    return {};
  for (const auto& u : nlohmann::json::parse(r.body))
    if (u.value("name", "") == user)
      return u.value("authenticator", "");
  return {};
}

} // namespace cobble::test
