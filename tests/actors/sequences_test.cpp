/// Deterministic tests of work sequences (docs/sequences.md): a whole node on CAF's test
/// coordinator with a manual clock, driven by scheduler RPCs as Cobble's client library sends
/// them (listing the sequences it holds) and by the commands the admin API sends. The two
/// examples of the design (a climate run, a set of trajectories), relocation, reassignment,
/// revocation, replicated sequences, and the refusals.

#include "../support/node_fixture.hpp"
#include "actors/error.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "config/config.hpp"
#include "storage/event_store.hpp"
#include "storage/file_store.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

using namespace cobble;

namespace {

constexpr time_us day = 86400 * us_per_second;

/// A successful report; `md5` empty: a heartbeat without output files.
reported_result success(const std::string& name, const std::string& md5 = {}) {
  reported_result r;
  r.name = name;
  r.state = 5;
  r.exit_status = 0;
  r.final_cpu_time = 3000;
  r.final_elapsed_time = 3600;
  r.platform = "x86_64-pc-linux-gnu";
  r.version_num = 100;
  if (!md5.empty())
    r.files.push_back(reported_file{name + "_0", 4096, md5});
  return r;
}

/// The demo project's node (tests/support/node_fixture.hpp), its checks hourly.
struct seq_fixture : test::node_fixture {
  static config::cobble_config make_config(int jobs_per_day) {
    auto cfg = cobble::test::demo_config();
    auto& p = cfg.projects.at(0);
    p.sequence_check_interval = 3600;
    p.deadline_check_interval = 3600;
    if (jobs_per_day > 0)
      p.apps.at(0).max_jobs_per_day = jobs_per_day;
    return cfg;
  }

  /// `with_files`: the data directory's files (with an assimilator); `jobs_per_day` > 0: the
  /// demo app's max_jobs_per_day (the daily quota per CPU).
  explicit seq_fixture(bool with_files = false, int jobs_per_day = 0)
    : node_fixture(options(make_config(jobs_per_day), with_files)) {}

  /// A request from Cobble's client library: anonymous platform, the sequences it holds.
  std::shared_ptr<sched_request>
  request(id_type hostid, double req_secs, std::vector<reported_result> results = {},
          std::vector<std::string> held = {}) {
    auto r = anonymous_request(hostid, req_secs, std::move(results));
    r->host.p_ncpus = 1; // the demo app's 3.6e12 FLOPs at 1e9 FLOPS: one hour per element
    r->sequences_held = std::move(held);
    return r;
  }

  id_type new_host() {
    auto reply = rpc(request(0, 0));
    REQUIRE(reply->hostid.has_value());
    return *reply->hostid;
  }

  sequence_view_ptr create(const std::string& name, std::uint32_t count, std::uint32_t state_every,
                           std::uint8_t replicas = 1, double max_result_time = 3 * 86400,
                           double delay_bound = 10 * 86400) {
    auto s = std::make_shared<sequence_spec>();
    s->name = name;
    s->app = "testapp";
    s->count = count;
    s->state_every = state_every;
    s->replicas = replicas;
    s->max_result_time = max_result_time;
    s->delay_bound = delay_bound;
    s->by = "alice";
    return ask<sequence_view_ptr>(project, atom::create_v, sequence_spec_ptr{std::move(s)});
  }

  sequence_view_ptr show(const std::string& key) {
    return ask<sequence_view_ptr>(project, atom::sequence_v, key);
  }

  static std::shared_ptr<seq_command> command(seq_command::op what, std::string by = "bob") {
    auto c = std::make_shared<seq_command>();
    c->what = what;
    c->by = std::move(by);
    return c;
  }

  sequence_view_ptr run(const std::string& key, std::shared_ptr<seq_command> c) {
    return ask<sequence_view_ptr>(project, atom::command_v, key, seq_command_ptr{std::move(c)});
  }

  caf::error refuse(const std::string& key, std::shared_ptr<seq_command> c) {
    return ask_error<sequence_view_ptr>(project, atom::command_v, key,
                                        seq_command_ptr{std::move(c)});
  }

  std::size_t events_of_kind(std::uint16_t kind) {
    std::size_t n = 0;
    auto err = store().scan(1, store().last_seq(), [&](const storage::event_record& r) {
      n += r.kind == kind;
      return true;
    });
    REQUIRE_FALSE(err);
    return n;
  }
};

std::vector<std::string> names_of(const sched_reply& reply) {
  std::vector<std::string> out;
  for (const auto& r : reply.results)
    out.push_back(r.name);
  return out;
}

const seq_element_state&
at(const sequence_view& v, std::uint32_t position, std::size_t replica = 0) {
  return v.state.replicas.at(replica).chain.at(position - 1);
}

/// The fixture with a data directory: hosts upload real state files.
struct seq_files_fixture : seq_fixture {
  seq_files_fixture() : seq_fixture(true) {}

