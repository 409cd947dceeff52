#include "net/http_server.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace cobble::net;
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

/// Upper bound for any single client read: a test fails instead of hanging.
constexpr auto client_timeout = 5s;

/// A blocking Beast client with a deadline on every read (an async read run to completion).
class client {
public:
  explicit client(std::uint16_t port) {
    stream_.connect(tcp::endpoint{asio::ip::make_address("127.0.0.1"), port});
  }

  /// Writes `req` as is (after prepare_payload).
  void send(request req) {
    req.prepare_payload();
    http::write(stream_, req);
  }

  /// Writes raw bytes.
  void send_raw(std::string_view bytes) { asio::write(stream_.socket(), asio::buffer(bytes)); }

  /// Reads one response; throws on error (including a timeout).
  response read() {
    response res;
    beast::error_code result = asio::error::would_block;
    stream_.expires_after(client_timeout);
    http::async_read(stream_, buffer_, res,
                     [&](beast::error_code ec, std::size_t) { result = ec; });
    run();
    if (result)
      throw beast::system_error{result};
    return res;
  }

  /// Reads until the connection ends; returns how it ended (eof, reset, or timeout).
  beast::error_code read_until_closed() {
    beast::error_code result;
    stream_.expires_after(client_timeout);
    std::function<void()> step = [&] {
      stream_.async_read_some(buffer_.prepare(4096), [&](beast::error_code ec, std::size_t n) {
        buffer_.commit(n);
        if (ec)
          result = ec;
        else
          step();
      });
    };
    step();
    run();
    return result;
  }

  /// Performs a request and returns its response.
  response roundtrip(http::verb verb, const std::string& target, std::string body = {}) {
    request req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.body() = std::move(body);
    send(std::move(req));
    return read();
  }

  beast::tcp_stream& stream() { return stream_; }
  beast::flat_buffer& buffer() { return buffer_; }

  /// Runs the client's io_context until the pending operation completes.
  void run() {
    ioc_.restart();
    ioc_.run();
  }

private:
  asio::io_context ioc_;
  beast::tcp_stream stream_{ioc_};
  beast::flat_buffer buffer_;
};

handler echo() {
  return [](request&& req, const responder& respond) {
    auto body = std::string(req.method_string()) + " " + std::string(req.target()) + " "
                + std::to_string(req.body().size());
    respond(make_response(req, http::status::ok, std::move(body)));
  };
}

route make_route(std::string prefix, handler h, std::vector<http::verb> methods = {},
                 std::size_t body_limit = 0, bool exact = false) {
  route r;
  r.prefix = std::move(prefix);
  r.exact = exact;
  r.methods = std::move(methods);
  r.body_limit = body_limit;
  r.serve = std::move(h);
  return r;
}

/// Where a handler leaves its request and responder unanswered, for the test to pick up.
struct parking {
  std::mutex mtx;
  std::condition_variable cv;
  std::optional<request> req;
  std::optional<responder> respond;

  handler park() {
    return [this](request&& r, responder respond_) {
      std::lock_guard lock{mtx};
      req = std::move(r);
      respond = std::move(respond_);
      cv.notify_all();
    };
  }

  /// Blocks until a request is parked (or the deadline passes).
  bool wait() {
    std::unique_lock lock{mtx};
    return cv.wait_for(lock, client_timeout, [this] { return respond.has_value(); });
  }
};

/// Waits (spinning, bounded) for a counter the server bumps right after the client notices.
/// Beast's tcp_stream closes the socket in its timer, before the read handler counts.
bool eventually(const std::atomic<std::uint64_t>& counter, std::uint64_t expected) {
  const auto deadline = std::chrono::steady_clock::now() + client_timeout;
  while (counter.load() != expected) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::yield();
  }
  return true;
}

server_options test_options() {
  server_options opts;
  opts.address = "127.0.0.1";
  opts.port = 0;
  opts.threads = 2;
  opts.body_limit = 1024;
  opts.read_timeout = 5s;
  opts.idle_timeout = 5s;
  return opts;
}

std::vector<route> default_routes() {
  std::vector<route> routes;
  routes.push_back(make_route("/get", echo(), {http::verb::get, http::verb::head}));
  routes.push_back(make_route("/post", echo(), {http::verb::post}));
  routes.push_back(make_route("/upload", echo(), {http::verb::post}, std::size_t{64} * 1024));
  return routes;
}

