#include "actors/clock.hpp"

#include <chrono>
#include <vector>

namespace cobble {

time_us wall_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

// -- system_clock ---------------------------------------------------------------

system_clock::system_clock() : thread_([this] { run(); }) {}

system_clock::~system_clock() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

time_us system_clock::now() const {
  return wall_now();
}

void system_clock::schedule(time_us delay, std::function<void()> fn) const {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    timers_.emplace(wall_now() + std::max<time_us>(delay, 0), std::move(fn));
  }
  cv_.notify_all();
}

void system_clock::run() {
  std::unique_lock<std::mutex> lock{mtx_};
  while (!stop_) {
    if (timers_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto due = timers_.begin()->first;
    auto now = wall_now();
    if (due > now) {
      cv_.wait_for(lock, std::chrono::microseconds(due - now));
      continue;
    }
    auto fn = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    lock.unlock();
    fn();
    lock.lock();
  }
}

// -- manual_clock ---------------------------------------------------------------

void manual_clock::schedule(time_us delay, std::function<void()> fn) const {
  std::lock_guard<std::mutex> guard{mtx_};
  timers_.emplace(now_.load() + std::max<time_us>(delay, 0), std::move(fn));
}

void manual_clock::advance(time_us delta) {
  now_ += delta;
  fire();
}

void manual_clock::set(time_us t) {
  now_ = t;
  fire();
}

std::size_t manual_clock::pending() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return timers_.size();
}

void manual_clock::fire() {
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (timers_.empty() || timers_.begin()->first > now_.load())
        return;
      fn = std::move(timers_.begin()->second);
      timers_.erase(timers_.begin());
    }
    fn(); // may schedule more timers (not due before now + their delay)
  }
}

} // namespace cobble
