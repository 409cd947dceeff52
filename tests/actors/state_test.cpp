/// Tests of actors/state: every pure apply function, the world that routes events to the
/// states, and snapshots.

#include "../support/temp_dir.hpp"
#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/snapshot_load.hpp"
#include "actors/state.hpp"
#include "storage/codec.hpp"
#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/keys.hpp"

#include <catch2/catch.hpp>
#include <rocksdb/db.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second;
constexpr time_us hour = 3600 * us_per_second;

event make(payload p, time_us t = t0, std::uint16_t project = 0, std::uint64_t seq = 0) {
  event e;
  e.seq = seq;
  e.time = t;
  e.project = project;
  e.data = std::move(p);
  return e;
}

app_rec test_app() {
  app_rec a;
  a.id = 1;
  a.name = "testapp";
  a.versions = {app_version_rec{1, "x86_64-pc-linux-gnu", 100, "", 1, 0, 0},
                app_version_rec{2, "x86_64-pc-linux-gnu", 101, "mt", 4, 0, 0}};
  return a;
}

wu_params params(int target = 2) {
  wu_params p;
  p.rsc_fpops_est = 1e12;
  p.rsc_fpops_bound = 1e13;
  p.delay_bound = 3600;
  p.min_quorum = 2;
  p.target_nresults = target;
  p.max_error_results = 3;
  p.max_total_results = 10;
  p.max_success_results = 6;
  return p;
}

version_echo echo1() {
  return version_echo{1, "x86_64-pc-linux-gnu", 100, ""};
}

report_rec ok_report(double elapsed = 100, std::string md5 = "aaaa") {
  report_rec r;
  r.success = true;
  r.client_state = 5;
  r.elapsed = elapsed;
  r.cpu = elapsed - 1;
  r.outputs = {file_rec{"out", 10, std::move(md5)}};
  return r;
}

report_rec error_report() {
  report_rec r;
  r.success = false;
  r.client_state = 3;
  r.exit_status = 1;
  r.elapsed = 5;
  r.cpu = 4;
  return r;
}

/// A project with one app, one user and two hosts.
project_state configured() {
  project_state s;
  apply(s, make(ev::project_configured{"demo", "Demo", {test_app()}}));
  apply(s, make(ev::user_created{1, "demo", "demo@example.org", "auth-1"}));
  apply(s, make(ev::host_registered{1, 1, {}}));
  apply(s, make(ev::host_registered{2, 1, {}}));
  return s;
}

/// The ids of the unsent results queued for an app that are still unsent.
std::vector<result_ref> unsent_of(const project_state& s, std::uint32_t app = 1) {
  std::vector<result_ref> out;
  auto q = s.unsent.find(app);
  if (q == s.unsent.end())
    return out;
  for (auto r : q->second)
    if (auto rec = s.result(r); rec && rec->state == result_state::unsent)
      out.push_back(r);
  return out;
}

/// The deadline index as a sorted list.
std::vector<std::pair<time_us, result_ref>> deadlines_of(project_state s) {
  std::vector<std::pair<time_us, result_ref>> out;
  while (!s.deadlines.empty()) {
    out.push_back(s.deadlines.top());
    s.deadlines.pop();
  }
  return out;
}

/// The life of one workunit (quorum 2) in events, in seq order, with two hosts agreeing.
std::vector<event> history() {
  std::vector<event> out;
  std::uint64_t seq = 0;
  auto add = [&](payload p, time_us t) { out.push_back(make(std::move(p), t, 0, ++seq)); };
  add(ev::project_configured{"demo", "Demo", {test_app()}}, t0);
  add(ev::user_created{1, "demo", "demo@example.org", "auth-1"}, t0);
  host_info_rec info;
  info.p_ncpus = 2;
  info.p_fpops = 1e9;
  add(ev::host_registered{1, 1, info}, t0 + 1);
  add(ev::host_registered{2, 1, info}, t0 + 2);
  add(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}, t0 + 3);
  add(ev::workunit_created{2, "wu_b", 1, params(), 2, "admin"}, t0 + 3);
  add(ev::result_dispatched{{1, 0}, 1, t0 + 4 + hour, echo1()}, t0 + 4);
  add(ev::result_dispatched{{1, 1}, 2, t0 + 5 + hour, echo1()}, t0 + 5);
  add(ev::result_dispatched{{2, 0}, 1, t0 + 6 + hour, echo1()}, t0 + 6);
  add(ev::result_reported{{1, 0}, 1, ok_report(100)}, t0 + 100);
  add(ev::result_reported{{1, 1}, 2, ok_report(120)}, t0 + 101);
  add(ev::workunit_validated{1,
                             0u,
                             {verdict{0, true, 1, 1, 100, 99}, verdict{1, true, 2, 1, 120, 119}}},
      t0 + 101);
  add(ev::workunit_assimilated{1, 0}, t0 + 101);
  add(ev::result_timed_out{{2, 0}, 1}, t0 + 2 * hour);
  add(ev::results_created{2, 1, "replacing errors or timeouts"}, t0 + 2 * hour);
  return out;
}

world replay(const std::vector<event>& events) {
  world w;
  for (const auto& e : events)
    apply(w, e);
  return w;
}

} // namespace

// -- project_state ------------------------------------------------------------

