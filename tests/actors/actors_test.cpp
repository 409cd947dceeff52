/// Deterministic actor tests: a whole node (log, project, host and app-version actors) on
/// CAF's test coordinator, a real event store in a fresh temporary directory, and a manual
/// clock. Scheduler RPCs come in as a 7.20 anonymous-platform client would send them.

#include "../support/node_fixture.hpp"
#include "actors/code_sign.hpp"
#include "actors/error.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "storage/event_store.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace cobble;

namespace {

constexpr double delay_bound = 604800; // the demo app's, in seconds

reported_result success(const std::string& name, const std::string& md5) {
  return test::success_report(name, md5);
}

/// The demo project's node (tests/support/node_fixture.hpp).
struct actor_fixture : test::node_fixture {
  /// A scheduler request as a BOINC 7.20 client with app_info.xml sends it.
  std::shared_ptr<sched_request>
  request(std::uint64_t hostid, double req_secs, std::vector<reported_result> results = {}) {
    auto r = anonymous_request(hostid, req_secs, std::move(results));
    r->rpc_seqno = 1;
    r->core_client_release = 2;
    r->host.p_ncpus = 2;
    return r;
  }

  work_created_ptr create(const std::vector<std::string>& names) {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    for (auto& n : names) {
      work_spec w;
      w.app = "testapp";
      w.name = n;
      w.inputs.push_back(input_spec{"in_" + n, "in.txt", 1000, "0123456789abcdef0123456789abcdef"});
      b->items.push_back(std::move(w));
    }
    return ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
  }

  double now_seconds() const { return us_to_seconds(node.now()); }
};

} // namespace

TEST_CASE("the reply names the volunteer's team, and no team when there is none", "[actors]") {
  // The BOINC Manager shows <team_name> from the reply in the project's properties.
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).users.at(0).team = "Team <A&B>";
  cfg.projects.at(0).users.push_back({"loner", "loner@example.org", "key-loner"});
  test::node_fixture f(test::node_fixture::options(cfg));
  CHECK(f.rpc(f.anonymous_request(0, 0, {}))->team_name == "Team <A&B>");
  auto alone = f.anonymous_request(0, 0, {});
  alone->authenticator = "key-loner";
  auto reply = f.rpc(alone);
  CHECK(reply->user_name == "loner");
  CHECK(reply->team_name.empty());
}

TEST_CASE_METHOD(actor_fixture, "a new host gets an id and a job with everything it needs",
                 "[actors]") {
  auto created = create({"job"});
  REQUIRE(created->names == std::vector<std::string>{"job"});
  auto before = store().last_seq();
  auto reply = rpc(request(0, 3600));
  REQUIRE(reply->hostid.has_value());
  auto h1 = *reply->hostid;
  CHECK(h1 > 0);
  CHECK(reply->project_name == "Cobble demo project");
  CHECK(reply->user_name == "demo");
  CHECK(reply->messages.empty());
  REQUIRE(reply->results.size() == 1);
  REQUIRE(reply->workunits.size() == 1);
  const auto& res = reply->results[0];
  CHECK(res.wu_name == "job");
  CHECK(res.name.rfind("job_", 0) == 0);
  CHECK(res.report_deadline == Approx(now_seconds() + delay_bound));
  CHECK(res.report_deadline > now_seconds());
  CHECK(res.platform == "x86_64-pc-linux-gnu");
  CHECK(res.version_num == 100);
  CHECK(res.plan_class.empty());
  CHECK(reply->workunits[0].name == "job");
  CHECK(reply->workunits[0].app_name == "testapp");
  // The input to download and the output to upload.
  REQUIRE(reply->files.size() == 2);
  CHECK(reply->files[0].name == "in_job");
  CHECK(reply->files[0].md5_cksum == "0123456789abcdef0123456789abcdef");
  CHECK_FALSE(reply->files[0].is_output);
  CHECK(reply->files[1].is_output);
  CHECK(reply->files[1].name == res.name + "_0");
  // The registration and the dispatch are durable before the reply.
  CHECK(store().last_seq() == before + 2);
  auto w = workunit("job");
  auto index = w->wu.results[0].host == h1 ? 0 : 1;
  CHECK(w->wu.results[index].state == result_state::in_progress);
  CHECK(w->result_names[index] == res.name);

  // The same host again, with its id, once the minimum interval between work requests (the
  // demo's request_delay) has passed: no new id, and not the other replica of the workunit.
  advance(seconds_to_us(5));
  auto again = rpc(request(h1, 3600));
  CHECK(again->messages.empty());
  CHECK_FALSE(again->hostid.has_value());
  CHECK(again->results.empty());

  // A second host gets the other replica.
  auto second = rpc(request(0, 3600));
  REQUIRE(second->hostid.has_value());
  CHECK(*second->hostid != h1);
  REQUIRE(second->results.size() == 1);
  CHECK(second->results[0].wu_name == "job");
  CHECK(second->results[0].name != res.name);
  CHECK(status()->hosts == 2);
  CHECK(status()->results_in_progress == 2);
}

