/// Tests of project_logic (actors/project): the decisions of a project without actors —
/// configuration, work creation, job selection, the transitioner and the deadline sweep.

#include "actors/error.hpp"
#include "actors/project_logic.hpp"
#include "config/config.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second;
constexpr double demo_est = 3.6e12; // the demo app's rsc_fpops_est
constexpr double host_fpops = 1e9;  // so one demo job is 3600 s on one CPU
constexpr double one_job_secs = demo_est / host_fpops;

config::project_config demo_project() {
  return cobble::test::demo_config().projects.at(0);
}

/// A project_logic configured with `cfg` (the demo project by default).
struct logic_fixture {
  project_logic logic;
  config::project_config cfg;
  time_us now = t0;
  id_type user = 0;

  explicit logic_fixture(config::project_config c = demo_project()) : cfg(std::move(c)) {
    logic.configure(cfg, now);
    REQUIRE(!logic.state.users.empty());
    user = logic.state.users.begin()->first;
  }

  id_type new_host() {
    host_info_rec info;
    info.p_ncpus = 2;
    info.p_fpops = host_fpops;
    auto e = logic.register_host(user, info, now);
    return std::get<ev::host_registered>(e.data).id;
  }

  std::vector<id_type> create(std::vector<work_spec> items) {
    work_batch b;
    b.submitter = "admin";
    b.items = std::move(items);
    work_created out;
    auto events = logic.create_work(b, now, out);
    REQUIRE(static_cast<bool>(events));
    REQUIRE(events->size() == out.ids.size());
    return out.ids;
  }

  id_type create_one(work_spec w) { return create({std::move(w)}).at(0); }

  caf::error create_error(std::vector<work_spec> items) {
    work_batch b;
    b.submitter = "admin";
    b.items = std::move(items);
    work_created out;
    auto events = logic.create_work(b, now, out);
    REQUIRE_FALSE(static_cast<bool>(events));
    CHECK(out.ids.empty());
    return events.error();
  }

  /// A CPU request of an anonymous-platform client offering testapp 100 for Linux.
  job_request anon_request(id_type host, double secs, double inst = 0) {
    job_request r;
    r.host = host;
    r.info.p_ncpus = 2;
    r.info.p_fpops = host_fpops;
    r.requests.resize(n_resource_types);
    r.requests[0] = resource_request{secs, inst, 0};
    r.anonymous = true;
    r.offered.push_back(
      client_app_version{"testapp", 100, "x86_64-pc-linux-gnu", "", 1, 0, resource_type::cpu, 0});
    return r;
  }

  /// A CPU request of a client that runs the project's own versions for `platform`.
  job_request platform_request(id_type host, double secs, std::string platform) {
    auto r = anon_request(host, secs);
    r.anonymous = false;
    r.offered.clear();
    r.platform = std::move(platform);
    return r;
  }

  std::vector<granted_job> select(const job_request& r, std::vector<event>* events = nullptr) {
    std::vector<event> ev;
    auto jobs = logic.select_jobs(r, now, ev);
    REQUIRE(ev.size() == jobs.size());
    if (events)
      *events = std::move(ev);
    return jobs;
  }

  /// Sends one job to `host` and returns its result.
  result_ref give_one(id_type host) {
    auto jobs = select(anon_request(host, one_job_secs / 2));
    REQUIRE(jobs.size() == 1);
    return jobs[0].dispatched.result;
  }

  /// A report as the log delivers it to the project, then the transitioner's events.
  std::vector<event>
  report(result_ref r, id_type host, bool success, std::string md5 = "m1", double elapsed = 100) {
    report_rec rep;
    rep.success = success;
    rep.client_state = success ? 5 : 3;
    rep.exit_status = success ? 0 : 1;
    rep.elapsed = elapsed;
    rep.cpu = elapsed;
    if (success) {
      auto name = logic.state.result_name(r) + "_0";
      // Uploaded first, as a client does; the server's digest is what the validator compares.
      auto up = logic.output_received(name, host, 64, md5, now);
      REQUIRE(static_cast<bool>(up));
      rep.outputs.push_back(file_rec{name, 64, std::move(md5)});
    }
    event e;
    e.time = now;
    e.data = ev::result_reported{r, host, rep};
    logic.apply_delivered(e);
    return logic.transition(r.wu, now);
  }

  const workunit_rec& wu(id_type id) {
    auto p = logic.state.workunit(id);
    REQUIRE(p != nullptr);
    return *p;
  }
};

work_spec spec(std::string name = {}, std::string app = "testapp") {
  work_spec w;
  w.app = std::move(app);
  w.name = std::move(name);
  return w;
}

std::vector<std::uint16_t> kinds(const std::vector<event>& events) {
  std::vector<std::uint16_t> out;
  out.reserve(events.size());
  for (const auto& e : events)
    out.push_back(kind_of(e.data));
  return out;
}

bool is_hex32(const std::string& s) {
  return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

} // namespace

// -- configure ----------------------------------------------------------------

