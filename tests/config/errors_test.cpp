#include "../support/temp_dir.hpp"
#include "config/config.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace cobble::config;

namespace {

/// Loads `yaml` from a file and expects a config_error at `line` naming `key`, whose message
/// contains `part`.
void expect_error(std::string_view yaml, int line, const std::string& key,
                  const std::string& part) {
  cobble::test::temp_dir dir;
  auto file = dir.write("bad.yaml", yaml);
  try {
    load_file(file);
    FAIL("accepted:\n" << yaml);
  } catch (const config_error& e) {
    INFO(e.what());
    CHECK(e.file() == file.string());
    CHECK(e.line() == line);
    CHECK(e.key() == key);
    CHECK_THAT(e.message(), Catch::Contains(part));
    auto prefix = file.string() + ":" + std::to_string(line) + ": "
                  + (key.empty() ? "" : key + ": ");
    CHECK(std::string(e.what()).rfind(prefix, 0) == 0);
  }
}

/// A valid project around one app body (indented 8), starting on line 4.
std::string with_app(const std::string& app_lines) {
  return "projects:\n"
         "  - name: p\n"
         "    apps:\n"
         "      - name: a\n"
         + app_lines;
}

constexpr const char* version = "        versions: [{}]\n";

} // namespace

TEST_CASE("errors: YAML syntax", "[config][errors]") {
  cobble::test::temp_dir dir;
  auto file = dir.write("syntax.yaml", "server:\n  listen: [1, 2\nprojects: []\n");
  try {
    load_file(file);
    FAIL("accepted");
  } catch (const config_error& e) {
    INFO(e.what());
    CHECK(e.file() == file.string());
    CHECK(e.line() >= 2);
    CHECK_THAT(e.what(), Catch::StartsWith(file.string() + ":" + std::to_string(e.line()) + ": "));
    CHECK_THAT(e.message(), Catch::Contains("YAML syntax error"));
  }
  expect_error("server:\n  worker_threads: 2\n  listen: a: b\nprojects: []\n", 3, "", "syntax");
}

TEST_CASE("errors: unreadable file", "[config][errors]") {
  cobble::test::temp_dir dir;
  auto missing = dir.path() / "missing.yaml";
  try {
    load_file(missing);
    FAIL("accepted");
  } catch (const config_error& e) {
    CHECK(e.file() == missing.string());
    CHECK(e.line() == 0);
    CHECK_THAT(e.what(), Catch::StartsWith(missing.string() + ":0: cannot read"));
  }
  try {
    load_file(dir.path());
    FAIL("accepted");
  } catch (const config_error& e) {
    CHECK(e.line() == 0);
    CHECK_THAT(e.message(), Catch::Contains("directory"));
  }
}

TEST_CASE("errors: wrong types", "[config][errors]") {
  expect_error("server:\n  worker_threads: abc\nprojects: [{name: p}]\n", 2,
               "server.worker_threads", "expected an integer, got 'abc'");
  expect_error("server:\n  worker_threads: 2.5\nprojects: [{name: p}]\n", 2,
               "server.worker_threads", "expected an integer, got '2.5'");
  expect_error("server:\n  worker_threads: 99999999999\nprojects: [{name: p}]\n", 2,
               "server.worker_threads", "out of range");
  expect_error(with_app("        min_quorum: two\n") + version, 5, "projects[0].apps[0].min_quorum",
               "expected an integer, got 'two'");
  expect_error(with_app("        rsc_fpops_est: lots\n") + version, 5,
               "projects[0].apps[0].rsc_fpops_est", "expected a number, got 'lots'");
  expect_error(with_app("        output_names: out.txt\n") + version, 5,
               "projects[0].apps[0].output_names", "expected a list");
  expect_error(with_app("        output_names: [[a]]\n") + version, 5,
               "projects[0].apps[0].output_names[0]", "expected a string");
  expect_error(with_app("        name: [x]\n") + version, 5, "projects[0].apps[0].name",
               "key given twice");
  expect_error("server: 3\nprojects: [{name: p}]\n", 1, "server", "expected a mapping");
  expect_error("- 1\n- 2\n", 1, "", "expected a mapping");
  expect_error("projects:\n  - name: {a: 1}\n", 2, "projects[0].name", "expected a string");
  expect_error("projects: {name: p}\n", 1, "projects", "expected a list");
}

