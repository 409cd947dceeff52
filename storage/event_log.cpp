#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/event_store_impl.hpp"
#include "storage/keys.hpp"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <mutex>
#include <random>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace fs = std::filesystem;

namespace cobble::storage {

// -- errors -------------------------------------------------------------------

namespace {

/// Maps a RocksDB status onto our codes.
ec code_of(const rocksdb::Status& s) {
  if (s.IsNotFound())
    return ec::not_found;
  if (s.IsCorruption())
    return ec::corruption;
  if (s.IsInvalidArgument() || s.IsNotSupported())
    return ec::invalid_argument;
  if (s.IsIOError() || s.IsNoSpace() || s.IsIOFenced() || s.IsPathNotFound())
    return ec::io_error;
  return ec::unspecified;
}

} // namespace

namespace detail {

caf::error from_status(const rocksdb::Status& s, std::string_view operation, const fs::path& dir) {
  std::string what{operation};
  what += " in ";
  what += dir.string();
  what += ": ";
  what += s.ToString();
  return make_error(code_of(s), std::move(what));
}

caf::error fail(ec code, const std::string& subject, std::string_view detail, const fs::path& dir) {
  std::string what = subject;
  what += ": ";
  what += detail;
  what += " (in ";
  what += dir.string();
  what += ')';
  return make_error(code, std::move(what));
}

std::string event_name(std::uint64_t seq) {
  return "event " + std::to_string(seq);
}

std::string snapshot_name(std::uint64_t seq) {
  return "snapshot " + std::to_string(seq);
}

caf::error fail(const caf::error& cause, const std::string& subject, const fs::path& dir) {
  return fail(static_cast<ec>(cause.code()), subject, context_of(cause), dir);
}

} // namespace detail

using namespace detail;

namespace {

/// The read-only instance writes no info log next to the server's.
class discard_logger : public rocksdb::Logger {
public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {
    // nop
  }
  void Logv(const rocksdb::InfoLogLevel, const char*, va_list) override {
    // nop
  }
};

/// The writable instance's info log: warnings and errors to standard error (the server's own
/// log), the rest dropped. Not RocksDB's LOG file in the store directory: on a full disk a
/// failed write to it leaves its writer in error, and the next message (the one reporting the
/// failed append) trips an assertion in RocksDB 7.8 (`AssertFalseAndGetStatusForPrevError`,
/// SIGABRT with Debian's build) before the append's status ever reaches the caller, whose
/// fail-stop (exit 70) then never runs.
class stderr_logger : public rocksdb::Logger {
public:
  stderr_logger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {
    // nop
  }
  void Logv(const char*, va_list) override {
    // nop: messages without a level are informational
  }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < rocksdb::InfoLogLevel::WARN_LEVEL)
      return;
    std::array<char, 1024> line{};
    constexpr std::string_view prefix = "rocksdb: ";
    std::copy(prefix.begin(), prefix.end(), line.begin());
    auto room = line.size() - prefix.size() - 1;
    auto n = std::vsnprintf(line.data() + prefix.size(), room, format, ap);
    if (n < 0)
      return;
    auto len = prefix.size() + std::min<std::size_t>(static_cast<std::size_t>(n), room - 1);
    // A checkpoint (event_store::checkpoint) disables file deletions twice in RocksDB 7.8
    // (CreateCheckpoint, then GetLiveFilesStorageInfo within it) and warns of its own nesting
    // ("File Deletions Disabled, but already disabled"): no trouble, and not the operator's.
    if (std::string_view{line.data(), len}.find("File Deletions") != std::string_view::npos)
      return;
    line[len++] = '\n';
    // Best effort, like any log line: nothing to do if standard error is gone.
    static_cast<void>(::write(STDERR_FILENO, line.data(), len));
  }
};