TEST_CASE("configure records the project and creates the demo user once", "[project_logic]") {
  project_logic logic;
  auto cfg = demo_project();
  auto first = logic.configure(cfg, t0);
  REQUIRE(kinds(first)
          == std::vector<std::uint16_t>{ev::project_configured::kind, ev::user_created::kind});
  const auto& pc = std::get<ev::project_configured>(first[0].data);
  CHECK(pc.name == "demo");
  CHECK(pc.long_name == "Cobble demo project");
  REQUIRE(pc.apps.size() == 1);
  CHECK(pc.apps[0].id == 1);
  CHECK(pc.apps[0].name == "testapp");
  CHECK(pc.apps[0].min_quorum == 2);
  REQUIRE(pc.apps[0].versions.size() == 1);
  CHECK(pc.apps[0].versions[0].id == 1);
  CHECK(pc.apps[0].versions[0].platform == "x86_64-pc-linux-gnu");
  const auto& u = std::get<ev::user_created>(first[1].data);
  CHECK(u.name == "demo");
  CHECK(u.email == "demo@example.org");
  CHECK(is_hex32(u.authenticator));
  // Applied already.
  CHECK(logic.state.user_by_auth.at(u.authenticator) == u.id);
  CHECK(logic.state.apps == pc.apps);
  // Idempotent.
  CHECK(logic.configure(cfg, t0 + 1).empty());
  CHECK(logic.state.users.size() == 1);
}

TEST_CASE("configure keeps version ids and uses a configured authenticator", "[project_logic]") {
  project_logic logic;
  auto cfg = demo_project();
  cfg.users[0].authenticator = "fixedkey";
  logic.configure(cfg, t0);
  CHECK(logic.state.users.begin()->second.authenticator == "fixedkey");
  // A new version gets a new id; the old one keeps its id.
  auto& v = cfg.apps[0].versions.emplace_back();
  v.platform = "windows_x86_64";
  v.version_num = 101;
  auto again = logic.configure(cfg, t0 + 1);
  REQUIRE(kinds(again) == std::vector<std::uint16_t>{ev::project_configured::kind});
  const auto& versions = logic.state.apps.at(0).versions;
  REQUIRE(versions.size() == 2);
  CHECK(versions[0].id == 1);
  CHECK(versions[0].platform == "x86_64-pc-linux-gnu");
  CHECK(versions[1].id == 2);
  CHECK(versions[1].platform == "windows_x86_64");
}

// -- create_work --------------------------------------------------------------

TEST_CASE("create_work creates workunits with the app's defaults", "[project_logic]") {
  logic_fixture f;
  work_batch b;
  b.submitter = "alice";
  b.items = {spec("job_1"), spec()};
  b.items[0].command_line = "-n 5";
  b.items[0].inputs.push_back(input_spec{"abc_in", "in.txt", 12, "md5in"});
  work_created out;
  auto events = f.logic.create_work(b, f.now, out);
  REQUIRE(static_cast<bool>(events));
  REQUIRE(out.ids == std::vector<id_type>{1, 2});
  CHECK(out.names == std::vector<std::string>{"job_1", "testapp_wu2"});
  REQUIRE(events->size() == 2);
  const auto& c = std::get<ev::workunit_created>((*events)[0].data);
  CHECK(c.id == 1);
  CHECK(c.app == 1);
  CHECK(c.n_results == 2);
  CHECK(c.submitter == "alice");
  CHECK(c.params.command_line == "-n 5");
  CHECK(c.params.rsc_fpops_est == demo_est);
  CHECK(c.params.rsc_fpops_bound == 3.6e13);
  CHECK(c.params.delay_bound == 86400 * 7);
  CHECK(c.params.min_quorum == 2);
  CHECK(c.params.target_nresults == 2);
  CHECK(c.params.max_error_results == 3);
  CHECK(c.params.max_total_results == 10);
  CHECK(c.params.inputs == std::vector<file_rec>{file_rec{"abc_in", 12, "md5in"}});
  CHECK(c.params.input_open_names == std::vector<std::string>{"in.txt"});
  // Applied: both workunits with two unsent results each.
  CHECK(f.logic.state.next_wu == 3);
  CHECK(f.wu(2).results.size() == 2);
  CHECK(f.logic.state.counters.results_created == 4);
  // An estimate above the app's bound raises the default bound with it.
  auto big = spec("big");
  big.rsc_fpops_est = 1e15;
  auto id = f.create_one(big);
  CHECK(f.wu(id).params->rsc_fpops_bound >= 1e15);
}

TEST_CASE("a delay bound of ten years, the longest, is accepted", "[project_logic]") {
  logic_fixture f;
  auto w = spec("long");
  w.delay_bound = config::max_delay_bound;
  CHECK(f.wu(f.create_one(w)).params->delay_bound == config::max_delay_bound);
}

