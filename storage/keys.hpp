#pragma once

/// The RocksDB layout of Cobble's event log: every key and every value the storage layer writes.
/// This module is the single source of truth for it; nothing else builds keys or values by hand.
///
/// Rules:
/// - Every key starts with a one-byte `key_prefix`, so a column family may hold several kinds
///   of keys and a future kind never collides with an old one.
/// - Every integer is fixed-width big-endian, so RocksDB's bytewise order is numeric order
///   (event 255 sorts before event 256).
/// - Decoders check the exact length and the prefix and return std::nullopt on any mismatch;
///   they never read past their input.
///
/// Column families and keys:
///
/// | CF          | key                                            | value                      |
/// |-------------|------------------------------------------------|----------------------------|
/// | `default`   | format_version: [0x01]                         | [BE u32 format version]    |
/// | `events`    | event: [0x10][BE u64 seq]                      | event value (below)        |
/// | `snapshots` | snapshot chunk: [0x20][BE u64 seq][BE u32 idx] | raw bytes of chunk idx     |
/// | `snapshots` | snapshot manifest: [0x21][BE u64 seq]          | manifest value (below)     |
///
/// Snapshots written by this build are plain files next to the column families:
/// `<store dir>/snapshots/<seq, 20 digits>-<generation>.snap` (snapshot_file_name()), holding
/// the blob as it is; only their manifest is in RocksDB. Older stores hold chunked snapshots
/// (the chunk keys above), which are still read.
///
/// Event value (record format version 1, 26-byte header then the payload):
///   [u8 record format version = 1][BE i64 time_us][BE u16 kind][u8 entity_kind]
///   [BE u16 project][BE u64 entity_id][BE u32 crc32 of payload][payload bytes]
/// The seq is not repeated in the value: it is the key.
///
/// Snapshot manifest value, one of:
///   version 1, a chunked snapshot (17 bytes):
///     [u8 manifest version = 1][BE u32 chunk count][BE u64 total bytes][BE u32 crc32 of blob]
///   version 2, a file snapshot (21 bytes):
///     [u8 manifest version = 2][BE u64 total bytes][BE u32 crc32 of blob][BE u64 generation]
/// The manifest is written last, in a synced batch, after the chunks' own batches or after the
/// file was synced and renamed into place, so a snapshot is either whole (manifest present,
/// chunks 0..count-1 or its file present) or absent; chunks or files without a manifest (a
/// crash during the write) are ignored and pruned. The generation tells the files of the same
/// seq apart: rewriting a snapshot writes a new file and switches the manifest to it, so the
/// old one stays intact until the new one is committed.
///
/// Checksums are CRC-32 (the IEEE 802.3 polynomial, reflected, initial and final XOR all ones:
/// the CRC of "123456789" is 0xcbf43926), computed with ISA-L's crc32_gzip_refl() (libisal), which
/// gives the same values as zlib's crc32().