TEST_CASE("errors: sizes and durations", "[config][errors]") {
  expect_error("server:\n  body_limit: 4 parsecs\nprojects: [{name: p}]\n", 2, "server.body_limit",
               "expected a size");
  expect_error("server:\n  body_limit: 1.5\nprojects: [{name: p}]\n", 2, "server.body_limit",
               "whole number of bytes");
  expect_error("server:\n  upload_limit: -1MiB\nprojects: [{name: p}]\n", 2, "server.upload_limit",
               "must not be negative");
  expect_error("server:\n  read_timeout: 10 minutes\nprojects: [{name: p}]\n", 2,
               "server.read_timeout", "expected a duration");
  expect_error("server:\n  read_timeout: 1.5s\nprojects: [{name: p}]\n", 2, "server.read_timeout",
               "whole number of seconds");
  expect_error(with_app("        delay_bound: 7 days\n") + version, 5,
               "projects[0].apps[0].delay_bound", "expected a duration");
}

TEST_CASE("errors: negative or zero where impossible", "[config][errors]") {
  expect_error("server:\n  worker_threads: 0\nprojects: [{name: p}]\n", 2, "server.worker_threads",
               "must be positive");
  expect_error("server:\n  actor_threads: -1\nprojects: [{name: p}]\n", 2, "server.actor_threads",
               "must be 0 (one per core) or more");
  expect_error("server:\n  body_limit: 0\nprojects: [{name: p}]\n", 2, "server.body_limit",
               "must be positive");
  expect_error("server:\n  max_batch_items: 0\nprojects: [{name: p}]\n", 2,
               "server.max_batch_items", "must be positive");
  expect_error("server:\n  read_timeout: 0s\nprojects: [{name: p}]\n", 2, "server.read_timeout",
               "must be positive");
  expect_error("server:\n  snapshots_kept: -2\nprojects: [{name: p}]\n", 2, "server.snapshots_kept",
               "must not be negative");
  expect_error("server:\n  stats_export_interval: -1h\nprojects: [{name: p}]\n", 2,
               "server.stats_export_interval", "must be 0 (no export) to 3650d");
  expect_error("server:\n  stats_export_interval: 3651d\nprojects: [{name: p}]\n", 2,
               "server.stats_export_interval", "must be 0 (no export) to 3650d");
  expect_error("server:\n  snapshot_every_events: 0\nprojects: [{name: p}]\n", 2,
               "server.snapshot_every_events", "must be positive");
  expect_error("server:\n  snapshot_time_share: 0\nprojects: [{name: p}]\n", 2,
               "server.snapshot_time_share", "must be in (0, 1], got 0");
  expect_error("server:\n  snapshot_time_share: 1.5\nprojects: [{name: p}]\n", 2,
               "server.snapshot_time_share", "must be in (0, 1], got 1.5");
  expect_error("projects:\n  - name: p\n    request_delay: -5s\n", 3, "projects[0].request_delay",
               "must not be negative");
  expect_error("projects:\n  - name: p\n    limits:\n      max_ncpus: 0\n", 4,
               "projects[0].limits.max_ncpus", "must be positive");
  expect_error("projects:\n  - name: p\n    limits:\n      min_sendwork_interval: -1s\n", 4,
               "projects[0].limits.min_sendwork_interval", "must not be negative");
  expect_error("projects:\n  - name: p\n    limits:\n      max_new_hosts_per_day: -1\n", 4,
               "projects[0].limits.max_new_hosts_per_day", "must not be negative");
  expect_error("projects:\n  - name: p\n    limits:\n      app_units_factor: 1\n", 4,
               "projects[0].limits.app_units_factor", "must be over 1, got 1");
  expect_error("projects:\n  - name: p\n    deadline_check_interval: 0\n", 3,
               "projects[0].deadline_check_interval", "must be positive");
  expect_error("projects:\n  - name: p\n    max_live_hosts: -1\n", 3, "projects[0].max_live_hosts",
               "must not be negative");
  expect_error("projects:\n  - name: p\n    passivate_hosts_after: -5s\n", 3,
               "projects[0].passivate_hosts_after", "must not be negative");
  expect_error("projects:\n  - name: p\n    resend_lost_results: sometimes\n", 3,
               "projects[0].resend_lost_results",
               "unknown value 'sometimes' (allowed: true, false)");
  expect_error(with_app("        delay_bound: -1d\n") + version, 5,
               "projects[0].apps[0].delay_bound", "must be positive");
  expect_error(with_app("        delay_bound: 3651d\n") + version, 5,
               "projects[0].apps[0].delay_bound", "must be at most ten years (3650d)");
  expect_error(with_app("        max_jobs_per_rpc: 0\n") + version, 5,
               "projects[0].apps[0].max_jobs_per_rpc", "must be positive");
  expect_error(with_app("        max_error_results: -1\n") + version, 5,
               "projects[0].apps[0].max_error_results", "must not be negative");
  expect_error(with_app("        rsc_memory_bound: 0\n") + version, 5,
               "projects[0].apps[0].rsc_memory_bound", "must be positive");
  expect_error(with_app("        versions:\n          - avg_ncpus: 0\n"), 6,
               "projects[0].apps[0].versions[0].avg_ncpus", "must be positive");
}

