#pragma once

/// The cross-project aggregator of the credit design: the server hosts several projects; this
/// actor periodically collects each one's per-app-version export (and what each imported from
/// other servers), computes per plan class the scale factor of apps that have both CPU and GPU
/// versions, weighted by recent average credit, and hands the table to every project, which
/// applies it to its GPU-only apps at its next normalization (recorded in credit_normalized).
/// It keeps no durable state of its own: its inputs are in the projects' logs.

#include "actors/actors.hpp"
#include "actors/clock.hpp"

#include <caf/actor_system.hpp>

#include <vector>

namespace cobble {

/// Spawns the aggregator over these projects; it collects every `interval` seconds.
aggregator_actor spawn_aggregator(caf::actor_system& sys, std::vector<project_actor> projects,
                                  clock_ptr clk, double interval);

} // namespace cobble
