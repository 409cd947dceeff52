/// Limits a hostile client cannot widen, against a whole node (deterministic actors, a real
/// event store, a manual clock): each test does what an attacker did on main and asserts the
/// server's answer (docs/security.md, "Limits a client cannot widen").

#include "../support/node_fixture.hpp"
#include "actors/messages.hpp"
#include "storage/event_store.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace cobble;

namespace {

/// The demo project with `limits`.
config::cobble_config with_limits(const config::limits_config& limits) {
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).limits = limits;
  return cfg;
}

struct limits_fixture : test::node_fixture {
  explicit limits_fixture(const config::limits_config& limits)
    : node_fixture(options(with_limits(limits))) {}

  /// A 7.20 anonymous-platform client claiming `ncpus` CPUs and asking for `req_secs`.
  std::shared_ptr<sched_request> request(std::uint64_t hostid, double req_secs, int ncpus = 2,
                                         std::vector<reported_result> results = {}) {
    auto r = anonymous_request(hostid, req_secs, std::move(results));
    r->host.p_ncpus = ncpus;
    r->cpu.req_instances = req_secs > 0 ? ncpus : 0;
    return r;
  }

  void create(int n) {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    for (int i = 0; i < n; ++i) {
      work_spec w;
      w.app = "testapp";
      w.inputs.push_back(
        input_spec{"in_" + std::to_string(i), "in.txt", 1000, "0123456789abcdef0123456789abcdef"});
      b->items.push_back(std::move(w));
    }
    auto created = ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
    REQUIRE(created->ids.size() == static_cast<std::size_t>(n));
  }
};

