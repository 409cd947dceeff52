#include "../support/temp_dir.hpp"
#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/keys.hpp"
#include "storage/snapshot_stream.hpp"

#include <catch2/catch.hpp>
#include <rocksdb/db.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <memory>

using namespace cobble::storage;
using cobble::test::temp_dir;

namespace {

event_record make_event(std::uint16_t kind, std::uint64_t entity, std::string payload) {
  event_record x;
  x.time_us = 1'700'000'000'000'000 + static_cast<std::int64_t>(entity);
  x.kind = kind;
  x.entity_kind = 2;
  x.project = 1;
  x.entity_id = entity;
  x.payload = std::move(payload);
  return x;
}

std::vector<event_record> make_batch(std::size_t n, std::uint64_t first_entity = 1) {
  std::vector<event_record> xs;
  for (std::size_t i = 0; i < n; ++i)
    xs.push_back(make_event(static_cast<std::uint16_t>(i % 5), first_entity + i,
                            std::string("\x01payload\0", 9) + std::to_string(first_entity + i)));
  return xs;
}

std::unique_ptr<event_store> open_store(const std::filesystem::path& dir, store_options opts = {}) {
  auto st = event_store::open(dir, opts);
  if (!st)
    FAIL("open failed: " << describe(st.error()));
  return std::move(*st);
}

/// The store as `cobble log` opens it beside a running server.
std::unique_ptr<event_store> open_read_only(const std::filesystem::path& dir) {
  store_options ro;
  ro.read_only = true;
  return open_store(dir, ro);
}

std::vector<event_record>
scan_all(const event_store& st, std::uint64_t from = 0, std::uint64_t to = UINT64_MAX) {
  std::vector<event_record> out;
  auto err = st.scan(from, to, [&](const event_record& x) {
    out.push_back(x);
    return true;
  });
  if (err)
    FAIL("scan failed: " << describe(err));
  return out;
}

/// Direct RocksDB access to a closed store, for damaging it on purpose.
class raw_db {
public:
  explicit raw_db(const std::filesystem::path& dir) {
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs{{default_cf_name, {}},
                                                     {events_cf_name, {}},
                                                     {snapshots_cf_name, {}}};
    rocksdb::DBOptions opts;
    rocksdb::DB* raw = nullptr;
    auto s = rocksdb::DB::Open(opts, dir.string(), cfs, &handles_, &raw);
    REQUIRE(s.ok());
    db_.reset(raw);
  }
  ~raw_db() {
    for (auto* h : handles_)
      static_cast<void>(db_->DestroyColumnFamilyHandle(h));
    static_cast<void>(db_->Close());
  }
  rocksdb::ColumnFamilyHandle* cf(std::size_t i) { return handles_[i]; }
  void put(std::size_t cf_index, const std::string& key, const std::string& value) {
    REQUIRE(db_->Put({}, cf(cf_index), key, value).ok());
  }
  void del(std::size_t cf_index, const std::string& key) {
    REQUIRE(db_->Delete({}, cf(cf_index), key).ok());
  }
  bool has(std::size_t cf_index, const std::string& key) {
    std::string value;
    return db_->Get({}, cf(cf_index), key, &value).ok();
  }

private:
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

constexpr std::size_t default_cf = 0;
constexpr std::size_t events_cf = 1;
constexpr std::size_t snapshots_cf = 2;

std::string blob_of(std::size_t n) {
  std::string blob;
  for (std::size_t i = 0; i < n; ++i)
    blob.push_back(static_cast<char>(i * 7)); // includes NULs
  return blob;
}

/// Where the store in `dir` keeps the file of snapshot `seq`, generation `gen`.
std::filesystem::path
snapshot_file(const std::filesystem::path& dir, std::uint64_t seq, std::uint64_t gen = 0) {
  return dir / snapshot_dir_name / snapshot_file_name(seq, gen);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// The names of the files in the snapshot directory of the store in `dir`, sorted.
std::vector<std::string> snapshot_dir_files(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator{dir / snapshot_dir_name})
    out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("append assigns seqs and scan returns them in order", "[storage][event_store]") {
  temp_dir dir;
  auto st = open_store(dir.path());
  CHECK(st->last_seq() == 0);
  CHECK(scan_all(*st).empty());
  auto a = make_batch(3, 1);
  REQUIRE_FALSE(st->append(a));
  CHECK(a[0].seq == 1);
  CHECK(a[2].seq == 3);
  auto b = make_batch(4, 10);
  REQUIRE_FALSE(st->append(b));
  CHECK(b[0].seq == 4);
  CHECK(st->last_seq() == 7);
  std::vector<event_record> none;
  REQUIRE_FALSE(st->append(none));
  CHECK(st->last_seq() == 7);

  auto all = scan_all(*st);
  REQUIRE(all.size() == 7);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(all[i] == a[i]);
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(all[3 + i] == b[i]);

  auto range = scan_all(*st, 3, 5);
  REQUIRE(range.size() == 3);
  CHECK(range.front().seq == 3);
  CHECK(range.back().seq == 5);
  CHECK(scan_all(*st, 7, 100).size() == 1);
  CHECK(scan_all(*st, 8, 100).empty());
  CHECK(scan_all(*st, 5, 4).empty());

  std::size_t seen = 0;
  REQUIRE_FALSE(st->scan(1, 7, [&](const event_record&) { return ++seen < 2; }));
  CHECK(seen == 2);

  auto one = st->read(4);
  REQUIRE(one);
  CHECK(*one == b[0]);
  auto missing = st->read(8);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == ec::not_found);
}

TEST_CASE("reopen keeps last_seq and contents, and numbering continues", "[storage][event_store]") {
  temp_dir dir;
  std::vector<event_record> expected;
  {
    auto st = open_store(dir.path());
    for (int round = 0; round < 3; ++round) {
      auto batch = make_batch(5, static_cast<std::uint64_t>(round) * 100);
      REQUIRE_FALSE(st->append(batch));
      expected.insert(expected.end(), batch.begin(), batch.end());
    }
  }
  {
    auto st = open_store(dir.path(), {.mode = durability::async});
    CHECK(st->last_seq() == 15);
    CHECK(scan_all(*st) == expected);
    auto batch = make_batch(2, 1000);
    REQUIRE_FALSE(st->append(batch));
    CHECK(batch[0].seq == 16);
    expected.insert(expected.end(), batch.begin(), batch.end());
  }
  auto st = open_store(dir.path());
  CHECK(st->last_seq() == 17);
  CHECK(scan_all(*st) == expected);
}

TEST_CASE("a corrupted event value makes scan and read fail naming its seq",
          "[storage][event_store]") {
  temp_dir dir;
  {
    auto st = open_store(dir.path());
    auto batch = make_batch(10);
    REQUIRE_FALSE(st->append(batch));
  }
  {
    raw_db raw{dir.path()};
    auto good = make_event(1, 6, "\x01original");
    auto value = event_value::encode(good);
    value.back() ^= 0x01; // one flipped bit in the payload
    raw.put(events_cf, event_key{6}.encode(), value);
  }
  auto st = open_store(dir.path());
  std::vector<std::uint64_t> seen;
  auto err = st->scan(1, 10, [&](const event_record& x) {
    seen.push_back(x.seq);
    return true;
  });
  REQUIRE(err);
  CHECK(err == ec::corruption);
  CHECK_THAT(describe(err), Catch::Contains("event 6: checksum mismatch"));
  CHECK(seen == std::vector<std::uint64_t>{1, 2, 3, 4, 5});
  CHECK(scan_all(*st, 1, 5).size() == 5); // the range before it is fine
  CHECK(scan_all(*st, 7, 10).size() == 4);
  auto one = st->read(6);
  REQUIRE_FALSE(one);
  CHECK(one.error() == ec::corruption);
  CHECK_THAT(describe(one.error()), Catch::Contains("event 6"));
}

TEST_CASE("a truncated event value is corruption too", "[storage][event_store]") {
  temp_dir dir;
  {
    auto st = open_store(dir.path());
    auto batch = make_batch(3);
    REQUIRE_FALSE(st->append(batch));
  }
  {
    raw_db raw{dir.path()};
    raw.put(events_cf, event_key{2}.encode(), "\x01short");
  }
  auto st = open_store(dir.path());
  auto err = st->scan(0, 3, [](const event_record&) { return true; });
  CHECK(err == ec::corruption);
  CHECK_THAT(describe(err), Catch::Contains("event 2: truncated"));
}

TEST_CASE("a gap in the sequence is corruption naming the missing seq", "[storage][event_store]") {
  temp_dir dir;
  {
    auto st = open_store(dir.path());
    auto batch = make_batch(8);
    REQUIRE_FALSE(st->append(batch));
  }
  {
    raw_db raw{dir.path()};
    raw.del(events_cf, event_key{4}.encode());
    raw.del(events_cf, event_key{5}.encode());
  }
  auto st = open_store(dir.path());
  CHECK(st->last_seq() == 8);
  auto err = st->scan(1, 8, [](const event_record&) { return true; });
  REQUIRE(err);
  CHECK(err == ec::corruption);
  CHECK_THAT(describe(err), Catch::Contains("event 4: missing"));
  err = st->scan(5, 8, [](const event_record&) { return true; });
  CHECK_THAT(describe(err), Catch::Contains("event 5: missing"));
  CHECK(scan_all(*st, 6, 8).size() == 3);
}

TEST_CASE("chunked snapshots round-trip across several chunks", "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshots = snapshot_storage::chunks;
  opts.snapshot_chunk_bytes = 7;
  auto blob = blob_of(50); // 8 chunks, the last one short
  {
    auto st = open_store(dir.path(), opts);
    auto none = st->latest_snapshot();
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
    REQUIRE_FALSE(st->write_snapshot(12, blob));
    auto back = st->read_snapshot(12);
    REQUIRE(back);
    CHECK(*back == blob);
    CHECK(st->stats().snapshots_written == 1);
    auto missing = st->read_snapshot(11);
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == ec::not_found);
  }
  {
    raw_db raw{dir.path()};
    CHECK(raw.has(snapshots_cf, snapshot_chunk_key{12, 7}.encode()));
    CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{12, 8}.encode()));
  }
  auto st = open_store(dir.path(), opts);
  auto back = st->read_snapshot(12);
  REQUIRE(back);
  CHECK(*back == blob);
  auto list = st->list_snapshots();
  REQUIRE(list);
  REQUIRE(list->size() == 1);
  CHECK((*list)[0].seq == 12);
  CHECK((*list)[0].bytes == 50);

  SECTION("an empty blob is a valid snapshot") {
    REQUIRE_FALSE(st->write_snapshot(13, ""));
    auto empty = st->read_snapshot(13);
    REQUIRE(empty);
    CHECK(empty->empty());
  }
  SECTION("rewriting a snapshot with fewer chunks leaves no stale chunk") {
    REQUIRE_FALSE(st->write_snapshot(12, "short"));
    auto again = st->read_snapshot(12);
    REQUIRE(again);
    CHECK(*again == "short");
  }
}

