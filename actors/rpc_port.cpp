#include "actors/rpc_port.hpp"

#include <utility>

namespace cobble {

rpc_token parked_rpcs::park(continuation k) {
  std::lock_guard lock{mtx_};
  auto token = next_++;
  parked_.emplace(token, std::move(k));
  return token;
}

void parked_rpcs::answer(rpc_token token, std::shared_ptr<const sched_reply> reply) {
  continuation k;
  {
    std::lock_guard lock{mtx_};
    auto i = parked_.find(token);
    if (i == parked_.end())
      return;
    k = std::move(i->second);
    parked_.erase(i);
  }
  k(std::move(reply)); // outside the lock: the continuation may take its time
}

void parked_rpcs::cancel(rpc_token token) {
  std::lock_guard lock{mtx_};
  parked_.erase(token);
}

std::size_t parked_rpcs::waiting() const {
  std::lock_guard lock{mtx_};
  return parked_.size();
}

} // namespace cobble