TEST_CASE("create_work rejects bad batches and then creates nothing", "[project_logic]") {
  logic_fixture f;
  f.create({spec("taken")});
  auto before = f.logic.state;
  auto check_unchanged = [&] {
    CHECK(f.logic.state == before);
    CHECK(f.logic.state.next_wu == 2);
    CHECK(f.logic.state.workunits.size() == 1);
    CHECK(f.logic.state.wu_by_name.size() == 1);
    CHECK(f.logic.state.unsent.at(1).size() == 2);
  };
  SECTION("an empty batch") {
    CHECK(is(f.create_error({}), ec::invalid_argument));
  }
  SECTION("an unknown app") {
    CHECK(is(f.create_error({spec("ok_1"), spec("x", "nosuchapp")}), ec::unknown_app));
  }
  SECTION("a name already in the project") {
    CHECK(is(f.create_error({spec("ok_1"), spec("taken")}), ec::duplicate));
  }
  SECTION("a name twice in the batch") {
    CHECK(is(f.create_error({spec("twice"), spec("ok_1"), spec("twice")}), ec::duplicate));
  }
  SECTION("a bad name") {
    CHECK(is(f.create_error({spec("has space")}), ec::invalid_argument));
    CHECK(is(f.create_error({spec("a..b")}), ec::invalid_argument));
  }
  SECTION("bad quorum numbers") {
    auto w = spec("q");
    w.min_quorum = 0;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    w = spec("q");
    w.min_quorum = 3;
    w.target_nresults = 2;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    w = spec("q");
    w.target_nresults = 4;
    w.max_total_results = 3;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    w = spec("q");
    w.max_total_results = 256;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    w = spec("q");
    w.max_success_results = 1;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    w = spec("q");
    w.max_error_results = -1;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
  }
  SECTION("a bound below the estimate, or non-positive sizes") {
    auto w = spec("b");
    w.rsc_fpops_est = 10;
    w.rsc_fpops_bound = 5;
    CHECK(is(f.create_error({spec("ok_1"), w}), ec::invalid_argument));
    w = spec("b");
    w.rsc_fpops_est = -1;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    w = spec("b");
    w.delay_bound = 0;
    CHECK(is(f.create_error({w}), ec::invalid_argument));
    // Issue 19: 9.2e12 s overflowed the deadline (dispatch time + bound in microseconds).
    w.delay_bound = 9.2e12;
    auto err = f.create_error({w});
    CHECK(is(err, ec::invalid_argument));
    CHECK_THAT(describe(err), Catch::Contains("at most ten years"));
  }
  SECTION("an input without a name, or with a name that leaves its directory") {
    for (const auto& in :
         {input_spec{"", "in", 1, "m"}, input_spec{"in_x", "", 1, "m"},
          input_spec{"../../admin_token", "in", 1, "m"},
          input_spec{"in_x", "../../.bashrc", 1, "m"}, input_spec{"in_x", "a/b", 1, "m"},
          input_spec{"in_x", ".hidden", 1, "m"}}) {
      INFO(in.stored_name << " " << in.open_name);
      auto w = spec("i");
      w.inputs.push_back(in);
      auto err = f.create_error({w});
      CHECK(is(err, ec::invalid_argument));
    }
  }
  SECTION("an input that is an app version's file (its workunit's cleanup would delete it)") {
    auto w = spec("i");
    w.inputs.push_back(input_spec{"app_0123456789abcdef0123456789abcdef", "in", 1, "m"});
    auto err = f.create_error({w});
    CHECK(is(err, ec::invalid_argument));
    CHECK_THAT(describe(err), Catch::Contains("an app version's file"));
  }
  check_unchanged();
}

TEST_CASE("a batch retried under its idempotency key is created once", "[project_logic]") {
  logic_fixture f;
  auto keyed = [](std::vector<work_spec> items, std::string key, std::string digest) {
    work_batch b;
    b.submitter = "admin";
    b.items = std::move(items);
    b.key = std::move(key);
    b.digest = std::move(digest);
    return b;
  };
  auto batch = keyed({spec(), spec("named"), spec()}, "retry-1", "d1");
  work_created first;
  auto events = f.logic.create_work(batch, f.now, first);
  REQUIRE(events);
  REQUIRE(events->size() == 3);
  CHECK_FALSE(first.replayed);
  CHECK(first.ids == std::vector<id_type>{1, 2, 3});
  // The key rides on the batch's first workunit only.
  const auto& c = std::get<ev::workunit_created>(events->front().data);
  CHECK(c.batch_key == "retry-1");
  CHECK(c.batch_digest == "d1");
  CHECK(c.batch_size == 3);
  CHECK(std::get<ev::workunit_created>(events->back().data).batch_key.empty());
  auto created = f.logic.state;

  // The retry, an hour later: nothing new, the first answer again.
  f.now += seconds_to_us(3600);
  work_created again;
  auto replay = f.logic.create_work(batch, f.now, again);
  REQUIRE(replay);
  CHECK(replay->empty());
  CHECK(again.replayed);
  CHECK(again.ids == first.ids);
  CHECK(again.names == first.names);
  CHECK(f.logic.state == created);

  // The same key for other work is a conflict that names the key.
  work_created other;
  auto conflict = f.logic.create_work(keyed({spec()}, "retry-1", "d2"), f.now, other);
  REQUIRE_FALSE(conflict);
  CHECK(is(conflict.error(), ec::conflict));
  CHECK_THAT(describe(conflict.error()), Catch::Contains("retry-1"));
  CHECK(other.ids.empty());
  CHECK(f.logic.state == created);

  // Another key is another batch.
  work_created fresh;
  REQUIRE(f.logic.create_work(keyed({spec()}, "retry-2", "d1"), f.now, fresh));
  CHECK(fresh.ids == std::vector<id_type>{4});

  // Past the retention the key is forgotten: it may name a new batch, and the expired keys
  // are let go of when the next keyed batch is applied.
  f.now += batch_key_retention + 1;
  work_created late;
  auto anew = f.logic.create_work(keyed({spec(), spec(), spec()}, "retry-1", "d3"), f.now, late);
  REQUIRE(anew);
  CHECK(anew->size() == 3);
  CHECK_FALSE(late.replayed);
  CHECK(late.ids == std::vector<id_type>{5, 6, 7});
  CHECK(f.logic.state.batch_keys.count("retry-1") == 1);
  CHECK(f.logic.state.batch_keys.count("retry-2") == 0);
  CHECK(f.logic.state.batch_keys.at("retry-1").first == 5);
}