bool says(const sched_reply& reply, const std::string& part) {
  for (const auto& m : reply.messages)
    if (m.text.find(part) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_CASE(
  "a host asking for work in a loop gets request_delay and nothing, and reports still count",
  "[limits][actors]") {
  config::limits_config l;
  l.min_sendwork_interval = 60;
  limits_fixture f(l);
  f.create(50);
  auto first = f.rpc(f.request(0, 3600, 1));
  REQUIRE(first->hostid);
  auto host = *first->hostid;
  REQUIRE(first->results.size() == 1);
  // The attacker's loop: the same request again and again, no time passing.
  for (int i = 0; i < 20; ++i) {
    auto again = f.rpc(f.request(host, 86400));
    CHECK(again->results.empty());
    CHECK(again->request_delay == 60);
    CHECK(says(*again, "last request too recent"));
  }
  CHECK(f.status()->results_in_progress == 1);
  // 45 s later: 15 s to wait. A report in the same RPC is accepted.
  f.advance(seconds_to_us(45));
  reported_result done;
  done.name = first->results[0].name;
  done.state = 5;
  done.final_elapsed_time = done.final_cpu_time = 40;
  done.platform = "x86_64-pc-linux-gnu";
  done.version_num = 100;
  done.files.push_back(reported_file{done.name + "_0", 64, "0123456789abcdef0123456789abcdef"});
  auto with_report = f.rpc(f.request(host, 3600, 1, {done}));
  CHECK(with_report->results.empty());
  CHECK(with_report->request_delay == 15);
  REQUIRE(with_report->result_acks.size() == 1);
  CHECK(f.status()->counters.results_reported == 1);
  // Once the interval has passed, work again.
  f.advance(seconds_to_us(15));
  auto later = f.rpc(f.request(host, 3600, 1));
  CHECK(later->results.size() == 1);
  CHECK_FALSE(says(*later, "too recent"));
  CHECK(later->request_delay == f.node.config().projects.at(0).request_delay);
}

TEST_CASE("two hosts claiming 64 CPUs cannot take all the work", "[limits][actors]") {
  // On main two such hosts took all 4,000 results in 0.4 s. Here the claim counts as 8 CPUs
  // and a host holds 2 jobs per CPU at most, however often it asks.
  config::limits_config l;
  l.max_ncpus = 8;
  l.max_jobs_in_progress = 2;
  limits_fixture f(l);
  f.create(200);
  std::vector<id_type> hosts;
  for (int h = 0; h < 2; ++h) {
    auto r = f.rpc(f.request(0, 1e7, 64));
    REQUIRE(r->hostid);
    hosts.push_back(*r->hostid);
  }
  for (int round = 0; round < 30; ++round) {
    f.advance(seconds_to_us(5)); // the default interval: the demo's request_delay
    for (auto h : hosts)
      f.rpc(f.request(h, 1e7, 64));
  }
  CHECK(f.status()->results_in_progress == 32u); // 2 hosts × 16
  for (auto h : hosts)
    CHECK(f.host(h)->state->in_progress.size() == 16);
  f.advance(seconds_to_us(5));
  auto capped = f.rpc(f.request(hosts[0], 1e7, 64));
  CHECK(capped->results.empty());
  CHECK(says(*capped, "limit on tasks in progress"));
  // An honest host still gets work.
  auto honest = f.rpc(f.request(0, 3600, 2));
  CHECK(honest->results.size() == 2);
}

TEST_CASE("one account registering hosts in a loop gets the day's cap, then a refusal",
          "[limits][actors]") {
  config::limits_config l;
  l.max_new_hosts_per_day = 5;
  limits_fixture f(l);
  std::vector<id_type> made;
  std::uint64_t seq = 0;
  for (int i = 0; i < 50; ++i) {
    auto r = f.rpc(f.request(0, 0));
    if (r->hostid) {
      made.push_back(*r->hostid);
      seq = f.store().last_seq();
      continue;
    }
    CHECK(says(*r, "new computers in the last 24 hours"));
    CHECK(r->request_delay >= 3600);
  }
  CHECK(made.size() == 5);
  CHECK(f.status()->hosts == 5);
  CHECK(f.store().last_seq() == seq); // a refusal writes nothing
  // The hosts it has keep working.
  auto known = f.rpc(f.request(made[0], 0));
  std::string said;
  for (const auto& m : known->messages)
    said += m.text + "\n";
  INFO(said);
  CHECK(known->messages.empty());
  CHECK_FALSE(known->hostid);
  CHECK_FALSE(says(*known, "new computers"));
  // A day later it may register again.
  f.advance(seconds_to_us(86401));
  auto next_day = f.rpc(f.request(0, 0));
  CHECK(next_day->hostid);
  CHECK(f.status()->hosts == 6);
}

TEST_CASE("RPCs with an unchanged description write no events", "[limits][actors]") {
  // On main one client wrote ~100 MB/s of event log: RPCs in a loop, each a new description.
  limits_fixture f(config::limits_config{});
  auto r = f.rpc(f.request(0, 0));
  REQUIRE(r->hostid);
  auto seq = f.store().last_seq();
  for (int i = 0; i < 100; ++i) {
    auto q = f.request(*r->hostid, 0);
    q->host.d_free = 1e11 + i * 1e6; // disk free moves a little every RPC
    f.rpc(q);
  }
  CHECK(f.store().last_seq() == seq + 1); // the first d_free figure only
}

TEST_CASE("two hosts of one user never hold two results of one workunit", "[limits][actors]") {
  // On main one user with two host ids held both replicas of 2,000 workunits, reported the
  // same invented md5 for each pair and had them validated. Now the hosts of one user get at
  // most one result of a workunit (one_result_per_user_per_wu, on by default).
  auto cfg = cobble::test::demo_config();
  auto& project = cfg.projects.at(0);
  project.users.push_back({"other", "other@example.org", "key-other"});
  bool per_user = GENERATE(true, false);
  project.apps.at(0).one_result_per_user_per_wu = per_user;
  test::node_fixture f(test::node_fixture::options(cfg));
  auto b = std::make_shared<work_batch>();
  b->submitter = "test";
  for (int i = 0; i < 3; ++i) {
    work_spec w;
    w.app = "testapp";
    b->items.push_back(std::move(w));
  }
  REQUIRE(
    f.ask<work_created_ptr>(f.project, atom::create_v, work_batch_ptr{std::move(b)})->ids.size()
    == 3);
  auto ask_for_work = [&](const std::string& key) {
    auto r = f.anonymous_request(0, 86400, {});
    r->authenticator = key;
    r->cpu.req_instances = 4;
    r->host.p_ncpus = 4;
    return f.rpc(r);
  };
  // The user's first host gets one replica of each workunit (never two: one per host).
  auto first = ask_for_work(f.auth);
  CHECK(first->results.size() == 3);
  // The same user's second host: nothing while the setting is on, the other replicas if off.
  auto second = ask_for_work(f.auth);
  CHECK(second->results.size() == (per_user ? 0u : 3u));
  // Another user's host gets the replicas the first user could not take.
  auto other = ask_for_work("key-other");
  CHECK(other->results.size() == (per_user ? 3u : 0u));
  // Either way every replica is out, to two different hosts.
  CHECK(f.status()->results_in_progress == 6);
}