TEST_CASE("latest_snapshot picks the newest and prune keeps N (chunked)",
          "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshots = snapshot_storage::chunks;
  opts.snapshot_chunk_bytes = 4;
  {
    auto st = open_store(dir.path(), opts);
    for (std::uint64_t seq : {5, 300, 20, 256})
      REQUIRE_FALSE(st->write_snapshot(seq, "state at " + std::to_string(seq)));
    auto latest = st->latest_snapshot();
    REQUIRE(latest);
    REQUIRE(latest->has_value());
    CHECK((*latest)->first == 300);
    CHECK((*latest)->second == "state at 300");
    auto all = st->snapshots();
    REQUIRE(all.size() == 4);
    CHECK(all[0].seq == 5);
    CHECK(all[1].seq == 20);
    CHECK(all[2].seq == 256);
    CHECK(all[3].seq == 300);

    REQUIRE_FALSE(st->prune_snapshots(2));
    all = st->snapshots();
    REQUIRE(all.size() == 2);
    CHECK(all[0].seq == 256);
    CHECK(all[1].seq == 300);
    CHECK(st->read_snapshot(20).error() == ec::not_found);
    REQUIRE_FALSE(st->prune_snapshots(5)); // nothing to do
    CHECK(st->snapshots().size() == 2);
    latest = st->latest_snapshot();
    REQUIRE(latest);
    CHECK((*latest)->first == 300);
  }
  raw_db raw{dir.path()};
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{20, 0}.encode()));
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_manifest_key{20}.encode()));
  CHECK(raw.has(snapshots_cf, snapshot_chunk_key{256, 0}.encode()));
}

