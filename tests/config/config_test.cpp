#include "../support/temp_dir.hpp"
#include "config/config.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

using namespace cobble::config;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view minimal = R"(
projects:
  - name: p
    apps:
      - name: a
        versions: [{}]
)";

constexpr std::string_view full = R"(# every key, none at its default
server:
  listen: 0.0.0.0:9090
  public_url: https://boinc.example.org
  admin_address: 10.0.0.5
  admin_port: 9091
  data_dir: /var/lib/cobble
  durability: async
  worker_threads: 8
  actor_threads: 3
  actor_scheduler: stealing
  admin_token: s3cret
  body_limit: 8MiB
  upload_limit: 1G
  read_timeout: 2m
  snapshot_every_events: 5000
  snapshot_interval: 1h
  snapshot_time_share: 0.25
  snapshots_kept: 5
  stats_export_interval: 6h
  max_batch_items: 500
projects:
  - name: primes
    long_name: Prime search
    description: "Searching for large primes: 2^p - 1 & friends."
    request_delay: 7
    next_rpc_delay: 1.5m
    deadline_check_interval: 0.5s
    passivate_hosts_after: 2h
    max_live_hosts: 5000
    resend_lost_results: false
    limits:
      min_sendwork_interval: 1m
      max_ncpus: 16
      max_ngpus: 2
      max_jobs_in_progress: 3
      max_gpu_jobs_in_progress: 0
      max_new_hosts_per_day: 4
      app_units_factor: 20
    users:
      - {name: alice, email: alice@example.org, authenticator: abc123}
      - name: bob
    plan_classes:
      - name: cuda
        gpu_type: nvidia
        cuda: true
        min_cuda_version: 11080
        min_driver_version: 52000
        min_gpu_ram_mb: 2048
        gpu_ram_used_mb: 1500
        cpu_frac: 0.25
        ngpus: 1
      - {name: mt, max_threads: 8, min_ncpus: 2, nthreads_cmdline: true, min_core_client_version: 71600, projected_flops_scale: 1.1}
    apps:
      - name: sieve
        user_friendly_name: Sieve
        min_quorum: 3
        target_nresults: 4
        max_error_results: 5
        max_total_results: 12
        max_success_results: 8
        delay_bound: 2d
        max_jobs_per_rpc: 3
        validator: accept_all
        rsc_fpops_est: 1e13
        rsc_fpops_bound: 1e14
        rsc_memory_bound: 512MiB
        rsc_disk_bound: 2e9
        max_output_nbytes: 16MiB
        output_names: [primes.txt, log.txt]
        versions:
          - {platform: x86_64-pc-linux-gnu, version_num: 101, plan_class: "", avg_ncpus: 1, coproc_type: "", coproc_count: 0}
          - platform: x86_64-pc-linux-gnu
            version_num: 101
            plan_class: cuda
            avg_ncpus: 0.25
            coproc_type: nvidia
            coproc_count: 1
      - name: check
        versions:
          - {platform: windows_x86_64, version_num: 7}
  - name: other
)";

void check_equal(const app_version_config& a, const app_version_config& b) {
  CHECK(a.platform == b.platform);
  CHECK(a.version_num == b.version_num);
  CHECK(a.plan_class == b.plan_class);
  CHECK(a.avg_ncpus == b.avg_ncpus);
  CHECK(a.coproc_type == b.coproc_type);
  CHECK(a.coproc_count == b.coproc_count);
}

void check_equal(const app_config& a, const app_config& b) {
  CHECK(a.name == b.name);
  CHECK(a.user_friendly_name == b.user_friendly_name);
  CHECK(a.min_quorum == b.min_quorum);
  CHECK(a.target_nresults == b.target_nresults);
  CHECK(a.max_error_results == b.max_error_results);
  CHECK(a.max_total_results == b.max_total_results);
  CHECK(a.max_success_results == b.max_success_results);
  CHECK(a.delay_bound == b.delay_bound);
  CHECK(a.max_jobs_per_rpc == b.max_jobs_per_rpc);
  CHECK(a.validator == b.validator);
  CHECK(a.rsc_fpops_est == b.rsc_fpops_est);
  CHECK(a.rsc_fpops_bound == b.rsc_fpops_bound);
  CHECK(a.rsc_memory_bound == b.rsc_memory_bound);
  CHECK(a.rsc_disk_bound == b.rsc_disk_bound);
  CHECK(a.max_output_nbytes == b.max_output_nbytes);
  CHECK(a.output_names == b.output_names);
  REQUIRE(a.versions.size() == b.versions.size());
  for (std::size_t i = 0; i < a.versions.size(); ++i)
    check_equal(a.versions[i], b.versions[i]);
}

