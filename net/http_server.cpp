#include "net/http_server.hpp"

#include "net/http_session.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace cobble::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

/// The path of a request target: without query or fragment, and without scheme and authority
/// for the absolute form that proxies send.
std::string_view target_path(std::string_view target) {
  if (auto pos = target.find_first_of("?#"); pos != std::string_view::npos)
    target = target.substr(0, pos);
  if (auto scheme = target.find("://"); scheme != std::string_view::npos && target[0] != '/') {
    auto slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? std::string_view{"/"} : target.substr(slash);
  }
  return target;
}

/// Pause before accepting again after a failed accept (say, out of file descriptors).
constexpr std::chrono::milliseconds accept_retry_delay{100};

} // namespace

const route* find_route(const std::vector<route>& routes, std::string_view target) {
  const auto path = target_path(target);
  const route* best = nullptr;
  for (const auto& r : routes) {
    const bool match = r.exact ? path == r.prefix : path.starts_with(r.prefix);
    if (!match)
      continue;
    if (best == nullptr || r.prefix.size() > best->prefix.size()
        || (r.prefix.size() == best->prefix.size() && r.exact && !best->exact))
      best = &r;
  }
  return best;
}

void responder::operator()(response res) const {
  if (!to_)
    return;
  // A response_maker must be copyable (std::function): the response rides in a shared_ptr.
  to_([res = std::make_shared<response>(std::move(res))] { return std::move(*res); });
}

void responder::operator()(file_response res) const {
  if (!to_)
    return;
  to_([res = std::make_shared<file_response>(std::move(res))] { return std::move(*res); });
}

void responder::later(response_maker make) const {
  if (to_)
    to_(std::move(make));
}

response make_response(const request& req, http::status status, std::string body,
                       std::string_view content_type) {
  response res{status, req.version()};
  res.set(http::field::server, "cobble");
  res.set(http::field::content_type, content_type);
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// -- the listener --------------------------------------------------------------------------------

struct http_server::impl {
  enum class phase { created, running, stopped };

  impl(server_options opts, std::vector<route> routes) {
    ctx.opts = std::move(opts);
    ctx.routes = std::move(routes);
  }

  void do_accept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
      on_accept(ec, std::move(socket));
    });
  }

  /// Runs on `accept_strand`, like everything touching `acceptor`, `sessions` and `stopping`.
  void on_accept(error_code ec, tcp::socket socket) {
    if (stopping)
      return; // a connection accepted just before the close: dropped with `socket`
    if (ec) {
      if (ec == asio::error::operation_aborted)
        return;
      spdlog::warn("http: accept failed: {}", ec.message());
      retry_timer.expires_after(accept_retry_delay);
      retry_timer.async_wait([this](error_code wait_ec) {
        if (!wait_ec && !stopping)
          do_accept();
      });
      return;
    }
    ctx.stats.connections.fetch_add(1, std::memory_order_relaxed);
    error_code ignored;
    if (ctx.stats.open_connections.load(std::memory_order_relaxed) >= ctx.opts.max_connections) {
      refuse_busy(std::move(socket));
      do_accept();
      return;
    }
    socket.set_option(tcp::no_delay{true}, ignored);
    auto session = std::make_shared<detail::http_session>(std::move(socket), ctx);
    if (sessions.size() >= prune_at) {
      std::erase_if(sessions, [](const auto& w) { return w.expired(); });
      prune_at = std::max<std::size_t>(64, 2 * sessions.size());
    }
    sessions.push_back(session);
    session->start();
    do_accept();
  }

  /// Answers a connection over max_connections with a 503 and closes it. The socket is new,
  /// so its send buffer is empty and one non-blocking write of the short answer completes;
  /// if it does not, the client sees the connection closed, which it retries as well.
  void refuse_busy(tcp::socket socket) {
    ctx.stats.refused_busy.fetch_add(1, std::memory_order_relaxed);
    static constexpr std::string_view answer = "HTTP/1.1 503 Service Unavailable\r\n"
                                               "Retry-After: 60\r\n"
                                               "Content-Type: text/plain; charset=utf-8\r\n"
                                               "Content-Length: 42\r\n"
                                               "Connection: close\r\n"
                                               "\r\n"
                                               "too many connections; retry in 60 seconds\n";
    error_code ignored;
    socket.non_blocking(true, ignored);
    socket.write_some(asio::buffer(answer.data(), answer.size()), ignored);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  /// Runs on `accept_strand`: stops accepting and closes every live session.
  void close_all() {
    stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    retry_timer.cancel();
    for (auto& w : sessions)
      if (auto s = w.lock())
        s->close();
    sessions.clear();
  }

  void run_thread() {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("http: uncaught exception on an HTTP thread: {}", e.what());
      }
    }
  }

  // Declaration order matters: `ctx` must outlive the io_context, whose destruction releases
  // the last references to sessions (and sessions refer to `ctx`).
  detail::http_context ctx;
  asio::io_context ioc;
  asio::strand<asio::io_context::executor_type> accept_strand{ioc.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer retry_timer{accept_strand};
  std::vector<std::weak_ptr<detail::http_session>> sessions; ///< On accept_strand.
  std::size_t prune_at = 64;                                 ///< On accept_strand.
  bool stopping = false;                                     ///< On accept_strand.
  std::vector<std::thread> threads;
  std::mutex lifecycle; ///< Serializes start() and stop().
  phase state = phase::created;
  std::atomic<std::uint16_t> bound_port{0};
};