/// Where the streamed bodies of these tests go: counts pieces and bytes, answers 200 with the
/// byte count at the end, and can hold every piece a while before asking for more (a slow
/// disk) or refuse at the first piece.
struct sink_probe {
  std::chrono::milliseconds hold{0};
  std::uint64_t held_pieces = 0; ///< How many of the first pieces are held.
  bool refuse_first = false;
  std::atomic<std::uint64_t> bytes{0}, pieces{0}, largest{0}, cuts{0};

  sink_probe() : thread_([this] { timers_.run(); }) {}
  ~sink_probe() {
    work_.reset();
    thread_.join();
  }
  sink_probe(const sink_probe&) = delete;
  sink_probe& operator=(const sink_probe&) = delete;

  /// A server's routes: POST /stream into this probe.
  std::vector<route> routes(std::size_t body_limit) {
    route r = make_route("/stream", {}, {http::verb::post}, body_limit, true);
    r.stream = [this](const request&, responder respond) {
      return std::make_shared<sink>(*this, std::move(respond));
    };
    std::vector<route> out;
    out.push_back(std::move(r));
    return out;
  }

private:
  class sink final : public body_sink {
  public:
    sink(sink_probe& probe, responder respond) : probe_(probe), respond_(std::move(respond)) {}
    void write(std::string piece, std::function<void()> more) override {
      probe_.bytes += piece.size();
      ++probe_.pieces;
      if (piece.size() > probe_.largest)
        probe_.largest = piece.size();
      if (probe_.refuse_first) {
        respond_(answer(http::status::forbidden, "refused\n"));
        return;
      }
      if (probe_.pieces > probe_.held_pieces) {
        more();
        return;
      }
      auto timer = std::make_shared<asio::steady_timer>(probe_.timers_, probe_.hold);
      timer->async_wait([timer, more = std::move(more)](beast::error_code) { more(); });
    }
    void finish() override {
      respond_(answer(http::status::ok, std::to_string(probe_.bytes.load())));
    }
    void cut() override { ++probe_.cuts; }

  private:
    static response answer(http::status status, std::string body) {
      response res{status, 11};
      res.set(http::field::content_type, "text/plain");
      res.body() = std::move(body);
      return res;
    }
    sink_probe& probe_;
    responder respond_;
  };

  asio::io_context timers_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_{
    timers_.get_executor()};
  std::thread thread_;
};

} // namespace

TEST_CASE("find_route picks the longest prefix and honours exact routes", "[http]") {
  std::vector<route> routes;
  routes.push_back(make_route("/", echo()));
  routes.push_back(make_route("/file/", echo()));
  routes.push_back(make_route("/file/special", echo(), {}, 0, true));
  routes.push_back(make_route("/sched", echo(), {}, 0, true));
  CHECK(find_route(routes, "/index.html") == &routes[0]);
  CHECK(find_route(routes, "/file/a.txt") == &routes[1]);
  CHECK(find_route(routes, "/file/special") == &routes[2]);
  CHECK(find_route(routes, "/file/special?x=1") == &routes[2]);
  CHECK(find_route(routes, "/file/specialx") == &routes[1]);
  CHECK(find_route(routes, "/sched?q") == &routes[3]);
  CHECK(find_route(routes, "/sched/x") == &routes[0]);
  CHECK(find_route(routes, "http://host:1/file/a") == &routes[1]);
  routes.erase(routes.begin());
  CHECK(find_route(routes, "/other") == nullptr);
}

TEST_CASE("GET and POST round trips", "[http]") {
  http_server server{test_options(), default_routes()};
  const auto port = server.start();
  REQUIRE(port != 0);
  CHECK(server.port() == port);
  client c{port};
  auto res = c.roundtrip(http::verb::get, "/get/x?y=1");
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == "GET /get/x?y=1 0");
  CHECK(res[http::field::server] == "cobble");
  res = c.roundtrip(http::verb::post, "/post", std::string(700, 'a'));
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == "POST /post 700");
  CHECK(server.stats().requests.load() == 2);
}

TEST_CASE("keep-alive serves several requests on one connection", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  for (int i = 0; i < 10; ++i) {
    auto res = c.roundtrip(i % 2 ? http::verb::get : http::verb::post, i % 2 ? "/get" : "/post",
                           std::string(static_cast<size_t>(i), 'x'));
    CHECK(res.result() == http::status::ok);
    CHECK(res.keep_alive());
  }
  CHECK(server.stats().connections.load() == 1);
  CHECK(server.stats().requests.load() == 10);
}