TEST_CASE_METHOD(actor_fixture, "two agreeing reports make the workunit assimilated", "[actors]") {
  create({"job"});
  auto r1 = rpc(request(0, 3600));
  auto r2 = rpc(request(0, 3600));
  REQUIRE(r1->results.size() == 1);
  REQUIRE(r2->results.size() == 1);
  auto h1 = *r1->hostid;
  auto h2 = *r2->hostid;
  auto name1 = r1->results[0].name;
  auto name2 = r2->results[0].name;

  auto ack1 = rpc(request(h1, 0, {success(name1, "feedface")}));
  CHECK(ack1->result_acks == std::vector<std::string>{name1});
  CHECK(ack1->results.empty());
  CHECK(workunit("job")->wu.state == wu_state::active);

  auto ack2 = rpc(request(h2, 0, {success(name2, "feedface")}));
  CHECK(ack2->result_acks == std::vector<std::string>{name2});
  auto w = workunit("job");
  CHECK(w->wu.state == wu_state::assimilated);
  REQUIRE(w->wu.canonical.has_value());
  CHECK(w->result_names[*w->wu.canonical] == name1);
  for (const auto& r : w->wu.results) {
    CHECK(r.state == result_state::over);
    CHECK(r.outcome == result_outcome::success);
    CHECK(r.validation == validate_state::valid);
  }
  auto s = status();
  CHECK(s->counters.results_reported == 2);
  CHECK(s->counters.workunits_validated == 1);
  CHECK(s->counters.workunits_assimilated == 1);
  CHECK(s->active_workunits == 0);
  // The hosts' statistics count the successes.
  auto hv = host(h1);
  REQUIRE(hv->state.has_value());
  CHECK(hv->state->in_progress.empty());
  CHECK(hv->state->results_reported == 1);
  CHECK(hv->state->app_versions.at(anonymous_version_id(1, 0)).n_success == 1);
  CHECK(hv->state->app_versions.at(anonymous_version_id(1, 0)).elapsed_sum == 100);
}

TEST_CASE_METHOD(actor_fixture, "reports that do not count are acknowledged and change nothing",
                 "[actors]") {
  create({"job"});
  auto r1 = rpc(request(0, 3600));
  auto r2 = rpc(request(0, 3600));
  auto h1 = *r1->hostid;
  auto h2 = *r2->hostid;
  auto name1 = r1->results.at(0).name;

  SECTION("a result that was not sent to this host") {
    auto seq = store().last_seq();
    auto reply = rpc(request(h2, 0, {success(name1, "feedface")}));
    CHECK(reply->result_acks == std::vector<std::string>{name1});
    CHECK(store().last_seq() == seq);
    auto w = workunit("job");
    CHECK(w->wu.results[0].state == result_state::in_progress);
    CHECK(w->wu.results[0].host == h1);
    CHECK(status()->counters.results_reported == 0);
    // The real holder can still report it.
    auto real = rpc(request(h1, 0, {success(name1, "feedface")}));
    CHECK(real->result_acks == std::vector<std::string>{name1});
    CHECK(status()->counters.results_reported == 1);
  }
  SECTION("a name that is no result at all") {
    auto seq = store().last_seq();
    auto reply = rpc(request(h1, 0, {success("nonsense_7", "x")}));
    CHECK(reply->result_acks == std::vector<std::string>{"nonsense_7"});
    CHECK(store().last_seq() == seq);
  }
  SECTION("the same report twice, in one RPC and in the next") {
    auto reply = rpc(request(h1, 0, {success(name1, "feedface"), success(name1, "feedface")}));
    CHECK(reply->result_acks == std::vector<std::string>{name1, name1});
    CHECK(status()->counters.results_reported == 1);
    auto seq = store().last_seq();
    auto again = rpc(request(h1, 0, {success(name1, "feedface")}));
    CHECK(again->result_acks == std::vector<std::string>{name1});
    CHECK(store().last_seq() == seq);
    CHECK(status()->counters.results_reported == 1);
    CHECK(host(h1)->state->results_reported == 1);
  }
}