http_server::http_server(server_options opts, std::vector<route> routes)
  : impl_(std::make_unique<impl>(std::move(opts), std::move(routes))) {}

http_server::~http_server() {
  try {
    stop();
  } catch (const std::exception& e) {
    // A destructor must not throw; stop() fails only if joining a thread does.
    spdlog::error("http server: stopping failed: {}", e.what());
  }
}

std::uint16_t http_server::start() {
  auto& d = *impl_;
  std::lock_guard lock{d.lifecycle};
  if (d.state != impl::phase::created)
    throw std::logic_error("http_server::start: already started");
  auto fail = [](const error_code& ec, const std::string& what) {
    throw std::system_error(std::error_code(ec), what);
  };
  error_code ec;
  const auto address = asio::ip::make_address(d.ctx.opts.address, ec);
  if (ec)
    fail(ec, "http: invalid address '" + d.ctx.opts.address + "'");
  const tcp::endpoint endpoint{address, d.ctx.opts.port};
  const auto where = d.ctx.opts.address + ":" + std::to_string(d.ctx.opts.port);
  if (d.acceptor.open(endpoint.protocol(), ec); ec)
    fail(ec, "http: cannot open a socket for " + where);
  if (d.acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec)
    fail(ec, "http: cannot set SO_REUSEADDR for " + where);
  if (d.acceptor.bind(endpoint, ec); ec)
    fail(ec, "http: cannot bind " + where);
  if (d.acceptor.listen(asio::socket_base::max_listen_connections, ec); ec)
    fail(ec, "http: cannot listen on " + where);
  d.bound_port = d.acceptor.local_endpoint().port();
  d.do_accept();
  const int n = std::max(1, d.ctx.opts.threads);
  d.threads.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    d.threads.emplace_back([&d] { d.run_thread(); });
  d.state = impl::phase::running;
  return d.bound_port;
}

void http_server::stop() {
  auto& d = *impl_;
  std::lock_guard lock{d.lifecycle};
  if (d.state == impl::phase::stopped)
    return;
  const bool running = d.state == impl::phase::running;
  d.state = impl::phase::stopped;
  {
    // From now on responders do nothing; one handing over a response right now finishes first.
    std::unique_lock gate{d.ctx.gate->mtx};
    d.ctx.gate->open = false;
  }
  if (running) {
    // Closing the acceptor and every socket completes every pending operation, so the
    // threads run out of work and return.
    asio::post(d.accept_strand, [&d] { d.close_all(); });
    for (auto& t : d.threads)
      t.join();
    d.threads.clear();
  }
  d.ioc.stop();
}

std::uint16_t http_server::port() const {
  return impl_->bound_port;
}

const server_stats& http_server::stats() const {
  return impl_->ctx.stats;
}

} // namespace cobble::net
