#include "actors/work_sequence.hpp"

#include "actors/error.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cobble {

std::vector<seq_element_rec>
make_sequence_elements(id_type seq, const std::string& name, std::uint8_t replicas,
                       std::uint32_t made, std::uint32_t first, std::uint32_t count,
                       std::uint32_t state_every, bool final_state) {
  std::vector<seq_element_rec> out;
  for (std::uint32_t p = first; p < first + count; ++p) {
    bool state = (state_every > 0 && p % state_every == 0)
                 || (final_state && p == first + count - 1);
    for (std::uint8_t r = 0; r < std::max<std::uint8_t>(replicas, 1); ++r) {
      seq_element_rec el;
      el.wu = sequence_wu_id(seq, made++);
      el.name = sequence_element_name(name, p, r, 0);
      el.position = p;
      el.replica = r;
      el.kind = state ? seq_element_kind::state : seq_element_kind::heartbeat;
      out.push_back(std::move(el));
    }
  }
  return out;
}

// -- sequence_logic -----------------------------------------------------------

void sequence_logic::emit(std::vector<event>& out, payload p, time_us now) {
  event e;
  e.time = now;
  e.project = project;
  e.data = std::move(p);
  apply(state, e);
  out.push_back(std::move(e));
}

std::vector<staged_state_file> sequence_logic::state_files(const seq_element_state& el) const {
  return state_files_of(el.outputs, el.arrived, el.name + "_0", output_names);
}

void sequence_logic::save_restart_points(std::vector<event>& out, time_us now) {
  for (std::size_t i = 0; i < state.replicas.size(); ++i) {
    const auto& r = state.replicas[i];
    auto p = restart_position(r);
    if (p == 0 || p <= r.saved || p > r.chain.size())
      continue;
    const auto& el = r.chain[p - 1];
    ev::sequence_restart_saved x;
    x.seq = state.id;
    x.replica = static_cast<std::uint8_t>(i);
    x.position = p;
    x.wu = el.wu;
    for (auto& f : state_files(el)) {
      x.files.push_back(std::move(f.staged));
      x.open_names.push_back(std::move(f.open_name));
    }
    emit(out, std::move(x), now);
  }
}

ev::sequence_deassigned
sequence_logic::take_away(std::uint8_t replica, std::string reason, std::string by) {
  const auto& r = state.replicas[replica];
  ev::sequence_deassigned d;
  d.seq = state.id;
  d.replica = replica;
  d.host = r.host;
  d.reason = std::move(reason);
  d.by = std::move(by);
  d.restart = restart_position(r);
  // The new host starts from the restart point's state files.
  if (d.restart > 0 && d.restart <= r.chain.size())
    for (auto& f : state_files(r.chain[d.restart - 1])) {
      d.restart_inputs.push_back(std::move(f.staged));
      d.restart_open_names.push_back(std::move(f.open_name));
    }
  auto branch = static_cast<std::uint32_t>(state.dead_branches.size() + 1);
  auto made = state.wus_made;
  for (const auto& el : r.chain) {
    // Positions after the last full state upload that were ever sent are lost with the
    // host: they become the dead branch, and copies of them continue the chain.
    if (el.position <= d.restart || el.status == seq_element_status::unsent)
      continue;
    d.dead.push_back(el.wu);
    if (el.status == seq_element_status::in_progress && el.host == r.host)
      d.aborted.push_back(el.name + "_0");
    seq_element_rec copy;
    copy.wu = sequence_wu_id(state.id, made++);
    copy.name = sequence_element_name(state.name, el.position, replica, branch);
    copy.position = el.position;
    copy.replica = replica;
    copy.kind = el.kind;
    d.replacements.push_back(std::move(copy));
  }
  return d;
}

seq_answer sequence_logic::query(const seq_query& q, time_us now) {
  seq_answer out;
  out.seq = state.id;
  if (state.ended)
    return out;
  int r = state.replica_of(q.host);
  if (r < 0 && q.may_assign) {
    bool fits = state.max_result_time <= 0 || q.est_seconds <= state.max_result_time;
    for (std::size_t i = 0; i < state.replicas.size() && fits; ++i) {
      const auto& rep = state.replicas[i];
      bool has_work = std::any_of(rep.chain.begin(), rep.chain.end(), [](const auto& el) {
        return el.status == seq_element_status::unsent;
      });
      if (rep.host == 0 && has_work) {
        emit(out.events,
             ev::sequence_assigned{state.id, static_cast<std::uint8_t>(i), q.host, "scheduler"},
             now);
        r = static_cast<int>(i);
        break;
      }
    }
  }
  if (r < 0)
    return out;
  out.held = true;
  const auto& chain = state.replicas[r].chain;
  std::uint32_t in_flight = 0;
  for (const auto& el : chain)
    if (el.status == seq_element_status::in_progress && el.host == q.host
        && std::find(q.reported.begin(), q.reported.end(), el.wu) == q.reported.end())
      ++in_flight;
  for (const auto& el : chain) {
    if (in_flight >= q.high_water)
      break;
    if (el.status == seq_element_status::unsent) {
      out.send.push_back(el.wu);
      ++in_flight;
    }
  }
  return out;
}

