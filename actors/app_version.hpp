#pragma once

/// The app-version actor: statistics of one app version over its validated results, learned
/// from the log's workunit_validated events.

#include "actors/actors.hpp"
#include "actors/state.hpp"

#include <caf/actor_system.hpp>

namespace cobble {

/// Spawns the actor for one app version and subscribes it to validations, normalizations and
/// configuration changes (which carry the credit settings).
app_version_actor
spawn_app_version(caf::actor_system& sys, app_version_state initial, std::uint16_t project,
                  log_actor log, credit_settings credit = {});

} // namespace cobble
