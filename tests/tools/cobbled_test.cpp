// Tests of cobbled as a child process: what it prints at start (account keys are secrets,
// printed only for the embedded demo), the admin API on a listener of its own, and how it starts on
// damaged or incomplete data: a damaged write-ahead log, a damaged newest snapshot, a lost upload
// secret. Each runs the real cobbled on a data directory filled through the real path (admin and
// scheduler requests).

#include "../support/cobbled.hpp"
#include "storage/event_store.hpp"
#include "storage/file_store.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace cobble::test;

namespace {

bool any_line_has(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << bytes;
}

/// Inverts four bytes in the middle of `p`.
void flip_middle(const fs::path& p) {
  auto bytes = read_file(p);
  REQUIRE(bytes.size() > 64);
  auto at = bytes.size() / 2;
  if (at % 32768 > 32768 - 16) // not in a WAL block's padding
    at -= 64;
  for (std::size_t i = 0; i < 4; ++i)
    bytes[at + i] = static_cast<char>(~bytes[at + i]);
  write_bytes(p, bytes);
}

/// The event log's write-ahead log file (the largest, which holds the events).
fs::path wal_of(const fs::path& data) {
  fs::path biggest;
  std::uintmax_t size = 0;
  for (const auto& e : fs::directory_iterator{data / "log"})
    if (e.path().extension() == ".log" && e.file_size() > size) {
      biggest = e.path();
      size = e.file_size();
    }
  REQUIRE(!biggest.empty());
  return biggest;
}

/// cobbled on `data` expected to refuse: its exit code and output.
std::pair<int, std::string> start_refused(const fs::path& data) {
  return run_command({program("tools/cobbled"), "--data-dir", data.string(), "--port", "0",
                      "--admin-port", "0"},
                     60s);
}

std::pair<int, std::string> verify(const fs::path& data) {
  return run_command({program("tools/cobble"), "log", "verify", "--data-dir", data.string()}, 120s);
}

/// Every workunit name the project holds.
std::vector<std::string> workunits(server& s) {
  std::vector<std::string> out;
  auto list = admin_get(s, "/api/projects/demo/workunits");
  for (auto& wu : list["items"])
    out.push_back(wu["name"].get<std::string>());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("the embedded demo prints the demo user's account key, and it is the real one") {
  temp_dir dir;
  server s{dir.path() / "data"};
  auto lines = s.proc->lines();
  INFO(server::join(lines));
  auto printed = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("account key of user demo: ") != std::string::npos;
  });
  REQUIRE(printed != lines.end());
  CHECK(printed->substr(printed->rfind(' ') + 1) == s.account_key);
  CHECK(s.stop() == 0);
}