TEST_CASE("project_configured sets the name and the apps", "[state]") {
  project_state s;
  apply(s, make(ev::project_configured{"demo", "Demo project", {test_app()}}));
  CHECK(s.name == "demo");
  CHECK(s.long_name == "Demo project");
  REQUIRE(s.apps.size() == 1);
  CHECK(s.app(1)->name == "testapp");
  CHECK(s.app("testapp") == s.app(1));
  CHECK(s.app(2) == nullptr);
  CHECK(s.app("other") == nullptr);
  // A later configuration replaces the apps.
  auto more = test_app();
  more.id = 2;
  more.name = "second";
  apply(s, make(ev::project_configured{"demo", "Renamed", {test_app(), more}}));
  CHECK(s.long_name == "Renamed");
  CHECK(s.apps.size() == 2);
  CHECK(s.app("second")->id == 2);
}

TEST_CASE("apps, versions and code-signing keys added while the server runs", "[state]") {
  world w;
  apply(w, make(ev::project_configured{"demo", "Demo project", {test_app()}}, t0, 0, 1));
  auto second = test_app();
  second.id = 2;
  second.name = "second";
  second.versions.clear();
  apply(w, make(ev::app_added{second, "alice"}, t0, 0, 2));
  // An app whose id is not the next one is not added (a decision never makes one).
  auto stray = second;
  stray.id = 7;
  stray.name = "stray";
  apply(w, make(ev::app_added{stray, "alice"}, t0, 0, 3));
  app_version_rec v{3, "x86_64-pc-linux-gnu", 200, "", 1, 0, 0};
  v.api_version = "7.22.0";
  v.files = {app_file_rec{"second_200", "second", 10, "0123456789abcdef0123456789abcdef", "sig\n",
                          true, true, false}};
  apply(w, make(ev::app_version_added{2, v, "alice"}, t0 + hour, 0, 4));
  apply(w, make(ev::app_version_deprecated{1, 2, true, "bob"}, t0 + hour, 0, 5));
  apply(w, make(ev::code_sign_key_added{"key one", "", "carol"}, t0 + 2 * hour, 0, 6));
  apply(w, make(ev::code_sign_key_added{"key two", "two signed by one", "carol"}, t0 + 3 * hour, 0,
                7));
  const auto& p = w.projects.at(0).project;
  REQUIRE(p.apps.size() == 2);
  CHECK(p.app("second")->id == 2);
  CHECK(p.app("stray") == nullptr);
  REQUIRE(p.app(2)->versions.size() == 1);
  CHECK(p.app(2)->versions[0] == v);
  CHECK(p.app(1)->versions.at(1).deprecated);
  CHECK_FALSE(p.app(1)->versions.at(0).deprecated);
  REQUIRE(p.code_sign_keys.size() == 2);
  CHECK(p.code_sign_keys.back().public_key == "key two");
  CHECK(p.code_sign_keys.back().signature == "two signed by one");
  CHECK(p.code_sign_keys.back().added == t0 + 3 * hour);
  // The new version has its statistics, as a configured one would.
  CHECK(w.projects[0].app_versions.at(3).id == 3);
  // Offered again.
  apply(w, make(ev::app_version_deprecated{1, 2, false, "bob"}, t0 + 4 * hour, 0, 8));
  CHECK_FALSE(w.projects[0].project.app(1)->versions.at(1).deprecated);
  // All of it survives a snapshot.
  auto back = decode_snapshot(encode_snapshot(w));
  REQUIRE(back.has_value());
  CHECK(*back == w);
  CHECK(back->projects.at(0).project.code_sign_keys.size() == 2);
  CHECK(back->projects[0].project.app(2)->versions.at(0).files.at(0).main_program);
}

TEST_CASE("user_created adds the account and indexes its authenticator", "[state]") {
  project_state s;
  apply(s, make(ev::user_created{5, "alice", "a@example.org", "key-a"}, t0 + 7));
  REQUIRE(s.users.count(5) == 1);
  CHECK(s.users.at(5) == user_rec{5, "alice", "a@example.org", "key-a", t0 + 7});
  CHECK(s.user_by_auth.at("key-a") == 5);
  CHECK(s.next_user == 6);
  // A lower id does not move next_user back.
  apply(s, make(ev::user_created{2, "bob", "b@example.org", "key-b"}));
  CHECK(s.user_by_auth.at("key-b") == 2);
  CHECK(s.next_user == 6);
}

TEST_CASE("host_registered records the owner and advances next_host", "[state]") {
  project_state s;
  apply(s, make(ev::host_registered{3, 1, {}}, t0 + 9));
  CHECK(s.hosts.at(3) == host_reg{3, 1, t0 + 9});
  CHECK(s.next_host == 4);
  apply(s, make(ev::host_registered{1, 2, {}}));
  CHECK(s.next_host == 4);
  CHECK(s.hosts.size() == 2);
}

TEST_CASE("workunit_created adds unsent results, queues them and counts", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{4, "wu_x", 1, params(3), 3, "admin"}, t0 + 11));
  const auto* wu = s.workunit(4);
  REQUIRE(wu != nullptr);
  CHECK(wu->name == "wu_x");
  CHECK(wu->app == 1);
  CHECK(*wu->params == params(3));
  CHECK(wu->state == wu_state::active);
  CHECK(wu->created == t0 + 11);
  CHECK_FALSE(wu->canonical.has_value());
  REQUIRE(wu->results.size() == 3);
  for (const auto& r : wu->results) {
    CHECK(r.state == result_state::unsent);
    CHECK(r.outcome == result_outcome::none);
  }
  CHECK(unsent_of(s) == std::vector<result_ref>{{4, 0}, {4, 1}, {4, 2}});
  CHECK(s.wu_by_name.at("wu_x") == 4);
  CHECK(s.next_wu == 5);
  CHECK(s.counters.workunits_created == 1);
  CHECK(s.counters.results_created == 3);
  CHECK(s.active_workunits == 1);
  // Result names map back to results.
  CHECK(s.result_name({4, 2}) == "wu_x_2");
  CHECK(s.parse_result_name("wu_x_2") == std::optional<result_ref>{result_ref{4, 2}});
  CHECK_FALSE(s.parse_result_name("wu_x_3").has_value());
  CHECK_FALSE(s.parse_result_name("wu_y_0").has_value());
  CHECK_FALSE(s.parse_result_name("wu_x_").has_value());
  CHECK_FALSE(s.parse_result_name("wu_x_1a").has_value());
}