  /// A successful report of a state element whose output (uploaded first) holds `bytes`.
  reported_result state_upload(const std::string& result, const std::string& bytes) {
    REQUIRE(static_cast<bool>(node.files()->write_output("demo", result + "_0", 0, bytes)));
    auto r = success(result);
    r.files.push_back(
      reported_file{result + "_0", static_cast<double>(bytes.size()), storage::md5_hex(bytes)});
    return r;
  }

  std::filesystem::path staged(const std::string& bytes) const {
    return node.files()->download_dir("demo") / ("in_" + storage::md5_hex(bytes));
  }
};

const workunit_description* job(const sched_reply& reply, const std::string& wu) {
  for (const auto& w : reply.workunits)
    if (w.name == wu)
      return &w;
  return nullptr;
}

const file_description* file(const sched_reply& reply, const std::string& name) {
  for (const auto& f : reply.files)
    if (f.name == name)
      return &f;
  return nullptr;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}

} // namespace

TEST_CASE_METHOD(seq_files_fixture,
                 "a state upload is staged by the server's digest, not the md5 the client "
                 "reports",
                 "[sequences]") {
  const std::string state = "the state as uploaded\n";
  const std::string claimed = "0123456789abcdef0123456789abcdef";
  create("lie", 4, 1);
  auto a = new_host();
  auto r = rpc(request(a, 3600));
  REQUIRE(names_of(*r).front() == "lie@1_0");
  advance(day / 4);
  // The client uploads the state, then reports it with another md5.
  auto report = state_upload("lie@1_0", state);
  REQUIRE(ask<bool>(project, atom::upload_v, std::string{"lie@1_0_0"}, a,
                    static_cast<std::uint64_t>(state.size()), storage::md5_hex(state)));
  report.files.back().md5_cksum = claimed;
  rpc(request(a, 3600, {report}, {"lie"}), false);
  CHECK(read_all(staged(state)) == state);
  CHECK_FALSE(std::filesystem::exists(node.files()->download_dir("demo") / ("in_" + claimed)));
}

TEST_CASE_METHOD(seq_files_fixture,
                 "a relocated sequence continues on the new host from the "
                 "state files of its last validated state upload",
                 "[sequences]") {
  const std::string s3 = "state after three elements\n";
  const std::string s6 = std::string(5000, 'x') + "state after six elements\n";
  create("clim", 20, 3, 1, 3 * 86400, 10 * 86400);
  auto a = new_host();
  auto r = rpc(request(a, 3600));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@1_0", "clim@2_0"});
  advance(day / 4);
  r = rpc(request(a, 3600, {success("clim@1_0"), success("clim@2_0")}, {"clim"}));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@3_0", "clim@4_0"});
  advance(day / 4);
  r = rpc(request(a, 3600, {state_upload("clim@3_0", s3)}, {"clim"}));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@5_0"});
  // The state upload is staged as an input and outlives the grace period: it is the
  // restart point.
  CHECK(read_all(staged(s3)) == s3);
  advance(2 * day);
  CHECK(std::filesystem::exists(staged(s3)));
  CHECK(workunit("clim@3")->wu.files_deleted == false);
  // The next state upload replaces it as the restart point.
  r = rpc(request(a, 3600, {success("clim@4_0"), success("clim@5_0")}, {"clim"}));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@6_0", "clim@7_0"});
  advance(day / 4);
  r = rpc(request(a, 3600, {state_upload("clim@6_0", s6)}, {"clim"}));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@8_0"});
  CHECK(read_all(staged(s6)) == s6);
  CHECK(events_of_kind(ev::sequence_restart_saved::kind) == 2);
  // A grace period later the superseded state files are gone, the current ones stay.
  advance(day + 3600 * us_per_second);
  CHECK_FALSE(std::filesystem::exists(staged(s3)));
  CHECK(workunit("clim@3")->wu.files_deleted);
  CHECK(read_all(staged(s6)) == s6);

  // Host a goes silent; past the deadline of clim@7 the sequence is relocated after 6.
  advance(10 * day);
  auto v = show("clim");
  REQUIRE(v->state.dead_branches.size() == 1);
  CHECK(v->state.dead_branches[0].restart == 6);
  CHECK(std::filesystem::exists(staged(s6)));

  // The new host's first element downloads the state of position 6, checked by md5 and size;
  // the next one runs on from the host's own state.
  auto b = new_host();
  auto rb = rpc(request(b, 3600));
  REQUIRE(names_of(*rb) == std::vector<std::string>{"clim@7b1_0", "clim@8b1_0"});
  auto name = "in_" + storage::md5_hex(s6);
  auto first = job(*rb, "clim@7b1");
  REQUIRE(first != nullptr);
  REQUIRE(first->inputs.size() == 1);
  CHECK(first->inputs[0].file_name == name);
  CHECK(first->inputs[0].open_name == "out.txt");
  auto f = file(*rb, name);
  REQUIRE(f != nullptr);
  CHECK_FALSE(f->is_output);
  CHECK(f->md5_cksum == storage::md5_hex(s6));
  CHECK(f->nbytes == static_cast<double>(s6.size()));
  auto second = job(*rb, "clim@8b1");
  REQUIRE(second != nullptr);
  CHECK(second->inputs.empty());

  // Replay and a restart give the copy the same inputs, and keep the file.
  auto replayed = recover(store(), true);
  REQUIRE(static_cast<bool>(replayed));
  CHECK(replayed->projects.at(0).sequences.at(v->state.id) == show("clim")->state);
  stop();
  start();
  auto w = workunit("clim@7b1");
  REQUIRE(w->wu.params->inputs.size() == 1);
  CHECK(w->wu.params->inputs[0].name == name);
  CHECK(w->wu.params->inputs[0].md5 == storage::md5_hex(s6));
  advance(2 * day);
  CHECK(read_all(staged(s6)) == s6);

  // The end of the sequence releases them: deleted a grace period later.
  rpc(request(b, 0, {success("clim@7b1_0"), success("clim@8b1_0")}, {"clim"}));
  run("clim", command(seq_command::op::end));
  advance(day / 2);
  CHECK(std::filesystem::exists(staged(s6)));
  advance(day);
  CHECK_FALSE(std::filesystem::exists(staged(s6)));
  CHECK(workunit("clim@6")->wu.files_deleted);
}