TEST_CASE("a batch's idempotency keys replay to the same state", "[project_logic]") {
  project_logic live;
  project_state replayed;
  time_us now = t0;
  for (const auto& e : live.configure(demo_project(), now))
    apply(replayed, e);
  for (int i = 0; i < 3; ++i) {
    work_batch b;
    b.submitter = "admin";
    b.items = {spec(), spec()};
    b.key = "k" + std::to_string(i);
    b.digest = "d";
    work_created out;
    auto events = live.create_work(b, now, out);
    REQUIRE(events);
    for (const auto& e : *events)
      apply(replayed, e);
    now += batch_key_retention / 2 + 1;
  }
  // k0 was let go of when k2 was applied (more than a day after it); k1 and k2 are held.
  CHECK(live.state.batch_keys.size() == 2);
  CHECK(live.state.batch_keys.count("k0") == 0);
  CHECK(replayed.batch_keys == live.state.batch_keys);
  CHECK(replayed == live.state);
}

TEST_CASE("how long a batch of the largest size holds the project (printed)", "[project_logic]") {
  logic_fixture f;
  work_batch b;
  b.submitter = "admin";
  b.items.assign(10000, spec());
  work_created out;
  auto start = std::chrono::steady_clock::now();
  auto events = f.logic.create_work(b, f.now, out);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(events);
  CHECK(events->size() == 10000);
  CHECK(f.logic.state.workunits.size() == 10000);
  // A figure, not a limit: docs/security.md quotes it.
  std::printf("create_work of 10,000 workunits (decide and apply): %.1f ms\n",
              std::chrono::duration<double, std::milli>(took).count());
}

// -- select_jobs --------------------------------------------------------------

TEST_CASE("select_jobs dispatches a job with everything the client needs", "[project_logic]") {
  logic_fixture f;
  auto w = spec("job");
  w.command_line = "--fast";
  w.inputs.push_back(input_spec{"abc_in", "in.txt", 12, "md5in"});
  auto id = f.create_one(w);
  auto host = f.new_host();
  std::vector<event> events;
  auto jobs = f.select(f.anon_request(host, one_job_secs / 2), &events);
  REQUIRE(jobs.size() == 1);
  const auto& j = jobs[0];
  CHECK(j.dispatched.result == result_ref{id, 0});
  CHECK(j.dispatched.host == host);
  CHECK(j.dispatched.deadline == f.now + 604800 * us_per_second);
  CHECK(j.time == f.now);
  CHECK(j.result.name == "job_0");
  CHECK(j.result.wu_name == "job");
  CHECK(j.result.report_deadline == Approx(us_to_seconds(f.now) + 604800));
  CHECK(j.workunit.name == "job");
  CHECK(j.workunit.app_name == "testapp");
  CHECK(j.workunit.command_line == "--fast");
  CHECK(j.workunit.rsc_fpops_est == demo_est);
  REQUIRE(j.workunit.inputs.size() == 1);
  CHECK(j.workunit.inputs[0].file_name == "abc_in");
  CHECK(j.workunit.inputs[0].open_name == "in.txt");
  REQUIRE(j.result.outputs.size() == 1);
  CHECK(j.result.outputs[0].file_name == "job_0_0");
  CHECK(j.result.outputs[0].open_name == "out.txt");
  // Files: the input with its checksum, the output with its limit.
  REQUIRE(j.files.size() == 2);
  CHECK(j.files[0].name == "abc_in");
  CHECK_FALSE(j.files[0].is_output);
  CHECK(j.files[0].md5_cksum == "md5in");
  CHECK(j.files[0].nbytes == 12);
  CHECK(j.files[1].name == "job_0_0");
  CHECK(j.files[1].is_output);
  CHECK(j.files[1].max_nbytes == 64e6);
  // The dispatch is an event, already applied.
  REQUIRE(events.size() == 1);
  CHECK(std::get<ev::result_dispatched>(events[0].data).result == result_ref{id, 0});
  CHECK(f.wu(id).results[0].state == result_state::in_progress);
  CHECK(f.wu(id).results[0].host == host);
  CHECK(f.logic.state.counters.results_dispatched == 1);
}

