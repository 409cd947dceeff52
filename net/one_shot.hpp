#pragma once

/// The bridge from an Asio thread to the actors for one request/response: a fresh
/// event-based actor that runs `fn(self)`, sends its request and ends with the answer.

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>

#include <utility>

namespace cobble::net {

/// Spawns an actor that runs `fn(self)` once. The closure is the spawn argument, not a
/// capture of the spawned function: CAF 0.17.6 unpacks the arguments of a function spawned
/// without any through a null pointer (undefined behaviour that UBSan reports).
template <class F>
void spawn_one_shot(caf::actor_system& sys, F fn) {
  sys.spawn([](caf::event_based_actor* self, F f) { f(self); }, std::move(fn));
}

} // namespace cobble::net
