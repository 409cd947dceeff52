// When the snapshotter takes a snapshot: after enough events or time, and never so often that
// snapshots take more than their share of the time.

#include "actors/log.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace cobble;
using namespace std::chrono_literals;

namespace {

log_options options(std::uint64_t every, std::chrono::seconds interval, double share) {
  log_options o;
  o.snapshot_every_events = every;
  o.snapshot_interval = interval;
  o.snapshot_time_share = share;
  return o;
}

} // namespace

TEST_CASE("a snapshot is due after enough events or enough time", "[log]") {
  auto o = options(1000, 300s, 0.1);
  // Nothing new: never, however long ago the last one was.
  CHECK_FALSE(snapshot_due(o, 0, 3600s, 0s));
  // Before either trigger.
  CHECK_FALSE(snapshot_due(o, 999, 299s, 0s));
  // The event trigger, the time trigger.
  CHECK(snapshot_due(o, 1000, 1s, 0s));
  CHECK(snapshot_due(o, 1, 300s, 0s));
}

TEST_CASE("snapshots take at most their share of the time", "[log]") {
  auto o = options(1000, 300s, 0.1);
  // The last snapshot took 2 s: at a 10 % share the next waits 18 s after it ended, even
  // with many more events than snapshot_every_events.
  CHECK_FALSE(snapshot_due(o, 1'000'000, 17s, 2s));
  CHECK(snapshot_due(o, 1'000'000, 18s, 2s));
  // A larger state (a snapshot of 30 s) waits longer; the time trigger waits as well.
  CHECK_FALSE(snapshot_due(o, 1'000'000, 269s, 30s));
  CHECK_FALSE(snapshot_due(o, 5, 269s, 30s));
  CHECK(snapshot_due(o, 5, 300s, 30s));
  // A share of 1 puts no wait on top of the triggers.
  auto all = options(1000, 300s, 1.0);
  CHECK(snapshot_due(all, 1000, 0s, 30s));
  CHECK_FALSE(snapshot_due(all, 999, 1s, 30s));
  // A smaller share waits longer: 1 % after a 1 s snapshot is 99 s.
  auto small = options(1000, 300s, 0.01);
  CHECK_FALSE(snapshot_due(small, 5000, 98s, 1s));
  CHECK(snapshot_due(small, 5000, 99s, 1s));
}
