// `cobble backup DIR` against a real cobbled (127.0.0.1, port 0): the backup of a running
// server starts as a server with what was there when it was made, and not what came after.

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

using namespace cobble::test;
using Catch::Matchers::Contains;

namespace {

/// `cobble --data-dir DATA backup DIR`: {exit code, stdout and stderr}.
std::pair<int, std::string> backup(const fs::path& data, const fs::path& dir) {
  return run_command({program("tools/cobble"), "--data-dir", data.string(), "backup", dir.string()},
                     std::chrono::seconds{120});
}

} // namespace

TEST_CASE("an operator backs up a running server and starts from the backup",
          "[integration][cli]") {
  temp_dir dir;
  auto data = dir.path() / "data";
  server s{data};
  create_work(s, "wu_before");
  http_client c{"127.0.0.1", s.port};
  auto reply = rpc(c, make_request(s.account_key, 0, 1, 1, {}));
  REQUIRE(reply.jobs.size() == 1);
  REQUIRE(reply.hostid);

  auto target = dir.path() / "backups" / "monday";
  fs::create_directories(target.parent_path());
  auto made = backup(data, target);
  INFO(made.second);
  REQUIRE(made.first == 0);
  CHECK_THAT(made.second, Contains("backed up into " + target.string() + ": events 1.."));
  CHECK(fs::exists(target / "log"));
  CHECK_FALSE(fs::exists(target / "admin_url"));

  // The server goes on; what it does now is not in the backup.
  create_work(s, "wu_after");
  // The same directory again, or one inside the data directory: refused, nothing written.
  auto again = backup(data, target);
  CHECK(again.first == 1);
  CHECK_THAT(again.second, Contains("exists already"));
  auto inside = backup(data, data / "copy");
  CHECK(inside.first == 1);
  CHECK_THAT(inside.second, Contains("inside the data directory"));
  CHECK_FALSE(fs::exists(data / "copy"));
  CHECK(s.stop() == 0);

  // Restore: start cobbled on the backup. The work and the host from before are there, with
  // the same admin token; the workunit made after is not.
  server restored{target};
  CHECK(restored.token == s.token);
  auto before = admin_get(restored, "/api/projects/demo/workunits/wu_before");
  CHECK(before["state"] == "active");
  http_client admin{"127.0.0.1", restored.admin_port};
  CHECK(admin
          .request(boost::beast::http::verb::get, "/api/projects/demo/workunits/wu_after", {},
                   restored.token)
          .status
        == 404);
  CHECK(admin_get(restored, "/api/projects/demo/hosts/" + std::to_string(*reply.hostid))["id"]
        == *reply.hostid);
  // The host asks again with its id: the server knows it (no second host is made) and still
  // has its job in progress.
  http_client c2{"127.0.0.1", restored.port};
  rpc(c2, make_request(restored.account_key, *reply.hostid, 1, 1, {}));
  auto hosts = admin_get(restored, "/api/projects/demo/hosts");
  CHECK(hosts["items"].size() == 1);
  auto job = admin_get(restored, "/api/projects/demo/results/" + reply.jobs[0].result);
  CHECK(job["state"] == "in_progress");
}