/// The write-ahead log files of the store in `dir`, by name, for the message of a damaged log.
std::string wal_files(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code err;
  for (fs::directory_iterator i{dir, err}, end; !err && i != end; i.increment(err))
    if (i->path().extension() == ".log")
      names.push_back(i->path().filename().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// The refusal of a store RocksDB found damaged at open: what, where, and what to do.
caf::error damaged_log(const rocksdb::Status& s, const fs::path& dir, bool read_only) {
  std::string what = "the event log in " + dir.string() + " is damaged (RocksDB: " + s.ToString()
                     + "; write-ahead log files: " + wal_files(dir) + "). ";
  if (read_only) {
    what += "Events after the damage cannot be read.";
    return make_error(ec::corruption, std::move(what));
  }
  what += "Damage before the end of the write-ahead log means that events acknowledged after "
          "it would be lost, so nothing was opened or changed. To recover: restore the data "
          "directory from a backup (copy it aside first); or, accepting the loss of every "
          "event after the damage, start once with --salvage-wal and then run `cobble log "
          "verify`.";
  return make_error(ec::corruption, std::move(what));
}

/// A fresh path for the secondary instance's private files; it is never created as long as
/// the instance has its own logger, and removed on close in case RocksDB created it anyway.
fs::path secondary_path() {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device rd;
  auto name = "cobble-secondary-" + std::to_string(::getpid()) + "-"
              + std::to_string(counter.fetch_add(1)) + "-" + std::to_string(rd());
  return fs::temp_directory_path() / name;
}

} // namespace

// -- impl ---------------------------------------------------------------------

event_store::impl::~impl() {
  if (!db)
    return;
  // In async mode the last appends may sit in the OS page cache only: push them to disk now.
  // Close() errors cannot be reported from a destructor; every acknowledged write is already
  // in the WAL, so nothing the caller relied on depends on them.
  if (!opts.read_only && opts.mode == durability::async)
    static_cast<void>(db->SyncWAL());
  snapshots_cf.reset();
  events_cf.reset();
  default_cf.reset();
  static_cast<void>(db->Close());
  db.reset();
  if (!secondary_dir.empty()) {
    std::error_code ignored;
    fs::remove_all(secondary_dir, ignored);
  }
}

caf::error event_store::impl::refuse_if_read_only(std::string_view operation) const {
  if (!opts.read_only)
    return {};
  return fail(ec::invalid_argument, std::string{operation}, "store opened read-only", dir);
}

caf::error event_store::impl::load_last_seq() {
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator({}, events_cf.get())};
  it->SeekToLast();
  if (!it->status().ok())
    return from_status(it->status(), "find last event", dir);
  if (!it->Valid()) {
    last_seq.store(0);
    return {};
  }
  auto key = event_key::decode(as_view(it->key()));
  if (!key)
    return fail(ec::corruption, "events", "malformed key at the end of the log", dir);
  last_seq.store(key->seq);
  return {};
}

caf::expected<bool> event_store::impl::empty() const {
  for (auto* cf : {events_cf.get(), snapshots_cf.get()}) {
    std::unique_ptr<rocksdb::Iterator> it{db->NewIterator({}, cf)};
    it->SeekToFirst();
    if (!it->status().ok())
      return from_status(it->status(), "check for data", dir);
    if (it->Valid())
      return false;
  }
  return true;
}

caf::error event_store::impl::check_format() {
  std::string value;
  auto s = db->Get({}, default_cf.get(), format_version_key::encode(), &value);
  if (s.ok()) {
    auto version = format_version_value::decode(value);
    if (!version)
      return fail(ec::corruption, "format version", "malformed value", dir);
    if (*version != current_format_version)
      return fail(ec::unsupported_format, "format version " + std::to_string(*version),
                  "this build reads version " + std::to_string(current_format_version), dir);
    return {};
  }
  if (!s.IsNotFound())
    return from_status(s, "read format version", dir);
  auto is_empty = empty();
  if (!is_empty)
    return std::move(is_empty.error());
  if (!*is_empty)
    return fail(ec::unsupported_format, "format version", "missing in a non-empty store", dir);
  if (opts.read_only)
    return {};
  rocksdb::WriteOptions wo;
  wo.sync = true;
  s = db->Put(wo, default_cf.get(), format_version_key::encode(),
              format_version_value::encode(current_format_version));
  if (!s.ok())
    return from_status(s, "write format version", dir);
  return {};
}

