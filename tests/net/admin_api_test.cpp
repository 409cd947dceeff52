#include "../support/temp_dir.hpp"
#include "actors/clock.hpp"
#include "actors/code_sign.hpp"
#include "actors/node.hpp"
#include "config/config.hpp"
#include "net/admin_api.hpp"
#include "net/files.hpp"
#include "storage/event_store.hpp"
#include "storage/file_store.hpp"
#include "tests/support/demo_config.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace cobble;
using namespace std::chrono_literals;
using nlohmann::json;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

/// One answer of the admin API.
struct answer {
  unsigned status = 0;
  json body = json::object();
  std::string raw;
  std::string allow;
};

answer answer_of(const http::response<http::string_body>& res) {
  answer out;
  out.status = res.result_int();
  out.raw = res.body();
  out.body = json::parse(res.body(), nullptr, false);
  if (auto it = res.find(http::field::allow); it != res.end())
    out.allow = std::string{it->value()};
  return out;
}

/// A blocking Beast client, one connection per request, with a deadline (never hangs).
answer fetch(std::uint16_t port, http::verb verb, const std::string& target,
             const std::string& token, const std::string& body = {},
             const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers)
    req.set(name, value);
  if (!token.empty())
    req.set(http::field::authorization, "Bearer " + token);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code result;
  stream.expires_after(10s);
  stream.async_connect(tcp::endpoint{asio::ip::make_address("127.0.0.1"), port},
                       [&](beast::error_code ec) {
                         if (ec) {
                           result = ec;
                           return;
                         }
                         http::async_write(stream, req, [&](beast::error_code wec, std::size_t) {
                           if (wec) {
                             result = wec;
                             return;
                           }
                           http::async_read(stream, buffer, res,
                                            [&](beast::error_code rec, std::size_t) {
                                              result = rec;
                                            });
                         });
                       });
  ioc.run();
  if (result)
    throw beast::system_error{result};
  return answer_of(res);
}

/// Sends only a request's header (announcing a body it never sends) and reads the answer:
/// a server that waited for the body would time out here instead of answering.
answer answer_to_header(std::uint16_t port, const std::string& header) {
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  beast::error_code result;
  stream.expires_after(10s);
  stream.async_connect(
    tcp::endpoint{asio::ip::make_address("127.0.0.1"), port}, [&](beast::error_code ec) {
      if (ec) {
        result = ec;
        return;
      }
      asio::async_write(stream, asio::buffer(header), [&](beast::error_code wec, std::size_t) {
        if (wec) {
          result = wec;
          return;
        }
        http::async_read(stream, buffer, res,
                         [&](beast::error_code rec, std::size_t) { result = rec; });
      });
    });
  ioc.run();
  if (result)
    throw beast::system_error{result};
  return answer_of(res);
}

/// A running node (demo configuration, temporary data directory) behind the admin API.
struct admin_fixture {
  cobble::test::temp_dir dir{"admin-api"};
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  node_handles handles;
  std::unique_ptr<net::http_server> server;
  std::uint16_t port = 0;
  const std::string token = "test-token-0123456789";

  /// With `with_files`, the admin API stages files (POST .../files, .../app-files), as in
  /// `cobbled`.
  explicit admin_fixture(bool with_files = false) : files_on(with_files) { start(); }
  bool files_on = false;

  ~admin_fixture() { stop(); }

  /// Stops the node and starts it again on the same data directory (a restart of cobbled).
  void restart() {
    stop();
    start();
  }

  void start() {
    cfg = std::make_unique<caf::actor_system_config>();
    register_types(*cfg);
    sys = std::make_unique<caf::actor_system>(*cfg);
    auto conf = cobble::test::demo_config();
    conf.server.data_dir = dir.path();
    auto opened = storage::event_store::open(dir.path() / "log");
    REQUIRE(opened);
    std::shared_ptr<storage::event_store> store = std::move(*opened);
    auto started = start_node(*sys, conf, store, std::make_shared<system_clock>());
    REQUIRE(started);
    handles = *started;
    net::admin_context ctx;
    ctx.sys = sys.get();
    ctx.projects = handles.projects;
    ctx.aggregator = handles.aggregator;
    ctx.token = token;
    ctx.timeout = 10s;
    if (files_on)
      ctx.files = std::make_shared<net::file_service>(std::make_shared<storage::file_store>(
                                                        dir.path()),
                                                      "admin-test-secret");
    server = std::make_unique<net::http_server>(net::server_options{},
                                                net::admin_routes(std::move(ctx)));
    port = server->start();
  }

  void stop() {
    server->stop();
    server.reset();
    {
      caf::scoped_actor self{*sys};
      self->request(handles.node, 30s, atom::snapshot_v, atom::sync_v)
        .receive([](std::uint64_t) {}, [](caf::error&) {});
    }
    handles = node_handles{};
    sys.reset();
    cfg.reset();
  }

  answer get(const std::string& target) { return fetch(port, http::verb::get, target, token); }

  answer post(const std::string& target, const json& body) {
    return fetch(port, http::verb::post, target, token, body.dump());
  }

