#pragma once

/// The blocking HTTP/1.1 client of the tools that talk to a running cobbled: the `cobble` CLI
/// (the admin API) and `cobble-sim run --server` (scheduler RPCs and the admin API). They make
/// few requests and wait for each answer, so every request gets its own connection, and one
/// timeout covers the whole exchange (connect, send, read): a tool never hangs on a server
/// that stopped answering.

#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cobble::common {

/// Where a server is, parsed from "http://host[:port][/prefix]".
struct http_url {
  std::string host; ///< A name or an address (an IPv6 address without its brackets).
  std::string port; ///< Digits; "80" when the URL gives none.
  std::string base; ///< Path prefix without a trailing slash ("" or "/cobble").
  std::string text; ///< The URL as given, for messages.
};

/// A URL that cannot be used.
struct url_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Parses `url` (http:// only; "[::1]:8080" for IPv6). The url_error's message starts with
/// `option`, the command-line option that gave the URL ("--server must be an http:// URL").
http_url parse_http_url(const std::string& url, std::string_view option);

/// One request, sent below the URL's base path.
struct http_request {
  boost::beast::http::verb verb = boost::beast::http::verb::get;
  std::string target;       ///< Path and query below the base, e.g. "/api/projects".
  std::string body;         ///< Sent with a POST.
  std::string content_type; ///< Sent when not empty.
  std::string accept;       ///< Sent when not empty.
  std::string token;        ///< Sent as "Authorization: Bearer TOKEN" when not empty.
};

/// One answer, whatever its status: the caller decides what a status means.
struct http_response {
  unsigned status = 0;
  std::string body;
};

/// No answer came: the host could not be resolved or reached, the connection broke, the
/// answer was malformed or too large, or the time ran out. what() names the URL and the stage
/// ("cannot connect to http://...: Connection refused").
struct http_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What a client sends with every request, and its limits.
struct http_client_options {
  std::string user_agent;                    ///< Sent when not empty.
  std::chrono::milliseconds timeout{30'000}; ///< For one whole exchange.
  std::uint64_t body_limit = 64u << 20;      ///< The largest answer body accepted, in bytes.
};

/// Sends requests to one server, each on a fresh connection, and waits for the answers.
class http_client {
public:
  http_client(http_url url, http_client_options options);

  /// Sends `request` and waits for the answer, at most the timeout; throws http_error when no
  /// answer comes.
  http_response send(const http_request& request) const;

private:
  http_url url_;
  http_client_options options_;
};

} // namespace cobble::common