TEST_CASE("chunks left by a crash during a snapshot write are ignored and pruned",
          "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshots = snapshot_storage::chunks;
  opts.snapshot_chunk_bytes = 4;
  {
    auto st = open_store(dir.path(), opts);
    REQUIRE_FALSE(st->write_snapshot(50, "state at 50"));
  }
  {
    // A write of snapshot 100 that died before its manifest: chunks only.
    raw_db raw{dir.path()};
    raw.put(snapshots_cf, snapshot_chunk_key{100, 0}.encode(), "stat");
    raw.put(snapshots_cf, snapshot_chunk_key{100, 1}.encode(), "e at");
  }
  {
    auto st = open_store(dir.path(), opts);
    auto all = st->snapshots();
    REQUIRE(all.size() == 1);
    CHECK(all[0].seq == 50);
    auto latest = st->latest_snapshot();
    REQUIRE(latest);
    REQUIRE(latest->has_value());
    CHECK((*latest)->second == "state at 50");
    REQUIRE_FALSE(st->write_snapshot(200, "state at 200"));
    REQUIRE_FALSE(st->prune_snapshots(1));
    CHECK(st->snapshots().size() == 1);
    CHECK((*st->latest_snapshot())->second == "state at 200");
  }
  raw_db raw{dir.path()};
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{50, 0}.encode()));
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{100, 0}.encode()));
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{100, 1}.encode()));
  CHECK(raw.has(snapshots_cf, snapshot_chunk_key{200, 0}.encode()));
}

