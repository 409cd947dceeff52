// End-to-end: two real BOINC 7.20.5 clients (/usr/bin/boinc, anonymous platform) attach to a
// real cobbled on 127.0.0.1, fetch jobs of tools/testapp, download inputs, run the app, upload
// outputs and report; every workunit reaches a quorum of two and is assimilated, every result
// is acknowledged, both clients leave by themselves (--exit_when_idle), and the event log
// verifies. docs/real-clients.md describes the same client setup for operators.
//
// The environment variables of boinc_e2e_support.hpp apply; COBBLE_E2E_BUDGET defaults to 170
// (the whole test, setup to `cobble log verify`, under CTest's 3 minutes with room for the
// final checks).

#include "boinc_e2e_support.hpp"

#include <catch2/catch.hpp>

using namespace cobble::e2e;

namespace {

constexpr int workunit_count = 20;
constexpr int max_restarts = 3;

/// The configuration the test runs: quick RPC turnaround, one app with a quorum of two, run
/// by two clients attached to the one account (so not one result per user).
std::string config() {
  return server_config("Cobble end-to-end test", R"(        min_quorum: 2
        target_nresults: 2
        delay_bound: 2d
        one_result_per_user_per_wu: false
)");
}

// -- the jobs ----------------------------------------------------------------------------

/// One workunit the test created and what its output must be.
struct job {
  std::string name;
  std::string command_line;
  std::string input; ///< content of in.txt; empty when created without an input
  bool has_input = false;
  std::string expected_md5; ///< of out.txt, computed by running testapp here
};

/// Input i: 300 + 5000 i bytes of deterministic text (input 99, the shared one: ~500 KB).
std::string input_text(int i) {
  std::string out = "cobble end-to-end input " + std::to_string(i) + "\n";
  std::mt19937_64 gen{static_cast<std::uint64_t>(i) * 7919 + 1};
  std::size_t size = 300 + static_cast<std::size_t>(i) * 5000;
  while (out.size() < size)
    out += std::to_string(gen()) + "\n";
  return out;
}

/// What out.txt must hold: testapp run here on the same input and arguments.
std::string expected_md5(const fs::path& scratch, const job& j) {
  return testapp_md5(scratch, j.command_line,
                     j.has_input ? std::optional<std::string>{j.input} : std::nullopt);
}

// -- progress ----------------------------------------------------------------------------

struct progress {
  std::size_t workunits = 0, assimilated = 0, failed = 0;
  std::int64_t in_progress = -1, unsent = -1;
  json summary = json::object();
  std::string text() const {
    return std::to_string(assimilated) + "/" + std::to_string(workunits) + " assimilated, "
           + std::to_string(failed) + " failed, results in progress " + std::to_string(in_progress)
           + ", unsent " + std::to_string(unsent);
  }
};

progress read_progress(const server& s) {
  progress p;
  p.summary = s.get("/api/projects/" + project);
  p.in_progress = p.summary.value("results_in_progress", std::int64_t{-1});
  p.unsent = 0;
  for (const auto& app : p.summary["apps"])
    p.unsent += app.value("unsent", std::int64_t{0});
  auto list = s.get("/api/projects/" + project + "/workunits?limit=1000");
  for (const auto& w : list["items"]) {
    ++p.workunits;
    if (w["state"] == "assimilated")
      ++p.assimilated;
    if (w["state"] == "failed")
      ++p.failed;
  }
  return p;
}

/// Whether a client that left could still get a job: an unfinished workunit with an unsent
/// result and no result on this client's host.
bool could_get_work(const server& s, std::uint64_t hostid) {
  auto list = s.get("/api/projects/" + project + "/workunits?limit=1000");
  for (const auto& w : list["items"]) {
    if (w["state"] != "active")
      continue;
    auto detail = s.get("/api/projects/" + project + "/workunits/" + w["name"].get<std::string>());
    bool unsent = false, mine = false;
    for (const auto& r : detail["results"]) {
      unsent = unsent || r["state"] == "unsent";
      mine = mine || (r["host"].is_number() && r["host"].get<std::uint64_t>() == hostid);
    }
    if (unsent && !mine)
      return true;
  }
  return false;
}

/// Stages an input file through the admin API (POST /api/projects/P/files, raw bytes); the
/// server's answer {"stored_name", "md5", "nbytes", "existed"}.
json stage_file(const server& s, const std::string& content) {
  http_client c{"127.0.0.1", s.admin_port};
  auto r = c.post("/api/projects/" + project + "/files", content, s.token,
                  "application/octet-stream");
  INFO("POST /api/projects/" << project << "/files -> " << r.status << " " << r.body);
  REQUIRE(r.status == 201);
  auto body = json::parse(r.body);
  REQUIRE(body["stored_name"].is_string());
  CHECK(body.value("md5", std::string{}) == md5_hex(content));
  CHECK(body.value("nbytes", 0.0) == static_cast<double>(content.size()));
  return body;
}

} // namespace

