#pragma once

/// Long-term debt per resource type (001): how many instance-seconds each project is owed.
/// It grows with the project's resource share and shrinks as the project uses the resource.
/// The overall debt, which orders projects for work fetch and scheduling, is the sum of the
/// per-resource debts weighted by each resource's speed relative to the CPU.

#include "tools/client/types.hpp"

#include <vector>

namespace cobble::client {

/// True when `p` accrues debt for resource `r` at `now` (see debt_eligibility).
bool debt_eligible(const project& p, int r, double now, const settings& s);

/// Adjusts resource `r`'s long-term debts for `dt` seconds in which each project used
/// `project_rsc::secs_this_period` instance-seconds of it, then zeroes those counters:
///  1. each debt-eligible project: debt += dt * ninstances * share / (eligible shares) - used;
///  2. an offset on the eligible projects makes the net change zero;
///  3. an offset on the eligible projects makes their maximum debt zero (a project attached
///     later starts debt-free); an ineligible project keeps its debt, capped at zero.
void update_ltd(std::vector<project>& ps, int r, const resource& res, double dt, double now,
                const settings& s);

/// Recomputes every project's overall_debt from its per-resource debts.
void update_overall_debts(std::vector<project>& ps, const std::vector<resource>& rs);

} // namespace cobble::client
