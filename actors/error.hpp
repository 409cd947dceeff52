#pragma once

/// The one error enum of Cobble's actors (storage has its own, see storage/error.hpp).

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include <cstdint>
#include <string>

namespace cobble {

enum class ec : std::uint8_t {
  unspecified = 1,
  unknown_project, ///< No project with that name.
  unknown_account, ///< Authenticator matches no user.
  unknown_host,    ///< Host id not registered (or registered to another user).
  unknown_app,     ///< App name not in the project.
  unknown_workunit,
  invalid_argument, ///< A request field is missing or out of range.
  duplicate,        ///< A name that must be unique is taken.
  storage_failure,  ///< The event log failed; the process stops (fail-stop).
  corrupt_log,      ///< An event or snapshot cannot be decoded.
  unauthorized,
  unknown_sequence, ///< No work sequence with that name or id.
  conflict,         ///< The entity's state forbids it (e.g. extending an ended sequence).
};

/// A short name of the code.
const char* to_string(ec x);

/// True when `e` carries code `x` of Cobble's category.
bool is(const caf::error& e, ec x);

/// Renders any error readably without an actor system (CLI, logs, HTTP bodies).
std::string describe(const caf::error& e);

/// describe() as a sentence for people: capital first letter, full stop (web pages, web RPC
/// error messages).
std::string describe_sentence(const caf::error& e);

} // namespace cobble

// CAF 0.17.6: the two-argument form lives under this name (see caf/error.hpp).
CAF_ERROR_CODE_ENUM_2(cobble::ec, "cobble")