TEST_CASE("a snapshot with a missing or damaged chunk is corrupt", "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshots = snapshot_storage::chunks;
  opts.snapshot_chunk_bytes = 8;
  {
    auto st = open_store(dir.path(), opts);
    REQUIRE_FALSE(st->write_snapshot(40, blob_of(30)));
    REQUIRE_FALSE(st->write_snapshot(41, blob_of(30)));
  }
  {
    raw_db raw{dir.path()};
    raw.del(snapshots_cf, snapshot_chunk_key{41, 1}.encode());
    raw.put(snapshots_cf, snapshot_chunk_key{40, 2}.encode(), std::string(8, 'x'));
  }
  auto st = open_store(dir.path(), opts);
  auto latest = st->latest_snapshot();
  REQUIRE_FALSE(latest);
  CHECK(latest.error() == ec::corruption);
  CHECK_THAT(describe(latest.error()), Catch::Contains("snapshot 41: chunk 1 of 4 missing"));
  auto older = st->read_snapshot(40);
  REQUIRE_FALSE(older);
  CHECK(older.error() == ec::corruption);
  CHECK_THAT(describe(older.error()), Catch::Contains("snapshot 40: checksum mismatch"));
}

namespace {

/// Reads snapshot `seq` through a stream, in pieces of `piece` bytes as a decoder would (each
/// read waits for its bytes); the blob, or the error finish() reports.
caf::expected<std::string>
read_streamed(const event_store& st, std::uint64_t seq, std::size_t piece) {
  auto stream = st.stream_snapshot(seq);
  if (!stream)
    return std::move(stream.error());
  auto r = (*stream)->make_reader();
  std::string out;
  while (r.remaining() > 0) {
    auto bytes = r.get_raw(std::min(piece, r.remaining()));
    if (r.failed())
      break;
    out.append(bytes.data(), bytes.size());
  }
  if (auto err = (*stream)->finish())
    return err;
  if (r.failed())
    return make_error(ec::unspecified, "the reader ran out before the end");
  return out;
}

} // namespace

TEST_CASE("a streamed chunked snapshot reads the same blob as read_snapshot",
          "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshots = snapshot_storage::chunks;
  opts.snapshot_chunk_bytes = 7;
  auto st = open_store(dir.path(), opts);
  auto blob = blob_of(5000); // 715 chunks
  REQUIRE_FALSE(st->write_snapshot(12, blob));
  REQUIRE_FALSE(st->write_snapshot(13, ""));
  for (std::size_t piece : {1u, 3u, 7u, 64u, 5000u}) {
    auto back = read_streamed(*st, 12, piece);
    REQUIRE(back);
    CHECK(*back == blob);
  }
  auto stream = st->stream_snapshot(12);
  REQUIRE(stream);
  CHECK((*stream)->seq() == 12);
  CHECK((*stream)->size() == 5000);
  CHECK((*stream)->wait_for(5000) == 5000);
  CHECK_FALSE((*stream)->finish());
  auto empty = read_streamed(*st, 13, 1);
  REQUIRE(empty);
  CHECK(empty->empty());
  auto missing = st->stream_snapshot(11);
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == ec::not_found);
}

TEST_CASE("a streamed snapshot reports a missing or damaged chunk like read_snapshot",
          "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshots = snapshot_storage::chunks;
  opts.snapshot_chunk_bytes = 8;
  {
    auto st = open_store(dir.path(), opts);
    REQUIRE_FALSE(st->write_snapshot(40, blob_of(30)));
    REQUIRE_FALSE(st->write_snapshot(41, blob_of(30)));
    REQUIRE_FALSE(st->write_snapshot(42, blob_of(30)));
  }
  {
    raw_db raw{dir.path()};
    raw.del(snapshots_cf, snapshot_chunk_key{41, 1}.encode());
    raw.put(snapshots_cf, snapshot_chunk_key{40, 2}.encode(), std::string(8, 'x'));
    raw.put(snapshots_cf, snapshot_chunk_key{42, 4}.encode(), "extra");
  }
  auto st = open_store(dir.path(), opts);
  auto damaged = read_streamed(*st, 40, 3);
  REQUIRE_FALSE(damaged);
  CHECK(damaged.error() == ec::corruption);
  CHECK_THAT(describe(damaged.error()), Catch::Contains("snapshot 40: checksum mismatch"));
  auto gap = read_streamed(*st, 41, 3);
  REQUIRE_FALSE(gap);
  CHECK(gap.error() == ec::corruption);
  CHECK_THAT(describe(gap.error()), Catch::Contains("snapshot 41: chunk 1 of 4 missing"));
  auto extra = read_streamed(*st, 42, 3);
  REQUIRE_FALSE(extra);
  CHECK(extra.error() == ec::corruption);
  CHECK_THAT(describe(extra.error()), Catch::Contains("snapshot 42: unexpected chunk 4"));
  // A reader meeting the missing chunk stops there: it never reads bytes that are not there.
  auto stream = st->stream_snapshot(41);
  REQUIRE(stream);
  auto r = (*stream)->make_reader();
  CHECK(r.get_raw(8).size() == 8);
  CHECK(r.get_raw(1).empty());
  CHECK(r.failed());
  CHECK((*stream)->finish() == ec::corruption);
}