TEST_CASE("errors: unknown keys are refused by name", "[config][errors]") {
  expect_error("servr:\n  listen: 127.0.0.1:80\nprojects: [{name: p}]\n", 1, "servr",
               "unknown key 'servr'");
  expect_error("server:\n  lisen: 127.0.0.1:80\nprojects: [{name: p}]\n", 2, "server.lisen",
               "unknown key 'lisen'");
  expect_error(with_app("        min_qorum: 1\n") + version, 5, "projects[0].apps[0].min_qorum",
               "unknown key 'min_qorum'");
  expect_error(with_app("        versions:\n          - {platfrom: x}\n"), 6,
               "projects[0].apps[0].versions[0].platfrom", "unknown key");
  expect_error("projects:\n  - name: p\n    users: [{name: u, mail: x}]\n", 3,
               "projects[0].users[0].mail", "unknown key 'mail'");
  expect_error("server:\n  port: 1\n  port: 2\nprojects: [{name: p}]\n", 3, "server.port",
               "key given twice");
}

TEST_CASE("errors: unknown enum values list the allowed ones", "[config][errors]") {
  expect_error("server:\n  durability: fast\nprojects: [{name: p}]\n", 2, "server.durability",
               "unknown value 'fast' (allowed: sync, async)");
  expect_error("server:\n  actor_scheduler: fifo\nprojects: [{name: p}]\n", 2,
               "server.actor_scheduler", "unknown value 'fifo' (allowed: sharing, stealing)");
  expect_error(with_app("        validator: fuzzy\n") + version, 5, "projects[0].apps[0].validator",
               "allowed: bitwise, accept_all");
  expect_error(with_app("        versions:\n          - {coproc_type: AMD, coproc_count: 1}\n"), 6,
               "projects[0].apps[0].versions[0].coproc_type",
               "allowed: \"\", NVIDIA, ATI, intel_gpu");
}

TEST_CASE("errors: names", "[config][errors]") {
  expect_error("projects:\n  - name: p\n  - name: q\n  - name: p\n", 4, "projects[2].name",
               "duplicate project name 'p'");
  expect_error(with_app(version) + "      - name: a\n" + version, 6, "projects[0].apps[1].name",
               "duplicate app name 'a'");
  expect_error("projects:\n  - name: My Project\n", 2, "projects[0].name", "invalid name");
  expect_error("projects:\n  - name: a/b\n", 2, "projects[0].name", "invalid name");
  expect_error("projects:\n  - name: p\n    apps:\n      - name: App\n" + std::string(version), 4,
               "projects[0].apps[0].name", "invalid name");
  expect_error("projects:\n  - long_name: nameless\n", 2, "projects[0].name", "needs a name");
  expect_error("projects:\n  - name: p\n    apps:\n      - versions: [{}]\n", 4,
               "projects[0].apps[0].name", "needs a name");
  expect_error("projects:\n  - name: p\n    users: [{name: u}, {name: u}]\n", 3,
               "projects[0].users[1].name", "duplicate user name");
  expect_error(with_app("        output_names: [a, a]\n") + version, 5,
               "projects[0].apps[0].output_names[1]", "duplicate output");
}