TEST_CASE_METHOD(actor_fixture, "an unknown account key is refused and nothing is recorded",
                 "[actors]") {
  create({"job"});
  auto seq = store().last_seq();
  auto r = request(0, 3600);
  r->authenticator = "not-a-key";
  auto reply = rpc(r);
  CHECK_FALSE(reply->hostid.has_value());
  REQUIRE(reply->messages.size() == 1);
  CHECK_FALSE(reply->messages[0].text.empty());
  CHECK(reply->request_delay > 0);
  CHECK(reply->results.empty());
  CHECK(store().last_seq() == seq);
  CHECK(status()->hosts == 0);
  CHECK(status()->counters.results_dispatched == 0);
}

TEST_CASE_METHOD(actor_fixture, "an RPC's reply is handed to the port once its events are durable",
                 "[actors]") {
  // The edge's path: no response message; the log hands the reply to the port right after
  // the commit that made the RPC's events durable.
  create({"job"});
  auto before = store().last_seq();
  auto sent = send_rpc(request(0, 3600));
  // When it was handed over, its events (the registration and the dispatch) were stored.
  REQUIRE(sent.calls == 1);
  CHECK(sent.durable_at == before + 2);
  auto rendered = sent.reply;
  REQUIRE(rendered);
  REQUIRE(rendered->hostid.has_value());
  REQUIRE(rendered->results.size() == 1);
  CHECK(rendered->results[0].wu_name == "job");
  auto w = workunit("job");
  auto index = w->wu.results[0].host == *rendered->hostid ? 0 : 1;
  CHECK(w->wu.results[index].state == result_state::in_progress);
  CHECK(w->result_names[index] == rendered->results[0].name);

  // A report: acknowledged only once the report is durable.
  auto h = *rendered->hostid;
  before = store().last_seq();
  auto report = request(h, 0, {success(rendered->results[0].name, "md5")});
  auto acked = send_rpc(report);
  REQUIRE(acked.calls == 1);
  CHECK(acked.reply->result_acks == std::vector<std::string>{report->results[0].name});
  CHECK(acked.durable_at >= before + 1);
  REQUIRE(host(h)->state);
  CHECK(host(h)->state->in_progress.empty());
}

TEST_CASE_METHOD(actor_fixture, "a report with a work request is handed over once, durable",
                 "[actors]") {
  // The project decides such an RPC in one step: the host's report goes to the log with the
  // project's dispatch, before it, and the reply leaves once both are durable; the project
  // learns the report once and the host its new job.
  create({"job", "next"});
  auto sent = send_rpc(request(0, 1));
  REQUIRE(sent.calls == 1);
  REQUIRE(sent.reply->hostid.has_value());
  REQUIRE(sent.reply->results.size() == 1);
  auto h = *sent.reply->hostid;
  auto first = sent.reply->results[0];

  advance(seconds_to_us(5)); // the minimum interval between work requests (request_delay)
  // The client uploads the output first (its own step, before the report).
  auto report = request(h, 1, {success(first.name, "md5")});
  node.upload_outputs(project, *report);
  auto before = store().last_seq();
  auto next = send_rpc(report, false);
  REQUIRE(next.calls == 1);
  CHECK(next.reply->result_acks == std::vector<std::string>{first.name});
  REQUIRE(next.reply->results.size() == 1);
  auto second = next.reply->results[0];
  CHECK(second.wu_name != first.wu_name);
  // Durable at hand-over, in this order: the report, then the dispatch.
  std::vector<std::uint16_t> kinds;
  REQUIRE_FALSE(store().scan(before + 1, next.durable_at, [&](const storage::event_record& r) {
    kinds.push_back(r.kind);
    return true;
  }));
  REQUIRE(kinds.size() >= 2);
  CHECK(kinds[0] == ev::result_reported::kind);
  CHECK(std::count(kinds.begin(), kinds.end(), ev::result_dispatched::kind) == 1);
  // The project applied the report once; the host holds the new job only.
  CHECK(status()->counters.results_reported == 1);
  CHECK(status()->counters.results_dispatched == 2);
  auto view = host(h);
  REQUIRE(view->state);
  CHECK(view->state->in_progress.size() == 1);
  CHECK(view->state->in_progress.count(second.name) == 1);
  // And the host accepts the report of that job in its next RPC.
  auto ack = rpc(request(h, 0, {success(second.name, "md5")}));
  CHECK(ack->result_acks == std::vector<std::string>{second.name});
  CHECK(status()->counters.results_reported == 2);
  REQUIRE(host(h)->state);
  CHECK(host(h)->state->in_progress.empty());
}

