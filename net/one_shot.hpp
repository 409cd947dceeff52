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
/// Call it only on a thread that ends before the actor system does (the Asio threads, joined
/// by http_server::stop, or an actor's): spawning leaves CAF's logger in a thread-local of
/// the caller, and ~actor_system waits until the logger is gone. The file pool outlives the
/// system, so it never spawns; it hands results to a waiting actor with anon_send.
template <class F>
void spawn_one_shot(caf::actor_system& sys, F fn) {
  sys.spawn([](caf::event_based_actor* self, F f) { f(self); }, std::move(fn));
}

} // namespace cobble::net
