#pragma once

/// cobble-bench: a child process (cobbled, cobble) with its stdout and stderr on one pipe,
/// read line by line with a deadline, signalled and reaped by pid.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace cobble::bench {

class child {
public:
  /// Starts argv[0] (searched in PATH when it has no '/'); throws std::runtime_error.
  explicit child(std::vector<std::string> argv);
  ~child(); ///< SIGKILLs and reaps the child if it still runs.
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  /// Reads lines until one contains `needle`; returns it, or nullopt at the deadline or at
  /// the end of the output.
  std::optional<std::string> wait_for(const std::string& needle, std::chrono::milliseconds timeout);
  /// Reads whatever output is there without waiting.
  void drain();
  /// Every line read so far.
  const std::vector<std::string>& lines() const { return lines_; }
  void signal(int sig);
  /// Exit code, 128 + signal, or nullopt when it did not end in time.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  int pid() const { return pid_; }

private:
  bool read_some(int timeout_ms);
  int pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string buffer_;
  std::vector<std::string> lines_;
};

/// Runs a command to completion; {exit code (or 128 + signal), output}.
std::pair<int, std::string>
run_command(std::vector<std::string> argv, std::chrono::milliseconds timeout);

/// Resident set size (VmRSS) of a process in bytes, 0 if unknown.
std::uint64_t resident_bytes(int pid);

/// CPU time (user + system) a process has used so far, in seconds; 0 if unknown.
double cpu_seconds(int pid);

} // namespace cobble::bench