TEST_CASE_METHOD(seq_fixture,
                 "a six-month climate run: 60 elements on one host, full state "
                 "every 7th, always two elements in hand",
                 "[sequences]") {
  auto v = create("climate", 60, 7);
  REQUIRE(v->state.replicas.size() == 1);
  REQUIRE(v->state.replicas[0].chain.size() == 60);
  CHECK(v->state.replicas[0].host == 0);
  CHECK(at(*v, 7).kind == seq_element_kind::state);
  CHECK(at(*v, 6).kind == seq_element_kind::heartbeat);
  CHECK(at(*v, 56).kind == seq_element_kind::state);
  CHECK(v->state.created_by == "alice");

  auto h = new_host();
  auto first = rpc(request(h, 3600, {}, {}));
  // Assigned, and given two elements: it can upload one while computing the next.
  CHECK(names_of(*first) == std::vector<std::string>{"climate@1_0", "climate@2_0"});
  // Heartbeats upload nothing.
  CHECK(first->results[0].outputs.empty());
  CHECK(show("climate")->state.replicas[0].host == h);

  std::vector<std::string> holding = names_of(*first);
  std::size_t reported = 0;
  std::size_t state_uploads = 0;
  while (!holding.empty()) {
    advance(3 * day); // a small progress report every three days
    auto name = holding.front();
    holding.erase(holding.begin());
    auto position = static_cast<std::uint32_t>(std::stoul(name.substr(8, name.find('_') - 8)));
    bool state = position % 7 == 0;
    state_uploads += state;
    auto reply = rpc(request(h, 3600, {success(name, state ? "state" + name : "")}, {"climate"}));
    CHECK(reply->result_acks == std::vector<std::string>{name});
    CHECK(reply->sequences_revoked.empty());
    for (const auto& r : reply->results) {
      holding.push_back(r.name);
      auto p = std::stoul(r.name.substr(8, r.name.find('_') - 8));
      // State elements upload the app's output files; heartbeats none.
      CHECK(r.outputs.size() == (p % 7 == 0 ? 1u : 0u));
    }
    ++reported;
    // Two elements in hand until the sequence runs out.
    if (reported <= 58)
      CHECK(holding.size() == 2);
  }
  CHECK(reported == 60);
  CHECK(state_uploads == 8);
  auto done = show("climate");
  const auto& r0 = done->state.replicas[0];
  CHECK(r0.host == h);
  CHECK(r0.first_unvalidated == 61);
  CHECK(r0.first_undispatched == 61);
  CHECK(done->state.dead_branches.empty());
  for (const auto& el : r0.chain) {
    CHECK(el.status == seq_element_status::success);
    CHECK(el.valid);
    CHECK(el.host == h);
  }
  auto w7 = workunit("climate@7");
  CHECK(w7->wu.state == wu_state::assimilated);
  REQUIRE(w7->wu.results.size() == 1);
  CHECK(w7->wu.results[0].report->outputs.size() == 1);
  CHECK(events_of_kind(ev::result_dispatched::kind) == 60);
  CHECK(events_of_kind(ev::sequence_assigned::kind) == 1);

  // Replay rebuilds what the actors hold.
  auto replayed = recover(store(), true);
  REQUIRE(static_cast<bool>(replayed));
  const auto& pw = replayed->projects.at(0);
  CHECK(pw.sequences.at(done->state.id) == done->state);
  CHECK(pw.project.workunits.at(w7->wu.id) == w7->wu);
}

