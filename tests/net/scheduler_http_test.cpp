// HTTP tests against a real cobbled on 127.0.0.1, port 0, with scheduler requests in the exact
// shape a BOINC 7.20.5 client sends (tests/net/fixtures, built from the protocol reference).

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace cobble::test;

namespace {

const std::string md5_a = "6f5902ac237024bdd0c176cb93063dc4";

} // namespace

TEST_CASE("a 7.20 client attaches, gets a job, reports it, and a quorum of two validates") {
  temp_dir dir;
  server s{dir.path()};
  http_client c{"127.0.0.1", s.port};

  SECTION("the master page names the scheduler at column 0") {
    auto page = c.get("/demo/");
    REQUIRE(page.status == 200);
    auto url = "http://127.0.0.1:" + std::to_string(s.port) + "/demo/cgi";
    CHECK(page.body.find("\n<scheduler>" + url + "</scheduler>") != std::string::npos);
    CHECK(page.body.find("\n<link rel=\"boinc_scheduler\" href=\"" + url + "\">")
          != std::string::npos);
    CHECK(c.get("/healthz").status == 200);
  }

  create_work(s, "wu_quorum");
  auto a = rpc(c, make_request(s.account_key, 0, 103680, 2, {}));
  REQUIRE(a.hostid);
  REQUIRE(a.jobs.size() == 1);
  CHECK(a.jobs[0].wu == "wu_quorum");
  CHECK(a.jobs[0].platform == "x86_64-pc-linux-gnu");
  CHECK(a.jobs[0].deadline > 1.7e9);
  // The same host asks again: no hostid, and never the other replica of the workunit.
  auto a2 = rpc(c, make_request(s.account_key, *a.hostid, 103680, 2, {}));
  CHECK_FALSE(a2.hostid);
  CHECK(a2.jobs.empty());
  // A second host gets the other replica.
  http_client c2{"127.0.0.1", s.port};
  auto b = rpc(c2, make_request(s.account_key, 0, 103680, 2, {}));
  REQUIRE(b.hostid);
  CHECK(*b.hostid != *a.hostid);
  REQUIRE(b.jobs.size() == 1);
  CHECK(b.jobs[0].wu == "wu_quorum");
  CHECK(b.jobs[0].result != a.jobs[0].result);

  auto ra = rpc(c, make_request(s.account_key, *a.hostid, 0, 0,
                                {{a.jobs[0].result, 5, 0, "2.0", {{a.jobs[0].output, md5_a}}}}));
  CHECK(ra.acks == std::vector<std::string>{a.jobs[0].result});
  auto rb = rpc(c2, make_request(s.account_key, *b.hostid, 0, 0,
                                 {{b.jobs[0].result, 5, 0, "3.0", {{b.jobs[0].output, md5_a}}}}));
  CHECK(rb.acks == std::vector<std::string>{b.jobs[0].result});

  auto wu = admin_get(s, "/api/projects/demo/workunits/wu_quorum");
  INFO(wu.dump(2));
  CHECK(wu["state"] == "assimilated");
  CHECK(wu["canonical_result"].is_string());

  auto metrics = c.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK(metrics.body.find("cobble_jobs_sent_total 2") != std::string::npos);
  CHECK(metrics.body.find("cobble_results_reported_total 2") != std::string::npos);
  CHECK(metrics.body.find("cobble_log_commit_batch_events_bucket") != std::string::npos);
  CHECK(s.stop() == 0);
}

