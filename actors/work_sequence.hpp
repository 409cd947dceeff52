#pragma once

/// The work_sequence actor: one per work sequence (docs/sequences.md). It owns the
/// sequence's state — replica chains, assignments, links, dead branches — and decides its
/// events: assignment to a host during an RPC, extension and end, relocation when the
/// assigned host misses a deadline, operator reassignment, and the element-by-element
/// comparison of replicated sequences. The project owns the workunits and results; it
/// forwards their events to the sequence and applies the sequence's events to them.
///
/// The decisions live in `sequence_logic` (plain methods, testable without actors).

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "actors/messages.hpp"
#include "actors/sequence_state.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

namespace cobble {

/// The elements positions [first, first + count) add to every replica chain; `made` is the
/// number of workunits the sequence created before (their ids follow on). Positions that are
/// multiples of `state_every` (if not 0), and the last one with `final_state`, upload full
/// state; the others are heartbeats.
std::vector<seq_element_rec>
make_sequence_elements(id_type seq, const std::string& name, std::uint8_t replicas,
                       std::uint32_t made, std::uint32_t first, std::uint32_t count,
                       std::uint32_t state_every, bool final_state);

/// The decisions of one sequence, over its state. Every method that returns events has
/// already applied them to `state`.
class sequence_logic {
public:
  sequence_state state;
  std::uint16_t project = 0;             ///< Index of the project (for event headers).
  std::vector<std::string> output_names; ///< The app's output open names (its state files).

  /// A host's RPC: assign the sequence if asked and possible, and pick elements to send.
  seq_answer query(const seq_query& q, time_us now);

  /// An operator's or result handler's command. Refused (nothing changed) when the state
  /// forbids it.
  caf::expected<std::vector<event>> command(const seq_command& c, time_us now);

  /// Applies the forwarded events of the sequence's workunits; for replicated sequences,
  /// compares corresponding elements once every replica has reported them; records a chain's
  /// new restart point (sequence_restart_saved) once a later state upload is validated.
  std::vector<event> absorb(const std::vector<event>& forwarded, time_us now);

  /// The relocation check: takes every chain from a host that missed a deadline or reported
  /// an error for an element, and (when `slow_lag` > 0) from a replica's host that many
  /// elements behind the other.
  std::vector<event> check(time_us now, std::uint32_t slow_lag);

private:
  void emit(std::vector<event>& out, payload p, time_us now);
  std::vector<staged_state_file> state_files(const seq_element_state& el) const;
  std::optional<std::string> signature(const seq_element_state& el) const;
  void save_restart_points(std::vector<event>& out, time_us now);
  ev::sequence_deassigned take_away(std::uint8_t replica, std::string reason, std::string by);
};

/// Everything a work_sequence actor needs at spawn.
struct work_sequence_init {
  sequence_state state;
  log_actor log;
  project_actor project;
  clock_ptr clk;
  std::uint16_t project_index = 0;
  std::vector<std::string> output_names; ///< The app's output open names.
  std::uint32_t slow_replica_lag = 0;
};

/// Spawns a work_sequence actor. Its relocation checks come from its project (atom::tick,
/// after the project appended and delivered the deadline sweep), so that a sequence never
/// decides on a missed deadline before it has seen the timeouts the log already holds.
work_sequence_actor spawn_work_sequence(caf::actor_system& sys, work_sequence_init init);

} // namespace cobble
