// The clocks: timers of the manual clock run when time is advanced past them, in order;
// the system clock runs its timers on its own thread.

#include "actors/clock.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <vector>

using namespace cobble;

TEST_CASE("a manual clock runs due timers in time order when advanced", "[clock]") {
  manual_clock clk{1000};
  std::vector<int> fired;
  clk.schedule(10, [&] { fired.push_back(10); });
  clk.schedule(5, [&] { fired.push_back(5); });
  clk.schedule(7, [&] {
    fired.push_back(7);
    // A timer set from a timer starts from the time it was set.
    clk.schedule(2, [&] { fired.push_back(9); });
  });
  CHECK(clk.pending() == 3);
  clk.advance(4);
  CHECK(fired.empty());
  clk.advance(4); // now 1008: 5 and 7 are due, and the 9 set by 7 is not (1008 + 2)
  CHECK(fired == std::vector<int>{5, 7});
  clk.advance(10);
  CHECK(fired == std::vector<int>{5, 7, 10, 9});
  CHECK(clk.pending() == 0);
  CHECK(clk.now() == 1018);
}

TEST_CASE("the system clock runs timers on its own thread", "[clock]") {
  system_clock clk;
  std::promise<time_us> done;
  auto start = clk.now();
  clk.schedule(1000, [&] { done.set_value(clk.now()); });
  auto f = done.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(f.get() - start >= 1000);
}
