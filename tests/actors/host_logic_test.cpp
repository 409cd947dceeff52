/// Tests of the limits a client cannot widen, as decisions without actors (host_logic and
/// project_logic): the minimum interval between work requests, the claimed CPU and GPU
/// counts capped, the jobs-in-progress caps, new hosts per account per day, a description
/// that did not change, and report figures kept out of the running means; and which clients
/// run the project's own versions.

#include "actors/host_logic.hpp"
#include "actors/project_logic.hpp"
#include "config/config.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second;

/// The demo project (one CPU app "testapp", two replicas) with the limits given.
struct limits_fixture {
  project_logic logic;
  config::project_config cfg = cobble::test::demo_config().projects.at(0);
  time_us now = t0;
  id_type user = 0;
  host_state host;
  host_settings settings;

  explicit limits_fixture(const config::limits_config& limits = {}) {
    cfg.limits = limits;
    logic.configure(cfg, now);
    user = logic.state.users.begin()->first;
    host_info_rec info;
    info.p_ncpus = 1;
    info.p_fpops = 1e9;
    auto e = logic.register_host(user, info, now);
    apply(host, e, {});
    settings = host_settings{logic.state.index, logic.state.credit,
                             autoflops_by_version(logic.state.apps),
                             resources_by_version(logic.state.apps), cfg.limits};
  }

  void create(int n) {
    work_batch b;
    b.submitter = "admin";
    for (int i = 0; i < n; ++i) {
      work_spec w;
      w.app = "testapp";
      b.items.push_back(w);
    }
    work_created out;
    REQUIRE(static_cast<bool>(logic.create_work(b, now, out)));
  }

  /// A request of the project's own CPU version, claiming `ncpus` CPUs, for a day of work.
  sched_request request(int ncpus) const {
    sched_request q;
    q.authenticator = "k";
    q.hostid = host.id;
    q.platform_name = "x86_64-pc-linux-gnu";
    q.cpu.req_secs = 86400.0 * 100;
    q.cpu.req_instances = ncpus;
    q.host.p_ncpus = ncpus;
    q.host.p_fpops = 1e9;
    return q;
  }

  /// One RPC's job selection through host_logic; the dispatches are applied to the host.
  std::vector<granted_job> select(const sched_request& q) {
    host_logic hl{host, settings};
    auto jr = hl.job_request_for(q, host_info_from(q), {}, now);
    std::vector<event> events;
    auto jobs = logic.select_jobs(jr, now, events);
    for (const auto& e : events)
      if (auto d = std::get_if<ev::result_dispatched>(&e.data))
        apply(host, e, logic.state.result_name(d->result), logic.state.credit);
    return jobs;
  }
};

} // namespace

TEST_CASE("sendwork_wait: the rest of the interval after the last served request", "[limits]") {
  CHECK(sendwork_wait(std::nullopt, t0, 60) == 0);
  CHECK(sendwork_wait(t0, t0, 60) == 60);
  CHECK(sendwork_wait(t0, t0 + seconds_to_us(20), 60) == Approx(40));
  CHECK(sendwork_wait(t0, t0 + seconds_to_us(60), 60) == 0);
  CHECK(sendwork_wait(t0, t0 + seconds_to_us(61), 60) == 0);
  CHECK(sendwork_wait(t0, t0, 0) == 0); // off
  // A clock that went back never makes the wait longer than the interval.
  CHECK(sendwork_wait(t0, t0 - seconds_to_us(100), 60) == 60);
}

TEST_CASE("a claim of 1,000 CPUs counts as max_ncpus: daily quota and jobs in progress",
          "[limits]") {
  config::limits_config l;
  l.max_ncpus = 4;
  l.max_jobs_in_progress = 2;
  limits_fixture f(l);
  f.create(500);
  host_logic hl{f.host, f.settings};
  auto q = f.request(1000);
  auto jr = hl.job_request_for(q, host_info_from(q), {}, f.now);
  CHECK(jr.info.p_ncpus == 4);
  REQUIRE(jr.in_progress_left.size() == n_resource_types);
  CHECK(jr.in_progress_left[0] == 8);  // 2 per CPU × 4 counted CPUs
  CHECK(jr.in_progress_left[1] == 10); // no GPU claimed: one device at the default 10
  // RPC after RPC the host never holds more than 8.
  std::size_t total = 0;
  for (int i = 0; i < 20; ++i)
    total += f.select(q).size();
  CHECK(total == 8);
  CHECK(f.host.in_progress.size() == 8);
  // The client is told why.
  host_logic again{f.host, f.settings};
  auto full = again.job_request_for(q, host_info_from(q), {}, f.now);
  CHECK(full.in_progress_left[0] == 0);
  auto msgs = again.limit_messages(full);
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].text.find("limit on tasks in progress") != std::string::npos);
}