void check_equal(const cobble_config& a, const cobble_config& b) {
  CHECK(a.source == b.source);
  const auto& s = a.server;
  const auto& t = b.server;
  CHECK(s.listen_address == t.listen_address);
  CHECK(s.port == t.port);
  CHECK(s.public_url == t.public_url);
  CHECK(s.admin_address == t.admin_address);
  CHECK(s.admin_port == t.admin_port);
  CHECK(s.data_dir == t.data_dir);
  CHECK(s.mode == t.mode);
  CHECK(s.worker_threads == t.worker_threads);
  CHECK(s.admin_token == t.admin_token);
  CHECK(s.body_limit == t.body_limit);
  CHECK(s.upload_limit == t.upload_limit);
  CHECK(s.read_timeout == t.read_timeout);
  CHECK(s.snapshot_every_events == t.snapshot_every_events);
  CHECK(s.snapshot_interval == t.snapshot_interval);
  CHECK(s.snapshot_time_share == t.snapshot_time_share);
  CHECK(s.snapshots_kept == t.snapshots_kept);
  CHECK(s.stats_export_interval == t.stats_export_interval);
  CHECK(s.max_batch_items == t.max_batch_items);
  REQUIRE(a.projects.size() == b.projects.size());
  for (std::size_t i = 0; i < a.projects.size(); ++i) {
    const auto& p = a.projects[i];
    const auto& q = b.projects[i];
    CHECK(p.name == q.name);
    CHECK(p.limits == q.limits);
    CHECK(p.long_name == q.long_name);
    CHECK(p.description == q.description);
    CHECK(p.request_delay == q.request_delay);
    CHECK(p.next_rpc_delay == q.next_rpc_delay);
    CHECK(p.deadline_check_interval == q.deadline_check_interval);
    CHECK(p.passivate_hosts_after == q.passivate_hosts_after);
    CHECK(p.max_live_hosts == q.max_live_hosts);
    CHECK(p.resend_lost_results == q.resend_lost_results);
    CHECK(p.plan_classes == q.plan_classes);
    REQUIRE(p.users.size() == q.users.size());
    for (std::size_t j = 0; j < p.users.size(); ++j) {
      CHECK(p.users[j].name == q.users[j].name);
      CHECK(p.users[j].email == q.users[j].email);
      CHECK(p.users[j].authenticator == q.users[j].authenticator);
    }
    REQUIRE(p.apps.size() == q.apps.size());
    for (std::size_t j = 0; j < p.apps.size(); ++j)
      check_equal(p.apps[j], q.apps[j]);
  }
  CHECK(a == b);
}

} // namespace

TEST_CASE("absent keys take the defaults of config.hpp", "[config]") {
  auto cfg = load_string(minimal, "minimal.yaml");
  CHECK(cfg.source == "minimal.yaml");
  CHECK(cfg.server == server_config{});
  REQUIRE(cfg.projects.size() == 1);
  project_config project;
  project.name = "p";
  app_config app;
  app.name = "a";
  app.versions.emplace_back();
  project.apps.push_back(app);
  check_equal(cfg, cobble_config{"minimal.yaml", server_config{}, {project}});
  CHECK_FALSE(cfg.projects[0].next_rpc_delay.has_value());
}

TEST_CASE("null values mean the default", "[config]") {
  auto cfg = load_string(R"(
server:
  port:
  public_url: ~
projects:
  - name: p
    next_rpc_delay:
    apps: [{name: a, versions: [{platform: ~}]}]
)",
                         "nulls.yaml");
  CHECK(cfg.server == server_config{});
  CHECK_FALSE(cfg.projects[0].next_rpc_delay.has_value());
  CHECK(cfg.projects[0].apps[0].versions[0] == app_version_config{});
}

