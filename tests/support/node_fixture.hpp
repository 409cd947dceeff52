#pragma once

// Test support: the deterministic node of the actor tests. The emulator's harness
// (tools/sim/harness.hpp: the node's actors on CAF's test coordinator, a manual clock, an
// event store in a fresh temporary directory) driven through the first project of its
// configuration, with Catch2's assertions in place of caf::expected; every test ends with the
// check that the live states equal a replay of the log (replay_check.hpp).

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "config/config.hpp"
#include "replay_check.hpp"
#include "tests/support/demo_config.hpp"
#include "tools/sim/harness.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cobble::test {

/// The report of a successful result as a 7.20 client with app_info.xml sends it: the demo
/// app's version 1.00, 100 s elapsed, one 64-byte output (`<result>_0`) of MD5 `md5`.
inline reported_result success_report(const std::string& name,
                                      const std::string& md5 = "0123456789abcdef0123456789abcdef") {
  reported_result r;
  r.name = name;
  r.state = 5;
  r.final_cpu_time = 95;
  r.final_elapsed_time = 100;
  r.platform = "x86_64-pc-linux-gnu";
  r.version_num = 100;
  r.files.push_back(reported_file{name + "_0", 64, md5});
  return r;
}

/// A Catch2 fixture (TEST_CASE_METHOD); tests derive from it to add their requests.
class node_fixture {
public:
  /// The tests' node: `cfg`, durable appends as in `cobbled`; `files`: the data directory's
  /// files and the assimilator.
  static sim::harness_options
  options(config::cobble_config cfg = cobble::test::demo_config(), bool files = false) {
    sim::harness_options o;
    o.config = std::move(cfg);
    o.durability = storage::durability::sync;
    o.files = files;
    return o;
  }

  explicit node_fixture(sim::harness_options opts = options()) : node(std::move(opts)) { attach(); }

  checked_harness node;
  project_actor project; ///< The configuration's first project.
  std::string auth;      ///< The account key of its first user.

private:
  std::map<id_type, std::string> cpids_; ///< Of the clients given an id (send_rpc).
  mutable std::uint64_t new_clients_ = 0;

public:
  storage::event_store& store() { return node.store(); }

  /// Moves virtual time and lets every timer's actor run.
  void advance(time_us t) { node.advance(t); }

  /// Starts the node again after stop() (a restart on the same data directory).
  void start() {
    REQUIRE_NOTHROW(node.start());
    attach();
  }

  /// The node's orderly shutdown: projects, a final snapshot, the log.
  std::uint64_t stop() {
    project = project_actor{};
    return node.stop();
  }

  /// Sends a request, runs every actor until nothing is left to do, and returns the answer.
  template <class T, class Handle, class... Ts>
  T ask(const Handle& dest, Ts&&... xs) {
    auto answer = node.try_ask<T>(dest, std::forward<Ts>(xs)...);
    REQUIRE(answer.has_value());
    if (!*answer)
      FAIL("unexpected error: " << describe(answer->error()));
    return std::move(**answer);
  }

  /// Like ask(), for a request that must fail.
  template <class T, class Handle, class... Ts>
  caf::error ask_error(const Handle& dest, Ts&&... xs) {
    auto answer = node.try_ask<T>(dest, std::forward<Ts>(xs)...);
    REQUIRE(answer.has_value());
    if (*answer)
      FAIL("expected an error");
    return answer->error();
  }

  /// What the port got for one RPC.
  using answered = sim::harness::rpc_outcome;

  /// A scheduler RPC on the server's path (parked in the port, sent with its token) with
  /// every message it causes processed. With `upload`, the outputs of the successes it
  /// reports are uploaded first, as a client does (harness::upload_outputs); an attacker's
  /// RPC that reports outputs it never uploaded passes false.
  answered send_rpc(std::shared_ptr<sched_request> r, bool upload = true) {
    if (upload)
      node.upload_outputs(project, *r);
    auto asked_id = r->hostid;
    auto cpid = r->host.host_cpid;
    auto out = node.send_rpc(project, std::move(r));
    CHECK(node.port().waiting() == 0);
    // The client keeps its CPID under the id it was given (cpid_for).
    if (asked_id == 0 && out.reply && out.reply->hostid.value_or(0) != 0)
      cpids_.emplace(*out.reply->hostid, cpid);
    return out;
  }

  /// The CPID a test host reports, as a BOINC client keeps one per installation: a request
  /// without a host id comes from a new client (a CPID of its own, so that test hosts are
  /// never taken for one host attached again: project_state::host_with_cpid), a request with
  /// an id from the client it was given to. A test of reattaching sets the CPID it means.
  std::string cpid_for(id_type hostid) const {
    if (hostid != 0)
      if (auto i = cpids_.find(hostid); i != cpids_.end())
        return i->second;
    return hostid == 0 ? "test-new-client-" + std::to_string(++new_clients_)
                       : "test-host-" + std::to_string(hostid);
  }

  /// send_rpc() answered once, by the log once durable.
  sched_reply_ptr rpc(std::shared_ptr<sched_request> r, bool upload = true) {
    auto a = send_rpc(std::move(r), upload);
    REQUIRE(a.calls == 1);
    REQUIRE(a.reply);
    return a.reply;
  }

  /// A scheduler request as a BOINC 7.20 client with app_info.xml (the anonymous platform)
  /// sends it: the demo app's version 1.00 on x86_64 Linux, a host of 1 GFLOPS; a test's own
  /// request() adds the rest.
  std::shared_ptr<sched_request>
  anonymous_request(id_type hostid, double req_secs, std::vector<reported_result> results) const {
    auto r = std::make_shared<sched_request>();
    r->authenticator = auth;
    r->hostid = hostid;
    r->core_client_major_version = 7;
    r->core_client_minor_version = 20;
    r->platform_name = "anonymous";
    r->cpu.req_secs = req_secs;
    r->cpu.req_instances = req_secs > 0 ? 1 : 0;
    r->host.host_cpid = cpid_for(hostid);
    r->host.domain_name = "volunteer";
    r->host.p_fpops = 1e9;
    r->host.os_name = "Linux";
    r->app_versions.push_back(
      client_app_version{"testapp", 100, "x86_64-pc-linux-gnu", "", 1, 0, resource_type::cpu, 0});
    r->results = std::move(results);
    return r;
  }

  workunit_view_ptr workunit(const std::string& name) {
    return ask<workunit_view_ptr>(project, atom::workunit_v, name);
  }

  host_view_ptr host(id_type id) { return ask<host_view_ptr>(project, atom::host_v, id); }

  project_summary_ptr status() { return ask<project_summary_ptr>(project, atom::status_v); }

private:
  /// Takes the project's handle and its first user's account key from the running node.
  void attach() {
    REQUIRE(node.running());
    project = node.handles().projects.at(node.config().projects.at(0).name);
    auto users = ask<user_list_ptr>(project, atom::list_v, atom::user_v);
    REQUIRE(!users->empty());
    auth = users->at(0).authenticator;
  }
};

} // namespace cobble::test
