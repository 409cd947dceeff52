// The statistics export: two hosts of a volunteer in a team compute a workunit to a quorum of
// two on the deterministic node, and the export read back, gunzipped and parsed as a stats
// site reads BOINC's db_dump files, shows the credit the server granted, public
// cross-project ids and no e-mail address; `cobble stats export` writes the same offline.

#include "../support/node_fixture.hpp"
#include "../support/process.hpp"
#include "../support/temp_dir.hpp"
#include "actors/messages.hpp"
#include "net/password.hpp"
#include "net/stats_export.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>
#include <pugixml.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <zlib.h>

using namespace cobble;
namespace fs = std::filesystem;

namespace {

/// The demo project whose user "demo" is in team "Crunchers & Co".
config::cobble_config in_a_team() {
  auto cfg = cobble::test::demo_config();
  cfg.projects.at(0).users.at(0).team = "Crunchers & Co";
  cfg.projects.at(0).users.push_back({"idle", "idle@example.org", "key-idle"});
  return cfg;
}

struct stats_fixture : test::node_fixture {
  stats_fixture() : node_fixture(options(in_a_team())) {}
  explicit stats_fixture(sim::harness_options o) : node_fixture(std::move(o)) {}

  std::shared_ptr<sched_request>
  request(std::uint64_t hostid, double req_secs, std::vector<reported_result> results = {}) {
    auto r = anonymous_request(hostid, req_secs, std::move(results));
    r->rpc_seqno = 1;
    r->host.p_ncpus = 2;
    r->host.p_vendor = "AuthenticAMD";
    r->host.p_model = "Ryzen <7>";
    return r;
  }

