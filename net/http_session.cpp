#include "net/http_session.hpp"

#include "net/request_target.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <utility>

namespace cobble::net::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using beast::error_code;

namespace {

/// The longest a closing connection keeps reading (and discarding) what the client still sends,
/// so that the kernel does not answer its unread bytes with a reset that would destroy our
/// final response before the client reads it.
constexpr std::chrono::milliseconds max_linger{5000};
constexpr std::size_t max_linger_bytes = 4u << 20;

/// Bytes read at once while waiting for the start of a request.
constexpr std::size_t first_read_size = 4096;

/// The largest piece of a streamed body handed to a sink at once.
constexpr std::size_t piece_size = std::size_t{64} * 1024;

constexpr std::string_view server_name = "cobble";

bool is_http_error(const error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_version).category();
}

} // namespace

/// Behind every copy of one responder: delivers at most once, and a 500 when dropped unused.
class responder_state {
public:
  responder_state(std::weak_ptr<http_session> session, std::shared_ptr<http_gate> gate,
                  server_stats* stats)
    : session_(std::move(session)), gate_(std::move(gate)), stats_(stats) {}

  responder_state(const responder_state&) = delete;
  responder_state& operator=(const responder_state&) = delete;

  ~responder_state() {
    if (done_.load())
      return;
    try {
      auto dropped = [] {
        response res{http::status::internal_server_error, 11};
        res.set(http::field::content_type, "text/plain; charset=utf-8");
        res.body() = "the handler dropped the request\n";
        return res;
      };
      if (deliver(dropped, true))
        spdlog::warn("http: a handler dropped its responder; answered 500");
    } catch (...) {
      // Destructors must not throw; the session then stays until its connection closes.
    }
  }

  /// Delivers what `make` builds unless already done or the server is stopping. True if
  /// handed over. `dropped`: the handler let go of the responder without calling it.
  /// Nothing will be delivered: the request was abandoned (a streamed body was cut).
  void abandon() { done_.store(true); }

  bool deliver(response_maker make, bool dropped = false) {
    if (done_.exchange(true))
      return false;
    std::shared_lock lock{gate_->mtx};
    if (!gate_->open)
      return false;
    // Declared after `lock`: the strong reference dies while the gate is still held.
    auto session = session_.lock();
    if (!session)
      return false;
    if (dropped) // the open gate guarantees the server, and so `stats_`, is alive
      stats_->handler_errors.fetch_add(1, std::memory_order_relaxed);
    session->deliver(std::move(make));
    return true;
  }

private:
  std::weak_ptr<http_session> session_;
  std::shared_ptr<http_gate> gate_;
  server_stats* stats_;
  std::atomic<bool> done_{false};
};

http_session::http_session(asio::ip::tcp::socket socket, http_context& ctx)
  : ctx_(ctx), stream_(std::move(socket)) {
  ctx_.stats.open_connections.fetch_add(1, std::memory_order_relaxed);
}

http_session::~http_session() {
  ctx_.stats.open_connections.fetch_sub(1, std::memory_order_relaxed);
}

void http_session::start() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] { self->read_next(); });
}

void http_session::close() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] { self->close_now(); });
}

void http_session::deliver(response_maker make) {
  asio::post(stream_.get_executor(), [self = shared_from_this(), make = std::move(make)] {
    std::optional<outgoing> res;
    try {
      res = make();
    } catch (const std::exception& e) {
      spdlog::error("http: building a response failed: {}", e.what());
    } catch (...) {
      spdlog::error("http: building a response failed");
    }
    if (!res) {
      self->ctx_.stats.handler_errors.fetch_add(1, std::memory_order_relaxed);
      response error{http::status::internal_server_error, 11};
      error.set(http::field::content_type, "text/plain; charset=utf-8");
      error.body() = "internal server error\n";
      res.emplace(std::move(error));
    }
    self->on_response(std::move(*res));
  });
}

// -- reading a request -----------------------------------------------------------------------

void http_session::read_next() {
  if (closed_)
    return;
  // A fresh parser per request; the body limit is set from the route once the header is in.
  parser_.emplace();
  parser_->body_limit(boost::none);
  stream_parser_.reset();
  sink_.reset();
  sink_done_ = false;
  ++request_number_;
  route_ = nullptr;
  version_ = 11;
  keep_alive_ = false;
  method_ = http::verb::unknown;
  if (buffer_.size() > 0) {
    read_header(); // the client already sent (part of) the next request
    return;
  }
  // Wait for the first bytes under the idle timeout (the read timeout on a new connection);
  // the read timeout starts once the request has begun.
  stream_.expires_after(first_ ? ctx_.opts.read_timeout : ctx_.opts.idle_timeout);
  stream_.async_read_some(buffer_.prepare(first_read_size),
                          beast::bind_front_handler(&http_session::on_first_bytes,
                                                    shared_from_this()));
}

