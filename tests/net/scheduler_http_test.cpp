// HTTP tests against a real cobbled on 127.0.0.1, port 0, with scheduler requests in the exact
// shape a BOINC 7.20.5 client sends (tests/net/fixtures, built from the protocol reference).

#include "../support/http_client.hpp"
#include "../support/process.hpp"

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
using cobble::test::child_process;
using cobble::test::http_client;
using json = nlohmann::json;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("cobble-http-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// A running cobbled on its own data directory.
struct server {
  fs::path data;
  std::unique_ptr<child_process> proc;
  unsigned short port = 0;
  std::string account_key;
  std::string token;

  explicit server(fs::path dir) : data(std::move(dir)) { start(); }

  void start() {
    proc = std::make_unique<child_process>(std::vector<std::string>{
      COBBLE_BINARY_DIR "/tools/cobbled", "--data-dir", data.string(), "--port", "0",
      "--log-level", "warn"});
    auto listening = proc->wait_for("listening on http://127.0.0.1:", 60s);
    INFO("cobbled output so far: " << join(proc->lines()));
    REQUIRE(listening);
    port = static_cast<unsigned short>(std::stoi(listening->substr(listening->rfind(':') + 1)));
    auto key = proc->wait_for("account key of user demo: ", 30s);
    REQUIRE(key);
    account_key = key->substr(key->rfind(' ') + 1);
    auto admin = proc->wait_for("admin API:", 30s);
    REQUIRE(admin);
    std::ifstream in{data / "admin_token"};
    std::getline(in, token);
    REQUIRE(!token.empty());
  }

  void kill9() {
    proc->signal(SIGKILL);
    REQUIRE(proc->wait(30s).value_or(-1) == 128 + SIGKILL);
  }

  int stop() {
    proc->signal(SIGTERM);
    return proc->wait(60s).value_or(-1);
  }

  static std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (auto& l : lines)
      out += l + "\n";
    return out;
  }
};

struct report {
  std::string name;
  int state = 5;
  int exit_status = 0;
  std::string elapsed = "2.035510";
  std::vector<std::pair<std::string, std::string>> files; // name, md5
};

/// A scheduler request in the 7.20.5 fixture's shape with our account, host and results.
std::string make_request(const std::string& auth, std::uint64_t hostid, double req_secs,
                         double req_instances, const std::vector<report>& results) {
  static const std::string fixture =
    read_file(fs::path{COBBLE_SOURCE_DIR} / "tests/net/fixtures/sched_request_7.20.5.xml");
  auto head = fixture.substr(0, fixture.find("    <result>"));
  auto tail = fixture.substr(fixture.find("<app_versions>"));
  head = std::regex_replace(head, std::regex{"<authenticator>[^<]*</authenticator>"},
                            "<authenticator>" + auth + "</authenticator>");
  head = std::regex_replace(head, std::regex{"<hostid>[^<]*</hostid>"},
                            "<hostid>" + std::to_string(hostid) + "</hostid>");
  head = std::regex_replace(head, std::regex{"<cpu_req_secs>[^<]*</cpu_req_secs>"},
                            "<cpu_req_secs>" + std::to_string(req_secs) + "</cpu_req_secs>");
  head = std::regex_replace(head, std::regex{"<work_req_seconds>[^<]*</work_req_seconds>"},
                            "<work_req_seconds>" + std::to_string(req_secs)
                              + "</work_req_seconds>");
  head = std::regex_replace(head, std::regex{"<cpu_req_instances>[^<]*</cpu_req_instances>"},
                            "<cpu_req_instances>" + std::to_string(req_instances)
                              + "</cpu_req_instances>");
  tail = std::regex_replace(tail, std::regex{"<other_results>[\\s\\S]*</other_results>"},
                            "<other_results>\n</other_results>");
  std::string body;
  for (const auto& r : results) {
    body += "    <result>\n        <name>" + r.name + "</name>\n"
            "        <final_cpu_time>0.000000</final_cpu_time>\n"
            "        <final_elapsed_time>" + r.elapsed + "</final_elapsed_time>\n"
            "        <exit_status>" + std::to_string(r.exit_status) + "</exit_status>\n"
            "        <state>" + std::to_string(r.state) + "</state>\n"
            "        <platform>x86_64-pc-linux-gnu</platform>\n"
            "        <version_num>100</version_num>\n"
            "        <app_version_num>100</app_version_num>\n"
            "<stderr_out>\n<core_client_version>7.20.5</core_client_version>\n"
            "<![CDATA[\n<stderr_txt>\ndone\n</stderr_txt>\n]]>\n</stderr_out>\n";
    for (const auto& [name, md5] : r.files)
      body += "    <file_info>\n        <name>" + name + "</name>\n"
              "        <nbytes>12.000000</nbytes>\n        <max_nbytes>65536.000000</max_nbytes>\n"
              "        <md5_cksum>" + md5 + "</md5_cksum>\n"
              "        <upload_url>http://127.0.0.1/demo/upload</upload_url>\n    </file_info>\n";
    body += "    </result>\n";
  }
  return head + body + tail;
}

/// What the tests read from a scheduler reply.
struct parsed_reply {
  std::optional<std::uint64_t> hostid;
  double request_delay = -1;
  std::vector<std::string> messages;
  std::vector<std::string> acks;
  struct job {
    std::string result, wu, platform, output;
    double deadline = 0;
  };
  std::vector<job> jobs;
};

parsed_reply parse_reply(const std::string& xml) {
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  auto root = doc.child("scheduler_reply");
  REQUIRE(root);
  parsed_reply out;
  if (auto h = root.child("hostid"))
    out.hostid = std::stoull(h.text().get());
  if (auto d = root.child("request_delay"))
    out.request_delay = d.text().as_double();
  for (auto m : root.children("message"))
    out.messages.push_back(m.text().get());
  for (auto a : root.children("result_ack"))
    out.acks.push_back(a.child("name").text().get());
  for (auto r : root.children("result"))
    out.jobs.push_back({r.child("name").text().get(), r.child("wu_name").text().get(),
                        r.child("platform").text().get(),
                        r.child("file_ref").child("file_name").text().get(),
                        r.child("report_deadline").text().as_double()});
  return out;
}

parsed_reply rpc(http_client& c, const std::string& body) {
  auto r = c.post("/demo/cgi", body);
  REQUIRE(r.status == 200);
  return parse_reply(r.body);
}

json admin_get(server& s, const std::string& target) {
  http_client c{"127.0.0.1", s.port};
  auto r = c.get(target, s.token);
  INFO(target << " -> " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

void create_work(server& s, const std::string& name) {
  http_client c{"127.0.0.1", s.port};
  auto r = c.post("/api/projects/demo/workunits",
                  json{{"app", "testapp"}, {"name", name}}.dump(), s.token, "application/json");
  INFO(r.body);
  REQUIRE(r.status == 201);
}

const std::string md5_a = "6f5902ac237024bdd0c176cb93063dc4";

} // namespace

TEST_CASE("a 7.20 client attaches, gets a job, reports it, and a quorum of two validates") {
  temp_dir dir;
  server s{dir.path};
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
  server s{dir.path};
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

  // A body over the limit is refused with 413.
  http_client big{"127.0.0.1", s.port};
  auto r = big.post("/demo/cgi", std::string(5u << 20, 'x'));
  CHECK(r.status == 413);

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
  auto s = std::make_unique<server>(dir.path);
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
    {COBBLE_BINARY_DIR "/tools/cobble", "log", "verify", "--data-dir", dir.path.string()}, 120s);
  INFO(out);
  CHECK(code == 0);
}
