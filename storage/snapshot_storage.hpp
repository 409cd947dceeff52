#pragma once

/// Where a snapshot's blob is kept: the kind a snapshot manifest records (storage/keys.hpp)
/// and the store reports and is told to write (storage/event_store.hpp). A header of its own,
/// so that the layout module does not depend on the store.

#include <cstdint>

namespace cobble::storage {

/// Where a snapshot's blob is kept.
enum class snapshot_storage : std::uint8_t {
  /// Chunks of `store_options::snapshot_chunk_bytes` in the `snapshots` column family (how
  /// every snapshot was stored before file snapshots; still read).
  chunks,
  /// One plain file in `<dir>/snapshots/`, read through a memory mapping: no decompression,
  /// no copy, no RocksDB block buffers.
  file,
};

} // namespace cobble::storage