  answer post_raw(const std::string& target, const std::string& body) {
    return fetch(port, http::verb::post, target, token, body);
  }

  /// POST with an Idempotency-Key.
  answer post_keyed(const std::string& target, const json& body, const std::string& key) {
    return fetch(port, http::verb::post, target, token, body.dump(), {{"Idempotency-Key", key}});
  }
};

std::string error_of(const answer& a) {
  REQUIRE(a.body.is_object());
  REQUIRE(a.body.contains("error"));
  return a.body["error"].get<std::string>();
}

} // namespace

TEST_CASE_METHOD(admin_fixture, "the admin API needs the bearer token", "[net][admin]") {
  auto none = fetch(port, http::verb::get, "/api/projects", "");
  CHECK(none.status == 401);
  CHECK_THAT(error_of(none), Catch::Contains("missing"));
  auto wrong = fetch(port, http::verb::get, "/api/projects", "test-token-0123456788");
  CHECK(wrong.status == 401);
  CHECK_THAT(error_of(wrong), Catch::Contains("invalid"));
  auto shorter = fetch(port, http::verb::get, "/api/projects", "test");
  CHECK(shorter.status == 401);
  auto post = fetch(port, http::verb::post, "/api/projects/demo/workunits", "",
                    R"({"app":"testapp"})");
  CHECK(post.status == 401);
  auto ok = get("/api/projects");
  CHECK(ok.status == 200);
}

TEST_CASE_METHOD(admin_fixture,
                 "a request is judged by its header: no token or too big, no body is read",
                 "[net][admin]") {
  // 200 MB announced without the token: refused at once, nothing buffered.
  auto stranger = answer_to_header(port, "POST /api/projects/demo/workunits HTTP/1.1\r\n"
                                         "Host: 127.0.0.1\r\n"
                                         "Content-Type: application/json\r\n"
                                         "Content-Length: 200000000\r\n\r\n");
  CHECK(stranger.status == 401);
  CHECK_THAT(error_of(stranger), Catch::Contains("missing bearer token"));
  // With the token, the admin API's body limit is the documented 4 MiB, not the upload limit.
  auto big = answer_to_header(port, "POST /api/projects/demo/workunits HTTP/1.1\r\n"
                                    "Host: 127.0.0.1\r\n"
                                    "Authorization: Bearer "
                                      + token
                                      + "\r\n"
                                        "Content-Type: application/json\r\n"
                                        "Content-Length: 4194305\r\n\r\n");
  CHECK(big.status == 413);
  CHECK(server->stats().refused_early.load() == 1);
  CHECK(server->stats().rejected_too_large.load() == 1);
}

TEST_CASE("constant_time_equal compares whole strings", "[net][admin]") {
  CHECK(net::constant_time_equal("abc", "abc"));
  CHECK_FALSE(net::constant_time_equal("abd", "abc"));
  CHECK_FALSE(net::constant_time_equal("ab", "abc"));
  CHECK_FALSE(net::constant_time_equal("abcd", "abc"));
  CHECK_FALSE(net::constant_time_equal("", "abc"));
}

TEST_CASE_METHOD(admin_fixture, "projects are listed and summarized", "[net][admin]") {
  auto all = get("/api/projects");
  REQUIRE(all.status == 200);
  REQUIRE(all.body.is_array());
  REQUIRE(all.body.size() == 1);
  CHECK(all.body[0]["name"] == "demo");
  auto one = get("/api/projects/demo");
  REQUIRE(one.status == 200);
  CHECK(one.body["long_name"] == "Cobble demo project");
  CHECK(one.body["workunits"] == 0);
  REQUIRE(one.body["apps"].size() == 1);
  CHECK(one.body["apps"][0]["name"] == "testapp");
  CHECK(one.body["apps"][0]["unsent"] == 0);
  CHECK(one.body["counters"].contains("workunits_created"));
  auto unknown = get("/api/projects/nope");
  CHECK(unknown.status == 404);
  CHECK_THAT(error_of(unknown), Catch::Contains("nope"));
  auto wrong_method = fetch(port, http::verb::delete_, "/api/projects/demo", token);
  CHECK(wrong_method.status == 405);
  CHECK(wrong_method.allow == "GET");
  CHECK(get("/api/elsewhere").status == 404);
  auto apps = get("/api/projects/demo/apps");
  REQUIRE(apps.status == 200);
  REQUIRE(apps.body.size() == 1);
  CHECK(apps.body[0]["name"] == "testapp");
  CHECK(apps.body[0]["min_quorum"] == 2);
  CHECK(apps.body[0]["validator"] == "bitwise");
  REQUIRE(apps.body[0]["versions"].size() == 1);
  CHECK(apps.body[0]["versions"][0]["platform"] == "x86_64-pc-linux-gnu");
  CHECK(apps.body[0]["versions"][0]["resource"] == "CPU");
}

