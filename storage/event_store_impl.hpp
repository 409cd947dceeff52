#pragma once

/// The insides of event_store (storage/event_store.hpp), shared by the files that implement
/// it; nothing outside storage/ includes this header.
///
/// - storage/event_log.cpp: opening and closing (column families, the secondary instance), the
///   format version, events (append, scan, read), refresh, counters;
/// - storage/snapshots.cpp: the snapshot API, with the manifest as the commit point: write,
///   read, stream, list, prune;
/// - storage/snapshot_chunks.cpp: snapshots as chunks in CF `snapshots` (how older stores hold
///   them: the legacy read path, still writable for the tests and the benchmarks);
/// - storage/snapshot_files.cpp: snapshots as plain files in `<dir>/snapshots/`: write, check,
///   read, map and stream, pin (read-only stores), remove orphans;
/// - storage/snapshot_stream.cpp: the snapshot_stream a caller decodes from.

#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/keys.hpp"
#include "storage/posix_file.hpp"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/status.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cobble::storage {

/// Helpers of the event store's files (not for use outside them).
namespace detail {

/// A RocksDB status as a storage error: "<operation> in <dir>: <RocksDB message>", its code
/// mapped from the status (not found, corruption, invalid argument, I/O).
caf::error
from_status(const rocksdb::Status& s, std::string_view operation, const std::filesystem::path& dir);

/// A problem found by our own checks: "<subject>: <detail> (in <dir>)".
caf::error fail(ec code, const std::string& subject, std::string_view detail,
                const std::filesystem::path& dir);

/// A storage error `cause` (one of storage/posix_file.hpp's) passed on with the subject in front:
/// "<subject>: <cause's context> (in <dir>)", of the cause's code.
caf::error
fail(const caf::error& cause, const std::string& subject, const std::filesystem::path& dir);

/// "event <seq>", as errors name an event.
std::string event_name(std::uint64_t seq);

/// "snapshot <seq>", as errors name a snapshot.
std::string snapshot_name(std::uint64_t seq);

/// The bytes of `x` as RocksDB takes them.
inline rocksdb::Slice as_slice(std::string_view x) {
  return {x.data(), x.size()};
}

/// The bytes RocksDB returned, without a copy.
inline std::string_view as_view(const rocksdb::Slice& x) {
  return {x.data(), x.size()};
}

/// Destroys a column family handle of `db` (before the DB closes: see event_store::impl).
struct cf_deleter {
  rocksdb::DB* db = nullptr; ///< The DB the handle belongs to.
  /// The status is InvalidArgument only for the DB's internal default handle, never ours.
  void operator()(rocksdb::ColumnFamilyHandle* h) const {
    static_cast<void>(db->DestroyColumnFamilyHandle(h));
  }
};

/// An owned column family handle.
using cf_ptr = std::unique_ptr<rocksdb::ColumnFamilyHandle, cf_deleter>;

} // namespace detail

/// The state of one open store and the operations the public methods share. Each group of
/// methods is defined in the file the comment names.
struct event_store::impl {
  std::filesystem::path dir;
  store_options opts;
  std::filesystem::path secondary_dir; ///< Only for read-only stores.
  std::filesystem::path snap_dir;      ///< dir / snapshot_dir_name: the snapshot files.

  // Declaration order matters: the handles are destroyed before the DB.
  std::unique_ptr<rocksdb::DB> db;
  detail::cf_ptr default_cf;
  detail::cf_ptr events_cf;
  detail::cf_ptr snapshots_cf;

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

  impl() = default;
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  /// Syncs the WAL (async mode), destroys the handles, closes the DB, removes secondary_dir.
  ~impl();

  // -- the log (event_log.cpp) ------------------------------------------------

  /// ec::invalid_argument naming `operation` if the store is read-only, else no error.
  caf::error refuse_if_read_only(std::string_view operation) const;

  /// Reads the seq of the newest event from the events CF.
  caf::error load_last_seq();

  /// True when no CF holds any key besides the format version.
  caf::expected<bool> empty() const;

  /// Checks the format version; stamps a new, empty, writable store with ours.
  caf::error check_format();

  /// event_store::check_no_lost_tail().
  caf::error check_no_lost_tail();

  // -- manifests and the choice of store (snapshots.cpp) ------------------------

  /// Options of the iterators that read snapshots: each block is read once, so it would only
  /// push the events' blocks out of the block cache.
  static rocksdb::ReadOptions snapshot_read_options();

  /// Every manifest, by seq (oldest first).
  caf::expected<std::vector<std::pair<std::uint64_t, snapshot_manifest>>> manifests() const;

