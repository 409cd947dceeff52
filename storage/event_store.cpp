#include "storage/event_store.hpp"

#include "storage/error.hpp"
#include "storage/keys.hpp"
#include "storage/snapshot_stream.hpp"

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <cstdarg>
#include <limits>
#include <mutex>
#include <random>
#include <system_error>

#include <unistd.h>

namespace fs = std::filesystem;

namespace cobble::storage {

namespace {

// -- errors -------------------------------------------------------------------

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

/// "<operation> <dir>: <RocksDB message>".
caf::error from_status(const rocksdb::Status& s, std::string_view operation,
                       const fs::path& dir) {
  std::string what{operation};
  what += " in ";
  what += dir.string();
  what += ": ";
  what += s.ToString();
  return make_error(code_of(s), std::move(what));
}

/// "<subject>: <detail> (in <dir>)", for problems found by our own checks.
caf::error fail(ec code, const std::string& subject, std::string_view detail,
                const fs::path& dir) {
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

rocksdb::Slice as_slice(std::string_view x) {
  return {x.data(), x.size()};
}

std::string_view as_view(const rocksdb::Slice& x) {
  return {x.data(), x.size()};
}

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

/// The first key after every chunk key of snapshot `seq` (exclusive end of a DeleteRange).
std::string chunk_range_end(std::uint64_t seq) {
  if (seq < std::numeric_limits<std::uint64_t>::max())
    return snapshot_chunk_key::seq_prefix(seq + 1);
  return std::string(1, static_cast<char>(key_prefix::snapshot_manifest));
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

struct cf_deleter {
  rocksdb::DB* db = nullptr;
  void operator()(rocksdb::ColumnFamilyHandle* h) const {
    // The status is InvalidArgument only for the DB's internal default handle, never ours.
    static_cast<void>(db->DestroyColumnFamilyHandle(h));
  }
};

using cf_ptr = std::unique_ptr<rocksdb::ColumnFamilyHandle, cf_deleter>;

} // namespace

// -- impl ---------------------------------------------------------------------

struct event_store::impl {
  fs::path dir;
  store_options opts;
  fs::path secondary_dir; ///< Only for read-only stores.

  // Declaration order matters: the handles are destroyed before the DB.
  std::unique_ptr<rocksdb::DB> db;
  cf_ptr default_cf;
  cf_ptr events_cf;
  cf_ptr snapshots_cf;

  std::atomic<std::uint64_t> last_seq{0};
  std::mutex write_mutex;    ///< Serializes appends.
  std::mutex snapshot_mutex; ///< Serializes snapshot writes and pruning.

  std::atomic<std::uint64_t> events_appended{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> syncs{0};
  std::atomic<std::uint64_t> bytes_appended{0};
  std::atomic<std::uint64_t> snapshots_written{0};

  ~impl() {
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

  caf::error refuse_if_read_only(std::string_view operation) const {
    if (!opts.read_only)
      return {};
    return fail(ec::invalid_argument, std::string{operation}, "store opened read-only", dir);
  }

  /// Reads the seq of the newest event from the events CF.
  caf::error load_last_seq() {
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

  /// True when no CF holds any key besides the format version.
  caf::expected<bool> empty() const {
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

  /// Checks the format version; stamps a new, empty, writable store with ours.
  caf::error check_format() {
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

  /// Finds the manifest of snapshot `seq` through `it`.
  caf::expected<snapshot_manifest> read_manifest(rocksdb::Iterator& it, std::uint64_t seq) const {
    auto name = snapshot_name(seq);
    auto manifest_key = snapshot_manifest_key{seq}.encode();
    it.Seek(as_slice(manifest_key));
    if (!it.status().ok())
      return from_status(it.status(), "read " + name, dir);
    if (!it.Valid() || as_view(it.key()) != manifest_key)
      return fail(ec::not_found, name, "not found", dir);
    auto manifest = snapshot_manifest::decode(as_view(it.value()));
    if (!manifest)
      return fail(ec::corruption, name, "malformed manifest", dir);
    return *manifest;
  }

  /// Reads the chunks of snapshot `seq` in order through `it`, handing each to
  /// `sink(offset, bytes)`, and verifies them against the manifest: every chunk there, none
  /// beyond, the total size and the CRC-32 (computed as the chunks pass). `sink` returns false
  /// to stop early (an error then, which nobody is meant to read).
  template <class Sink>
  caf::error read_chunks(rocksdb::Iterator& it, std::uint64_t seq, const snapshot_manifest& m,
                         Sink&& sink) const {
    auto name = snapshot_name(seq);
    std::uint64_t offset = 0;
    std::uint32_t crc = 0;
    it.Seek(as_slice(snapshot_chunk_key::seq_prefix(seq)));
    for (std::uint32_t idx = 0; idx < m.chunks; ++idx, it.Next()) {
      std::optional<snapshot_chunk_key> key;
      if (it.Valid())
        key = snapshot_chunk_key::decode(as_view(it.key()));
      if (!key || key->seq != seq || key->chunk != idx) {
        if (!it.status().ok())
          return from_status(it.status(), "read " + name, dir);
        return fail(ec::corruption, name,
                    "chunk " + std::to_string(idx) + " of " + std::to_string(m.chunks)
                      + " missing",
                    dir);
      }
      auto chunk = as_view(it.value());
      if (chunk.size() > m.bytes - offset)
        return fail(ec::corruption, name,
                    "chunks exceed the manifest's " + std::to_string(m.bytes) + " bytes", dir);
      crc = crc32_update(crc, chunk);
      if (!sink(offset, chunk))
        return fail(ec::unspecified, name, "reading stopped", dir);
      offset += chunk.size();
    }
    if (!it.status().ok())
      return from_status(it.status(), "read " + name, dir);
    if (it.Valid()) {
      auto extra = snapshot_chunk_key::decode(as_view(it.key()));
      if (extra && extra->seq == seq)
        return fail(ec::corruption, name,
                    "unexpected chunk " + std::to_string(extra->chunk) + " beyond the manifest's "
                      + std::to_string(m.chunks),
                    dir);
    }
    if (offset != m.bytes)
      return fail(ec::corruption, name,
                  "size " + std::to_string(offset) + " but the manifest says "
                    + std::to_string(m.bytes),
                  dir);
    if (crc != m.crc)
      return fail(ec::corruption, name, "checksum mismatch", dir);
    return {};
  }

  /// Reads the whole snapshot `seq` through `it`, verifying manifest, chunks, size and crc.
  caf::expected<std::string> load_snapshot(rocksdb::Iterator& it, std::uint64_t seq) const {
    auto manifest = read_manifest(it, seq);
    if (!manifest)
      return std::move(manifest.error());
    std::string blob;
    // One allocation for the whole snapshot: appending chunk by chunk to a growing string
    // copied it over and over (half of recovery's time at a million workunits).
    // (A damaged manifest may claim any size: then no reservation, and the size check
    // reports it.)
    try {
      blob.reserve(static_cast<std::size_t>(manifest->bytes));
    } catch (const std::exception&) {
    }
    auto err = read_chunks(it, seq, *manifest, [&](std::uint64_t, std::string_view chunk) {
      blob.append(chunk.data(), chunk.size());
      return true;
    });
    if (err)
      return err;
    return blob;
  }

  /// Options of the iterators that read snapshots: each block is read once, so it would only
  /// push the events' blocks out of the block cache.
  static rocksdb::ReadOptions snapshot_read_options() {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    return ro;
  }
};

// -- snapshot_stream ----------------------------------------------------------

snapshot_stream::snapshot_stream(std::uint64_t seq, std::size_t size) : seq_(seq), size_(size) {
  // nop
}

snapshot_stream::~snapshot_stream() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stop_ = true;
  }
  if (thread_.joinable())
    thread_.join();
}

std::size_t snapshot_stream::wait_for(std::size_t n) {
  std::unique_lock<std::mutex> guard{mtx_};
  cv_.wait(guard, [&] { return ready_ >= n || ended_; });
  return ready_;
}

reader snapshot_stream::make_reader() {
  std::size_t ready = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ready = ready_;
  }
  return reader{std::string_view{data_, size_}, ready, *this};
}

caf::error snapshot_stream::finish() {
  std::unique_lock<std::mutex> guard{mtx_};
  cv_.wait(guard, [&] { return ended_; });
  return error_;
}

void snapshot_stream::publish(std::size_t ready) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ready_ = ready;
  }
  cv_.notify_all();
}

void snapshot_stream::end(caf::error err) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ended_ = true;
    error_ = std::move(err);
  }
  cv_.notify_all();
}

bool snapshot_stream::stopping() {
  std::lock_guard<std::mutex> guard{mtx_};
  return stop_;
}

// -- construction -------------------------------------------------------------

event_store::event_store(std::unique_ptr<impl> p) : impl_(std::move(p)) {
  // nop
}

event_store::~event_store() = default;

caf::expected<std::unique_ptr<event_store>> event_store::open(const fs::path& dir,
                                                              store_options opts) {
  if (opts.snapshot_chunk_bytes == 0)
    return fail(ec::invalid_argument, "open", "snapshot_chunk_bytes must be positive", dir);
  auto st = std::make_unique<impl>();
  st->dir = dir;
  st->opts = opts;
  if (!opts.read_only && opts.create_if_missing) {
    std::error_code err;
    fs::create_directories(dir, err);
    if (err)
      return fail(ec::io_error, "create directory", err.message(), dir);
  }
  rocksdb::DBOptions dbo;
  dbo.create_if_missing = opts.create_if_missing && !opts.read_only;
  dbo.create_missing_column_families = !opts.read_only;
  dbo.keep_log_file_num = 4;
  if (opts.read_only) {
    // A secondary instance must keep every table file open, so that the primary's compactions
    // cannot delete a file under it.
    dbo.max_open_files = -1;
    dbo.info_log = std::make_shared<discard_logger>();
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
    s = rocksdb::DB::OpenAsSecondary(dbo, dir.string(), st->secondary_dir.string(), cfs,
                                     &handles, &raw);
  } else {
    s = rocksdb::DB::Open(dbo, dir.string(), cfs, &handles, &raw);
  }
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
      return fail(ec::corruption, event_name(expected), "malformed key where it should be",
                  dir);
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

// -- snapshots ----------------------------------------------------------------

caf::error event_store::write_snapshot(std::uint64_t seq, std::string_view blob) {
  auto name = snapshot_name(seq);
  if (auto err = impl_->refuse_if_read_only("write " + name))
    return err;
  auto chunk_bytes = impl_->opts.snapshot_chunk_bytes;
  auto chunks = (blob.size() + chunk_bytes - 1) / chunk_bytes;
  if (chunks > std::numeric_limits<std::uint32_t>::max())
    return fail(ec::invalid_argument, name, "too many chunks", impl_->dir);
  // Neither the append mutex nor one big WriteBatch: appends share RocksDB's write queue, and
  // a snapshot of hundreds of MB written in one synced batch held every append (and so every
  // acknowledged RPC) for up to a second. Each chunk is a batch of its own, written without
  // sync; the manifest comes last, in a synced batch, which syncs the WAL with every chunk
  // before it. Until the manifest exists the snapshot does not (list_snapshots and
  // latest_snapshot go by manifests); chunks orphaned by a crash are deleted by the next
  // write at the same seq or by prune_snapshots.
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto* cf = impl_->snapshots_cf.get();
  auto write = [&](rocksdb::WriteBatch& wb, bool sync) {
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    return impl_->db->Write(wo, &wb);
  };
  rocksdb::Status s;
  {
    // Chunks left over from an earlier snapshot at the same seq must not survive.
    rocksdb::WriteBatch wb;
    s = wb.DeleteRange(cf, snapshot_chunk_key::seq_prefix(seq), chunk_range_end(seq));
    if (s.ok())
      s = write(wb, false);
  }
  for (std::size_t i = 0; s.ok() && i < chunks; ++i) {
    auto chunk = blob.substr(i * chunk_bytes, chunk_bytes);
    rocksdb::WriteBatch wb;
    s = wb.Put(cf, snapshot_chunk_key{seq, static_cast<std::uint32_t>(i)}.encode(),
               as_slice(chunk));
    if (s.ok())
      s = write(wb, false);
  }
  if (s.ok()) {
    snapshot_manifest manifest{static_cast<std::uint32_t>(chunks), blob.size(), crc32(blob)};
    rocksdb::WriteBatch wb;
    s = wb.Put(cf, snapshot_manifest_key{seq}.encode(), manifest.encode());
    if (s.ok())
      s = write(wb, true);
  }
  if (!s.ok())
    return from_status(s, "write " + name, impl_->dir);
  impl_->snapshots_written.fetch_add(1, std::memory_order_relaxed);
  return {};
}

caf::expected<std::optional<std::pair<std::uint64_t, std::string>>>
event_store::latest_snapshot() const {
  using result = std::optional<std::pair<std::uint64_t, std::string>>;
  // One iterator for finding and reading: it sees one consistent state, even while pruning.
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  it->SeekForPrev(
    snapshot_manifest_key{std::numeric_limits<std::uint64_t>::max()}.encode());
  if (!it->status().ok())
    return from_status(it->status(), "find the latest snapshot", impl_->dir);
  if (!it->Valid())
    return result{};
  auto key = snapshot_manifest_key::decode(as_view(it->key()));
  if (!key)
    return result{}; // only chunk keys sort below the manifests: there is no manifest
  auto blob = impl_->load_snapshot(*it, key->seq);
  if (!blob)
    return std::move(blob.error());
  return result{std::pair{key->seq, std::move(*blob)}};
}

caf::expected<std::string> event_store::read_snapshot(std::uint64_t seq) const {
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  return impl_->load_snapshot(*it, seq);
}

caf::expected<std::unique_ptr<snapshot_stream>>
event_store::stream_snapshot(std::uint64_t seq) const {
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  auto manifest = impl_->read_manifest(*it, seq);
  if (!manifest)
    return std::move(manifest.error());
  std::unique_ptr<snapshot_stream> st{
    new snapshot_stream(seq, static_cast<std::size_t>(manifest->bytes))};
  // Not zeroed: the reading thread touches each page first, in parallel with the decoding.
  try {
    st->buffer_.reset(new char[st->size_]);
  } catch (const std::bad_alloc&) {
    // A damaged manifest may claim any size: read it the plain way, which reports what is
    // wrong (or, should the blob really be this large, has it).
    auto blob = impl_->load_snapshot(*it, seq);
    if (!blob)
      return std::move(blob.error());
    st->fallback_ = std::move(*blob);
    st->data_ = st->fallback_.data();
    st->ready_ = st->size_;
    st->ended_ = true;
    return st;
  }
  st->data_ = st->buffer_.get();
  st->thread_ = std::thread{[s = st.get(), it = std::move(it), m = *manifest, self = impl_.get()] {
    auto err = self->read_chunks(*it, s->seq_, m, [&](std::uint64_t offset, std::string_view chunk) {
      std::memcpy(s->buffer_.get() + offset, chunk.data(), chunk.size());
      // Published per chunk (4 MB by default); the check for a stop goes with it.
      s->publish(static_cast<std::size_t>(offset + chunk.size()));
      return !s->stopping();
    });
    s->end(std::move(err));
  }};
  return st;
}

caf::expected<std::vector<snapshot_info>> event_store::list_snapshots() const {
  std::vector<snapshot_info> result;
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator({}, impl_->snapshots_cf.get())};
  auto start = std::string(1, static_cast<char>(key_prefix::snapshot_manifest));
  for (it->Seek(start); it->Valid(); it->Next()) {
    auto key = snapshot_manifest_key::decode(as_view(it->key()));
    if (!key)
      break; // past the manifests
    auto manifest = snapshot_manifest::decode(as_view(it->value()));
    if (!manifest)
      return fail(ec::corruption, snapshot_name(key->seq), "malformed manifest", impl_->dir);
    result.push_back(snapshot_info{key->seq, manifest->bytes});
  }
  if (!it->status().ok())
    return from_status(it->status(), "list snapshots", impl_->dir);
  return result;
}

std::vector<snapshot_info> event_store::snapshots() const {
  auto result = list_snapshots();
  if (!result)
    return {};
  return std::move(*result);
}

caf::error event_store::prune_snapshots(std::size_t keep) {
  if (auto err = impl_->refuse_if_read_only("prune snapshots"))
    return err;
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto all = list_snapshots();
  if (!all)
    return std::move(all.error());
  if (all->size() <= keep)
    return {};
  auto* cf = impl_->snapshots_cf.get();
  rocksdb::WriteBatch wb;
  rocksdb::Status s;
  for (std::size_t i = 0; s.ok() && i < all->size() - keep; ++i)
    s = wb.Delete(cf, snapshot_manifest_key{(*all)[i].seq}.encode());
  // Every chunk below the oldest snapshot kept: those of the pruned snapshots and any
  // orphaned by a crash during a snapshot write.
  if (s.ok())
    s = wb.DeleteRange(cf, snapshot_chunk_key::seq_prefix(0),
                       snapshot_chunk_key::seq_prefix((*all)[all->size() - keep].seq));
  if (!s.ok())
    return from_status(s, "prune snapshots", impl_->dir);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  s = impl_->db->Write(wo, &wb);
  if (!s.ok())
    return from_status(s, "prune snapshots", impl_->dir);
  return {};
}

// -- misc ---------------------------------------------------------------------

caf::error event_store::refresh() {
  if (!impl_->opts.read_only)
    return {};
  auto s = impl_->db->TryCatchUpWithPrimary();
  if (!s.ok())
    return from_status(s, "catch up with the server", impl_->dir);
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