TEST_CASE_METHOD(admin_fixture, "work is created, listed and shown", "[net][admin]") {
  auto one = post("/api/projects/demo/workunits", {{"app", "testapp"},
                                                   {"name", "wu-one"},
                                                   {"rsc_fpops_est", 1e12},
                                                   {"command_line", "--seed 1"},
                                                   {"delay_bound", 3600}});
  REQUIRE(one.status == 201);
  CHECK(one.body["names"] == json::array({"wu-one"}));
  REQUIRE(one.body["ids"].size() == 1);
  auto one_id = one.body["ids"][0].get<std::uint64_t>();

  auto batch = post("/api/projects/demo/workunits",
                    {{"submitter", "tester"},
                     {"items", json::array({{{"app", "testapp"}, {"count", 3}},
                                            {{"app", "testapp"}, {"name", "wu-two"}}})}});
  REQUIRE(batch.status == 201);
  REQUIRE(batch.body["names"].size() == 4);
  CHECK(batch.body["names"][3] == "wu-two");

  auto list = get("/api/projects/demo/workunits");
  REQUIRE(list.status == 200);
  REQUIRE(list.body["items"].size() == 5);
  CHECK(list.body["items"][0]["name"] == "wu-one");
  CHECK(list.body["items"][4]["name"] == "wu-two");
  CHECK(list.body["items"][0]["result_counts"]["unsent"] == 2);
  auto page = get("/api/projects/demo/workunits?offset=1&limit=2");
  REQUIRE(page.status == 200);
  REQUIRE(page.body["items"].size() == 2);
  CHECK(page.body["items"][0]["name"] == batch.body["names"][0]);
  CHECK(get("/api/projects/demo/workunits?limit=zero").status == 400);

  auto shown = get("/api/projects/demo/workunits/wu-one");
  REQUIRE(shown.status == 200);
  CHECK(shown.body["id"] == one_id);
  CHECK(shown.body["app"] == "testapp");
  CHECK(shown.body["state"] == "active");
  CHECK(shown.body["params"]["command_line"] == "--seed 1");
  CHECK(shown.body["params"]["delay_bound"] == 3600.0);
  CHECK(shown.body["params"]["rsc_fpops_est"] == 1e12);
  CHECK(shown.body["canonical_result"].is_null());
  CHECK(shown.body["created"].is_number());
  REQUIRE(shown.body["results"].size() == 2);
  CHECK(shown.body["results"][0]["name"] == "wu-one_0");
  CHECK(shown.body["results"][1]["state"] == "unsent");
  CHECK(shown.body["results"][1]["host"].is_null());

  auto by_id = get("/api/projects/demo/workunits/" + std::to_string(one_id));
  REQUIRE(by_id.status == 200);
  CHECK(by_id.body["name"] == "wu-one");

  auto result = get("/api/projects/demo/results/wu-one_1");
  REQUIRE(result.status == 200);
  CHECK(result.body["name"] == "wu-one_1");
  CHECK(result.body["index"] == 1);
  CHECK(result.body["workunit"]["name"] == "wu-one");
  CHECK(get("/api/projects/demo/results/wu-one_7").status == 404);
  CHECK(get("/api/projects/demo/results/nounderscore").status == 404);

  auto summary = get("/api/projects/demo");
  CHECK(summary.body["workunits"] == 5);
  CHECK(summary.body["apps"][0]["unsent"] == 10);
}

TEST_CASE_METHOD(admin_fixture, "an operator cancels a workunit, once", "[net][admin]") {
  REQUIRE(post("/api/projects/demo/workunits", {{"app", "testapp"}, {"name", "wu-bad"}}).status
          == 201);
  auto cancelled = post("/api/projects/demo/workunits/wu-bad/cancel",
                        {{"reason", "bad inputs"}, {"by", "alice"}});
  REQUIRE(cancelled.status == 200);
  CHECK(cancelled.body["state"] == "cancelled");
  CHECK(cancelled.body["failure"] == "cancelled: bad inputs");
  CHECK(cancelled.body["finished"].is_number());
  for (const auto& r : cancelled.body["results"]) {
    CHECK(r["state"] == "over");
    CHECK(r["outcome"] == "didnt_need");
  }
  auto shown = get("/api/projects/demo/workunits/wu-bad");
  CHECK(shown.body["state"] == "cancelled");
  auto summary = get("/api/projects/demo");
  CHECK(summary.body["counters"]["workunits_cancelled"] == 1);
  CHECK(summary.body["counters"]["workunits_failed"] == 0); // a cancel is no failure
  CHECK(summary.body["active_workunits"] == 0);
  CHECK(summary.body["apps"][0]["unsent"] == 0);

  // Twice: 409, naming the state; unknown: 404; a bad body: 400 and nothing cancelled.
  auto again = post("/api/projects/demo/workunits/wu-bad/cancel", json::object());
  CHECK(again.status == 409);
  CHECK_THAT(error_of(again), Catch::Contains("cancelled already"));
  CHECK(post("/api/projects/demo/workunits/nope/cancel", json::object()).status == 404);
  REQUIRE(post("/api/projects/demo/workunits", {{"app", "testapp"}, {"name", "wu-ok"}}).status
          == 201);
  auto bad = post("/api/projects/demo/workunits/wu-ok/cancel", {{"why", "typo"}});
  CHECK(bad.status == 400);
  CHECK(
    post("/api/projects/demo/workunits/wu-ok/cancel", {{"reason", std::string(1001, 'x')}}).status
    == 400);
  CHECK(get("/api/projects/demo/workunits/wu-ok").body["state"] == "active");
  // An empty body is allowed: the reason is then "by the operator".
  auto plain = post_raw("/api/projects/demo/workunits/wu-ok/cancel", "");
  REQUIRE(plain.status == 200);
  CHECK(plain.body["failure"] == "cancelled: by the operator");
}

