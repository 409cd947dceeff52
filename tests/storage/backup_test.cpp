/// Tests of storage/checkpoint.cpp and storage/backup: a consistent copy of a live event log,
/// and a backup of a whole data directory that cobbled can start from.

#include "../support/temp_dir.hpp"
#include "storage/backup.hpp"
#include "storage/error.hpp"
#include "storage/event_store.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <string>

#include <sys/stat.h>

using namespace cobble::storage;
using cobble::test::temp_dir;
namespace fs = std::filesystem;

namespace {

std::vector<event_record> batch(std::size_t n, std::uint64_t first = 1) {
  std::vector<event_record> xs;
  for (std::size_t i = 0; i < n; ++i) {
    event_record x;
    x.time_us = 1'700'000'000'000'000;
    x.kind = 1;
    x.entity_kind = 2;
    x.project = 1;
    x.entity_id = first + i;
    x.payload = "event " + std::to_string(first + i);
    xs.push_back(std::move(x));
  }
  return xs;
}

std::unique_ptr<event_store> open_store(const fs::path& dir, bool create = true) {
  store_options o;
  o.create_if_missing = create;
  auto st = event_store::open(dir, o);
  if (!st)
    FAIL("open failed: " << describe(st.error()));
  return std::move(*st);
}

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

std::string read(const fs::path& file) {
  std::ifstream in{file};
  return {std::istreambuf_iterator<char>{in}, {}};
}

ino_t inode(const fs::path& file) {
  struct stat st {};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  return st.st_ino;
}

} // namespace

TEST_CASE("a checkpoint holds the log and its snapshots as they were", "[storage][backup]") {
  temp_dir dir;
  auto st = open_store(dir.path() / "log");
  auto first = batch(100);
  REQUIRE_FALSE(st->append(first));
  REQUIRE_FALSE(st->write_snapshot(60, "the state after 60"));
  REQUIRE_FALSE(st->write_snapshot(100, "the state after 100"));
  REQUIRE_FALSE(st->checkpoint(dir.path() / "copy"));
  // The live store goes on; the copy does not see it.
  auto later = batch(5, 101);
  REQUIRE_FALSE(st->append(later));
  REQUIRE_FALSE(st->prune_snapshots(1));

  auto copy = open_store(dir.path() / "copy", false);
  CHECK(copy->last_seq() == 100);
  auto last = copy->read(100);
  REQUIRE(last);
  CHECK(last->payload == "event 100");
  CHECK(copy->snapshots().size() == 2);
  auto snap = copy->read_snapshot(60);
  REQUIRE(snap);
  CHECK(*snap == "the state after 60"); // pruned from the live store after the copy
  CHECK_FALSE(copy->check_no_lost_tail());
  CHECK(st->last_seq() == 105);

  // Into a directory that exists: refused, and it is left alone.
  fs::create_directories(dir.path() / "taken");
  write(dir.path() / "taken" / "mine", "keep");
  auto taken = st->checkpoint(dir.path() / "taken");
  REQUIRE(taken);
  CHECK(describe(taken).find("exists already") != std::string::npos);
  CHECK(read(dir.path() / "taken" / "mine") == "keep");
}

TEST_CASE("a backup holds the data directory and starts like it", "[storage][backup]") {
  temp_dir dir;
  auto data = dir.path() / "data";
  auto st = open_store(data / "log");
  auto events = batch(10);
  REQUIRE_FALSE(st->append(events));
  write(data / "admin_token", "secret");
  write(data / "admin_url", "http://127.0.0.1:1/api/");
  write(data / "keys" / "demo" / "private_key", "key");
  write(data / "projects" / "demo" / "download" / "in_abc", "input");
  write(data / "projects" / "demo" / "upload" / "wu_1_0_0", "output");
  write(data / "stats" / "demo" / "user.gz", "export");

  auto made = back_up(*st, data, dir.path() / "backup");
  REQUIRE(made);
  CHECK(made->last_seq == 10);
  CHECK(made->files == 4);
  CHECK(made->linked == 1);
  auto backup = dir.path() / "backup";
  CHECK(read(backup / "admin_token") == "secret");
  CHECK(read(backup / "keys" / "demo" / "private_key") == "key");
  CHECK(read(backup / "projects" / "demo" / "upload" / "wu_1_0_0") == "output");
  // Inputs never change once stored: linked, not copied. Outputs are copied.
  CHECK(inode(backup / "projects" / "demo" / "download" / "in_abc")
        == inode(data / "projects" / "demo" / "download" / "in_abc"));
  CHECK(inode(backup / "projects" / "demo" / "upload" / "wu_1_0_0")
        != inode(data / "projects" / "demo" / "upload" / "wu_1_0_0"));
  // Written again by the server: left out.
  CHECK_FALSE(fs::exists(backup / "admin_url"));
  CHECK_FALSE(fs::exists(backup / "stats"));
  CHECK_FALSE(fs::exists(dir.path() / "backup.partial"));
  CHECK(open_store(backup / "log", false)->last_seq() == 10);

  // A second backup into the same directory, or one inside the data directory: refused,
  // nothing written.
  auto again = back_up(*st, data, backup);
  REQUIRE_FALSE(again);
  CHECK(describe(again.error()).find("exists already") != std::string::npos);
  auto within = back_up(*st, data, data / "backups" / "today");
  REQUIRE_FALSE(within);
  CHECK(describe(within.error()).find("inside the data directory") != std::string::npos);
  CHECK_FALSE(fs::exists(data / "backups"));
  auto nowhere = back_up(*st, data, dir.path() / "no" / "such" / "parent");
  REQUIRE_FALSE(nowhere);
  CHECK(describe(nowhere.error()).find("is no directory") != std::string::npos);
}
