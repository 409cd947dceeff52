/// A client that comes back without its host id (a detach and attach again, a reinstall
/// that kept its data) is recognised by its CPID among its user's hosts, as BOINC's scheduler
/// does: it keeps its host, and the jobs the detach deleted are written off and replaced at
/// once instead of waiting for their deadlines. Deterministic node (node_fixture.hpp); every
/// test ends with the replay check.

#include "../support/node_fixture.hpp"
#include "actors/messages.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace cobble;

namespace {

/// The demo project with a second user, "other".
config::cobble_config two_users() {
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).users.push_back({"other", "other@example.org", "key-other"});
  return cfg;
}

struct identity_fixture : test::node_fixture {
  identity_fixture() : node_fixture(options(two_users())) {}

  /// A request of the client whose CPID is `cpid` (BOINC keeps one per installation, across
  /// detach and attach).
  std::shared_ptr<sched_request> request(id_type hostid, const std::string& cpid, double req_secs) {
    auto r = anonymous_request(hostid, req_secs, {});
    r->rpc_seqno = 1;
    r->host.host_cpid = cpid;
    r->host.p_ncpus = 2;
    r->cpu.req_instances = req_secs > 0 ? 2 : 0;
    return r;
  }

  void create(int n) {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    for (int i = 0; i < n; ++i) {
      work_spec w;
      w.app = "testapp";
      w.name = "job" + std::to_string(i);
      b->items.push_back(std::move(w));
    }
    ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
  }

  /// The outcome of every result of workunit `name` that host `host` got.
  std::vector<result_outcome> outcomes_of(const std::string& name, id_type by) {
    std::vector<result_outcome> out;
    auto view = workunit(name); // held: the loop reads into it
    for (const auto& r : view->wu.results)
      if (r.host == by)
        out.push_back(r.outcome);
    return out;
  }

  /// Waits out the demo's minimum interval between work requests.
  void later() { advance(seconds_to_us(60)); }

  std::size_t in_progress_of(id_type id) { return host(id)->state->in_progress.size(); }
};

bool has_message(const sched_reply& reply, const std::string& text) {
  return std::any_of(reply.messages.begin(), reply.messages.end(), [&](const reply_message& m) {
    return m.text.find(text) != std::string::npos;
  });
}

} // namespace

TEST_CASE_METHOD(identity_fixture,
                 "a client attached again keeps its host, and its lost jobs are replaced at once",
                 "[actors][identity]") {
  create(2);
  auto first = rpc(request(0, "machine-a", 7200));
  REQUIRE(first->hostid.has_value());
  auto id = *first->hostid;
  REQUIRE(first->results.size() == 2);
  CHECK(status()->results_in_progress == 2);

  // Detached and attached again: no host id, the same CPID, no job listed as held.
  later();
  auto again = rpc(request(0, "machine-a", 0));
  REQUIRE(again->hostid.has_value());
  CHECK(*again->hostid == id); // the client learns its old id
  CHECK(has_message(*again, "attached again as host " + std::to_string(id)));
  CHECK(status()->hosts == 1);
  CHECK(status()->counters.hosts_reattached == 1);
  CHECK(status()->counters.results_written_off == 2);
  // Its results are over (not errors of the host) and each workunit has a replacement.
  for (const auto& wu : {"job0", "job1"}) {
    INFO(wu);
    CHECK(outcomes_of(wu, id) == std::vector<result_outcome>{result_outcome::client_detached});
    auto v = workunit(wu);
    CHECK(v->wu.results.size() == 3); // target_nresults 2 plus the replacement
    CHECK(std::count_if(v->wu.results.begin(), v->wu.results.end(),
                        [](const result_rec& r) { return r.state == result_state::unsent; })
          == 2);
  }
  CHECK(in_progress_of(id) == 0);

  // The host asks for work: never a replacement of a job it had (no quorum of one machine).
  later();
  auto work = rpc(request(id, "machine-a", 7200));
  CHECK(work->results.empty());
  // Another machine gets both workunits.
  auto other = rpc(request(0, "machine-b", 7200));
  REQUIRE(other->hostid.has_value());
  CHECK(*other->hostid != id);
  CHECK(other->results.size() == 2);
}

TEST_CASE_METHOD(identity_fixture,
                 "a reattached client that lists its jobs, or runs beside others, loses none",
                 "[actors][identity]") {
  create(2);
  auto first = rpc(request(0, "machine-a", 7200));
  auto id = *first->hostid;
  REQUIRE(first->results.size() == 2);

  // It still holds a job (<other_results>): BOINC keeps every result then.
  later();
  auto listing = request(0, "machine-a", 0);
  listing->other_results.push_back(other_result{first->results[0].name, 0, ""});
  auto a = rpc(listing);
  CHECK(a->hostid.value_or(0) == id);
  CHECK_FALSE(has_message(*a, "attached again"));
  // allow_multiple_clients (several clients on one machine): nothing is written off either.
  later();
  auto several = request(0, "machine-a", 0);
  several->allow_multiple_clients = true;
  auto b = rpc(several);
  CHECK(b->hostid.value_or(0) == id);
  CHECK(status()->counters.hosts_reattached == 2);
  CHECK(status()->counters.results_written_off == 0);
  CHECK(status()->results_in_progress == 2);
  CHECK(in_progress_of(id) == 2);
}