TEST_CASE("results_created adds replicas to an existing workunit only", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}));
  apply(s, make(ev::results_created{1, 2, "inconclusive"}));
  REQUIRE(s.workunit(1)->results.size() == 4);
  CHECK(s.workunit(1)->results[3].state == result_state::unsent);
  CHECK(unsent_of(s) == std::vector<result_ref>{{1, 0}, {1, 1}, {1, 2}, {1, 3}});
  CHECK(s.counters.results_created == 4);
  auto before = s;
  apply(s, make(ev::results_created{99, 2, "inconclusive"}));
  CHECK(s == before);
  CHECK(s.counters.results_created == 4);
}

TEST_CASE("result_dispatched moves only an unsent result to a host", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}));
  apply(s, make(ev::result_dispatched{{1, 0}, 1, t0 + 50 + hour, echo1()}, t0 + 50));
  const auto* r = s.result({1, 0});
  CHECK(r->state == result_state::in_progress);
  CHECK(r->host == 1);
  CHECK(r->sent == t0 + 50);
  CHECK(r->deadline == t0 + 50 + hour);
  CHECK(r->version == echo1());
  CHECK(s.counters.results_dispatched == 1);
  CHECK(unsent_of(s) == std::vector<result_ref>{{1, 1}});
  CHECK(deadlines_of(s) == std::vector<std::pair<time_us, result_ref>>{{t0 + 50 + hour, {1, 0}}});
  // The same result again, to another host: nothing changes.
  apply(s, make(ev::result_dispatched{{1, 0}, 2, t0 + 60 + hour, echo1()}, t0 + 60));
  CHECK(s.result({1, 0})->host == 1);
  CHECK(s.result({1, 0})->deadline == t0 + 50 + hour);
  CHECK(s.counters.results_dispatched == 1);
  // A result that does not exist: nothing changes.
  auto before = s;
  apply(s, make(ev::result_dispatched{{1, 7}, 2, t0, echo1()}));
  apply(s, make(ev::result_dispatched{{5, 0}, 2, t0, echo1()}));
  CHECK(s == before);
}

TEST_CASE("result_reported applies only to a result in progress on that host", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}));
  apply(s, make(ev::result_dispatched{{1, 0}, 1, t0 + hour, echo1()}));
  apply(s, make(ev::result_dispatched{{1, 1}, 2, t0 + hour, echo1()}));
  SECTION("from another host: ignored") {
    auto before = s;
    apply(s, make(ev::result_reported{{1, 0}, 2, ok_report()}, t0 + 10));
    CHECK(s == before);
    CHECK(s.result({1, 0})->state == result_state::in_progress);
  }
  SECTION("success") {
    apply(s, make(ev::result_reported{{1, 0}, 1, ok_report(77)}, t0 + 10));
    const auto* r = s.result({1, 0});
    CHECK(r->state == result_state::over);
    CHECK(r->outcome == result_outcome::success);
    CHECK(r->validation == validate_state::init);
    CHECK(r->received == t0 + 10);
    CHECK(r->report == ok_report(77));
    CHECK(s.counters.results_reported == 1);
    // Reported twice: applied once.
    apply(s, make(ev::result_reported{{1, 0}, 1, error_report()}, t0 + 20));
    CHECK(s.result({1, 0})->outcome == result_outcome::success);
    CHECK(s.result({1, 0})->received == t0 + 10);
    CHECK(s.counters.results_reported == 1);
  }
  SECTION("client error") {
    apply(s, make(ev::result_reported{{1, 1}, 2, error_report()}, t0 + 10));
    CHECK(s.result({1, 1})->state == result_state::over);
    CHECK(s.result({1, 1})->outcome == result_outcome::client_error);
    CHECK(s.result({1, 1})->report->exit_status == 1);
    CHECK(s.counters.results_reported == 1);
  }
  SECTION("an unsent result: ignored") {
    apply(s, make(ev::results_created{1, 1, "x"}));
    auto before = s;
    apply(s, make(ev::result_reported{{1, 2}, 1, ok_report()}));
    CHECK(s == before);
  }
}

TEST_CASE("result_timed_out ends only a result in progress", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}));
  apply(s, make(ev::result_dispatched{{1, 0}, 1, t0 + hour, echo1()}));
  apply(s, make(ev::result_timed_out{{1, 0}, 1}, t0 + 2 * hour));
  CHECK(s.result({1, 0})->state == result_state::over);
  CHECK(s.result({1, 0})->outcome == result_outcome::no_reply);
  CHECK(s.counters.results_timed_out == 1);
  // Again, or on an unsent result: nothing.
  auto before = s;
  apply(s, make(ev::result_timed_out{{1, 0}, 1}));
  apply(s, make(ev::result_timed_out{{1, 1}, 1}));
  CHECK(s == before);
  CHECK(s.result({1, 1})->state == result_state::unsent);
  // A late report of a timed-out result is not applied.
  apply(s, make(ev::result_reported{{1, 0}, 1, ok_report()}));
  CHECK(s.result({1, 0})->outcome == result_outcome::no_reply);
  CHECK(s.counters.results_reported == 0);
}

