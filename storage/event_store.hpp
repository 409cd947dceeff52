#pragma once

/// The durable event log of Cobble on RocksDB (see docs/event-log.md and storage/keys.hpp).
///
/// An event_store owns one RocksDB instance with three column families: `default` (metadata),
/// `events` (one key per event, by Cobble's own u64 sequence number) and `snapshots`
/// (the snapshot manifests, and the chunks of snapshots stored the older way), plus the
/// snapshot files in `<dir>/snapshots/`. It is not an actor: the log actor in actors/
/// owns one and calls it from its own (detached) thread. It is safe to read from other threads
/// while one thread appends (writes are serialized internally as well).
///
/// Errors are `caf::error`s of category "storage" (storage/error.hpp); their context names the
/// directory, the operation and the event or snapshot seq, and RocksDB's message if any.
///
/// The implementation is one file a job: storage/event_store_impl.hpp lists them.

#include "storage/error.hpp"
#include "storage/event_record.hpp"
#include "storage/snapshot_storage.hpp"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::storage {

/// When an append returns: `sync` after the write-ahead log is fsynced, `async` after the
/// write reached the OS (a crash of the machine, not of the process, may lose the tail).
enum class durability { sync, async };

/// One stored snapshot: the state of every actor after applying events 1..seq.
struct snapshot_info {
  std::uint64_t seq = 0;                               ///< The last event the snapshot includes.
  std::uint64_t bytes = 0;                             ///< Size of the blob.
  snapshot_storage storage = snapshot_storage::chunks; ///< Where the blob is.
  /// For messages: its file, relative to the store directory ("snapshots/<name>.snap"), or
  /// "chunks of snapshot <seq>".
  std::string where;
};

/// Counters for /metrics and the benchmarks. `batches` and `syncs` count appends only, so that
/// events_appended / syncs is the group-commit factor; snapshot writes (always synced) are
/// counted in `snapshots_written` alone.
struct store_stats {
  std::uint64_t events_appended = 0;
  std::uint64_t batches = 0;        ///< Successful append() calls, one WriteBatch each.
  std::uint64_t syncs = 0;          ///< Of those, the ones written with sync = true.
  std::uint64_t bytes_appended = 0; ///< Key and value bytes handed to RocksDB by append().
  std::uint64_t snapshots_written = 0;
};

class snapshot_stream; // storage/snapshot_stream.hpp

/// Options for opening a store.
struct store_options {
  durability mode = durability::sync; ///< Whether append() waits for fsync.
  /// Open for the offline tools while the server may run. This is a RocksDB *secondary*
  /// instance (DB::OpenAsSecondary): unlike DB::OpenForReadOnly, which RocksDB 7.8 documents as
  /// undefined behaviour while a writer has the DB open, it is safe next to a running server.
  /// It sees the log as of open() (including writes still only in the WAL); refresh() catches
  /// up. Writes return ec::invalid_argument. The directory must already exist. It holds the
  /// snapshot files of its view open (as RocksDB holds its table files), so a snapshot it
  /// lists stays readable when the server prunes or replaces it meanwhile.
  bool read_only = false;
  bool create_if_missing = true; ///< Create the directory and an empty store if absent.
  /// How write_snapshot() stores new snapshots. Both kinds are always read.
  snapshot_storage snapshots = snapshot_storage::file;
  /// Chunked snapshots are split into chunks this large.
  std::size_t snapshot_chunk_bytes = 4u << 20;
  /// How a damaged write-ahead log is treated at open. By default (false) only a torn last
  /// record (a write cut by a crash) is dropped; damage anywhere before it refuses the open
  /// with ec::corruption, since replaying past it is impossible and stopping there would
  /// silently drop every event acknowledged after it. True replays up to the first damaged
  /// record and drops the rest: the operator's explicit choice (`cobbled --salvage-wal`).
  bool salvage_wal = false;
};

/// One open event log (see the file comment).
class event_store {
public:
  /// Opens (or creates) the store in `dir`. Errors carry the path and RocksDB's message.
  static caf::expected<std::unique_ptr<event_store>>
  open(const std::filesystem::path& dir, store_options opts = {});

  /// Closes the column families and the DB (and, in async mode, syncs the WAL first).
  ~event_store();
  event_store(const event_store&) = delete;
  event_store& operator=(const event_store&) = delete;

  /// Sequence number of the newest event, 0 when empty.
  std::uint64_t last_seq() const;

  /// Assigns sequence numbers last_seq()+1.. to the records (overwriting their `seq`) and
  /// writes them all in one WriteBatch with one sync (in sync mode). On error nothing of the
  /// batch is visible, last_seq() and the records are unchanged; the caller must treat it as
  /// fatal. An empty batch writes nothing.
  caf::error append(std::span<event_record> batch);

