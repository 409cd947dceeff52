#pragma once

// Test support: runs a program (cobbled, cobble, boinc) as a child process, reads its output
// line by line with a deadline (poll, never sleep), and stops it with a signal.

#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

namespace cobble::test {

/// A child process with stdout (and stderr, merged) on a pipe.
class child_process {
public:
  /// Starts `argv[0]` with the arguments; throws std::runtime_error on failure.
  explicit child_process(std::vector<std::string> argv, bool merge_stderr = true);
  ~child_process(); ///< Kills (SIGKILL) and reaps the child if it still runs.
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// The next output line, or nullopt when the deadline passes or the output ends.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

  /// Reads lines until one contains `needle`; returns it, or nullopt at the deadline.
  std::optional<std::string> wait_for(const std::string& needle,
                                      std::chrono::milliseconds timeout);

  /// Every line read so far.
  const std::vector<std::string>& lines() const { return lines_; }

  /// Sends a signal.
  void signal(int sig);

  /// Waits for the child to exit (up to timeout); its exit code, 128+signal, or nullopt.
  std::optional<int> wait(std::chrono::milliseconds timeout);

  int pid() const { return pid_; }

private:
  int pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
  std::vector<std::string> lines_;
  bool reaped_ = false;
  int status_ = 0;
};

/// Runs a command to completion (up to timeout), returns {exit code, output}.
std::pair<int, std::string> run_command(std::vector<std::string> argv,
                                        std::chrono::milliseconds timeout);

} // namespace cobble::test