TEST_CASE("a stock client that lists the versions it holds is not anonymous", "[limits]") {
  // 7.x clients send <app_versions> in every request (other_results index into it); only
  // <platform_name>anonymous</platform_name> means app_info.xml.
  limits_fixture f;
  f.create(4);
  auto q = f.request(1);
  q.cpu.req_secs = 1; // one job per request
  q.app_versions.push_back(
    client_app_version{"testapp", 100, "x86_64-pc-linux-gnu", "", 1, 1e9, resource_type::cpu, 0});
  host_logic hl{f.host, f.settings};
  CHECK_FALSE(hl.job_request_for(q, host_info_from(q), {}, f.now).anonymous);
  auto jobs = f.select(q);
  REQUIRE(jobs.size() == 1);
  auto id = jobs[0].dispatched.version.app_version_id;
  CHECK_FALSE(is_anonymous_version(id)); // the project's own build, whose statistics it keeps
  CHECK(id == f.logic.state.apps.at(0).versions.at(0).id);

  q.platform_name = "anonymous";
  CHECK(hl.job_request_for(q, host_info_from(q), {}, f.now).anonymous);
  auto anon = f.select(q);
  REQUIRE(anon.size() == 1);
  CHECK(anon[0].dispatched.version.app_version_id == anonymous_version_id(1, 0));
}

TEST_CASE("GPU counts are capped by max_ngpus and jobs in progress per GPU", "[limits]") {
  config::limits_config l;
  l.max_ngpus = 2;
  l.max_gpu_jobs_in_progress = 3;
  limits_fixture f(l);
  host_logic hl{f.host, f.settings};
  auto q = f.request(1);
  q.coprocs.push_back(coproc_description{resource_type::nvidia, 64, 1e13, {3600, 1, 0}});
  auto jr = hl.job_request_for(q, host_info_from(q), {}, f.now);
  REQUIRE(jr.info.coprocs.size() == 1);
  CHECK(jr.info.coprocs[0].second == 2);
  CHECK(jr.in_progress_left[static_cast<int>(resource_type::nvidia)] == 6);
  CHECK(jr.in_progress_left[0] == 10); // the default: 10 per CPU, one CPU
}

TEST_CASE("no cap when max_jobs_in_progress is 0", "[limits]") {
  config::limits_config l;
  l.max_jobs_in_progress = 0;
  limits_fixture f(l);
  host_logic hl{f.host, f.settings};
  auto q = f.request(2);
  auto jr = hl.job_request_for(q, host_info_from(q), {}, f.now);
  CHECK(jr.in_progress_left[0] < 0);
  CHECK(hl.limit_messages(jr).empty());
}

TEST_CASE("new hosts per account per day: the cap, the window, other accounts", "[limits]") {
  limits_fixture f; // one host registered at t0
  auto& logic = f.logic;
  CHECK(logic.hosts_registered_since(f.user, t0) == 1);
  CHECK_FALSE(logic.host_registration_refusal(f.user, f.now, 2));
  logic.register_host(f.user, {}, f.now);
  auto why = logic.host_registration_refusal(f.user, f.now, 2);
  REQUIRE(why);
  CHECK(why->find("2 new computers in the last 24 hours") != std::string::npos);
  CHECK_FALSE(logic.host_registration_refusal(f.user, f.now, 0)); // 0: no cap
  // Another account is not counted against this one.
  auto created = logic.create_user("other", "o@example.org", "other-key", f.now);
  REQUIRE(created);
  auto other = std::get<ev::user_created>(created->data).id;
  CHECK_FALSE(logic.host_registration_refusal(other, f.now, 2));
  // A day later the window is empty again.
  auto later = f.now + seconds_to_us(86400) + 1;
  CHECK(logic.hosts_registered_since(f.user, later - seconds_to_us(86400)) == 0);
  CHECK_FALSE(logic.host_registration_refusal(f.user, later, 2));
}

