#pragma once

/// Policy code reads time and sets timers only through a clock: the system clock in
/// `cobbled`, a manual (virtual) clock in tests and in `cobble-sim`, so a month of virtual
/// time runs in seconds and tests never sleep.

#include "actors/types.hpp"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace cobble {

class clock {
public:
  virtual ~clock() = default;
  /// Now, in microseconds since the Unix epoch.
  virtual time_us now() const = 0;
  /// Calls `fn` once `delay` has passed on this clock. `fn` must be short and must not block:
  /// it typically sends a message to an actor. It runs on the clock's timer thread (system
  /// clock) or inside `advance` (manual clock).
  virtual void schedule(time_us delay, std::function<void()> fn) const = 0;
};

using clock_ptr = std::shared_ptr<const clock>;

/// The wall clock now, in microseconds since the Unix epoch: for code outside policy (the
/// web edge's sessions and password counters) that has no clock of its own.
time_us wall_now();

/// Wall-clock time; timers run on one thread of their own.
class system_clock final : public clock {
public:
  system_clock();
  ~system_clock() override; ///< Stops the timer thread; pending timers are dropped.
  time_us now() const override;
  void schedule(time_us delay, std::function<void()> fn) const override;

private:
  void run();
  mutable std::mutex mtx_;
  mutable std::condition_variable cv_;
  mutable std::multimap<time_us, std::function<void()>> timers_;
  bool stop_ = false;
  std::thread thread_;
};

/// Time that moves only when told to (tests, emulator). Advancing it runs every timer that
/// falls due, in time order, on the calling thread.
class manual_clock final : public clock {
public:
  explicit manual_clock(time_us start = 1'700'000'000LL * us_per_second) : now_(start) {}
  time_us now() const override { return now_.load(); }
  void schedule(time_us delay, std::function<void()> fn) const override;
  /// Moves time forward and runs the timers due by then.
  void advance(time_us delta);
  /// Sets the time (forward or back) and runs the timers due by then.
  void set(time_us t);
  /// Timers not yet due.
  std::size_t pending() const;

private:
  void fire();
  std::atomic<time_us> now_;
  mutable std::mutex mtx_;
  mutable std::multimap<time_us, std::function<void()>> timers_;
};

} // namespace cobble
