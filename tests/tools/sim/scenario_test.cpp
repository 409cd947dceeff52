/// Scenario files: every key read, defaults where absent, and FILE:LINE: KEY errors.

#include "config/config.hpp"
#include "tools/sim/emulator.hpp"
#include "tools/sim/scenario.hpp"

#include <catch2/catch.hpp>

using namespace cobble;
using namespace cobble::sim;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_scenario(yaml, "s.yaml");
  } catch (const config::config_error& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("a scenario is read with its defaults", "[sim]") {
  auto sc = parse_scenario(R"(
duration: 3d
step: 2m
client: {debt_eligibility: attached, connect_interval: 1h, sched_period: 30m}
projects:
  - name: a
    share: 75
    apps:
      - {name: x, resources: [cpu, cuda], flops: 1e12, delay_bound: 2d, count: 5, start: 1d}
  - {name: b, attach_at: 2d, apps: [{name: y}]}
hosts:
  - {count: 3, ncpus: 4, gpus: [{type: nvidia, count: 2, flops: 5e12}], efficiency: {x: 0.5},
     on_frac: 0.8, projects: [a]}
)",
                           "s.yaml");
  CHECK(sc.duration == 3 * 86400);
  CHECK(sc.step == 120);
  CHECK(sc.warmup == 86400);
  CHECK(sc.client.eligibility == client::debt_eligibility::attached);
  CHECK(sc.client.connect_interval == 3600);
  CHECK(sc.client.sched_period == 1800);
  CHECK(sc.client.backoff_max == 86400);
  REQUIRE(sc.projects.size() == 2);
  CHECK(sc.projects[0].apps[0].resources == std::vector<std::string>{"CPU", "NVIDIA"});
  CHECK(sc.projects[0].apps[0].count == 5);
  CHECK(sc.projects[0].apps[0].start == 86400);
  CHECK(sc.projects[1].share == 100);
  CHECK(sc.projects[1].attach_at == 2 * 86400);
  CHECK(sc.projects[1].apps[0].resources == std::vector<std::string>{"CPU"});
  CHECK(sc.projects[1].apps[0].delay_bound == 7 * 86400);
  REQUIRE(sc.hosts.size() == 1);
  CHECK(sc.hosts[0].count == 3);
  CHECK(sc.hosts[0].gpus[0].type == "NVIDIA");
  CHECK(sc.hosts[0].efficiency.at("x") == 0.5);
  CHECK(sc.hosts[0].projects == std::vector<std::string>{"a"});
  // The server configuration it makes: a GPU version per GPU resource, replication 1.
  auto cfg = make_config(sc);
  config::validate(cfg);
  REQUIRE(cfg.projects.size() == 2);
  const auto& app = cfg.projects[0].apps[0];
  CHECK(app.min_quorum == 1);
  REQUIRE(app.versions.size() == 2);
  CHECK(app.versions[1].coproc_type == "NVIDIA");
  CHECK(app.versions[1].plan_class == "nvidia");
}

TEST_CASE("bad scenario input names file, line and key", "[sim]") {
  CHECK(error_of("duration: 2x\nprojects: []\n")
        == "s.yaml:1: duration: expected a duration (30, 30s, 5m, 2h, 7d), got '2x'");
  CHECK(error_of("projects:\n  - name: a\n    apps: [{name: x, resources: [TPU]}]\n")
          .find("s.yaml:3: projects[0].apps[0].resources: unknown resource type 'TPU'")
        == 0);
  CHECK(
    error_of("projects:\n  - {name: a, apps: [{name: x}]}\nhosts:\n  - {ncpus: 1, projects: [z]}\n")
      .find("s.yaml:4: hosts[0].projects: no project named 'z'")
    == 0);
  CHECK(error_of("client:\n  debt_eligibility: maybe\n")
        == "s.yaml:2: client.debt_eligibility: expected design or attached, got 'maybe'");
  CHECK(error_of("projects:\n  - {name: a, share: -1, apps: [{name: x}]}\n")
          .find("projects[0].share: must be greater than 0")
        != std::string::npos);
  CHECK(error_of("hosts: [{ncpus: 1}]\n").find("projects: at least one project")
        != std::string::npos);
  CHECK(error_of("duration: [1\n").find("s.yaml:") == 0);
}