TEST_CASE("a snapshot stream dropped before the end stops its reading", "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshot_chunk_bytes = 16;
  opts.snapshots = GENERATE(snapshot_storage::chunks, snapshot_storage::file);
  auto st = open_store(dir.path(), opts);
  REQUIRE_FALSE(st->write_snapshot(5, blob_of(100000)));
  for (int i = 0; i < 20; ++i) {
    auto stream = st->stream_snapshot(5);
    REQUIRE(stream);
    CHECK((*stream)->wait_for(10) >= 10);
  } // each destructor stops and joins its thread; the store closes after them
  auto back = read_streamed(*st, 5, 1000);
  REQUIRE(back);
  CHECK(*back == blob_of(100000));
}

TEST_CASE("read-only open sees the data while the writer is open", "[storage][event_store]") {
  temp_dir dir;
  auto writer = open_store(dir.path());
  auto batch = make_batch(4);
  REQUIRE_FALSE(writer->append(batch));
  REQUIRE_FALSE(writer->write_snapshot(4, "snap"));

  auto reader = open_read_only(dir.path());
  CHECK(reader->last_seq() == 4);
  CHECK(scan_all(*reader) == batch);
  auto latest = reader->latest_snapshot();
  REQUIRE(latest);
  REQUIRE(latest->has_value());
  CHECK((*latest)->second == "snap");

  auto more = make_batch(2, 50);
  CHECK(reader->append(more) == ec::invalid_argument);
  CHECK(reader->write_snapshot(9, "x") == ec::invalid_argument);
  CHECK(reader->prune_snapshots(0) == ec::invalid_argument);

  REQUIRE_FALSE(writer->append(more));
  CHECK(reader->last_seq() == 4); // a consistent view as of open
  REQUIRE_FALSE(reader->refresh());
  CHECK(reader->last_seq() == 6);
  CHECK(scan_all(*reader, 5).size() == 2);
}

TEST_CASE("read-only open works after the writer closed, and fails on a missing store",
          "[storage][event_store]") {
  temp_dir dir;
  {
    auto writer = open_store(dir.path());
    auto batch = make_batch(3);
    REQUIRE_FALSE(writer->append(batch));
  }
  auto reader = open_read_only(dir.path());
  CHECK(scan_all(*reader).size() == 3);

  temp_dir parent;
  auto nowhere = parent.path() / "absent";
  store_options ro;
  ro.read_only = true;
  auto none = event_store::open(nowhere, ro);
  REQUIRE_FALSE(none);
  CHECK_THAT(describe(none.error()), Catch::Contains(nowhere.string()));
  CHECK_FALSE(std::filesystem::exists(nowhere));
}

TEST_CASE("stats count one batch and one sync per append in sync mode", "[storage][event_store]") {
  temp_dir dir;
  auto st = open_store(dir.path());
  for (int i = 0; i < 3; ++i) {
    auto batch = make_batch(4);
    REQUIRE_FALSE(st->append(batch));
  }
  auto s = st->stats();
  CHECK(s.batches == 3);
  CHECK(s.syncs == 3);
  CHECK(s.events_appended == 12);
  CHECK(s.bytes_appended > 12 * (event_key::size + event_value::header_size));
  CHECK(s.snapshots_written == 0);
  REQUIRE_FALSE(st->write_snapshot(12, "s"));
  CHECK(st->stats().snapshots_written == 1);
  CHECK(st->stats().syncs == 3); // snapshots are not appends
}

TEST_CASE("async mode appends without syncing", "[storage][event_store]") {
  temp_dir dir;
  auto st = open_store(dir.path(), {.mode = durability::async});
  auto batch = make_batch(2);
  REQUIRE_FALSE(st->append(batch));
  auto s = st->stats();
  CHECK(s.batches == 1);
  CHECK(s.syncs == 0);
  CHECK(s.events_appended == 2);
}