TEST_CASE("select_jobs echoes the anonymous client's version exactly", "[project_logic]") {
  logic_fixture f;
  f.create({spec("a"), spec("b")});
  auto host = f.new_host();
  SECTION("a version the project knows") {
    auto jobs = f.select(f.anon_request(host, 1));
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].result.platform == "x86_64-pc-linux-gnu");
    CHECK(jobs[0].result.version_num == 100);
    CHECK(jobs[0].result.plan_class.empty());
    // Statistics of anonymous versions have their own identity (app 1, CPU: "-2").
    CHECK(jobs[0].dispatched.version
          == version_echo{anonymous_version_id(1, 0), "x86_64-pc-linux-gnu", 100, ""});
  }
  SECTION("a version of its own, the highest it offers") {
    auto r = f.anon_request(host, 1);
    r.offered = {client_app_version{"testapp", 105, "x86_64-pc-linux-gnu", "mt", 2, 0,
                                    resource_type::cpu, 0},
                 client_app_version{"testapp", 104, "i686-pc-linux-gnu", "", 1, 0,
                                    resource_type::cpu, 0}};
    auto jobs = f.select(r);
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].result.platform == "x86_64-pc-linux-gnu");
    CHECK(jobs[0].result.version_num == 105);
    CHECK(jobs[0].result.plan_class == "mt");
    CHECK(jobs[0].dispatched.version.version_num == 105);
    CHECK(jobs[0].dispatched.version.plan_class == "mt");
    // Statistics go to the app's anonymous CPU identity, not to the project's build.
    CHECK(jobs[0].dispatched.version.app_version_id == anonymous_version_id(1, 0));
    CHECK(version_label(jobs[0].dispatched.version.app_version_id) == "app 1 anonymous -2");
  }
  SECTION("no version of this app") {
    auto r = f.anon_request(host, 1e6);
    r.offered[0].app_name = "otherapp";
    CHECK(f.select(r).empty());
  }
  SECTION("a version of this app for another resource only") {
    auto r = f.anon_request(host, 1e6);
    r.offered[0].coproc_type = resource_type::nvidia;
    r.offered[0].coproc_count = 1;
    CHECK(f.select(r).empty());
  }
  SECTION("GPU versions of its own: the app's anonymous identity per resource (-3, -4)") {
    for (auto t : {resource_type::nvidia, resource_type::ati}) {
      auto r = f.anon_request(host, 0);
      r.requests[static_cast<std::size_t>(t)] = resource_request{1, 1, 0};
      r.info.coprocs = {{static_cast<std::uint8_t>(t), 1}};
      r.info.coproc_peak_flops = {1e12};
      r.offered[0].coproc_type = t;
      r.offered[0].coproc_count = 1;
      r.offered[0].plan_class = "gpu";
      auto jobs = f.select(r);
      REQUIRE(jobs.size() == 1);
      auto id = jobs[0].dispatched.version.app_version_id;
      CHECK(id == anonymous_version_id(1, static_cast<std::uint8_t>(t)));
      CHECK(id != anonymous_version_id(1, 0));
      CHECK(version_label(id)
            == (t == resource_type::nvidia ? "app 1 anonymous -3" : "app 1 anonymous -4"));
    }
  }
}

TEST_CASE("select_jobs sends only apps the host has a version for", "[project_logic]") {
  auto cfg = demo_project();
  auto other = cfg.apps[0];
  other.name = "winapp";
  other.versions[0].platform = "windows_x86_64";
  cfg.apps.insert(cfg.apps.begin(), other); // listed first, so it is looked at first
  logic_fixture f(cfg);
  f.create({spec("w1", "winapp"), spec("w2", "winapp"), spec("l1"), spec("l2")});
  auto host = f.new_host();
  SECTION("anonymous platform") {
    auto jobs = f.select(f.anon_request(host, 1e9));
    REQUIRE(jobs.size() == 2);
    for (const auto& j : jobs)
      CHECK(j.workunit.app_name == "testapp");
  }
  SECTION("the project's versions for the client's platform") {
    auto jobs = f.select(f.platform_request(host, 1e9, "x86_64-pc-linux-gnu"));
    REQUIRE(jobs.size() == 2);
    for (const auto& j : jobs) {
      CHECK(j.workunit.app_name == "testapp");
      CHECK(j.result.platform == "x86_64-pc-linux-gnu");
      CHECK(j.result.version_num == 100);
    }
    auto win = f.select(f.platform_request(f.new_host(), 1e9, "windows_x86_64"));
    REQUIRE(win.size() == 2);
    for (const auto& j : win)
      CHECK(j.workunit.app_name == "winapp");
  }
  SECTION("a platform with no version gets nothing") {
    CHECK(f.select(f.platform_request(host, 1e9, "arm64-apple-darwin")).empty());
  }
}

TEST_CASE("select_jobs finds the host's platform when another platform has a newer version",
          "[project_logic]") {
  // testapp: Linux 100 and Windows 101. A Linux client that runs the project's versions must
  // get the Linux version, not nothing because the Windows version is newer.
  auto cfg = demo_project();
  auto& v = cfg.apps[0].versions.emplace_back();
  v.platform = "windows_x86_64";
  v.version_num = 101;
  logic_fixture f(cfg);
  f.create({spec("a")});
  auto jobs = f.select(f.platform_request(f.new_host(), 1e6, "x86_64-pc-linux-gnu"));
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].result.platform == "x86_64-pc-linux-gnu");
  CHECK(jobs[0].result.version_num == 100);
}

