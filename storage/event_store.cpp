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
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
caf::error from_status(const rocksdb::Status& s, std::string_view operation, const fs::path& dir) {
  std::string what{operation};
  what += " in ";
  what += dir.string();
  what += ": ";
  what += s.ToString();
  return make_error(code_of(s), std::move(what));
}

/// "<subject>: <detail> (in <dir>)", for problems found by our own checks.
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

/// An owned file descriptor.
class unique_fd {
public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& x) noexcept : fd_(std::exchange(x.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& x) noexcept {
    reset(std::exchange(x.fd_, -1));
    return *this;
  }
  ~unique_fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = fd;
  }

private:
  int fd_ = -1;
};

/// The text of an errno value.
std::string errno_text(int err) {
  return std::system_category().message(err);
}

/// How much of a snapshot is checksummed or written at a time (and how often a stream looks
/// for a stop).
constexpr std::size_t snapshot_piece_bytes = 4u << 20;

} // namespace

// -- impl ---------------------------------------------------------------------

struct event_store::impl {
  fs::path dir;
  store_options opts;
  fs::path secondary_dir; ///< Only for read-only stores.
  fs::path snap_dir;      ///< dir / snapshot_dir_name: the snapshot files.

  // Declaration order matters: the handles are destroyed before the DB.
  std::unique_ptr<rocksdb::DB> db;
  cf_ptr default_cf;
  cf_ptr events_cf;
  cf_ptr snapshots_cf;

  std::atomic<std::uint64_t> last_seq{0};
  std::mutex write_mutex;    ///< Serializes appends.
  std::mutex snapshot_mutex; ///< Serializes snapshot writes and pruning.

  /// Read-only stores: the snapshot files of the view, held open so that the server pruning
  /// or replacing them does not take them away (refresh() renews them).
  mutable std::mutex pins_mutex;
  std::map<snapshot_file_id, unique_fd> pins; ///< Guarded by pins_mutex.

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
                    "chunk " + std::to_string(idx) + " of " + std::to_string(m.chunks) + " missing",
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
    if (manifest->storage == snapshot_storage::file)
      return load_snapshot_file(seq, *manifest);
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

  // -- snapshot files ---------------------------------------------------------

  /// Every manifest, by seq (oldest first).
  caf::expected<std::vector<std::pair<std::uint64_t, snapshot_manifest>>> manifests() const {
    std::vector<std::pair<std::uint64_t, snapshot_manifest>> result;
    std::unique_ptr<rocksdb::Iterator> it{db->NewIterator({}, snapshots_cf.get())};
    auto start = std::string(1, static_cast<char>(key_prefix::snapshot_manifest));
    for (it->Seek(start); it->Valid(); it->Next()) {
      auto key = snapshot_manifest_key::decode(as_view(it->key()));
      if (!key)
        break; // past the manifests
      auto manifest = snapshot_manifest::decode(as_view(it->value()));
      if (!manifest)
        return fail(ec::corruption, snapshot_name(key->seq), "malformed manifest", dir);
      result.emplace_back(key->seq, *manifest);
    }
    if (!it->status().ok())
      return from_status(it->status(), "list snapshots", dir);
    return result;
  }

  /// The manifest of snapshot `seq`, if there is one.
  caf::expected<std::optional<snapshot_manifest>> find_manifest(std::uint64_t seq) const {
    std::string value;
    auto s = db->Get({}, snapshots_cf.get(), snapshot_manifest_key{seq}.encode(), &value);
    if (s.IsNotFound())
      return std::optional<snapshot_manifest>{};
    if (!s.ok())
      return from_status(s, "read " + snapshot_name(seq), dir);
    auto manifest = snapshot_manifest::decode(value);
    if (!manifest)
      return fail(ec::corruption, snapshot_name(seq), "malformed manifest", dir);
    return std::optional<snapshot_manifest>{*manifest};
  }

  /// "snapshots/<file name>", as errors name a snapshot file.
  static std::string file_label(std::uint64_t seq, std::uint64_t generation) {
    std::string out = snapshot_dir_name;
    out += '/';
    out += snapshot_file_name(seq, generation);
    return out;
  }