TEST_CASE_METHOD(admin_fixture, "a bad batch creates nothing", "[net][admin]") {
  auto bad = post("/api/projects/demo/workunits",
                  {{"items", json::array({{{"app", "testapp"}, {"name", "first-ok"}},
                                          {{"app", "no-such-app"}}})}});
  CHECK(bad.status == 404);
  CHECK_THAT(error_of(bad), Catch::Contains("no-such-app"));
  CHECK(get("/api/projects/demo/workunits/first-ok").status == 404);
  CHECK(get("/api/projects/demo").body["workunits"] == 0);

  REQUIRE(post("/api/projects/demo/workunits", {{"app", "testapp"}, {"name", "dup"}}).status
          == 201);
  auto dup = post("/api/projects/demo/workunits", {{"app", "testapp"}, {"name", "dup"}});
  CHECK(dup.status == 409);
  CHECK_THAT(error_of(dup), Catch::Contains("dup"));

  auto unknown_field = post("/api/projects/demo/workunits",
                            {{"app", "testapp"}, {"colour", "blue"}});
  CHECK(unknown_field.status == 400);
  CHECK_THAT(error_of(unknown_field), Catch::Contains("colour"));

  auto in_item = post("/api/projects/demo/workunits",
                      {{"items", json::array(
                                   {{{"app", "testapp"}}, {{"app", "testapp"}, {"flavour", 1}}})}});
  CHECK(in_item.status == 400);
  CHECK_THAT(error_of(in_item), Catch::Contains("flavour") && Catch::Contains("item 1"));

  auto wrong_type = post("/api/projects/demo/workunits",
                         {{"app", "testapp"}, {"min_quorum", "two"}});
  CHECK(wrong_type.status == 400);
  CHECK_THAT(error_of(wrong_type), Catch::Contains("min_quorum"));

  auto missing_app = post("/api/projects/demo/workunits", {{"name", "x"}});
  CHECK(missing_app.status == 400);
  CHECK_THAT(error_of(missing_app), Catch::Contains("app"));

  auto invalid = post("/api/projects/demo/workunits", {{"app", "testapp"}, {"delay_bound", -1}});
  CHECK(invalid.status == 400);
  CHECK_THAT(error_of(invalid), Catch::Contains("delay_bound"));

  auto count_and_name = post("/api/projects/demo/workunits",
                             {{"app", "testapp"}, {"name", "n"}, {"count", 2}});
  CHECK(count_and_name.status == 400);

  // AutoFlops: predicted app units must be a positive number.
  for (json units : {json(-2), json(0), json("many")}) {
    auto r = post("/api/projects/demo/workunits",
                  {{"app", "testapp"}, {"predicted_app_units", units}});
    CHECK(r.status == 400);
    CHECK_THAT(error_of(r), Catch::Contains("predicted_app_units"));
  }

  auto not_json = post_raw("/api/projects/demo/workunits", "{not json");
  CHECK(not_json.status == 400);
  CHECK_THAT(error_of(not_json), Catch::Contains("JSON"));
  // A number beyond a double (the fuzzer's find: a 500 before) and bytes that are no UTF-8.
  for (const std::string& body : {std::string{R"({"app": "testapp", "delay_bound": 1e400})"},
                                  std::string{"{\"app\": \"test\xff\xfe\"}"}}) {
    auto refused = post_raw("/api/projects/demo/workunits", body);
    CHECK(refused.status == 400);
    CHECK_THAT(error_of(refused), Catch::Contains("not valid JSON"));
  }

  CHECK(get("/api/projects/demo").body["workunits"] == 1);

  // A good value is kept and shown with the workunit.
  auto good = post("/api/projects/demo/workunits",
                   {{"app", "testapp"}, {"name", "units"}, {"predicted_app_units", 12.5}});
  REQUIRE(good.status == 201);
  CHECK(get("/api/projects/demo/workunits/units").body["params"]["predicted_app_units"] == 12.5);
}