TEST_CASE_METHOD(seq_fixture,
                 "trajectories extended two or three results at a time by the "
                 "result handler until ended",
                 "[sequences]") {
  const std::vector<std::string> names{"traj-1", "traj-2", "traj-3"};
  for (const auto& n : names)
    create(n, 2, 0, 1, 3 * 86400, 10 * 86400);
  std::vector<id_type> hosts{new_host(), new_host(), new_host()};
  // One sequence per host (the default).
  std::map<id_type, std::vector<std::string>> holding;
  std::map<id_type, std::string> sequence_of;
  for (auto h : hosts) {
    auto reply = rpc(request(h, 3600));
    REQUIRE(reply->results.size() == 2);
    holding[h] = names_of(*reply);
    sequence_of[h] = reply->results[0].wu_name.substr(0, 6);
  }
  CHECK(std::set<std::string>{sequence_of[hosts[0]], sequence_of[hosts[1]], sequence_of[hosts[2]]}
        == std::set<std::string>(names.begin(), names.end()));

  // The result handler: extends a sequence nearing its end by 2 or 3 elements, unless it
  // decided to stop it (traj-2 at 6 elements: a more promising trajectory was found; the
  // others at 10).
  std::map<std::string, int> extensions;
  auto handle_results = [&] {
    for (const auto& n : names) {
      auto v = show(n);
      if (v->state.ended)
        continue;
      const auto& r = v->state.replicas[0];
      auto open = std::count_if(r.chain.begin(), r.chain.end(), [](const auto& el) {
        return el.status != seq_element_status::success;
      });
      if (open > 0)
        continue;
      auto limit = n == "traj-2" ? 6u : 10u;
      if (v->state.length() >= limit) {
        auto c = command(seq_command::op::end, "result-handler");
        c->reason = n == "traj-2" ? "a more promising trajectory was found" : "converged";
        run(n, c);
        continue;
      }
      auto c = command(seq_command::op::extend, "result-handler");
      c->count = std::min(2u + static_cast<std::uint32_t>(extensions[n]++ % 2),
                          limit - v->state.length());
      c->final_state = true;
      run(n, c);
    }
  };

  std::map<id_type, std::vector<std::string>> revoked;
  for (int round = 0; round < 30; ++round) {
    advance(day);
    for (auto h : hosts) {
      std::vector<reported_result> reports;
      for (const auto& name : holding[h])
        reports.push_back(success(name, "md5-" + name));
      holding[h].clear();
      auto reply = rpc(request(h, 3600, reports, {sequence_of[h]}));
      holding[h] = names_of(*reply);
      for (const auto& s : reply->sequences_revoked)
        revoked[h].push_back(s);
    }
    handle_results();
  }
  for (const auto& n : names) {
    auto v = show(n);
    INFO(n);
    CHECK(v->state.ended);
    CHECK(v->state.ended_by == "result-handler");
    CHECK(v->state.length() == (n == "traj-2" ? 6u : 10u));
    CHECK(v->state.replicas[0].first_unvalidated == v->state.length() + 1);
    CHECK(v->state.replicas[0].host == 0);
  }
  // Each host was told, once its sequence ended, that it no longer holds it.
  for (auto h : hosts) {
    REQUIRE_FALSE(revoked[h].empty());
    CHECK(revoked[h].front() == sequence_of[h]);
  }
  // An ended sequence cannot be extended; nothing is recorded.
  auto seq = store().last_seq();
  auto c = command(seq_command::op::extend);
  c->count = 2;
  auto err = refuse("traj-1", c);
  CHECK(is(err, ec::conflict));
  CHECK(describe(err).find("has ended") != std::string::npos);
  CHECK(store().last_seq() == seq);
  CHECK(show("traj-1")->state.length() == 10);
}