TEST_CASE_METHOD(actor_fixture, "a refusal is handed to the port at once", "[actors]") {
  auto seq = store().last_seq();
  auto r = request(0, 3600);
  r->authenticator = "not-a-key";
  auto sent = send_rpc(r);
  REQUIRE(sent.reply);
  CHECK(sent.calls == 1);
  CHECK_FALSE(sent.reply->hostid.has_value());
  REQUIRE(sent.reply->messages.size() == 1);
  CHECK(sent.reply->userid == 0);
  CHECK(store().last_seq() == seq);
}

TEST_CASE_METHOD(actor_fixture, "an unknown workunit is an error", "[actors]") {
  auto err = ask_error<workunit_view_ptr>(project, atom::workunit_v, std::string{"nope"});
  CHECK(is(err, ec::unknown_workunit));
  auto b = std::make_shared<work_batch>();
  b->items.push_back(work_spec{});
  b->items[0].app = "nosuchapp";
  auto seq = store().last_seq();
  err = ask_error<work_created_ptr>(project, atom::create_v, work_batch_ptr{b});
  CHECK(is(err, ec::unknown_app));
  CHECK(store().last_seq() == seq);
}

TEST_CASE_METHOD(actor_fixture, "a missed deadline times the result out and replaces it",
                 "[actors]") {
  create({"job"});
  auto r1 = rpc(request(0, 3600));
  auto h1 = *r1->hostid;
  auto name1 = r1->results.at(0).name;

  // Ticks before the deadline change nothing.
  // The project's sweeps are timers on the project's clock: advancing it runs them.
  advance(seconds_to_us(delay_bound - 60));
  CHECK(workunit("job")->wu.results[0].state == result_state::in_progress);
  CHECK(status()->counters.results_timed_out == 0);

  // Past the deadline, the project's next deadline sweep times it out.
  advance(seconds_to_us(120));
  auto w = workunit("job");
  REQUIRE(w->wu.results.size() == 3);
  CHECK(w->wu.results[0].state == result_state::over);
  CHECK(w->wu.results[0].outcome == result_outcome::no_reply);
  CHECK(w->wu.results[1].state == result_state::unsent);
  CHECK(w->wu.results[2].state == result_state::unsent);
  CHECK(w->wu.state == wu_state::active);
  auto s = status();
  CHECK(s->counters.results_timed_out == 1);
  CHECK(s->counters.results_created == 3);
  auto hv = host(h1);
  CHECK(hv->state->in_progress.empty());
  CHECK(hv->state->app_versions.at(anonymous_version_id(1, 0)).n_timeout == 1);

  // Another sweep does not time it out again.
  advance(seconds_to_us(60));
  CHECK(status()->counters.results_timed_out == 1);

  // A late report counts while its workunit can use it (lost_results_test.cpp), once.
  auto late = rpc(request(h1, 0, {success(name1, "feedface")}));
  CHECK(late->result_acks == std::vector<std::string>{name1});
  CHECK(status()->counters.results_reported == 1);
  CHECK(status()->counters.results_late == 1);
  CHECK(workunit("job")->wu.results[0].outcome == result_outcome::success);
  rpc(request(h1, 0, {success(name1, "feedface")}));
  CHECK(status()->counters.results_reported == 1);

  // The replacements go to other hosts, with a deadline from their own dispatch.
  auto r2 = rpc(request(0, 3600));
  REQUIRE(r2->results.size() == 1);
  CHECK(r2->results[0].report_deadline == Approx(now_seconds() + delay_bound));
  auto r3 = rpc(request(0, 3600));
  REQUIRE(r3->results.size() == 1);
  CHECK(r3->results[0].name != r2->results[0].name);
}