TEST_CASE("an unknown format version is refused", "[storage][event_store]") {
  temp_dir dir;
  {
    auto st = open_store(dir.path());
    CHECK(st->path() == dir.path());
  }
  {
    raw_db raw{dir.path()};
    CHECK(raw.has(default_cf, format_version_key::encode()));
    raw.put(default_cf, format_version_key::encode(), format_version_value::encode(99));
  }
  auto st = event_store::open(dir.path());
  REQUIRE_FALSE(st);
  CHECK(st.error() == ec::unsupported_format);
  CHECK_THAT(describe(st.error()), Catch::Contains("format version 99"));
}

TEST_CASE("open refuses a zero chunk size", "[storage][event_store]") {
  temp_dir dir;
  store_options opts;
  opts.snapshot_chunk_bytes = 0;
  auto st = event_store::open(dir.path(), opts);
  REQUIRE_FALSE(st);
  CHECK(st.error() == ec::invalid_argument);
}

// -- file snapshots -------------------------------------------------------------

TEST_CASE("file snapshots round-trip through a plain file", "[storage][event_store][snapfile]") {
  temp_dir dir;
  auto blob = blob_of(100000);
  {
    auto st = open_store(dir.path());
    REQUIRE_FALSE(st->write_snapshot(12, blob));
    REQUIRE_FALSE(st->write_snapshot(13, ""));
    auto back = st->read_snapshot(12);
    REQUIRE(back);
    CHECK(*back == blob);
    for (std::size_t piece : {1u, 7u, 4096u, 100000u}) {
      auto streamed = read_streamed(*st, 12, piece);
      REQUIRE(streamed);
      CHECK(*streamed == blob);
    }
    auto stream = st->stream_snapshot(12);
    REQUIRE(stream);
    CHECK((*stream)->size() == 100000);
    CHECK((*stream)->wait_for(100000) == 100000); // all there at once
    CHECK_FALSE((*stream)->finish());
    auto empty = read_streamed(*st, 13, 1);
    REQUIRE(empty);
    CHECK(empty->empty());
    CHECK(st->stats().snapshots_written == 2);
  }
  // The blob as it is, in a file of its own; nothing of it in RocksDB.
  CHECK(read_file(snapshot_file(dir.path(), 12)) == blob);
  CHECK(snapshot_dir_files(dir.path())
        == std::vector<std::string>{snapshot_file_name(12, 0), snapshot_file_name(13, 0)});
  {
    raw_db raw{dir.path()};
    CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{12, 0}.encode()));
    CHECK(raw.has(snapshots_cf, snapshot_manifest_key{12}.encode()));
  }
  auto st = open_store(dir.path());
  auto list = st->list_snapshots();
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].seq == 12);
  CHECK((*list)[0].bytes == 100000);
  CHECK((*list)[0].storage == snapshot_storage::file);
  auto latest = st->latest_snapshot();
  REQUIRE(latest);
  REQUIRE(latest->has_value());
  CHECK((*latest)->first == 13);
  CHECK(*st->read_snapshot(12) == blob);
  CHECK(st->read_snapshot(11).error() == ec::not_found);
  CHECK(st->stream_snapshot(11).error() == ec::not_found);
}

TEST_CASE("a snapshot file without a manifest is no snapshot and is removed",
          "[storage][event_store][snapfile]") {
  temp_dir dir;
  {
    auto st = open_store(dir.path());
    REQUIRE_FALSE(st->write_snapshot(50, "state at 50"));
  }
  // A write of snapshot 100 that died after its file was renamed into place but before the
  // manifest, and one of 120 that died before the rename.
  write_file(snapshot_file(dir.path(), 100), "state at 100");
  auto tmp = snapshot_file(dir.path(), 120);
  tmp += ".tmp";
  write_file(tmp, "state at");
  write_file(dir.path() / snapshot_dir_name / "notes.txt", "not ours"); // left alone
  {
    auto st = open_store(dir.path());
    auto all = st->snapshots();
    REQUIRE(all.size() == 1);
    CHECK(all[0].seq == 50);
    CHECK((*st->latest_snapshot())->second == "state at 50");
    CHECK(st->read_snapshot(100).error() == ec::not_found);
    // Removed at open.
    CHECK(snapshot_dir_files(dir.path())
          == std::vector<std::string>{snapshot_file_name(50, 0), "notes.txt"});
    // One appearing later (as if left by a write in another life) goes at the next prune.
    write_file(snapshot_file(dir.path(), 100), "state at 100");
    REQUIRE_FALSE(st->prune_snapshots(5));
    CHECK(snapshot_dir_files(dir.path())
          == std::vector<std::string>{snapshot_file_name(50, 0), "notes.txt"});
    CHECK(st->snapshots().size() == 1);
  }
  // A read-only store removes nothing.
  write_file(snapshot_file(dir.path(), 100), "state at 100");
  auto reader = open_read_only(dir.path());
  CHECK(reader->snapshots().size() == 1);
  CHECK(std::filesystem::exists(snapshot_file(dir.path(), 100)));
}