TEST_CASE("errors: replication policy", "[config][errors]") {
  expect_error(with_app("        min_quorum: 3\n        target_nresults: 2\n") + version, 5,
               "projects[0].apps[0].min_quorum", "exceeds target_nresults");
  // Only target_nresults written: the error points at it.
  expect_error(with_app("        target_nresults: 1\n") + version, 5,
               "projects[0].apps[0].target_nresults", "min_quorum (2) exceeds target_nresults (1)");
  expect_error(with_app("        target_nresults: 11\n") + version, 5,
               "projects[0].apps[0].target_nresults", "exceeds max_total_results (10)");
  expect_error(with_app("        min_quorum: 0\n") + version, 5, "projects[0].apps[0].min_quorum",
               "at least 1");
  expect_error(with_app("        max_success_results: 1\n") + version, 5,
               "projects[0].apps[0].max_success_results", "below min_quorum");
  expect_error(with_app("        rsc_fpops_bound: 1e3\n") + version, 5,
               "projects[0].apps[0].rsc_fpops_bound", "below rsc_fpops_est");
}

TEST_CASE("errors: versions and coprocessors", "[config][errors]") {
  // An app may have no version in the configuration: its versions are added while the
  // server runs (docs/apps.md).
  CHECK(load_string(with_app(""), "none.yaml").projects[0].apps[0].versions.empty());
  CHECK(load_string(with_app("        versions: []\n"), "empty.yaml")
          .projects[0]
          .apps[0]
          .versions.empty());
  expect_error(with_app("        versions:\n          - {coproc_count: 1}\n"), 6,
               "projects[0].apps[0].versions[0].coproc_count", "coproc_type is empty");
  expect_error(with_app("        versions:\n          - {coproc_type: ATI}\n"), 6,
               "projects[0].apps[0].versions[0].coproc_type", "needs coproc_count > 0");
  expect_error(with_app("        versions:\n          - {}\n          - {}\n"), 7,
               "projects[0].apps[0].versions[1]", "duplicate app version");
  expect_error(with_app("        versions:\n          - {platform: \"\"}\n"), 6,
               "projects[0].apps[0].versions[0].platform", "must not be empty");
}

TEST_CASE("errors: listen address", "[config][errors]") {
  expect_error("server:\n  listen: localhost\nprojects: [{name: p}]\n", 2, "server.listen",
               "expected host:port");
  expect_error("server:\n  listen: localhost:http\nprojects: [{name: p}]\n", 2, "server.listen",
               "expected host:port");
  expect_error("server:\n  listen: \":8080\"\nprojects: [{name: p}]\n", 2, "server.listen",
               "empty host");
  expect_error("server:\n  listen: \"::1:8080\"\nprojects: [{name: p}]\n", 2, "server.listen",
               "brackets");
  expect_error("server:\n  listen: 127.0.0.1:65536\nprojects: [{name: p}]\n", 2, "server.listen",
               "out of range");
  expect_error("server:\n  port: 70000\nprojects: [{name: p}]\n", 2, "server.port", "out of range");
  expect_error("server:\n  port: -1\nprojects: [{name: p}]\n", 2, "server.port", "out of range");
  expect_error("server:\n  listen: 127.0.0.1:80\n  port: 81\nprojects: [{name: p}]\n", 3,
               "server.port", "not both");
  expect_error("server:\n  public_url: boinc.example.org\nprojects: [{name: p}]\n", 2,
               "server.public_url", "http://");
}

TEST_CASE("errors: admin listener", "[config][errors]") {
  expect_error("server:\n  admin_port: 65536\nprojects: [{name: p}]\n", 2, "server.admin_port",
               "out of range");
  expect_error("server:\n  admin_port: -1\nprojects: [{name: p}]\n", 2, "server.admin_port",
               "out of range");
  expect_error("server:\n  admin_port: http\nprojects: [{name: p}]\n", 2, "server.admin_port",
               "integer");
  expect_error("server:\n  admin_address: \"\"\nprojects: [{name: p}]\n", 2, "server.admin_address",
               "must not be empty");
  // The public port equal to the default admin port: the error points at the public port.
  expect_error("server:\n  port: 8081\nprojects: [{name: p}]\n", 2, "server.port",
               "must differ from server.port (both are 8081)");
  expect_error("server:\n  port: 9000\n  admin_port: 9000\nprojects: [{name: p}]\n", 3,
               "server.admin_port", "own listener");
  // 0 picks a free port for each: both 0 is fine.
  CHECK(load_string("server: {port: 0, admin_port: 0}\nprojects: [{name: p}]\n", "zero.yaml")
          .server.admin_port
        == 0);
}

TEST_CASE("errors: missing or empty projects", "[config][errors]") {
  expect_error("", 1, "projects", "at least one project");
  expect_error("server:\n  worker_threads: 4\n", 1, "projects", "at least one project");
  expect_error("server: {}\nprojects: []\n", 2, "projects", "at least one project");
}