TEST_CASE("workunit_validated records verdicts and the canonical result once", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(4), 4, "admin"}));
  apply(s, make(ev::result_dispatched{{1, 0}, 1, t0 + hour, echo1()}));
  apply(s, make(ev::result_dispatched{{1, 1}, 2, t0 + hour, echo1()}));
  apply(s, make(ev::result_dispatched{{1, 2}, 3, t0 + hour, echo1()}));
  apply(s, make(ev::result_reported{{1, 0}, 1, ok_report(10, "a")}));
  apply(s, make(ev::result_reported{{1, 1}, 2, ok_report(10, "b")}));
  SECTION("verdicts without a canonical result") {
    apply(s, make(ev::workunit_validated{1, std::nullopt, {verdict{1, false, 2, 1, 10, 9}}}));
    CHECK(s.result({1, 1})->validation == validate_state::invalid);
    CHECK(s.result({1, 0})->validation == validate_state::init);
    CHECK(s.workunit(1)->state == wu_state::active);
    CHECK(s.counters.workunits_validated == 0);
  }
  SECTION("a canonical result: unsent replicas are no longer needed") {
    apply(s, make(ev::workunit_validated{
               1, 0u, {verdict{0, true, 1, 1, 10, 9}, verdict{1, false, 2, 1, 10, 9}}}));
    const auto* wu = s.workunit(1);
    CHECK(wu->state == wu_state::validated);
    CHECK(wu->canonical == std::optional<std::uint32_t>{0});
    CHECK(wu->results[0].validation == validate_state::valid);
    CHECK(wu->results[1].validation == validate_state::invalid);
    // Result 2 is still out on host 3; result 3 was never sent.
    CHECK(wu->results[2].state == result_state::in_progress);
    CHECK(wu->results[3].state == result_state::over);
    CHECK(wu->results[3].outcome == result_outcome::didnt_need);
    CHECK(unsent_of(s).empty());
    CHECK(s.counters.workunits_validated == 1);
    // A second validation with another canonical does not replace the first.
    apply(s, make(ev::workunit_validated{1, 1u, {verdict{2, true, 3, 1, 10, 9}}}));
    CHECK(s.workunit(1)->canonical == std::optional<std::uint32_t>{0});
    CHECK(s.workunit(1)->results[2].validation == validate_state::valid);
    CHECK(s.counters.workunits_validated == 1);
  }
  SECTION("an unknown workunit or verdict index changes nothing") {
    auto before = s;
    apply(s, make(ev::workunit_validated{9, 0u, {verdict{0, true, 1, 1, 10, 9}}}));
    apply(s, make(ev::workunit_validated{1, std::nullopt, {verdict{17, true, 1, 1, 10, 9}}}));
    CHECK(s == before);
  }
}

TEST_CASE("workunit_assimilated finishes a workunit once", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}));
  apply(s, make(ev::workunit_validated{1, 0u, {}}));
  CHECK(s.active_workunits == 1);
  apply(s, make(ev::workunit_assimilated{1, 0}, t0 + 500));
  CHECK(s.workunit(1)->state == wu_state::assimilated);
  CHECK(s.workunit(1)->finished == t0 + 500);
  CHECK(s.counters.workunits_assimilated == 1);
  CHECK(s.active_workunits == 0);
  apply(s, make(ev::workunit_assimilated{1, 0}, t0 + 900));
  CHECK(s.workunit(1)->finished == t0 + 500);
  CHECK(s.counters.workunits_assimilated == 1);
  apply(s, make(ev::workunit_assimilated{42, 0}));
  CHECK(s.counters.workunits_assimilated == 1);
}

TEST_CASE("workunit_failed gives up on a workunit once", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "wu_a", 1, params(), 2, "admin"}));
  apply(s, make(ev::workunit_created{2, "wu_b", 1, params(), 2, "admin"}));
  apply(s, make(ev::result_dispatched{{1, 0}, 1, t0 + hour, echo1()}));
  apply(s, make(ev::workunit_failed{1, "too many errors (4)"}, t0 + 700));
  const auto* wu = s.workunit(1);
  CHECK(wu->state == wu_state::failed);
  CHECK(wu->failure == "too many errors (4)");
  CHECK(wu->finished == t0 + 700);
  CHECK(wu->results[0].state == result_state::in_progress);
  CHECK(wu->results[1].outcome == result_outcome::didnt_need);
  CHECK(unsent_of(s) == std::vector<result_ref>{{2, 0}, {2, 1}});
  CHECK(s.counters.workunits_failed == 1);
  CHECK(s.active_workunits == 1);
  apply(s, make(ev::workunit_failed{1, "again"}, t0 + 800));
  CHECK(s.workunit(1)->failure == "too many errors (4)");
  CHECK(s.counters.workunits_failed == 1);
  CHECK(s.active_workunits == 1);
}

// -- host_state ---------------------------------------------------------------

