#pragma once

/// One event as the log stores it: the type the key layout (storage/keys.hpp) encodes and the
/// event store (storage/event_store.hpp) appends and scans. A header of its own, so that the
/// layout module does not depend on the store.

#include <cstdint>
#include <string>

namespace cobble::storage {

/// One event as the log stores it. The payload is opaque here: its first byte is the payload
/// format version, and actors/events.hpp decodes it.
struct event_record {
  std::uint64_t seq = 0;        ///< Cobble's own sequence number, strictly increasing from 1.
  std::int64_t time_us = 0;     ///< When the decision was made (microseconds since the epoch).
  std::uint16_t kind = 0;       ///< Event kind (actors/events.hpp).
  std::uint8_t entity_kind = 0; ///< Kind of the entity the event is about.
  std::uint16_t project = 0;    ///< Project index the entity belongs to.
  std::uint64_t entity_id = 0;  ///< Id of the entity within its kind and project.
  std::string payload;          ///< Versioned payload bytes.

  friend bool operator==(const event_record&, const event_record&) = default;
};

} // namespace cobble::storage