TEST_CASE("select_jobs never sends two results of one workunit to one host", "[project_logic]") {
  logic_fixture f;
  auto id = f.create_one(spec("only"));
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto first = f.select(f.anon_request(h1, 1e9, 8));
  REQUIRE(first.size() == 1);
  CHECK(first[0].dispatched.result == result_ref{id, 0});
  CHECK(f.select(f.anon_request(h1, 1e9, 8)).empty());
  auto second = f.select(f.anon_request(h2, 1e9, 8));
  REQUIRE(second.size() == 1);
  CHECK(second[0].dispatched.result == result_ref{id, 1});
  CHECK(f.select(f.anon_request(f.new_host(), 1e9, 8)).empty());
}

TEST_CASE("select_jobs stops when the request is met", "[project_logic]") {
  auto cfg = demo_project();
  cfg.apps[0].max_jobs_per_rpc = 3;
  logic_fixture f(cfg);
  std::vector<work_spec> items;
  items.reserve(10);
  for (int i = 0; i < 10; ++i)
    items.push_back(spec("w" + std::to_string(i)));
  f.create(items);
  auto host = f.new_host();
  SECTION("1.5 jobs' worth of seconds: two jobs") {
    CHECK(f.select(f.anon_request(host, 1.5 * one_job_secs)).size() == 2);
  }
  SECTION("exactly one job's worth: one job") {
    CHECK(f.select(f.anon_request(host, one_job_secs)).size() == 1);
  }
  SECTION("two idle CPUs, one CPU per job: two jobs") {
    CHECK(f.select(f.anon_request(host, 0, 2)).size() == 2);
  }
  SECTION("a huge request: max_jobs_per_rpc") {
    CHECK(f.select(f.anon_request(host, 1e12, 100)).size() == 3);
  }
  SECTION("nothing requested: nothing sent, nothing recorded") {
    auto before = f.logic.state;
    std::vector<event> events;
    CHECK(f.select(f.anon_request(host, 0, 0), &events).empty());
    CHECK(events.empty());
    CHECK(f.logic.state == before);
  }
}

TEST_CASE("select_jobs sends no GPU work for an app with only CPU versions", "[project_logic]") {
  logic_fixture f;
  f.create({spec("a"), spec("b")});
  auto host = f.new_host();
  auto r = f.platform_request(host, 0, "x86_64-pc-linux-gnu");
  r.info.coprocs = {{static_cast<std::uint8_t>(resource_type::nvidia), 1}};
  r.info.coproc_peak_flops = {1e12};
  r.requests[static_cast<int>(resource_type::nvidia)] = resource_request{86400, 1, 0};
  std::vector<event> events;
  CHECK(f.select(r, &events).empty());
  CHECK(events.empty());
  // The same for an anonymous client that offers only its CPU version.
  auto a = f.anon_request(host, 0);
  a.requests[static_cast<int>(resource_type::nvidia)] = resource_request{86400, 1, 0};
  CHECK(f.select(a).empty());
}

TEST_CASE("select_jobs says why a host got no work: its daily quota, or too slow",
          "[project_logic]") {
  logic_fixture f;
  auto host = f.new_host();
  SECTION("the daily quota of the (host, version) is used up") {
    f.create({spec("a"), spec("b")});
    auto r = f.anon_request(host, 1e9, 8);
    r.hints[anonymous_version_id(1, 0)].jobs_left = 0;
    std::vector<event> events;
    std::vector<reply_message> why;
    CHECK(f.logic.select_jobs(r, f.now, events, &why).empty());
    REQUIRE(why.size() == 1);
    CHECK(why[0].text
          == "This computer has reached its daily quota of testapp tasks; it gets "
             "more tomorrow, and more each day as its tasks succeed.");
  }
  SECTION("its jobs would miss their deadlines, with the work it has queued") {
    auto w = spec("long");
    w.delay_bound = 3600;
    f.create({w});
    auto r = f.anon_request(host, 1e9, 8);
    r.requests[0].estimated_delay = 7200; // two hours of work queued already
    r.hints[anonymous_version_id(1, 0)].et = average_var{20, 1.0 / host_fpops};
    std::vector<event> events;
    std::vector<reply_message> why;
    CHECK(f.logic.select_jobs(r, f.now, events, &why).empty());
    REQUIRE(why.size() == 1);
    CHECK(why[0].text
          == "Tasks of testapp would not finish before their deadlines on this "
             "computer (with the work it has queued): none sent.");
  }
  SECTION("no work at all: nothing to say") {
    std::vector<event> events;
    std::vector<reply_message> why;
    CHECK(f.logic.select_jobs(f.anon_request(host, 1e9, 8), f.now, events, &why).empty());
    CHECK(why.empty());
  }
}

// -- transition ---------------------------------------------------------------

