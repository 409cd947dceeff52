/// `cobble-sim run --server URL` against a real cobbled: the configuration comes from
/// `cobble-sim run --print-config`, the emulated host fetches, runs and reports jobs over
/// HTTP in real time (a 20-second scenario), and the server validates them.

#include "../../support/http_client.hpp"
#include "../../support/process.hpp"
#include "../../support/temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>

using namespace cobble;
using namespace std::chrono_literals;

namespace {

const std::string sim = std::string(COBBLE_BINARY_DIR) + "/tools/sim/cobble-sim";
const std::string cobbled = std::string(COBBLE_BINARY_DIR) + "/tools/cobbled";

std::string all_output(test::child_process& p, std::chrono::milliseconds limit) {
  while (p.read_line(limit))
    ;
  std::string out;
  for (const auto& l : p.lines())
    out += l + "\n";
  return out;
}

} // namespace

TEST_CASE("cobble-sim --server drives a running cobbled over HTTP", "[sim][server]") {
  test::temp_dir dir{"simserver"};
  auto scenario = (dir.path() / "s.yaml").string();
  std::ofstream(scenario) << R"(
duration: 20s
step: 1s
warmup: 0
sample_interval: 5s
client: {sched_period: 10s, connect_interval: 4s, additional_work: 4s, backoff_min: 1s,
         report_delay: 1s}
projects:
  - name: sims
    request_delay: 1s
    apps: [{name: quick, resources: [CPU], flops: 2e9, delay_bound: 1h}]
hosts:
  - {ncpus: 2, cpu_flops: 1e9}
)";
  auto config = (dir.path() / "cobble.yaml").string();
  {
    test::child_process pc({sim, "run", "--print-config", scenario}, false);
    auto yaml = all_output(pc, 30s);
    REQUIRE(pc.wait(30s) == 0);
    std::ofstream(config) << yaml;
  }
  auto data = dir.path() / "data";
  test::child_process server({cobbled, "--config", config, "--data-dir", data.string(), "--port",
                              "0", "--admin-port", "0", "--log-level", "warn", "--durability",
                              "async"});
  auto listening = server.wait_for("listening on http://127.0.0.1:", 60s);
  REQUIRE(listening);
  auto port = std::stoi(listening->substr(listening->rfind(':') + 1));
  auto admin_line = server.wait_for("admin API:", 30s);
  REQUIRE(admin_line);
  auto admin_port = test::admin_port_of(*admin_line);
  auto url = "http://127.0.0.1:" + std::to_string(port);

  test::child_process run(
    {sim, "run", "-q", "--server", url, "--data-dir", data.string(), scenario});
  auto out = all_output(run, 120s);
  INFO(out);
  REQUIRE(run.wait(60s) == 0);
  CHECK(out.find("RPC errors") == std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("\\noverall .* (\\d+) +(\\d+) +[0-9.]+\\n")));
  CHECK(std::stoi(m[1]) >= 3);  // RPCs
  CHECK(std::stoi(m[2]) >= 10); // jobs: 2 CPUs, 2-second jobs, 20 seconds
  // The server saw them: results reported and validated (replication 1).
  std::string token;
  std::ifstream(data / "admin_token") >> token;
  test::http_client api("127.0.0.1", admin_port);
  auto status = api.get("/api/projects/sims", token);
  REQUIRE(status.status == 200);
  auto j = nlohmann::json::parse(status.body);
  INFO(status.body);
  CHECK(j["counters"]["results_reported"].get<long>() >= 10);
  CHECK(j["counters"]["workunits_validated"].get<long>() >= 10);
  CHECK(j["hosts"].get<long>() == 1);

  // A wrong token is a clear failure, not a silent run.
  test::child_process bad({sim, "run", "-q", "--server", url, "--admin-server",
                           "http://127.0.0.1:" + std::to_string(admin_port), "--token", "wrong",
                           scenario});
  auto bad_out = all_output(bad, 60s);
  CHECK(bad.wait(30s) == 1);
  CHECK(bad_out.find("HTTP 401") != std::string::npos);
  server.signal(SIGTERM);
  CHECK(server.wait(60s) == 0);
}