// -- construction -------------------------------------------------------------

event_store::event_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {
  // nop
}

event_store::~event_store() = default;

caf::expected<std::unique_ptr<event_store>>
event_store::open(const fs::path& dir, store_options opts) {
  if (opts.snapshot_chunk_bytes == 0)
    return fail(ec::invalid_argument, "open", "snapshot_chunk_bytes must be positive", dir);
  auto st = std::make_unique<impl>();
  st->dir = dir;
  st->snap_dir = dir / snapshot_dir_name;
  st->opts = opts;
  if (!opts.read_only && opts.create_if_missing) {
    std::error_code err;
    fs::create_directories(dir, err);
    if (err)
      return fail(ec::io_error, "create directory", err.message(), dir);
  }
  rocksdb::DBOptions dbo;
  // RocksDB's default (point-in-time) recovery stops replaying the WAL at the first damaged
  // record and opens without a word: every event acknowledged after the damage is gone, and
  // the log still looks whole. Tolerating only a torn tail (a record cut by a crash, which
  // never was acknowledged) refuses the open on damage anywhere else.
  dbo.wal_recovery_mode = opts.salvage_wal
                            ? rocksdb::WALRecoveryMode::kPointInTimeRecovery
                            : rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  dbo.create_if_missing = opts.create_if_missing && !opts.read_only;
  dbo.create_missing_column_families = !opts.read_only;
  dbo.keep_log_file_num = 4;
  if (opts.read_only) {
    // A secondary instance must keep every table file open, so that the primary's compactions
    // cannot delete a file under it.
    dbo.max_open_files = -1;
    dbo.info_log = std::make_shared<discard_logger>();
  } else {
    dbo.info_log = std::make_shared<stderr_logger>();
    dbo.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  }
  rocksdb::ColumnFamilyOptions cfo;
  // An append-only log with unique, increasing keys: the default level compaction suits it;
  // LZ4 when this RocksDB build has it, else no compression.
  auto supported = rocksdb::GetSupportedCompressions();
  cfo.compression = std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression)
                        != supported.end()
                      ? rocksdb::kLZ4Compression
                      : rocksdb::kNoCompression;
  cfo.write_buffer_size = 64u << 20;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs{{default_cf_name, cfo},
                                                   {events_cf_name, cfo},
                                                   {snapshots_cf_name, cfo}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s;
  if (opts.read_only) {
    st->secondary_dir = secondary_path();
    s = rocksdb::DB::OpenAsSecondary(dbo, dir.string(), st->secondary_dir.string(), cfs, &handles,
                                     &raw);
  } else {
    s = rocksdb::DB::Open(dbo, dir.string(), cfs, &handles, &raw);
  }
  if (!s.ok() && s.IsCorruption())
    return damaged_log(s, dir, opts.read_only);
  if (!s.ok())
    return from_status(s, opts.read_only ? "open read-only" : "open", dir);
  st->db.reset(raw);
  st->default_cf = cf_ptr{handles[0], cf_deleter{raw}};
  st->events_cf = cf_ptr{handles[1], cf_deleter{raw}};
  st->snapshots_cf = cf_ptr{handles[2], cf_deleter{raw}};
  if (auto err = st->check_format())
    return err;
  if (auto err = st->load_last_seq())
    return err;
  if (opts.read_only) {
    st->pin_snapshot_files();
  } else {
    // Best effort: a malformed manifest is reported when the snapshots are listed or read.
    static_cast<void>(st->remove_orphan_files());
  }
  return std::unique_ptr<event_store>{new event_store(std::move(st))};
}

// -- events -------------------------------------------------------------------

std::uint64_t event_store::last_seq() const {
  return impl_->last_seq.load(std::memory_order_acquire);
}