TEST_CASE_METHOD(actor_fixture, "replaying the log rebuilds what the actors hold", "[actors]") {
  create({"a", "b", "c"});
  auto r1 = rpc(request(0, 7200)); // two jobs
  auto r2 = rpc(request(0, 7200));
  REQUIRE(r1->results.size() == 2);
  REQUIRE(r2->results.size() == 2);
  auto h1 = *r1->hostid;
  auto h2 = *r2->hostid;
  // Host 1 reports both; host 2 agrees on one, disagrees on the other.
  rpc(request(h1, 0, {success(r1->results[0].name, "aa"), success(r1->results[1].name, "bb")}));
  rpc(request(h2, 0, {success(r2->results[0].name, "aa"), success(r2->results[1].name, "xx")}));
  auto s = status();
  CHECK(s->counters.workunits_assimilated == 1);
  CHECK(s->counters.results_created == 7); // 3 x 2, plus one for the disagreement

  auto replayed = recover(store(), true);
  REQUIRE(static_cast<bool>(replayed));
  CHECK(replayed->seq == store().last_seq());
  REQUIRE(replayed->projects.size() == 1);
  const auto& pw = replayed->projects[0];
  auto list = ask<workunit_list_ptr>(project, atom::list_v, atom::workunit_v, std::uint64_t{0},
                                     std::uint64_t{100});
  REQUIRE(list->size() == 3);
  for (const auto& v : *list) {
    INFO("workunit " << v.wu.name);
    REQUIRE(pw.project.workunits.count(v.wu.id) == 1);
    CHECK(pw.project.workunits.at(v.wu.id) == v.wu);
  }
  CHECK(pw.project.counters == s->counters);
  for (auto h : {h1, h2}) {
    auto hv = host(h);
    REQUIRE(hv->state.has_value());
    REQUIRE(pw.hosts.count(h) == 1);
    CHECK(pw.hosts.at(h) == *hv->state);
  }
  CHECK(pw.app_versions.at(anonymous_version_id(1, 0)).n_valid == 2);

  // A snapshot taken now equals the full replay, and recovery starts from it.
  auto snap_seq = ask<std::uint64_t>(node.handles().log, atom::snapshot_v);
  CHECK(snap_seq == store().last_seq());
  auto snaps = store().list_snapshots();
  REQUIRE(static_cast<bool>(snaps));
  REQUIRE_FALSE(snaps->empty());
  CHECK(snaps->back().seq == snap_seq);
  auto from_snapshot = recover(store());
  REQUIRE(static_cast<bool>(from_snapshot));
  CHECK(*from_snapshot == *replayed);
  auto blob = store().read_snapshot(snap_seq);
  REQUIRE(static_cast<bool>(blob));
  auto decoded = decode_snapshot(*blob);
  REQUIRE(decoded.has_value());
  CHECK(*decoded == *replayed);

  // The snapshotter keeps no copy of the world: a later snapshot is rebuilt from the previous
  // one and the events after it, and it too equals the full replay.
  create({"d"});
  rpc(request(h1, 3600));
  auto later_seq = ask<std::uint64_t>(node.handles().log, atom::snapshot_v);
  CHECK(later_seq == store().last_seq());
  CHECK(later_seq > snap_seq);
  auto full = recover(store(), true);
  REQUIRE(static_cast<bool>(full));
  auto later_blob = store().read_snapshot(later_seq);
  REQUIRE(static_cast<bool>(later_blob));
  auto later = decode_snapshot(*later_blob);
  REQUIRE(later.has_value());
  CHECK(later->seq == later_seq);
  CHECK(*later == *full);
  CHECK(later->projects[0].project.workunits.size() == 4);

  // A snapshot of an older format (as written before an upgrade) is skipped: recovery
  // replays the log instead of failing on it (up to that snapshot's seq, so that the later
  // one is not used).
  auto older = *blob;
  older[0] = static_cast<char>(snapshot_version - 1);
  REQUIRE_FALSE(store().write_snapshot(snap_seq, older));
  auto from_older = recover(store(), false, snap_seq);
  REQUIRE(static_cast<bool>(from_older));
  CHECK(*from_older == *replayed);
}

