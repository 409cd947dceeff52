// End-to-end: a stock BOINC 7.20.5 client (/usr/bin/boinc) with nothing installed by hand
// attaches to a real cobbled and gets the app from the server: the operator makes a
// code-signing key with `cobble key generate`, gives the server its public half
// (`cobble key add`) and adds tools/testapp as version 101 (`cobble app add-version --key`,
// signed here); two clients download the version's file, check its signature with the key
// the reply carried, run it and report, and their results agree. Another client meets a file
// changed on the server after signing and refuses it ("Signature verification failed"), as a
// volunteer's client must. Then what happens to a volunteer's machine: detach and attach
// again, a project reset, a task finished after its deadline. docs/apps.md and docs/cli.md
// describe the operator's side, docs/real-clients.md the volunteer's.
//
// The environment variables of boinc_e2e_support.hpp apply; COBBLE_E2E_BUDGET defaults to 120
// per client run.

#include "boinc_e2e_support.hpp"

#include <catch2/catch.hpp>

using namespace cobble::e2e;

namespace {

constexpr auto platform = "x86_64-pc-linux-gnu";

/// A quorum of one (each job stands alone, unless it is created with more) and a configured
/// version 100 that no stock client can run (no files): version 101, added below, is the one
/// the server distributes. The clients share one account, so not one result per user.
std::string config() {
  return server_config("Cobble app distribution test", R"(        min_quorum: 1
        target_nresults: 1
        delay_bound: 2d
        one_result_per_user_per_wu: false
)");
}

/// Makes a key pair in `keys`, gives the server the public key and adds testapp as version
/// 101 signed with the private key; the MD5 of the staged file.
std::string distribute_testapp(const server& s, const fs::path& keys) {
  auto [code, out] = cobble::test::run_command({cobble::test::program("tools/cobble"), "key",
                                                "generate", "--out", keys.string()},
                                               60s);
  INFO(out);
  REQUIRE(code == 0);
  s.cli({"key", "add", (keys / "code_sign_public").string()}, "key add");
  auto app = cobble::test::program("tools/testapp/testapp");
  s.cli({"app", "add-version", "testapp", app, "--platform", platform, "--version-num", "101",
         "--key", (keys / "code_sign_private").string()},
        "app add-version");
  return md5_hex(read_file(app));
}

/// A server whose testapp version 101 is signed and distributed, and one stock client (no
/// app_info.xml, nothing installed by hand) prepared for it.
struct distributed_app {
  temp_dir root;
  server s;
  std::string md5; ///< Of testapp, the distributed file (staged as app_<md5>).
  boinc_client client;

  distributed_app()
    : s{config_file(root), root.path / "server"}, md5{distribute_testapp(s, root.path / "keys")},
      client{"client", root.path / "client", stock_client()} {
    client.prepare(s.master_url());
  }

  static fs::path config_file(const temp_dir& root) {
    require_boinc_client();
    write_file(root.path / "cobble.yaml", config());
    return root.path / "cobble.yaml";
  }

  static client_options stock_client() {
    client_options o;
    o.anonymous = false;
    return o;
  }