TEST_CASE("host apply: registration and description", "[state][host]") {
  host_state h;
  host_info_rec info;
  info.p_ncpus = 4;
  info.p_fpops = 2e9;
  apply(h, make(ev::host_registered{7, 3, info}, t0 + 1), {});
  CHECK(h.id == 7);
  CHECK(h.user == 3);
  CHECK(h.created == t0 + 1);
  CHECK(h.last_rpc == t0 + 1);
  CHECK(h.info == info);
  info.p_ncpus = 8;
  apply(h, make(ev::host_described{7, info}, t0 + 5), {});
  CHECK(h.info.p_ncpus == 8);
  CHECK(h.created == t0 + 1);
  CHECK(h.last_rpc == t0 + 5);
}

TEST_CASE("host apply: a host remembers the results it finished last", "[state][host]") {
  host_state h;
  apply(h, make(ev::host_registered{1, 1, {}}), {});
  for (id_type wu = 1; wu <= 14; ++wu) {
    auto name = "wu_" + std::to_string(wu) + "_0";
    apply(h, make(ev::result_dispatched{{wu, 0}, 1, t0 + hour, echo1()}), name);
    if (wu == 14)
      apply(h, make(ev::result_timed_out{{wu, 0}, 1}, t0 + hour), name);
    else if (wu == 13)
      apply(h, make(ev::result_written_off{{wu, 0}, 1}, t0 + 2), name);
    else
      apply(h, make(ev::result_reported{{wu, 0}, 1, ok_report(100)}, t0 + 1), name);
  }
  // A report of a result it no longer holds changes nothing.
  apply(h, make(ev::result_reported{{1, 0}, 1, ok_report(100)}, t0 + 3), "wu_1_0");
  REQUIRE(h.finished.size() == host_finished_kept);
  CHECK(h.finished.front() == result_ref{5, 0});
  CHECK(h.finished.back() == result_ref{14, 0});
  CHECK(h.in_progress.empty());
}

TEST_CASE("host apply: results in progress and host_app_version counts", "[state][host]") {
  host_state h;
  apply(h, make(ev::host_registered{1, 1, {}}), {});
  apply(h, make(ev::result_dispatched{{1, 0}, 1, t0 + hour, echo1()}, t0 + 10), "wu_a_0");
  apply(h, make(ev::result_dispatched{{2, 0}, 1, t0 + hour, echo1()}, t0 + 10), "wu_b_0");
  apply(h, make(ev::result_dispatched{{3, 0}, 1, t0 + hour, version_echo{2, "p", 101, "mt"}}),
        "wu_c_0");
  apply(h, make(ev::result_dispatched{{4, 0}, 1, t0 + hour, echo1()}), "wu_d_0");
  REQUIRE(h.in_progress.size() == 4);
  CHECK(h.in_progress.at("wu_a_0") == held_result{{1, 0}, t0 + hour, 1, t0 + 10});
  CHECK(h.in_progress.at("wu_c_0").app_version_id == 2);
  CHECK(h.app_versions.at(1).n_sent == 3);
  CHECK(h.app_versions.at(2).n_sent == 1);
  CHECK(h.last_rpc == t0);

  // A success adds its elapsed time to the average.
  apply(h, make(ev::result_reported{{1, 0}, 1, ok_report(100)}, t0 + 20), "wu_a_0");
  CHECK(h.in_progress.count("wu_a_0") == 0);
  CHECK(h.app_versions.at(1).n_success == 1);
  CHECK(h.app_versions.at(1).elapsed_sum == 100);
  CHECK(h.app_versions.at(1).elapsed_n == 1);
  CHECK(h.results_reported == 1);
  CHECK(h.last_rpc == t0 + 20);

  // A success with an implausible elapsed time counts, but is not averaged.
  auto flagged = ok_report(1e12);
  flagged.flags = flag_bad_elapsed;
  apply(h, make(ev::result_reported{{2, 0}, 1, flagged}, t0 + 30), "wu_b_0");
  CHECK(h.app_versions.at(1).n_success == 2);
  CHECK(h.app_versions.at(1).elapsed_sum == 100);
  CHECK(h.app_versions.at(1).elapsed_n == 1);

  // An error counts as an error, with no elapsed time.
  apply(h, make(ev::result_reported{{3, 0}, 1, error_report()}, t0 + 40), "wu_c_0");
  CHECK(h.app_versions.at(2).n_error == 1);
  CHECK(h.app_versions.at(2).elapsed_n == 0);
  CHECK(h.results_reported == 3);

  // A report of a result the host does not hold changes nothing.
  auto before = h;
  apply(h, make(ev::result_reported{{1, 0}, 1, ok_report(5)}, t0 + 50), "wu_a_0");
  apply(h, make(ev::result_timed_out{{9, 0}, 1}, t0 + 50), "wu_z_0");
  CHECK(h == before);

  // A timeout removes the result and counts.
  apply(h, make(ev::result_timed_out{{4, 0}, 1}, t0 + 2 * hour), "wu_d_0");
  CHECK(h.in_progress.empty());
  CHECK(h.app_versions.at(1).n_timeout == 1);
  CHECK(h.results_reported == 3);
}

// -- app_version_state --------------------------------------------------------

TEST_CASE("app version apply counts its own verdicts only", "[state][app_version]") {
  app_version_state av;
  av.id = 1;
  apply(av,
        make(ev::workunit_validated{1,
                                    0u,
                                    {verdict{0, true, 1, 1, 100, 90},
                                     verdict{1, true, 2, 1, 50, 40}, verdict{2, false, 3, 1, 10, 9},
                                     verdict{3, true, 4, 2, 1000, 999}}}));
  CHECK(av.n_valid == 2);
  CHECK(av.n_invalid == 1);
  CHECK(av.elapsed_sum == 150);
  CHECK(av.cpu_sum == 130);
  // Other events change nothing.
  auto before = av;
  apply(av, make(ev::result_reported{{1, 0}, 1, ok_report()}));
  apply(av, make(ev::workunit_assimilated{1, 0}));
  CHECK(av == before);
}

