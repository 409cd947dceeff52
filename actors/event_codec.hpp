#pragma once

/// Events to and from the log's records: the payload's format version first, then its fields
/// in `inspect_fields` order (storage/codec.hpp). Every older version of a payload decodes.

#include "actors/events.hpp"
#include "storage/event_record.hpp"

#include <optional>

namespace cobble {

/// Encodes an event into a log record (seq is copied; the log assigns it on append).
storage::event_record to_record(const event& e);

/// Decodes a log record; nullopt when the kind is unknown or the payload does not decode.
std::optional<event> from_record(const storage::event_record& r);

} // namespace cobble
