#pragma once

/// Events as text, for logs and the CLI (`cobble log tail`, `cobble log replay`).

#include "actors/events.hpp"

#include <string>

namespace cobble {

/// One line of text describing an event (the CLI's `log tail`).
std::string describe(const event& e);

} // namespace cobble