TEST_CASE("a description that did not change writes no event (d_free within 10 % is no change)",
          "[limits]") {
  limits_fixture f;
  host_logic hl{f.host, f.settings};
  auto info = f.host.info;
  CHECK_FALSE(hl.describe(info, f.now));
  info.d_free = 1e11;
  CHECK(hl.describe(info, f.now)); // first figure
  info.d_free = 1.05e11;
  CHECK_FALSE(hl.describe(info, f.now));
  CHECK(f.host.info.d_free == 1e11);
  info.d_free = 0.5e11;
  CHECK(hl.describe(info, f.now));
  info.domain_name = "renamed";
  CHECK(hl.describe(info, f.now));
  CHECK_FALSE(hl.describe(info, f.now));
}

TEST_CASE("report figures outside plausible bounds are flagged and kept out", "[limits]") {
  limits_fixture f;
  f.create(3);
  auto jobs = f.select(f.request(1));
  REQUIRE(jobs.size() >= 3);
  auto report = [&](const std::string& name, double elapsed, double units) {
    reported_result r;
    r.name = name;
    r.state = 5;
    r.final_elapsed_time = elapsed;
    r.final_cpu_time = elapsed;
    r.app_units = units;
    sched_request q;
    q.results.push_back(r);
    host_logic hl{f.host, f.settings};
    auto out = hl.report(q, f.now);
    REQUIRE(out.events.size() == 1);
    return std::get<ev::result_reported>(out.events[0].data).report;
  };
  // 1e6 app units for a job predicted at 1: flagged, the units left out.
  auto poisoned = report(jobs[0].result.name, 100, 1e6);
  CHECK((poisoned.flags & flag_bad_app_units) != 0);
  CHECK(poisoned.app_units == 0);
  // Within the factor (100 by default): kept.
  auto fine = report(jobs[1].result.name, 100, 50);
  CHECK(fine.flags == 0);
  CHECK(fine.app_units == 50);
  // A success in no time: its elapsed time stays out of the host's averages.
  auto instant = report(jobs[2].result.name, 0, 0);
  CHECK((instant.flags & flag_bad_elapsed) != 0);
  const auto& hav = f.host.app_versions.begin()->second;
  CHECK(hav.elapsed_n == 2);
  CHECK(hav.elapsed_sum == 200);
}

TEST_CASE("a reply carries a version's files before its jobs' files, and the key", "[host_logic]") {
  job_grant g;
  granted_job job;
  file_description in;
  in.name = "in_1";
  file_description shared;
  shared.name = "app_2"; // also named by the version: sent once
  job.files = {in, shared};
  g.jobs.push_back(job);
  file_description program;
  program.name = "app_1";
  program.executable = true;
  program.file_signature = "ab\n.\n";
  g.version_files = {program, shared};
  g.apps.push_back(app_description{"testapp", "Test", false});
  app_version_description v;
  v.app_name = "testapp";
  v.version_num = 101;
  g.app_versions.push_back(v);
  g.code_sign_key = "1024\n00ff\n.\n";
  g.code_sign_key_signature = "cd\n.\n";

  sched_reply reply;
  add_grant(reply, g);
  std::vector<std::string> names;
  for (const auto& f : reply.files)
    names.push_back(f.name);
  CHECK(names == std::vector<std::string>{"app_1", "app_2", "in_1"});
  CHECK(reply.files[0].file_signature == "ab\n.\n");
  REQUIRE(reply.apps.size() == 1);
  REQUIRE(reply.app_versions.size() == 1);
  CHECK(reply.app_versions[0].version_num == 101);
  CHECK(reply.code_sign_key == g.code_sign_key);
  CHECK(reply.code_sign_key_signature == g.code_sign_key_signature);
}

TEST_CASE("a work request carries what plan classes test", "[limits]") {
  limits_fixture f;
  f.create(1);
  auto q = f.request(1);
  q.cpu.req_secs = 1;
  q.core_client_major_version = 7;
  q.core_client_minor_version = 20;
  q.core_client_release = 5;
  q.alt_platforms = {"i686-pc-linux-gnu"};
  coproc_description gpu;
  gpu.type = resource_type::nvidia;
  gpu.count = 1;
  gpu.driver_version = 53523;
  gpu.cuda_version = 12020;
  q.coprocs.push_back(gpu);
  host_logic hl{f.host, f.settings};
  auto jr = hl.job_request_for(q, host_info_from(q), {}, f.now);
  CHECK(jr.client_version == 72005);
  CHECK(jr.alt_platforms == std::vector<std::string>{"i686-pc-linux-gnu"});
  REQUIRE(jr.coprocs.size() == 1);
  CHECK(jr.coprocs[0].driver_version == 53523);
  CHECK(jr.coprocs[0].cuda_version == 12020);
}