  /// `work create` of `count` jobs of `iterations` rounds, each run by `quorum` hosts that
  /// must agree; their names.
  std::vector<std::string> create_work(int count, int iterations, int quorum = 1) const {
    return s.cli({"work", "create", "--app", "testapp", "--count", std::to_string(count),
                  "--command-line", "--iterations " + std::to_string(iterations), "--fpops-est",
                  "1e9", "--fpops-bound", "1e12", "--min-quorum", std::to_string(quorum),
                  "--target-nresults", std::to_string(quorum)},
                 "work create");
  }
};

/// Runs `client` until it leaves (--exit_when_idle) or `done` holds; FAILs on timeout.
template <class Done>
void run_until(server& s, boinc_client& client, std::chrono::seconds budget, Done done) {
  const auto deadline = steady::now() + budget;
  while (!client.exited() && !done()) {
    if (steady::now() >= deadline) {
      s.proc->drain();
      FAIL("timed out:\n"
           << client.log_tail(60) << "---- cobbled ----\n"
           << tail(s.proc->lines(), 40));
    }
    std::vector<child_process*> pipes{s.proc.get()};
    if (client.proc)
      pipes.push_back(client.proc.get());
    cobble::test::pump_output(pipes, 500ms);
    if (auto code = s.proc->wait(0ms))
      FAIL("cobbled exited with " << *code);
  }
}

bool log_has(boinc_client& c, const std::string& text) {
  c.collect();
  return std::any_of(c.log.begin(), c.log.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

/// A volunteer's machine: one client (no allow_multiple_clients, as on a volunteer's computer)
/// holding two tasks that run for ten minutes, both in progress on the server when the
/// constructor returns.
struct busy_volunteer {
  distributed_app d;
  std::vector<std::string> names;
  boinc_client client;
  std::uint64_t host = 0;

  explicit busy_volunteer(const std::string& who)
    : names{d.s.cli({"work", "create", "--app", "testapp", "--count", "2", "--command-line",
                     "--wall-seconds 600", "--fpops-est", "1e9", "--fpops-bound", "1e15"},
                    "work create")},
      client{who, d.root.path / who, options()} {
    REQUIRE(names.size() == 2);
    client.prepare(d.s.master_url());
    client.start(d.s.master_url(), d.s.account_key);
    const auto status = "/api/projects/" + project;
    run_until(d.s, client, test_budget(120s),
              [&] { return client.hostid() != 0 && d.s.get(status)["results_in_progress"] == 2; });
    host = client.hostid();
  }

  static client_options options() {
    client_options o;
    o.anonymous = false;
    o.allow_multiple_clients = false;
    o.exit_when_idle = false;
    return o;
  }
};

} // namespace

TEST_CASE("two stock BOINC clients get the signed app from the server and agree on its results",
          "[e2e][apps]") {
  distributed_app d;
  auto& s = d.s;
  const auto& md5 = d.md5;
  // A quorum of two: each job runs on both machines (one after the other here), and their
  // outputs must agree.
  auto names = d.create_work(3, 200000, 2);
  REQUIRE(names.size() == 3);
  boinc_client second{"second", d.root.path / "second", distributed_app::stock_client()};
  second.prepare(s.master_url());
  for (auto* client : {&d.client, &second}) {
    INFO(client->name);
    client->start(s.master_url(), s.account_key);
    run_until(s, *client, test_budget(120s), [] { return false; });
    INFO(client->log_tail(80));
    CHECK(client->exit_code == 0);
    CHECK_FALSE(log_has(*client, "Signature verification failed"));
    CHECK_FALSE(log_has(*client, "missing signature"));
    // The key it echoes in every request is the project's (not cut, not "never had").
    CHECK_FALSE(log_has(*client, "attach again"));
    // It downloaded the version's file (as the server staged it) and holds the key.
    auto pdir = client->dir / "projects" / project_dir_name(s.master_url());
    auto downloaded = pdir / ("app_" + md5);
    REQUIRE(fs::exists(downloaded));
    CHECK(md5_hex(read_file(downloaded)) == md5);
    CHECK_FALSE(fs::exists(pdir / "app_info.xml"));
    auto state = client->state_xml();
    CHECK(state.find("<code_sign_key>") != std::string::npos);
    CHECK(state.find("<version_num>101</version_num>") != std::string::npos);
  }
  CHECK(d.client.hostid() != second.hostid());
  // Every job ran on version 101 on both hosts, and the two agreed.
  const auto workunits = "/api/projects/" + project + "/workunits/";
  for (const auto& name : names) {
    auto wu = s.get(workunits + name);
    INFO(wu.dump(2));
    CHECK(wu["state"] == "assimilated");
    REQUIRE(wu["results"].size() == 2);
    CHECK(wu["results"][0]["host"] != wu["results"][1]["host"]);
    for (const auto& r : wu["results"]) {
      CHECK(r["outcome"] == "success");
      CHECK(r["validation"] == "valid");
      CHECK(r["app_version"]["version_num"] == 101);
      CHECK(r["app_version"]["platform"] == platform);
    }
  }
  s.stop_and_verify_log();
}

TEST_CASE("a stock BOINC client attaches to the embedded demo with its printed key and runs "
          "the demo's own signed app",
          "[e2e][apps][demo]") {
  require_boinc_client();
  temp_dir root;
  // No --config: the demo, which signs and distributes testapp itself at its first start.
  server s{{}, root.path / "server"};
  auto names = s.cli({"work", "create", "--app", "testapp", "--count", "2", "--command-line",
                      "--iterations 1000", "--fpops-est", "1e9", "--fpops-bound", "1e12"},
                     "work create");
  REQUIRE(names.size() == 2);
  auto versions = s.get("/api/projects/" + project + "/apps/testapp")["versions"];
  REQUIRE(versions.size() == 1);
  auto md5 = versions[0]["files"][0]["md5"].get<std::string>();
  client_options o;
  o.anonymous = false;
  boinc_client client{"client", root.path / "client", o};
  client.prepare(s.master_url());
  client.start(s.master_url(), s.account_key);
  // The demo's quorum is two and one host gets one replica of a workunit: the client runs one
  // replica of each and leaves.
  run_until(s, client, test_budget(120s), [] { return false; });
  INFO(client.log_tail(80));
  CHECK(client.exit_code == 0);
  CHECK_FALSE(log_has(client, "Signature verification failed"));
  auto pdir = client.dir / "projects" / project_dir_name(s.master_url());
  CHECK(md5_hex(read_file(pdir / ("app_" + md5))) == md5);
  const auto workunits = "/api/projects/" + project + "/workunits/";
  for (const auto& name : names) {
    auto wu = s.get(workunits + name);
    INFO(wu.dump(2));
    REQUIRE(wu["results"].size() == 2);
    int done = 0;
    for (const auto& r : wu["results"])
      if (r["outcome"] == "success") {
        ++done;
        CHECK(r["app_version"]["version_num"] == 100);
      }
    CHECK(done == 1);
  }
  s.stop_and_verify_log();
}

TEST_CASE("a volunteer makes an account with boinccmd and attaches with the key it gets",
          "[e2e][web]") {
  require_boinc_client();
  temp_dir root;
  server s{{}, root.path / "server"}; // the demo: its signed app, account creation open
  auto names = s.cli({"work", "create", "--app", "testapp", "--count", "2", "--command-line",
                      "--iterations 1000", "--fpops-est", "1e9", "--fpops-bound", "1e12"},
                     "work create");
  client_options o;
  o.anonymous = false;
  boinc_client client{"volunteer", root.path / "client", o};
  client.prepare(s.master_url());
  client.start(s.master_url(), ""); // attached to nothing yet
  const auto url = s.master_url();

  // What the BOINC Manager's "add project" asks first. The GUI RPC port opens a moment after
  // the client starts: asked again until it answers.
  std::pair<int, std::string> config;
  const auto deadline = steady::now() + test_budget(60s);
  do {
    config = client.boinccmd({"--get_project_config", url});
    if (config.second.find("min_passwd_length") != std::string::npos)
      break;
    cobble::test::pump_output({client.proc.get()}, 500ms);
  } while (steady::now() < deadline);
  INFO(config.second);
  CHECK(config.second.find("name: Cobble demo project") != std::string::npos);
  CHECK(config.second.find("min_passwd_length: 6") != std::string::npos);

  auto key_in = [](const std::string& out) {
    std::smatch m;
    return std::regex_search(out, m, std::regex{"account key: ([0-9a-f]{32})"}) ? m[1].str()
                                                                                : std::string{};
  };
  auto made = client.boinccmd(
    {"--create_account", url, "Vera@Example.org", "volunteer pw", "Vera Volunteer"});
  INFO(made.second);
  auto key = key_in(made.second);
  REQUIRE(key.size() == 32);
  auto looked_up = client.boinccmd({"--lookup_account", url, "vera@example.org", "volunteer pw"});
  INFO(looked_up.second);
  CHECK(key_in(looked_up.second) == key);
  auto wrong = client.boinccmd({"--lookup_account", url, "vera@example.org", "not it"});
  INFO(wrong.second);
  CHECK(key_in(wrong.second).empty());
  CHECK(wrong.second.find("bad password") != std::string::npos);

  // Attached with that key, the client runs the demo's work for Vera's account.
  auto attached = client.boinccmd({"--project_attach", url, key});
  INFO(attached.second);
  REQUIRE(attached.first == 0);
  run_until(s, client, test_budget(120s), [] { return false; });
  INFO(client.log_tail(60));
  CHECK(client.exit_code == 0);
  std::uint64_t vera = 0;
  for (const auto& u : s.get("/api/projects/" + project + "/users")) {
    auto email = u["email"].get<std::string>(); // the GUI RPC library sends it lower-cased
    std::transform(email.begin(), email.end(), email.begin(), ::tolower);
    if (email == "vera@example.org")
      vera = u["id"].get<std::uint64_t>();
  }
  REQUIRE(vera != 0);
  auto host = s.get("/api/projects/" + project + "/hosts/" + std::to_string(client.hostid()));
  CHECK(host["user"] == vera);
  int done = 0;
  const auto workunits = "/api/projects/" + project + "/workunits/";
  for (const auto& name : names) {
    auto wu = s.get(workunits + name); // held: read below
    for (const auto& r : wu["results"])
      done += r["outcome"] == "success" ? 1 : 0;
  }
  CHECK(done == 2);
  s.stop_and_verify_log();
}

TEST_CASE("a stock BOINC client refuses an app file changed after signing", "[e2e][apps]") {
  distributed_app d;
  auto& s = d.s;
  auto& client = d.client;
  const auto& md5 = d.md5;
  d.create_work(1, 1000);
  // Someone changes the staged file on the server: same size, other bytes.
  auto staged = s.data / "projects" / project / "download" / ("app_" + md5);
  REQUIRE(fs::exists(staged));
  auto bytes = read_file(staged);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
  write_file(staged, bytes);
  client.start(s.master_url(), s.account_key);
  // The client refuses the file and reports the job that needed it as a download error; the
  // server logs its complaint for the operator.
  const auto complaint = "could not accept file app_" + md5;
  auto server_has = [&](const std::string& text) {
    const auto& lines = s.proc->lines();
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  run_until(s, client, test_budget(120s), [&] {
    return log_has(client, "Signature verification failed") && server_has(complaint);
  });
  INFO(client.log_tail(60));
  INFO("cobbled:\n" << tail(s.proc->lines(), 20));
  CHECK(log_has(client, "Signature verification failed for app_" + md5));
  CHECK(server_has(complaint));
  CHECK(server_has("error -120 (RSA key check failed for file), signature verification failed; "
                   "the file in the download area no longer matches what was signed"));
  // The changed program never ran: no result of it was a success.
  auto list = s.get("/api/projects/" + project + "/workunits?limit=10");
  for (const auto& w : list["items"])
    CHECK(w["state"] != "assimilated");
}

TEST_CASE("a stock client that detaches and attaches again keeps its host, and its lost tasks "
          "go to other computers",
          "[e2e][apps][identity]") {
  busy_volunteer v{"detacher"};
  auto& s = v.d.s;
  auto& client = v.client;
  const auto& names = v.names;
  const auto status = "/api/projects/" + project;
  auto host = v.host;

  // Detach (the client deletes the project and its tasks), then attach again.
  auto [detached, detach_out] = client.boinccmd({"--project", s.master_url(), "detach"});
  INFO(detach_out);
  REQUIRE(detached == 0);
  auto [attached, attach_out] = client.boinccmd(
    {"--project_attach", s.master_url(), s.account_key});
  INFO(attach_out);
  REQUIRE(attached == 0);
  run_until(s, client, test_budget(120s), [&] {
    return s.get(status)["counters"]["results_written_off"] == 2 && client.hostid() == host;
  });
  INFO(client.log_tail(60));
  auto counters = s.get(status)["counters"];
  CHECK(counters["hosts_reattached"] == 1);
  CHECK(s.get(status)["hosts"] == 1); // the same host, not a second one
  CHECK(log_has(client, "attached again as host " + std::to_string(host)));
  // Each workunit: the detached task is over, its replacement waits for another computer
  // (never this one: one machine does not make up a quorum alone).
  const auto workunits = status + "/workunits/";
  for (const auto& name : names) {
    auto wu = s.get(workunits + name);
    INFO(wu.dump(2));
    REQUIRE(wu["results"].size() == 2);
    CHECK(wu["results"][0]["outcome"] == "client_detached");
    CHECK(wu["results"][1]["state"] == "unsent");
  }
  s.stop_and_verify_log();
}

TEST_CASE("a stock client whose project is reset gets its lost tasks again", "[e2e][apps][lost]") {
  busy_volunteer v{"resetter"};
  auto& s = v.d.s;
  auto& client = v.client;
  const auto& names = v.names;
  const auto status = "/api/projects/" + project;
  auto host = v.host;

  // Reset: the client deletes the project's tasks and files but keeps its host id; at its
  // next request it lists no task, and the server sends both again with the app.
  auto [reset, reset_out] = client.boinccmd({"--project", s.master_url(), "reset"});
  INFO(reset_out);
  REQUIRE(reset == 0);
  run_until(s, client, test_budget(120s),
            [&] { return s.get(status)["counters"]["results_resent"] == 2; });
  INFO(client.log_tail(80));
  CHECK(client.hostid() == host);
  CHECK(s.get(status)["hosts"] == 1);
  CHECK(s.get(status)["counters"]["results_written_off"] == 0);
  // The client has both tasks again and runs them with the app it downloaded once more.
  run_until(s, client, test_budget(120s), [&] {
    auto got = client.boinccmd({"--get_tasks"});
    const auto& tasks = got.second;
    return got.first == 0
           && std::all_of(names.begin(), names.end(),
                          [&](const std::string& n) { return tasks.find(n) != std::string::npos; })
           && tasks.find("active_task_state: EXECUTING") != std::string::npos;
  });
  for (const auto& name : names) // the reply said so (its results are "<workunit>_0")
    CHECK(log_has(client, "Resent lost task " + name + "_0."));
  s.stop_and_verify_log();
}

TEST_CASE("a stock client's task that finishes after its deadline still counts",
          "[e2e][apps][late]") {
  distributed_app d;
  auto& s = d.s;
  // A 30 s deadline and a task that runs 45 s: the server times it out (and replaces it)
  // while the client still runs it; the client then uploads and reports it late.
  auto names = s.cli({"work", "create", "--app", "testapp", "--count", "1", "--command-line",
                      "--wall-seconds 45", "--fpops-est", "1e9", "--fpops-bound", "1e15",
                      "--delay-bound", "30"},
                     "work create");
  REQUIRE(names.size() == 1);
  const auto status = "/api/projects/" + project;
  d.client.start(s.master_url(), s.account_key);
  run_until(s, d.client, test_budget(180s),
            [&] { return s.get(status)["counters"]["results_late"] == 1; });
  INFO(d.client.log_tail(80));
  auto counters = s.get(status)["counters"];
  CHECK(counters["results_timed_out"] == 1);
  CHECK(counters["results_late"] == 1);
  CHECK_FALSE(log_has(d.client, "permanent upload error"));
  // Quorum 1: the late result is the canonical one and is granted credit; the replacement
  // made at the timeout is no longer needed.
  auto wu = s.get(status + "/workunits/" + names[0]);
  INFO(wu.dump(2));
  REQUIRE(wu["results"].size() == 2);
  CHECK(wu["results"][0]["outcome"] == "success");
  CHECK(wu["results"][0]["validation"] == "valid");
  CHECK(wu["results"][0]["credit"]["granted"].get<double>() > 0);
  CHECK(wu["results"][1]["outcome"] == "didnt_need");
  s.stop_and_verify_log();
}