TEST_CASE_METHOD(seq_fixture,
                 "a host that misses a deadline loses the sequence and it continues "
                 "elsewhere from the last full state upload",
                 "[sequences]") {
  create("clim", 20, 3, 1, 3 * 86400, 10 * 86400);
  auto a = new_host();
  auto r = rpc(request(a, 3600));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@1_0", "clim@2_0"});
  advance(day);
  r = rpc(request(a, 3600, {success("clim@1_0"), success("clim@2_0")}, {"clim"}));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@3_0", "clim@4_0"});
  advance(day);
  r = rpc(request(a, 3600, {success("clim@3_0", "state3")}, {"clim"}));
  REQUIRE(names_of(*r) == std::vector<std::string>{"clim@5_0"});
  // Host a goes silent. Before the deadline of clim@4 nothing happens.
  advance(7 * day);
  CHECK(show("clim")->state.replicas[0].host == a);
  CHECK(show("clim")->state.dead_branches.empty());
  // Past it, the relocation check takes the sequence away.
  advance(2 * day);
  auto v = show("clim");
  CHECK(v->state.replicas[0].host == 0);
  REQUIRE(v->state.dead_branches.size() == 1);
  const auto& b = v->state.dead_branches[0];
  CHECK(b.host == a);
  CHECK(b.restart == 3);
  CHECK(b.by == "relocation check");
  CHECK(b.reason.find("missed the deadline of clim@4") != std::string::npos);
  REQUIRE(b.elements.size() == 2);
  CHECK(b.elements[0].name == "clim@4");
  CHECK(b.elements[1].name == "clim@5");
  // The chain continues after position 3 with copies of the dead positions.
  CHECK(at(*v, 3).name == "clim@3");
  CHECK(at(*v, 4).name == "clim@4b1");
  CHECK(at(*v, 5).name == "clim@5b1");
  CHECK(at(*v, 6).name == "clim@6");
  CHECK(v->state.replicas[0].first_undispatched == 4);
  CHECK(v->state.replicas[0].first_unvalidated == 4);
  CHECK(workunit("clim@5")->wu.state == wu_state::failed);
  CHECK(workunit("clim@5")->wu.results[0].outcome == result_outcome::didnt_need);
  CHECK(host(a)->state->in_progress.count("clim@5_0") == 0);

  // Another host takes it and starts after the last state upload.
  auto b_host = new_host();
  auto rb = rpc(request(b_host, 3600));
  CHECK(names_of(*rb) == std::vector<std::string>{"clim@4b1_0", "clim@5b1_0"});
  CHECK(show("clim")->state.replicas[0].host == b_host);

  // The old host reports the dead element and lists the sequence: it is told it no longer
  // holds it and to abort what it still runs; nothing is recorded.
  auto seq = store().last_seq();
  auto late = request(a, 0, {success("clim@4_0", "x")}, {"clim"});
  late->other_results.push_back(other_result{"clim@5_0", -1, ""});
  auto ra = rpc(late);
  CHECK(ra->result_acks == std::vector<std::string>{"clim@4_0"});
  CHECK(ra->sequences_revoked == std::vector<std::string>{"clim"});
  CHECK(ra->result_aborts == std::vector<std::string>{"clim@5_0"});
  CHECK(ra->results.empty());
  REQUIRE_FALSE(ra->messages.empty());
  CHECK(ra->messages[0].text.find("clim@4_0") != std::string::npos);
  CHECK(store().last_seq() == seq);
  CHECK(at(*show("clim"), 4).status == seq_element_status::in_progress);

  // Replay and a restart rebuild the same sequence, and it goes on.
  auto live = show("clim")->state;
  auto replayed = recover(store(), true);
  REQUIRE(static_cast<bool>(replayed));
  CHECK(replayed->projects.at(0).sequences.at(live.id) == live);
  stop();
  start();
  CHECK(show("clim")->state == live);
  advance(day);
  auto again = rpc(request(b_host, 3600, {success("clim@4b1_0")}, {"clim"}));
  CHECK(names_of(*again) == std::vector<std::string>{"clim@6_0"});
}