TEST_CASE("transition: two agreeing successes validate and assimilate", "[project_logic]") {
  logic_fixture f;
  auto id = f.create_one(spec("wu"));
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  // One success while the other replica is out: wait.
  CHECK(f.report(r0, h1, true, "same", 100).empty());
  CHECK(f.wu(id).state == wu_state::active);
  auto events = f.report(r1, h2, true, "same", 120);
  REQUIRE(kinds(events)
          == std::vector<std::uint16_t>{ev::workunit_validated::kind, ev::autoflops_sampled::kind,
                                        ev::workunit_assimilated::kind});
  const auto& v = std::get<ev::workunit_validated>(events[0].data);
  CHECK(v.canonical == std::optional<std::uint32_t>{r0.index});
  REQUIRE(v.verdicts.size() == 2);
  auto anon = anonymous_version_id(1, 0);
  CHECK(v.verdicts[0] == verdict{r0.index, true, h1, anon, 100, 100});
  CHECK(v.verdicts[1] == verdict{r1.index, true, h2, anon, 120, 120});
  CHECK(std::get<ev::workunit_assimilated>(events[2].data).canonical == r0.index);
  CHECK(f.wu(id).state == wu_state::assimilated);
  CHECK(f.wu(id).canonical == std::optional<std::uint32_t>{0});
  CHECK(f.logic.state.counters.workunits_assimilated == 1);
  // Nothing more to do.
  CHECK(f.logic.transition(id, f.now).empty());
}

TEST_CASE("transition: disagreement asks for one more opinion", "[project_logic]") {
  logic_fixture f;
  auto id = f.create_one(spec("wu"));
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto h3 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  CHECK(f.report(r0, h1, true, "good").empty());
  auto events = f.report(r1, h2, true, "odd");
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::results_created::kind});
  CHECK(std::get<ev::results_created>(events[0].data).count == 1);
  CHECK(std::get<ev::results_created>(events[0].data).reason == "inconclusive");
  REQUIRE(f.wu(id).results.size() == 3);
  CHECK(f.wu(id).results[2].state == result_state::unsent);
  CHECK(f.wu(id).state == wu_state::active);
  // Neither host gets the new replica; a third host does, and agrees with the first.
  CHECK(f.select(f.anon_request(h1, 1e6)).empty());
  CHECK(f.select(f.anon_request(h2, 1e6)).empty());
  auto r2 = f.give_one(h3);
  CHECK(r2 == result_ref{id, 2});
  events = f.report(r2, h3, true, "good");
  REQUIRE(kinds(events)
          == std::vector<std::uint16_t>{ev::workunit_validated::kind, ev::autoflops_sampled::kind,
                                        ev::workunit_assimilated::kind});
  const auto& wu = f.wu(id);
  CHECK(wu.state == wu_state::assimilated);
  CHECK(wu.canonical == std::optional<std::uint32_t>{0});
  CHECK(wu.results[0].validation == validate_state::valid);
  CHECK(wu.results[1].validation == validate_state::invalid);
  CHECK(wu.results[2].validation == validate_state::valid);
}

TEST_CASE("transition: client errors get replacements", "[project_logic]") {
  logic_fixture f;
  auto id = f.create_one(spec("wu"));
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  auto events = f.report(r0, h1, false);
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::results_created::kind});
  CHECK(std::get<ev::results_created>(events[0].data).count == 1);
  CHECK(std::get<ev::results_created>(events[0].data).reason == "replacing errors or timeouts");
  CHECK(f.wu(id).results.size() == 3);
  CHECK(f.wu(id).results[0].outcome == result_outcome::client_error);
  events = f.report(r1, h2, false);
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::results_created::kind});
  CHECK(f.wu(id).results.size() == 4);
  CHECK(f.wu(id).state == wu_state::active);
}

TEST_CASE("transition: more errors than max_error_results fail the workunit", "[project_logic]") {
  logic_fixture f;
  auto w = spec("wu");
  w.min_quorum = 1;
  w.target_nresults = 1;
  w.max_error_results = 1;
  auto id = f.create_one(w);
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  // One error is allowed: a replacement.
  auto events = f.report(f.give_one(h1), h1, false);
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::results_created::kind});
  // The second is one too many.
  events = f.report(f.give_one(h2), h2, false);
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::workunit_failed::kind});
  CHECK(std::get<ev::workunit_failed>(events[0].data).reason.find("too many errors")
        != std::string::npos);
  CHECK(f.wu(id).state == wu_state::failed);
  CHECK(f.logic.state.counters.workunits_failed == 1);
  CHECK(f.select(f.anon_request(f.new_host(), 1e9)).empty());
}

TEST_CASE("transition: reaching max_total_results fails the workunit", "[project_logic]") {
  logic_fixture f;
  auto w = spec("wu");
  w.min_quorum = 1;
  w.target_nresults = 1;
  w.max_error_results = 5;
  w.max_total_results = 2;
  auto id = f.create_one(w);
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto events = f.report(f.give_one(h1), h1, false);
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::results_created::kind});
  CHECK(f.wu(id).results.size() == 2);
  events = f.report(f.give_one(h2), h2, false);
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::workunit_failed::kind});
  CHECK(std::get<ev::workunit_failed>(events[0].data).reason == "too many total results");
  CHECK(f.wu(id).results.size() == 2);
  CHECK(f.wu(id).state == wu_state::failed);
}

TEST_CASE("transition: too many disagreeing successes fail the workunit", "[project_logic]") {
  logic_fixture f;
  auto w = spec("wu");
  w.max_success_results = 2;
  auto id = f.create_one(w);
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto h3 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  f.report(r0, h1, true, "x");
  f.report(r1, h2, true, "y");
  auto events = f.report(f.give_one(h3), h3, true, "z");
  REQUIRE(kinds(events) == std::vector<std::uint16_t>{ev::workunit_failed::kind});
  CHECK(f.wu(id).state == wu_state::failed);
}