#include "storage/event_record.hpp"
#include "storage/snapshot_storage.hpp"

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cobble::storage {

// -- layout constants ---------------------------------------------------------

/// Version of the whole on-disk layout, stored under `format_version_key`. A store refuses to
/// open a directory with any other version.
inline constexpr std::uint32_t current_format_version = 1;

/// Name of the column family of metadata (the format version).
inline constexpr const char* default_cf_name = "default";
/// Column family of the events, one key per event.
inline constexpr const char* events_cf_name = "events";
/// Column family of the snapshot chunks and manifests.
inline constexpr const char* snapshots_cf_name = "snapshots";
/// Directory of the snapshot files, inside the store directory.
inline constexpr const char* snapshot_dir_name = "snapshots";
/// Every snapshot file name ends so; a file being written has ".tmp" after it.
inline constexpr const char* snapshot_file_suffix = ".snap";
/// The seq in a snapshot file name has this many digits (zero-padded: names sort by seq).
inline constexpr std::size_t snapshot_file_seq_digits = 20;

/// The first byte of every key. Values are never reused, even if a key kind is retired.
enum class key_prefix : std::uint8_t {
  format_version = 0x01,    ///< CF default: the layout version.
  event = 0x10,             ///< CF events: one event.
  snapshot_chunk = 0x20,    ///< CF snapshots: one chunk of a snapshot blob.
  snapshot_manifest = 0x21, ///< CF snapshots: the manifest that makes a snapshot whole.
};

/// CRC-32 of `bytes` (see the file comment), used for event payloads and snapshot blobs.
std::uint32_t crc32(std::string_view bytes);

/// Continues a CRC-32: crc32_update(crc32(a), b) == crc32(a + b), and crc32_update(0, b) ==
/// crc32(b). For checking a blob read in pieces.
std::uint32_t crc32_update(std::uint32_t crc, std::string_view bytes);

// -- keys ---------------------------------------------------------------------

/// Key of the layout version in CF `default`: just the prefix byte.
struct format_version_key {
  /// Encoded length.
  static constexpr std::size_t size = 1;
  /// The encoded key.
  static std::string encode();
  /// True when `key` is exactly this key.
  static bool matches(std::string_view key);
};

/// Key of one event in CF `events`: [prefix][BE u64 seq].
struct event_key {
  /// Encoded length.
  static constexpr std::size_t size = 9;
  std::uint64_t seq = 0; ///< Cobble's sequence number of the event.

  /// The encoded key.
  std::string encode() const;
  /// Parses a key; nullopt unless it has exactly the right length and prefix.
  static std::optional<event_key> decode(std::string_view key);
};

/// Key of one chunk of a snapshot in CF `snapshots`: [prefix][BE u64 seq][BE u32 chunk].
struct snapshot_chunk_key {
  /// Encoded length.
  static constexpr std::size_t size = 13;
  std::uint64_t seq = 0;   ///< The seq the snapshot was taken at.
  std::uint32_t chunk = 0; ///< Index of the chunk, 0-based.

  /// The encoded key.
  std::string encode() const;
  /// The first 9 bytes shared by every chunk key of snapshot `seq`: seeking there finds chunk 0.
  static std::string seq_prefix(std::uint64_t seq);
  /// A key above every chunk key (the next prefix byte): the end of a range over all chunks.
  static std::string upper_bound();
  /// Parses a key; nullopt unless it has exactly the right length and prefix.
  static std::optional<snapshot_chunk_key> decode(std::string_view key);
};

/// Key of the manifest of a snapshot in CF `snapshots`: [prefix][BE u64 seq].
struct snapshot_manifest_key {
  /// Encoded length.
  static constexpr std::size_t size = 9;
  std::uint64_t seq = 0; ///< The seq the snapshot was taken at.

  /// The encoded key.
  std::string encode() const;
  /// Parses a key; nullopt unless it has exactly the right length and prefix.
  static std::optional<snapshot_manifest_key> decode(std::string_view key);
};

// -- values -------------------------------------------------------------------

/// Value under `format_version_key`: [BE u32 version].
struct format_version_value {
  /// Encoded length.
  static constexpr std::size_t size = 4;
  /// The encoded value.
  static std::string encode(std::uint32_t version);
  /// Parses a value; nullopt unless it is exactly 4 bytes.
  static std::optional<std::uint32_t> decode(std::string_view value);
};

/// Value under `snapshot_manifest_key`: what a complete snapshot consists of.
struct snapshot_manifest {
  /// Version byte of a chunked snapshot's manifest (the only one before file snapshots).
  static constexpr std::uint8_t version = 1;
  /// Encoded length of a chunked snapshot's manifest.
  static constexpr std::size_t size = 17;
  /// Version byte of a file snapshot's manifest.
  static constexpr std::uint8_t file_version = 2;
  /// Encoded length of a file snapshot's manifest.
  static constexpr std::size_t file_size = 21;
  std::uint32_t chunks = 0; ///< Chunked: number of chunks, indices 0..chunks-1. File: 0.
  std::uint64_t bytes = 0;  ///< Length of the whole blob.
  std::uint32_t crc = 0;    ///< crc32() of the whole blob.
  snapshot_storage storage = snapshot_storage::chunks; ///< Where the blob is.
  std::uint64_t generation = 0; ///< File: which file of the seq (snapshot_file_name()).

  /// The encoded value (version 1 for chunks, 2 for a file).
  std::string encode() const;
  /// Parses a value; nullopt on a wrong length or an unknown version.
  static std::optional<snapshot_manifest> decode(std::string_view value);

  friend bool operator==(const snapshot_manifest&, const snapshot_manifest&) = default;
};

/// Which snapshot file a name denotes.
struct snapshot_file_id {
  std::uint64_t seq = 0;        ///< The seq the snapshot was taken at.
  std::uint64_t generation = 0; ///< The manifest's generation.

  friend bool operator==(const snapshot_file_id&, const snapshot_file_id&) = default;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>.
  friend auto operator<=>(const snapshot_file_id&, const snapshot_file_id&) = default;
};

/// Name of a snapshot file in the snapshot directory, e.g. "00000000000000001234-0.snap".
std::string snapshot_file_name(std::uint64_t seq, std::uint64_t generation);

/// Parses a name snapshot_file_name() gives; nullopt for any other name (".tmp" files too).
std::optional<snapshot_file_id> parse_snapshot_file_name(std::string_view name);

/// Why an event value failed to decode; the storage layer turns it into a corruption error.
enum class event_value_error : std::uint8_t {
  none,              ///< Decoded fine.
  truncated,         ///< Shorter than the fixed header.
  unknown_version,   ///< The record format version byte is not one this build knows.
  checksum_mismatch, ///< The payload does not match its stored crc32.
};

/// A short description of `x`, e.g. "checksum mismatch".
const char* to_string(event_value_error x);

/// The value of one event in CF `events` (layout in the file comment).
struct event_value {
  /// The record format version this build writes and reads.
  static constexpr std::uint8_t version = 1;
  /// Length of the fixed header in front of the payload.
  static constexpr std::size_t header_size = 26;

  /// Encodes everything of `x` except its seq (which is the key) into a value.
  static std::string encode(const event_record& x);
  /// Decodes a value read under the key of event `seq`. On failure returns nullopt and, if
  /// `why` is given, stores the reason there.
  static std::optional<event_record>
  decode(std::uint64_t seq, std::string_view value, event_value_error* why = nullptr);
  /// Like decode(), into `out`, whose payload keeps its capacity (a scan decodes every event
  /// into one record: no allocation per event). On failure `out` is unspecified.
  static event_value_error decode_into(std::uint64_t seq, std::string_view value, event_record& x);
};

} // namespace cobble::storage