caf::expected<std::vector<event>> sequence_logic::command(const seq_command& c, time_us now) {
  std::vector<event> out;
  const auto& name = state.name;
  using op = seq_command::op;
  if (state.ended)
    return caf::make_error(ec::conflict,
                           "sequence '" + name + "' has ended"
                             + (c.what == op::extend ? "; it cannot be extended" : ""));
  switch (c.what) {
    case op::extend: {
      if (c.count == 0 || c.count > 100000)
        return caf::make_error(ec::invalid_argument, "count must be from 1 to 100000");
      auto n = static_cast<std::uint64_t>(c.count) * state.replicas.size();
      if (state.wus_made + n > max_sequence_wus)
        return caf::make_error(ec::invalid_argument, "sequence '" + name + "' would exceed "
                                                       + std::to_string(max_sequence_wus)
                                                       + " workunits");
      auto els = make_sequence_elements(state.id, name,
                                        static_cast<std::uint8_t>(state.replicas.size()),
                                        state.wus_made, state.length() + 1, c.count, c.state_every,
                                        c.final_state);
      emit(out, ev::sequence_extended{state.id, std::move(els), c.by}, now);
      return out;
    }
    case op::end: {
      ev::sequence_ended x;
      x.seq = state.id;
      x.reason = c.reason.empty() ? "ended" : c.reason;
      x.by = c.by;
      for (const auto& r : state.replicas)
        for (const auto& el : r.chain) {
          if (el.status == seq_element_status::unsent)
            x.cancelled.push_back(el.wu);
          else if (el.status == seq_element_status::in_progress) {
            x.cancelled.push_back(el.wu);
            x.aborted.emplace_back(el.host, el.name + "_0");
          }
        }
      emit(out, std::move(x), now);
      return out;
    }
    case op::reassign:
    case op::unassign: {
      if (c.replica >= state.replicas.size())
        return caf::make_error(ec::invalid_argument,
                               "sequence '" + name + "' has no replica " + std::to_string(c.replica)
                                 + " (it has " + std::to_string(state.replicas.size()) + ")");
      auto current = state.replicas[c.replica].host;
      if (c.what == op::unassign && current == 0)
        return caf::make_error(ec::conflict, "sequence '" + name + "' is not assigned");
      if (c.what == op::reassign) {
        if (c.to == 0)
          return caf::make_error(ec::invalid_argument, "no host to reassign to");
        if (current == c.to)
          return caf::make_error(ec::conflict, "sequence '" + name
                                                 + "' is already assigned to host "
                                                 + std::to_string(c.to));
        if (state.replica_of(c.to) >= 0)
          return caf::make_error(ec::conflict, "host " + std::to_string(c.to)
                                                 + " already holds another replica of '" + name
                                                 + "'");
      }
      if (current != 0)
        emit(out,
             take_away(c.replica,
                       c.what == op::unassign
                         ? "unassigned by operator"
                         : "reassigned by operator to host " + std::to_string(c.to),
                       c.by),
             now);
      if (c.what == op::reassign)
        emit(out, ev::sequence_assigned{state.id, c.replica, c.to, c.by}, now);
      return out;
    }
  }
  return caf::make_error(ec::invalid_argument, "unknown command");
}

/// What two successful elements must share to agree (the bitwise validator's rule, on the
/// server's digests of the outputs the element was sent to produce); nullopt while one has
/// not arrived.
std::optional<std::string> sequence_logic::signature(const seq_element_state& el) const {
  return received_signature(el.arrived,
                            el.kind == seq_element_kind::state ? output_names.size() : 0);
}

std::vector<event> sequence_logic::absorb(const std::vector<event>& forwarded, time_us now) {
  std::vector<event> out;
  std::vector<std::uint32_t> reported;
  for (const auto& e : forwarded) {
    apply(state, e);
    if (auto x = std::get_if<ev::result_reported>(&e.data))
      if (auto el = state.element(x->result.wu))
        reported.push_back(el->position);
  }
  if (!state.ended)
    save_restart_points(out, now);
  if (state.replicas.size() < 2)
    return out;
  for (auto p : reported) {
    if (p == 0 || p > state.checks.size() || state.checks[p - 1] != seq_check::pending)
      continue;
    ev::sequence_element_checked x;
    x.seq = state.id;
    x.position = p;
    bool all = true;
    for (const auto& r : state.replicas) {
      if (p > r.chain.size() || r.chain[p - 1].status != seq_element_status::success) {
        all = false;
        break;
      }
      x.wus.push_back(r.chain[p - 1].wu);
    }
    if (!all)
      continue;
    // An element whose outputs have not all arrived agrees with nothing, under either
    // validator.
    auto first = signature(state.replicas.front().chain[p - 1]);
    x.agree = std::all_of(state.replicas.begin(), state.replicas.end(), [&](const seq_replica& r) {
      auto sig = signature(r.chain[p - 1]);
      return sig && (state.accept_all || sig == first);
    });
    emit(out, std::move(x), now);
  }
  return out;
}