TEST_CASE("bad scheduler requests get a message and a delay and change nothing") {
  temp_dir dir;
  server s{dir.path()};
  http_client c{"127.0.0.1", s.port};
  create_work(s, "wu_bad");
  auto before = admin_get(s, "/api/projects/demo");

  auto full = make_request(s.account_key, 0, 100, 1, {});
  for (const auto& body : {std::string{"<scheduler_request><authent"},
                           full.substr(0, full.size() / 2), std::string{"garbage"},
                           std::string{"<scheduler_request></scheduler_request>"},
                           make_request("not-a-key", 0, 100, 1, {})}) {
    auto r = rpc(c, body);
    CHECK_FALSE(r.messages.empty());
    CHECK(r.request_delay > 0);
    CHECK_FALSE(r.hostid);
    CHECK(r.jobs.empty());
  }
  auto after = admin_get(s, "/api/projects/demo");
  CHECK(after["hosts"] == before["hosts"]);
  CHECK(after["counters"] == before["counters"]);

  // A body over the limit is refused with 413, before the client sends it (libcurl asks
  // with `Expect: 100-continue` for large bodies).
  {
    namespace beast = boost::beast;
    boost::asio::io_context ioc;
    beast::tcp_stream stream{ioc};
    stream.expires_after(30s);
    stream.connect({boost::asio::ip::make_address("127.0.0.1"), s.port});
    std::string head = "POST /demo/cgi HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: application/x-www-form-urlencoded\r\n"
                       "Content-Length: 5242880\r\nExpect: 100-continue\r\n\r\n";
    boost::asio::write(stream, boost::asio::buffer(head));
    beast::flat_buffer buf;
    beast::http::response<beast::http::string_body> res;
    beast::http::read(stream, buf, res);
    CHECK(res.result_int() == 413);
  }

  // Reports: not sent to this host -> acked, ignored; twice -> applied once; NaN -> flagged.
  auto a = rpc(c, make_request(s.account_key, 0, 100, 1, {}));
  REQUIRE(a.hostid);
  REQUIRE(a.jobs.size() == 1);
  auto stranger = rpc(c, make_request(s.account_key, *a.hostid, 0, 0,
                                      {{"wu_bad_1", 5, 0, "1.0", {{"x", md5_a}}},
                                       {"nonexistent_7", 5, 0, "1.0", {}}}));
  CHECK(stranger.acks.size() == 2);
  report rep{a.jobs[0].result, 5, 0, "nan", {{a.jobs[0].output, md5_a}}};
  auto first = rpc(c, make_request(s.account_key, *a.hostid, 0, 0, {rep}));
  auto second = rpc(c, make_request(s.account_key, *a.hostid, 0, 0, {rep}));
  CHECK(first.acks == std::vector<std::string>{rep.name});
  CHECK(second.acks == std::vector<std::string>{rep.name});
  auto status = admin_get(s, "/api/projects/demo");
  CHECK(status["counters"]["results_reported"] == 1);
  auto wu = admin_get(s, "/api/projects/demo/workunits/wu_bad");
  INFO(wu.dump(2));
  bool flagged = false;
  for (auto& res : wu["results"])
    if (res["name"] == rep.name)
      flagged = !res["flags"].empty();
  CHECK(flagged);
  CHECK(s.stop() == 0);
}

TEST_CASE("kill -9 between RPCs loses no acknowledged change and the log verifies") {
  temp_dir dir;
  auto s = std::make_unique<server>(dir.path());
  create_work(*s, "wu_crash");
  parsed_reply a, b;
  {
    http_client c{"127.0.0.1", s->port};
    a = rpc(c, make_request(s->account_key, 0, 100, 1, {}));
    REQUIRE(a.hostid);
    REQUIRE(a.jobs.size() == 1);
  }
  s->kill9();
  s->start();
  {
    // The acknowledged dispatch survived: the host is known (no new hostid) and its result
    // is in progress on it.
    auto wu = admin_get(*s, "/api/projects/demo/workunits/wu_crash");
    INFO(wu.dump(2));
    bool in_progress = false;
    for (auto& res : wu["results"])
      if (res["name"] == a.jobs[0].result)
        in_progress = res["state"] == "in_progress" && res["host"] == *a.hostid;
    CHECK(in_progress);
    http_client c{"127.0.0.1", s->port};
    auto again = rpc(c, make_request(s->account_key, *a.hostid, 0, 0,
                                     {{a.jobs[0].result, 5, 0, "2.0", {{a.jobs[0].output, md5_a}}}}));
    CHECK_FALSE(again.hostid);
    CHECK(again.acks.size() == 1);
    b = rpc(c, make_request(s->account_key, 0, 100, 1, {}));
    REQUIRE(b.jobs.size() == 1);
  }
  s->kill9();
  s->start();
  {
    http_client c{"127.0.0.1", s->port};
    rpc(c, make_request(s->account_key, *b.hostid, 0, 0,
                        {{b.jobs[0].result, 5, 0, "2.5", {{b.jobs[0].output, md5_a}}}}));
  }
  s->kill9();
  s->start();
  auto wu = admin_get(*s, "/api/projects/demo/workunits/wu_crash");
  INFO(wu.dump(2));
  CHECK(wu["state"] == "assimilated");
  auto status = admin_get(*s, "/api/projects/demo");
  CHECK(status["counters"]["results_reported"] == 2);
  CHECK(status["counters"]["results_dispatched"] == 2);
  CHECK(s->stop() == 0);
  auto [code, out] = cobble::test::run_command(
    {COBBLE_BINARY_DIR "/tools/cobble", "log", "verify", "--data-dir", dir.path().string()}, 120s);
  INFO(out);
  CHECK(code == 0);
}
