// Tests of net/metrics: the rate meter behind the status page's RPCs per second.

#include "net/metrics.hpp"

#include <catch2/catch.hpp>

using cobble::net::rate_meter;

TEST_CASE("the rate meter averages the past minute's whole seconds", "[metrics]") {
  rate_meter m;
  CHECK(m.per_second(1000) == 0);
  for (int s = 940; s < 1000; ++s)
    for (int k = 0; k < 3; ++k)
      m.add(s);
  m.add(1000); // the second under way is not counted yet
  CHECK(m.per_second(1000) == Approx(3));
  CHECK(m.per_second(1000, 10) == Approx(3));
  CHECK(m.per_second(1001) == Approx((59 * 3 + 1) / 60.0));
  // A minute later the old seconds have dropped out, though their slots were not reused.
  CHECK(m.per_second(1100) == 0);
}

TEST_CASE("a reused slot forgets the second it held", "[metrics]") {
  rate_meter m;
  m.add(5);
  m.add(5);
  m.add(5 + 64); // the same slot, a later second
  CHECK(m.per_second(6 + 64, 1) == Approx(1));
  CHECK(m.per_second(6, 1) == 0); // second 5 is gone from the ring
}