TEST_CASE("two real BOINC clients compute every workunit to a quorum of two", "[e2e]") {
  const auto started = steady::now();
  const auto budget = test_budget(170s);
  const auto deadline = started + budget;
  require_boinc_client();

  temp_dir root;
  write_file(root.path / "cobble.yaml", config());
  server s{root.path / "cobble.yaml", root.path / "server"};

  // -- jobs: all of them before any client starts (--exit_when_idle) ---------------------
  std::vector<job> jobs;
  // Half through the CLI, sharing one input file that `work create --input PATH:OPEN_NAME`
  // stages and the app opens as in.txt.
  {
    job j;
    j.command_line = "--iterations 300000 --output-bytes 20000";
    j.has_input = true;
    j.input = input_text(99);
    auto path = root.path / "inputs" / "shared-input.dat";
    write_file(path, j.input);
    for (const auto& name :
         s.cli({"work", "create", "--app", "testapp", "--count", std::to_string(workunit_count / 2),
                "--command-line", j.command_line, "--fpops-est", "1e9", "--fpops-bound", "1e12",
                "--input", path.string() + ":in.txt"},
               "work create"))
      jobs.push_back(job{name, j.command_line, j.input, j.has_input, {}});
  }
  // The other half through the admin API, each with its own staged input (300 B to 45 KB),
  // amount of work and output size (some outputs of 8192 bytes or more, whose upload starts
  // with a size query).
  for (int i = 0; i < workunit_count - workunit_count / 2; ++i) {
    job j;
    j.name = "e2e_api_" + std::to_string(i);
    j.command_line = "--iterations " + std::to_string(100000 + i * 50000);
    if (i % 3 == 0)
      j.command_line += " --output-bytes " + std::to_string(8192 + i * 1000);
    j.has_input = true;
    j.input = input_text(i);
    auto staged = stage_file(s, j.input);
    json spec{{"app", "testapp"},
              {"name", j.name},
              {"command_line", j.command_line},
              {"rsc_fpops_est", 1e9},
              {"rsc_fpops_bound", 1e12},
              {"inputs", json::array({json{{"stored_name", staged["stored_name"]},
                                           {"open_name", "in.txt"},
                                           {"nbytes", j.input.size()},
                                           {"md5", md5_hex(j.input)}}})}};
    s.create_work(spec);
    jobs.push_back(std::move(j));
  }
  REQUIRE(jobs.size() == static_cast<std::size_t>(workunit_count));
  for (auto& j : jobs)
    j.expected_md5 = expected_md5(root.path / "scratch", j);

  // -- two clients ---------------------------------------------------------------------
  std::vector<std::unique_ptr<boinc_client>> clients;
  for (const char* n : {"client-a", "client-b"}) {
    clients.push_back(std::make_unique<boinc_client>(n, root.path / n));
    clients.back()->prepare(s.master_url());
  }
  for (auto& c : clients)
    c->start(s.master_url(), s.account_key);

  auto diagnostics = [&](const std::string& why) {
    std::string out = why + "\n";
    for (auto& c : clients)
      out += c->log_tail(60);
    s.proc->drain();
    out += "---- cobbled ----\n" + tail(s.proc->lines(), 40);
    return out;
  };

  progress p;
  auto next_check = steady::now();
  bool done = false;
  while (!done) {
    if (steady::now() >= deadline) {
      std::string state;
      try {
        state = read_progress(s).text();
      } catch (...) {
      }
      FAIL(diagnostics("timed out after " + std::to_string(budget.count()) + " s: " + state));
    }
    std::vector<child_process*> pipes{s.proc.get()};
    for (auto& c : clients)
      if (c->proc)
        pipes.push_back(c->proc.get());
    cobble::test::pump_output(pipes, 500ms);
    if (auto code = s.proc->wait(0ms))
      FAIL(diagnostics("cobbled exited with " + std::to_string(*code)));
    for (auto& c : clients)
      c->exited();
    if (steady::now() < next_check)
      continue;
    next_check = steady::now() + 1s;

    p = read_progress(s);
    if (p.failed > 0)
      FAIL(diagnostics("a workunit failed: " + p.text() + "\n" + p.summary.dump(2)));
    bool all_assimilated = p.workunits == jobs.size() && p.assimilated == jobs.size();
    bool all_exited = true, restarted = false;
    for (auto& c : clients) {
      if (!c->exited()) {
        all_exited = false;
        continue;
      }
      // A client that left while it could still get a job is started again (it keeps its
      // host id and project); the server's job selection should make this rare.
      if (!all_assimilated && c->starts <= max_restarts && could_get_work(s, c->hostid())) {
        WARN(c->name << " exited with " << *c->exit_code << " while work was left for it ("
                     << p.text() << "); starting it again");
        c->start(s.master_url(), s.account_key);
        all_exited = false;
        restarted = true;
      }
    }
    done = all_assimilated && p.in_progress == 0 && all_exited;
    if (!done && all_exited && !restarted)
      FAIL(diagnostics("both clients left, and the work is not done: " + p.text()));
  }

  // -- what must hold ------------------------------------------------------------------
  INFO(diagnostics("final state: " + p.text()));
  std::map<std::uint64_t, boinc_client*> by_host;
  for (auto& c : clients) {
    INFO(c->name << " exit codes: " << json(c->exit_codes).dump());
    CHECK(c->exit_codes == std::vector<int>(c->exit_codes.size(), 0));
    CHECK(c->exit_code == 0);
    CHECK(c->held_results() == 0); // nothing left to report or compute
    auto id = c->hostid();
    CHECK(id != 0);
    by_host[id] = c.get();
  }
  CHECK(by_host.size() == clients.size());
  std::map<boinc_client*, std::set<std::string>> sent_to;
  double granted_total = 0;
  std::map<std::uint64_t, double> host_granted;
  for (const auto& j : jobs) {
    auto wu = s.get("/api/projects/" + project + "/workunits/" + j.name);
    std::vector<double> claims, grants;
    INFO(wu.dump(2));
    CHECK(wu["state"] == "assimilated");
    std::set<std::uint64_t> hosts;
    for (const auto& r : wu["results"]) {
      if (r["state"] == "unsent" || r["outcome"] == "didnt_need")
        continue;
      CHECK(r["state"] == "over");
      CHECK(r["outcome"] == "success");
      CHECK(r["validation"] == "valid");
      CHECK(r["exit_status"] == 0);
      CHECK(r["client_state"] == 5);
      REQUIRE(r["host"].is_number());
      auto host = r["host"].get<std::uint64_t>();
      hosts.insert(host);
      if (by_host.count(host))
        sent_to[by_host[host]].insert(r["name"].get<std::string>());
      REQUIRE(r["outputs"].size() == 1);
      CHECK(r["outputs"][0]["md5"] == j.expected_md5);
      // Validated results of real clients get credit. With a peak speed known, PFC = the
      // elapsed time the client reported x peak_flops(J); these clients skip their CPU
      // benchmark (--skip_cpu_benchmarks) and may report none, and then the sanity check
      // gives the default PFC (E(J), or min_avg_pfc(A) x E(J)). Either way, in Cobblestones.
      REQUIRE(r["credit"].is_object());
      const auto& cr = r["credit"];
      bool default_pfc = false;
      for (const auto& f : cr["flags"])
        default_pfc = default_pfc || f == "default_pfc";
      CHECK(cr["pfc"].get<double>() > 0);
      if (cr["peak_flops"].get<double>() > 0 && !default_pfc)
        CHECK(cr["pfc"].get<double>()
              == Approx(r["elapsed"].get<double>() * cr["peak_flops"].get<double>()));
      else
        CHECK(default_pfc);
      CHECK(cr["claimed"].get<double>() > 0);
      CHECK(cr["granted"].get<double>() > 0);
      claims.push_back(cr["claimed"].get<double>());
      grants.push_back(cr["granted"].get<double>());
      granted_total += cr["granted"].get<double>();
      host_granted[host] += cr["granted"].get<double>();
    }
    CHECK(hosts.size() == 2);
    // The quorum's grant is the mean of the two claims (neither replica is on probation:
    // the app does not check), and every replica gets it.
    REQUIRE(claims.size() == 2);
    CHECK(grants[0] == Approx((claims[0] + claims[1]) / 2));
    CHECK(grants[1] == Approx(grants[0]));
    CHECK(wu["granted_credit"].get<double>() == Approx(grants[0]));
  }
  // The hosts and their user have the credit totals the grants add up to.
  for (const auto& [id, c] : by_host) {
    auto host = s.get("/api/projects/" + project + "/hosts/" + std::to_string(id));
    INFO(host.dump(2));
    CHECK(host["credit"]["total_credit"].get<double>() > 0);
    CHECK(host["credit"]["total_credit"].get<double>() == Approx(host_granted[id]));
  }
  auto users = s.get("/api/projects/" + project + "/users");
  double user_total = 0;
  for (const auto& u : users)
    user_total += u["credit"]["total_credit"].get<double>();
  CHECK(user_total > 0);
  CHECK(user_total == Approx(granted_total));
  // Every result a client got shows as acknowledged in its log.
  for (auto& c : clients) {
    auto acked = c->acked();
    for (const auto& r : sent_to[c.get()]) {
      INFO(c->name << ": result " << r);
      CHECK(acked.count(r) == 1);
    }
  }
  // Things the client did not understand in our replies, for the record.
  for (auto& c : clients)
    for (const auto& line : c->log)
      if (line.find("[unparsed_xml]") != std::string::npos)
        WARN(c->name << ": " << line);

  // -- the log verifies after a clean stop ----------------------------------------------
  s.stop_and_verify_log();
  auto seconds = std::chrono::duration<double>(steady::now() - started).count();
  INFO("took " << seconds << " s");
  CHECK(steady::now() < deadline + 30s);
}
