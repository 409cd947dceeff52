/// Results the client and the server see differently. A client that lists `<other_results>`
/// without a job its host holds (a project reset, a reply that never reached it) is sent the
/// job again with a new deadline, or the job is written off and its workunit replaced at
/// once; a report that arrives after its result timed out counts while its workunit can use
/// it; as BOINC's scheduler does. Deterministic node (node_fixture.hpp); every test ends with
/// the replay check.

#include "../support/node_fixture.hpp"
#include "actors/messages.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace cobble;

namespace {

config::cobble_config with_resend(bool resend) {
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).resend_lost_results = resend;
  return cfg;
}

struct lost_fixture : test::node_fixture {
  explicit lost_fixture(bool resend = true) : node_fixture(options(with_resend(resend))) {}

  /// A work request of host `hostid` whose client holds exactly `held` (a 7.x client always
  /// sends the list, empty when it holds nothing).
  std::shared_ptr<sched_request>
  request(id_type hostid, double req_secs, const std::vector<std::string>& held) {
    auto r = anonymous_request(hostid, req_secs, {});
    r->other_results_listed = true;
    for (const auto& name : held)
      r->other_results.push_back(other_result{name, 0, ""});
    return r;
  }

  /// A request of host `hostid` that reports `results` and asks for nothing.
  std::shared_ptr<sched_request> reporting(id_type hostid, std::vector<reported_result> results) {
    return anonymous_request(hostid, 0, std::move(results));
  }

  /// Creates `n` workunits of the demo app; `delay_bound` and `fpops` (E(J)) when set.
  void create(int n, std::optional<double> delay_bound = {}, std::optional<double> fpops = {}) {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    for (int i = 0; i < n; ++i) {
      work_spec w;
      w.app = "testapp";
      w.name = "job" + std::to_string(i);
      w.delay_bound = delay_bound;
      w.rsc_fpops_est = fpops;
      if (fpops)
        w.rsc_fpops_bound = *fpops * 10;
      b->items.push_back(std::move(w));
    }
    ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
  }

  /// Waits out the demo's minimum interval between work requests.
  void later() { advance(seconds_to_us(60)); }

  /// The server's record of result `name` ("<workunit>_<index>").
  result_rec result_named(const std::string& name) {
    auto cut = name.rfind('_');
    auto view = workunit(name.substr(0, cut));
    return view->wu.results.at(std::stoul(name.substr(cut + 1)));
  }
};

bool has_message(const sched_reply& reply, const std::string& text) {
  return std::any_of(reply.messages.begin(), reply.messages.end(), [&](const reply_message& m) {
    return m.text.find(text) != std::string::npos;
  });
}

