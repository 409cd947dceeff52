#include "net/credit_plot.hpp"

#include "net/number_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

namespace cobble::net {

namespace {

constexpr std::array<const char*, 12> months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
/// The shortest span the plot shows, in days: a new account's first day is not a sliver.
constexpr std::int64_t min_span_days = 7;

std::chrono::year_month_day date_of(std::int64_t day) {
  return std::chrono::year_month_day{std::chrono::sys_days{std::chrono::days{day}}};
}

/// "3 Oct", or "Oct 2026" when the plot spans more than a year.
std::string axis_date(std::int64_t day, bool long_span) {
  auto d = date_of(day);
  auto month = months.at(static_cast<unsigned>(d.month()) - 1);
  return long_span ? fmt::format("{} {}", month, static_cast<int>(d.year()))
                   : fmt::format("{} {}", static_cast<unsigned>(d.day()), month);
}

/// A coordinate as the path data writes it; NaN and infinities never reach the markup.
std::string coord(double x) {
  if (!std::isfinite(x))
    x = 0;
  return fmt::format("{:.1f}", x);
}

} // namespace

std::string day_text(std::int64_t day) {
  auto d = date_of(day);
  return fmt::format("{} {} {}", static_cast<unsigned>(d.day()),
                     months.at(static_cast<unsigned>(d.month()) - 1), static_cast<int>(d.year()));
}

std::vector<double> nice_ticks(double hi, int max_ticks) {
  max_ticks = std::max(max_ticks, 1);
  if (!std::isfinite(hi) || hi <= 0)
    hi = 1;
  auto rough = hi / max_ticks;
  auto magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= rough) {
      step = m * magnitude;
      break;
    }
  std::vector<double> out;
  for (int i = 0; i <= max_ticks + 1; ++i) {
    out.push_back(step * i);
    if (step * i >= hi)
      break;
  }
  return out;
}

std::string short_credit(double credit) {
  struct unit {
    double size;
    const char* suffix;
  };
  for (auto u : {unit{1e12, "T"}, unit{1e9, "G"}, unit{1e6, "M"}, unit{1e3, "k"}})
    if (credit >= u.size) {
      auto x = credit / u.size;
      bool tenths = x < 100 && std::round(x * 10) != std::round(x) * 10;
      return tenths ? fmt::format("{:.1f}{}", x, u.suffix) : fmt::format("{:.0f}{}", x, u.suffix);
    }
  return credit > 0 && credit < 10 && std::round(credit) != credit ? fmt::format("{:.1f}", credit)
                                                                   : fmt::format("{:.0f}", credit);
}

credit_plot
plot_credit(const std::vector<credit_day>& days, double total, time_us created, time_us now) {
  credit_plot out;
  if (days.empty() || !(total > 0))
    return out;
  out.empty = false;
  // The total at the end of each point's day: the current total minus every later grant.
  std::vector<double> totals(days.size());
  double later = 0;
  for (std::size_t i = days.size(); i-- > 0;) {
    totals[i] = std::max(0.0, total - later);
    later += days[i].credit;
  }
  // Credit older than the history (none, usually; the points are floats, so a rounding
  // difference is not credit).
  double before = total - later;
  if (before < 1e-5 * total)
    before = 0;

  auto first = std::min<std::int64_t>(day_of(created), days.front().day);
  auto last = std::max<std::int64_t>(day_of(now), days.back().day) + 1; // the end of today
  first = std::min(first, last - min_span_days);
  auto span = static_cast<double>(last - first);
  auto x_of = [&](std::int64_t day) {
    return plot_left + (plot_right - plot_left) * static_cast<double>(day - first) / span;
  };

  auto ticks = nice_ticks(total, 4);
  auto top = ticks.back();
  auto y_of = [&](double credit) {
    return plot_bottom - (plot_bottom - plot_top) * std::clamp(credit / top, 0.0, 1.0);
  };
  for (auto t : ticks)
    out.y_ticks.push_back({y_of(t), short_credit(t), "end"});

  // A step line: flat between credited days, up on each.
  out.line = fmt::format("M{} {}", coord(x_of(first)), coord(y_of(before)));
  for (std::size_t i = 0; i < days.size(); ++i) {
    auto x = coord(x_of(days[i].day));
    out.line += fmt::format("H{}V{}", x, coord(y_of(totals[i])));
  }
  out.line += fmt::format("H{}", coord(x_of(last)));
  out.area = fmt::format("{}V{}H{}Z", out.line, coord(plot_bottom), coord(x_of(first)));

  bool long_span = last - first > 366;
  constexpr int labels = 4;
  for (int k = 0; k < labels; ++k) {
    auto day = first + (last - 1 - first) * k / (labels - 1);
    const char* anchor = k == 0 ? "start" : k == labels - 1 ? "end" : "middle";
    auto pos = k == labels - 1 ? plot_right : x_of(day);
    if (k == 0)
      pos = plot_left;
    out.x_ticks.push_back({pos, axis_date(day, long_span), anchor});
  }

  out.summary = fmt::format("Total credit over time: {} on {} (UTC)", credit_text(total),
                            day_text(days.back().day));
  if (days.size() > 1 || before > 0)
    out.summary = fmt::format("Total credit rose from {} on {} to {} on {} (UTC)",
                              credit_text(totals.front()), day_text(days.front().day),
                              credit_text(total), day_text(days.back().day));
  for (std::size_t i = days.size(); i-- > 0;)
    out.rows.push_back(
      {day_text(days[i].day), credit_text(days[i].credit), credit_text(totals[i])});
  return out;
}

} // namespace cobble::net