TEST_CASE("a damaged, truncated or missing snapshot file is an error naming the snapshot",
          "[storage][event_store][snapfile]") {
  temp_dir dir;
  auto blob = blob_of(30000);
  {
    auto st = open_store(dir.path());
    for (std::uint64_t seq : {40, 41, 42, 43})
      REQUIRE_FALSE(st->write_snapshot(seq, blob));
  }
  {
    auto damaged = blob;
    damaged[12345] = static_cast<char>(damaged[12345] ^ 0x01);
    write_file(snapshot_file(dir.path(), 40), damaged);
    write_file(snapshot_file(dir.path(), 41), blob.substr(0, 20000));
    std::filesystem::remove(snapshot_file(dir.path(), 42));
    write_file(snapshot_file(dir.path(), 43), blob + "x");
  }
  auto st = open_store(dir.path());
  CHECK(st->snapshots().size() == 4); // listing does not read them

  // One damaged byte: the checksum, from read_snapshot and from the stream's finish().
  auto bad = st->read_snapshot(40);
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == ec::corruption);
  CHECK_THAT(describe(bad.error()), Catch::Contains("snapshot 40: checksum mismatch"));
  auto stream = st->stream_snapshot(40);
  REQUIRE(stream);
  auto r = (*stream)->make_reader();
  CHECK(r.get_raw(30000).size() == 30000); // the decoder reads it all; it is not trusted yet
  auto err = (*stream)->finish();
  CHECK(err == ec::corruption);
  CHECK_THAT(describe(err), Catch::Contains("snapshot 40: checksum mismatch"));

  // Shorter than the manifest says: reported before anything is mapped (no SIGBUS).
  auto name41 = std::string{snapshot_dir_name} + "/" + snapshot_file_name(41, 0);
  for (auto result : {st->read_snapshot(41), read_streamed(*st, 41, 100)}) {
    REQUIRE_FALSE(result);
    CHECK(result.error() == ec::corruption);
    CHECK_THAT(describe(result.error()),
               Catch::Contains("snapshot 41: file " + name41
                               + " has size 20000 but the manifest says 30000"));
  }
  // Missing.
  for (auto result : {st->read_snapshot(42), read_streamed(*st, 42, 100)}) {
    REQUIRE_FALSE(result);
    CHECK(result.error() == ec::corruption);
    CHECK_THAT(describe(result.error()),
               Catch::Contains("snapshot 42: file " + std::string{snapshot_dir_name} + "/"
                               + snapshot_file_name(42, 0) + " missing"));
  }
  // Longer than the manifest says.
  auto longer = read_streamed(*st, 43, 100);
  REQUIRE_FALSE(longer);
  CHECK_THAT(describe(longer.error()),
             Catch::Contains("has size 30001 but the manifest says 30000"));
  auto latest = st->latest_snapshot();
  REQUIRE_FALSE(latest);
  CHECK_THAT(describe(latest.error()), Catch::Contains("snapshot 43"));
}

TEST_CASE("a chunked snapshot of an older store still reads, and a file replaces it",
          "[storage][event_store][snapfile]") {
  temp_dir dir;
  auto blob = blob_of(5000);
  {
    store_options chunked;
    chunked.snapshots = snapshot_storage::chunks;
    chunked.snapshot_chunk_bytes = 64;
    auto st = open_store(dir.path(), chunked);
    REQUIRE_FALSE(st->write_snapshot(7, blob));
    REQUIRE_FALSE(st->write_snapshot(9, "nine"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / snapshot_dir_name));
  auto st = open_store(dir.path()); // writes files from now on
  auto list = st->list_snapshots();
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].storage == snapshot_storage::chunks);
  CHECK(*st->read_snapshot(7) == blob);
  auto streamed = read_streamed(*st, 7, 100);
  REQUIRE(streamed);
  CHECK(*streamed == blob);
  CHECK((*st->latest_snapshot())->second == "nine");
  REQUIRE_FALSE(st->write_snapshot(11, "eleven"));
  list = st->list_snapshots();
  REQUIRE(list->size() == 3);
  CHECK((*list)[2].storage == snapshot_storage::file);

  // Rewriting snapshot 7 as a file: the manifest switches over, its chunks go with it.
  REQUIRE_FALSE(st->write_snapshot(7, "seven"));
  CHECK(*st->read_snapshot(7) == "seven");
  CHECK(st->list_snapshots()->front().storage == snapshot_storage::file);
  // Pruning handles both kinds.
  REQUIRE_FALSE(st->prune_snapshots(1));
  CHECK(st->snapshots().size() == 1);
  CHECK((*st->latest_snapshot())->second == "eleven");
  CHECK(snapshot_dir_files(dir.path()) == std::vector<std::string>{snapshot_file_name(11, 0)});
  st.reset();
  raw_db raw{dir.path()};
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{7, 0}.encode()));
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_chunk_key{9, 0}.encode()));
  CHECK_FALSE(raw.has(snapshots_cf, snapshot_manifest_key{7}.encode()));
}

