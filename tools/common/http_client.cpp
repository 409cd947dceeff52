#include "tools/common/http_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>

namespace cobble::common {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// Splits "host[:port]" or "[v6]:port" into `out.host` and `out.port`.
void parse_authority(const std::string& authority, const std::string& url, std::string_view option,
                     http_url& out) {
  auto fail = [&](const std::string& what) {
    throw url_error(std::string{option} + " " + what + ": '" + url + "'");
  };
  if (authority.empty())
    fail("has no host");
  if (authority.front() == '[') { // [::1]:8080
    auto close = authority.find(']');
    if (close == std::string::npos)
      fail("has a malformed IPv6 address");
    out.host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    out.port = after.size() > 1 && after[0] == ':' ? after.substr(1) : "80";
  } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
    out.host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
  } else {
    out.host = authority;
    out.port = "80";
  }
  auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  if (out.port.empty() || !std::all_of(out.port.begin(), out.port.end(), digit))
    fail("has a bad port");
}

/// The request as it goes on the wire; headers in a fixed order.
http::request<http::string_body>
make_request(const http_url& url, const http_request& r, const std::string& user_agent) {
  http::request<http::string_body> req{r.verb, url.base + r.target, 11};
  req.set(http::field::host, url.host + ":" + url.port);
  if (!user_agent.empty())
    req.set(http::field::user_agent, user_agent);
  if (!r.accept.empty())
    req.set(http::field::accept, r.accept);
  if (!r.token.empty())
    req.set(http::field::authorization, "Bearer " + r.token);
  if (!r.content_type.empty())
    req.set(http::field::content_type, r.content_type);
  if (r.verb == http::verb::post)
    req.body() = r.body;
  req.prepare_payload();
  return req;
}

} // namespace

http_url parse_http_url(const std::string& url, std::string_view option) {
  constexpr std::string_view scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    throw url_error(std::string{option} + " must be an http:// URL, got '" + url + "'");
  http_url out;
  out.text = url;
  auto rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  if (slash != std::string::npos)
    out.base = rest.substr(slash);
  while (!out.base.empty() && out.base.back() == '/')
    out.base.pop_back();
  parse_authority(rest.substr(0, slash), url, option, out);
  return out;
}

http_client::http_client(http_url url, http_client_options options)
  : url_(std::move(url)), options_(std::move(options)) {}

http_response http_client::send(const http_request& request) const {
  asio::io_context ioc;
  tcp::resolver resolver{ioc};
  beast::tcp_stream stream{ioc};
  beast::error_code ec;
  auto endpoints = resolver.resolve(url_.host, url_.port, ec);
  if (ec)
    throw http_error("cannot resolve " + url_.host + ": " + ec.message());
  auto req = make_request(url_, request, options_.user_agent);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(options_.body_limit);
  beast::error_code result;
  std::string stage = "connect to";
  stream.expires_after(options_.timeout);
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
    if (e) {
      result = e;
      return;
    }
    stage = "send to";
    http::async_write(stream, req, [&](beast::error_code we, std::size_t) {
      if (we) {
        result = we;
        return;
      }
      stage = "read from";
      http::async_read(stream, buffer, parser,
                       [&](beast::error_code re, std::size_t) { result = re; });
    });
  });
  ioc.run();
  if (result == beast::error::timeout)
    throw http_error(
      "no answer from " + url_.text + " within "
      + std::to_string(static_cast<double>(options_.timeout.count()) / 1000.0).substr(0, 5) + " s ("
      + stage + " it)");
  if (result)
    throw http_error("cannot " + stage + " " + url_.text + ": " + result.message());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return {parser.get().result_int(), parser.get().body()};
}

} // namespace cobble::common