TEST_CASE("a full file is read field by field", "[config]") {
  cobble::test::temp_dir dir;
  auto file = dir.write("cobble.yaml", full);
  auto cfg = load_file(file);
  CHECK(cfg.source == file.string());

  const auto& s = cfg.server;
  CHECK(s.listen_address == "0.0.0.0");
  CHECK(s.port == 9090);
  CHECK(s.public_url == "https://boinc.example.org");
  CHECK(s.admin_address == "10.0.0.5");
  CHECK(s.admin_port == 9091);
  CHECK(s.data_dir == "/var/lib/cobble");
  CHECK(s.mode == durability::async);
  CHECK(s.worker_threads == 8);
  CHECK(s.actor_threads == 3);
  CHECK(s.scheduler == actor_scheduler::stealing);
  CHECK(s.admin_token == "s3cret");
  CHECK(s.body_limit == 8u << 20);
  CHECK(s.upload_limit == 1000000000u);
  CHECK(s.read_timeout == 120s);
  CHECK(s.snapshot_every_events == 5000);
  CHECK(s.snapshot_interval == 3600s);
  CHECK(s.snapshot_time_share == 0.25);
  CHECK(s.snapshots_kept == 5);
  CHECK(s.stats_export_interval == 6h);
  CHECK(s.max_batch_items == 500);

  REQUIRE(cfg.projects.size() == 2);
  const auto& p = cfg.projects[0];
  CHECK(p.name == "primes");
  CHECK(p.long_name == "Prime search");
  CHECK(p.description == "Searching for large primes: 2^p - 1 & friends.");
  CHECK(p.request_delay == 7);
  CHECK(p.next_rpc_delay == 90.0);
  CHECK(p.deadline_check_interval == 0.5);
  CHECK(p.passivate_hosts_after == 7200);
  CHECK(p.max_live_hosts == 5000);
  CHECK(cfg.projects[1].passivate_hosts_after == 600); // the defaults
  CHECK(cfg.projects[1].max_live_hosts == 100000);
  CHECK_FALSE(p.resend_lost_results);
  CHECK(cfg.projects[1].resend_lost_results);
  CHECK(p.limits.min_sendwork_interval == 60.0);
  CHECK(p.limits.max_ncpus == 16);
  CHECK(p.limits.max_ngpus == 2);
  CHECK(p.limits.max_jobs_in_progress == 3);
  CHECK(p.limits.max_gpu_jobs_in_progress == 0);
  CHECK(p.limits.max_new_hosts_per_day == 4);
  CHECK(p.limits.app_units_factor == 20);
  CHECK(cfg.projects[1].limits == limits_config{}); // the defaults
  CHECK_FALSE(cfg.projects[1].limits.min_sendwork_interval.has_value());
  REQUIRE(p.users.size() == 2);
  CHECK(p.users[0] == user_config{"alice", "alice@example.org", "abc123"});
  CHECK(p.users[1] == user_config{"bob", "", ""});
  REQUIRE(p.plan_classes.size() == 2);
  const auto& cuda = p.plan_classes[0];
  CHECK(cuda.name == "cuda");
  CHECK(cuda.gpu_type == "nvidia");
  CHECK(cuda.cuda);
  CHECK_FALSE(cuda.opencl);
  CHECK(cuda.min_cuda_version == 11080);
  CHECK(cuda.min_driver_version == 52000);
  CHECK(cuda.min_gpu_ram_mb == 2048);
  CHECK(cuda.gpu_ram_used_mb == 1500);
  CHECK(cuda.cpu_frac == 0.25);
  CHECK(cuda.ngpus == 1);
  const auto& mt = p.plan_classes[1];
  CHECK(mt.max_threads == 8);
  CHECK(mt.min_ncpus == 2);
  CHECK(mt.nthreads_cmdline);
  CHECK(mt.min_core_client_version == 71600);
  CHECK(mt.projected_flops_scale == 1.1);
  CHECK(mt.gpu_type.empty());
  CHECK(cfg.projects[1].plan_classes.empty());

  REQUIRE(p.apps.size() == 2);
  const auto& a = p.apps[0];
  CHECK(a.name == "sieve");
  CHECK(a.user_friendly_name == "Sieve");
  CHECK(a.min_quorum == 3);
  CHECK(a.target_nresults == 4);
  CHECK(a.max_error_results == 5);
  CHECK(a.max_total_results == 12);
  CHECK(a.max_success_results == 8);
  CHECK(a.delay_bound == 2 * 86400);
  CHECK(a.max_jobs_per_rpc == 3);
  CHECK(a.validator == validator_kind::accept_all);
  CHECK(a.rsc_fpops_est == 1e13);
  CHECK(a.rsc_fpops_bound == 1e14);
  CHECK(a.rsc_memory_bound == 512.0 * 1024 * 1024);
  CHECK(a.rsc_disk_bound == 2e9);
  CHECK(a.max_output_nbytes == 16.0 * 1024 * 1024);
  CHECK(a.output_names == std::vector<std::string>{"primes.txt", "log.txt"});
  REQUIRE(a.versions.size() == 2);
  CHECK(a.versions[0] == app_version_config{"x86_64-pc-linux-gnu", 101, "", 1, "", 0});
  CHECK(a.versions[1] == app_version_config{"x86_64-pc-linux-gnu", 101, "cuda", 0.25, "NVIDIA", 1});
  CHECK(p.apps[1].name == "check");
  CHECK(p.apps[1].versions[0].platform == "windows_x86_64");
  CHECK(p.apps[1].versions[0].version_num == 7);

  CHECK(cfg.projects[1].name == "other");
  CHECK(cfg.projects[1].apps.empty());
}