TEST_CASE("HEAD gets the GET's headers and no body", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  request req{http::verb::head, "/get", 11};
  req.set(http::field::host, "127.0.0.1");
  c.send(req);
  http::response_parser<http::string_body> parser;
  parser.skip(true); // a response to HEAD has no body, whatever its Content-Length says
  beast::error_code ec = asio::error::would_block;
  c.stream().expires_after(client_timeout);
  http::async_read(c.stream(), c.buffer(), parser,
                   [&](beast::error_code e, std::size_t) { ec = e; });
  c.run();
  REQUIRE(!ec);
  CHECK(parser.get().result() == http::status::ok);
  CHECK(parser.get()[http::field::content_length] == "11"); // "HEAD /get 0"
  // The connection stays in sync: the next response is read correctly.
  CHECK(c.roundtrip(http::verb::get, "/get").body() == "GET /get 0");
}

TEST_CASE("HTTP/1.0 without keep-alive closes after the response", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  c.send_raw("GET /get HTTP/1.0\r\n\r\n");
  auto res = c.read();
  CHECK(res.result() == http::status::ok);
  CHECK(res.version() == 10);
  CHECK(c.read_until_closed() == asio::error::eof);
}

TEST_CASE("a body over the limit gets 413 and the connection closes", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  auto res = c.roundtrip(http::verb::post, "/post", std::string(4096, 'b'));
  CHECK(res.result() == http::status::payload_too_large);
  CHECK(!res.keep_alive());
  auto ec = c.read_until_closed();
  CHECK(ec == asio::error::eof);
  CHECK(server.stats().rejected_too_large.load() == 1);
}

TEST_CASE("a chunked body over the limit gets 413", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  std::string chunk(1000, 'c');
  std::string raw = "POST /post HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i)
    raw += "3e8\r\n" + chunk + "\r\n";
  raw += "0\r\n\r\n";
  c.send_raw(raw);
  auto res = c.read();
  CHECK(res.result() == http::status::payload_too_large);
  CHECK(server.stats().rejected_too_large.load() == 1);
}

TEST_CASE("a per-route body limit lets a bigger body through", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  auto res = c.roundtrip(http::verb::post, "/upload/f", std::string(std::size_t{32} * 1024, 'u'));
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == "POST /upload/f 32768");
  res = c.roundtrip(http::verb::post, "/upload/f", std::string(std::size_t{65} * 1024, 'u'));
  CHECK(res.result() == http::status::payload_too_large);
}

TEST_CASE("Expect: 100-continue gets a 100 before the body is sent", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  request req{http::verb::post, "/upload/big", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::expect, "100-continue");
  req.body() = std::string(20000, 'e');
  req.prepare_payload();
  http::request_serializer<http::string_body> sr{req};
  http::write_header(c.stream(), sr);

  // Only the header is out: the server must answer 100 now.
  http::response<http::empty_body> cont;
  beast::error_code ec = asio::error::would_block;
  c.stream().expires_after(client_timeout);
  http::async_read(c.stream(), c.buffer(), cont, [&](beast::error_code e, std::size_t) { ec = e; });
  c.run();
  REQUIRE(!ec);
  CHECK(cont.result() == http::status::continue_);
  CHECK(cont[http::field::server] == "cobble");

  http::write(c.stream(), sr); // the body
  auto res = c.read();
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == "POST /upload/big 20000");
  CHECK(res.keep_alive());

  SECTION("and a body over the limit gets 413 instead, never 417") {
    request big{http::verb::post, "/post", 11};
    big.set(http::field::host, "127.0.0.1");
    big.set(http::field::expect, "100-continue");
    big.body() = std::string(5000, 'e');
    big.prepare_payload();
    http::request_serializer<http::string_body> sr2{big};
    http::write_header(c.stream(), sr2);
    auto res2 = c.read();
    CHECK(res2.result() == http::status::payload_too_large);
  }
}