TEST_CASE_METHOD(actor_fixture, "a restarted node continues where it stopped", "[actors]") {
  create({"job"});
  auto r1 = rpc(request(0, 3600));
  auto h1 = *r1->hostid;
  auto name1 = r1->results.at(0).name;
  auto final_seq = stop();
  CHECK(final_seq == store().last_seq());
  auto before = recover(store(), true);
  REQUIRE(static_cast<bool>(before));

  start();
  // Starting again records nothing new: same configuration, same user, same account key.
  CHECK(store().last_seq() == final_seq);
  CHECK(node.handles().recovered_seq == final_seq);
  auto w = workunit("job");
  CHECK(w->wu == before->projects[0].project.workunits.at(w->wu.id));
  // The host is known: no new id, and its report counts.
  auto reply = rpc(request(h1, 0, {success(name1, "feedface")}));
  CHECK_FALSE(reply->hostid.has_value());
  CHECK(reply->result_acks == std::vector<std::string>{name1});
  CHECK(status()->counters.results_reported == 1);
  CHECK(status()->hosts == 1);
  auto hv = host(h1);
  CHECK(hv->state->results_reported == 1);
  CHECK(hv->state->in_progress.empty());
}

TEST_CASE_METHOD(actor_fixture, "a version added while the node runs gets its actor and stays",
                 "[actors]") {
  auto keys = generate_code_sign_keys();
  REQUIRE(keys);
  auto change = [&](app_change c) {
    c.by = "admin";
    auto answer = node.try_ask_tuple<std::uint32_t, bool>(
      project, atom::app_v, app_change_ptr{std::make_shared<app_change>(std::move(c))});
    REQUIRE(answer.has_value());
    return *answer;
  };
  app_change key;
  key.what = app_change::op::add_key;
  key.public_key = keys->public_key;
  auto k = change(key);
  REQUIRE(k);
  CHECK(*k == std::make_tuple(std::uint32_t{1}, true));

  app_change add;
  add.what = app_change::op::add_version;
  add.app = "testapp";
  add.version.platform = "x86_64-pc-linux-gnu";
  add.version.version_num = 101;
  auto& f = add.version.files.emplace_back();
  f.name = "testapp_101";
  f.open_name = "testapp";
  f.nbytes = 4096;
  f.md5 = "0123456789abcdef0123456789abcdef";
  f.main_program = f.executable = true;
  auto sig = sign_md5(keys->private_key, f.md5);
  REQUIRE(sig);
  f.signature = *sig;
  auto added = change(add);
  REQUIRE(added);
  CHECK(*added == std::make_tuple(std::uint32_t{2}, true));
  auto retry = change(add);
  REQUIRE(retry);
  CHECK(*retry == std::make_tuple(std::uint32_t{2}, false));
  auto seq = store().last_seq();
  auto next = add;
  next.version.version_num = 102;
  next.version.files[0].name = "testapp_102";
  next.version.files[0].signature = "00\n.\n";
  auto forged = change(next);
  REQUIRE_FALSE(forged);
  CHECK(is(forged.error(), ec::invalid_argument));
  CHECK(store().last_seq() == seq); // a refusal records nothing

  // The version has its statistics' actor, as if it had been configured.
  auto world = ask<project_world_ptr>(project, atom::state_v);
  CHECK(world->app_versions.count(2) == 1);
  app_change off;
  off.what = app_change::op::deprecate_version;
  off.app = "testapp";
  off.version_id = 2;
  auto deprecated = change(off);
  REQUIRE(deprecated);
  CHECK(*deprecated == std::make_tuple(std::uint32_t{2}, true));

  // A restart keeps the version and the key, and records nothing new.
  auto final_seq = stop();
  start();
  CHECK(store().last_seq() == final_seq);
  world = ask<project_world_ptr>(project, atom::state_v);
  CHECK(world->app_versions.count(2) == 1);
  REQUIRE(world->project.code_sign_keys.size() == 1);
  const auto* app = world->project.app(std::string_view{"testapp"});
  REQUIRE(app != nullptr);
  REQUIRE(app->versions.size() == 2);
  CHECK(app->versions[1].files == add.version.files);
  CHECK(app->versions[1].deprecated);
}

// -- validation on what arrived ----------------------------------------------------------------

namespace {

/// Two hosts of the one user each take a replica of the quorum-2 workunit "wu".
struct two_hosts_fixture : actor_fixture {
  two_hosts_fixture() {
    create({"wu"});
    auto a = rpc(request(0, 3600));
    auto b = rpc(request(0, 3600));
    REQUIRE(a->hostid);
    REQUIRE(b->hostid);
    REQUIRE(a->results.size() == 1);
    REQUIRE(b->results.size() == 1);
    REQUIRE(*a->hostid != *b->hostid);
    hosts = {*a->hostid, *b->hostid};
    results = {a->results[0].name, b->results[0].name};
  }

