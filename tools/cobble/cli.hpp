#pragma once

/// What every part of `cobble` shares: the exit codes, the two errors a command throws, and
/// the options that come before the command (docs/cli.md).

#include <stdexcept>
#include <string>

namespace cobble::cli {

/// The command did what was asked.
constexpr int exit_ok = 0;
/// The command failed: the server refused or could not be reached, a corrupt log, a mismatch.
constexpr int exit_failure = 1;
/// The command was called wrongly.
constexpr int exit_usage = 2;

/// A mistake in how the command was called: printed, exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The command failed: printed, exit code 1.
struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Options every command shares.
struct global_options {
  /// --server (or COBBLE_SERVER); empty: the URL in <data_dir>/admin_url, else the default
  /// (tools/common/admin_url.hpp).
  std::string server;
  std::string token;
  std::string data_dir;
  std::string project;
  bool json = false;
  double timeout = 30; ///< Seconds, per HTTP request.
};

} // namespace cobble::cli