TEST_CASE("validate() checks configurations built in code", "[config][errors]") {
  auto expect = [](const cobble_config& cfg, const std::string& key, const std::string& part) {
    try {
      validate(cfg);
      FAIL("accepted");
    } catch (const config_error& e) {
      INFO(e.what());
      CHECK(e.file() == cfg.source);
      CHECK(e.line() == 0);
      CHECK(e.key() == key);
      CHECK_THAT(e.message(), Catch::Contains(part));
      CHECK_THAT(e.what(), Catch::StartsWith(cfg.source + ":0: " + key + ": "));
    }
  };
  auto cfg = cobble::test::demo_config();
  cfg.source = "built-in";
  auto bad = cfg;
  bad.projects[0].apps[0].min_quorum = 3;
  expect(bad, "projects[0].apps[0].min_quorum", "exceeds target_nresults");
  bad = cfg;
  bad.projects[0].apps[0].target_nresults = 20;
  expect(bad, "projects[0].apps[0].target_nresults", "exceeds max_total_results");
  bad = cfg;
  bad.projects.push_back(cfg.projects[0]);
  expect(bad, "projects[1].name", "duplicate project name");
  bad = cfg;
  bad.projects[0].apps[0].versions[0].coproc_type = "nvidia"; // only the canonical spelling
  bad.projects[0].apps[0].versions[0].coproc_count = 1;
  expect(bad, "projects[0].apps[0].versions[0].coproc_type", "unknown value");
  bad = cfg;
  bad.projects.clear();
  expect(bad, "projects", "at least one project");
  bad = cfg;
  bad.server.worker_threads = 0;
  expect(bad, "server.worker_threads", "must be positive");
}

TEST_CASE("errors: plan classes", "[config][errors]") {
  auto with_class = [](const std::string& body) {
    return "projects:\n"
           "  - name: p\n"
           "    plan_classes:\n"
           "      - "
           + body + "\n";
  };
  expect_error(with_class("{gpu_type: nvidia}"), 4, "projects[0].plan_classes[0].name",
               "every plan class needs a name");
  expect_error(with_class("{name: cuda, gpu_type: geforce}"), 4,
               "projects[0].plan_classes[0].gpu_type", "unknown value 'geforce'");
  expect_error(with_class("{name: fast_gpu, gpu_type: nvidia}"), 4,
               "projects[0].plan_classes[0].name", "must have 'nvidia' or 'cuda' in its name");
  expect_error(with_class("{name: amd_gpu, gpu_type: amd, opencl: true}"), 4,
               "projects[0].plan_classes[0].name", "must have 'opencl' in its name");
  expect_error(with_class("{name: mt, min_cuda_version: 11000}"), 4,
               "projects[0].plan_classes[0].gpu_type", "GPU requirements are set");
  expect_error(with_class("{name: cuda_mt, gpu_type: nvidia, max_threads: 4}"), 4,
               "projects[0].plan_classes[0].max_threads", "for CPU plan classes");
  expect_error(with_class("{name: ati, gpu_type: amd, cuda: true}"), 4,
               "projects[0].plan_classes[0].cuda", "cuda needs gpu_type nvidia");
  expect_error(with_class("{name: mt, nthreads_cmdline: true}"), 4,
               "projects[0].plan_classes[0].nthreads_cmdline", "needs max_threads");
  expect_error(with_class("{name: mt, projected_flops_scale: 0}"), 4,
               "projects[0].plan_classes[0].projected_flops_scale", "");
  expect_error(with_class("{name: 'm t'}"), 4, "projects[0].plan_classes[0].name", "invalid name");
  expect_error(with_class("{name: mt}\n      - {name: mt}"), 5, "projects[0].plan_classes[1].name",
               "duplicate plan class 'mt'");
  expect_error(with_class("{name: mt, wobble: 1}"), 4, "projects[0].plan_classes[0].wobble", "");
  // A version of a defined class is on the class's resource.
  expect_error(with_class("{name: cuda, gpu_type: nvidia}")
                 + "    apps:\n"
                   "      - name: a\n"
                   "        versions: [{plan_class: cuda}]\n",
               7, "projects[0].apps[0].versions[0].coproc_type",
               "plan class cuda is for NVIDIA but the version's coproc_type is ''");
}
