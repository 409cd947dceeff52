#pragma once

// Test support: live and replay must never drift. At the end of a deterministic actor test,
// every project's live states (the project actor's, with its hosts, sequences and app
// versions: atom::state) are compared with a replay of the whole log from its first event.

#include "actors/error.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/state.hpp"
#include "tools/sim/harness.hpp"

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

/// Compares each running project's live states with a replay of the node's log; fails the test
/// on any difference, naming the part that differs.
inline void check_live_matches_replay(sim::harness& node) {
  node.run();
  auto replayed = recover(node.store(), true);
  REQUIRE(static_cast<bool>(replayed));
  for (const auto& [name, project] : node.handles().projects) {
    INFO("project " << name << ": live state vs. a replay of the log");
    auto answer = node.try_ask<project_world_ptr>(project, atom::state_v);
    REQUIRE(answer.has_value());
    if (!*answer)
      FAIL("the project's state: " << describe(answer->error()));
    const auto& live = **answer;
    auto index = node.handles().project_index.at(name);
    REQUIRE(index < replayed->projects.size());
    const auto& want = replayed->projects[index];
    CHECK(live->project == want.project);
    CHECK(live->hosts == want.hosts);
    CHECK(live->sequences == want.sequences);
    CHECK(detail::touched(live->app_versions) == detail::touched(want.app_versions));
  }
}

/// The emulator's harness for a test: when it ends with its node running, the live states
/// are checked against a replay of its log first (check_live_matches_replay).
class checked_harness : public sim::harness {
public:
  using sim::harness::harness;
  ~checked_harness() {
    try {
      if (running())
        check_live_matches_replay(*this);
    } catch (...) { // a failed REQUIRE: recorded already
    }
  }
};

} // namespace cobble::test