TEST_CASE_METHOD(admin_fixture, "a batch over server.max_batch_items creates nothing",
                 "[net][admin][batch]") {
  auto spec = json{{"app", "testapp"}};
  // 10,001 workunits: as 10,001 specs, or as counts that add up past the limit.
  auto items = json::array();
  for (int i = 0; i < 10001; ++i)
    items.push_back(spec);
  auto over = post("/api/projects/demo/workunits", {{"items", items}});
  CHECK(over.status == 413);
  CHECK_THAT(error_of(over), Catch::Contains("10001") && Catch::Contains("10000")
                               && Catch::Contains("server.max_batch_items"));
  auto counted = post("/api/projects/demo/workunits",
                      {{"items", json::array({{{"app", "testapp"}, {"count", 6000}},
                                              {{"app", "testapp"}, {"count", 5000}}})}});
  CHECK(counted.status == 413);
  CHECK_THAT(error_of(counted), Catch::Contains("11000"));
  // A count far past every limit is refused as fast: nothing is expanded.
  auto huge = post("/api/projects/demo/workunits", {{"app", "testapp"}, {"count", 100000}});
  CHECK(huge.status == 413);
  CHECK(get("/api/projects/demo").body["workunits"] == 0);

  // The limit itself is allowed; how long it took is printed, not asserted.
  items.erase(items.begin());
  auto start = std::chrono::steady_clock::now();
  auto at_limit = post("/api/projects/demo/workunits", {{"items", items}});
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(at_limit.status == 201);
  CHECK(at_limit.body["ids"].size() == 10000);
  CHECK(get("/api/projects/demo").body["workunits"] == 10000);
  std::printf("POST of 10,000 workunits, answered when durable: %.1f ms\n",
              std::chrono::duration<double, std::milli>(took).count());
}

TEST_CASE_METHOD(admin_fixture, "a batch retried with its Idempotency-Key is created once",
                 "[net][admin][batch]") {
  const std::string target = "/api/projects/demo/workunits";
  auto batch = json{{"items", json::array({{{"app", "testapp"}, {"count", 3}},
                                           {{"app", "testapp"}, {"name", "keyed-one"}}})}};
  auto first = post_keyed(target, batch, "retry-0001");
  REQUIRE(first.status == 201);
  CHECK(first.body["replayed"] == false);
  REQUIRE(first.body["ids"].size() == 4);

  // The client lost the answer and sends the same batch again (keys in another order, which
  // is the same JSON): the first answer, nothing created.
  auto reordered = json::parse(R"({"items": [{"count": 3, "app": "testapp"},
                                             {"name": "keyed-one", "app": "testapp"}]})");
  auto again = post_keyed(target, reordered, "retry-0001");
  REQUIRE(again.status == 200);
  CHECK(again.body["replayed"] == true);
  CHECK(again.body["ids"] == first.body["ids"]);
  CHECK(again.body["names"] == first.body["names"]);
  CHECK(get("/api/projects/demo").body["workunits"] == 4);

  // Without the key the same unnamed work is created again (names are generated), and the
  // named one is refused as a duplicate: the key is what makes a retry safe.
  auto unkeyed = post(target, {{"app", "testapp"}, {"count", 2}});
  CHECK(unkeyed.status == 201);
  auto named = post(target, {{"app", "testapp"}, {"name", "keyed-one"}});
  CHECK(named.status == 409);
  CHECK(get("/api/projects/demo").body["workunits"] == 6);

  // The same key with another batch: 409 naming the key, nothing created.
  auto other = post_keyed(target, {{"app", "testapp"}, {"count", 3}}, "retry-0001");
  CHECK(other.status == 409);
  CHECK_THAT(error_of(other), Catch::Contains("retry-0001"));
  CHECK(get("/api/projects/demo").body["workunits"] == 6);

  // A key that is no key: 400.
  CHECK(post_keyed(target, batch, std::string(201, 'k')).status == 400);
  CHECK(post_keyed(target, batch, "has space").status == 400);

  // The key outlives a restart: it is in the log, and the retry still replays.
  restart();
  auto after = post_keyed(target, batch, "retry-0001");
  REQUIRE(after.status == 200);
  CHECK(after.body["replayed"] == true);
  CHECK(after.body["ids"] == first.body["ids"]);
  CHECK(after.body["names"] == first.body["names"]);
  CHECK(post_keyed(target, {{"app", "testapp"}}, "retry-0001").status == 409);
  CHECK(get("/api/projects/demo").body["workunits"] == 6);
}

TEST_CASE_METHOD(admin_fixture, "unknown things are 404", "[net][admin]") {
  auto wu = get("/api/projects/demo/workunits/nope");
  CHECK(wu.status == 404);
  CHECK_THAT(error_of(wu), Catch::Contains("nope"));
  CHECK(get("/api/projects/demo/hosts/42").status == 404);
  CHECK(get("/api/projects/demo/hosts/abc").status == 404);
  CHECK(get("/api/projects/other/workunits").status == 404);
  CHECK(get("/api/projects/demo/nothing").status == 404);
  auto hosts = get("/api/projects/demo/hosts");
  REQUIRE(hosts.status == 200);
  CHECK(hosts.body["items"].empty());
  auto put = fetch(port, http::verb::put, "/api/projects/demo/workunits", token, "{}");
  CHECK(put.status == 405);
  CHECK(put.allow == "GET, POST");
}

