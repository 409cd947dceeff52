#pragma once

/// The durable event log of Cobble on RocksDB (see docs/event-log.md and storage/keys.hpp).
///
/// An event_store owns one RocksDB instance with three column families: `default` (metadata),
/// `events` (one key per event, by Cobble's own u64 sequence number) and `snapshots`
/// (chunked snapshot blobs with a manifest). It is not an actor: the log actor in actors/
/// owns one and calls it from its own (detached) thread. It is safe to read from other threads
/// while one thread appends.

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

/// One event as the log stores it. The payload is opaque here: its first byte is the payload
/// format version, and actors/events.hpp decodes it.
struct event_record {
  std::uint64_t seq = 0;      ///< Cobble's own sequence number, strictly increasing from 1.
  std::int64_t time_us = 0;   ///< When the decision was made (microseconds since the epoch).
  std::uint16_t kind = 0;     ///< Event kind (actors/events.hpp).
  std::uint8_t entity_kind = 0; ///< Kind of the entity the event is about.
  std::uint16_t project = 0;  ///< Project index the entity belongs to.
  std::uint64_t entity_id = 0;  ///< Id of the entity within its kind and project.
  std::string payload;        ///< Versioned payload bytes.

  friend bool operator==(const event_record&, const event_record&) = default;
};

/// One stored snapshot: the state of every actor after applying events 1..seq.
struct snapshot_info {
  std::uint64_t seq = 0;
  std::uint64_t bytes = 0;
};

/// Counters for /metrics and the benchmarks.
struct store_stats {
  std::uint64_t events_appended = 0;
  std::uint64_t batches = 0;  ///< One WriteBatch each.
  std::uint64_t syncs = 0;    ///< Batches written with sync = true.
  std::uint64_t bytes_appended = 0;
  std::uint64_t snapshots_written = 0;
};

/// Options for opening a store.
struct store_options {
  durability mode = durability::sync;
  bool read_only = false;      ///< Open for the offline tools while the server may run.
  bool create_if_missing = true;
  std::size_t snapshot_chunk_bytes = 4u << 20; ///< Snapshots are split into chunks this large.
};

class event_store {
public:
  /// Opens (or creates) the store in `dir`. Errors carry the path and RocksDB's message.
  static caf::expected<std::unique_ptr<event_store>> open(const std::filesystem::path& dir,
                                                          store_options opts = {});

  ~event_store();
  event_store(const event_store&) = delete;
  event_store& operator=(const event_store&) = delete;

  /// Sequence number of the newest event, 0 when empty.
  std::uint64_t last_seq() const;

  /// Assigns sequence numbers last_seq()+1.. to the records (overwriting their `seq`) and
  /// writes them all in one WriteBatch with one sync (in sync mode). On error nothing of the
  /// batch is visible and last_seq() is unchanged; the caller must treat it as fatal.
  caf::error append(std::span<event_record> batch);

  /// Calls `f` for every event with from <= seq <= to, in order, until it returns false.
  /// A record that fails its checksum or does not decode stops the scan with an error that
  /// names its sequence number; so does a gap in the sequence.
  caf::error scan(std::uint64_t from, std::uint64_t to,
                  const std::function<bool(const event_record&)>& f) const;

  /// Reads one event.
  caf::expected<event_record> read(std::uint64_t seq) const;

  /// Stores a snapshot taken after event `seq` (chunked; the manifest is written last, in the
  /// same WriteBatch, so a snapshot is either whole or absent). Always synced.
  caf::error write_snapshot(std::uint64_t seq, std::string_view blob);

  /// The newest complete snapshot, if any: its seq and blob. A snapshot whose chunks fail
  /// their checksum is an error naming its seq.
  caf::expected<std::optional<std::pair<std::uint64_t, std::string>>> latest_snapshot() const;

  /// Reads the snapshot taken at exactly `seq`.
  caf::expected<std::string> read_snapshot(std::uint64_t seq) const;

  /// Every complete snapshot, oldest first.
  std::vector<snapshot_info> snapshots() const;

  /// Deletes all but the newest `keep` snapshots. Events are never deleted here.
  caf::error prune_snapshots(std::size_t keep);

  /// Counters since open.
  store_stats stats() const;

  /// The directory the store lives in.
  const std::filesystem::path& path() const;

private:
  struct impl;
  explicit event_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace cobble::storage
