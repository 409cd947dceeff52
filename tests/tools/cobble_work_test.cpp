// `cobble work list --state` against a real cobbled (127.0.0.1, port 0): an operator cancels
// a workunit and finds it, and only it, among the cancelled; a state that does not exist is a
// usage error, and the admin API refuses it with the states it knows.

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

using namespace cobble::test;
using Catch::Matchers::Contains;

namespace {

/// `cobble --server URL --token T args...` for server `s`: {exit code, stdout and stderr}.
std::pair<int, std::string> online(const server& s, std::vector<std::string> args) {
  std::vector<std::string> argv{program("tools/cobble"), "--server",
                                "http://127.0.0.1:" + std::to_string(s.admin_port), "--token",
                                s.token};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(std::move(argv), std::chrono::seconds{60});
}

} // namespace

TEST_CASE("an operator lists workunits by state", "[integration][cli]") {
  temp_dir dir;
  server s{dir.path()};
  for (const auto* name : {"wu_keep", "wu_drop", "wu_also"})
    REQUIRE(online(s, {"work", "create", "--app", "testapp", "--name", name}).first == 0);
  auto cancelled = online(s, {"work", "cancel", "wu_drop", "--reason", "bad inputs"});
  INFO(cancelled.second);
  REQUIRE(cancelled.first == 0);

  auto gone = online(s, {"work", "list", "--state", "cancelled"});
  INFO(gone.second);
  CHECK(gone.first == 0);
  CHECK_THAT(gone.second, Contains("wu_drop"));
  CHECK_THAT(gone.second, !Contains("wu_keep"));
  auto active = online(s, {"work", "list", "--state", "active"});
  CHECK_THAT(active.second, Contains("wu_keep"));
  CHECK_THAT(active.second, Contains("wu_also"));
  CHECK_THAT(active.second, !Contains("wu_drop"));
  // The offset counts within the state.
  auto second = online(s, {"work", "list", "--state", "active", "--offset", "1"});
  CHECK_THAT(second.second, Contains("wu_also"));
  CHECK_THAT(second.second, !Contains("wu_keep"));
  CHECK_THAT(online(s, {"work", "list", "--state", "failed"}).second, !Contains("wu_"));
  CHECK_THAT(online(s, {"work", "list"}).second, Contains("wu_drop")); // no filter: all

  auto bad = online(s, {"work", "list", "--state", "finished"});
  CHECK(bad.first == 2);
  CHECK_THAT(bad.second, Contains("--state"));
  http_client admin{"127.0.0.1", s.admin_port};
  auto refused = admin.request(boost::beast::http::verb::get,
                               "/api/projects/demo/workunits?state=finished", {}, s.token);
  CHECK(refused.status == 400);
  CHECK_THAT(refused.body, Contains("active, validated, assimilated, failed or cancelled"));
}

TEST_CASE("work create takes every replication limit", "[integration][cli]") {
  temp_dir dir;
  server s{dir.path()};
  auto made = online(s, {"work",
                         "create",
                         "--app",
                         "testapp",
                         "--name",
                         "wu_limits",
                         "--min-quorum",
                         "1",
                         "--target-nresults",
                         "1",
                         "--max-error-results",
                         "4",
                         "--max-total-results",
                         "9",
                         "--max-success-results",
                         "5",
                         "--memory-bound",
                         "1e8",
                         "--disk-bound",
                         "2e8"});
  INFO(made.second);
  REQUIRE(made.first == 0);
  auto shown = online(s, {"work", "show", "wu_limits"});
  CHECK_THAT(shown.second, Contains("min 1, target 1, max errors 4, max total 9, max success 5"));
  auto params = admin_get(s, "/api/projects/demo/workunits/wu_limits")["params"];
  CHECK(params["rsc_memory_bound"] == 1e8);
  CHECK(params["rsc_disk_bound"] == 2e8);
  CHECK(params["max_error_results"] == 4);
  auto zero = online(s, {"work", "create", "--app", "testapp", "--max-error-results", "0"});
  CHECK(zero.first == 2);
  CHECK_THAT(zero.second, Contains("--max-error-results"));
}

