/// An operator cancels a workunit (actors/cancel.cpp): nothing of it is sent any more, the host
/// running a replica is told to abort it and loses it from its list, a late report changes
/// nothing, and the cancel is no failure. Deterministic node (node_fixture.hpp); every test
/// ends with the replay check.

#include "../support/node_fixture.hpp"
#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/event_text.hpp"
#include "actors/messages.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace cobble;

namespace {

struct cancel_fixture : test::node_fixture {
  /// A work request of host `hostid` whose client holds `held`.
  std::shared_ptr<sched_request>
  request(id_type hostid, double req_secs, const std::vector<std::string>& held = {}) {
    auto r = anonymous_request(hostid, req_secs, {});
    r->other_results_listed = true;
    for (const auto& name : held)
      r->other_results.push_back(other_result{name, 0, ""});
    return r;
  }

  void create(const std::string& name) {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    work_spec w;
    w.app = "testapp";
    w.name = name;
    b->items.push_back(std::move(w));
    ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
  }

  workunit_view_ptr cancel(const std::string& key, const std::string& reason = "bad inputs") {
    return ask<workunit_view_ptr>(project, atom::cancel_v, key, reason, std::string{"alice"});
  }

  /// Waits out the demo's minimum interval between work requests.
  void later() { advance(seconds_to_us(60)); }
};

bool has(const std::vector<std::string>& xs, const std::string& x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

} // namespace

TEST_CASE_METHOD(cancel_fixture, "a cancelled workunit is taken back from its hosts",
                 "[actors][cancel]") {
  create("job");
  auto first = rpc(request(0, 3600));
  REQUIRE(first->results.size() == 1); // one replica per host
  auto held = first->results[0].name;
  auto a = first->hostid.value();

  auto view = cancel("job");
  CHECK(view->wu.state == wu_state::cancelled);
  CHECK(view->wu.failure == "cancelled: bad inputs");
  for (const auto& r : view->wu.results) {
    CHECK(r.state == result_state::over);
    CHECK(r.outcome == result_outcome::didnt_need);
  }
  CHECK(host(a)->state->in_progress.empty());
  CHECK(status()->counters.workunits_cancelled == 1);
  CHECK(status()->counters.workunits_failed == 0);
  CHECK(status()->active_workunits == 0);
  CHECK(status()->results_in_progress == 0);

  // The event says what was taken back, from whom, why and by whom.
  auto last = store().last_seq();
  std::string text;
  REQUIRE_FALSE(store().scan(last, last, [&](const storage::event_record& r) {
    text = describe(*from_record(r));
    return true;
  }));
  CHECK_THAT(text, Catch::Contains("workunit_cancelled"));
  CHECK_THAT(text, Catch::Contains("aborted=" + held + "@" + std::to_string(a)
                                   + " reason=bad inputs by=alice"));

  // Another host gets nothing of it; the host that holds a replica is told to abort it.
  later();
  auto other = rpc(request(0, 3600));
  CHECK(other->results.empty());
  auto told = rpc(request(a, 0, {held}));
  CHECK(has(told->result_aborts, held));

  // A report that comes anyway is acknowledged and changes nothing.
  later();
  auto late = rpc(anonymous_request(a, 0, {test::success_report(held)}));
  CHECK(has(late->result_acks, held));
  CHECK(workunit("job")->wu.state == wu_state::cancelled);
  CHECK(workunit("job")->wu.results.at(0).outcome == result_outcome::didnt_need);

  // It stays cancelled across a restart.
  stop();
  start();
  CHECK(workunit("job")->wu.state == wu_state::cancelled);
  CHECK(status()->counters.workunits_cancelled == 1);
}

TEST_CASE_METHOD(cancel_fixture, "only an active plain workunit can be cancelled",
                 "[actors][cancel]") {
  create("job");
  cancel("job");
  auto twice = ask_error<workunit_view_ptr>(project, atom::cancel_v, std::string{"job"},
                                            std::string{}, std::string{"alice"});
  CHECK(is(twice, ec::conflict));
  CHECK_THAT(describe(twice), Catch::Contains("cancelled already"));
  auto unknown = ask_error<workunit_view_ptr>(project, atom::cancel_v, std::string{"nope"},
                                              std::string{}, std::string{"alice"});
  CHECK(is(unknown, ec::unknown_workunit));
  create("other");
  auto too_long = ask_error<workunit_view_ptr>(project, atom::cancel_v, std::string{"other"},
                                               std::string(1001, 'x'), std::string{"alice"});
  CHECK(is(too_long, ec::invalid_argument));
  CHECK(workunit("other")->wu.state == wu_state::active);
  CHECK(cancel("other", "")->wu.failure == "cancelled: by the operator");
  CHECK(status()->counters.workunits_cancelled == 2);
}

TEST_CASE_METHOD(cancel_fixture, "a sequence's elements are the sequence's to cancel",
                 "[actors][cancel]") {
  auto spec = std::make_shared<sequence_spec>();
  spec->name = "climate";
  spec->app = "testapp";
  spec->count = 2;
  spec->by = "alice";
  auto seq = ask<sequence_view_ptr>(project, atom::create_v, sequence_spec_ptr{spec});
  auto element = std::to_string(sequence_wu_id(seq->state.id, 0));
  auto err = ask_error<workunit_view_ptr>(project, atom::cancel_v, element, std::string{},
                                          std::string{"alice"});
  CHECK(is(err, ec::conflict));
  CHECK_THAT(describe(err), Catch::Contains("of sequence climate"));
  CHECK_THAT(describe(err), Catch::Contains("cobble seq end"));
  CHECK(workunit(element)->wu.state == wu_state::active);
}