TEST_CASE_METHOD(seq_fixture, "an operator reassigns a sequence and the old host is told",
                 "[sequences]") {
  create("run", 10, 5);
  auto a = new_host();
  auto b = new_host();
  auto r = rpc(request(a, 3600));
  REQUIRE(names_of(*r) == std::vector<std::string>{"run@1_0", "run@2_0"});

  SECTION("to another host") {
    auto c = command(seq_command::op::reassign, "carol");
    c->to = b;
    auto v = run("run", c);
    CHECK(v->state.replicas[0].host == b);
    REQUIRE(v->state.dead_branches.size() == 1);
    CHECK(v->state.dead_branches[0].by == "carol");
    CHECK(v->state.dead_branches[0].restart == 0);
    CHECK(v->state.dead_branches[0].reason
          == "reassigned by operator to host " + std::to_string(b));
    CHECK(events_of_kind(ev::sequence_deassigned::kind) == 1);
    CHECK(events_of_kind(ev::sequence_assigned::kind) == 2);
    // The old host lists it and learns it no longer holds it.
    auto ra = rpc(request(a, 3600, {}, {"run"}));
    CHECK(ra->sequences_revoked == std::vector<std::string>{"run"});
    CHECK(ra->results.empty());
    CHECK(host(a)->state->in_progress.empty());
    // The new host gets the chain from the start.
    auto rb = rpc(request(b, 3600, {}, {"run"}));
    CHECK(rb->sequences_revoked.empty());
    CHECK(names_of(*rb) == std::vector<std::string>{"run@1b1_0", "run@2b1_0"});
  }
  SECTION("unassigned, then taken by the next host that asks") {
    auto v = run("run", command(seq_command::op::unassign, "carol"));
    CHECK(v->state.replicas[0].host == 0);
    auto rb = rpc(request(b, 3600));
    CHECK(names_of(*rb) == std::vector<std::string>{"run@1b1_0", "run@2b1_0"});
  }
  SECTION("bad commands are refused and change nothing") {
    auto seq = store().last_seq();
    auto before = show("run")->state;
    auto c = command(seq_command::op::reassign);
    c->to = 999;
    auto err = refuse("run", c);
    CHECK(is(err, ec::unknown_host));
    CHECK(describe(err).find("999") != std::string::npos);
    c->to = a;
    CHECK(is(refuse("run", c), ec::conflict)); // already there
    c->to = b;
    c->replica = 1;
    CHECK(is(refuse("run", c), ec::invalid_argument)); // no such replica
    CHECK(is(refuse("nope", command(seq_command::op::end)), ec::unknown_sequence));
    auto x = command(seq_command::op::extend);
    x->count = 0;
    CHECK(is(refuse("run", x), ec::invalid_argument));
    CHECK(store().last_seq() == seq);
    CHECK(show("run")->state == before);
  }
}

TEST_CASE_METHOD(seq_fixture, "a replicated sequence is validated element by element",
                 "[sequences]") {
  create("twin", 3, 1, 2);
  auto a = new_host();
  auto b = new_host();
  auto ra = rpc(request(a, 3600));
  auto rb = rpc(request(b, 3600));
  CHECK(names_of(*ra) == std::vector<std::string>{"twin@1_0", "twin@2_0"});
  CHECK(names_of(*rb) == std::vector<std::string>{"twin@1r1_0", "twin@2r1_0"});
  // A third host finds no free chain.
  auto c = new_host();
  CHECK(rpc(request(c, 3600))->results.empty());

  // Element 1 agrees: both workunits are validated (credit is granted on that event).
  rpc(request(a, 0, {success("twin@1_0", "same")}));
  CHECK(workunit("twin@1")->wu.state == wu_state::active); // waits for the other replica
  rpc(request(b, 0, {success("twin@1r1_0", "same")}));
  CHECK(workunit("twin@1")->wu.state == wu_state::assimilated);
  CHECK(workunit("twin@1r1")->wu.state == wu_state::assimilated);
  // Element 2 disagrees: neither is valid.
  rpc(request(a, 0, {success("twin@2_0", "left")}));
  rpc(request(b, 0, {success("twin@2r1_0", "right")}));
  auto w2 = workunit("twin@2");
  CHECK(w2->wu.state == wu_state::active);
  CHECK(w2->wu.results[0].validation == validate_state::invalid);
  auto v = show("twin");
  REQUIRE(v->state.checks.size() == 3);
  CHECK(v->state.checks[0] == seq_check::agree);
  CHECK(v->state.checks[1] == seq_check::disagree);
  CHECK(v->state.checks[2] == seq_check::pending);
  CHECK(at(*v, 1, 0).valid);
  CHECK(at(*v, 1, 1).valid);
  CHECK_FALSE(at(*v, 2, 0).valid);
  CHECK(v->state.replicas[0].first_unvalidated == 2);
  CHECK(events_of_kind(ev::sequence_element_checked::kind) == 2);
  auto replayed = recover(store(), true);
  REQUIRE(static_cast<bool>(replayed));
  CHECK(replayed->projects.at(0).sequences.at(v->state.id) == v->state);
}

TEST_CASE_METHOD(seq_fixture,
                 "a replicated element whose outputs were not uploaded agrees with nothing",
                 "[sequences][validation]") {
  create("twin", 1, 1, 2);
  auto a = new_host();
  auto b = new_host();
  REQUIRE(names_of(*rpc(request(a, 3600))) == std::vector<std::string>{"twin@1_0"});
  REQUIRE(names_of(*rpc(request(b, 3600))) == std::vector<std::string>{"twin@1r1_0"});
  // Host a uploads its state; host b reports the same md5 and uploaded nothing.
  rpc(request(a, 0, {success("twin@1_0", "same")}));
  rpc(request(b, 0, {success("twin@1r1_0", "same")}), false);
  auto v = show("twin");
  REQUIRE(v->state.checks.size() == 1);
  CHECK(v->state.checks[0] == seq_check::disagree);
  CHECK_FALSE(at(*v, 1, 0).valid);
  CHECK_FALSE(at(*v, 1, 1).valid);
  for (const auto* name : {"twin@1", "twin@1r1"}) {
    auto w = workunit(name);
    CHECK(w->wu.state == wu_state::active);
    CHECK(w->wu.results[0].validation == validate_state::invalid);
  }
}