  /// Calls `f` for every event with from <= seq <= to, in order, until it returns false.
  /// A record that fails its checksum or does not decode stops the scan with an error that
  /// names its sequence number; so does a gap in the sequence.
  caf::error scan(std::uint64_t from, std::uint64_t to,
                  const std::function<bool(const event_record&)>& f) const;

  /// Reads one event: ec::not_found if absent, ec::corruption if it fails its checksum.
  caf::expected<event_record> read(std::uint64_t seq) const;

  /// Stores a snapshot taken after event `seq`, as `store_options::snapshots` says: a file
  /// (written under a temporary name, synced, renamed into place, the directory synced) or
  /// chunks in batches of their own; then the manifest in a synced batch, which is the commit
  /// point: a snapshot is either whole or absent. Neither holds appends from another thread
  /// behind it. Replacing the snapshot at `seq` is safe: the old one stays readable until the
  /// new manifest is written. Safe to call from another thread than append().
  caf::error write_snapshot(std::uint64_t seq, std::string_view blob);

  /// The newest complete snapshot, if any: its seq and blob. A snapshot whose chunks or file
  /// fail their checks (missing, wrong size, checksum) is an error naming its seq.
  caf::expected<std::optional<std::pair<std::uint64_t, std::string>>> latest_snapshot() const;

  /// Reads the snapshot taken at exactly `seq` (ec::not_found if there is none), verified like
  /// latest_snapshot().
  caf::expected<std::string> read_snapshot(std::uint64_t seq) const;

  /// Starts reading the snapshot taken at exactly `seq` on a thread of its own, so that the
  /// caller can decode the blob while the rest of it is still read (storage/snapshot_stream.hpp).
  /// ec::not_found if there is none, ec::corruption for a malformed manifest or a snapshot file
  /// that is missing or not of the manifest's size; what the chunks or the file hold is
  /// verified while the caller decodes, and snapshot_stream::finish() reports it like
  /// read_snapshot() would. The store must outlive the stream.
  caf::expected<std::unique_ptr<snapshot_stream>> stream_snapshot(std::uint64_t seq) const;

  /// Every complete snapshot (one whose manifest was written), oldest first. Chunks and files
  /// are not verified here; reading the snapshot does that.
  caf::expected<std::vector<snapshot_info>> list_snapshots() const;

  /// Like list_snapshots(), but an empty list on error: prefer list_snapshots().
  std::vector<snapshot_info> snapshots() const;

  /// Deletes all but the newest `keep` snapshots: their manifests first (synced), then their
  /// chunks and files, and any chunks or files no manifest refers to (left by a crash during a
  /// write or a prune). Events are never deleted here.
  caf::error prune_snapshots(std::size_t keep);

  /// Checks that the log still holds every event a snapshot was taken after: a snapshot
  /// (a manifest, or a snapshot file in `<dir>/snapshots/`) at a seq past last_seq() means
  /// events at the end of the log were lost (a damaged write-ahead log recovered up to the
  /// damage). ec::corruption naming the snapshot and the missing range. A read-only store
  /// catches up with the server first (as refresh() does). Checked at start
  /// (actors/node.cpp) and by `cobble log verify`.
  caf::error check_no_lost_tail();

  /// Deletes every snapshot past last_seq() (manifests, chunks, files): what an operator who
  /// salvaged a damaged write-ahead log (store_options::salvage_wal) must do before starting,
  /// as those snapshots hold events the log lost.
  caf::error drop_snapshots_past_end();

  /// Copies the store as it is at this moment into `target`, a directory that must not exist
  /// (storage/checkpoint.cpp): a RocksDB checkpoint (table files hard-linked when `target` is
  /// on the same file system, the rest copied; the write-ahead log up to now included) and the
  /// snapshot files its manifests name (hard-linked, or copied), synced. The copy opens as this
  /// store would have at that moment. Snapshot writes and pruning wait while it runs; appends
  /// do not. On an error `target` is removed. ec::invalid_argument for a read-only store or an
  /// existing `target`; errors name the step and the file.
  caf::error checkpoint(const std::filesystem::path& target) const;

  /// For a read-only store: catches up with the writer (new events and snapshots become
  /// visible, last_seq() advances). A no-op for a writable store.
  caf::error refresh();

  /// Counters since open.
  store_stats stats() const;

  /// The directory the store lives in.
  const std::filesystem::path& path() const;

private:
  friend class snapshot_stream;
  struct impl;
  explicit event_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace cobble::storage
