#pragma once

/// What the volunteer site shows of an account's credit beyond its totals (snapshot 16): credit
/// per app (BOINC's credit_user table, which grant_credit_by_app fills) and a history of credit
/// per UTC day for the account page's plot. Both are derived from workunit_validated in
/// apply(project_state&), so replay makes them again and no event carries them.
///
/// The history is bounded: at most credit_days_kept points. The first credited day and the
/// newest days stay one point per credited day; older points are merged into their successors,
/// so the spacing grows towards the past and the points always span the whole account. The
/// credit of a point is what was granted since the previous point, so the total at a point is
/// the account's total minus the credit of every later point.

#include "actors/credit.hpp"
#include "actors/types.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cobble {

/// One app's share of an account's credit.
struct app_credit {
  std::uint32_t app = 0;
  std::uint64_t jobs = 0; ///< Results granted credit.
  credit_totals credit{};
  friend bool operator==(const app_credit&, const app_credit&) = default;
};

template <class F>
void inspect_fields(F& f, app_credit& x) {
  f(x.app, x.jobs, x.credit);
}

/// Credit granted on UTC day `day` (day_of()) and on the days since the previous point.
struct credit_day {
  std::int32_t day = 0;
  float credit = 0; ///< For the plot: a float halves the history's memory.
  friend bool operator==(const credit_day&, const credit_day&) = default;
};

template <class F>
void inspect_fields(F& f, credit_day& x) {
  f(x.day, x.credit);
}

/// An account's credit per app (by app id) and its history.
struct user_credit {
  std::vector<app_credit> apps;
  std::vector<credit_day> days;
  friend bool operator==(const user_credit&, const user_credit&) = default;
};

template <class F>
void inspect_fields(F& f, user_credit& x) {
  f(x.apps, x.days);
}

/// The history's bound. Fixed, not configured: replay must merge points as the live server did.
inline constexpr std::size_t credit_days_kept = 64;
/// The newest points that stay one per credited day when older ones are merged.
inline constexpr std::size_t credit_days_daily = 32;

/// Records `granted` credit for `app` at `t`.
void record_grant(user_credit& c, std::uint32_t app, double granted, time_us t, double half_life);

/// The per-app entry of `app`, or null.
const app_credit* credit_of_app(const user_credit& c, std::uint32_t app);

/// Bytes the detail holds on the heap (for memory gauges).
std::size_t heap_bytes(const user_credit& c);

} // namespace cobble