// -- world --------------------------------------------------------------------

TEST_CASE("world apply routes events to the project, the hosts and the app versions",
          "[state][world]") {
  auto w = replay(history());
  CHECK(w.seq == history().size());
  REQUIRE(w.projects.size() == 1);
  const auto& pw = w.projects[0];
  const auto& p = pw.project;
  CHECK(p.workunit(1)->state == wu_state::assimilated);
  CHECK(p.workunit(1)->canonical == std::optional<std::uint32_t>{0});
  CHECK(p.workunit(2)->results.size() == 3);
  CHECK(p.workunit(2)->results[0].outcome == result_outcome::no_reply);
  CHECK(p.counters.results_reported == 2);
  // Hosts hold their results by name and count them.
  REQUIRE(pw.hosts.size() == 2);
  CHECK(pw.hosts.at(1).in_progress.empty());
  CHECK(pw.hosts.at(1).app_versions.at(1).n_sent == 2);
  CHECK(pw.hosts.at(1).app_versions.at(1).n_success == 1);
  CHECK(pw.hosts.at(1).app_versions.at(1).n_timeout == 1);
  CHECK(pw.hosts.at(2).app_versions.at(1).elapsed_sum == 120);
  CHECK(pw.hosts.at(2).info.p_fpops == 1e9);
  // Every configured version has its statistics; the validation counted on version 1.
  REQUIRE(pw.app_versions.size() == 2);
  CHECK(pw.app_versions.at(1).id == 1);
  CHECK(pw.app_versions.at(1).n_valid == 2);
  CHECK(pw.app_versions.at(1).elapsed_sum == 220);
  CHECK(pw.app_versions.at(2).id == 2);
  CHECK(pw.app_versions.at(2).n_valid == 0);
}

TEST_CASE("world apply keeps projects apart by index", "[state][world]") {
  world w;
  apply(w, make(ev::project_configured{"first", "First", {test_app()}}, t0, 0, 1));
  apply(w, make(ev::project_configured{"second", "Second", {test_app()}}, t0, 2, 2));
  apply(w, make(ev::user_created{1, "u", "e", "key"}, t0, 2, 3));
  REQUIRE(w.projects.size() == 3);
  CHECK(w.projects[0].project.name == "first");
  CHECK(w.projects[2].project.name == "second");
  CHECK(w.projects[2].project.index == 2);
  CHECK(w.projects[2].project.users.size() == 1);
  CHECK(w.projects[0].project.users.empty());
  CHECK(w.seq == 3);
}

TEST_CASE("apply is deterministic: the same events give equal worlds", "[state][world]") {
  auto events = history();
  auto a = replay(events);
  auto b = replay(events);
  CHECK(a == b);
  CHECK(encode_snapshot(a) == encode_snapshot(b));
  // Going through the durable encoding first gives the same world too.
  std::vector<event> decoded;
  for (const auto& e : events) {
    auto back = from_record(to_record(e));
    REQUIRE(back.has_value());
    decoded.push_back(*back);
  }
  CHECK(replay(decoded) == a);
  // And a different history gives a different world.
  events.pop_back();
  CHECK_FALSE(replay(events) == a);
}

TEST_CASE("generated workunit names are found without being indexed", "[state]") {
  auto s = configured();
  apply(s, make(ev::workunit_created{1, "testapp_wu1", 1, params(2), 2, "admin"}));
  apply(s, make(ev::workunit_created{2, "custom", 1, params(2), 2, "admin"}));
  // A custom name that looks generated, but for another id, is an ordinary custom name.
  apply(s, make(ev::workunit_created{3, "testapp_wu7", 1, params(2), 2, "admin"}));
  CHECK(s.wu_by_name.size() == 2);
  CHECK(s.wu_by_name.count("testapp_wu1") == 0);
  REQUIRE(s.find_workunit("testapp_wu1") != nullptr);
  CHECK(s.find_workunit("testapp_wu1")->id == 1);
  CHECK(s.find_workunit("custom")->id == 2);
  CHECK(s.find_workunit("testapp_wu7")->id == 3);
  CHECK(s.find_workunit("testapp_wu3") == nullptr); // wu 3 is named otherwise
  CHECK(s.find_workunit("testapp_wu01") == nullptr);
  CHECK(s.find_workunit("testapp_wu9") == nullptr);
  CHECK(s.find_workunit("other_wu1") == nullptr);
  CHECK(s.parse_result_name("testapp_wu1_1") == std::optional<result_ref>{result_ref{1, 1}});
  CHECK_FALSE(s.parse_result_name("testapp_wu1_2").has_value());
  CHECK(s.result_name({1, 0}) == "testapp_wu1_0");
  // The same after a snapshot.
  world w;
  w.projects.push_back(project_world{s, {}, {}, {}});
  auto back = decode_snapshot(encode_snapshot(w));
  REQUIRE(back.has_value());
  const auto& p = back->projects.at(0).project;
  CHECK(p.wu_by_name.size() == 2);
  CHECK(p.find_workunit("testapp_wu1")->id == 1);
  CHECK(p.parse_result_name("testapp_wu7_0") == std::optional<result_ref>{result_ref{3, 0}});
  CHECK(p == s);
}