TEST_CASE("listen_address and port are an alternative to listen", "[config]") {
  auto cfg = load_string(R"(
server: {listen_address: "::1", port: 0}
projects: [{name: p}]
)",
                         "split.yaml");
  CHECK(cfg.server.listen_address == "::1");
  CHECK(cfg.server.port == 0);
  auto v6 = load_string("server: {listen: '[::1]:443'}\nprojects: [{name: p}]\n", "v6.yaml");
  CHECK(v6.server.listen_address == "::1");
  CHECK(v6.server.port == 443);
}

TEST_CASE("to_yaml round trips", "[config]") {
  for (auto text : {full, minimal, demo_yaml()}) {
    auto cfg = load_string(text, "in.yaml");
    auto again = load_string(to_yaml(cfg), "in.yaml");
    check_equal(again, cfg);
  }
  auto v6 = load_string("server: {listen: '[::1]:0'}\nprojects: [{name: p}]\n", "v6.yaml");
  CHECK(load_string(to_yaml(v6), "v6.yaml") == v6);
}

TEST_CASE("the embedded demo equals its YAML text", "[config]") {
  auto cfg = demo();
  CHECK(cfg.source == "<embedded demo>");
  CHECK(cfg.server.listen_address == "127.0.0.1");
  CHECK(cfg.server.port == 8080);
  CHECK(cfg.server.admin_address == "127.0.0.1");
  CHECK(cfg.server.admin_port == 8081);
  CHECK(cfg.server.data_dir == "cobble-data");
  REQUIRE(cfg.projects.size() == 1);
  const auto& p = cfg.projects[0];
  CHECK(p.name == "demo");
  CHECK(p.long_name == "Cobble demo project");
  CHECK_FALSE(p.next_rpc_delay.has_value());
  REQUIRE(p.users.size() == 1);
  CHECK(p.users[0].name == "demo");
  REQUIRE(p.apps.size() == 1);
  const auto& a = p.apps[0];
  CHECK(a.name == "testapp");
  CHECK(a.min_quorum == 2);
  CHECK(a.target_nresults == 2);
  CHECK(a.validator == validator_kind::bitwise);
  // No configured version: cobbled adds a signed one at the demo's first start.
  CHECK(a.versions.empty());

  check_equal(cfg, load_string(demo_yaml(), "<embedded demo>"));
}

TEST_CASE("validate accepts the demo and configurations built in code", "[config]") {
  CHECK_NOTHROW(validate(demo()));
  auto cfg = demo();
  cfg.projects[0].apps[0].versions.push_back({"x86_64-pc-linux-gnu", 100, "cuda", 0.1, "ATI", 1});
  CHECK_NOTHROW(validate(cfg));
}

TEST_CASE("the full layout in docs/configuration.md loads and shows the defaults", "[config]") {
  std::ifstream in(std::filesystem::path(COBBLE_SOURCE_DIR) / "docs" / "configuration.md");
  REQUIRE(in);
  std::string line, yaml;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```yaml") {
      inside = true;
    } else if (inside && line == "```") {
      break;
    } else if (inside) {
      yaml += line + "\n";
    }
  }
  REQUIRE_FALSE(yaml.empty());
  auto cfg = load_string(yaml, "configuration.md");
  cobble_config expected;
  expected.source = "configuration.md";
  auto& p = expected.projects.emplace_back();
  p.name = "demo";
  p.next_rpc_delay = 30;
  p.users.push_back({"demo", "demo@example.org", ""});
  // Two example plan classes: the defaults but for their names and these fields.
  auto& mt = p.plan_classes.emplace_back();
  mt.name = "mt";
  mt.max_threads = 8;
  mt.nthreads_cmdline = true;
  auto& cuda = p.plan_classes.emplace_back();
  cuda.name = "cuda118";
  cuda.gpu_type = "nvidia";
  cuda.cuda = true;
  cuda.min_cuda_version = 11080;
  auto& a = p.apps.emplace_back();
  a.name = "testapp";
  a.versions.emplace_back();
  check_equal(cfg, expected);
}
