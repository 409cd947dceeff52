/// Tests of actors/user_credit: an account's credit per app and its bounded history per UTC
/// day, as the account page shows them, and as apply(project_state&) derives them from
/// validations (so that replay makes the same).

#include "actors/state.hpp"
#include "actors/user_credit.hpp"

#include <catch2/catch.hpp>

#include <numeric>

using namespace cobble;

namespace {

constexpr time_us day_us = 86400LL * us_per_second;
constexpr time_us t0 = 20000 * day_us; // a UTC midnight (2024-10-04)
constexpr double half_life = 7 * 86400;

double history_sum(const user_credit& c) {
  return std::accumulate(c.days.begin(), c.days.end(), 0.0,
                         [](double s, const credit_day& d) { return s + d.credit; });
}

} // namespace

TEST_CASE("grants on one day make one point, the next day another", "[user_credit]") {
  user_credit c;
  record_grant(c, 1, 10, t0 + 3600 * us_per_second, half_life);
  record_grant(c, 1, 5, t0 + 20LL * 3600 * us_per_second, half_life);
  REQUIRE(c.days.size() == 1);
  CHECK(c.days[0].day == 20000);
  CHECK(c.days[0].credit == 15);
  record_grant(c, 1, 2, t0 + day_us + 1, half_life);
  REQUIRE(c.days.size() == 2);
  CHECK(c.days[1].day == 20001);
  CHECK(c.days[1].credit == 2);
}

TEST_CASE("a clock stepped back adds to the newest day", "[user_credit]") {
  user_credit c;
  record_grant(c, 1, 1, t0 + 2 * day_us, half_life);
  record_grant(c, 1, 4, t0, half_life);
  REQUIRE(c.days.size() == 1);
  CHECK(c.days[0].day == 20002);
  CHECK(c.days[0].credit == 5);
}

TEST_CASE("the history keeps the first day and the newest days daily, and its sum",
          "[user_credit]") {
  user_credit c;
  double total = 0;
  for (int d = 0; d < 1000; ++d) {
    record_grant(c, 1, 1 + d % 7, t0 + d * day_us, half_life);
    total += 1 + d % 7;
    REQUIRE(c.days.size() <= credit_days_kept);
  }
  CHECK(c.days.front().day == 20000);
  CHECK(c.days.back().day == 20999);
  // The newest credit_days_daily points are one per day.
  for (std::size_t i = c.days.size() - credit_days_daily; i < c.days.size(); ++i)
    CHECK(c.days[i].day == 20999 - static_cast<std::int32_t>(c.days.size() - 1 - i));
  // In day order, and nothing lost: the points sum to the total.
  for (std::size_t i = 1; i < c.days.size(); ++i)
    CHECK(c.days[i - 1].day < c.days[i].day);
  CHECK(history_sum(c) == Approx(total));
  CHECK(c.apps.at(0).credit.total == Approx(total));
  CHECK(c.apps.at(0).jobs == 1000);
}

TEST_CASE("credit per app adds up to the account's", "[user_credit]") {
  user_credit c;
  record_grant(c, 3, 10, t0, half_life);
  record_grant(c, 1, 1, t0, half_life);
  record_grant(c, 3, 5, t0 + day_us, half_life);
  REQUIRE(c.apps.size() == 2);
  CHECK(c.apps[0].app == 1); // by app id
  CHECK(c.apps[1].app == 3);
  CHECK(c.apps[1].jobs == 2);
  CHECK(c.apps[1].credit.total == 15);
  CHECK(credit_of_app(c, 1)->credit.total == 1);
  CHECK(credit_of_app(c, 2) == nullptr);
  CHECK(history_sum(c) == 16);
}

TEST_CASE("validations give an account its credit per app and per day, in snapshots too",
          "[user_credit]") {
  world w;
  w.projects.resize(1);
  auto& s = w.projects[0].project;
  for (std::uint32_t id : {1, 2}) {
    app_rec a;
    a.id = id;
    a.name = "app" + std::to_string(id);
    s.apps.push_back(a);
  }
  auto make = [](payload data, time_us t) {
    event e;
    e.time = t;
    e.data = std::move(data);
    return e;
  };
  apply(s, make(ev::user_created{1, "ann", "ann@example.org", "k1"}, t0));
  apply(s, make(ev::user_created{2, "bob", "bob@example.org", "k2"}, t0));
  apply(s, make(ev::host_registered{1, 1, {}}, t0));
  apply(s, make(ev::host_registered{2, 2, {}}, t0));
  apply(s, make(ev::workunit_created{1, "w1", 1, {}, 2, "t"}, t0));
  apply(s, make(ev::workunit_created{2, "w2", 2, {}, 2, "t"}, t0));
  auto grant = [&](id_type wu, time_us t) {
    ev::workunit_validated v;
    v.wu = wu;
    v.verdicts = {verdict{0, true, 1}, verdict{1, true, 2}};
    v.credit.resize(2);
    v.credit[0].granted = 10;
    v.credit[1].granted = 10;
    v.canonical = 0;
    apply(s, make(v, t));
  };
  grant(1, t0 + 1);
  grant(2, t0 + day_us + 1);
  const auto& ann = s.users.at(1);
  REQUIRE(ann.credit_detail);
  CHECK(ann.credit_detail->apps.size() == 2);
  CHECK(ann.credit_detail->days.size() == 2);
  CHECK(ann.credit.total == 20);
  CHECK(history_sum(*ann.credit_detail) == 20);

  // Through a snapshot, bit for bit.
  auto back = decode_snapshot(encode_snapshot(w));
  REQUIRE(back);
  CHECK(back->projects.at(0).project.users.at(1) == ann);
}