TEST_CASE("the embedded demo distributes testapp, signed with a key kept in its data directory",
          "[tools][cobbled][demo]") {
  temp_dir dir;
  auto data = dir.path() / "data";
  auto keys = data / "keys" / "demo";
  auto testapp = program("tools/testapp/testapp");
  auto md5 = cobble::storage::md5_of_file(testapp);
  REQUIRE(md5);
  /// The demo's versions of testapp and its code-signing keys, as the admin API lists them.
  auto versions = [](server& s) {
    return admin_get(s, "/api/projects/demo/apps/testapp")["versions"];
  };
  {
    server s{data};
    auto lines = s.proc->lines();
    INFO(server::join(lines));
    CHECK(any_line_has(lines, "demo app: testapp version 100 (x86_64-pc-linux-gnu) added from"));
    // The private key stays with the operator's account only.
    REQUIRE(fs::exists(keys / "code_sign_private"));
    CHECK((fs::status(keys / "code_sign_private").permissions() & fs::perms::all)
          == (fs::perms::owner_read | fs::perms::owner_write));
    auto held = admin_get(s, "/api/projects/demo/keys");
    REQUIRE(held.size() == 1);
    CHECK(held[0]["public_key"] == read_file(keys / "code_sign_public"));
    auto v = versions(s);
    REQUIRE(v.size() == 1);
    CHECK(v[0]["version_num"] == 100);
    CHECK(v[0]["deprecated"] == false);
    REQUIRE(v[0]["files"].size() == 1);
    CHECK(v[0]["files"][0]["md5"] == *md5);
    CHECK(v[0]["files"][0]["open_name"] == "testapp");
    CHECK(v[0]["files"][0]["main_program"] == true);
    CHECK(fs::exists(data / "projects" / "demo" / "download" / ("app_" + *md5)));
    CHECK(s.stop() == 0);
  }
  {
    // Started again: the same key and version, nothing added.
    server s{data};
    INFO(server::join(s.proc->lines()));
    CHECK(
      any_line_has(s.proc->lines(), "demo app: testapp version 100 (x86_64-pc-linux-gnu), from"));
    CHECK(admin_get(s, "/api/projects/demo/keys").size() == 1);
    CHECK(versions(s).size() == 1);
    CHECK(s.stop() == 0);
  }
  {
    // Another program: a new version above the last, signed with the same key.
    auto other = dir.path() / "testapp";
    fs::copy_file(testapp, other);
    std::ofstream{other, std::ios::app | std::ios::binary} << "changed";
    server s{data, {"--demo-app", other.string()}};
    INFO(server::join(s.proc->lines()));
    CHECK(
      any_line_has(s.proc->lines(), "demo app: testapp version 101 (x86_64-pc-linux-gnu) added"));
    CHECK(admin_get(s, "/api/projects/demo/keys").size() == 1);
    auto v = versions(s);
    REQUIRE(v.size() == 2);
    CHECK(v[1]["version_num"] == 101);
    CHECK(v[1]["files"][0]["md5"] != *md5);
    CHECK(s.stop() == 0);
  }
  // --demo-app is the demo's: with a configuration it is a usage error, and nothing starts.
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects: [{name: p}]\n";
  auto [code, out] = run_command({program("tools/cobbled"), "--config", cfg.string(), "--demo-app",
                                  testapp, "--data-dir", (dir.path() / "other").string()},
                                 60s);
  INFO(out);
  CHECK(code != 0);
  CHECK_THAT(out, Catch::Contains("--demo-app") && Catch::Contains("excludes"));
  CHECK_FALSE(fs::exists(dir.path() / "other"));
}

TEST_CASE("with --config cobbled prints no account key and says where to find them") {
  temp_dir dir;
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                        "    users: [{name: demo}, {name: alice}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  server s{dir.path() / "data", {"--config", cfg.string()}};
  auto alice = account_key_of(s.admin_port, s.token, "demo", "alice");
  REQUIRE(!alice.empty());
  auto lines = s.proc->lines();
  INFO(server::join(lines));
  CHECK_FALSE(any_line_has(lines, "account key of user"));
  CHECK_FALSE(any_line_has(lines, s.account_key));
  CHECK_FALSE(any_line_has(lines, alice));
  CHECK(any_line_has(lines, "cobble user list"));
  CHECK(s.stop() == 0);
}

TEST_CASE("cobbled refuses a write-ahead log damaged before its end, and verify reports it",
          "[tools][cobbled][wal]") {
  temp_dir dir{"cobbled-wal"};
  {
    server s{dir.path()};
    for (int i = 0; i < 60; ++i)
      create_work(s, "wu_" + std::to_string(i));
    s.kill9(); // every event acknowledged, all of them in the WAL
  }
  auto wal = wal_of(dir.path());
  flip_middle(wal);
  auto damaged = read_file(wal);
  auto [code, out] = start_refused(dir.path());
  INFO(out);
  CHECK(code == 1);
  CHECK_THAT(out, Catch::Contains("is damaged"));
  CHECK_THAT(out, Catch::Contains(wal.filename().string()));
  CHECK_THAT(out, Catch::Contains("restore the data directory from a backup"));
  CHECK_THAT(out, Catch::Contains("--salvage-wal"));
  CHECK(read_file(wal) == damaged); // nothing was changed
  auto [vcode, vout] = verify(dir.path());
  INFO(vout);
  CHECK(vcode != 0);
  CHECK_THAT(vout, Catch::Contains("is damaged"));
}

