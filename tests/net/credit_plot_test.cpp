/// Tests of net/credit_plot: the geometry of the account page's plot of credit over time. What
/// a volunteer would notice: a line that rises on the days credit was granted, from the day
/// they joined to today, inside the frame, with round numbers and dates that do not overlap.

#include "net/credit_plot.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <vector>

using namespace cobble;
using namespace cobble::net;

namespace {

constexpr time_us day_us = 86400LL * us_per_second;
constexpr std::int32_t d0 = 20000; // 4 Oct 2024

/// The numbers of a path, in order (its letters dropped).
std::vector<double> numbers_of(const std::string& path) {
  std::vector<double> out;
  const char* p = path.c_str();
  while (*p != 0) {
    if ((*p >= '0' && *p <= '9') || *p == '-' || *p == '.') {
      char* end = nullptr;
      out.push_back(std::strtod(p, &end));
      p = end;
    } else {
      ++p;
    }
  }
  return out;
}

} // namespace

TEST_CASE("no credit yet: no plot", "[credit_plot]") {
  CHECK(plot_credit({}, 0, d0 * day_us, (d0 + 3) * day_us).empty);
  CHECK(plot_credit({{d0, 0}}, 0, d0 * day_us, (d0 + 3) * day_us).empty);
}

TEST_CASE("ticks are round numbers that cover the range", "[credit_plot]") {
  CHECK(nice_ticks(95, 4) == std::vector<double>{0, 50, 100});
  CHECK(nice_ticks(100, 4) == std::vector<double>{0, 50, 100});
  CHECK(nice_ticks(12345, 4) == std::vector<double>{0, 5000, 10000, 15000});
  CHECK(nice_ticks(0, 4) == std::vector<double>{0, 0.5, 1});
  for (double hi : {0.3, 1.0, 7.0, 99.0, 1234.0, 9.9e6, 3.3e9}) {
    auto t = nice_ticks(hi, 4);
    CHECK(t.front() == 0);
    CHECK(t.back() >= hi);
    CHECK(t.size() <= 6);
  }
  CHECK(short_credit(850) == "850");
  CHECK(short_credit(12500) == "12.5k");
  CHECK(short_credit(15000) == "15k");
  CHECK(short_credit(1.2e6) == "1.2M");
  CHECK(short_credit(3.4e9) == "3.4G");
  CHECK(short_credit(0.5) == "0.5");
  CHECK(day_text(d0) == "4 Oct 2024");
}

TEST_CASE("the line steps up on each credited day, from joining to today", "[credit_plot]") {
  std::vector<credit_day> days{{d0 + 1, 10}, {d0 + 3, 30}};
  auto p = plot_credit(days, 40, d0 * day_us, (d0 + 9) * day_us + 5);
  REQUIRE_FALSE(p.empty);
  CHECK(p.summary == "Total credit rose from 10.00 on 5 Oct 2024 to 40.00 on 7 Oct 2024 (UTC)");
  auto n = numbers_of(p.line);
  // M x0 y0, then H x V y per point, then H to the end of today.
  REQUIRE(n.size() == 2 + 2 * days.size() + 1);
  CHECK(n[0] == plot_left);
  CHECK(n[1] == plot_bottom); // nothing before the first grant
  CHECK(n[2] > n[0]);
  CHECK(n[3] < n[1]); // up on the first day
  CHECK(n[4] > n[2]); // later
  CHECK(n[5] < n[3]); // up again
  CHECK(n.back() == plot_right);
  // The y axis reaches the total with a round number: 0, 10, ..., 40 (or 0, 20, 40).
  REQUIRE(p.y_ticks.size() >= 3);
  CHECK(p.y_ticks.front().label == "0");
  CHECK(p.y_ticks.back().label == "40");
  CHECK(n[5] == Approx(plot_top)); // the total is the top tick
  // The table, newest first.
  REQUIRE(p.rows.size() == 2);
  CHECK(p.rows[0].date == "7 Oct 2024");
  CHECK(p.rows[0].total == "40.00");
  CHECK(p.rows[1].credit == "10.00");
}

TEST_CASE("long and one-day histories fit the frame, their dates apart", "[credit_plot]") {
  user_credit c;
  for (int d = 0; d < 900; ++d)
    record_grant(c, 1, 1000 + d, (d0 + d) * day_us, 7 * 86400);
  double total = c.apps.at(0).credit.total;
  for (const auto& [days, created, now] :
       {std::tuple{c.days, (d0 - 30) * day_us, (d0 + 950) * day_us},
        std::tuple{std::vector<credit_day>{{d0, 5}}, d0 * day_us, d0 * day_us + 1}}) {
    auto p = plot_credit(days, days.size() == 1 ? 5 : total, created, now);
    REQUIRE_FALSE(p.empty);
    auto n = numbers_of(p.area);
    for (std::size_t i = 0; i < n.size(); ++i) {
      CHECK(n[i] >= 0);
      CHECK(n[i] <= plot_width);
    }
    REQUIRE(p.x_ticks.size() == 4);
    CHECK(p.x_ticks.front().anchor == "start");
    CHECK(p.x_ticks.back().anchor == "end");
    // About 7 units a character at 13 units: labels of at most 8 characters need 56 apart.
    for (std::size_t i = 1; i < p.x_ticks.size(); ++i) {
      CHECK(p.x_ticks[i].label.size() <= 8);
      CHECK(p.x_ticks[i].pos - p.x_ticks[i - 1].pos >= 56);
    }
  }
  // More than a year: month and year.
  auto p = plot_credit(c.days, total, d0 * day_us, (d0 + 950) * day_us);
  CHECK(p.x_ticks.front().label == "Oct 2024");
}
