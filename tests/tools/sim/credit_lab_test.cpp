/// The credit lab runs its standard scenario on a fixed seed and the design's promises hold:
/// device neutrality within 10%, and no adversary above 1.1 times the credit it deserves once
/// the cherry-picking protection is on (while without it the cherry picker gains).

#include "tools/sim/credit_lab.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace cobble;

namespace {

std::filesystem::path scenario(const char* name) {
  return std::filesystem::path(COBBLE_SOURCE_DIR) / "tools" / "sim" / "scenarios" / name;
}

} // namespace

TEST_CASE("the credit lab's standard scenario keeps the design's promises", "[sim][credit]") {
  auto s = sim::load_lab_scenario(scenario("credit-default.yaml"));
  REQUIRE(s.seed == 42);
  // The protected project runs on the default credit settings (PFCmean(V) the median of the
  // hosts' means); only its app's host_scale_check is on.
  for (const auto& p : s.projects)
    if (p.name == "guarded") {
      CHECK(p.host_scale_check);
      CHECK(p.credit == config::credit_config{});
    }
  auto r = sim::run_credit_lab(s);
  INFO(sim::format_table(r));
  REQUIRE(r.validated > 5000);
  // Device neutrality: where an app has CPU and GPU versions, GPU and CPU hosts get the same
  // credit per unit of true work within 10%.
  int both = 0;
  for (const auto& p : r.projects)
    if (p.gpu_cpu_ratio > 0) {
      ++both;
      CHECK(p.gpu_cpu_ratio == Approx(1).epsilon(0.1));
    }
  CHECK(both == 1);
  // Every adversary under the protection stays within the design's bound of 1.1.
  int guarded = 0, open = 0;
  for (const auto& a : r.adversaries) {
    INFO(a.project << " " << a.name);
    CHECK(a.jobs >= 100);
    if (a.protection) {
      ++guarded;
      CHECK(a.ratio > 0.5);
      CHECK(a.ratio <= 1.1);
    } else if (a.kind == "cherry_picker") {
      // Without it, cherry picking pays: the protection is what keeps the bound.
      ++open;
      CHECK(a.ratio > 1.1);
    }
  }
  CHECK(guarded == 5);
  CHECK(open == 1);
  // A new host's Scale(H) settles within tens of jobs where PFCmean(V) is stable.
  for (const auto& p : r.projects)
    if (p.name == "lean" || p.name == "mixed") {
      INFO(p.name);
      CHECK(p.settle_median > 0);
      CHECK(p.settle_median <= 40);
    }
}

TEST_CASE("with version_pfc: mean the inflators break the bound the median keeps",
          "[sim][credit]") {
  // The same protected project on the design's first formulation of PFCmean(V): the
  // inflators' samples raise it, and with it everyone's credit (docs/credit.md).
  auto s = sim::load_lab_scenario(scenario("credit-mean.yaml"));
  REQUIRE(s.projects.size() == 1);
  REQUIRE(s.projects[0].credit.version_pfc == config::version_pfc_estimator::mean);
  auto r = sim::run_credit_lab(s);
  INFO(sim::format_table(r));
  int over = 0;
  for (const auto& a : r.adversaries)
    over += a.ratio > 1.1;
  CHECK(over >= 2);
  // Honest hosts get far more per host-hour than on the median (10.3 in the standard scenario).
  REQUIRE(r.projects.size() == 1);
  CHECK(r.projects[0].credit_per_host_hour > 15);
}

TEST_CASE("bad scenarios are refused with file, line and key", "[sim][credit]") {
  auto error_of = [](const std::string& yaml) {
    try {
      sim::parse_lab_scenario(yaml, "bad.yaml");
    } catch (const sim::scenario_error& e) {
      return std::string{e.what()};
    }
    return std::string{"no error"};
  };
  CHECK(error_of("seed: 1\n")
        == "bad.yaml:1: projects: a list of at least one project is required");
  CHECK(error_of("projects:\n  - name: a\n    replicaton: 2\npopulations: [{count: 1}]\n")
        == "bad.yaml:3: projects[0].replicaton: unknown key 'replicaton' (known keys: name, "
           "replication, host_scale_check, versions, job_min, job_max, size_noise, "
           "bound_factor, delay_bound, credit)");
  CHECK(error_of("projects:\n  - name: a\n    versions: [cpu]\npopulations:\n  - device: gpu\n")
        == "bad.yaml:5: populations[0].device: project 'a' has no gpu version");
  CHECK(error_of("projects: [{name: a}]\npopulations:\n  - {adversary: sneaky}\n")
          .rfind("bad.yaml:3: populations[0].adversary: unknown adversary 'sneaky'", 0)
        == 0);
  CHECK(error_of("projects: [{name: a}]\npopulations: [{count: lots}]\n")
        == "bad.yaml:2: populations[0].count: cannot read 'lots' as an integer");
  CHECK(error_of("projects: [{name: a, credit: {version_pfc: mode}}]\npopulations: [{}]\n")
        == "bad.yaml:1: projects[0].credit.version_pfc: must be mean or median");
  CHECK_THROWS_AS(sim::load_lab_scenario("/nonexistent/credit.yaml"), sim::scenario_error);
}
