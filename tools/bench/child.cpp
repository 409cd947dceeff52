#include "child.hpp"

#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cobble::bench {

using clock_type = std::chrono::steady_clock;

child::child(std::vector<std::string> argv) {
  // Made before fork: between fork and exec the child of a threaded process may only call
  // async-signal-safe functions (no malloc).
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0)
    throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // A benchmark killed by Ctrl-C or a timeout must not leave servers behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  fd_ = fds[0];
}

child::~child() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
  if (fd_ >= 0)
    close(fd_);
}

bool child::read_some(int timeout_ms) {
  if (fd_ < 0)
    return false;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0)
    return false;
  char buf[4096];
  auto n = ::read(fd_, buf, sizeof buf);
  if (n <= 0) {
    close(fd_);
    fd_ = -1;
    if (!buffer_.empty())
      lines_.push_back(std::move(buffer_));
    buffer_.clear();
    return false;
  }
  buffer_.append(buf, static_cast<std::size_t>(n));
  std::size_t nl;
  while ((nl = buffer_.find('\n')) != std::string::npos) {
    lines_.push_back(buffer_.substr(0, nl));
    buffer_.erase(0, nl + 1);
  }
  return true;
}

std::optional<std::string>
child::wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  std::size_t checked = 0;
  for (;;) {
    for (; checked < lines_.size(); ++checked)
      if (lines_[checked].find(needle) != std::string::npos)
        return lines_[checked];
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left.count() <= 0 || fd_ < 0)
      return std::nullopt;
    read_some(static_cast<int>(left.count()));
  }
}

void child::drain() {
  while (read_some(0)) {
  }
}

void child::signal(int sig) {
  if (!reaped_)
    ::kill(pid_, sig);
}

std::optional<int> child::wait(std::chrono::milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  while (!reaped_) {
    auto r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      break;
    }
    if (clock_type::now() >= deadline)
      return std::nullopt;
    // Drain the output meanwhile, so a chatty child never blocks on a full pipe.
    if (!read_some(10))
      usleep(10000);
  }
  drain();
  if (WIFEXITED(status_))
    return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_))
    return 128 + WTERMSIG(status_);
  return -1;
}

std::pair<int, std::string>
run_command(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  child c{std::move(argv)};
  auto code = c.wait(timeout);
  std::string out;
  for (const auto& l : c.lines())
    out += l + '\n';
  if (!code) {
    c.signal(SIGKILL);
    return {-1, out + "(timed out)\n"};
  }
  return {*code, out};
}

std::uint64_t resident_bytes(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream ss{line.substr(6)};
      std::uint64_t kb = 0;
      ss >> kb;
      return kb * 1024;
    }
  return 0;
}

double cpu_seconds(int pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string text;
  std::getline(in, text);
  auto close_paren = text.rfind(')');
  if (close_paren == std::string::npos)
    return 0;
  std::istringstream ss{text.substr(close_paren + 2)};
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Fields after the command: state(3) ... utime(14) stime(15).
  for (int i = 3; i <= 15 && ss >> field; ++i) {
    if (i == 14)
      utime = std::stoull(field);
    if (i == 15)
      stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

} // namespace cobble::bench