TEST_CASE("rewriting a file snapshot at the same seq replaces it safely",
          "[storage][event_store][snapfile]") {
  temp_dir dir;
  auto st = open_store(dir.path());
  REQUIRE_FALSE(st->write_snapshot(30, blob_of(1000)));
  REQUIRE_FALSE(st->write_snapshot(30, "shorter"));
  CHECK(*st->read_snapshot(30) == "shorter");
  CHECK(*read_streamed(*st, 30, 3) == "shorter");
  // A new file, the old one removed once the new manifest was there.
  CHECK(snapshot_dir_files(dir.path()) == std::vector<std::string>{snapshot_file_name(30, 1)});
  REQUIRE(st->snapshots().size() == 1);
  CHECK(st->snapshots()[0].bytes == 7);

  SECTION("a crash before the new manifest leaves the old snapshot whole") {
    // What a crash between the new file and its manifest leaves: the next generation's file.
    write_file(snapshot_file(dir.path(), 30, 2), "newer, never committed");
    st.reset();
    st = open_store(dir.path());
    CHECK(*st->read_snapshot(30) == "shorter");
    CHECK(snapshot_dir_files(dir.path()) == std::vector<std::string>{snapshot_file_name(30, 1)});
  }
  SECTION("back to chunks") {
    st.reset();
    store_options chunked;
    chunked.snapshots = snapshot_storage::chunks;
    st = open_store(dir.path(), chunked);
    REQUIRE_FALSE(st->write_snapshot(30, "chunked again"));
    CHECK(*st->read_snapshot(30) == "chunked again");
    CHECK(st->snapshots()[0].storage == snapshot_storage::chunks);
    CHECK(snapshot_dir_files(dir.path()).empty());
  }
}

TEST_CASE("prune removes snapshot files after their manifests",
          "[storage][event_store][snapfile]") {
  temp_dir dir;
  auto st = open_store(dir.path());
  for (std::uint64_t seq : {5, 300, 20, 256})
    REQUIRE_FALSE(st->write_snapshot(seq, "state at " + std::to_string(seq)));
  CHECK(snapshot_dir_files(dir.path()).size() == 4);
  REQUIRE_FALSE(st->prune_snapshots(2));
  auto all = st->snapshots();
  REQUIRE(all.size() == 2);
  CHECK(all[0].seq == 256);
  CHECK(all[1].seq == 300);
  CHECK(snapshot_dir_files(dir.path())
        == std::vector<std::string>{snapshot_file_name(256, 0), snapshot_file_name(300, 0)});
  CHECK(st->read_snapshot(20).error() == ec::not_found);
  REQUIRE_FALSE(st->prune_snapshots(0));
  CHECK(st->snapshots().empty());
  CHECK(snapshot_dir_files(dir.path()).empty());
}

TEST_CASE("a read-only store keeps reading the snapshot files of its view",
          "[storage][event_store][snapfile]") {
  temp_dir dir;
  auto writer = open_store(dir.path());
  auto batch = make_batch(4);
  REQUIRE_FALSE(writer->append(batch));
  REQUIRE_FALSE(writer->write_snapshot(4, "state at 4"));
  auto reader = open_read_only(dir.path());
  // The server moves on: a newer snapshot, and the one the reader sees pruned.
  REQUIRE_FALSE(writer->write_snapshot(8, "state at 8"));
  REQUIRE_FALSE(writer->prune_snapshots(1));
  CHECK_FALSE(std::filesystem::exists(snapshot_file(dir.path(), 4)));
  CHECK(*reader->read_snapshot(4) == "state at 4");
  CHECK(*read_streamed(*reader, 4, 2) == "state at 4");
  CHECK((*reader->latest_snapshot())->first == 4);
  REQUIRE_FALSE(reader->refresh());
  CHECK(reader->read_snapshot(4).error() == ec::not_found);
  CHECK((*reader->latest_snapshot())->second == "state at 8");
}
