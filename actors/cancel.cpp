/// Work taken back from hosts: workunits an operator cancels (project_logic::cancel_workunit)
/// and the results the client is then told to abort (project_logic::result_aborts), with the
/// elements of ended sequences and dead branches.

#include "actors/project_logic_detail.hpp"
#include "actors/project_views.hpp"

#include <fmt/format.h>

namespace cobble {

namespace {

constexpr std::size_t max_reason = 1000;

} // namespace

caf::expected<event>
project_logic::cancel_workunit(const std::string& key, const std::string& reason,
                               const std::string& by, time_us now) {
  auto wu = workunit_by_key(state, key);
  if (wu == nullptr)
    return caf::make_error(ec::unknown_workunit, "no workunit '" + key + "'");
  if (wu->sequence)
    return caf::make_error(ec::conflict,
                           fmt::format("workunit {} is element {} of sequence {}: end the "
                                       "sequence instead (cobble seq end)",
                                       wu->name, wu->sequence->position,
                                       state.sequences.count(wu->sequence->seq)
                                         ? state.sequences.at(wu->sequence->seq).name
                                         : std::to_string(wu->sequence->seq)));
  if (wu->state != wu_state::active)
    return caf::make_error(ec::conflict, fmt::format("workunit {} is {} already", wu->name,
                                                     to_string(wu->state)));
  if (reason.size() > max_reason || by.size() > max_reason)
    return caf::make_error(ec::invalid_argument,
                           fmt::format("reason and by take at most {} bytes", max_reason));
  ev::workunit_cancelled x{wu->id, reason.empty() ? "by the operator" : reason, {}, by};
  for (std::uint32_t i = 0; i < wu->results.size(); ++i)
    if (wu->results[i].state == result_state::in_progress)
      x.aborted.emplace_back(wu->results[i].host, state.result_name({wu->id, i}));
  auto e = make(std::move(x), now);
  apply(state, e);
  return e;
}

std::vector<std::string> project_logic::result_aborts(const job_request& req) const {
  std::vector<std::string> out;
  for (const auto& name : req.other_results) {
    auto ref = state.parse_result_name(name);
    if (!ref)
      continue;
    auto wu = state.workunit(ref->wu);
    auto r = state.result(*ref);
    if (wu == nullptr || r == nullptr || r->host != req.host
        || r->outcome != result_outcome::didnt_need)
      continue;
    // Taken back: the element of an ended sequence or a dead branch, or a cancelled workunit.
    if ((wu->sequence && wu->sequence->dead) || wu->state == wu_state::cancelled)
      out.push_back(name);
  }
  return out;
}

} // namespace cobble
