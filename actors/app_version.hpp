#pragma once

/// The app-version actor: statistics of one app version over its validated results. Its
/// project routes it the events that change them (validations, normalizations, and the
/// configuration, which carries the credit settings).

#include "actors/actors.hpp"
#include "actors/state.hpp"

#include <caf/actor_system.hpp>

namespace cobble {

/// Spawns the actor for one app version of project `project`.
app_version_actor spawn_app_version(caf::actor_system& sys, app_version_state initial,
                                    std::uint16_t project, credit_settings credit = {});

} // namespace cobble
