#pragma once

/// Events as text, for logs and the CLI (`cobble log tail`, `cobble log replay`), and as
/// sentences for the operator pages' stories.

#include "actors/events.hpp"

#include <functional>
#include <string>

namespace cobble {

/// One line of text describing an event (the CLI's `log tail`).
std::string describe(const event& e);

/// Names a result for story_of ("wu_a_1").
using result_namer = std::function<std::string(result_ref)>;

/// One sentence for people about what the event did, naming results with `name` (the operator
/// pages' story of a workunit, host or account): "Result wu_a_0 sent to host 3, which asked
/// for work: app version 100, due 2026-12-10 14:05 UTC." No time and no sequence number: the
/// reader puts them in front.
std::string story_of(const event& e, const result_namer& name);

} // namespace cobble