  /// Syncs directory `p`, so that a file created or renamed in it survives a crash.
  caf::error sync_dir(const fs::path& p, const std::string& subject) const {
    unique_fd fd{::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (!fd || ::fsync(fd.get()) != 0) {
      auto e = errno;
      return fail(ec::io_error, subject, "sync directory " + p.string() + ": " + errno_text(e),
                  dir);
    }
    return {};
  }

  /// Writes `blob` as the file of snapshot `seq`, generation `gen`: under a temporary name,
  /// synced, renamed into place, the directory synced. Returns the blob's CRC-32 (computed as
  /// the pieces go out, while each is in the cache). On error nothing is left under the final
  /// name that was not there before.
  caf::expected<std::uint32_t>
  write_snapshot_file(std::uint64_t seq, std::uint64_t gen, std::string_view blob) {
    auto name = snapshot_name(seq);
    std::error_code err;
    if (fs::create_directories(snap_dir, err)) {
      // A new directory entry in the store directory: make it durable too.
      if (auto e = sync_dir(dir, name))
        return e;
    } else if (err) {
      return fail(ec::io_error, name, "create " + snap_dir.string() + ": " + err.message(), dir);
    }
    auto path = snap_dir / snapshot_file_name(seq, gen);
    auto tmp = path;
    tmp += ".tmp";
    auto failed = [&](const std::string& what) {
      auto code = errno;
      auto e = fail(ec::io_error, name, what + " " + tmp.string() + ": " + errno_text(code), dir);
      std::error_code ignored;
      fs::remove(tmp, ignored);
      return e;
    };
    unique_fd fd{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (!fd)
      return failed("create");
    std::uint32_t crc = 0;
    for (std::size_t offset = 0; offset < blob.size();) {
      auto piece = blob.substr(offset, snapshot_piece_bytes);
      crc = crc32_update(crc, piece);
      while (!piece.empty()) {
        auto n = ::write(fd.get(), piece.data(), piece.size());
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          return failed("write");
        piece.remove_prefix(static_cast<std::size_t>(n));
        offset += static_cast<std::size_t>(n);
      }
    }
    if (::fdatasync(fd.get()) != 0)
      return failed("sync");
    if (::close(fd.release()) != 0)
      return failed("close");
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      return failed("rename");
    if (auto e = sync_dir(snap_dir, name))
      return e;
    return crc;
  }

  /// Removes the file of snapshot `seq`, generation `gen` (best effort: a file left behind is
  /// an orphan, which the next prune removes).
  void remove_snapshot_file(std::uint64_t seq, std::uint64_t gen) const {
    std::error_code ignored;
    fs::remove(snap_dir / snapshot_file_name(seq, gen), ignored);
  }

  /// Removes every snapshot file and temporary file that no manifest refers to: left by a
  /// crash between a file and its manifest, during a prune, or after a replacement. Only
  /// names this store gives are touched. Best effort: what cannot be removed now is tried
  /// again at the next prune. Only for a writable store, with no snapshot write under way.
  caf::error remove_orphan_files() const {
    std::error_code err;
    if (!fs::exists(snap_dir, err))
      return {};
    auto all = manifests();
    if (!all)
      return std::move(all.error());
    std::set<snapshot_file_id> live;
    for (const auto& [seq, m] : *all)
      if (m.storage == snapshot_storage::file)
        live.insert(snapshot_file_id{seq, m.generation});
    std::vector<fs::path> orphans;
    for (fs::directory_iterator i{snap_dir, err}, end; !err && i != end; i.increment(err)) {
      auto file = i->path().filename().string();
      std::string_view name = file;
      bool temporary = name.ends_with(".tmp");
      if (temporary)
        name.remove_suffix(4);
      auto id = parse_snapshot_file_name(name);
      if (id && (temporary || !live.count(*id)))
        orphans.push_back(i->path());
    }
    for (const auto& p : orphans) {
      std::error_code ignored;
      fs::remove(p, ignored);
    }
    return {};
  }

  /// Opens the file of snapshot `seq` (the one the read-only store holds open, if any) and
  /// checks that its size is the manifest's: mapping a file shorter than that would raise
  /// SIGBUS where the file ends.
  caf::expected<unique_fd> open_snapshot_file(std::uint64_t seq, const snapshot_manifest& m) const {
    auto name = snapshot_name(seq);
    auto label = file_label(seq, m.generation);
    unique_fd fd;
    if (opts.read_only) {
      std::lock_guard<std::mutex> guard{pins_mutex};
      auto i = pins.find(snapshot_file_id{seq, m.generation});
      if (i != pins.end())
        fd.reset(::fcntl(i->second.get(), F_DUPFD_CLOEXEC, 0));
    }
    if (!fd) {
      auto path = snap_dir / snapshot_file_name(seq, m.generation);
      fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      auto code = errno;
      if (!fd && code == ENOENT)
        return fail(ec::corruption, name, "file " + label + " missing", dir);
      if (!fd)
        return fail(ec::io_error, name, "open " + path.string() + ": " + errno_text(code), dir);
    }
    struct stat sb {};
    if (::fstat(fd.get(), &sb) != 0) {
      auto code = errno;
      return fail(ec::io_error, name, "stat " + label + ": " + errno_text(code), dir);
    }
    if (static_cast<std::uint64_t>(sb.st_size) != m.bytes)
      return fail(ec::corruption, name,
                  "file " + label + " has size " + std::to_string(sb.st_size)
                    + " but the manifest says " + std::to_string(m.bytes),
                  dir);
    return fd;
  }

  /// The error of a blob whose CRC-32 is not the manifest's.
  caf::error checksum_mismatch(std::uint64_t seq) const {
    return fail(ec::corruption, snapshot_name(seq), "checksum mismatch", dir);
  }

  /// Reads the whole file of snapshot `seq`, verifying size and checksum.
  caf::expected<std::string>
  load_snapshot_file(std::uint64_t seq, const snapshot_manifest& m) const {
    auto fd = open_snapshot_file(seq, m);
    if (!fd)
      return std::move(fd.error());
    std::string blob;
    // The size is the file's, checked above: the allocation is as real as the file.
    blob.resize(static_cast<std::size_t>(m.bytes));
    std::size_t done = 0;
    while (done < blob.size()) {
      auto n = ::pread(fd->get(), blob.data() + done, blob.size() - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        auto code = errno;
        return fail(ec::io_error, snapshot_name(seq),
                    "read " + file_label(seq, m.generation) + ": " + errno_text(code), dir);
      }
      if (n == 0) // shrunk since the check
        return fail(ec::corruption, snapshot_name(seq),
                    "file " + file_label(seq, m.generation) + " has size " + std::to_string(done)
                      + " but the manifest says " + std::to_string(m.bytes),
                    dir);
      done += static_cast<std::size_t>(n);
    }
    if (crc32(blob) != m.crc)
      return checksum_mismatch(seq);
    return blob;
  }

  /// Read-only stores: holds the snapshot files of the current view open (see `pins`).
  void pin_snapshot_files() {
    auto all = manifests();
    if (!all)
      return; // reading a snapshot reports it
    std::map<snapshot_file_id, unique_fd> fresh;
    std::lock_guard<std::mutex> guard{pins_mutex};
    for (const auto& [seq, m] : *all) {
      if (m.storage != snapshot_storage::file)
        continue;
      snapshot_file_id id{seq, m.generation};
      if (auto i = pins.find(id); i != pins.end()) {
        fresh.emplace(id, std::move(i->second));
        continue;
      }
      auto path = snap_dir / snapshot_file_name(seq, m.generation);
      unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
      if (fd) // if not, reading the snapshot says it is missing
        fresh.emplace(id, std::move(fd));
    }
    pins = std::move(fresh);
  }

  /// stream_snapshot() of a file snapshot (see storage/snapshot_stream.hpp).
  caf::expected<std::unique_ptr<snapshot_stream>>
  stream_file(std::uint64_t seq, const snapshot_manifest& m) const;
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
  if (mapping_)
    ::munmap(mapping_, size_);
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

void snapshot_stream::hold_whole(std::string blob) {
  fallback_ = std::move(blob);
  data_ = fallback_.data();
  ready_ = size_;
  ended_ = true;
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

caf::expected<std::unique_ptr<snapshot_stream>>
event_store::impl::stream_file(std::uint64_t seq, const snapshot_manifest& m) const {
  // The size is checked first: the mapping must not reach past the end of the file.
  auto fd = open_snapshot_file(seq, m);
  if (!fd)
    return std::move(fd.error());
  auto size = static_cast<std::size_t>(m.bytes);
  std::unique_ptr<snapshot_stream> st{new snapshot_stream(seq, size)};
  void* mapping = size == 0 ? MAP_FAILED
                            : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd->get(), 0);
  if (mapping == MAP_FAILED) {
    // Empty, or no address space for it: read it the plain way (which checks it as well).
    auto blob = load_snapshot_file(seq, m);
    if (!blob)
      return std::move(blob.error());
    st->hold_whole(std::move(*blob));
    return st;
  }
  // Read once, front to back, by the checksum and the decoder: read ahead, and start now.
  ::madvise(mapping, size, MADV_SEQUENTIAL);
  ::madvise(mapping, size, MADV_WILLNEED);
  st->mapping_ = mapping;
  st->data_ = static_cast<const char*>(mapping);
  st->ready_ = size; // all of it is addressable; only its checksum is still to come
  st->thread_ = std::thread{[s = st.get(), expected = m.crc, self = this] {
    std::uint32_t crc = 0;
    std::string_view all{s->data_, s->size_};
    for (std::size_t offset = 0; offset < all.size(); offset += snapshot_piece_bytes) {
      if (s->stopping()) {
        s->end(fail(ec::unspecified, snapshot_name(s->seq_), "reading stopped", self->dir));
        return;
      }
      crc = crc32_update(crc, all.substr(offset, snapshot_piece_bytes));
    }
    s->end(crc == expected ? caf::error{} : self->checksum_mismatch(s->seq_));
  }};
  return st;
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
    s = rocksdb::DB::OpenAsSecondary(dbo, dir.string(), st->secondary_dir.string(), cfs, &handles,
                                     &raw);
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

// -- snapshots ----------------------------------------------------------------

caf::error event_store::write_snapshot(std::uint64_t seq, std::string_view blob) {
  auto name = snapshot_name(seq);
  if (auto err = impl_->refuse_if_read_only("write " + name))
    return err;
  auto chunk_bytes = impl_->opts.snapshot_chunk_bytes;
  auto as_file = impl_->opts.snapshots == snapshot_storage::file;
  auto chunks = as_file ? 0 : (blob.size() + chunk_bytes - 1) / chunk_bytes;
  if (chunks > std::numeric_limits<std::uint32_t>::max())
    return fail(ec::invalid_argument, name, "too many chunks", impl_->dir);
  // Neither the append mutex nor one big WriteBatch: appends share RocksDB's write queue, and
  // a snapshot of hundreds of MB written in one synced batch held every append (and so every
  // acknowledged RPC) for up to a second. A file snapshot does not go through RocksDB at all
  // but for its manifest; a chunked one writes each chunk as a batch of its own, without sync.
  // The manifest comes last, in a synced batch (which syncs the WAL with every chunk before
  // it); until it exists the snapshot does not (list_snapshots and latest_snapshot go by
  // manifests). Chunks or files orphaned by a crash are deleted by the next write at the same
  // seq, by prune_snapshots, and (files) at the next open.
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto* cf = impl_->snapshots_cf.get();
  auto old = impl_->find_manifest(seq);
  if (!old && old.error() != ec::corruption)
    return std::move(old.error());
  // What the manifest at `seq` names now (a malformed manifest is simply overwritten).
  bool had_file = old && *old && (*old)->storage == snapshot_storage::file;
  bool had_chunks = old && *old && (*old)->storage == snapshot_storage::chunks;
  std::uint64_t old_generation = had_file ? (*old)->generation : 0;
  auto write = [&](rocksdb::WriteBatch& wb, bool sync) {
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    return impl_->db->Write(wo, &wb);
  };
  snapshot_manifest manifest;
  manifest.bytes = blob.size();
  rocksdb::Status s;
  if (as_file) {
    // A new file next to the one the manifest names (if any): that one stays whole until the
    // new manifest is written.
    manifest.storage = snapshot_storage::file;
    if (had_file)
      manifest.generation = old_generation + 1;
    auto crc = impl_->write_snapshot_file(seq, manifest.generation, blob);
    if (!crc)
      return std::move(crc.error());
    manifest.crc = *crc;
  } else {
    manifest.chunks = static_cast<std::uint32_t>(chunks);
    manifest.crc = crc32(blob);
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
  }
  if (s.ok()) {
    rocksdb::WriteBatch wb;
    // A file replacing a chunked snapshot: its chunks go with the old manifest, atomically.
    if (as_file && had_chunks)
      s = wb.DeleteRange(cf, snapshot_chunk_key::seq_prefix(seq), chunk_range_end(seq));
    if (s.ok())
      s = wb.Put(cf, snapshot_manifest_key{seq}.encode(), manifest.encode());
    if (s.ok())
      s = write(wb, true);
  }
  // On error a new file stays behind as an orphan (for the next prune or open to remove):
  // whether a failed write left its manifest behind cannot be told here.
  if (!s.ok())
    return from_status(s, "write " + name, impl_->dir);
  // The file the old manifest named is no snapshot any more.
  if (had_file)
    impl_->remove_snapshot_file(seq, old_generation);
  impl_->snapshots_written.fetch_add(1, std::memory_order_relaxed);
  return {};
}

caf::expected<std::optional<std::pair<std::uint64_t, std::string>>>
event_store::latest_snapshot() const {
  using result = std::optional<std::pair<std::uint64_t, std::string>>;
  // One iterator for finding and reading: it sees one consistent state, even while pruning.
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  it->SeekForPrev(snapshot_manifest_key{std::numeric_limits<std::uint64_t>::max()}.encode());
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
  if (manifest->storage == snapshot_storage::file)
    return impl_->stream_file(seq, *manifest);
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
    st->hold_whole(std::move(*blob));
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
  auto all = impl_->manifests();
  if (!all)
    return std::move(all.error());
  std::vector<snapshot_info> result;
  result.reserve(all->size());
  for (const auto& [seq, m] : *all)
    result.push_back(snapshot_info{seq, m.bytes, m.storage});
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
  if (all->size() > keep) {
    // The manifests first, in a synced batch: from then on the pruned snapshots do not exist,
    // and a crash before their files are removed leaves orphans, which the next prune or open
    // removes. (Files first would leave, after a crash, a manifest naming a missing file: a
    // snapshot that looks whole and fails when read.)
    auto* cf = impl_->snapshots_cf.get();
    rocksdb::WriteBatch wb;
    rocksdb::Status s;
    for (std::size_t i = 0; s.ok() && i < all->size() - keep; ++i)
      s = wb.Delete(cf, snapshot_manifest_key{(*all)[i].seq}.encode());
    // Every chunk below the oldest snapshot kept (all of them when none is kept): those of
    // the pruned snapshots and any orphaned by a crash during a snapshot write.
    auto end = keep == 0 ? snapshot_chunk_key::upper_bound()
                         : snapshot_chunk_key::seq_prefix((*all)[all->size() - keep].seq);
    if (s.ok())
      s = wb.DeleteRange(cf, snapshot_chunk_key::seq_prefix(0), end);
    if (!s.ok())
      return from_status(s, "prune snapshots", impl_->dir);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = impl_->db->Write(wo, &wb);
    if (!s.ok())
      return from_status(s, "prune snapshots", impl_->dir);
  }
  // The files of the pruned snapshots, and any other file no manifest names.
  return impl_->remove_orphan_files();
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