std::vector<event> sequence_logic::check(time_us now, std::uint32_t slow_lag) {
  std::vector<event> out;
  if (state.ended)
    return out;
  for (std::size_t i = 0; i < state.replicas.size(); ++i) {
    const auto& r = state.replicas[i];
    if (r.host == 0)
      continue;
    std::string reason;
    for (const auto& el : r.chain) {
      if (el.host != r.host)
        continue;
      if (el.status == seq_element_status::error)
        reason = "host " + std::to_string(r.host) + " reported an error for " + el.name;
      else if (el.status == seq_element_status::timed_out
               || (el.status == seq_element_status::in_progress && el.deadline <= now))
        reason = "host " + std::to_string(r.host) + " missed the deadline of " + el.name;
      if (!reason.empty())
        break;
    }
    if (!reason.empty())
      emit(out, take_away(static_cast<std::uint8_t>(i), reason, "relocation check"), now);
  }
  if (slow_lag > 0 && state.replicas.size() == 2 && state.replicas[0].host != 0
      && state.replicas[1].host != 0) {
    auto done = [](const seq_replica& r) {
      std::uint32_t n = 0;
      for (const auto& el : r.chain)
        if (el.status == seq_element_status::success)
          ++n;
      return n;
    };
    auto d0 = done(state.replicas[0]);
    auto d1 = done(state.replicas[1]);
    auto slow = d0 >= d1 + slow_lag ? 1 : d1 >= d0 + slow_lag ? 0 : -1;
    if (slow >= 0) {
      auto behind = slow == 1 ? d0 - d1 : d1 - d0;
      emit(out,
           take_away(static_cast<std::uint8_t>(slow),
                     "host " + std::to_string(state.replicas[slow].host) + " is "
                       + std::to_string(behind) + " elements behind replica "
                       + std::to_string(1 - slow),
                     "relocation check"),
           now);
    }
  }
  return out;
}

// -- the actor ----------------------------------------------------------------

namespace {

struct work_sequence_state {
  sequence_logic logic;
  log_actor log;
  project_actor project;
  clock_ptr clk;
  std::uint32_t slow_lag = 0;
  static inline const char* name = "work_sequence";
};

using seq_ptr = work_sequence_actor::stateful_pointer<work_sequence_state>;

void append(seq_ptr self, const std::vector<event>& events) {
  if (events.empty())
    return;
  self->send(self->state.log, atom::append_v,
             event_batch_ptr{std::make_shared<std::vector<event>>(events)});
}

/// Appends events the sequence decided on its own and hands them to the project.
void publish(seq_ptr self, std::vector<event> events) {
  if (events.empty())
    return;
  append(self, events);
  self->send(self->state.project, atom::deliver_v,
             event_batch_ptr{std::make_shared<std::vector<event>>(std::move(events))});
}

} // namespace

work_sequence_actor spawn_work_sequence(caf::actor_system& sys, work_sequence_init init) {
  auto fn = [](seq_ptr self, work_sequence_init in) -> work_sequence_actor::behavior_type {
    auto& setup = self->state;
    setup.logic.state = std::move(in.state);
    setup.logic.project = in.project_index;
    setup.logic.output_names = std::move(in.output_names);
    setup.log = in.log;
    setup.project = in.project;
    setup.clk = in.clk;
    setup.slow_lag = in.slow_replica_lag;
    return {
      [self](atom::deliver, const event_batch_ptr& batch) {
        publish(self, self->state.logic.absorb(*batch, self->state.clk->now()));
      },
      [self](atom::rpc, const seq_query_ptr& q) -> seq_answer_ptr {
        auto answer = std::make_shared<seq_answer>(
          self->state.logic.query(*q, self->state.clk->now()));
        append(self, answer->events);
        return answer;
      },
      [self](atom::command, const seq_command_ptr& c) -> caf::result<seq_answer_ptr> {
        auto events = self->state.logic.command(*c, self->state.clk->now());
        if (!events)
          return events.error();
        append(self, *events);
        auto answer = std::make_shared<seq_answer>();
        answer->seq = self->state.logic.state.id;
        answer->events = std::move(*events);
        answer->state = std::make_shared<const sequence_state>(self->state.logic.state);
        return seq_answer_ptr{std::move(answer)};
      },
      [self](atom::state) -> sequence_state_ptr {
        return std::make_shared<const sequence_state>(self->state.logic.state);
      },
      [self](atom::tick) {
        auto& st = self->state;
        if (st.logic.state.ended)
          return;
        auto events = st.logic.check(st.clk->now(), st.slow_lag);
        for (const auto& e : events)
          if (auto d = std::get_if<ev::sequence_deassigned>(&e.data))
            spdlog::info("sequence {}: replica {} taken from host {} ({}); continues after "
                         "position {}",
                         st.logic.state.name, d->replica, d->host, d->reason, d->restart);
        publish(self, std::move(events));
      },
    };
  };
  return sys.spawn(fn, std::move(init));
}

} // namespace cobble