  /// The upload handler's message once output 0 of result i is stored: its size and the MD5
  /// the server computed of it.
  void upload(std::size_t i, const std::string& md5) {
    CHECK(ask<bool>(project, atom::upload_v, results[i] + "_0", hosts[i], std::uint64_t{64}, md5));
  }

  /// Host i reports success with output 0 of `md5`, without uploading anything now.
  void report(std::size_t i, const std::string& md5) {
    auto reply = rpc(request(hosts[i], 0, {success(results[i], md5)}), false);
    CHECK(reply->result_acks == std::vector<std::string>{results[i]});
  }

  /// The credit the user and its hosts were granted, as the admin API shows it.
  double user_credit() {
    auto users = ask<user_list_ptr>(project, atom::list_v, atom::user_v);
    REQUIRE(users->size() == 1);
    return users->at(0).credit.total;
  }
  double host_credit(std::size_t i) { return host(hosts[i])->reg.credit.total; }

  std::vector<id_type> hosts;
  std::vector<std::string> results;
};

const std::string invented = "0123456789abcdef0123456789abcdef";

} // namespace

TEST_CASE_METHOD(two_hosts_fixture,
                 "replicas that report an invented md5 and upload nothing are not validated",
                 "[actors][validation]") {
  // The attack of issue 19: both replicas claim the same output, neither uploaded it.
  report(0, invented);
  report(1, invented);
  auto w = workunit("wu");
  CHECK_FALSE(w->wu.canonical.has_value());
  CHECK(w->wu.state == wu_state::active);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(w->wu.results[i].outcome == result_outcome::success);
    CHECK(w->wu.results[i].validation == validate_state::invalid);
    CHECK(host_credit(i) == 0);
  }
  CHECK(user_credit() == 0);
  CHECK(status()->counters.workunits_validated == 0);
  CHECK(status()->counters.workunits_assimilated == 0);
  // The workunit still needs its quorum: two new replicas, for hosts that upload.
  CHECK(w->wu.results.size() == 4);
}

TEST_CASE_METHOD(two_hosts_fixture,
                 "replicas that upload different bytes disagree whatever md5 they report",
                 "[actors][validation]") {
  upload(0, "00000000000000000000000000000001");
  upload(1, "00000000000000000000000000000002");
  report(0, invented);
  report(1, invented);
  auto w = workunit("wu");
  CHECK_FALSE(w->wu.canonical.has_value());
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(w->wu.results[i].validation != validate_state::valid);
    CHECK(host_credit(i) == 0);
  }
  CHECK(user_credit() == 0);
  CHECK(status()->counters.workunits_validated == 0);
  // Inconclusive: one more opinion.
  CHECK(w->wu.results.size() == 3);
}

TEST_CASE_METHOD(two_hosts_fixture, "replicas that upload equal bytes are validated",
                 "[actors][validation]") {
  upload(0, invented);
  upload(1, invented);
  // What they report does not matter: the server's digests agree.
  report(0, "ffffffffffffffffffffffffffffffff");
  report(1, invented);
  auto w = workunit("wu");
  REQUIRE(w->wu.canonical.has_value());
  CHECK(w->wu.state == wu_state::assimilated);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(w->wu.results[i].validation == validate_state::valid);
    CHECK(w->wu.results[i].arrived->at(0).md5 == invented);
    CHECK(host_credit(i) > 0);
  }
  CHECK(user_credit() > 0);
}

TEST_CASE_METHOD(two_hosts_fixture, "an upload is recorded only for the host holding the result",
                 "[actors][validation]") {
  // Host 1 cannot upload (or overwrite) host 0's output, nor a file of no result.
  CHECK(is(ask_error<bool>(project, atom::upload_v, results[0] + "_0", hosts[1], std::uint64_t{64},
                           invented),
           ec::unknown_workunit));
  CHECK(is(ask_error<bool>(project, atom::upload_v, results[0] + "_7", hosts[0], std::uint64_t{64},
                           invented),
           ec::unknown_workunit));
  CHECK(workunit("wu")->wu.results[0].arrived->empty());
  // The same digest twice is one event.
  auto before = store().last_seq();
  upload(0, invented);
  upload(0, invented);
  CHECK(store().last_seq() == before + 1);
}
