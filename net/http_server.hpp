#pragma once

/// Cobble's HTTP/1.1 edge on Boost.Beast: keep-alive, a body limit and a read timeout on every
/// request, `Expect: 100-continue`, per-route body limits, clean shutdown.
///
/// Handlers are asynchronous: they get the request and a `responder` that they (or an actor
/// bridge, from any thread) call exactly once. The session posts the response back to its
/// strand. A handler must never block: it runs on an Asio thread.

#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cobble::net {

namespace http = boost::beast::http;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

/// Sends the response of one request. Callable from any thread, once.
using responder = std::function<void(response)>;

/// Serves one request.
using handler = std::function<void(request&& req, responder respond)>;

/// A route: requests whose target path starts with `prefix` (or equals it, with `exact`).
struct route {
  std::string prefix;
  bool exact = false;
  std::vector<http::verb> methods;   ///< Empty: any method.
  std::size_t body_limit = 0;        ///< 0: the server's default body limit.
  handler serve;
};

/// Settings of the listener and its sessions.
struct server_options {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;                        ///< 0 picks a free port.
  int threads = 2;
  std::size_t body_limit = 4u << 20;             ///< Default per-request body limit.
  std::chrono::milliseconds read_timeout{30000}; ///< Headers and body must arrive within this.
  std::chrono::milliseconds idle_timeout{60000}; ///< A keep-alive connection idle this long closes.
};

/// Counters for /metrics.
struct server_stats {
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> rejected_too_large{0}; ///< 413 answers.
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> not_found{0};
};

class http_server {
public:
  http_server(server_options opts, std::vector<route> routes);
  ~http_server(); ///< Stops and joins.

  /// Binds and starts the threads. Returns the bound port; throws std::system_error when the
  /// address cannot be bound.
  std::uint16_t start();

  /// Stops accepting, closes connections, joins the threads. Idempotent.
  void stop();

  /// The bound port (after start()).
  std::uint16_t port() const;

  const server_stats& stats() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A response with the given status, content type and body; keep-alive follows the request.
response make_response(const request& req, http::status status, std::string body,
                       std::string_view content_type = "text/plain; charset=utf-8");

} // namespace cobble::net
