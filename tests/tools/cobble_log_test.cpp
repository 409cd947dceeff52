// Tests of `cobble log tail|replay|verify`: they run the built `cobble` binary on a data
// directory prepared through the real event path (a node, admin requests, a snapshot).

#include "../support/http_client.hpp"
#include "../support/process.hpp"
#include "../support/temp_dir.hpp"
#include "actors/clock.hpp"
#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/event_text.hpp"
#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "config/config.hpp"
#include "storage/event_store.hpp"
#include "storage/keys.hpp"
#include "tests/support/demo_config.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <catch2/catch.hpp>
#include <rocksdb/db.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

using namespace cobble;
using namespace std::chrono_literals;

namespace {

/// What a run of `cobble` printed (stdout and stderr together) and its exit code.
struct run_result {
  int code = -1;
  std::string output;
};

/// Runs the built `cobble` with `args` (already shell-quoted where needed).
run_result run_cobble(const std::string& args) {
  std::string cmd = std::string{COBBLE_BINARY_DIR} + "/tools/cobble " + args + " 2>&1";
  run_result out;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0)
    out.output.append(buf.data(), n);
  int status = ::pclose(pipe);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string quoted(const std::filesystem::path& p) {
  return "'" + p.string() + "'";
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in{s};
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// Fills `dir` through the real path: a node on the demo configuration creates work and a user,
/// the log actor takes a snapshot, and the node shuts down (with its final snapshot).
void prepare(const std::filesystem::path& dir) {
  caf::actor_system_config cfg;
  register_types(cfg);
  caf::actor_system sys{cfg};
  auto conf = cobble::test::demo_config();
  conf.server.data_dir = dir;
  auto opened = storage::event_store::open(dir / "log");
  REQUIRE(opened);
  std::shared_ptr<storage::event_store> store = std::move(*opened);
  auto started = start_node(sys, conf, store, std::make_shared<manual_clock>());
  REQUIRE(started);
  auto handles = *started;
  auto project = handles.projects.at("demo");
  {
    caf::scoped_actor self{sys};
    auto batch = std::make_shared<work_batch>();
    batch->submitter = "log-test";
    batch->items.push_back(work_spec{});
    batch->items.back().app = "testapp";
    batch->items.back().name = "alpha";
    batch->items.push_back(work_spec{});
    batch->items.back().app = "testapp";
    batch->items.back().name = "beta";
    self->request(project, 30s, atom::create_v, work_batch_ptr{batch})
      .receive([](const work_created_ptr& c) { REQUIRE(c->names.size() == 2); },
               [](caf::error& err) { FAIL("create failed: " << describe(err)); });
    self->request(project, 30s, atom::create_v, std::string{"carol"}, std::string{"c@x"})
      .receive([](id_type, const std::string&) {},
               [](caf::error& err) { FAIL("user create failed: " << describe(err)); });
    self->request(handles.log, 30s, atom::snapshot_v)
      .receive([](std::uint64_t seq) { CHECK(seq > 0); },
               [](caf::error& err) { FAIL("snapshot failed: " << describe(err)); });
    self->request(handles.node, 30s, atom::snapshot_v, atom::sync_v)
      .receive([](std::uint64_t) {},
               [](caf::error& err) { FAIL("shutdown failed: " << describe(err)); });
  }
  handles = node_handles{};
  project = project_actor{};
  store.reset();
}

/// The seq of the event whose description contains `needle` (read through the store).
std::uint64_t seq_of(const std::filesystem::path& dir, const std::string& needle) {
  auto opened = storage::event_store::open(dir / "log");
  REQUIRE(opened);
  std::uint64_t found = 0;
  auto err = (*opened)->scan(1, (*opened)->last_seq(), [&](const storage::event_record& r) {
    auto e = from_record(r);
    REQUIRE(e);
    if (describe(*e).find(needle) != std::string::npos) {
      found = r.seq;
      return false;
    }
    return true;
  });
  REQUIRE_FALSE(err);
  REQUIRE(found > 0);
  return found;
}

/// Flips one payload bit of event `seq` with a raw RocksDB handle (the store is closed).
void corrupt_event(const std::filesystem::path& dir, std::uint64_t seq) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs{{storage::default_cf_name, {}},
                                                   {storage::events_cf_name, {}},
                                                   {storage::snapshots_cf_name, {}}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(rocksdb::DBOptions{}, (dir / "log").string(), cfs, &handles, &raw);
  REQUIRE(s.ok());
  std::unique_ptr<rocksdb::DB> db{raw};
  auto key = storage::event_key{seq}.encode();
  std::string value;
  REQUIRE(db->Get({}, handles[1], key, &value).ok());
  REQUIRE(value.size() > storage::event_value::header_size);
  value.back() ^= 0x01;
  REQUIRE(db->Put({}, handles[1], key, value).ok());
  for (auto* h : handles)
    static_cast<void>(db->DestroyColumnFamilyHandle(h));
  static_cast<void>(db->Close());
}

} // namespace

TEST_CASE("cobble log tail, replay and verify on a prepared data directory",
          "[tools][cobble][log]") {
  cobble::test::temp_dir dir{"cobble-log"};
  prepare(dir.path());
  auto data = "--data-dir " + quoted(dir.path());

  SECTION("tail prints the newest events, one per line") {
    auto all = run_cobble(data + " log tail -n 1000");
    REQUIRE(all.code == 0);
    CHECK_THAT(all.output, Catch::Contains("project_configured"));
    CHECK_THAT(all.output, Catch::Contains("workunit_created wu:1 name=alpha"));
    CHECK_THAT(all.output, Catch::Contains("name=beta"));
    CHECK_THAT(all.output, Catch::Contains("user_created"));
    auto n = lines_of(all.output).size();
    CHECK(n >= 4);
    auto two = run_cobble(data + " log tail -n 2");
    REQUIRE(two.code == 0);
    auto last_two = lines_of(two.output);
    REQUIRE(last_two.size() == 2);
    CHECK(last_two[1] == lines_of(all.output).back());
    auto from = run_cobble(data + " log tail --from 2 -n 1");
    REQUIRE(from.code == 0);
    REQUIRE(lines_of(from.output).size() == 1);
    CHECK(from.output.rfind("#2 ", 0) == 0);
    auto as_json = run_cobble(data + " --json log tail -n 1");
    REQUIRE(as_json.code == 0);
    CHECK_THAT(as_json.output, Catch::Contains("\"seq\":"));
  }

  SECTION("replay prints an entity's history and state") {
    auto wu = run_cobble(data + " log replay --entity wu:alpha");
    REQUIRE(wu.code == 0);
    CHECK_THAT(wu.output, Catch::Contains("history of wu:alpha in project demo"));
    CHECK_THAT(wu.output, Catch::Contains("workunit_created wu:1 name=alpha"));
    CHECK_THAT(wu.output, Catch::Contains("\"name\": \"alpha\""));
    CHECK_THAT(wu.output, Catch::Contains("\"alpha_0\""));
    CHECK_THAT(wu.output, Catch::Contains("events/s"));
    CHECK_THAT(wu.output, !Catch::Contains("name=beta"));

    auto created = seq_of(dir.path(), "name=alpha");
    auto before = run_cobble(data + " log replay --to " + std::to_string(created - 1)
                             + " --entity wu:alpha");
    CHECK(before.code == 1);
    CHECK_THAT(before.output, Catch::Contains("no wu:alpha"));

    auto user = run_cobble(data + " log replay --entity user:1");
    REQUIRE(user.code == 0);
    CHECK_THAT(user.output, Catch::Contains("user_created"));
    CHECK_THAT(user.output, Catch::Contains("\"authenticator\""));

    for (const auto* name : {"app:testapp", "app:1"}) {
      auto app = run_cobble(data + " log replay --entity " + name);
      REQUIRE(app.code == 0);
      CHECK_THAT(app.output, Catch::Contains("project_configured"));
      CHECK_THAT(app.output, Catch::Contains("\"name\": \"testapp\""));
      CHECK_THAT(app.output, Catch::Contains("\"version_num\": 100"));
    }
    auto no_app = run_cobble(data + " log replay --entity app:nosuchapp");
    CHECK(no_app.code == 1);
    CHECK_THAT(no_app.output, Catch::Contains("no app:nosuchapp"));

    auto summary = run_cobble(data + " log replay");
    REQUIRE(summary.code == 0);
    CHECK_THAT(summary.output, Catch::Contains("project demo"));
    CHECK_THAT(summary.output, Catch::Contains("testapp"));

    CHECK(run_cobble(data + " log replay --entity lamp:3").code == 2);
  }

  SECTION("verify passes, then fails naming a corrupted event") {
    auto ok = run_cobble(data + " log verify");
    REQUIRE(ok.code == 0);
    CHECK_THAT(ok.output, Catch::Contains("verified"));
    CHECK_THAT(ok.output, Catch::Contains("equals snapshot"));

    auto seq = seq_of(dir.path(), "name=beta");
    corrupt_event(dir.path(), seq);
    auto bad = run_cobble(data + " log verify");
    CHECK(bad.code == 1);
    CHECK_THAT(bad.output, Catch::Contains("event " + std::to_string(seq)));
    auto tail = run_cobble(data + " log tail -n 1000");
    CHECK(tail.code == 1);
    CHECK_THAT(tail.output, Catch::Contains("event " + std::to_string(seq)));
  }

  SECTION("verify names the first difference between the log and the snapshot") {
    {
      auto opened = storage::event_store::open(dir.path() / "log");
      REQUIRE(opened);
      auto& st = **opened;
      auto latest = st.latest_snapshot();
      REQUIRE(latest);
      REQUIRE(latest->has_value());
      auto [seq, blob] = **latest;
      auto w = decode_snapshot(blob);
      REQUIRE(w);
      REQUIRE(w->projects.size() == 1);
      auto& wus = w->projects[0].project.workunits;
      REQUIRE(wus.count(1));
      auto tampered = *wus.at(1).params;
      tampered.command_line = "--tampered";
      wus.at(1).params = tampered;
      REQUIRE_FALSE(st.write_snapshot(seq, encode_snapshot(*w)));
    }
    auto bad = run_cobble(data + " log verify");
    CHECK(bad.code == 1);
    CHECK_THAT(bad.output, Catch::Contains("MISMATCH"));
    CHECK_THAT(bad.output, Catch::Contains("project demo: workunit 1 (alpha)"));
    CHECK_THAT(bad.output, Catch::Contains("/params/command_line"));
    CHECK_THAT(bad.output, Catch::Contains("--tampered"));
  }
}

TEST_CASE("cobble reports usage errors with exit code 2", "[tools][cobble]") {
  CHECK(run_cobble("").code == 2);
  CHECK(run_cobble("frobnicate").code == 2);
  CHECK(run_cobble("log tail").code == 2); // no --data-dir
  auto help = run_cobble("log replay --help");
  CHECK(help.code == 0);
  CHECK_THAT(help.output, Catch::Contains("--entity"));
  cobble::test::temp_dir empty{"cobble-empty"};
  auto missing = run_cobble("--data-dir " + quoted(empty.path()) + " log verify");
  CHECK(missing.code == 1);
  CHECK_THAT(missing.output, Catch::Contains("no event log"));
  // AutoFlops: predicted app units must be a positive number (checked before any request).
  for (const char* bad : {"0", "-3", "nan", "inf", "lots"}) {
    INFO(bad);
    auto r = run_cobble(std::string{"--server http://127.0.0.1:9 work create --app testapp "
                                    "--predicted-app-units="}
                        + bad);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("predicted app units must be a positive number"));
  }
  auto help_create = run_cobble("work create --help");
  CHECK_THAT(help_create.output, Catch::Contains("--predicted-app-units"));
}

