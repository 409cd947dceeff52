// cobble-bench's own logic: the generator reads what the server writes and writes what the
// server reads; the crash check finds a lost change and a double dispatch; the scale
// generator's log recovers to the hosts and jobs it was asked for.

#include "../support/temp_dir.hpp"
#include "actors/event_codec.hpp"
#include "actors/events.hpp"
#include "actors/log.hpp"
#include "net/boinc_xml.hpp"
#include "tools/bench/ledger.hpp"
#include "tools/bench/load.hpp"
#include "tools/bench/populate.hpp"
#include "tools/bench/site_load.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace cobble;
using namespace cobble::bench;

TEST_CASE("the generator reads hostid, acks, jobs and outputs from a server-written reply") {
  sched_reply reply;
  reply.project_name = "demo";
  reply.hostid = 17;
  reply.result_acks = {"wu_a_0", "wu_b_1"};
  result_description r;
  r.name = "wu_c_0";
  r.wu_name = "wu_c";
  r.platform = "x86_64-pc-linux-gnu";
  r.version_num = 100;
  r.outputs = {file_ref{"wu_c_0_0", "out.txt"}, file_ref{"wu_c_0_1", "log.txt"}};
  reply.results.push_back(r);
  workunit_description w;
  w.name = "wu_c";
  w.app_name = "testapp";
  w.inputs = {file_ref{"input_md5", "in.txt"}};
  reply.workunits.push_back(w);
  auto xml = net::write_sched_reply(reply, {"http://127.0.0.1:1", "demo"});
  auto got = scan_reply(xml);
  REQUIRE(got.hostid == std::optional<id_type>{17});
  CHECK(got.acks == std::vector<std::string>{"wu_a_0", "wu_b_1"});
  REQUIRE(got.jobs.size() == 1);
  CHECK(got.jobs[0].name == "wu_c_0");
  CHECK(got.jobs[0].outputs == std::vector<std::string>{"wu_c_0_0", "wu_c_0_1"});
  CHECK_FALSE(got.message);

  auto none = scan_reply(
    net::write_sched_reply(sched_reply::error("go away", 3600), {"http://127.0.0.1:1", "demo"}));
  CHECK_FALSE(none.hostid);
  CHECK(none.jobs.empty());
  CHECK(none.message);
}

TEST_CASE("the generator's request is a 7.20 request the server parses, with the reports") {
  sim_host h;
  h.id = 42;
  h.seqno = 9;
  h.held.push_back({"wu_x_1", {"wu_x_1_0"}});
  auto parsed = net::parse_sched_request(make_request("0123abcd", h, 5, 7199, 2, 3600));
  REQUIRE(parsed.ok());
  const auto& q = *parsed.value;
  CHECK(q.authenticator == "0123abcd");
  CHECK(q.hostid == 42);
  CHECK(q.rpc_seqno == 9);
  CHECK(q.platform_name == "anonymous");
  CHECK(q.cpu.req_secs == Approx(7199));
  CHECK(q.cpu.req_instances == Approx(2));
  CHECK(q.host.domain_name == "bench-host-5");
  REQUIRE(q.results.size() == 1);
  CHECK(q.results[0].name == "wu_x_1");
  CHECK(q.results[0].state == 5);
  CHECK(q.results[0].exit_status == 0);
  // Reported as run for as long as it was estimated to, so estimates do not drift.
  CHECK(q.results[0].final_elapsed_time == Approx(3600));
  REQUIRE(q.results[0].files.size() == 1);
  CHECK(q.results[0].files[0].name == "wu_x_1_0");
  CHECK(q.other_results.empty());
  REQUIRE(q.app_versions.size() == 1);
}

namespace {

event make(payload p) {
  event e;
  e.time = 1'700'000'000'000'000;
  e.data = std::move(p);
  return e;
}

} // namespace