TEST_CASE_METHOD(admin_fixture, "users are created and listed", "[net][admin]") {
  auto created = post("/api/projects/demo/users", {{"name", "alice"}, {"email", "a@example.org"}});
  REQUIRE(created.status == 201);
  CHECK(created.body["id"].is_number_unsigned());
  auto auth = created.body["authenticator"].get<std::string>();
  CHECK(auth.size() >= 16);
  auto again = post("/api/projects/demo/users", {{"name", "alice"}});
  CHECK(again.status == 409);
  CHECK(post("/api/projects/demo/users", {{"name", "bob"}, {"age", 3}}).status == 400);
  CHECK(post("/api/projects/demo/users", {{"email", "x@y"}}).status == 400);
  auto users = get("/api/projects/demo/users");
  REQUIRE(users.status == 200);
  REQUIRE(users.body.is_array());
  bool found = false;
  for (const auto& u : users.body)
    if (u["name"] == "alice") {
      found = true;
      CHECK(u["email"] == "a@example.org");
      CHECK(u["authenticator"] == auth);
      CHECK(u["id"] == created.body["id"]);
    }
  CHECK(found);
  CHECK(get("/api/projects/demo").body["users"] == users.body.size());
}

namespace {

struct files_fixture : admin_fixture {
  files_fixture() : admin_fixture(true) {}
};

} // namespace

TEST_CASE_METHOD(files_fixture, "an operator adds a key, an app and a signed version",
                 "[net][admin]") {
  auto keys = generate_code_sign_keys();
  REQUIRE(keys);
  auto key = post("/api/projects/demo/keys", {{"public_key", keys->public_key}});
  REQUIRE(key.status == 201);
  CHECK(key.body == json{{"id", 1}, {"changed", true}});
  CHECK(post("/api/projects/demo/keys", {{"public_key", keys->public_key}}).status == 200);
  CHECK(post("/api/projects/demo/keys", {{"public_key", "1024\nzz\n.\n"}}).status == 400);
  auto other = generate_code_sign_keys();
  REQUIRE(other);
  auto unsigned_key = post("/api/projects/demo/keys", {{"public_key", other->public_key}});
  CHECK(unsigned_key.status == 409);
  CHECK_THAT(error_of(unsigned_key), Catch::Contains("signed with the current private key"));

  auto app = post("/api/projects/demo/apps", {{"name", "newapp"}, {"output_names", {"out"}}});
  REQUIRE(app.status == 201);
  CHECK(app.body["id"] == 2);
  CHECK(post("/api/projects/demo/apps", {{"name", "newapp"}, {"output_names", {"out"}}}).status
        == 200);
  CHECK(
    post("/api/projects/demo/apps",
         {{"name", "newapp"}, {"min_quorum", 1}, {"target_nresults", 1}, {"output_names", {"out"}}})
      .status
    == 409);
  CHECK(post("/api/projects/demo/apps", {{"name", "Bad Name"}}).status == 400);
  CHECK(post("/api/projects/demo/apps", {{"name", "x"}, {"colour", "red"}}).status == 400);

  // The program is staged, signed offline, then named by the version.
  const std::string program = "#!/bin/sh\necho hello > out\n";
  auto staged = post_raw("/api/projects/demo/app-files", program);
  REQUIRE(staged.status == 201);
  auto stored = staged.body["stored_name"].get<std::string>();
  auto md5 = staged.body["md5"].get<std::string>();
  CHECK(stored == "app_" + md5);
  auto sig = sign_md5(keys->private_key, md5);
  REQUIRE(sig);
  json file = {{"name", stored},      {"open_name", "newapp"}, {"nbytes", program.size()},
               {"md5", md5},          {"signature", *sig},     {"executable", true},
               {"main_program", true}};
  json version = {{"platform", "x86_64-pc-linux-gnu"}, {"version_num", 1}, {"files", {file}}};
  auto added = post("/api/projects/demo/apps/newapp/versions", version);
  REQUIRE(added.status == 201);
  auto id = added.body["id"].get<int>();
  CHECK(post("/api/projects/demo/apps/newapp/versions", version).status == 200);
  auto apps = get("/api/projects/demo/apps");
  REQUIRE(apps.status == 200);
  REQUIRE(apps.body.size() == 2);
  CHECK(apps.body[1]["versions"][0]["files"][0]["name"] == stored);
  auto one = get("/api/projects/demo/apps/newapp");
  REQUIRE(one.status == 200);
  CHECK(one.body == apps.body[1]);
  CHECK(get("/api/projects/demo/apps/nope").status == 404);
  auto listed = get("/api/projects/demo/keys");
  REQUIRE(listed.status == 200);
  REQUIRE(listed.body.size() == 1);
  CHECK(listed.body[0]["id"] == 1);
  CHECK(listed.body[0]["public_key"] == keys->public_key);
  CHECK(listed.body[0]["signature"].is_null());

  SECTION("a file the download area does not hold as described is refused") {
    auto next = version;
    next["version_num"] = 2;
    auto missing = next;
    missing["files"][0]["name"] = "app_00000000000000000000000000000000";
    auto refused = post("/api/projects/demo/apps/newapp/versions", missing);
    CHECK(refused.status == 400);
    CHECK_THAT(error_of(refused), Catch::Contains("not staged"));
    auto wrong_size = next;
    wrong_size["files"][0]["nbytes"] = 5;
    CHECK_THAT(error_of(post("/api/projects/demo/apps/newapp/versions", wrong_size)),
               Catch::Contains("not what the version says"));
    auto input = next;
    input["files"][0]["name"] = "in_" + md5;
    CHECK_THAT(error_of(post("/api/projects/demo/apps/newapp/versions", input)),
               Catch::Contains("not an app file"));
    auto forged = next;
    forged["files"][0]["signature"] = *sign_md5(other->private_key, md5);
    auto bad_sig = post("/api/projects/demo/apps/newapp/versions", forged);
    CHECK(bad_sig.status == 400);
    CHECK_THAT(error_of(bad_sig), Catch::Contains("does not verify"));
    CHECK(post("/api/projects/demo/apps/nope/versions", next).status == 404);
    auto zero = next;
    zero["version_num"] = 0;
    CHECK(post("/api/projects/demo/apps/newapp/versions", zero).status == 400);
  }
  SECTION("a version is deprecated and offered again, and all of it survives a restart") {
    auto path = "/api/projects/demo/apps/newapp/versions/" + std::to_string(id) + "/deprecate";
    CHECK(post_raw(path, "").status == 201);
    CHECK(post(path, {{"deprecated", true}}).status == 200);
    CHECK(post("/api/projects/demo/apps/newapp/versions/99/deprecate", json::object()).status
          == 404);
    CHECK(post("/api/projects/demo/apps/newapp/versions/x/deprecate", json::object()).status
          == 404);
    restart();
    auto after = get("/api/projects/demo/apps");
    REQUIRE(after.body.size() == 2);
    CHECK(after.body[1]["versions"][0]["deprecated"] == true);
    CHECK(post(path, {{"deprecated", false}}).status == 201);
  }
}