TEST_CASE("a slow client is closed after the read timeout", "[http]") {
  auto opts = test_options();
  opts.read_timeout = 300ms;
  http_server server{opts, default_routes()};
  client c{server.start()};
  const auto started = std::chrono::steady_clock::now();
  c.send_raw("GET /get HTTP/1.1\r\nHost: 127.");
  auto ec = c.read_until_closed();
  const auto elapsed = std::chrono::steady_clock::now() - started;
  CHECK(ec != beast::error::timeout); // the server closed, not our own deadline
  CHECK(elapsed >= 250ms);
  CHECK(elapsed < 3s);
  CHECK(eventually(server.stats().timeouts, 1));
}

TEST_CASE("an idle keep-alive connection is closed after the idle timeout", "[http]") {
  auto opts = test_options();
  opts.idle_timeout = 200ms;
  http_server server{opts, default_routes()};
  client c{server.start()};
  CHECK(c.roundtrip(http::verb::get, "/get").result() == http::status::ok);
  auto ec = c.read_until_closed();
  CHECK(ec != beast::error::timeout);
  CHECK(eventually(server.stats().idle_timeouts, 1));
  CHECK(server.stats().timeouts.load() == 0);
}

TEST_CASE("a connection over max_connections gets 503 and a close, the others go on", "[http]") {
  auto opts = test_options();
  opts.max_connections = 2;
  http_server server{opts, default_routes()};
  auto port = server.start();
  auto first = std::make_unique<client>(port);
  client second{port};
  REQUIRE(first->roundtrip(http::verb::get, "/get").result() == http::status::ok);
  REQUIRE(second.roundtrip(http::verb::get, "/get").result() == http::status::ok);

  client third{port};
  auto refused = third.read(); // the server speaks first, without a request
  CHECK(refused.result() == http::status::service_unavailable);
  CHECK(refused[http::field::retry_after] == "60");
  CHECK(refused.body().find("too many connections") != std::string::npos);
  CHECK(third.read_until_closed() != beast::error::timeout);
  CHECK(server.stats().refused_busy.load() == 1);

  CHECK(second.roundtrip(http::verb::get, "/get").result() == http::status::ok);
  first.reset(); // one leaves: there is room again
  REQUIRE(eventually(server.stats().open_connections, 1));
  client fourth{port};
  CHECK(fourth.roundtrip(http::verb::get, "/get").result() == http::status::ok);
}

TEST_CASE("unknown paths get 404, wrong methods 405 with Allow", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  auto res = c.roundtrip(http::verb::get, "/nope");
  CHECK(res.result() == http::status::not_found);
  CHECK(res.keep_alive());
  res = c.roundtrip(http::verb::get, "/post");
  CHECK(res.result() == http::status::method_not_allowed);
  CHECK(res[http::field::allow] == "POST");
  res = c.roundtrip(http::verb::delete_, "/get");
  CHECK(res.result() == http::status::method_not_allowed);
  CHECK(res[http::field::allow] == "GET, HEAD");
  // A rejected request with a body closes the connection (the body was not read).
  res = c.roundtrip(http::verb::post, "/nope", "body");
  CHECK(res.result() == http::status::not_found);
  CHECK(!res.keep_alive());
  CHECK(server.stats().not_found.load() == 2);
  CHECK(server.stats().method_not_allowed.load() == 2);
}

TEST_CASE("malformed HTTP gets 400 and a close", "[http]") {
  http_server server{test_options(), default_routes()};
  client c{server.start()};
  c.send_raw("this is not http\r\n\r\n");
  auto res = c.read();
  CHECK(res.result() == http::status::bad_request);
  CHECK(!res.keep_alive());
  CHECK(server.stats().bad_requests.load() == 1);
}

