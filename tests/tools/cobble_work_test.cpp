// `cobble work list --state` against a real cobbled (127.0.0.1, port 0): an operator cancels
// a workunit and finds it, and only it, among the cancelled; a state that does not exist is a
// usage error, and the admin API refuses it with the states it knows.

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>

#include <chrono>
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