TEST_CASE("verify fails on a log that lost its end to a salvaged write-ahead log",
          "[tools][cobbled][wal]") {
  // As RocksDB's default recovery did silently: the log is cut where the WAL was damaged.
  temp_dir dir{"cobbled-lost-tail"};
  {
    server s{dir.path()};
    for (int i = 0; i < 60; ++i)
      create_work(s, "wu_" + std::to_string(i));
    CHECK(s.stop() == 0); // the final snapshot, at the last event
  }
  flip_middle(wal_of(dir.path()));
  {
    cobble::storage::store_options salvage;
    salvage.salvage_wal = true;
    auto st = cobble::storage::event_store::open(dir.path() / "log", salvage);
    REQUIRE(st);
  }
  auto [code, out] = verify(dir.path());
  INFO(out);
  CHECK(code != 0);
  CHECK_THAT(out, Catch::Contains("were lost"));
  // cobbled refuses it too, and starts once the operator salvaged it on purpose.
  auto [scode, sout] = start_refused(dir.path());
  INFO(sout);
  CHECK(scode == 1);
  CHECK_THAT(sout, Catch::Contains("were lost"));
  server s{dir.path(), {"--salvage-wal"}};
  CHECK(s.stop() == 0);
  auto [vcode, vout] = verify(dir.path());
  INFO(vout);
  CHECK(vcode == 0);
}

TEST_CASE("a damaged newest snapshot falls back to the previous one, naming its file",
          "[tools][cobbled][snapshot]") {
  temp_dir dir{"cobbled-snap"};
  {
    server s{dir.path()};
    create_work(s, "wu_first");
    CHECK(s.stop() == 0); // snapshot 1
    s.start();
    create_work(s, "wu_second");
    CHECK(s.stop() == 0); // snapshot 2, the newest
  }
  std::vector<fs::path> snaps;
  for (const auto& e : fs::directory_iterator{dir.path() / "log" / "snapshots"})
    snaps.push_back(e.path());
  std::sort(snaps.begin(), snaps.end());
  REQUIRE(snaps.size() >= 2);
  auto newest = snaps.back();
  flip_middle(newest);
  auto previous_seq = std::stoull(snaps[snaps.size() - 2].filename().string().substr(0, 20));
  auto newest_seq = std::stoull(newest.filename().string().substr(0, 20));

  server s{dir.path()};
  auto lines = server::join(s.proc->lines());
  INFO(lines);
  CHECK_THAT(lines, Catch::Contains("snapshot " + std::to_string(newest_seq)));
  CHECK_THAT(lines, Catch::Contains("snapshots/" + newest.filename().string()));
  CHECK_THAT(lines, Catch::Contains("recovering from snapshot " + std::to_string(previous_seq)));
  // Nothing was lost: both workunits are there.
  CHECK(workunits(s) == std::vector<std::string>{"wu_first", "wu_second"});
  CHECK(s.stop() == 0);
  // The damaged snapshot was replaced by one that reads.
  auto [code, out] = verify(dir.path());
  INFO(out);
  CHECK(code == 0);
}

TEST_CASE("every snapshot damaged: the whole log is replayed", "[tools][cobbled][snapshot]") {
  temp_dir dir{"cobbled-snap-all"};
  {
    server s{dir.path()};
    create_work(s, "wu_first");
    CHECK(s.stop() == 0);
  }
  for (const auto& e : fs::directory_iterator{dir.path() / "log" / "snapshots"})
    flip_middle(e.path());
  server s{dir.path()};
  auto lines = server::join(s.proc->lines());
  INFO(lines);
  CHECK_THAT(lines, Catch::Contains("recovering from the first event"));
  CHECK(workunits(s) == std::vector<std::string>{"wu_first"});
  CHECK(s.stop() == 0);
}

TEST_CASE("a lost upload secret refuses the start while results are in progress",
          "[tools][cobbled][secrets]") {
  temp_dir dir{"cobbled-secret"};
  auto secret_file = dir.path() / "upload_secret";
  std::string secret;
  {
    server s{dir.path()};
    // The first start generated it, readable by the owner only.
    secret = read_file(secret_file);
    CHECK(secret.size() > 32);
    CHECK((fs::status(secret_file).permissions() & (fs::perms::group_all | fs::perms::others_all))
          == fs::perms::none);
    create_work(s, "wu_up");
    http_client c{"127.0.0.1", s.port};
    auto a = rpc(c, make_request(s.account_key, 0, 100, 1, {}));
    REQUIRE(a.jobs.size() == 1); // its upload URL is signed with the secret
    CHECK(s.stop() == 0);
  }
  fs::rename(secret_file, dir.path() / "kept-aside");
  auto [code, out] = start_refused(dir.path());
  INFO(out);
  CHECK(code == 1);
  CHECK_THAT(out, Catch::Contains("upload secret is missing"));
  CHECK_THAT(out, Catch::Contains(secret_file.string()));
  CHECK_THAT(out, Catch::Contains("1 results in progress"));
  CHECK_THAT(out, Catch::Contains("Restore the file"));
  CHECK_FALSE(fs::exists(secret_file)); // not regenerated
  // An empty file is no secret either.
  write_bytes(secret_file, "");
  CHECK(start_refused(dir.path()).first == 1);
  CHECK(read_file(secret_file).empty());
  // Restored, the server starts with the old secret.
  fs::rename(dir.path() / "kept-aside", secret_file);
  server s{dir.path()};
  CHECK(read_file(secret_file) == secret);
  CHECK(s.stop() == 0);
}

