#include "tools/client/backoff.hpp"

#include <algorithm>

namespace cobble::client {

void backoff::no_work(double now, double min_interval, double max_interval) {
  interval_ = interval_ <= 0 ? min_interval : std::min(interval_ * 2, max_interval);
  interval_ = std::min(interval_, max_interval);
  until_ = now + interval_;
}

} // namespace cobble::client