TEST_CASE_METHOD(admin_fixture, "credit data is exported, imported and aggregated",
                 "[net][admin][credit]") {
  auto exported = get("/api/projects/demo/credit");
  REQUIRE(exported.status == 200);
  REQUIRE(exported.body["versions"].size() == 1);
  const auto& v = exported.body["versions"][0];
  CHECK(v["app"] == "testapp");
  CHECK(v["platform"] == "x86_64-pc-linux-gnu");
  CHECK(v["resource"] == "cpu");
  CHECK(v["scale"] == 1.0);
  CHECK(v["app_has_cpu_and_gpu"] == false);
  // Another server's export of an app with CPU and GPU versions.
  json other = {{"source", "other.example"},
                {"versions", json::array({{{"project", "sci"},
                                           {"app", "fold"},
                                           {"platform", "p"},
                                           {"plan_class", "cuda"},
                                           {"resource", "nvidia"},
                                           {"app_has_cpu_and_gpu", true},
                                           {"expavg_credit", 300.0},
                                           {"scale", 0.2}},
                                          {{"project", "sci2"},
                                           {"app", "dock"},
                                           {"platform", "p"},
                                           {"plan_class", "cuda"},
                                           {"resource", "NVIDIA"},
                                           {"app_has_cpu_and_gpu", true},
                                           {"expavg_credit", 100.0},
                                           {"scale", 0.6}}})}};
  auto imported = post("/api/projects/demo/credit/import", other);
  REQUIRE(imported.status == 200);
  CHECK(imported.body["imported"] == 2);
  auto again = get("/api/projects/demo/credit");
  REQUIRE(again.body["imported"].size() == 2);
  // The aggregator weights the factors by recent average credit: (300 x 0.2 + 100 x 0.6) / 400.
  auto table = get("/api/credit");
  REQUIRE(table.status == 200);
  CHECK(table.body["plan_classes"]["cuda"]["scale"].get<double>() == Approx(0.3));
  CHECK(table.body["plan_classes"]["cuda"]["weight"].get<double>() == Approx(400));
  // Bad imports change nothing.
  CHECK(post("/api/projects/demo/credit/import", {{"versions", json::array()}}).status == 400);
  auto bad = post("/api/projects/demo/credit/import",
                  {{"source", "x"}, {"versions", json::array({{{"app", "a"}, {"scale", -1}}})}});
  CHECK(bad.status == 400);
  CHECK(error_of(bad).find("scale") != std::string::npos);
  CHECK(post("/api/projects/demo/credit/import",
             {{"source", "x"}, {"versions", json::array({{{"app", "a"}, {"colour", 1}}})}})
          .status
        == 400);
  CHECK(get("/api/projects/demo/credit").body["imported"].size() == 2);
  CHECK(post("/api/credit", json::object()).status == 405);
}

