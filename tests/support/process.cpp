#include "process.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cobble::test {

child_process::child_process(std::vector<std::string> argv, bool merge_stderr) {
  spawn_options options;
  options.merge_stderr = merge_stderr;
  start(std::move(argv), options);
}

child_process::child_process(std::vector<std::string> argv, const spawn_options& options) {
  start(std::move(argv), options);
}

void child_process::start(std::vector<std::string> argv, const spawn_options& options) {
  // Everything the child needs is made here, before fork: between fork and exec the child of
  // a threaded process may only call async-signal-safe functions (no malloc, no setenv).
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry{*e};
    auto name = entry.substr(0, entry.find('='));
    bool replaced = std::any_of(options.unset_env.begin(), options.unset_env.end(),
                                [&](const std::string& n) { return n == name; })
                    || std::any_of(options.set_env.begin(), options.set_env.end(),
                                   [&](const auto& kv) { return kv.first == name; });
    if (!replaced)
      env_text.emplace_back(entry);
  }
  for (const auto& [name, value] : options.set_env)
    env_text.push_back(std::string{name}.append("=").append(value));
  std::vector<char*> env;
  env.reserve(env_text.size() + 1);
  for (auto& e : env_text)
    env.push_back(e.data());
  env.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0)
    throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    if (options.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) // the parent died before prctl
        _exit(127);
    }
    if (options.own_process_group)
      setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    if (options.merge_stderr)
      dup2(fds[1], STDERR_FILENO);
    // The test process may block signals; the child must not inherit that.
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0)
      _exit(127);
    execvpe(args[0], args.data(), env.data());
    _exit(127);
  }
  if (options.own_process_group) {
    setpgid(pid_, pid_); // also in the parent: no race with signal() right after the fork
    group_ = true;
  }
  close(fds[1]);
  fd_ = fds[0];
}

child_process::~child_process() {
  if (group_ && pid_ > 0)
    kill(-pid_, SIGKILL); // the group outlives its reaped leader while members remain
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
  if (fd_ >= 0)
    close(fd_);
}

std::optional<std::string> child_process::read_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      auto line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      lines_.push_back(line);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fd_ < 0)
      return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0)
      return std::nullopt;
    char buf[4096];
    auto n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) {
      close(fd_);
      fd_ = -1;
      if (!buffer_.empty()) {
        auto line = std::move(buffer_);
        buffer_.clear();
        lines_.push_back(line);
        return line;
      }
      return std::nullopt;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<std::string>
child_process::wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return std::nullopt;
    auto line = read_line(left);
    if (!line)
      return std::nullopt;
    if (line->find(needle) != std::string::npos)
      return line;
  }
}

std::size_t child_process::drain() {
  std::size_t added = 0;
  while (fd_ >= 0) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0)
      break;
    char buf[4096];
    auto n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) {
      close(fd_);
      fd_ = -1;
      break;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
  for (auto nl = buffer_.find('\n'); nl != std::string::npos; nl = buffer_.find('\n')) {
    lines_.push_back(buffer_.substr(0, nl));
    buffer_.erase(0, nl + 1);
    ++added;
  }
  if (fd_ < 0 && !buffer_.empty()) {
    lines_.push_back(std::move(buffer_));
    buffer_.clear();
    ++added;
  }
  return added;
}

void child_process::signal(int sig) {
  if (group_ && pid_ > 0)
    kill(-pid_, sig);
  else if (!reaped_ && pid_ > 0)
    kill(pid_, sig);
}

std::optional<int> child_process::wait(std::chrono::milliseconds timeout) {
  if (reaped_)
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto r = waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    // Drain output while waiting so the child never blocks on a full pipe.
    if (!read_line(std::chrono::milliseconds(20)))
      std::this_thread::yield();
  }
}

std::size_t
pump_output(const std::vector<child_process*>& children, std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  for (auto* c : children)
    if (c != nullptr && c->output_fd() >= 0)
      fds.push_back(pollfd{c->output_fd(), POLLIN, 0});
  if (fds.empty())
    return 0;
  if (poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0)
    return 0;
  std::size_t added = 0;
  for (auto* c : children)
    if (c != nullptr)
      added += c->drain();
  return added;
}

std::pair<int, std::string>
run_command(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  child_process p{std::move(argv)};
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    auto line = p.read_line(left);
    if (!line)
      break;
    out += *line + "\n";
  }
  auto code = p.wait(std::chrono::milliseconds(5000));
  return {code.value_or(-1), out};
}

} // namespace cobble::test