void http_session::on_first_bytes(error_code ec, std::size_t n) {
  if (ec) {
    if (ec == beast::error::timeout && !first_) {
      ctx_.stats.idle_timeouts.fetch_add(1, std::memory_order_relaxed);
      close_now();
      return;
    }
    on_read_error(ec);
    return;
  }
  buffer_.commit(n);
  read_header();
}

void http_session::read_header() {
  stream_.expires_after(ctx_.opts.read_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&http_session::on_header, shared_from_this()));
}

void http_session::on_header(error_code ec, std::size_t) {
  if (ec) {
    on_read_error(ec);
    return;
  }
  first_ = false;
  ctx_.stats.requests.fetch_add(1, std::memory_order_relaxed);
  const auto& req = parser_->get();
  version_ = req.version();
  keep_alive_ = req.keep_alive();
  method_ = req.method();
  const auto content_length = parser_->content_length();
  // An answer sent before the body is read leaves the body on the wire: close after it.
  const bool has_body = parser_->chunked() || content_length.value_or(0) > 0;

  // The Host goes into the URLs of master pages and scheduler replies: only a host name or
  // address (RFC 9112: 400 for an invalid or repeated one). A missing Host is let through.
  if (req.count(http::field::host) > 1
      || (req.count(http::field::host) == 1 && !valid_host(req[http::field::host]))) {
    ctx_.stats.bad_requests.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::bad_request, "bad request: invalid Host header\n", has_body);
    return;
  }
  // Beast decodes chunked only; a body under any other coding would be read as its plain
  // bytes (RFC 9112: 501 for a transfer coding the server does not understand).
  if (req.count(http::field::transfer_encoding) > 1
      || (req.count(http::field::transfer_encoding) == 1
          && !beast::iequals(req[http::field::transfer_encoding], "chunked"))) {
    ctx_.stats.bad_requests.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::not_implemented,
                "transfer coding not supported: only chunked is understood\n", true);
    return;
  }
  route_ = find_route(ctx_.routes, req.target());
  if (route_ == nullptr) {
    ctx_.stats.not_found.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::not_found, "not found\n", has_body);
    return;
  }
  if (!route_->methods.empty()
      && std::find(route_->methods.begin(), route_->methods.end(), method_)
           == route_->methods.end()) {
    ctx_.stats.method_not_allowed.fetch_add(1, std::memory_order_relaxed);
    std::string allow;
    for (auto verb : route_->methods) {
      if (!allow.empty())
        allow += ", ";
      allow += http::to_string(verb);
    }
    response res{http::status::method_not_allowed, version_};
    res.set(http::field::allow, allow);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "method not allowed\n";
    write(std::move(res), has_body);
    return;
  }
  std::size_t limit = route_->body_limit != 0 ? route_->body_limit : ctx_.opts.body_limit;
  if (route_->admit) {
    auto a = route_->admit(req);
    if (a.refusal) {
      ctx_.stats.refused_early.fetch_add(1, std::memory_order_relaxed);
      write(std::move(*a.refusal), has_body);
      return;
    }
    if (a.body_limit != 0)
      limit = a.body_limit;
  }
  if (content_length && *content_length > limit) {
    ctx_.stats.rejected_too_large.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::payload_too_large, "request body too large\n", true);
    return;
  }
  parser_->body_limit(limit); // still needed for chunked bodies
  // libcurl asks before big uploads. Never 417: the client would fall back to HTTP/1.0.
  const bool wants_continue = version_ >= 11
                              && beast::iequals(req[http::field::expect], "100-continue");
  if (route_->stream) { // `req` is gone after this: the parser changes
    open_sink();
    if (!sink_)
      return;
  }
  if (parser_ && parser_->is_done()) {
    dispatch();
    return;
  }
  if (stream_parser_ && stream_parser_->is_done()) {
    after_piece();
    return;
  }
  if (wants_continue) {
    continue_.emplace(http::status::continue_, version_);
    continue_->set(http::field::server, server_name);
    stream_.expires_after(ctx_.opts.write_timeout);
    http::async_write(stream_, *continue_,
                      beast::bind_front_handler(&http_session::on_continue, shared_from_this()));
    return;
  }
  if (sink_)
    read_piece();
  else
    read_body();
}

