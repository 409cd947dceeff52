/// Hosts passivated and activated again inside a whole node (deterministic actors, a real
/// event store, a manual clock): idle hosts leave the decoded table on the project's tick,
/// come back identical on their next RPC, verdict or timeout, and the live states still equal
/// a replay of the log (checked when each test's node ends).

#include "../support/node_fixture.hpp"
#include "actors/messages.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace cobble;

namespace {

constexpr double idle = 60;            // passivate_hosts_after in these tests
constexpr double delay_bound = 604800; // the demo app's, in seconds

config::cobble_config passivating(int max_live = 0) {
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).passivate_hosts_after = idle;
  cfg.projects.at(0).max_live_hosts = max_live;
  return cfg;
}

reported_result success(const std::string& name) {
  return test::success_report(name, "feedface");
}

struct passivation_fixture : test::node_fixture {
  explicit passivation_fixture(int max_live = 0) : node_fixture(options(passivating(max_live))) {}

  std::shared_ptr<sched_request>
  request(std::uint64_t hostid, double req_secs, std::vector<reported_result> results = {}) {
    auto r = anonymous_request(hostid, req_secs, std::move(results));
    r->host.p_ncpus = 2;
    return r;
  }

  void create(const std::vector<std::string>& names) {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    for (const auto& n : names) {
      work_spec w;
      w.app = "testapp";
      w.name = n;
      w.inputs.push_back(input_spec{"in_" + n, "in.txt", 1000, "0123456789abcdef0123456789abcdef"});
      b->items.push_back(std::move(w));
    }
    ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
  }

  project_gauges gauges() {
    return *ask<project_gauges_ptr>(project, atom::status_v, atom::host_v);
  }
};

} // namespace

TEST_CASE("an idle host is passivated and comes back identical on its next RPC",
          "[passivation][actors]") {
  passivation_fixture f;
  f.create({"job"});
  auto r1 = f.rpc(f.request(0, 3600));
  auto r2 = f.rpc(f.request(0, 3600));
  REQUIRE(r1->results.size() == 1);
  REQUIRE(r2->results.size() == 1);
  auto h1 = *r1->hostid;
  auto h2 = *r2->hostid;
  auto g = f.gauges();
  CHECK(g.hosts == 2);
  CHECK(g.hosts_live == 2);
  CHECK(g.hosts_passivated == 0);
  auto before = *f.host(h1)->state;
  CHECK(before.in_progress.size() == 1);

  // Idle for longer than passivate_hosts_after: the next tick passivates both.
  f.advance(seconds_to_us(idle + 15));
  g = f.gauges();
  CHECK(g.hosts == 2);
  CHECK(g.hosts_live == 0);
  CHECK(g.hosts_passivated == 2);
  CHECK(g.host_passivations == 2);
  CHECK(g.passivated_bytes > 0);
  // The admin view shows the same state without activating the host.
  CHECK(*f.host(h1)->state == before);
  CHECK(f.gauges().host_activations == 0);

  // The host reports: its state is decoded again, exactly as it was, and moves on.
  auto ack = f.rpc(f.request(h1, 0, {success(r1->results[0].name)}));
  CHECK(ack->result_acks == std::vector<std::string>{r1->results[0].name});
  g = f.gauges();
  CHECK(g.hosts_live == 1);
  CHECK(g.hosts_passivated == 1);
  CHECK(g.host_activations == 1);
  auto after = *f.host(h1)->state;
  CHECK(after.in_progress.empty());
  CHECK(after.results_reported == before.results_reported + 1);
  CHECK(after.info == before.info);
  CHECK(after.created == before.created);

  // The second host, still passivated, reports too: the validation's verdicts reach both
  // hosts (one live, one activated by its RPC), and both are granted credit.
  f.rpc(f.request(h2, 0, {success(r2->results[0].name)}));
  CHECK(f.workunit("job")->wu.state == wu_state::assimilated);
  CHECK(f.gauges().host_activations == 2);
  CHECK(f.status()->counters.results_reported == 2);
}

TEST_CASE("a passivated host's result times out at its deadline", "[passivation][actors]") {
  passivation_fixture f;
  f.create({"job"});
  auto r1 = f.rpc(f.request(0, 3600));
  REQUIRE(r1->results.size() == 1);
  auto h1 = *r1->hostid;
  f.advance(seconds_to_us(idle + 15));
  REQUIRE(f.gauges().hosts_passivated == 1);

  // The deadline sweep activates the host to time its result out, then passivates it again
  // once it is idle.
  f.advance(seconds_to_us(delay_bound));
  CHECK(f.gauges().host_activations == 1);
  f.advance(seconds_to_us(idle + 15));
  auto hv = f.host(h1);
  CHECK(hv->state->in_progress.empty());
  CHECK(hv->state->app_versions.begin()->second.n_timeout == 1);
  CHECK(f.status()->counters.results_timed_out == 1);
  auto g = f.gauges();
  CHECK(g.host_activations == 1);
  CHECK(g.hosts_passivated == 1);
  CHECK(g.hosts_live == 0);
}

TEST_CASE("max_live_hosts passivates the least recently used beyond it", "[passivation][actors]") {
  passivation_fixture f(2);
  std::vector<id_type> hosts;
  for (int i = 0; i < 5; ++i) {
    auto r = f.rpc(f.request(0, 0));
    REQUIRE(r->hostid);
    hosts.push_back(*r->hostid);
    f.advance(seconds_to_us(1));
  }
  // The next tick (within 10 s, well before passivate_hosts_after) leaves the two most
  // recent live.
  f.advance(seconds_to_us(10));
  auto g = f.gauges();
  CHECK(g.hosts == 5);
  CHECK(g.hosts_live == 2);
  CHECK(g.hosts_passivated == 3);
  // The two most recent answer from the live table; the first is decoded again.
  f.rpc(f.request(hosts[4], 0));
  f.rpc(f.request(hosts[3], 0));
  CHECK(f.gauges().host_activations == 0);
  f.rpc(f.request(hosts[0], 0));
  CHECK(f.gauges().host_activations == 1);
}

TEST_CASE("after a restart the first sweep passivates the hosts idle before it",
          "[passivation][actors]") {
  passivation_fixture f;
  auto r = f.rpc(f.request(0, 0));
  REQUIRE(r->hostid);
  f.advance(seconds_to_us(idle + 15));
  f.stop();
  f.start();
  // Recovered live; the start itself decodes and encodes nothing more.
  CHECK(f.gauges().hosts_live == 1);
  f.advance(seconds_to_us(10)); // deadline_check_interval
  auto g = f.gauges();
  CHECK(g.hosts == 1);
  CHECK(g.hosts_live == 0);
  CHECK(g.hosts_passivated == 1);
  auto again = f.rpc(f.request(*r->hostid, 0));
  CHECK_FALSE(again->hostid.has_value()); // the same host, not a new one
  CHECK(f.gauges().host_activations == 1);
}