  /// Two hosts of user "demo" each run a replica of one workunit; both agree.
  void compute() {
    auto b = std::make_shared<work_batch>();
    b->submitter = "test";
    b->items.push_back(work_spec{});
    b->items.back().app = "testapp";
    b->items.back().name = "wu";
    ask<work_created_ptr>(project, atom::create_v, work_batch_ptr{std::move(b)});
    auto a = rpc(request(0, 3600));
    auto c = rpc(request(0, 3600));
    REQUIRE(a->results.size() == 1);
    REQUIRE(c->results.size() == 1);
    rpc(request(*a->hostid, 0, {test::success_report(a->results[0].name)}));
    rpc(request(*c->hostid, 0, {test::success_report(c->results[0].name)}));
    REQUIRE(workunit("wu")->wu.canonical.has_value());
  }
};

/// The whole of a gzip file, inflated; fails the test when it is not valid gzip.
std::string gunzip(const fs::path& p) {
  gzFile gz = gzopen(p.c_str(), "rb");
  REQUIRE(gz != nullptr);
  std::string out;
  char buf[4096];
  int n = 0;
  while ((n = gzread(gz, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  int err = 0;
  gzerror(gz, &err);
  CHECK(err == Z_OK);
  CHECK(gzclose(gz) == Z_OK);
  return out;
}

/// Records of a db_dump file read as a stats site reads them: each child of the root is a
/// record, each of its children a field by tag name.
std::vector<std::map<std::string, std::string>> records(const std::string& xml, const char* root) {
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  REQUIRE(doc.child(root));
  std::vector<std::map<std::string, std::string>> out;
  for (auto rec : doc.child(root).children()) {
    auto& fields = out.emplace_back();
    for (auto f : rec.children())
      fields[f.name()] = f.text().get();
  }
  return out;
}

} // namespace

TEST_CASE_METHOD(stats_fixture, "the statistics export shows the credit the server granted",
                 "[web][stats]") {
  compute();
  auto users = ask<user_list_ptr>(project, atom::list_v, atom::user_v);
  const user_rec* demo = nullptr;
  for (const auto& u : *users)
    if (u.name == "demo")
      demo = &u;
  REQUIRE(demo != nullptr);
  REQUIRE(demo->credit.total > 0);

  auto world = ask<project_world_ptr>(project, atom::state_v);
  net::stats_counts n;
  auto files = net::stats_files(*world, node.now(), &n);
  cobble::test::temp_dir out{"stats"};
  net::write_stats(out.path() / "demo", files);
  auto dir = out.path() / "demo";
  for (const auto* name :
       {"user.gz", "user_id.gz", "team.gz", "team_id.gz", "host.gz", "host_id.gz", "tables.xml"})
    CHECK(fs::exists(dir / name));

  auto user_xml = gunzip(dir / "user.gz");
  CHECK(gunzip(dir / "user_id.gz") == user_xml);
  auto us = records(user_xml, "users");
  REQUIRE(us.size() == 1); // "idle" has no credit and is left out
  CHECK(us[0]["name"] == "demo");
  CHECK(std::stod(us[0]["total_credit"]) == Approx(demo->credit.total).epsilon(1e-6));
  CHECK(us[0]["cpid"] == net::md5_hex(demo->cross_project_id + demo->email));
  CHECK(us[0]["cpid"].size() == 32);
  CHECK(user_xml.find("example.org") == std::string::npos); // no e-mail address anywhere

  auto ts = records(gunzip(dir / "team.gz"), "teams");
  REQUIRE(ts.size() == 1);
  CHECK(ts[0]["name"] == "Crunchers & Co");
  CHECK(ts[0]["id"] == us[0]["teamid"]);
  CHECK(std::stod(ts[0]["total_credit"]) == Approx(demo->credit.total).epsilon(1e-6));

  auto host_xml = gunzip(dir / "host.gz");
  auto hs = records(host_xml, "hosts");
  REQUIRE(hs.size() == 2);
  double host_credit = 0;
  for (auto& h : hs) {
    CHECK(h["userid"] == us[0]["id"]);
    CHECK(h["p_model"] == "Ryzen <7>");
    CHECK(h["host_cpid"].size() == 32);
    host_credit += std::stod(h["total_credit"]);
  }
  CHECK(host_credit == Approx(demo->credit.total).epsilon(1e-6));
  CHECK(host_xml.find("example.org") == std::string::npos);

  std::ifstream in{dir / "tables.xml"};
  std::stringstream tables;
  tables << in.rdbuf();
  pugi::xml_document doc;
  REQUIRE(doc.load_string(tables.str().c_str()));
  auto t = doc.child("tables");
  CHECK(t.child("nusers_total").text().as_int() == 1);
  CHECK(t.child("nteams_total").text().as_int() == 1);
  CHECK(t.child("nhosts_total").text().as_int() == 2);
  CHECK(t.child("total_credit").text().as_double() == Approx(demo->credit.total).epsilon(1e-6));
  // The app's user-friendly name, as BOINC writes it.
  CHECK(std::string{t.child("applications").child("application").child_value("name")}
        == "Cobble test app");

  // A second export replaces the first whole; no staging directory is left behind (only
  // the lock writers take turns with).
  net::write_stats(dir, files);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator{out.path()})
    entries.push_back(e.path().filename().string());
  std::sort(entries.begin(), entries.end());
  CHECK(entries == std::vector<std::string>{".lock", "demo"});

  // While another writer holds the lock, cobbled's export (no waiting) is skipped at once and
  // the export there stays whole.
  {
    int held = ::open((out.path() / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(held >= 0);
    REQUIRE(::flock(held, LOCK_EX) == 0);
    CHECK_THROWS_WITH(net::write_stats(dir, files, false),
                      Catch::Contains("another export is being written"));
    ::close(held);
  }
  CHECK(gunzip(dir / "user.gz") == user_xml);
  net::write_stats(dir, files, false);

  // Offline, from the data directory's log: the same users and credit.
  stop();
  auto cli_out = out.path() / "cli";
  auto [code, text] = cobble::test::run_command({cobble::test::program("tools/cobble"),
                                                 "--data-dir", node.data_dir().string(), "stats",
                                                 "export", "--out", cli_out.string()},
                                                std::chrono::seconds(60));
  INFO(text);
  REQUIRE(code == 0);
  CHECK(text.find("project demo: 1 users, 1 teams, 2 hosts with credit") != std::string::npos);
  CHECK(gunzip(cli_out / "demo" / "user.gz") == user_xml);
  start();
}

TEST_CASE("a host's public CPID hides the client's", "[web][stats]") {
  CHECK(net::public_host_cpid("", "a@b.org").empty());
  auto cpid = net::public_host_cpid("0123456789abcdef0123456789abcdef", "a@b.org");
  CHECK(cpid == net::md5_hex("0123456789abcdef0123456789abcdef" + std::string{"a@b.org"}));
  CHECK(cpid != "0123456789abcdef0123456789abcdef");
}

TEST_CASE("cobbled's export is made at a snapshot, from its world, once a period", "[web][stats]") {
  cobble::test::temp_dir out{"stats"};
  auto opts = test::node_fixture::options(in_a_team());
  opts.reader = net::periodic_export(out.path(), {"demo"}, std::chrono::hours(24));
  REQUIRE(opts.reader.read);
  // No export yet: the first is due at once.
  auto due = opts.reader.due;
  CHECK(due <= std::chrono::steady_clock::now());
  auto exports = std::make_shared<std::vector<std::uint64_t>>();
  opts.reader.read = [exports, write = opts.reader.read](const world& w) {
    exports->push_back(w.seq);
    write(w);
  };
  stats_fixture f{std::move(opts)};
  // Due at the start: made at once from a world rebuilt at the durable seq (no snapshot
  // was due), so stats sites find files soon after a first start.
  REQUIRE(exports->size() == 1);
  CHECK(exports->front() <= f.store().last_seq());
  CHECK(fs::exists(out.path() / "demo/tables.xml"));
  CHECK(records(gunzip(out.path() / "demo/user.gz"), "users").empty()); // no credit yet

  // Work, credit and snapshots within the period: no second export.
  f.compute();
  f.ask<std::uint64_t>(f.node.handles().log, atom::snapshot_v);
  f.rpc(f.request(0, 0));
  f.ask<std::uint64_t>(f.node.handles().log, atom::snapshot_v);
  CHECK(exports->size() == 1);

  // After a restart the schedule goes on from the export on disk: the next is a day later.
  auto again = net::periodic_export(out.path(), {"demo"}, std::chrono::hours(24));
  CHECK(again.due > std::chrono::steady_clock::now() + std::chrono::hours(23));
  // A project without an export yet makes it due at once; 0 turns the export off.
  auto first_due = net::periodic_export(out.path(), {"demo", "other"}, std::chrono::hours(24)).due;
  CHECK(first_due <= std::chrono::steady_clock::now());
  CHECK_FALSE(net::periodic_export(out.path(), {"demo"}, std::chrono::seconds(0)).read);
}

TEST_CASE("a due reader reads the world a snapshot is made from, and its failures cost nothing",
          "[web][stats]") {
  auto opts = test::node_fixture::options(in_a_team());
  auto seqs = std::make_shared<std::vector<std::uint64_t>>();
  opts.reader.every = std::chrono::seconds(0); // due at every turn
  opts.reader.read = [seqs](const world& w) {
    seqs->push_back(w.seq);
    throw std::runtime_error("no space left on device");
  };
  stats_fixture f{std::move(opts)};
  f.compute();
  auto first = f.ask<std::uint64_t>(f.node.handles().log, atom::snapshot_v);
  REQUIRE_FALSE(seqs->empty());
  CHECK(seqs->back() == first); // the snapshot's own world, read before it is freed
  f.rpc(f.request(0, 0));
  auto second = f.ask<std::uint64_t>(f.node.handles().log, atom::snapshot_v);
  CHECK(second > first);
  CHECK(seqs->back() == second);
  // Every failure was logged and passed over: both snapshots were written.
  CHECK(f.node.store().snapshots().back().seq == second);
}
