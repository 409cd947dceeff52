#pragma once

/// Cobble's HTTP/1.1 edge on Boost.Beast: keep-alive, a body limit and a read timeout on every
/// request, `Expect: 100-continue`, per-route body limits, clean shutdown.
///
/// Handlers are asynchronous: they get the request and a `responder` that they (or an actor
/// bridge, from any thread) call exactly once. The session posts the response back to its
/// strand. A handler must never block: it runs on an Asio thread.

#include "net/file_window.hpp"

#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cobble::net {

namespace http = boost::beast::http;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;
/// A response whose body is read from an open file as it is sent: a download holds a
/// buffer, never the file, however large the file and however slow the client.
using file_response = http::response<http::basic_file_body<file_window>>;
/// Either kind of response.
using outgoing = std::variant<response, file_response>;

/// Builds a response; run on the connection's strand (see responder::later).
using response_maker = std::function<outgoing()>;

/// Sends the response of one request. Callable from any thread, once; later calls, and calls
/// after the server stopped (or was destroyed), do nothing. If every copy is destroyed without
/// being called, the client gets a 500 so that the connection is not stuck.
///
/// The session fixes up what is left: the HTTP version and keep-alive follow the request (a
/// response may still ask to close with `keep_alive(false)`), `Server: cobble` is set, and the
/// Content-Length is computed from the body (except for answers to HEAD).
class responder {
public:
  /// Where the responses go: the session's side (net/http_session.cpp), or a test's.
  using sink = std::function<void(response_maker)>;

  responder() = default;
  explicit responder(sink to) : to_(std::move(to)) {}

  /// Sends `res`.
  void operator()(response res) const;

  /// Sends `res`, its body read from the file as the client takes it. The write timeout
  /// applies to progress: a slow client may take as long as it keeps reading.
  void operator()(file_response res) const;

  /// Sends what `make` returns, calling it on the connection's strand: for responses that cost
  /// something to build (a rendered scheduler reply), so that the thread that calls the
  /// responder (an actor's) only hands them over. A throwing `make` yields a 500.
  void later(response_maker make) const;

private:
  sink to_;
};

/// Serves one request. Runs on an HTTP thread: it must not block. Throwing yields a 500.
using handler = std::function<void(request&& req, responder respond)>;

/// What a route decides from a request's header alone, before any of its body is read.
struct admission {
  /// Sent instead of reading the body (the connection closes after it if a body was
  /// announced): a request refused here costs no memory for its body.
  std::optional<response> refusal;
  std::size_t body_limit = 0; ///< 0: the route's limit.
};

/// Judges a request by its header (its body is still empty). Runs on an HTTP thread: it must
/// not block.
using admitter = std::function<admission(const request& header)>;

/// Takes a request body in pieces as it arrives, for bodies too large to hold (uploads). The
/// session calls write() with each piece and reads no more until `more` is called (from any
/// thread), so a slow disk slows the client instead of filling memory; the read timeout
/// applies to each piece, not to the whole body. Then exactly one of finish() (the body ended
/// whole) or cut() (the client left or stalled, or the server stops) follows, unless the sink
/// answered early.
///
/// The sink answers through the responder it was opened with. It may answer early, from
/// write() or later but instead of calling that piece's `more` (a refusal judged from the
/// first pieces): the rest of the body is left unread and the connection closes after the
/// answer. After cut() no answer is sent, and dropping the responder is no error.
class body_sink {
public:
  virtual ~body_sink() = default;
  virtual void write(std::string piece, std::function<void()> more) = 0;
  virtual void finish() = 0;
  virtual void cut() = 0;
};

/// Opens the sink of a streamed request once its header is in (its body is still empty); runs
/// on an HTTP thread and must not block.
using sink_opener
  = std::function<std::shared_ptr<body_sink>(const request& header, responder respond)>;

/// A route: requests whose target path starts with `prefix` (or equals it, with `exact`).
/// The query string is ignored for matching; the longest matching prefix wins.
struct route {
  std::string prefix;
  bool exact = false;
  std::vector<http::verb> methods; ///< Empty: any method. Others get 405 with `Allow`.
  std::size_t body_limit = 0;      ///< 0: the server's default body limit.
  handler serve;
  admitter admit; ///< Empty: every request's body is read.
  /// Set: the body is streamed to the sink this opens, in pieces, never held whole, and
  /// `serve` is not called.
  sink_opener stream;
};

/// Settings of the listener and its sessions.
struct server_options {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0; ///< 0 picks a free port.
  int threads = 2;
  std::size_t body_limit = 4u << 20; ///< Default per-request body limit.
  /// The header must arrive within this once the request has started (or once the connection
  /// opened, for the first request); the body, too, has this long after the header, except a
  /// streamed body (a route with `stream`), which has it for each piece.
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds idle_timeout{60000}; ///< A keep-alive connection idle this long closes.
  std::chrono::milliseconds write_timeout{
    120000}; ///< A response (or 100) must be sent within this.
  /// Connections open at once. One more is answered `503` with `Retry-After` and closed
  /// before a session exists for it: it costs a file descriptor for a moment, no buffers.
  std::size_t max_connections = 4096;
};

/// Counters for /metrics. Monotonic except `open_connections`.
struct server_stats {
  std::atomic<std::uint64_t> connections{0};        ///< Accepted connections.
  std::atomic<std::uint64_t> open_connections{0};   ///< Connections currently open (gauge).
  std::atomic<std::uint64_t> requests{0};           ///< Request headers read.
  std::atomic<std::uint64_t> rejected_too_large{0}; ///< 413 answers.
  std::atomic<std::uint64_t> timeouts{0};           ///< Connections closed by the read timeout.
  std::atomic<std::uint64_t> idle_timeouts{0};      ///< Keep-alive connections closed when idle.
  std::atomic<std::uint64_t> not_found{0};          ///< 404 answers.
  std::atomic<std::uint64_t> method_not_allowed{0}; ///< 405 answers.
  std::atomic<std::uint64_t> bad_requests{0};       ///< 400 and 431 answers to malformed HTTP.
  std::atomic<std::uint64_t> handler_errors{0}; ///< 500s: a handler threw or dropped its responder.
  std::atomic<std::uint64_t> refused_busy{0};   ///< Connections refused at max_connections.
  std::atomic<std::uint64_t> refused_early{0};  ///< Requests a route refused by their header.
};

/// The HTTP listener: accepts on `address:port`, runs `threads` Asio threads, one self-owning
/// session per connection. Not copyable or movable.
class http_server {
public:
  /// Prepares the server; nothing is bound until start().
  http_server(server_options opts, std::vector<route> routes);
  ~http_server(); ///< Stops and joins.

  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds and starts the threads. Returns the bound port; throws std::system_error when the
  /// address cannot be bound, std::logic_error when called twice or after stop().
  std::uint16_t start();

  /// Stops accepting, closes connections, joins the threads. Idempotent. Pending responders
  /// become no-ops. Must not be called from a handler (it joins the HTTP threads).
  void stop();

  /// The bound port (after start()).
  std::uint16_t port() const;

  /// The counters; safe to read from any thread at any time.
  const server_stats& stats() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A response with the given status, content type and body; keep-alive follows the request.
response make_response(const request& req, http::status status, std::string body,
                       std::string_view content_type = "text/plain; charset=utf-8");

/// The route serving `target` (a request target, query string allowed): the exact route equal
/// to its path or else the longest prefix route; nullptr when none matches. An exact route
/// wins over a prefix route of the same length.
const route* find_route(const std::vector<route>& routes, std::string_view target);

} // namespace cobble::net
