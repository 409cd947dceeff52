/// The in-process harness drives a whole node in virtual time: jobs go out and come back,
/// deadlines pass without waiting, and the state it leaves is a data directory like any other.
/// Each test's node ends with its live states checked against a replay of its log.

#include "../../support/replay_check.hpp"
#include "../../support/temp_dir.hpp"
#include "actors/error.hpp"
#include "actors/state.hpp"
#include "tools/sim/harness.hpp"

#include <catch2/catch.hpp>

#include <cstddef>

using namespace cobble;

namespace {

sched_request request(const std::string& auth, id_type hostid, double req_secs,
                      std::vector<reported_result> results = {}) {
  sched_request r;
  r.authenticator = auth;
  r.hostid = hostid;
  r.rpc_seqno = 1;
  r.core_client_major_version = 7;
  r.core_client_minor_version = 20;
  r.platform_name = "anonymous";
  r.cpu.req_secs = req_secs;
  r.cpu.req_instances = req_secs > 0 ? 1 : 0;
  // Each new client a CPID of its own: the same CPID would be one machine attached again.
  static int new_clients = 0;
  r.host.host_cpid = hostid == 0 ? "new-client-" + std::to_string(++new_clients)
                                 : "host-" + std::to_string(hostid);
  r.host.p_ncpus = 1;
  r.host.p_fpops = 1e9;
  r.host.os_name = "Linux";
  r.app_versions.push_back(
    client_app_version{"testapp", 100, "x86_64-pc-linux-gnu", "", 1, 0, resource_type::cpu, 0});
  r.results = std::move(results);
  return r;
}

reported_result success(const std::string& name) {
  reported_result r;
  r.name = name;
  r.state = 5;
  r.final_cpu_time = 90;
  r.final_elapsed_time = 100;
  r.platform = "x86_64-pc-linux-gnu";
  r.version_num = 100;
  r.files.push_back(reported_file{name + "_0", 64, "00112233445566778899aabbccddeeff"});
  return r;
}

work_batch jobs(const std::vector<std::string>& names) {
  work_batch b;
  b.submitter = "sim";
  for (auto& n : names) {
    work_spec w;
    w.app = "testapp";
    w.name = n;
    b.items.push_back(std::move(w));
  }
  return b;
}

} // namespace

TEST_CASE("the harness runs a workunit from creation to validation", "[sim]") {
  test::checked_harness h;
  auto auth = h.authenticator("demo", "demo");
  REQUIRE(auth);
  REQUIRE(h.create_work("demo", jobs({"w1"})));
  auto a = h.rpc("demo", request(*auth, 0, 3600));
  auto b = h.rpc("demo", request(*auth, 0, 3600));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE((*a)->results.size() == 1);
  REQUIRE((*b)->results.size() == 1);
  h.advance(100 * us_per_second);
  // Each client uploads its outputs before it reports, as BOINC's does.
  auto report_a = request(*auth, *(*a)->hostid, 0, {success((*a)->results[0].name)});
  auto report_b = request(*auth, *(*b)->hostid, 0, {success((*b)->results[0].name)});
  CHECK(h.upload_outputs(h.project("demo"), report_a) > 0);
  CHECK(h.upload_outputs(h.project("demo"), report_b) > 0);
  auto ra = h.rpc("demo", report_a);
  auto rb = h.rpc("demo", report_b);
  REQUIRE(ra);
  REQUIRE(rb);
  CHECK((*rb)->result_acks.size() == 1);
  auto s = h.status("demo");
  REQUIRE(s);
  CHECK((*s)->counters.results_reported == 2);
  CHECK((*s)->counters.workunits_validated == 1);
  CHECK((*s)->active_workunits == 0);
}

TEST_CASE("virtual time passes deadlines without waiting", "[sim]") {
  test::checked_harness h;
  auto auth = h.authenticator("demo", "demo");
  REQUIRE(auth);
  REQUIRE(h.create_work("demo", jobs({"late"})));
  auto a = h.rpc("demo", request(*auth, 0, 3600));
  REQUIRE(a);
  REQUIRE((*a)->results.size() == 1);
  auto deadline = (*a)->results[0].report_deadline;
  CHECK(deadline == Approx(us_to_seconds(h.now()) + 604800));
  auto s = h.status("demo");
  REQUIRE(s);
  CHECK((*s)->counters.results_timed_out == 0);
  // A day past the deadline, the sweep has run and created a replacement.
  h.advance(std::int64_t{8} * 86400 * us_per_second);
  s = h.status("demo");
  REQUIRE(s);
  CHECK((*s)->counters.results_timed_out == 1);
  CHECK((*s)->counters.results_created == 3);
}

TEST_CASE("a harness's data directory is recovered by the next one", "[sim]") {
  test::temp_dir dir{"sim"};
  sim::harness_options o;
  o.data_dir = dir.path();
  {
    test::checked_harness h{o};
    REQUIRE(h.create_work("demo", jobs({"kept1", "kept2"})));
    CHECK(h.stop() > 0);
  }
  test::checked_harness again{o};
  auto s = again.status("demo");
  REQUIRE(s);
  CHECK((*s)->workunits == 2);
  auto w = again.workunit("demo", "kept2");
  REQUIRE(w);
  CHECK((*w)->wu.state == wu_state::active);
}

TEST_CASE("the harness reports bad input as errors", "[sim]") {
  test::checked_harness h;
  CHECK_THROWS_AS(h.project("nope"), std::out_of_range);
  auto unknown = h.authenticator("demo", "nobody");
  REQUIRE_FALSE(unknown);
  CHECK(is(unknown.error(), ec::unknown_account));
  // An unknown account key gets the BOINC refusal: a message, no host id, no work.
  REQUIRE(h.create_work("demo", jobs({"w"})));
  auto bad = h.rpc("demo", request("not-a-key", 0, 3600));
  REQUIRE(bad);
  CHECK_FALSE((*bad)->hostid.has_value());
  CHECK((*bad)->results.empty());
  REQUIRE((*bad)->messages.size() == 1);
  CHECK((*bad)->messages[0].text.find("Unknown account key") != std::string::npos);
  auto dup = h.create_work("demo", jobs({"x", "x"}));
  CHECK_FALSE(dup);
  auto s = h.status("demo");
  REQUIRE(s);
  CHECK((*s)->workunits == 1);
  CHECK((*s)->hosts == 0);
}