TEST_CASE("the workunit table keeps dense and other ids in id order", "[state]") {
  wu_table t;
  CHECK(t.empty());
  CHECK(t.find(1) == t.end());
  auto seq_id = sequence_wu_id(3, 0);
  for (id_type id : {id_type{1}, id_type{2}, seq_id, id_type{3}, id_type{10}, id_type{4}}) {
    t[id].id = id;
    t[id].name = "w" + std::to_string(id);
  }
  CHECK(t.size() == 6);
  std::vector<id_type> order;
  for (const auto& [id, wu] : t) {
    CHECK(wu.id == id);
    order.push_back(id);
  }
  CHECK(order == std::vector<id_type>{1, 2, 3, 4, 10, seq_id});
  CHECK(t.at(10).name == "w10");
  CHECK(t.count(5) == 0);
  CHECK_THROWS_AS(t.at(5), std::out_of_range);
  // The next dense id after a gap: still in order.
  t[5].id = 5;
  order.clear();
  for (const auto& [id, wu] : t)
    order.push_back(id);
  CHECK(order == std::vector<id_type>{1, 2, 3, 4, 5, 10, seq_id});
  // Equality does not depend on where an id is kept.
  wu_table u;
  for (id_type id :
       {seq_id, id_type{10}, id_type{5}, id_type{4}, id_type{3}, id_type{2}, id_type{1}}) {
    u[id] = t.at(id);
  }
  CHECK(u == t);
  u[2].name = "changed";
  CHECK_FALSE(u == t);
}

TEST_CASE("compact result fields read as plain values and compare by value", "[state]") {
  result_rec a, b;
  CHECK_FALSE(a.report.has_value());
  CHECK(a.report->outputs.empty());
  CHECK(a.credit->scale_v == 1);
  a.report = report_rec{};
  CHECK_FALSE(a.report.has_value()); // an empty report takes no heap
  a.report = ok_report(5);
  CHECK(a.report.has_value());
  CHECK(a.report->elapsed == ok_report(5).elapsed);
  CHECK_FALSE(a == b);
  b = a;
  CHECK(a == b);
  a.version.platform = std::string{"x86_64-pc-linux-gnu"};
  b.version.platform = "x86_64-pc-linux-gnu";
  CHECK(a.version == b.version);
  CHECK(a.version.platform.str() == "x86_64-pc-linux-gnu");
  CHECK(a.version.platform.c_str() == b.version.platform.c_str()); // one shared copy
  // Encoded exactly as the plain strings were (events and snapshots keep their format).
  std::string plain;
  storage::writer wr{plain};
  storage::encoder enc{wr};
  enc(a.version.app_version_id, std::string{"x86_64-pc-linux-gnu"}, 0, std::string{});
  CHECK(storage::encode(a.version) == plain);
}

TEST_CASE("a result's boxed scale and outputs encode where the plain fields were", "[state]") {
  // Snapshots written before the report's scale and the received outputs moved into boxes
  // must read the same: the bytes are those of the plain members, in their old order.
  result_rec r;
  r.state = result_state::over;
  r.host = 7;
  r.report = ok_report(5);
  r.peak_flops = 3e9;
  r.probation = false;
  r.scale = reported_scale{average_var{4, 2.5}, 1234};
  r.arrived = std::vector<file_rec>{{"out_0", 10, "abc"}};
  std::string plain;
  storage::writer wr{plain};
  storage::encoder enc{wr};
  enc(r.state, r.outcome, r.validation, r.host, r.sent, r.deadline, r.received, r.version,
      *r.report, r.peak_flops, average_var{4, 2.5}, r.probation, time_us{1234}, *r.credit,
      std::vector<file_rec>{{"out_0", 10, "abc"}});
  CHECK(storage::encode(r) == plain);
  result_rec back;
  REQUIRE(storage::decode(plain, back));
  CHECK(back == r);
  CHECK(back.scale->host_pfc.avg == 2.5);
  CHECK(back.scale->scale_time == 1234);
  CHECK(back.arrived->at(0).md5 == "abc");
  // A queued result keeps none of them on the heap.
  CHECK_FALSE(result_rec{}.scale.has_value());
  CHECK_FALSE(result_rec{}.arrived.has_value());
}

// -- snapshots ----------------------------------------------------------------

TEST_CASE("snapshots round-trip and rebuild the derived indices", "[state][snapshot]") {
  auto w = replay(history());
  auto blob = encode_snapshot(w);
  CHECK(static_cast<std::uint8_t>(blob.at(0)) == snapshot_version);
  auto back = decode_snapshot(blob);
  REQUIRE(back.has_value());
  CHECK(*back == w);
  CHECK(back->seq == w.seq);
  CHECK(encode_snapshot(*back) == blob);
  const auto& p = back->projects.at(0).project;
  // Derived indices work after decoding.
  CHECK(p.parse_result_name("wu_b_2") == std::optional<result_ref>{result_ref{2, 2}});
  CHECK(p.parse_result_name("wu_a_1") == std::optional<result_ref>{result_ref{1, 1}});
  CHECK(p.user_by_auth.at("auth-1") == 1);
  CHECK(p.active_workunits == 1);
  CHECK(unsent_of(p) == unsent_of(w.projects[0].project));
  CHECK(unsent_of(p) == std::vector<result_ref>{{2, 1}, {2, 2}});
  CHECK(deadlines_of(p).empty());
}

