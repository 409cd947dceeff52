#pragma once

/// The one error enum of the storage layer (the actors have their own, see actors/error.hpp).
///
/// Every storage error is a `caf::error` in category "storage" whose context is one string
/// naming what failed, e.g. `make_error(ec::corruption, "event 42: checksum mismatch")`.
/// `describe` renders it without an actor system, for the CLI and for logs.

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp> // CAF_ERROR_CODE_ENUM needs make_message
#include <caf/message.hpp>

#include <cstdint>
#include <string>

namespace cobble::storage {

/// What went wrong in the storage layer. 0 is reserved by CAF for "no error".
enum class ec : std::uint8_t {
  unspecified = 1,    ///< Anything that fits no other code.
  io_error,           ///< The disk or the file system failed (RocksDB IOError and friends).
  corruption,         ///< Stored bytes fail a checksum, do not decode, or a seq/chunk is missing.
  not_found,          ///< The requested event or snapshot does not exist.
  invalid_argument,   ///< The caller asked for something impossible (e.g. a write when read-only).
  unsupported_format, ///< The data directory was written by an unknown format version.
};

/// A short name of the code, e.g. "corruption".
const char* to_string(ec x);

/// Builds a storage error whose context is the single string `what`.
caf::error make_error(ec code, std::string what);

/// The context of `e` as describe() renders it, without the category and the code: the `what`
/// of make_error(), for a caller that puts its own subject in front of an error it passes on
/// (e.g. "snapshot 7: " before "write /data/x.tmp: No space left on device"). Empty when `e` has
/// no context.
std::string context_of(const caf::error& e);

/// Renders an error readably without an actor system: "storage corruption: event 42: checksum
/// mismatch". Errors of other categories are rendered as "<category> <code>: <context>".
std::string describe(const caf::error& e);

} // namespace cobble::storage

CAF_ERROR_CODE_ENUM(cobble::storage::ec, "storage")