TEST_CASE("a lost upload secret is replaced, with a warning, when no result is in progress",
          "[tools][cobbled][secrets]") {
  temp_dir dir{"cobbled-secret-idle"};
  auto secret_file = dir.path() / "upload_secret";
  std::string secret;
  {
    server s{dir.path()};
    secret = read_file(secret_file);
    create_work(s, "wu_waiting"); // unsent: no upload URL was signed
    CHECK(s.stop() == 0);
  }
  fs::remove(secret_file);
  server s{dir.path()};
  auto lines = server::join(s.proc->lines());
  INFO(lines);
  CHECK_THAT(lines, Catch::Contains("was missing; a new one was generated"));
  auto fresh = read_file(secret_file);
  CHECK(fresh.size() > 32);
  CHECK(fresh != secret);
  CHECK(s.stop() == 0);
}

TEST_CASE("cobbled refuses to start while the disk is below server.min_free_disk",
          "[tools][cobbled][disk]") {
  temp_dir dir{"cobbled-disk"};
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "server:\n"
                        "  min_free_disk: 1000000TiB\n" // more than any disk has free
                        "projects:\n"
                        "  - name: demo\n"
                        "    users: [{name: demo}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  auto data = dir.path() / "data";
  auto [code, out] = run_command({program("tools/cobbled"), "--config", cfg.string(), "--data-dir",
                                  data.string(), "--port", "0", "--admin-port", "0"},
                                 60s);
  INFO(out);
  CHECK(code == 1);
  CHECK_THAT(out, Catch::Contains("refusing to start"));
  CHECK_THAT(out, Catch::Contains("bytes free on " + fs::absolute(data).string()));
  CHECK_THAT(out, Catch::Contains("below server.min_free_disk"));
  CHECK_THAT(out, Catch::Contains("Free space on that file system"));
  CHECK_FALSE(fs::exists(data / "log")); // the log was not even opened
  CHECK_FALSE(fs::exists(data / "upload_secret"));
}

TEST_CASE("the admin API listens on its own port, and the public one answers /api/ with 404",
          "[tools][cobbled][admin]") {
  temp_dir dir{"cobbled-admin"};
  server s{dir.path()};
  REQUIRE(s.admin_port != s.port);
  auto lines = s.proc->lines();
  INFO(server::join(lines));
  CHECK(any_line_has(lines, "listening on http://127.0.0.1:" + std::to_string(s.port)));
  CHECK(
    any_line_has(lines, "admin API: http://127.0.0.1:" + std::to_string(s.admin_port) + "/api/"));

  // A stranger on the public port finds no admin API, token or not; nothing is created.
  http_client pub{"127.0.0.1", s.port};
  CHECK(pub.get("/api/projects", s.token).status == 404);
  CHECK(pub.get("/api/projects/demo/users", s.token).status == 404);
  auto posted = pub.post("/api/projects/demo/workunits", R"({"app": "testapp", "name": "wu_pub"})",
                         s.token, "application/json");
  CHECK(posted.status == 404);
  // The public port still serves the BOINC side: the master page and the scheduler.
  CHECK(pub.get("/demo/").status == 200);
  auto reply = rpc(pub, make_request(s.account_key, 0, 100, 1, {}));
  CHECK(reply.hostid.has_value());

  // The admin port answers the API with the token, and refuses it without; it serves no
  // scheduler.
  http_client adm{"127.0.0.1", s.admin_port};
  auto projects = adm.get("/api/projects", s.token);
  INFO(projects.body);
  REQUIRE(projects.status == 200);
  auto list = json::parse(projects.body);
  REQUIRE(list.is_array());
  REQUIRE(list.size() == 1);
  CHECK(list[0]["name"] == "demo");
  CHECK(adm.get("/api/projects").status == 401);
  CHECK(adm.get("/demo/").status == 404);
  CHECK(adm.get("/metrics").status == 404);
  // /metrics stays public and counts the admin listener's refusal apart.
  auto metrics = pub.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK_THAT(metrics.body, Catch::Contains("\ncobble_admin_http_refused_early_total 1\n"));
  CHECK_THAT(metrics.body, Catch::Contains("\ncobble_http_refused_early_total 0\n"));
  CHECK(workunits(s).empty()); // the public POST created nothing

  // The data directory names the admin API, and cobble finds it there with --data-dir alone.
  CHECK(read_file(s.data / "admin_url")
        == "http://127.0.0.1:" + std::to_string(s.admin_port) + "\n");
  auto [code, out] = run_command({program("tools/cobble"), "--data-dir", s.data.string(), "status"},
                                 60s);
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("project demo (Cobble demo project)"));
  // --server wins over the file: the public port has no admin API.
  auto [code2, out2] = run_command({program("tools/cobble"), "--server",
                                    "http://127.0.0.1:" + std::to_string(s.port), "--data-dir",
                                    s.data.string(), "status"},
                                   60s);
  INFO(out2);
  CHECK(code2 == 1);
  CHECK_THAT(out2, Catch::Contains("HTTP 404"));
  CHECK(s.stop() == 0);
}

