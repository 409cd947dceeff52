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
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace cobble::test;

namespace {

const std::string output_a = "hello world\n";
const std::string md5_a = "6f5902ac237024bdd0c176cb93063dc4"; // md5_of(output_a)

} // namespace

TEST_CASE("a 7.20 client attaches, gets a job, reports it, and a quorum of two validates") {
  temp_dir dir;
  // The demo project without the minimum interval between work requests, so that the same
  // host may ask again at once (below) and be refused the other replica for that reason.
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                        "    long_name: Cobble demo project\n"
                        "    limits: {min_sendwork_interval: 0s}\n"
                        "    users: [{name: demo}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        one_result_per_user_per_wu: false\n" // one user, two hosts
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  server s{dir.path() / "data", {"--config", cfg.string()}};
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

  // Each host uploads its output (content whose md5 is md5_a), then reports it.
  REQUIRE(upload(c, a, a.jobs[0].output, output_a) == 0);
  REQUIRE(upload(c2, b, b.jobs[0].output, output_a) == 0);
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
  // Two hosts called; both states are in memory, every reply has left the port.
  CHECK(metrics.body.find("cobble_hosts_in_memory{project=\"demo\"} 2\n") != std::string::npos);
  CHECK(metrics.body.find("cobble_host_state_bytes{project=\"demo\"} ") != std::string::npos);
  CHECK(metrics.body.find("cobble_scheduler_rpcs_waiting 0\n") != std::string::npos);
  CHECK(s.stop() == 0);
}

