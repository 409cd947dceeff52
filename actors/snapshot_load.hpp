#pragma once

/// Loading a snapshot into a `world`, with the store reading the blob on one core while this
/// thread decodes it on another (storage/snapshot_stream.hpp). Recovery (`recover` in
/// actors/log.hpp) loads its snapshot this way; `decode_snapshot(std::string_view)` in
/// actors/state.hpp is the same decoding over a blob already in memory. Both are defined in
/// actors/world.cpp, with the rest of the snapshot codec.

#include "actors/state.hpp"

#include <caf/expected.hpp>

#include <cstdint>
#include <optional>

namespace cobble::storage {
class event_store;
class reader;
} // namespace cobble::storage

namespace cobble {

/// Decodes a snapshot (its format byte first) from `r`, which must hold exactly one snapshot
/// of the current format: nullopt when it does not, or when it is malformed.
std::optional<world> decode_snapshot(storage::reader& r);

/// Loads the snapshot at `seq` from `store`, reading and decoding in parallel. The value is
/// nullopt when the snapshot has an older format (the caller falls back to an older snapshot
/// or to the events). Errors: the store's (ec::corruption naming the snapshot and what is
/// wrong, e.g. a checksum mismatch: a snapshot that fails its checks is never returned, even
/// though its decoding started before the check) and ec::corrupt_log when a snapshot that
/// passes the checks does not decode.
caf::expected<std::optional<world>>
load_snapshot(const storage::event_store& store, std::uint64_t seq);

} // namespace cobble
