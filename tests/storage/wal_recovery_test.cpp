// Tests of what opening a store does with a damaged write-ahead log (storage/event_log.cpp):
// damage before the end refuses the open, a torn last record is dropped, and a snapshot past
// the last event shows events lost at the end.

#include "../support/temp_dir.hpp"
#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/keys.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

using namespace cobble::storage;
using cobble::test::temp_dir;
namespace fs = std::filesystem;

namespace {

/// The payload of event `i`: distinct, and large enough that the log spans many WAL blocks.
std::string payload_of(std::uint64_t i) {
  return "\x01" + std::string(600, static_cast<char>('a' + i % 26)) + std::to_string(i);
}

/// Appends `n` events, one acknowledged (synced) batch each, and closes the store.
void fill(const fs::path& dir, std::uint64_t n) {
  auto st = event_store::open(dir);
  REQUIRE(st);
  for (std::uint64_t i = 1; i <= n; ++i) {
    std::vector<event_record> one(1);
    one[0].kind = 1;
    one[0].entity_kind = 2;
    one[0].entity_id = i;
    one[0].payload = payload_of(i);
    REQUIRE_FALSE((*st)->append(one));
  }
}

/// The store's write-ahead log file (the one that holds the events).
fs::path wal_of(const fs::path& dir) {
  fs::path biggest;
  std::uintmax_t size = 0;
  for (const auto& e : fs::directory_iterator{dir})
    if (e.path().extension() == ".log" && e.file_size() > size) {
      biggest = e.path();
      size = e.file_size();
    }
  REQUIRE(!biggest.empty());
  return biggest;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << bytes;
}

/// Every event of the store, checked against what fill() appended.
void check_events(event_store& st, std::uint64_t n) {
  REQUIRE(st.last_seq() == n);
  std::uint64_t seen = 0;
  auto err = st.scan(1, n, [&](const event_record& r) {
    ++seen;
    CHECK(r.payload == payload_of(r.seq));
    return true;
  });
  CHECK_FALSE(err);
  CHECK(seen == n);
}

} // namespace

TEST_CASE("damage in the middle of the write-ahead log refuses the open and says what to do",
          "[storage][event_store][wal]") {
  temp_dir dir{"wal-damage"};
  constexpr std::uint64_t n = 400;
  fill(dir.path(), n);
  auto wal = wal_of(dir.path());
  auto bytes = bytes_of(wal);
  REQUIRE(bytes.size() > 200'000); // the events are in the WAL, across many 32 KiB blocks
  // Four bytes in the middle, inside a record (a block's last 6 bytes may be padding).
  auto at = bytes.size() / 2;
  if (at % 32768 > 32768 - 16)
    at -= 64;
  for (std::size_t i = 0; i < 4; ++i)
    bytes[at + i] = static_cast<char>(~bytes[at + i]);
  write_bytes(wal, bytes);

  auto refused = event_store::open(dir.path());
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == ec::corruption);
  auto what = describe(refused.error());
  INFO(what);
  CHECK_THAT(what, Catch::Contains("is damaged"));
  CHECK_THAT(what, Catch::Contains(wal.filename().string()));
  CHECK_THAT(what, Catch::Contains("acknowledged after it would be lost"));
  CHECK_THAT(what, Catch::Contains("restore the data directory from a backup"));
  CHECK_THAT(what, Catch::Contains("--salvage-wal"));
  // Nothing was changed: the damaged log is as it was, for a backup or a salvage.
  CHECK(bytes_of(wal) == bytes);

  // The operator's explicit salvage keeps the events before the damage, and only those.
  store_options salvage;
  salvage.salvage_wal = true;
  auto salvaged = event_store::open(dir.path(), salvage);
  REQUIRE(salvaged);
  auto kept = (*salvaged)->last_seq();
  CHECK(kept > 0);
  CHECK(kept < n);
  check_events(**salvaged, kept);
}

TEST_CASE("a torn last record of the write-ahead log is dropped and the rest recovers",
          "[storage][event_store][wal]") {
  temp_dir dir{"wal-torn"};
  constexpr std::uint64_t n = 400;
  fill(dir.path(), n);
  auto wal = wal_of(dir.path());
  // A crash in the middle of writing the last record: its last 100 bytes never arrived.
  fs::resize_file(wal, fs::file_size(wal) - 100);
  auto st = event_store::open(dir.path());
  INFO((st ? std::string{} : describe(st.error())));
  REQUIRE(st);
  // Event n was being written when the crash came, so it was never acknowledged.
  check_events(**st, n - 1);
  // And the log goes on from there.
  std::vector<event_record> one(1);
  one[0].kind = 1;
  one[0].payload = payload_of(n);
  REQUIRE_FALSE((*st)->append(one));
  CHECK((*st)->last_seq() == n);
}

TEST_CASE("a snapshot past the last event shows events lost at the end",
          "[storage][event_store][wal]") {
  temp_dir dir{"wal-lost-tail"};
  fill(dir.path(), 10);
  auto st = event_store::open(dir.path());
  REQUIRE(st);
  CHECK_FALSE((*st)->check_no_lost_tail());
  REQUIRE_FALSE((*st)->write_snapshot(10, "state at 10"));
  CHECK_FALSE((*st)->check_no_lost_tail());

  SECTION("a manifest past the end") {
    // As after a recovery that stopped at damage in the WAL: the log ends before a snapshot.
    REQUIRE_FALSE((*st)->write_snapshot(14, "state at 14"));
    auto err = (*st)->check_no_lost_tail();
    REQUIRE(err);
    CHECK(err == ec::corruption);
    CHECK_THAT(describe(err), Catch::Contains("snapshot 14"));
    CHECK_THAT(describe(err), Catch::Contains("ends at event 10"));
    CHECK_THAT(describe(err), Catch::Contains("events 11..14 were lost"));
  }
  SECTION("only a snapshot file past the end (its manifest was lost with the events)") {
    auto name = snapshot_file_name(25, 0);
    {
      std::ofstream out{dir.path() / snapshot_dir_name / name};
      out << "state at 25";
    }
    auto err = (*st)->check_no_lost_tail();
    REQUIRE(err);
    CHECK_THAT(describe(err), Catch::Contains("snapshots/" + name));
    CHECK_THAT(describe(err), Catch::Contains("events 11..25 were lost"));
  }
  // The salvage drops them; the snapshot within the log stays.
  REQUIRE_FALSE((*st)->drop_snapshots_past_end());
  CHECK_FALSE((*st)->check_no_lost_tail());
  auto snaps = (*st)->snapshots();
  REQUIRE(snaps.size() == 1);
  CHECK(snaps[0].seq == 10);
  CHECK(snaps[0].where == "snapshots/" + snapshot_file_name(10, 0));
}