TEST_CASE("cobbled refuses to start on a corrupt event and overwrites nothing",
          "[tools][cobbled][log]") {
  cobble::test::temp_dir dir{"cobbled-corrupt"};
  prepare(dir.path());
  std::uint64_t last = 0;
  {
    // One more event after the newest snapshot, so recovery must read it.
    cobble::test::child_process server{{cobble::test::program("tools/cobbled"), "--data-dir",
                                        dir.path().string(), "--port", "0", "--admin-port", "0"}};
    auto line = server.wait_for("admin API:", 60s);
    REQUIRE(line);
    auto port = cobble::test::admin_port_of(*line);
    std::ifstream in{dir.path() / "admin_token"};
    std::string token;
    std::getline(in, token);
    cobble::test::http_client c{"127.0.0.1", port};
    auto r = c.post("/api/projects/demo/workunits", R"({"app":"testapp","name":"gamma"})", token,
                    "application/json");
    REQUIRE(r.status == 201);
    server.signal(SIGKILL);
    server.wait(30s);
  }
  {
    auto store = storage::event_store::open(dir.path() / "log");
    REQUIRE(store);
    last = (*store)->last_seq();
    auto snaps = (*store)->snapshots();
    REQUIRE(!snaps.empty());
    REQUIRE(snaps.back().seq < last);
  }
  corrupt_event(dir.path(), last);
  auto [code, out] = cobble::test::run_command({cobble::test::program("tools/cobbled"),
                                                "--data-dir", dir.path().string(), "--port", "0",
                                                "--admin-port", "0"},
                                               60s);
  INFO(out);
  CHECK(code == 1);
  CHECK_THAT(out, Catch::Contains("refusing to start"));
  CHECK_THAT(out, Catch::Contains("event " + std::to_string(last)));
  // Nothing was overwritten or appended: the damaged event is still the last one.
  auto store = storage::event_store::open(dir.path() / "log");
  REQUIRE(store);
  CHECK((*store)->last_seq() == last);
  auto read = (*store)->read(last);
  CHECK_FALSE(static_cast<bool>(read));
}
