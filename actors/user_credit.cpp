#include "actors/user_credit.hpp"

#include <algorithm>

namespace cobble {

namespace {

void add_to_history(std::vector<credit_day>& days, double granted, time_us t) {
  auto day = static_cast<std::int32_t>(day_of(t));
  // A clock stepped back adds to the newest point: the history stays in day order.
  if (!days.empty() && day <= days.back().day) {
    days.back().credit += static_cast<float>(granted);
    return;
  }
  days.push_back({day, static_cast<float>(granted)});
  if (days.size() <= credit_days_kept)
    return;
  // Merge every other point between the first and the newest credit_days_daily into its
  // successor: the successor's total stays exact, the spacing of old points doubles.
  auto older = days.size() - credit_days_daily; // points 1 .. older-1 may merge
  std::vector<credit_day> kept;
  kept.reserve(credit_days_kept);
  kept.push_back(days.front());
  float carry = 0;
  for (std::size_t i = 1; i < older; ++i) {
    if (i % 2 == 1) {
      carry += days[i].credit;
      continue;
    }
    kept.push_back({days[i].day, days[i].credit + carry});
    carry = 0;
  }
  for (std::size_t i = older; i < days.size(); ++i) {
    kept.push_back({days[i].day, days[i].credit + carry});
    carry = 0;
  }
  days = std::move(kept);
}

} // namespace

void record_grant(user_credit& c, std::uint32_t app, double granted, time_us t, double half_life) {
  auto i = std::lower_bound(c.apps.begin(), c.apps.end(), app,
                            [](const app_credit& a, std::uint32_t id) { return a.app < id; });
  if (i == c.apps.end() || i->app != app)
    i = c.apps.insert(i, app_credit{app});
  ++i->jobs;
  i->credit.add(granted, t, half_life);
  add_to_history(c.days, granted, t);
}

const app_credit* credit_of_app(const user_credit& c, std::uint32_t app) {
  auto i = std::lower_bound(c.apps.begin(), c.apps.end(), app,
                            [](const app_credit& a, std::uint32_t id) { return a.app < id; });
  return i == c.apps.end() || i->app != app ? nullptr : &*i;
}

std::size_t heap_bytes(const user_credit& c) {
  return sizeof(user_credit) + c.apps.capacity() * sizeof(app_credit)
         + c.days.capacity() * sizeof(credit_day);
}

} // namespace cobble
