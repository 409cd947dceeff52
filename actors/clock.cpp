#include "actors/clock.hpp"

#include <chrono>

namespace cobble {

time_us system_clock::now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace cobble