  /// The manifest of snapshot `seq`, if there is one.
  caf::expected<std::optional<snapshot_manifest>> find_manifest(std::uint64_t seq) const;

  /// Finds the manifest of snapshot `seq` through `it`.
  caf::expected<snapshot_manifest> read_manifest(rocksdb::Iterator& it, std::uint64_t seq) const;

  /// Reads the whole snapshot `seq` through `it`, verifying manifest, chunks or file, size and
  /// crc.
  caf::expected<std::string> load_snapshot(rocksdb::Iterator& it, std::uint64_t seq) const;

  // -- chunked snapshots (snapshot_chunks.cpp) ----------------------------------

  /// Reads the chunks of snapshot `seq` in order through `it`, handing each to
  /// `sink(offset, bytes)`, and verifies them against the manifest: every chunk there, none
  /// beyond, the total size and the CRC-32 (computed as the chunks pass). `sink` returns false
  /// to stop early (an error then, which nobody is meant to read). Defined, and used, in
  /// snapshot_chunks.cpp only.
  template <class Sink>
  caf::error read_chunks(rocksdb::Iterator& it, std::uint64_t seq, const snapshot_manifest& m,
                         Sink&& sink) const;

  /// Reads the whole chunked snapshot `seq` with manifest `m` through `it`, verified.
  caf::expected<std::string>
  load_snapshot_chunks(rocksdb::Iterator& it, std::uint64_t seq, const snapshot_manifest& m) const;

  /// stream_snapshot() of a chunked snapshot whose manifest `m` was read through `it`.
  caf::expected<std::unique_ptr<snapshot_stream>>
  stream_chunks(std::unique_ptr<rocksdb::Iterator> it, std::uint64_t seq,
                const snapshot_manifest& m) const;

  /// Writes `blob` as the chunks of snapshot `seq` (of opts.snapshot_chunk_bytes), each in a
  /// batch of its own without sync, after deleting any chunks left at that seq. The manifest
  /// is the caller's: until it is written, the chunks are no snapshot.
  caf::error write_snapshot_chunks(std::uint64_t seq, std::string_view blob);

  /// Adds the deletion of every chunk of snapshot `seq` to `wb`.
  rocksdb::Status delete_snapshot_chunks(rocksdb::WriteBatch& wb, std::uint64_t seq) const;

  // -- file snapshots (snapshot_files.cpp) --------------------------------------

  /// "snapshots/<file name>", as errors name a snapshot file.
  static std::string file_label(std::uint64_t seq, std::uint64_t generation);

  /// Writes `blob` as the file of snapshot `seq`, generation `gen`: under a temporary name,
  /// synced, renamed into place, the directory synced. Returns the blob's CRC-32 (computed as
  /// the pieces go out, while each is in the cache). On error nothing is left under the final
  /// name that was not there before.
  caf::expected<std::uint32_t>
  write_snapshot_file(std::uint64_t seq, std::uint64_t gen, std::string_view blob);

  /// Removes the file of snapshot `seq`, generation `gen` (best effort: a file left behind is
  /// an orphan, which the next prune removes).
  void remove_snapshot_file(std::uint64_t seq, std::uint64_t gen) const;

  /// Removes every snapshot file and temporary file that no manifest refers to: left by a
  /// crash between a file and its manifest, during a prune, or after a replacement. Only
  /// names this store gives are touched. Best effort: what cannot be removed now is tried
  /// again at the next prune. Only for a writable store, with no snapshot write under way.
  /// Files past the last event of a log with events are kept (the evidence of a lost end of
  /// the log) unless `past_end_too`.
  caf::error remove_orphan_files(bool past_end_too = false) const;

  /// Opens the file of snapshot `seq` (the one the read-only store holds open, if any) and
  /// checks that its size is the manifest's: mapping a file shorter than that would raise
  /// SIGBUS where the file ends.
  caf::expected<unique_fd> open_snapshot_file(std::uint64_t seq, const snapshot_manifest& m) const;

  /// The error of a blob whose CRC-32 is not the manifest's.
  caf::error checksum_mismatch(std::uint64_t seq) const;

  /// Reads the whole file of snapshot `seq`, verifying size and checksum.
  caf::expected<std::string>
  load_snapshot_file(std::uint64_t seq, const snapshot_manifest& m) const;

  /// Read-only stores: holds the snapshot files of the current view open (see `pins`).
  void pin_snapshot_files();

  /// stream_snapshot() of a file snapshot (see storage/snapshot_stream.hpp).
  caf::expected<std::unique_ptr<snapshot_stream>>
  stream_file(std::uint64_t seq, const snapshot_manifest& m) const;
};

} // namespace cobble::storage