caf::error event_store::append(std::span<event_record> batch) {
  if (auto err = impl_->refuse_if_read_only("append"))
    return err;
  if (batch.empty())
    return {};
  std::lock_guard<std::mutex> guard{impl_->write_mutex};
  auto last = impl_->last_seq.load(std::memory_order_relaxed);
  if (batch.size() > std::numeric_limits<std::uint64_t>::max() - last)
    return fail(ec::invalid_argument, "append", "sequence numbers exhausted", impl_->dir);
  auto first = last + 1;
  rocksdb::WriteBatch wb;
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto key = event_key{first + i}.encode();
    auto value = event_value::encode(batch[i]);
    bytes += key.size() + value.size();
    auto s = wb.Put(impl_->events_cf.get(), key, value);
    if (!s.ok())
      return from_status(s, "append " + event_name(first + i), impl_->dir);
  }
  rocksdb::WriteOptions wo;
  wo.sync = impl_->opts.mode == durability::sync;
  auto s = impl_->db->Write(wo, &wb);
  if (!s.ok())
    return from_status(s,
                       "append events " + std::to_string(first) + ".."
                         + std::to_string(first + batch.size() - 1),
                       impl_->dir);
  // Only a durable batch gets its numbers, so the records are untouched on error.
  for (std::size_t i = 0; i < batch.size(); ++i)
    batch[i].seq = first + i;
  impl_->last_seq.store(first + batch.size() - 1, std::memory_order_release);
  impl_->events_appended.fetch_add(batch.size(), std::memory_order_relaxed);
  impl_->batches.fetch_add(1, std::memory_order_relaxed);
  if (wo.sync)
    impl_->syncs.fetch_add(1, std::memory_order_relaxed);
  impl_->bytes_appended.fetch_add(bytes, std::memory_order_relaxed);
  return {};
}

caf::error event_store::scan(std::uint64_t from, std::uint64_t to,
                             const std::function<bool(const event_record&)>& f) const {
  // Read last_seq before creating the iterator: every event up to it is then visible to the
  // iterator, and events appended meanwhile are simply not part of this scan.
  auto last = last_seq();
  auto first = std::max<std::uint64_t>(from, 1);
  auto upper = std::min(to, last);
  if (first > upper)
    return {};
  auto& dir = impl_->dir;
  auto bound = event_key{upper + 1}.encode(); // upper <= last < max: cannot overflow
  rocksdb::Slice bound_slice{bound};
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &bound_slice;
  std::unique_ptr<rocksdb::Iterator> it{impl_->db->NewIterator(ro, impl_->events_cf.get())};
  auto expected = first;
  event_record record; // one for the whole scan: its payload buffer is reused
  for (it->Seek(event_key{first}.encode()); it->Valid(); it->Next()) {
    auto key = event_key::decode(as_view(it->key()));
    if (!key)
      return fail(ec::corruption, event_name(expected), "malformed key where it should be", dir);
    if (key->seq != expected)
      return fail(ec::corruption, event_name(expected),
                  "missing (the next stored event is " + std::to_string(key->seq) + ")", dir);
    auto why = event_value::decode_into(key->seq, as_view(it->value()), record);
    if (why != event_value_error::none)
      return fail(ec::corruption, event_name(key->seq), to_string(why), dir);
    ++expected;
    if (!f(record))
      return {};
  }
  if (!it->status().ok())
    return from_status(it->status(), "scan at " + event_name(expected), dir);
  if (expected <= upper)
    return fail(ec::corruption, event_name(expected),
                "missing (the log should reach event " + std::to_string(upper) + ")", dir);
  return {};
}

caf::expected<event_record> event_store::read(std::uint64_t seq) const {
  std::string value;
  auto s = impl_->db->Get({}, impl_->events_cf.get(), event_key{seq}.encode(), &value);
  if (s.IsNotFound())
    return fail(ec::not_found, event_name(seq), "not found", impl_->dir);
  if (!s.ok())
    return from_status(s, "read " + event_name(seq), impl_->dir);
  event_value_error why = event_value_error::none;
  auto record = event_value::decode(seq, value, &why);
  if (!record)
    return fail(ec::corruption, event_name(seq), to_string(why), impl_->dir);
  return std::move(*record);
}