TEST_CASE("tables show results in words, credit and a host's last contact", "[integration][cli]") {
  temp_dir dir;
  server s{dir.path()};
  create_work(s, "wu_words");
  http_client c{"127.0.0.1", s.port};
  auto reply = rpc(c, make_request(s.account_key, 0, 1, 1, {}));
  REQUIRE(reply.jobs.size() == 1);
  REQUIRE(reply.hostid);

  auto shown = online(s, {"work", "show", "wu_words"});
  INFO(shown.second);
  CHECK_THAT(shown.second, Contains("CREDIT"));
  CHECK_THAT(shown.second, Contains("in progress"));
  CHECK_THAT(shown.second, Contains("unsent"));
  CHECK_THAT(shown.second, !Contains("OUTCOME")); // the raw fields stay in --json
  auto json_out = online(s, {"--json", "work", "show", "wu_words"});
  CHECK_THAT(json_out.second, Contains("\"status\": \"in progress\""));

  auto hosts = online(s, {"host", "list"});
  INFO(hosts.second);
  CHECK_THAT(hosts.second, Contains("LAST CONTACT"));
  CHECK_THAT(hosts.second, Contains("TOTAL CREDIT"));
  auto host = online(s, {"host", "show", std::to_string(*reply.hostid)});
  INFO(host.second);
  CHECK_THAT(host.second, Contains(", last contact 20"));
  CHECK_THAT(host.second, Contains("credit: 0.00 total, 0.00 recent average"));
}

TEST_CASE("work create --batch reads a YAML or JSON file, all or none", "[integration][cli]") {
  temp_dir dir;
  server s{dir.path()};
  auto input = dir.path() / "sample.txt";
  std::ofstream(input) << "sample input\n";
  auto yaml = dir.path() / "batch.yaml";
  std::ofstream(yaml) << "- app: testapp\n"
                         "  name: wu_yaml\n"
                         "  min_quorum: 1\n"
                         "  target_nresults: 1\n"
                         "  command_line: \"--iterations 10\"\n"
                         "  inputs:\n"
                         "    - {file: "
                      << input.string()
                      << ", open_name: in.txt}\n"
                         "- {app: testapp, count: 2}\n";
  auto made = online(s, {"work", "create", "--batch", yaml.string()});
  INFO(made.second);
  REQUIRE(made.first == 0);
  CHECK_THAT(made.second, Contains("wu_yaml"));
  auto w = admin_get(s, "/api/projects/demo/workunits/wu_yaml");
  CHECK(w["params"]["min_quorum"] == 1);
  CHECK(w["params"]["command_line"] == "--iterations 10");
  REQUIRE(w["params"]["inputs"].size() == 1);
  CHECK(w["params"]["inputs"][0]["open_name"] == "in.txt");
  CHECK(w["params"]["inputs"][0]["nbytes"] == 13);
  CHECK(admin_get(s, "/api/projects/demo/workunits")["count"] == 3);

  // JSON, with a submitter; one bad item refuses the whole batch.
  auto json_file = dir.path() / "batch.json";
  std::ofstream(json_file) << R"({"submitter": "alice", "items": [)"
                           << R"({"app": "testapp", "name": "wu_json"},)"
                           << R"({"app": "testapp", "name": "wu_bad", "min_quorum": "two"}]})";
  auto refused = online(s, {"work", "create", "--batch", json_file.string()});
  CHECK(refused.first == 1);
  CHECK_THAT(refused.second, Contains("min_quorum"));
  CHECK(admin_get(s, "/api/projects/demo/workunits")["count"] == 3);

  // Usage errors: another workunit option beside --batch, a file that is no batch, YAML that
  // does not parse (its line named).
  CHECK(online(s, {"work", "create", "--batch", yaml.string(), "--app", "testapp"}).first == 2);
  auto not_list = dir.path() / "scalar.yaml";
  std::ofstream(not_list) << "just text\n";
  auto no_batch = online(s, {"work", "create", "--batch", not_list.string()});
  CHECK(no_batch.first == 2);
  CHECK_THAT(no_batch.second, Contains("give a list of workunits"));
  auto broken = dir.path() / "broken.yaml";
  std::ofstream(broken) << "- app: testapp\n- [unclosed\n";
  auto bad_yaml = online(s, {"work", "create", "--batch", broken.string()});
  CHECK(bad_yaml.first == 2);
  CHECK_THAT(bad_yaml.second, Contains(broken.string() + ":"));
  CHECK(online(s, {"work", "create"}).first == 2); // neither --app nor --batch
}