TEST_CASE_METHOD(admin_fixture, "paths and methods the routes do not serve", "[net][admin]") {
  auto check_405 = [&](http::verb verb, const std::string& target, const std::string& allow) {
    INFO(target);
    auto a = fetch(port, verb, target, token, verb == http::verb::post ? "{}" : "");
    CHECK(a.status == 405);
    CHECK(a.allow == allow);
    CHECK(error_of(a) == "method not allowed (allowed: " + allow + ")");
  };
  check_405(http::verb::post, "/api/credit", "GET");
  check_405(http::verb::post, "/api/projects", "GET");
  check_405(http::verb::delete_, "/api/projects/demo", "GET");
  check_405(http::verb::delete_, "/api/projects/demo/apps", "GET, POST");
  check_405(http::verb::delete_, "/api/projects/demo/keys", "GET, POST");
  check_405(http::verb::post, "/api/projects/demo/apps/testapp", "GET");
  check_405(http::verb::get, "/api/projects/demo/apps/testapp/versions/2/deprecate", "POST");
  check_405(http::verb::delete_, "/api/projects/demo/workunits", "GET, POST");
  check_405(http::verb::post, "/api/projects/demo/workunits/wu-1", "GET");
  check_405(http::verb::post, "/api/projects/demo/results/wu-1_0", "GET");
  check_405(http::verb::post, "/api/projects/demo/hosts", "GET");
  check_405(http::verb::post, "/api/projects/demo/hosts/1", "GET");
  check_405(http::verb::put, "/api/projects/demo/users", "GET, POST");
  check_405(http::verb::put, "/api/projects/demo/sequences", "GET, POST");
  check_405(http::verb::post, "/api/projects/demo/sequences/s", "GET");
  check_405(http::verb::get, "/api/projects/demo/sequences/s/extend", "POST");
  check_405(http::verb::get, "/api/projects/demo/sequences/s/end", "POST");
  check_405(http::verb::get, "/api/projects/demo/sequences/s/reassign", "POST");
  check_405(http::verb::post, "/api/projects/demo/credit", "GET");
  check_405(http::verb::get, "/api/projects/demo/credit/import", "POST");

  auto check_404 = [&](http::verb verb, const std::string& target, const std::string& error) {
    INFO(target);
    auto a = fetch(port, verb, target, token);
    CHECK(a.status == 404);
    CHECK(a.allow.empty());
    CHECK(error_of(a) == error);
  };
  for (const std::string target :
       {"/api", "/api/", "/api/elsewhere", "/api/credit/x", "/api/projects/demo/nothing",
        "/api/projects/demo/files", "/api/projects/demo/app-files",
        "/api/projects/demo/apps/testapp/versions", "/api/projects/demo/sequences/s/restart",
        "/api/projects/demo/credit/export", "/api/projects/demo/apps/testapp/x",
        "/api/projects/demo/workunits/wu-1/results?limit=1"}) {
    check_404(http::verb::get, target, "no such resource: " + target);
    check_404(http::verb::post, target, "no such resource: " + target);
  }
  // An unknown project is named whatever follows it and whatever the method.
  check_404(http::verb::get, "/api/projects/nope", "no project 'nope'");
  check_404(http::verb::delete_, "/api/projects/nope", "no project 'nope'");
  check_404(http::verb::get, "/api/projects/nope/nothing/at/all", "no project 'nope'");
  check_404(http::verb::post, "/api/projects/my%20proj/workunits", "no project 'my proj'");
  // Segments are matched decoded; empty ones do not count.
  CHECK(get("/api/proj%65cts/d%65mo/").status == 200);
  CHECK(get("/api//projects/").status == 200);
  check_404(http::verb::get, "/api/projects/demo/hosts/a%2Fb", "no host 'a/b' (ids are numbers)");

  auto malformed = get("/api/projects/demo/workunits/%zz");
  CHECK(malformed.status == 400);
  CHECK(error_of(malformed) == "malformed percent-escape in the target");
  CHECK(get("/api/projects/demo/workunits?limit=%1").status == 400);
  // The token comes before the path.
  CHECK(fetch(port, http::verb::get, "/api/nothing", "").status == 401);
}

TEST_CASE("docs/admin-api.md has a section for every route", "[net][admin]") {
  // A route as the document heads its section: "### `GET /api/projects/{project}/hosts?...`",
  // compared with every {name} as {} and without the query.
  auto normal = [](const std::string& method, const std::string& pattern) {
    static const std::regex name{"\\{[^}]*\\}"};
    return method + " " + std::regex_replace(pattern, name, "{}");
  };
  std::set<std::string> routes;
  for (const auto& r : net::admin_route_list())
    routes.insert(normal(std::string{http::to_string(r.method)}, std::string{r.pattern}));
  std::ifstream doc{std::string{COBBLE_SOURCE_DIR} + "/docs/admin-api.md"};
  REQUIRE(doc);
  static const std::regex heading{"^#+ `([A-Z]+) (/api[^`?]*)(\\?[^`]*)?`\\s*$"};
  std::set<std::string> documented;
  std::string line;
  std::smatch m;
  while (std::getline(doc, line))
    if (std::regex_match(line, m, heading))
      documented.insert(normal(m[1].str(), m[2].str()));
  CHECK(routes == documented);
  CHECK(routes.size() == net::admin_route_list().size());
}
