#pragma once

/// The work-fetch decision of 001: after a round-robin simulation, look for a project to ask
/// in this order, coprocessors before the CPU at each step (coprocessors are faster):
///  1. major shortfall: the resource will have an idle instance before CI; ask the
///     greatest-overall-debt project not backed off for it (even an overworked one), and ask
///     only for that resource;
///  2. minor shortfall: an idle instance between CI and CI + AW; the greatest-overall-debt
///     project not backed off and not overworked;
///  3. starved project: not overworked, not backed off for the resource, no runnable job for
///     any resource; the one with the greatest overall debt.
/// Between projects of equal overall debt, the one asked for the resource longest ago wins
/// (so that equal projects take turns instead of the first one always winning).
/// Cases 2 and 3 ask for every resource type with a shortfall (even one the project is
/// backed off for). The request carries seconds and instances per resource; the legacy
/// work_req_seconds is the largest of the seconds.

#include "tools/client/rr_sim.hpp"
#include "tools/client/types.hpp"

#include <array>
#include <optional>
#include <vector>

namespace cobble::client {

/// What one scheduler request asks for.
struct work_request {
  std::array<double, max_resources> secs{};      ///< cpu_req_secs, then each coproc's req_secs.
  std::array<double, max_resources> instances{}; ///< cpu_req_instances, req_instances.
  /// For old servers: the largest of the per-resource seconds.
  double work_req_seconds() const;
  /// True when any resource is asked for.
  bool any() const;
  /// True when resource r is asked for.
  bool wants(int r) const;
};

/// Why a project was chosen.
enum class fetch_reason { major_shortfall, minor_shortfall, starved };

const char* to_string(fetch_reason r);

/// The project to ask and what to ask it for.
struct fetch_decision {
  int project = -1;
  int rsc = 0; ///< The resource whose shortfall (or starvation) chose it.
  fetch_reason reason = fetch_reason::major_shortfall;
  work_request request;
};

/// True when `p` may be contacted at `now` at all (not suspended, request_delay passed).
bool can_contact(const project& p, double now);
/// True when p's overall debt is below -settings::overworked_debt.
bool overworked(const project& p, const settings& s);

/// The design's decision, or nullopt when no work is needed or no project can be asked.
std::optional<fetch_decision>
choose_fetch(const std::vector<project>& ps, const std::vector<resource>& rs, const rr_result& rr,
             double now, const settings& s);

/// After a reply to `asked`: a resource asked for that got no job backs off (doubling up to
/// the maximum); any resource that got a job is cleared.
void handle_fetch_reply(project& p, const work_request& asked,
                        const std::array<int, max_resources>& jobs_got, double now,
                        const settings& s);

} // namespace cobble::client