TEST_CASE("a snapshot keeps results in progress in the deadline index", "[state][snapshot]") {
  auto events = history();
  events.resize(9); // up to the third dispatch
  auto w = replay(events);
  auto back = decode_snapshot(encode_snapshot(w));
  REQUIRE(back.has_value());
  CHECK(deadlines_of(back->projects[0].project) == deadlines_of(w.projects[0].project));
  CHECK(deadlines_of(back->projects[0].project).size() == 3);
}

TEST_CASE("decode_snapshot rejects damaged blobs", "[state][snapshot]") {
  auto blob = encode_snapshot(replay(history()));
  CHECK_FALSE(decode_snapshot("").has_value());
  CHECK_FALSE(decode_snapshot(blob.substr(0, 1)).has_value());
  CHECK_FALSE(decode_snapshot(blob.substr(0, blob.size() / 2)).has_value());
  CHECK_FALSE(decode_snapshot(blob.substr(0, blob.size() - 1)).has_value());
  auto wrong = blob;
  wrong[0] = static_cast<char>(snapshot_version + 1);
  CHECK_FALSE(decode_snapshot(wrong).has_value());
  auto trailing = blob + '\0';
  CHECK_FALSE(decode_snapshot(trailing).has_value());
}

// -- loading a snapshot from the store (actors/snapshot_load.hpp) -------------

namespace {

/// Overwrites one stored snapshot chunk of a closed store, as a damaged disk would.
void damage_chunk(const std::filesystem::path& dir, std::uint64_t seq, std::uint32_t chunk) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs{{storage::default_cf_name, {}},
                                                   {storage::events_cf_name, {}},
                                                   {storage::snapshots_cf_name, {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open({}, dir.string(), cfs, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db{raw};
  std::string value;
  auto key = storage::snapshot_chunk_key{seq, chunk}.encode();
  REQUIRE(db->Get({}, handles[2], key, &value).ok());
  value[0] = static_cast<char>(value[0] ^ 0x5a);
  REQUIRE(db->Put({}, handles[2], key, value).ok());
  for (auto* h : handles)
    static_cast<void>(db->DestroyColumnFamilyHandle(h));
  static_cast<void>(db->Close());
}

/// Flips bits of the byte at `offset` of a snapshot file, as a damaged disk would.
void damage_file_byte(const std::filesystem::path& file, std::size_t offset) {
  std::fstream f{file, std::ios::in | std::ios::out | std::ios::binary};
  REQUIRE(f);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  REQUIRE(f.get(c));
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x5a));
  REQUIRE(f.good());
}

} // namespace

TEST_CASE("a snapshot loaded while it is read equals the one decoded from the whole blob",
          "[state][snapshot]") {
  test::temp_dir dir;
  storage::store_options opts;
  opts.snapshot_chunk_bytes = 7; // many chunks: the decoder waits for bytes again and again
  // Chunked (older stores: read by a thread while decoded) and file (mapped, checked meanwhile).
  opts.snapshots = GENERATE(storage::snapshot_storage::chunks, storage::snapshot_storage::file);
  auto w = replay(history());
  auto blob = encode_snapshot(w);
  {
    auto st = storage::event_store::open(dir.path(), opts);
    REQUIRE(st);
    REQUIRE_FALSE((*st)->write_snapshot(w.seq, blob));
    auto serial = decode_snapshot(blob);
    REQUIRE(serial);
    for (int i = 0; i < 5; ++i) {
      auto loaded = load_snapshot(**st, w.seq);
      REQUIRE(loaded);
      REQUIRE(loaded->has_value());
      CHECK(**loaded == *serial);
      CHECK(**loaded == w);
      CHECK(encode_snapshot(**loaded) == blob);
      CHECK(unsent_of((*loaded)->projects[0].project) == unsent_of(w.projects[0].project));
    }
    // An older format is passed over (nullopt), not decoded.
    auto old = blob;
    old[0] = static_cast<char>(snapshot_version - 1);
    REQUIRE_FALSE((*st)->write_snapshot(w.seq + 1, old));
    auto older = load_snapshot(**st, w.seq + 1);
    REQUIRE(older);
    CHECK_FALSE(older->has_value());
    // A snapshot that passes its checks but does not decode.
    REQUIRE_FALSE((*st)->write_snapshot(w.seq + 2, blob.substr(0, blob.size() - 3)));
    auto cut = load_snapshot(**st, w.seq + 2);
    REQUIRE_FALSE(cut);
    CHECK(is(cut.error(), ec::corrupt_log));
  }
  // A damaged chunk or byte: the error names the snapshot, whatever the decoder made of the
  // bytes.
  auto last_chunk = static_cast<std::uint32_t>((blob.size() - 1) / 7);
  for (std::uint32_t chunk : {0u, 3u, last_chunk}) {
    auto damage = [&] {
      if (opts.snapshots == storage::snapshot_storage::chunks)
        damage_chunk(dir.path(), w.seq, chunk);
      else
        damage_file_byte(dir.path() / storage::snapshot_dir_name
                           / storage::snapshot_file_name(w.seq, 0),
                         std::size_t{chunk} * 7);
    };
    damage();
    {
      auto st = storage::event_store::open(dir.path(), opts);
      REQUIRE(st);
      auto loaded = load_snapshot(**st, w.seq);
      REQUIRE_FALSE(loaded);
      CHECK(loaded.error() == storage::ec::corruption);
      CHECK_THAT(storage::describe(loaded.error()),
                 Catch::Contains("snapshot " + std::to_string(w.seq) + ": checksum mismatch"));
    }         // closed before the chunk is repaired
    damage(); // undo (xor again)
  }
}