std::vector<std::string> names_of(const sched_reply& reply) {
  std::vector<std::string> out;
  for (const auto& r : reply.results)
    out.push_back(r.name);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE_METHOD(lost_fixture, "a reset client gets the jobs it lost again, and no new work",
                 "[actors][lost]") {
  create(4);
  auto first = rpc(request(0, 7200, {}));
  auto id = first->hostid.value();
  auto sent = names_of(*first);
  REQUIRE(sent.size() >= 2);
  auto old_deadline = first->results[0].report_deadline;

  // The project was reset: the client holds nothing and asks for work.
  later();
  auto after = rpc(request(id, 100000, {}));
  CHECK(names_of(*after) == sent); // the same jobs, and nothing new
  for (const auto& name : sent)
    CHECK(has_message(*after, "Resent lost task " + name + "."));
  // With everything a client without files needs to run them.
  CHECK(after->workunits.size() == sent.size());
  CHECK(after->results[0].report_deadline >= old_deadline);
  CHECK(status()->counters.results_resent == sent.size());
  CHECK(status()->results_in_progress == sent.size());
  CHECK(host(id)->state->in_progress.size() == sent.size());
  // Its deadline is the new one, on the server too.
  CHECK(us_to_seconds(result_named(sent[0]).deadline) == after->results[0].report_deadline);

  // Holding them again, it gets new work as before.
  later();
  auto more = rpc(request(id, 1000, sent));
  CHECK_FALSE(more->results.empty());
  for (const auto& r : more->results)
    CHECK(std::find(sent.begin(), sent.end(), r.name) == sent.end());
  CHECK(status()->counters.results_resent == sent.size());
}

TEST_CASE_METHOD(lost_fixture, "only the jobs the client does not list are lost",
                 "[actors][lost]") {
  create(2);
  auto first = rpc(request(0, 7200, {}));
  auto id = first->hostid.value();
  auto sent = names_of(*first);
  REQUIRE(sent.size() == 2);

  later();
  auto after = rpc(request(id, 1000, {sent[0]}));
  CHECK(names_of(*after) == std::vector<std::string>{sent[1]});
  CHECK(status()->counters.results_resent == 1);

  // A client that asks for no work, or lists no <other_results> at all (older clients), is
  // left as it is: its jobs wait for their deadlines.
  later();
  auto idle = rpc(request(id, 0, {}));
  CHECK(idle->results.empty());
  later();
  auto unlisted = request(id, 1000, {});
  unlisted->other_results_listed = false;
  auto u = rpc(unlisted);
  CHECK(std::none_of(u->results.begin(), u->results.end(),
                     [&](const result_description& r) { return r.name == sent[0]; }));
  CHECK(status()->counters.results_resent == 1);
  CHECK(status()->counters.results_written_off == 0);
}

TEST_CASE_METHOD(lost_fixture, "a lost job that cannot finish by its new deadline is replaced",
                 "[actors][lost]") {
  // About 800 s on the 1 GFLOPS test host, with a delay bound of 1000 s.
  create(1, 1000.0, 8e11);
  auto first = rpc(request(0, 1000, {}));
  auto id = first->hostid.value();
  REQUIRE(first->results.size() == 1);
  auto name = first->results[0].name;

  // Half the time has passed: the new deadline is the old one, 500 s away.
  advance(seconds_to_us(500));
  auto after = rpc(request(id, 1000, {}));
  CHECK(after->results.empty());
  CHECK(has_message(*after, "Task " + name
                              + " was lost and will not be sent again: it could "
                                "not be finished before its deadline; another "
                                "computer will run it."));
  CHECK(status()->counters.results_written_off == 1);
  CHECK(status()->counters.results_resent == 0);
  CHECK(result_named(name).outcome == result_outcome::client_detached);
  CHECK(host(id)->state->in_progress.empty());
  // Its workunit has a replacement to send, to another computer.
  auto v = workunit("job0");
  CHECK(std::count_if(v->wu.results.begin(), v->wu.results.end(),
                      [](const result_rec& r) { return r.state == result_state::unsent; })
        == 2);
  auto other = rpc(request(0, 1000, {}));
  CHECK(other->results.size() == 1);
}

TEST_CASE_METHOD(lost_fixture, "a lost job of a version the host no longer runs is replaced",
                 "[actors][lost]") {
  create(1);
  auto first = rpc(request(0, 1000, {}));
  auto id = first->hostid.value();
  REQUIRE(first->results.size() == 1);
  auto name = first->results[0].name;

  // The reset deleted app_info.xml: the client no longer runs the anonymous version.
  later();
  auto bare = request(id, 1000, {});
  bare->platform_name = "x86_64-pc-linux-gnu";
  bare->app_versions.clear();
  auto after = rpc(bare);
  CHECK(after->results.empty());
  CHECK(has_message(*after, "Task " + name
                              + " was lost and will not be sent again: this "
                                "computer no longer runs the version it was sent "
                                "with"));
  CHECK(status()->counters.results_written_off == 1);
}

namespace {
struct no_resend_fixture : lost_fixture {
  no_resend_fixture() : lost_fixture(false) {}
};
} // namespace

TEST_CASE_METHOD(no_resend_fixture, "resend_lost_results false leaves lost jobs to their deadlines",
                 "[actors][lost]") {
  create(2);
  auto first = rpc(request(0, 1000, {}));
  auto id = first->hostid.value();
  auto sent = names_of(*first);
  REQUIRE_FALSE(sent.empty());
  later();
  auto after = rpc(request(id, 1000, {}));
  for (const auto& r : after->results)
    CHECK(std::find(sent.begin(), sent.end(), r.name) == sent.end());
  CHECK(status()->counters.results_resent == 0);
  CHECK(status()->counters.results_written_off == 0);
  CHECK(host(id)->state->in_progress.size() >= sent.size());
}

// -- late reports -------------------------------------------------------------------------

namespace {

reported_result success(const std::string& name, const std::string& md5) {
  return test::success_report(name, md5);
}

/// One workunit of the demo app (quorum 2) with a deadline 100 s after sending, sent to a
/// first host whose deadline then passes: its result times out and is replaced.
struct late_fixture : lost_fixture {
  id_type late_host = 0;
  std::string late_name;

  late_fixture() {
    create(1, 100.0);
    auto first = rpc(request(0, 1000, {}));
    late_host = first->hostid.value();
    late_name = first->results.at(0).name;
    advance(seconds_to_us(200));
    REQUIRE(result_named(late_name).outcome == result_outcome::no_reply);
  }

  /// A new host that takes one job and reports it with output `md5`; its result's name.
  std::string other_host_reports(const std::string& md5) {
    auto got = rpc(request(0, 1000, {}));
    auto id = got->hostid.value();
    auto name = got->results.at(0).name;
    later();
    rpc(reporting(id, {success(name, md5)}));
    return name;
  }
};

} // namespace

TEST_CASE_METHOD(late_fixture, "a late report counts towards the quorum of its workunit",
                 "[actors][late]") {
  // The client finished after the deadline: it uploads (accepted) and reports (counted).
  auto reply = rpc(reporting(late_host, {success(late_name, "feedface")}));
  CHECK(reply->result_acks == std::vector<std::string>{late_name});
  CHECK(status()->counters.results_late == 1);
  auto late = result_named(late_name);
  CHECK(late.outcome == result_outcome::success);
  CHECK(late.arrived->at(0).name == late_name + "_0"); // its output was taken
  // One more agreeing result makes the quorum of two; both are granted credit.
  auto other = other_host_reports("feedface");
  auto v = workunit("job0");
  CHECK(v->wu.state == wu_state::assimilated);
  CHECK(result_named(late_name).validation == validate_state::valid);
  CHECK(result_named(late_name).credit->granted > 0);
  CHECK(result_named(late_name).credit->granted == result_named(other).credit->granted);
  // The replacement nobody needs any more is not sent.
  CHECK(rpc(request(0, 1000, {}))->results.empty());
}

TEST_CASE_METHOD(late_fixture,
                 "a late report of a validated workunit gets its credit only if it agrees",
                 "[actors][late]") {
  auto a = other_host_reports("feedface");
  auto b = other_host_reports("feedface");
  REQUIRE(workunit("job0")->wu.state == wu_state::assimilated);
  auto granted = result_named(a).credit->granted;
  REQUIRE(granted > 0);

  SECTION("agreeing: the canonical credit") {
    rpc(reporting(late_host, {success(late_name, "feedface")}));
    auto late = result_named(late_name);
    CHECK(late.validation == validate_state::valid);
    CHECK(late.credit->granted == granted);
  }
  SECTION("disagreeing: invalid, no credit") {
    rpc(reporting(late_host, {success(late_name, "0badcafe")}));
    auto late = result_named(late_name);
    CHECK(late.validation == validate_state::invalid);
    CHECK(late.credit->granted == 0);
  }
  CHECK(status()->counters.results_late == 1);
  CHECK(result_named(b).validation == validate_state::valid);
}

TEST_CASE_METHOD(lost_fixture, "a late report its workunit cannot use is refused with a message",
                 "[actors][late]") {
  // A workunit that failed: every result timed out, up to its limit of errors.
  auto b = std::make_shared<work_batch>();
  b->submitter = "test";
  work_spec w;
  w.app = "testapp";
  w.name = "fragile";
  w.delay_bound = 100;
  w.min_quorum = 1;
  w.target_nresults = 1;
  w.max_error_results = 0;
  b->items.push_back(w);
  ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
  auto first = rpc(request(0, 1000, {}));
  auto id = first->hostid.value();
  auto name = first->results.at(0).name;
  advance(seconds_to_us(200));
  REQUIRE(workunit("fragile")->wu.state == wu_state::failed);

  auto reply = rpc(reporting(id, {success(name, "feedface")}), false);
  CHECK(reply->result_acks == std::vector<std::string>{name});
  CHECK(has_message(*reply, "Task " + name
                              + " arrived after its deadline and is no longer needed: it gets "
                                "no credit."));
  CHECK(status()->counters.results_late == 0);
  CHECK(result_named(name).outcome == result_outcome::no_reply);
  // A report of a result never sent to this host is only acknowledged.
  auto stranger = rpc(reporting(0, {success(name, "feedface")}), false);
  CHECK(stranger->messages.empty());
}