TEST_CASE_METHOD(seq_fixture, "a slow replica is relocated when the setting asks for it",
                 "[sequences]") {
  stop();
  node.config().projects[0].sequence_slow_replica_lag = 2;
  start();
  create("pair", 8, 1, 2);
  auto a = new_host();
  auto b = new_host();
  auto ra = rpc(request(a, 3600));
  auto rb = rpc(request(b, 3600));
  // a runs ahead; b reports nothing.
  for (int i = 1; i <= 2; ++i) {
    ra = rpc(request(a, 3600, {success("pair@" + std::to_string(i) + "_0", "m")}));
    advance(3600 * us_per_second);
  }
  auto v = show("pair");
  CHECK(v->state.replicas[0].host == a);
  CHECK(v->state.replicas[1].host == 0);
  REQUIRE(v->state.dead_branches.size() == 1);
  CHECK(v->state.dead_branches[0].host == b);
  CHECK(v->state.dead_branches[0].reason.find("2 elements behind") != std::string::npos);
}

TEST_CASE_METHOD(seq_fixture, "creating a sequence refuses bad input and records nothing",
                 "[sequences]") {
  create("ok", 2, 0);
  auto seq = store().last_seq();
  auto bad = [&](auto edit) {
    auto s = std::make_shared<sequence_spec>();
    s->name = "fresh";
    s->app = "testapp";
    s->count = 3;
    edit(*s);
    return ask_error<sequence_view_ptr>(project, atom::create_v, sequence_spec_ptr{s});
  };
  CHECK(is(bad([](sequence_spec& s) { s.name = "ok"; }), ec::duplicate));
  CHECK(is(bad([](sequence_spec& s) { s.name = "a@b"; }), ec::invalid_argument));
  CHECK(is(bad([](sequence_spec& s) { s.app = "nope"; }), ec::unknown_app));
  CHECK(is(bad([](sequence_spec& s) { s.count = 0; }), ec::invalid_argument));
  CHECK(is(bad([](sequence_spec& s) { s.replicas = 3; }), ec::invalid_argument));
  CHECK(is(bad([](sequence_spec& s) { s.delay_bound = -1; }), ec::invalid_argument));
  CHECK(is(bad([](sequence_spec& s) {
             s.inputs.push_back({"in_x", "../up.nc", 1, "m"});
           }),
           ec::invalid_argument));
  CHECK(store().last_seq() == seq);
  // A host too slow for the maximum result time is not given the sequence.
  auto s = std::make_shared<sequence_spec>();
  s->name = "fast-only";
  s->app = "testapp";
  s->count = 2;
  s->max_result_time = 600; // the host needs an hour per element
  ask<sequence_view_ptr>(project, atom::create_v, sequence_spec_ptr{s});
  auto h = new_host();
  auto r = rpc(request(h, 3600));
  for (const auto& res : r->results)
    CHECK(res.wu_name.rfind("fast-only", 0) != 0);
  CHECK(show("fast-only")->state.replicas[0].host == 0);
}

// -- credit of sequence elements (docs/credit.md) ----------------------------------------

