#pragma once

// Test support: runs a program (cobbled, cobble, boinc) as a child process, reads its output
// line by line with a deadline (poll, never sleep), and stops it with a signal.

#include <chrono>
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cobble::test {

#ifdef COBBLE_BINARY_DIR
/// A program of the build tree: program("tools/cobbled").
inline std::string program(const std::string& relative) {
  return std::string{COBBLE_BINARY_DIR} + "/" + relative;
}
#endif

/// How to start a child beyond its argv (the defaults are the plain constructor's behaviour).
struct spawn_options {
  bool merge_stderr = true;
  /// Environment variables removed in the child (e.g. http_proxy for a BOINC client).
  std::vector<std::string> unset_env;
  /// Environment variables set in the child.
  std::vector<std::pair<std::string, std::string>> set_env;
  /// Working directory of the child; empty: the test's.
  std::filesystem::path cwd;
  /// Starts the child as the leader of a new process group, and signals the whole group
  /// (signal(), the destructor), so grandchildren (a BOINC client's apps) go with it.
  bool own_process_group = false;
  /// The child gets SIGKILL when the test process dies, even by SIGKILL (a CTest timeout),
  /// where no destructor runs (Linux PR_SET_PDEATHSIG).
  bool die_with_parent = false;
};

/// A child process with stdout (and stderr, merged) on a pipe.
class child_process {
public:
  /// Starts `argv[0]` with the arguments; throws std::runtime_error on failure.
  explicit child_process(std::vector<std::string> argv, bool merge_stderr = true);
  /// Starts `argv[0]` as `options` say; throws std::runtime_error on failure.
  child_process(std::vector<std::string> argv, const spawn_options& options);
  ~child_process(); ///< Kills (SIGKILL) and reaps the child if it still runs.
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// The next output line, or nullopt when the deadline passes or the output ends.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

  /// Reads lines until one contains `needle`; returns it, or nullopt at the deadline.
  std::optional<std::string> wait_for(const std::string& needle, std::chrono::milliseconds timeout);

  /// Every line read so far.
  const std::vector<std::string>& lines() const { return lines_; }

  /// Reads whatever output is available now, without waiting, into lines(); returns the
  /// number of complete lines added. A last line without a newline is kept at end of output.
  std::size_t drain();

  /// True while the output pipe is open (the child, or a process it started, may still write).
  bool output_open() const { return fd_ >= 0; }

  /// The read end of the output pipe, -1 once closed (for poll() over several children).
  int output_fd() const { return fd_; }

  /// Sends a signal (to the process group when started with own_process_group).
  void signal(int sig);

  /// Waits for the child to exit (up to timeout); its exit code, 128+signal, or nullopt.
  std::optional<int> wait(std::chrono::milliseconds timeout);

  int pid() const { return pid_; }

private:
  void start(std::vector<std::string> argv, const spawn_options& options);

  int pid_ = -1;
  int fd_ = -1;
  bool group_ = false;
  std::string buffer_;
  std::vector<std::string> lines_;
  bool reaped_ = false;
  int status_ = 0;
};

/// Waits up to `timeout` (poll() on the children's pipes, never sleep) until any of them has
/// output, then drains every child that has some. Returns the number of new lines. With no
/// open pipe it returns 0 at once.
std::size_t
pump_output(const std::vector<child_process*>& children, std::chrono::milliseconds timeout);

/// Runs a command to completion (up to timeout), returns {exit code, output}.
std::pair<int, std::string>
run_command(std::vector<std::string> argv, std::chrono::milliseconds timeout);

} // namespace cobble::test
