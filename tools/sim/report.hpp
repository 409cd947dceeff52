#pragma once

/// What `cobble-sim run` shows: the figures as a text table, and the self-contained HTML
/// report (`--report out.html`) with inline SVG charts.

#include "tools/sim/emulator.hpp"

#include <string>

namespace cobble::sim {

/// The figures table (overall and per resource type, then deadlines per project).
std::string figures_table(const run_result& r);

/// The HTML page: a timeline per device instance of the first host, each project's share of
/// each resource over time against its resource share, the first host's debts over time,
/// and the figures table. No external resource: styles and SVG are inline.
std::string html_report(const run_result& r, const std::string& title);

} // namespace cobble::sim
