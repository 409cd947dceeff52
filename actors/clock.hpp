#pragma once

/// Policy code reads time only through a clock: the system clock in `cobbled`, a manual
/// (virtual) clock in tests and in `cobble-sim`, so a month of virtual time runs in seconds.

#include "actors/types.hpp"

#include <atomic>
#include <memory>

namespace cobble {

class clock {
public:
  virtual ~clock() = default;
  /// Now, in microseconds since the Unix epoch.
  virtual time_us now() const = 0;
};

using clock_ptr = std::shared_ptr<const clock>;

/// Wall-clock time.
class system_clock final : public clock {
public:
  time_us now() const override;
};

/// Time that moves only when told to (tests, emulator).
class manual_clock final : public clock {
public:
  explicit manual_clock(time_us start = 1'700'000'000LL * us_per_second) : now_(start) {}
  time_us now() const override { return now_.load(); }
  /// Moves time forward.
  void advance(time_us delta) { now_ += delta; }
  /// Sets the time.
  void set(time_us t) { now_ = t; }

private:
  std::atomic<time_us> now_;
};

} // namespace cobble
