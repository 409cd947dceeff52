// Events as sentences for the operator pages' stories: results by name, times in UTC, run
// times in units people read, and why a result ended as it did.

#include "actors/event_text.hpp"
#include "actors/state.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace cobble;
using Catch::Matchers::Contains;

namespace {

std::string namer(result_ref r) {
  return "wu" + std::to_string(r.wu) + "_r" + std::to_string(r.index);
}

std::string story(payload p) {
  return story_of(event{1, 0, 0, std::move(p)}, namer);
}

/// 2026-12-03 14:05:00 UTC.
constexpr time_us at = time_us{1'796'306'700} * us_per_second;

} // namespace

TEST_CASE("a dispatch says which host asked, the version and when it is due", "[events]") {
  ev::result_dispatched x;
  x.result = {7, 1};
  x.host = 3;
  x.deadline = at;
  x.version.version_num = 712;
  x.jobs_per_day = 8;
  CHECK(story(x)
        == "Result wu7_r1 sent to host 3, which asked for work: app version 712, due "
           "2026-12-03 14:05 UTC; the host may take 8 a day of it.");
}

TEST_CASE("a report says how the job ended and how long it ran", "[events]") {
  ev::result_reported x;
  x.result = {7, 0};
  x.host = 3;
  x.report.success = true;
  x.report.elapsed = 5400;
  x.report.cpu = 90;
  CHECK(story(x) == "Result wu7_r0 finished on host 3 after 90.0 min (90 s of CPU).");
  x.report.success = false;
  x.report.client_state = client_state_aborted;
  x.late = true;
  CHECK_THAT(story(x), Contains("Result wu7_r0 aborted on host 3"));
  CHECK_THAT(story(x), Contains("; reported after its deadline."));
  x.report.client_state = 3;
  x.report.exit_status = -1073741819;
  CHECK_THAT(story(x), Contains("failed (exit status -1073741819)"));
}

TEST_CASE("validation and cancellation name the results they concern", "[events]") {
  ev::workunit_validated v;
  v.wu = 7;
  v.verdicts = {{0, true, 3, 1, 10, 10}, {1, false, 4, 1, 10, 10}};
  v.credit.resize(2);
  v.credit[0].granted = 12.5;
  v.canonical = 0;
  CHECK(story(v) == "Validated: wu7_r0 valid (12.50 credit), wu7_r1 invalid; canonical wu7_r0.");
  ev::workunit_cancelled c{7, "bad input", {{3, "wu7_r0"}}, "ops"};
  CHECK(story(c) == "Workunit cancelled by ops: bad input; taken back: wu7_r0 on host 3.");
  CHECK(story(ev::result_timed_out{{7, 1}, 4, 1})
        == "Result wu7_r1 timed out on host 4: no report by its deadline.");
}

TEST_CASE("an event without its own sentence still says what it is", "[events]") {
  ev::sequence_ended x;
  auto text = story(x);
  CHECK(!text.empty());
  CHECK(text.back() == '.');
}