TEST_CASE("concurrent scheduler RPCs, pipelined on one connection or on many, get their own "
          "replies") {
  temp_dir dir;
  server s{dir.path()};
  constexpr int n_wus = 6;
  for (int i = 0; i < n_wus; ++i)
    create_work(s, "wu_conc_" + std::to_string(i));

  // Two requests written back to back on one keep-alive connection: the replies come in the
  // order of the requests (the first asked for work, the second did not).
  {
    namespace http = boost::beast::http;
    boost::asio::io_context ioc;
    boost::beast::tcp_stream stream{ioc};
    stream.expires_after(60s);
    stream.connect({boost::asio::ip::make_address("127.0.0.1"), s.port});
    auto make = [&](const std::string& body) {
      http::request<http::string_body> req{http::verb::post, "/demo/cgi", 11};
      req.set(http::field::host, "127.0.0.1:" + std::to_string(s.port));
      req.set(http::field::content_type, "application/x-www-form-urlencoded");
      req.keep_alive(true);
      req.body() = body;
      req.prepare_payload();
      return req;
    };
    http::write(stream, make(make_request(s.account_key, 0, 100, 1, {})));
    http::write(stream, make(make_request(s.account_key, 0, 0, 0, {})));
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> first, second;
    http::read(stream, buffer, first);
    http::read(stream, buffer, second);
    REQUIRE(first.result_int() == 200);
    REQUIRE(second.result_int() == 200);
    auto a = parse_reply(first.body());
    auto b = parse_reply(second.body());
    REQUIRE(a.hostid);
    REQUIRE(b.hostid);
    CHECK(*a.hostid != *b.hostid);
    CHECK(a.jobs.size() == 1);
    CHECK(b.jobs.empty());
  }

  // Hosts on connections of their own, all at once, several RPCs each on their keep-alive
  // connection. Catch is not thread-safe: the threads only collect the raw replies.
  constexpr int n_hosts = 8;
  constexpr int rounds = 3;
  std::vector<std::vector<std::string>> bodies(n_hosts);
  std::vector<std::string> failures(n_hosts);
  std::vector<std::thread> threads;
  threads.reserve(n_hosts);
  for (int h = 0; h < n_hosts; ++h)
    threads.emplace_back([&, h] {
      try {
        http_client c{"127.0.0.1", s.port};
        std::uint64_t hostid = 0;
        for (int r = 0; r <= rounds; ++r) {
          auto reply = c.post("/demo/cgi", make_request(s.account_key, hostid, 100, 1, {}));
          if (reply.status != 200) {
            failures[h] = "status " + std::to_string(reply.status);
            return;
          }
          if (r == 0) {
            auto at = reply.body.find("<hostid>");
            if (at == std::string::npos) {
              failures[h] = "no hostid in the first reply";
              return;
            }
            hostid = std::stoull(reply.body.substr(at + 8));
          }
          bodies[h].push_back(std::move(reply.body));
        }
      } catch (const std::exception& e) {
        failures[h] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  std::set<std::uint64_t> hostids;
  std::map<std::string, std::uint64_t> dispatched; // result -> host whose reply carried it
  std::size_t jobs = 1;                            // the pipelined first request's
  for (int h = 0; h < n_hosts; ++h) {
    INFO("host " << h << ": " << failures[h]);
    REQUIRE(failures[h].empty());
    REQUIRE(bodies[h].size() == rounds + 1);
    auto first = parse_reply(bodies[h][0]);
    REQUIRE(first.hostid);
    CHECK(hostids.insert(*first.hostid).second);
    for (const auto& body : bodies[h]) {
      auto reply = parse_reply(body);
      for (const auto& j : reply.jobs) {
        ++jobs;
        CHECK(dispatched.emplace(j.result, *first.hostid).second); // never sent twice
      }
    }
  }
  // Every job a reply carried is in progress on the host whose connection got that reply.
  CHECK(dispatched.size() >= static_cast<std::size_t>(n_hosts));
  for (int i = 0; i < n_wus; ++i) {
    auto wu = admin_get(s, "/api/projects/demo/workunits/wu_conc_" + std::to_string(i));
    for (auto& res : wu["results"]) {
      auto it = dispatched.find(res["name"].get<std::string>());
      if (it == dispatched.end())
        continue;
      INFO(wu.dump(2));
      CHECK(res["state"] == "in_progress");
      CHECK(res["host"] == it->second);
    }
  }
  auto status = admin_get(s, "/api/projects/demo");
  CHECK(status["counters"]["results_dispatched"] == jobs);
  CHECK(s.stop() == 0);
}

TEST_CASE("bad scheduler requests get a message and a delay and change nothing") {
  temp_dir dir;
  server s{dir.path()};
  http_client c{"127.0.0.1", s.port};
  create_work(s, "wu_bad");
  auto before = admin_get(s, "/api/projects/demo");

  auto full = make_request(s.account_key, 0, 100, 1, {});
  for (const auto& body :
       {std::string{"<scheduler_request><authent"}, full.substr(0, full.size() / 2),
        std::string{"garbage"}, std::string{"<scheduler_request></scheduler_request>"},
        make_request("not-a-key", 0, 100, 1, {}),
        // What an attacker sent on main: NaN made `cobble log verify` fail for good.
        std::regex_replace(full, std::regex{"<p_fpops>[^<]*</p_fpops>"}, "<p_fpops>nan</p_fpops>"),
        std::regex_replace(full, std::regex{"<p_ncpus>[^<]*</p_ncpus>"},
                           "<p_ncpus>-64</p_ncpus>")}) {
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

  // Reports: not sent to this host -> acked, ignored; NaN -> the RPC refused, nothing
  // applied; twice -> applied once; a negative time -> flagged.
  auto a = rpc(c, make_request(s.account_key, 0, 100, 1, {}));
  REQUIRE(a.hostid);
  REQUIRE(a.jobs.size() == 1);
  auto stranger = rpc(c, make_request(s.account_key, *a.hostid, 0, 0,
                                      {{"wu_bad_1", 5, 0, "1.0", {{"x", md5_a}}},
                                       {"nonexistent_7", 5, 0, "1.0", {}}}));
  CHECK(stranger.acks.size() == 2);
  report nan_rep{a.jobs[0].result, 5, 0, "nan", {{a.jobs[0].output, md5_a}}};
  auto refused = rpc(c, make_request(s.account_key, *a.hostid, 0, 0, {nan_rep}));
  CHECK(refused.acks.empty());
  REQUIRE_FALSE(refused.messages.empty());
  CHECK(refused.messages[0].find("not a finite number") != std::string::npos);
  CHECK(admin_get(s, "/api/projects/demo")["counters"]["results_reported"] == 0);
  report rep{a.jobs[0].result, 5, 0, "-5", {{a.jobs[0].output, md5_a}}};
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
    REQUIRE(upload(c, a, a.jobs[0].output, output_a) == 0);
    auto again = rpc(c,
                     make_request(s->account_key, *a.hostid, 0, 0,
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
    REQUIRE(upload(c, b, b.jobs[0].output, output_a) == 0);
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
  auto [code, out] = cobble::test::run_command({cobble::test::program("tools/cobble"), "log",
                                                "verify", "--data-dir", dir.path().string()},
                                               120s);
  INFO(out);
  CHECK(code == 0);
}

TEST_CASE("two hosts of one user that report an invented md5 and upload nothing get no credit",
          "[validation]") {
  // The attack of issue 19 over HTTP: one account, two host ids, both replicas of a quorum-2
  // workunit reported with the same md5, and no upload at all.
  temp_dir dir;
  server s{dir.path()};
  create_work(s, "wu_forged");
  http_client c{"127.0.0.1", s.port};
  http_client c2{"127.0.0.1", s.port};
  auto a = rpc(c, make_request(s.account_key, 0, 103680, 2, {}));
  auto b = rpc(c2, make_request(s.account_key, 0, 103680, 2, {}));
  REQUIRE(a.hostid);
  REQUIRE(b.hostid);
  REQUIRE(a.jobs.size() == 1);
  REQUIRE(b.jobs.size() == 1);
  auto ra = rpc(c, make_request(s.account_key, *a.hostid, 0, 0,
                                {{a.jobs[0].result, 5, 0, "2.0", {{a.jobs[0].output, md5_a}}}}));
  auto rb = rpc(c2, make_request(s.account_key, *b.hostid, 0, 0,
                                 {{b.jobs[0].result, 5, 0, "3.0", {{b.jobs[0].output, md5_a}}}}));
  // Acknowledged (the client has nothing to resend) ...
  CHECK(ra.acks == std::vector<std::string>{a.jobs[0].result});
  CHECK(rb.acks == std::vector<std::string>{b.jobs[0].result});
  // ... but not validated: both invalid, nothing assimilated, no credit.
  auto wu = admin_get(s, "/api/projects/demo/workunits/wu_forged");
  INFO(wu.dump(2));
  CHECK(wu["state"] == "active");
  CHECK(wu["canonical_result"].is_null());
  int invalid = 0;
  for (auto& res : wu["results"])
    if (res["name"] == a.jobs[0].result || res["name"] == b.jobs[0].result) {
      invalid += res["validation"] == "invalid" ? 1 : 0;
      CHECK(res["received_outputs"].empty());
    }
  CHECK(invalid == 2);
  for (auto id : {*a.hostid, *b.hostid}) {
    auto h = admin_get(s, "/api/projects/demo/hosts/" + std::to_string(id));
    CHECK(h["credit"]["total_credit"] == 0);
  }
  auto status = admin_get(s, "/api/projects/demo");
  CHECK(status["counters"]["workunits_validated"] == 0);
  CHECK(status["counters"]["workunits_assimilated"] == 0);
  CHECK(s.stop() == 0);
}