void http_session::on_continue(error_code ec, std::size_t) {
  continue_.reset();
  if (ec) {
    close_now();
    return;
  }
  if (sink_)
    read_piece();
  else
    read_body();
}

void http_session::read_body() {
  stream_.expires_after(ctx_.opts.read_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&http_session::on_body, shared_from_this()));
}

void http_session::on_body(error_code ec, std::size_t) {
  if (ec) {
    on_read_error(ec);
    return;
  }
  dispatch();
}

void http_session::on_read_error(error_code ec) {
  cut_sink();
  if (ec == beast::error::timeout) {
    ctx_.stats.timeouts.fetch_add(1, std::memory_order_relaxed);
    close_now();
  } else if (ec == http::error::body_limit) {
    ctx_.stats.rejected_too_large.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::payload_too_large, "request body too large\n", true);
  } else if (ec == http::error::header_limit) {
    ctx_.stats.bad_requests.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::request_header_fields_too_large, "request header too large\n", true);
  } else if (is_http_error(ec) && ec != http::error::end_of_stream
             && ec != http::error::partial_message) {
    ctx_.stats.bad_requests.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::bad_request, "bad request: " + ec.message() + "\n", true);
  } else {
    // The client closed (between or within requests), the network failed, or we are stopping.
    close_now();
  }
}

// -- streaming a body to a route's sink ------------------------------------------------------

void http_session::open_sink() {
  auto state = std::make_shared<responder_state>(weak_from_this(), ctx_.gate, &ctx_.stats);
  sink_responder_ = state;
  responder respond{[state](response_maker make) { state->deliver(std::move(make)); }};
  try {
    sink_ = route_->stream(parser_->get(), respond);
  } catch (const std::exception& e) {
    spdlog::error("http: opening the body sink of {} threw: {}", route_->prefix, e.what());
  }
  // The header's parser becomes one that hands the body over in pieces (Beast allows the
  // change of body type between the header and the body).
  stream_parser_.emplace(std::move(*parser_));
  parser_.reset();
  if (!sink_) {
    ctx_.stats.handler_errors.fetch_add(1, std::memory_order_relaxed);
    reply_error(http::status::internal_server_error, "internal server error\n", true);
  }
}

void http_session::read_piece() {
  piece_.resize(piece_size);
  auto& body = stream_parser_->get().body();
  body.data = piece_.data();
  body.size = piece_.size();
  // Each piece has the read timeout: a slow link may take as long as it keeps sending.
  stream_.expires_after(ctx_.opts.read_timeout);
  http::async_read_some(stream_, buffer_, *stream_parser_,
                        beast::bind_front_handler(&http_session::on_piece, shared_from_this()));
}

void http_session::on_piece(error_code ec, std::size_t) {
  if (ec == http::error::need_buffer)
    ec = {};
  if (ec) {
    on_read_error(ec);
    return;
  }
  if (sink_done_) // the sink answered meanwhile; the answer closes the connection
    return;
  piece_.resize(piece_size - stream_parser_->get().body().size);
  if (piece_.empty()) {
    after_piece();
    return;
  }
  // Until the sink asks for more, nothing else holds this session.
  self_ = shared_from_this();
  auto gate = ctx_.gate;
  std::function<void()> more = [weak = weak_from_this(), gate, number = request_number_] {
    std::shared_lock lock{gate->mtx};
    if (!gate->open)
      return;
    if (auto self = weak.lock())
      asio::post(self->stream_.get_executor(), [self, number] {
        if (self->closed_ || self->sink_done_ || self->request_number_ != number)
          return;
        self->self_.reset();
        self->after_piece();
      });
  };
  try {
    sink_->write(std::exchange(piece_, {}), std::move(more));
  } catch (const std::exception& e) {
    spdlog::error("http: the body sink of {} threw: {}", route_->prefix, e.what());
    self_.reset();
    cut_sink();
    close_now();
  }
}

void http_session::after_piece() {
  if (!stream_parser_->is_done()) {
    read_piece();
    return;
  }
  sink_done_ = true;
  self_ = shared_from_this(); // the sink owes the response
  sink_->finish();
}

void http_session::cut_sink() {
  if (!sink_ || sink_done_)
    return;
  sink_done_ = true;
  if (auto state = sink_responder_.lock())
    state->abandon(); // a cut body has no answer: the sink's responder is no handler's fault
  sink_->cut();
}