// -- a lost tail --------------------------------------------------------------

caf::error event_store::impl::check_no_lost_tail() {
  // A snapshot file is written only after the events it holds were durable, so one past the
  // end shows the loss even when its manifest was lost with the events. The files are listed
  // first: a read-only store then catches up with the server, so that every event a listed
  // file was taken after is in its view (the server may write snapshots meanwhile).
  std::optional<snapshot_file_id> newest_file;
  std::error_code err;
  for (fs::directory_iterator i{snap_dir, err}, end; !err && i != end; i.increment(err)) {
    auto file = i->path().filename().string();
    std::string_view name = file;
    if (name.ends_with(".tmp"))
      name.remove_suffix(4);
    auto id = parse_snapshot_file_name(name);
    if (id && (!newest_file || id->seq > newest_file->seq))
      newest_file = id;
  }
  if (opts.read_only) {
    if (auto s = db->TryCatchUpWithPrimary(); !s.ok())
      return from_status(s, "catch up with the server", dir);
    if (auto e = load_last_seq())
      return e;
  }
  auto last = last_seq.load();
  auto lost = [&](std::uint64_t seq, const std::string& what) {
    return fail(ec::corruption, snapshot_name(seq),
                what + " but the log ends at " + event_name(last) + ": events "
                  + std::to_string(last + 1) + ".." + std::to_string(seq)
                  + " were lost (a damaged write-ahead log recovered only up to the damage?)",
                dir);
  };
  auto all = manifests();
  if (!all)
    return std::move(all.error());
  if (!all->empty() && all->back().first > last)
    return lost(all->back().first, "its manifest exists");
  if (newest_file && newest_file->seq > last)
    return lost(newest_file->seq,
                "its file " + file_label(newest_file->seq, newest_file->generation) + " exists");
  return {};
}

caf::error event_store::check_no_lost_tail() {
  return impl_->check_no_lost_tail();
}

caf::error event_store::drop_snapshots_past_end() {
  if (auto err = impl_->refuse_if_read_only("drop snapshots"))
    return err;
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto all = impl_->manifests();
  if (!all)
    return std::move(all.error());
  auto last = last_seq();
  rocksdb::WriteBatch wb;
  for (const auto& [seq, m] : *all) {
    if (seq <= last)
      continue;
    auto s = wb.Delete(impl_->snapshots_cf.get(), snapshot_manifest_key{seq}.encode());
    if (s.ok() && m.storage == snapshot_storage::chunks)
      s = impl_->delete_snapshot_chunks(wb, seq);
    if (!s.ok())
      return from_status(s, "drop " + snapshot_name(seq), impl_->dir);
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  if (auto s = impl_->db->Write(wo, &wb); !s.ok())
    return from_status(s, "drop snapshots past the end", impl_->dir);
  // Their files (and any other file past the end) are orphans now.
  return impl_->remove_orphan_files(true);
}

// -- misc ---------------------------------------------------------------------

caf::error event_store::refresh() {
  if (!impl_->opts.read_only)
    return {};
  auto s = impl_->db->TryCatchUpWithPrimary();
  if (!s.ok())
    return from_status(s, "catch up with the server", impl_->dir);
  impl_->pin_snapshot_files();
  return impl_->load_last_seq();
}

store_stats event_store::stats() const {
  store_stats result;
  result.events_appended = impl_->events_appended.load(std::memory_order_relaxed);
  result.batches = impl_->batches.load(std::memory_order_relaxed);
  result.syncs = impl_->syncs.load(std::memory_order_relaxed);
  result.bytes_appended = impl_->bytes_appended.load(std::memory_order_relaxed);
  result.snapshots_written = impl_->snapshots_written.load(std::memory_order_relaxed);
  return result;
}

const fs::path& event_store::path() const {
  return impl_->dir;
}

} // namespace cobble::storage