TEST_CASE_METHOD(seq_fixture, "validated sequence elements are granted credit like other jobs",
                 "[sequences][credit]") {
  create("clim", 4, 2); // heartbeats at odd positions, full state at even ones
  auto h = new_host();
  auto first = rpc(request(h, 3600));
  REQUIRE(names_of(*first) == std::vector<std::string>{"clim@1_0", "clim@2_0"});
  CHECK(first->host_total_credit == 0);
  // The client runs its own (anonymous-platform) version: an element claims min_avg_pfc(A) x
  // E(J), E(J) = 3.6e12 FLOPs while X is unknown, i.e. 3.6e12 / 8.64e11 Cobblestones; alone
  // (one replica) it is granted its claim.
  const double one = 3.6e12 / 864e9;
  advance(3600 * us_per_second);
  rpc(request(h, 3600, {success("clim@1_0")}, {"clim"}));
  auto w1 = workunit("clim@1");
  REQUIRE(w1->wu.state == wu_state::assimilated);
  const auto& c1 = *w1->wu.results.at(0).credit;
  CHECK((c1.flags & credit_anonymous) != 0);
  CHECK(c1.claimed == Approx(one));
  CHECK(c1.granted == Approx(one));
  // The host's and the user's totals grow, and the client is told.
  CHECK(host(h)->reg.credit.total == Approx(one));
  advance(3600 * us_per_second);
  auto r2 = rpc(request(h, 3600, {success("clim@2_0", "state2")}, {"clim"}));
  CHECK(workunit("clim@2")->wu.results.at(0).credit->granted == Approx(one));
  auto after = rpc(request(h, 0, {}, {"clim"}));
  CHECK(after->host_total_credit == Approx(2 * one));
  CHECK(after->user_total_credit == Approx(2 * one));
  CHECK(after->host_expavg_credit > 0);
  auto users = ask<user_list_ptr>(project, atom::list_v, atom::user_v);
  CHECK(users->at(0).credit.total == Approx(2 * one));
  // The (host, version) record learned from the elements as from any job.
  auto view = host(h);
  const auto& hav = view->state->app_versions.at(anonymous_version_id(1, 0));
  CHECK(hav.et.n == 2);
  CHECK(hav.n_success == 2);
  // An element that is not valid gets nothing: a replicated pair that disagrees.
  create("twin", 1, 1, 2);
  auto b = new_host();
  auto c = new_host();
  REQUIRE(names_of(*rpc(request(b, 3600))) == std::vector<std::string>{"twin@1_0"});
  REQUIRE(names_of(*rpc(request(c, 3600))) == std::vector<std::string>{"twin@1r1_0"});
  rpc(request(b, 0, {success("twin@1_0", "left")}, {"twin"}));
  rpc(request(c, 0, {success("twin@1r1_0", "right")}, {"twin"}));
  CHECK(workunit("twin@1")->wu.results.at(0).validation == validate_state::invalid);
  CHECK(workunit("twin@1")->wu.results.at(0).credit->granted == 0);
  CHECK(host(b)->reg.credit.total == 0);
  // Replay grants the same.
  auto replayed = recover(store(), true);
  REQUIRE(static_cast<bool>(replayed));
  CHECK(replayed->projects.at(0).project.hosts.at(h).credit.total == Approx(2 * one));
}

namespace {

/// The demo project with a daily quota of 2 jobs per CPU.
struct seq_quota_fixture : seq_fixture {
  seq_quota_fixture() : seq_fixture(false, 2) {}
};

} // namespace

TEST_CASE_METHOD(seq_quota_fixture,
                 "the daily job quota holds for sequence elements and "
                 "counts them with ordinary jobs",
                 "[sequences][credit]") {
  // 01:00 UTC: the whole test runs within one day, then the next.
  advance(day - node.now() % day + 3600 * us_per_second);
  create("long", 6, 3);
  auto batch = std::make_shared<work_batch>();
  batch->submitter = "test";
  for (int i = 0; i < 4; ++i) {
    work_spec w;
    w.app = "testapp";
    w.name = "plain" + std::to_string(i);
    batch->items.push_back(std::move(w));
  }
  ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{batch});
  auto h = new_host(); // one CPU: 2 jobs a day of the (host, version) pair
  auto vid = anonymous_version_id(1, 0);
  // The sequence's two elements use the day's quota: no ordinary job comes with them.
  auto first = rpc(request(h, 4 * 3600));
  CHECK(names_of(*first) == std::vector<std::string>{"long@1_0", "long@2_0"});
  CHECK(host(h)->state->app_versions.at(vid).n_jobs_today == 2);
  // Reporting one would bring the next element (the high-water mark is 2), but the quota is
  // used: the chain waits, and no ordinary job is sent either.
  advance(3600 * us_per_second);
  auto second = rpc(request(h, 4 * 3600, {success("long@1_0")}, {"long"}));
  CHECK(second->results.empty());
  CHECK(show("long")->state.replicas[0].first_undispatched == 3);
  CHECK(show("long")->state.replicas[0].host == h); // it keeps the sequence
  CHECK(host(h)->state->app_versions.at(vid).n_jobs_today == 2);
  // The next UTC day starts a new count: the next element goes out, and the rest of the
  // request is filled with one ordinary job, the last of the day's two.
  advance(day);
  auto next_day = rpc(request(h, 4 * 3600, {}, {"long"}));
  REQUIRE(next_day->results.size() == 2);
  CHECK(next_day->results[0].name == "long@3_0");
  CHECK(next_day->results[1].name.rfind("plain", 0) == 0);
  CHECK(host(h)->state->app_versions.at(vid).n_jobs_today == 2);
  advance(3600 * us_per_second);
  auto none = rpc(request(h, 4 * 3600, {success("long@2_0")}, {"long"}));
  CHECK(none->results.empty());
  CHECK(show("long")->state.replicas[0].first_undispatched == 4);
}