TEST_CASE("the crash check finds every lost change and every double dispatch") {
  test::temp_dir dir{"bench"};
  auto store = storage::event_store::open(dir.path() / "log");
  REQUIRE(store);
  std::vector<storage::event_record> recs;
  for (auto& e :
       {make(ev::workunit_created{1, "w", 1, {}, 2, "t"}), make(ev::host_registered{1, 1, {}}),
        make(ev::host_registered{2, 1, {}}), make(ev::result_dispatched{{1, 0}, 1, 0, {}}),
        make(ev::result_reported{{1, 0}, 1, {}}), make(ev::result_dispatched{{1, 1}, 2, 0, {}}),
        make(ev::result_dispatched{{1, 1}, 1, 0, {}})})
    recs.push_back(to_record(e));
  REQUIRE_FALSE((*store)->append(recs));
  auto facts = collect(**store);
  CHECK(facts.events == 7);

  ledger all_there;
  all_there.record_host(1);
  all_there.record_dispatch("w_0", 1);
  all_there.record_report("w_0", 1);
  auto good = check(all_there, facts);
  CHECK(good.hosts_missing + good.dispatches_missing + good.reports_missing == 0);
  CHECK(good.dispatches_checked == 1);
  // The log itself dispatched w_1 twice.
  CHECK(good.double_dispatches == 1);
  CHECK_FALSE(good.ok());

  ledger lost;
  lost.record_host(3);               // never registered
  lost.record_dispatch("w_0", 2);    // sent to host 1, not 2
  lost.record_dispatch("w_2", 1);    // no such result
  lost.record_dispatch("nope_0", 1); // no such workunit
  lost.record_report("w_1", 2);      // dispatched, never reported
  lost.record_dispatch("w_0", 1);    // came in a second reply
  auto bad = check(lost, facts);
  CHECK(bad.hosts_missing == 1);
  CHECK(bad.dispatches_checked == 3);
  CHECK(bad.dispatches_missing == 3);
  CHECK(bad.reports_missing == 1);
  CHECK(bad.repeated_dispatches == 1);
  CHECK(bad.problems.size() >= 6);
}

TEST_CASE("the scale generator's log recovers to the hosts and queued jobs asked for") {
  test::temp_dir dir{"bench"};
  populate_options o;
  o.data_dir = dir.path() / "data";
  o.hosts = 25;
  o.jobs = 30;
  o.batch = 7; // several appends
  auto r = populate(o);
  CHECK(r.hosts == 25);
  CHECK(r.workunits == 15);
  CHECK(r.jobs == 30);
  storage::store_options so;
  so.read_only = true;
  auto store = storage::event_store::open(o.data_dir / "log", so);
  REQUIRE(store);
  CHECK((*store)->last_seq() == r.events);
  auto w = recover(**store);
  REQUIRE(w);
  REQUIRE(w->projects.size() == 1);
  const auto& p = w->projects[0].project;
  CHECK(p.name == "demo");
  CHECK(p.hosts.size() == 25);
  CHECK(p.workunits.size() == 15);
  CHECK(p.counters.results_created == 30);
  CHECK(p.unsent.begin()->second.size() == 30);
  // A data directory that already has a log is refused.
  CHECK_THROWS_AS(populate(o), std::runtime_error);
}

TEST_CASE("the site benchmark's mix weighs its kinds and finds the volunteer's computers") {
  auto kinds = site_pages("demo", 42, 5000);
  REQUIRE(kinds.size() == 4);
  CHECK(kinds[0].targets == std::vector<std::string>{"/demo/account"});
  CHECK(kinds[2].targets == std::vector<std::string>{"/demo/host?id=42"});
  // Six top lists (three lists, two orders), at page starts within the ranking.
  REQUIRE(kinds[1].targets.size() == 6);
  for (const auto& t : kinds[1].targets) {
    auto offset = std::stoul(t.substr(t.find("offset=") + 7));
    CHECK(offset % 20 == 0);
    CHECK(offset < 5000);
  }
  auto mix = page_mix(kinds);
  REQUIRE(mix.size() == 10); // 4 + 4 + 1 + 1
  CHECK(std::count(mix.begin(), mix.end(), "/demo/account") == 4);
  CHECK(std::count(mix.begin(), mix.end(), "/demo/") == 1);
  CHECK(mix[0] == "/demo/account"); // interleaved, not in blocks
  CHECK(mix[1].rfind("/demo/top?", 0) == 0);

  CHECK(host_links(R"(<a href="/demo/host?id=7">7</a> <a href="/demo/host?id=12">)")
        == std::vector<std::uint64_t>{7, 12});
  CHECK(host_links("no links").empty());
}