TEST_CASE("cobbled refuses to start when the admin port is taken, saying which setting",
          "[tools][cobbled][admin]") {
  temp_dir dir{"cobbled-admin-taken"};
  server s{dir.path() / "first"};
  auto [code, out] = run_command({program("tools/cobbled"), "--data-dir",
                                  (dir.path() / "second").string(), "--port", "0", "--admin-port",
                                  std::to_string(s.port)},
                                 60s);
  INFO(out);
  CHECK(code == 1);
  CHECK_THAT(out, Catch::Contains("cannot listen for the admin API on 127.0.0.1:"
                                  + std::to_string(s.port)
                                  + " (server.admin_address, server.admin_port)"));
  auto [code2, out2] = run_command({program("tools/cobbled"), "--data-dir",
                                    (dir.path() / "third").string(), "--port", "9123",
                                    "--admin-port", "9123"},
                                   60s);
  INFO(out2);
  CHECK(code2 == 1);
  CHECK_THAT(out2, Catch::Contains("server.admin_port: must differ from server.port"));
  CHECK(s.stop() == 0);
}

TEST_CASE("cobbled --check-config says what would be served, or what is wrong",
          "[tools][cobbled][config]") {
  temp_dir dir{"cobbled-check"};
  auto data = dir.path() / "new-data";
  auto [code, out] = run_command({program("tools/cobbled"), "--check-config", "--data-dir",
                                  data.string()},
                                 60s);
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("configuration OK"));
  CHECK_THAT(out, Catch::Contains("to be made at the first start"));
  CHECK_THAT(out, Catch::Contains("project demo: apps testapp"));
  CHECK_FALSE(fs::exists(data)); // nothing is made

  // A configuration with a mistake: its file, line and key, exit 1.
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "server:\n  lisen: 1\nprojects: []\n";
  auto [bad, bad_out] = run_command({program("tools/cobbled"), "--check-config", "--config",
                                     cfg.string(), "--data-dir", data.string()},
                                    60s);
  INFO(bad_out);
  CHECK(bad == 1);
  CHECK_THAT(bad_out, Catch::Contains("lisen"));

  // A data directory that is a file.
  auto file = dir.path() / "a-file";
  std::ofstream{file} << "x";
  auto [not_dir, not_dir_out] = run_command({program("tools/cobbled"), "--check-config",
                                             "--data-dir", file.string()},
                                            60s);
  CHECK(not_dir == 1);
  CHECK_THAT(not_dir_out, Catch::Contains("is no directory this user can write to"));

  // A usage error is 2, as for cobble.
  auto [usage, usage_out] = run_command({program("tools/cobbled"), "--no-such-flag"}, 60s);
  CHECK(usage == 2);
  CHECK_THAT(usage_out, Catch::Contains("--no-such-flag"));
}
