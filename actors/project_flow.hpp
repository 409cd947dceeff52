#pragma once

/// The project actor's steps that its handlers share (internal to the project actor's files):
/// routing the events it decides or learns, appending them and answering once durable, moving
/// workunits along, the deadline sweep, the files of finished work, the work sequences and
/// the normalization. Every function runs on the project actor's thread.

#include "actors/project.hpp"

#include <caf/response_promise.hpp>
#include <caf/typed_response_promise.hpp>

#include <set>
#include <vector>

namespace cobble {

/// Who decided a batch of events, and so has applied it already.
struct decided_by {
  bool project = false;  ///< project_logic (applied to the project's state).
  id_type host = 0;      ///< host_logic for this host (applied to its state).
  bool sequence = false; ///< A sequence actor (appended by it; the project has not applied it).
};

/// Applies each event to every state this actor holds that it changes and that has not
/// applied it yet (owners_of), and queues it for the sequence and app-version actors that own
/// the rest (never back to the sequence that decided it). Returns the events, for appending.
/// The queue goes out with the next append (append, answer_when_durable): a sequence appends
/// what it decides on an event itself, so it must not see the event before the log has it.
std::vector<event> route(project_ptr self, std::vector<event> events, decided_by who);

/// Appends events decided in this step (none: nothing), then sends the routed events to their
/// other owners. Every step appends before it waits for anything, so the log holds events in
/// the order they were applied.
void append(project_ptr self, std::vector<event> events);

/// Appends the events of a scheduler RPC and has the log hand its reply to the RPC port once
/// they, and every event appended before, are durable (at once when there are none).
void answer_when_durable(project_ptr self, std::vector<event> events, rpc_token token,
                         std::shared_ptr<const sched_reply> reply);

/// Appends the events of an admin request and delivers `value` through `rp` once they, and
/// every event appended before, are durable.
template <class... Ts>
void answer_when_durable(project_ptr self, std::vector<event> events,
                         caf::typed_response_promise<Ts...> rp, Ts... value) {
  append(self, std::move(events));
  self->request(self->state.log, caf::infinite, atom::sync_v)
    .then([rp, value...](std::uint64_t) mutable { rp.deliver(value...); });
}

/// Moves workunits along (validation, assimilation, new replicas, failure), lets the hosts
/// of validated results learn their verdicts, and hands finished work to the assimilator.
/// Returns every event decided, routed (for appending).
std::vector<event> run_transitions(project_ptr self, const std::set<id_type>& dirty);

/// Applies events a sequence decided (and appended) to the project's workunits and hosts,
/// schedules the files they release, and runs the transitions they allow. Returns the events
/// the project decided on the way (for appending).
std::vector<event> absorb_sequence_events(project_ptr self, const std::vector<event>& events);

/// The deadline sweep: results past their deadline time out on their hosts, and their
/// workunits move along. Returns the events (for appending).
std::vector<event> sweep_deadlines(project_ptr self);

/// Passivates the hosts idle for config.passivate_hosts_after, then the least recently used
/// beyond config.max_live_hosts, and forgets work-request times older than the interval
/// they enforce. Run between messages: it invalidates references into the host table.
void passivate_idle_hosts(project_ptr self);

/// Spawns the actor of a sequence (linked: it ends with its project).
work_sequence_actor spawn_sequence(project_ptr self, sequence_state st);

/// Hands a finished workunit's files to the assimilator (copy now, delete after the delay).
void hand_over_files(project_ptr self, id_type wu, double delay);

/// The grace period of a released state upload is over: its files go unless the same
/// content is still in use, in which case it waits for the files that use it to go.
void release_files(project_ptr self, id_type wu);

/// Gathers every app version's statistics, then normalizes.
void run_normalization(project_ptr self);

/// Arms the next deadline sweep / normalization on the project's clock.
void schedule_tick(project_ptr self);

/// Tells every sequence to run its relocation check when sequence_check_interval has passed
/// since the last. Called by the deadline sweep after it appended: a sequence sees the
/// timeouts before it checks, as the log has them.
void check_sequences(project_ptr self);
void schedule_normalization(project_ptr self);

/// Serves a scheduler RPC (actors/project_rpc.cpp).
void serve_rpc(project_ptr self, const sched_request_ptr& req, rpc_token token);

/// Answers with every state of the project as the live actors hold it (gathering the
/// sequences' and app versions' states).
caf::result<project_world_ptr> live_world(project_ptr self);

/// What host_logic needs of the current configuration.
host_settings host_settings_of(const project_state& ps, const config::project_config& config);

} // namespace cobble