TEST_CASE_METHOD(identity_fixture, "a CPID finds only the same user's newest host with it",
                 "[actors][identity]") {
  auto a = *rpc(request(0, "machine-a", 0))->hostid;
  auto b = *rpc(request(0, "machine-b", 0))->hostid;
  CHECK(a != b);
  // The client changed its CPID (BOINC regenerates it when it is given a new id while it held
  // one): host a is found by the new CPID only.
  later();
  rpc(request(a, "machine-a2", 0));
  auto by_old = rpc(request(0, "machine-a", 0));
  REQUIRE(by_old->hostid.has_value());
  CHECK(*by_old->hostid != a); // a new host: no host of the user reports "machine-a" now
  CHECK(*by_old->hostid != b);
  later();
  CHECK(rpc(request(0, "machine-a2", 0))->hostid.value_or(0) == a);
  // Another user's client with the same CPID is not this user's host.
  auto stranger = request(0, "machine-b", 0);
  stranger->authenticator = "key-other";
  auto s = rpc(stranger);
  REQUIRE(s->hostid.has_value());
  CHECK(*s->hostid != b);
  CHECK(status()->counters.hosts_reattached == 1);
  CHECK(status()->hosts == 4);
}

namespace {

/// A client on the machine "box" (host name, OS, CPU model and memory as BOINC compares them).
std::shared_ptr<sched_request>
on_box(identity_fixture& f, id_type hostid, const std::string& cpid, double req_secs) {
  auto r = f.request(hostid, cpid, req_secs);
  r->host.domain_name = "box";
  r->host.os_name = "Linux";
  r->host.p_model = "AMD Ryzen 7 5800X";
  r->host.m_nbytes = 34359738368;
  return r;
}

} // namespace

TEST_CASE_METHOD(identity_fixture,
                 "a client that lost its CPID is found by its machine's traits once the old one "
                 "is silent",
                 "[actors][identity]") {
  create(2);
  auto first = rpc(on_box(*this, 0, "random-cpid-1", 7200));
  auto id = first->hostid.value();
  REQUIRE(first->results.size() == 2);

  // Two days later a new installation (a new random CPID) on the same machine: the same host,
  // and the jobs of the old installation are given up whatever the client lists.
  advance(seconds_to_us(2 * 86400));
  auto again = on_box(*this, 0, "random-cpid-2", 0);
  again->other_results.push_back(other_result{"something_else_0", 0, ""});
  auto reply = rpc(again);
  CHECK(reply->hostid.value_or(0) == id);
  CHECK(has_message(*reply, "attached again as host " + std::to_string(id)));
  CHECK(status()->hosts == 1);
  CHECK(status()->counters.hosts_reattached == 1);
  CHECK(status()->counters.results_written_off == 2);
  CHECK(in_progress_of(id) == 0);
  // The host now goes by its new CPID.
  later();
  CHECK(rpc(request(0, "random-cpid-2", 0))->hostid.value_or(0) == id);
}

TEST_CASE_METHOD(identity_fixture,
                 "machines alike in every trait stay apart while both run, or beside others",
                 "[actors][identity]") {
  create(2);
  auto a = rpc(on_box(*this, 0, "clone-a", 7200))->hostid.value();
  // A second machine cloned from the same image, on the same account, running at once.
  auto b = rpc(on_box(*this, 0, "clone-b", 7200))->hostid.value();
  CHECK(a != b);
  CHECK(status()->counters.hosts_reattached == 0);
  CHECK(status()->counters.results_written_off == 0);
  CHECK(in_progress_of(a) + in_progress_of(b) == 4);
  // Several clients on one machine (allow_multiple_clients): never matched by traits, even
  // when the others are silent.
  advance(seconds_to_us(2 * 86400));
  auto several = on_box(*this, 0, "instance-3", 0);
  several->allow_multiple_clients = true;
  auto c = rpc(several)->hostid.value();
  CHECK(c != a);
  CHECK(c != b);
  // Too little to tell machines apart (no CPU model): never matched.
  auto bare = on_box(*this, 0, "bare", 0);
  bare->host.p_model.clear();
  auto d = rpc(bare)->hostid.value();
  CHECK(d != a);
  CHECK(d != b);
  CHECK(d != c);
  CHECK(status()->counters.hosts_reattached == 0);
}
