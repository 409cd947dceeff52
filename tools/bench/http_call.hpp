#pragma once

/// One synchronous HTTP/1.1 exchange with a cobbled on 127.0.0.1, for the benchmarks' set-up
/// and checks (the admin API, /metrics, the site's forms); never on a measured path, which
/// the load generator (load.hpp) drives asynchronously.

#include <boost/beast/http/verb.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cobble::bench {

/// What a request carries besides its verb and target.
struct http_call_options {
  std::string body{};
  std::string content_type{}; ///< Of the body; none without one.
  std::string token{};        ///< The admin API's bearer token; none when empty.
  std::string cookie{};       ///< The Cookie header; none when empty.
  bool same_origin = false;   ///< Send an Origin of the server itself (the site's forms).
  std::chrono::seconds timeout{600};
};

struct http_exchange {
  int status = 0;
  std::string body;
  std::vector<std::string> cookies; ///< name=value of each Set-Cookie.
};

/// Sends the request and reads the whole answer; throws on a network error or a timeout.
http_exchange http_call(std::uint16_t port, boost::beast::http::verb verb,
                        const std::string& target, const http_call_options& options = {});

} // namespace cobble::bench
