/// The lab base (tools/sim/lab) on its own: a scenario's lists and host populations are read
/// and checked as both labs read them, hosts take turns in virtual time, and one emulated host
/// runs a job through the real actors from creation to validation.

#include "actors/event_codec.hpp"
#include "actors/events.hpp"
#include "tools/sim/lab.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

using namespace cobble;

namespace {

/// The populations of `yaml` as the labs read them (device: cpu or gpu), or the error.
std::pair<std::vector<sim::host_population>, std::string> populations(const std::string& yaml) {
  std::vector<sim::host_population> out;
  try {
    auto root = sim::parse_lab_yaml(yaml, "t.yaml");
    sim::checked_map top(root, "t.yaml", "", {"populations"});
    sim::read_lab_list(top, "populations", "population",
                       {"count", "device", "cpu_flops_min", "cpu_flops_max", "gpu_factor_min",
                        "gpu_factor_max", "efficiency_min", "efficiency_max"},
                       [&](const sim::checked_map& m, const YAML::Node& n, const std::string& path,
                           std::size_t) {
                         sim::host_population p;
                         sim::read_host_population(m, n, path, p, [&] {
                           m.choice("device", p.device, {"cpu", "gpu"});
                         });
                         out.push_back(p);
                       });
  } catch (const sim::lab_scenario_error& e) {
    return {out, e.what()};
  }
  return {out, ""};
}

/// A lab's options with the project "p": a CPU version of "labapp", jobs of 1e12 FLOPs.
sim::harness_options one_project() {
  auto options = sim::lab_harness_options("t.yaml", {});
  auto& app = sim::add_lab_project(options.config, "p", "lab test", "labapp", 1, 86400, true,
                                   false);
  app.rsc_fpops_est = 1e12;
  app.rsc_fpops_bound = 1e15;
  return options;
}

} // namespace

TEST_CASE("a lab's populations are read and checked", "[sim][lab]") {
  auto [pops, error] = populations("populations:\n  - {count: 3, device: gpu}\n  - {}\n");
  REQUIRE(error.empty());
  REQUIRE(pops.size() == 2);
  CHECK(pops[0].count == 3);
  CHECK(pops[0].device == "gpu");
  CHECK(pops[1].count == 1);
  CHECK(pops[1].device == "cpu");
  CHECK(pops[1].cpu_flops_min == 2e9);
  CHECK(populations("populations: []\n").second
        == "t.yaml:1: populations: a list of at least one population is required");
  CHECK(populations("{}\n").second
        == "t.yaml:1: populations: a list of at least one population is required");
  CHECK(populations("populations:\n  - {count: 0}\n").second
        == "t.yaml:2: populations[0].count: must be 1 to 10000");
  CHECK(populations("populations:\n  - {}\n  - {device: tpu}\n").second
        == "t.yaml:3: populations[1].device: must be one of cpu, gpu");
  CHECK(populations("populations:\n  - {cpu_flops_min: 5e9, cpu_flops_max: 1e9}\n").second
        == "t.yaml:2: populations[0]: a _max is below its _min");
  CHECK(populations("populations:\n  - {efficiency_max: 2}\n").second
        == "t.yaml:2: populations[0].efficiency_max: must be in (0, 1]");
  CHECK(populations("populations: [\n").second.rfind("t.yaml:2: ", 0) == 0);
  CHECK_THROWS_AS(sim::read_lab_file("/nonexistent/lab.yaml"), sim::lab_scenario_error);
}

TEST_CASE("hosts take turns in virtual time until none comes back or the days run out",
          "[sim][lab]") {
  sim::lab_run run(1, one_project());
  auto start = run.h.now();
  std::vector<std::pair<std::size_t, double>> turns; // host, seconds since the start
  auto days = run.run_hosts(3, 10, [&](std::size_t i) -> std::optional<time_us> {
    turns.emplace_back(i, us_to_seconds(run.h.now() - start));
    if (i == 1 || turns.size() > 6)
      return std::nullopt;
    return run.h.now() + 5 * us_per_second;
  });
  // Host i first at i seconds; host 1 never comes back; 0 and 2 every 5 s until the
  // seventh turn.
  std::vector<std::pair<std::size_t, double>> expected{{0, 0}, {1, 1},  {2, 2},  {0, 5},
                                                       {2, 7}, {0, 10}, {2, 12}, {0, 15}};
  CHECK(turns == expected);
  CHECK(days == Approx(15.0 / 86400));
  // Past max_days no host runs again.
  std::size_t calls = 0;
  days = run.run_hosts(1, 2.5, [&](std::size_t) -> std::optional<time_us> {
    ++calls;
    return run.h.now() + 86400 * us_per_second;
  });
  CHECK(calls == 3);
  CHECK(days == Approx(2));
}

TEST_CASE("an emulated host runs a lab job from creation to validation", "[sim][lab]") {
  auto options = sim::lab_harness_options("t.yaml", {});
  auto& app = sim::add_lab_project(options.config, "p", "lab test", "labapp", 1, 86400, true,
                                   false);
  app.rsc_fpops_est = 1e12;
  app.rsc_fpops_bound = 1e15;
  sim::lab_run run(7, std::move(options));
  auto auth = run.lab_account("p");
  sim::host_population pop;
  auto host = run.draw_host(pop);
  CHECK_FALSE(host.gpu);
  CHECK(host.cpu_flops >= 2e9);
  CHECK(host.cpu_flops <= 4e9);
  CHECK(host.efficiency >= 0.35);
  CHECK(host.efficiency <= 0.65);
  CHECK(host.peak() == host.cpu_flops);

  sim::job_book<double> book;
  work_batch b;
  b.submitter = "lab-test";
  b.items.push_back(work_spec{});
  b.items.back().app = "labapp";
  b.items.back().name = "wu1";
  auto created = book.create(run.h, "p", std::move(b), {42.0});
  REQUIRE(created == 1);

  auto reply = run.rpc("p", run.request(host, auth, "cpid", true), host);
  CHECK(run.rpcs == 1);
  CHECK(host.id != 0);
  REQUIRE(reply->results.size() == 1);
  auto [wu, truth] = book.of_result(reply->results[0].name);
  CHECK(wu == book.wu_ids.at("wu1"));
  CHECK(truth == 42.0);

  auto req = run.request(host, auth, "cpid", false);
  CHECK(req.rpc_seqno == 1);
  auto done = sim::lab_run::report(reply->results[0].name, "", true);
  done.final_elapsed_time = done.final_cpu_time = 1000;
  req.results.push_back(done);
  run.rpc("p", std::move(req), host);
  int validated = 0;
  run.scan_log(1, [&](const storage::event_record& rec) {
    validated += rec.kind == ev::workunit_validated::kind;
    return true;
  });
  CHECK(validated == 1);
  CHECK(sim::credit_per_tflop(3, 2e12) == Approx(1.5));
  CHECK(sim::credit_per_tflop(3, 0) == 0);
}
