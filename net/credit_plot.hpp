#pragma once
/// A plot of an account's credit over time, as the geometry of an inline SVG that the account
/// page's template draws (net/templates/account.mustache). Pure: no clock, no I/O. Every value
/// is a number, a path of numbers and letters, or a date label, so the template inserts them
/// escaped like any other value; the page needs no script and no fetched resource.
///
/// The frame is a viewBox of plot_width × plot_height units drawn at the page's width, so it
/// reads on a phone and on a desktop alike. Days are UTC days.

#include "actors/types.hpp"
#include "actors/user_credit.hpp"

#include <string>
#include <vector>

namespace cobble::net {

inline constexpr double plot_width = 400;
inline constexpr double plot_height = 220;
/// The drawing area inside the frame: room for the y labels on the left and the dates below.
inline constexpr double plot_left = 48;
inline constexpr double plot_right = 392;
inline constexpr double plot_top = 12;
inline constexpr double plot_bottom = 192;

/// A labelled position on an axis (x for dates, y for credit), in frame units.
struct plot_tick {
  double pos = 0;
  std::string label;
  std::string anchor = "middle"; ///< SVG text-anchor: start, middle or end.
};

/// One credited point of the history, as the plot's table shows it.
struct plot_row {
  std::string date;   ///< "3 Oct 2026".
  std::string credit; ///< Granted since the previous point.
  std::string total;  ///< The total at the end of that day.
};

struct credit_plot {
  bool empty = true;   ///< No credit yet: nothing to draw.
  std::string summary; ///< One sentence saying what the plot shows.
  std::string line;    ///< Path data: the total as a step line, from the account's first day.
  std::string area;    ///< Path data: the area under the line.
  std::vector<plot_tick> x_ticks;
  std::vector<plot_tick> y_ticks;
  std::vector<plot_row> rows; ///< Newest first.
};

/// The plot of an account's credit history `days` (user_credit::days), whose total is now
/// `total`, made at `created`, drawn up to `now`.
credit_plot
plot_credit(const std::vector<credit_day>& days, double total, time_us created, time_us now);

/// Round tick values from 0 to at least `hi`: 1, 2 or 5 × 10^k apart, at most `max_ticks`
/// intervals (at least one).
std::vector<double> nice_ticks(double hi, int max_ticks);

/// A credit figure in few characters for an axis: 850, 12.5k, 1.2M, 3.4G.
std::string short_credit(double credit);

/// A UTC day number (day_of()) as "3 Oct 2026".
std::string day_text(std::int64_t day);

} // namespace cobble::net