// -- answering ---------------------------------------------------------------------------------

void http_session::dispatch() {
  request req = parser_->release();
  parser_.reset();
  auto state = std::make_shared<responder_state>(weak_from_this(), ctx_.gate, &ctx_.stats);
  responder respond{[state](response_maker make) { state->deliver(std::move(make)); }};
  self_ = shared_from_this(); // nothing else holds us while the handler works
  const route* r = route_;
  auto fail = [&](const char* what) {
    ctx_.stats.handler_errors.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("http: handler for {} threw: {}", r->prefix, what);
    response res{http::status::internal_server_error, version_};
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "internal server error\n";
    state->deliver([res = std::move(res)] { return res; });
  };
  try {
    r->serve(std::move(req), respond);
  } catch (const std::exception& e) {
    fail(e.what());
  } catch (...) {
    fail("unknown exception");
  }
}

void http_session::on_response(outgoing res) {
  self_.reset(); // the posted handler that called us holds a reference
  if (closed_)
    return;
  // A sink that answers before the end of its body leaves the rest unread.
  const bool body_unread = sink_ && !sink_done_ && !stream_parser_->is_done();
  sink_done_ = true;
  if (auto* text = std::get_if<response>(&res))
    write(std::move(*text), body_unread);
  else
    write_file(std::move(std::get<file_response>(res)));
}

void http_session::reply_error(http::status status, std::string body, bool close) {
  response res{status, version_};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  write(std::move(res), close);
}

void http_session::write(response res, bool close) {
  const bool wanted = res.keep_alive(); // judged at the version the handler built it with
  res.version(version_);
  res.keep_alive(keep_alive_ && wanted && !close);
  res.set(http::field::server, server_name);
  if (method_ == http::verb::head) {
    // The length the GET would have, but no body on the wire.
    if (!res.has_content_length() && !res.chunked())
      res.prepare_payload();
    res.body().clear();
  } else {
    res.prepare_payload();
  }
  res_.emplace(std::move(res));
  stream_.expires_after(ctx_.opts.write_timeout);
  http::async_write(stream_, *res_,
                    beast::bind_front_handler(&http_session::on_write, shared_from_this()));
}

void http_session::write_file(file_response res) {
  const bool wanted = res.keep_alive();
  res.version(version_);
  res.keep_alive(keep_alive_ && wanted);
  res.set(http::field::server, server_name);
  res.prepare_payload();
  file_res_.emplace(std::move(res));
  file_out_.emplace(*file_res_);
  write_file_part();
}

void http_session::write_file_part() {
  // One write_some at a time, each under its own deadline: the timeout bounds a stall, not
  // the whole transfer.
  stream_.expires_after(ctx_.opts.write_timeout);
  http::async_write_some(stream_, *file_out_,
                         beast::bind_front_handler(&http_session::on_file_part,
                                                   shared_from_this()));
}

void http_session::on_file_part(error_code ec, std::size_t) {
  if (!ec && !file_out_->is_done()) {
    write_file_part();
    return;
  }
  const bool close = file_res_->need_eof();
  file_out_.reset();
  file_res_.reset();
  after_write(ec, close);
}

void http_session::on_write(error_code ec, std::size_t) {
  const bool close = res_->need_eof();
  res_.reset();
  after_write(ec, close);
}

void http_session::after_write(error_code ec, bool close) {
  if (ec) {
    close_now();
    return;
  }
  if (close) {
    linger_close();
    return;
  }
  read_next();
}

// -- closing -----------------------------------------------------------------------------------

void http_session::linger_close() {
  error_code ec;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  if (ec) {
    close_now();
    return;
  }
  lingered_ = 0;
  stream_.expires_after(std::min<std::chrono::milliseconds>(ctx_.opts.read_timeout, max_linger));
  linger_read();
}

void http_session::linger_read() {
  buffer_.clear();
  stream_.async_read_some(buffer_.prepare(16384),
                          [self = shared_from_this()](error_code ec, std::size_t n) {
                            self->lingered_ += n;
                            if (ec || self->lingered_ > max_linger_bytes)
                              self->close_now();
                            else
                              self->linger_read();
                          });
}

void http_session::close_now() {
  if (closed_)
    return;
  closed_ = true;
  // Keep ourselves alive to the end of this function even if `self_` was the last reference.
  auto keep = std::move(self_);
  cut_sink();
  error_code ec;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  stream_.close();
}

} // namespace cobble::net::detail
