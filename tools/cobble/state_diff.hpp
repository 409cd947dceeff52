#pragma once

/// The state differ of `cobble log verify`: it names the first place where the world rebuilt
/// from the events and the world decoded from a snapshot differ, in words an operator can
/// follow to the entity (its JSON view's path and the two values).

#include "actors/state.hpp"

#include <optional>
#include <string>

namespace cobble::cli {

/// Names the first difference between the replayed world `a` and the snapshot `b`
/// ("project demo: workunit 3 (alpha) differs at /state: replayed ..., snapshot ..."), or
/// nullopt when they are equal.
std::optional<std::string> first_difference(const world& a, const world& b);

} // namespace cobble::cli
