#pragma once

// Test support: live and replay must never drift. At the end of a deterministic actor test,
// every project's live states (the project actor's, with its hosts, sequences and app
// versions: atom::state) are compared with a replay of the whole log from its first event.

#include "actors/error.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "actors/state.hpp"

#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <catch2/catch.hpp>

namespace cobble::test {

namespace detail {

/// App versions whose statistics nothing changed yet are left out: the node spawns an actor
/// for every version it may need (anonymous-platform ones too), replay only for versions
/// that events name.
inline std::map<std::uint32_t, app_version_state>
touched(const std::map<std::uint32_t, app_version_state>& versions) {
  std::map<std::uint32_t, app_version_state> out;
  for (const auto& [id, v] : versions)
    if (!(v == app_version_state{id}))
      out.emplace(id, v);
  return out;
}

} // namespace detail

/// Compares each running project's live states with a replay of `store`; fails the test on any
/// difference, naming the part that differs.
inline void
check_live_matches_replay(caf::scoped_actor& self, caf::scheduler::test_coordinator& sched,
                          const node_handles& node, const storage::event_store& store) {
  sched.run();
  auto replayed = recover(store, true);
  REQUIRE(static_cast<bool>(replayed));
  for (const auto& [name, project] : node.projects) {
    INFO("project " << name << ": live state vs. a replay of the log");
    auto rh = self->request(project, caf::infinite, atom::state_v);
    sched.run();
    REQUIRE_FALSE(self->mailbox().empty());
    project_world_ptr live;
    rh.receive([&](project_world_ptr& w) { live = std::move(w); },
               [&](caf::error& err) { FAIL("the project's state: " << describe(err)); });
    auto index = node.project_index.at(name);
    REQUIRE(index < replayed->projects.size());
    const auto& want = replayed->projects[index];
    CHECK(live->project == want.project);
    CHECK(live->hosts == want.hosts);
    CHECK(live->sequences == want.sequences);
    CHECK(detail::touched(live->app_versions) == detail::touched(want.app_versions));
  }
}

} // namespace cobble::test