TEST_CASE("transition: accept_all validates differing outputs", "[project_logic]") {
  auto cfg = demo_project();
  cfg.apps[0].validator = config::validator_kind::accept_all;
  logic_fixture f(cfg);
  auto id = f.create_one(spec("wu"));
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  f.report(r0, h1, true, "one");
  auto events = f.report(r1, h2, true, "two");
  REQUIRE(kinds(events)
          == std::vector<std::uint16_t>{ev::workunit_validated::kind, ev::autoflops_sampled::kind,
                                        ev::workunit_assimilated::kind});
  CHECK(f.wu(id).state == wu_state::assimilated);
  CHECK(f.wu(id).results[0].validation == validate_state::valid);
  CHECK(f.wu(id).results[1].validation == validate_state::valid);
}

TEST_CASE("transition: a late success is checked against the canonical result", "[project_logic]") {
  // Three replicas, quorum 2: two agree and the workunit is done while the third is still
  // out. When the third comes back, the validator must judge it against the canonical result
  // (so that its host and app version get their verdict), as BOINC's validator does.
  logic_fixture f;
  auto w = spec("wu");
  w.target_nresults = 3;
  auto id = f.create_one(w);
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto h3 = f.new_host();
  auto h4 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  auto r2 = f.give_one(h3);
  f.report(r0, h1, true, "good");
  auto done = f.report(r1, h2, true, "good");
  REQUIRE(kinds(done)
          == std::vector<std::uint16_t>{ev::workunit_validated::kind, ev::autoflops_sampled::kind,
                                        ev::workunit_assimilated::kind});
  CHECK(f.wu(id).results[2].state == result_state::in_progress);
  // No one else gets a replica of a finished workunit.
  CHECK(f.select(f.anon_request(h4, 1e9)).empty());
  auto late = f.report(r2, h3, true, "good");
  REQUIRE(kinds(late) == std::vector<std::uint16_t>{ev::workunit_validated::kind});
  const auto& v = std::get<ev::workunit_validated>(late[0].data);
  CHECK_FALSE(v.canonical.has_value());
  REQUIRE(v.verdicts.size() == 1);
  CHECK(v.verdicts[0].index == r2.index);
  CHECK(v.verdicts[0].valid);
  CHECK(v.verdicts[0].host == h3);
  CHECK(f.wu(id).results[2].validation == validate_state::valid);
  CHECK(f.wu(id).canonical == std::optional<std::uint32_t>{0});
}

TEST_CASE("transition: a late disagreeing success is invalid", "[project_logic]") {
  logic_fixture f;
  auto w = spec("wu");
  w.target_nresults = 3;
  auto id = f.create_one(w);
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  auto h3 = f.new_host();
  auto r0 = f.give_one(h1);
  auto r1 = f.give_one(h2);
  auto r2 = f.give_one(h3);
  f.report(r0, h1, true, "good");
  f.report(r1, h2, true, "good");
  auto late = f.report(r2, h3, true, "bad");
  REQUIRE(kinds(late) == std::vector<std::uint16_t>{ev::workunit_validated::kind});
  CHECK(f.wu(id).results[2].validation == validate_state::invalid);
}

// -- overdue ------------------------------------------------------------------

TEST_CASE("overdue returns results past their deadline, by host, once", "[project_logic]") {
  logic_fixture f;
  f.create({spec("a"), spec("b"), spec("c")});
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  // Host 1 gets a_0 and b_0 now; host 2 gets a_1 an hour later; host 1 reports b_0.
  REQUIRE(f.select(f.anon_request(h1, 1.5 * one_job_secs)).size() == 2);
  f.now += 3600 * us_per_second;
  auto later = f.give_one(h2);
  CHECK(f.logic.state.result_name(later) == "a_1");
  f.report(result_ref{f.logic.state.wu_by_name.at("b"), 0}, h1, true);
  auto deadline1 = t0 + 604800 * us_per_second;
  CHECK(f.logic.overdue(deadline1 - 1).empty());
  auto due = f.logic.overdue(deadline1);
  REQUIRE(due.size() == 1);
  CHECK(due.at(h1) == std::vector<std::string>{"a_0"});
  CHECK(f.logic.overdue(deadline1).empty());
  auto deadline2 = deadline1 + 3600 * us_per_second;
  due = f.logic.overdue(deadline2 + 10);
  REQUIRE(due.size() == 1);
  CHECK(due.at(h2) == std::vector<std::string>{"a_1"});
  CHECK(f.logic.overdue(deadline2 + 3600 * us_per_second).empty());
}

TEST_CASE("overdue groups several results of one host", "[project_logic]") {
  logic_fixture f;
  f.create({spec("a"), spec("b"), spec("c")});
  auto h1 = f.new_host();
  auto h2 = f.new_host();
  REQUIRE(f.select(f.anon_request(h1, 0, 2)).size() == 2);
  REQUIRE(f.select(f.anon_request(h2, 0, 1)).size() == 1);
  auto due = f.logic.overdue(t0 + 604800 * us_per_second + 1);
  REQUIRE(due.size() == 2);
  auto names = due.at(h1);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"a_0", "b_0"});
  CHECK(due.at(h2) == std::vector<std::string>{"a_1"});
}