TEST_CASE("a bad Host gets 400 and a transfer coding other than chunked 501", "[http]") {
  http_server server{test_options(), default_routes()};
  const auto port = server.start();
  for (const char* host : {"bad host", "a/b", "x:99999", "ex\"ample.org", "\xc3\xa9.com"}) {
    INFO(host);
    client c{port};
    c.send_raw(std::string{"GET /get HTTP/1.1\r\nHost: "} + host + "\r\n\r\n");
    auto res = c.read();
    CHECK(res.result() == http::status::bad_request);
    CHECK_THAT(res.body(), Catch::Contains("Host"));
  }
  {
    client c{port};
    c.send_raw("GET /get HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    CHECK(c.read().result() == http::status::bad_request);
  }
  for (const char* coding : {"gzip, chunked", "gzip", "chunked, chunked"}) {
    INFO(coding);
    client c{port};
    c.send_raw(std::string{"POST /post HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "} + coding
               + "\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    auto res = c.read();
    CHECK(res.result() == http::status::not_implemented);
    CHECK(!res.keep_alive());
  }
  // What clients send passes.
  client c{port};
  c.send_raw("POST /post HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nTransfer-Encoding: Chunked"
             "\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  auto res = c.read();
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == "POST /post 5");
}

TEST_CASE("handlers answer from another thread", "[http]") {
  std::mutex mtx;
  std::vector<std::thread> workers;
  std::vector<route> routes;
  routes.push_back(make_route("/async", [&](request&& req, const responder& respond) {
    std::lock_guard lock{mtx};
    workers.emplace_back([req = std::move(req), respond] {
      respond(make_response(req, http::status::ok, "later " + req.body()));
    });
  }));
  {
    http_server server{test_options(), std::move(routes)};
    client c{server.start()};
    for (int i = 0; i < 3; ++i) {
      auto res = c.roundtrip(http::verb::post, "/async", std::to_string(i));
      CHECK(res.result() == http::status::ok);
      CHECK(res.body() == "later " + std::to_string(i));
    }
  }
  for (auto& t : workers)
    t.join();
}

TEST_CASE("a handler that throws or drops its responder yields 500", "[http]") {
  std::vector<route> routes;
  routes.push_back(
    make_route("/throw", [](request&&, const responder&) { throw std::runtime_error("boom"); }));
  routes.push_back(make_route("/drop", [](request&&, const responder&) {}));
  routes.push_back(make_route("/twice", [](request&& req, const responder& respond) {
    respond(make_response(req, http::status::ok, "first"));
    respond(make_response(req, http::status::ok, "second"));
  }));
  http_server server{test_options(), std::move(routes)};
  client c{server.start()};
  CHECK(c.roundtrip(http::verb::get, "/throw").result() == http::status::internal_server_error);
  CHECK(c.roundtrip(http::verb::get, "/drop").result() == http::status::internal_server_error);
  auto res = c.roundtrip(http::verb::get, "/twice");
  CHECK(res.body() == "first");
  // The connection is still in sync: the second answer went nowhere.
  CHECK(c.roundtrip(http::verb::get, "/twice").body() == "first");
  CHECK(server.stats().handler_errors.load() == 2);
}

TEST_CASE("many concurrent connections are all answered", "[http]") {
  auto opts = test_options();
  opts.threads = 4;
  http_server server{opts, default_routes()};
  const auto port = server.start();
  constexpr int n_clients = 50;
  constexpr int n_requests = 20;
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  clients.reserve(n_clients);
  for (int i = 0; i < n_clients; ++i)
    clients.emplace_back([&, i] {
      try {
        client c{port};
        for (int j = 0; j < n_requests; ++j) {
          auto target = "/post/" + std::to_string(i) + "/" + std::to_string(j);
          auto res = c.roundtrip(http::verb::post, target,
                                 std::string(static_cast<size_t>(j), 'z'));
          if (res.result() == http::status::ok
              && res.body() == "POST " + target + " " + std::to_string(j))
            ++ok;
        }
      } catch (const std::exception&) {
      }
    });
  for (auto& t : clients)
    t.join();
  CHECK(ok == n_clients * n_requests);
  CHECK(server.stats().connections.load() == n_clients);
  CHECK(server.stats().requests.load() == static_cast<unsigned long>(n_clients) * n_requests);
}

TEST_CASE("stop() with open connections returns promptly, late responders are no-ops", "[http]") {
  parking lot;
  std::vector<route> routes = default_routes();
  routes.push_back(make_route("/park", lot.park()));
  auto server = std::make_unique<http_server>(test_options(), std::move(routes));
  const auto port = server->start();
  client idle{port};
  CHECK(idle.roundtrip(http::verb::get, "/get").result() == http::status::ok);
  client half{port};
  half.send_raw("POST /post HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc");
  client waiting{port};
  waiting.send_raw("GET /park HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(lot.wait());

  const auto started = std::chrono::steady_clock::now();
  server->stop();
  CHECK(std::chrono::steady_clock::now() - started < 2s);
  CHECK(idle.read_until_closed() != beast::error::timeout);
  CHECK(waiting.read_until_closed() != beast::error::timeout);
  CHECK(half.read_until_closed() != beast::error::timeout);
  server->stop(); // idempotent

  // A responder called after stop() does nothing, nor after the server is gone.
  (*lot.respond)(make_response(*lot.req, http::status::ok, "too late"));
  server.reset();
  (*lot.respond)(make_response(*lot.req, http::status::ok, "way too late"));
  lot.respond.reset(); // dropping it after the server is gone is safe too
}

TEST_CASE("a responder never called, outliving the server, is safe to drop", "[http]") {
  parking lot;
  {
    std::vector<route> routes;
    routes.push_back(make_route("/park", lot.park()));
    http_server server{test_options(), std::move(routes)};
    client c{server.start()};
    c.send_raw("GET /park HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(lot.wait());
  }                    // the destructor stops the server
  lot.respond.reset(); // would answer 500, but the server is gone
}

TEST_CASE("start() reports bind failures and refuses a second start", "[http]") {
  http_server first{test_options(), default_routes()};
  const auto port = first.start();
  CHECK_THROWS_AS(first.start(), std::logic_error);
  auto opts = test_options();
  opts.port = port;
  http_server second{opts, default_routes()};
  CHECK_THROWS_AS(second.start(), std::system_error);
  auto bad = test_options();
  bad.address = "not an address";
  http_server third{bad, default_routes()};
  CHECK_THROWS_AS(third.start(), std::system_error);
}

TEST_CASE("a streamed body reaches its sink in pieces, never whole", "[http]") {
  sink_probe probe;
  http_server server{test_options(), probe.routes(std::size_t{8} << 20)};
  client c{server.start()};
  const std::string body(std::size_t{1} << 20, 'x');
  auto res = c.roundtrip(http::verb::post, "/stream", body);
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == std::to_string(body.size()));
  CHECK(probe.pieces >= 16); // never more than 64 KiB at once
  CHECK(probe.largest <= std::size_t{64} * 1024);
  // The connection stays usable, and a chunked body streams too.
  request chunked{http::verb::post, "/stream", 11};
  chunked.set(http::field::host, "127.0.0.1");
  chunked.chunked(true);
  chunked.body() = std::string(100000, 'y');
  c.send(std::move(chunked));
  res = c.read();
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == std::to_string(body.size() + 100000));
}

TEST_CASE("the read timeout applies to each piece of a streamed body, not to the whole", "[http]") {
  sink_probe probe;
  probe.hold = 100ms; // each piece well within the timeout, the body not
  probe.held_pieces = 8;
  auto opts = test_options();
  opts.read_timeout = 300ms;
  http_server server{opts, probe.routes(std::size_t{8} << 20)};
  client c{server.start()};
  const auto started = std::chrono::steady_clock::now();
  auto res = c.roundtrip(http::verb::post, "/stream", std::string(std::size_t{1} << 20, 'x'));
  CHECK(res.result() == http::status::ok);
  CHECK(res.body() == std::to_string(std::size_t{1} << 20));
  CHECK(std::chrono::steady_clock::now() - started > opts.read_timeout);
  CHECK(server.stats().timeouts.load() == 0);
}

TEST_CASE("a sink that refuses at its first piece leaves the body unread and closes", "[http]") {
  sink_probe probe;
  probe.refuse_first = true;
  http_server server{test_options(), probe.routes(std::size_t{256} << 20)};
  client c{server.start()};
  // 200 MiB announced, 64 KiB sent: the answer comes without the rest.
  c.send_raw("POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 209715200\r\n\r\n");
  c.send_raw(std::string(std::size_t{64} * 1024, 'x'));
  auto res = c.read();
  CHECK(res.result() == http::status::forbidden);
  CHECK(!res.keep_alive());
  CHECK(c.read_until_closed() != beast::error::timeout);
  CHECK(probe.pieces == 1);
}

TEST_CASE("a cut streamed body tells its sink, and no error is counted", "[http]") {
  sink_probe probe;
  http_server server{test_options(), probe.routes(std::size_t{8} << 20)};
  {
    client c{server.start()};
    c.send_raw("POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
    c.send_raw(std::string(1000, 'x'));
  } // the client goes away mid-body
  CHECK(eventually(probe.cuts, 1));
  CHECK(probe.bytes == 1000);
  CHECK(server.stats().handler_errors.load() == 0);
}
