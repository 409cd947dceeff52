#include "actors/project_flow.hpp"

#include "actors/app_version.hpp"
#include "actors/error.hpp"
#include "actors/routing.hpp"
#include "actors/work_sequence.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cobble {

host_settings host_settings_of(const project_state& ps, const config::project_config& config) {
  return host_settings{ps.index, ps.credit, autoflops_by_version(ps.apps),
                       resources_by_version(ps.apps), config.limits};
}

// -- routing and appending ------------------------------------------------------------

namespace {

/// Spawns the actor of an app version added while the server runs (linked: it fails with
/// its project, as the node's own versions stop the node).
void ensure_version(project_ptr self, std::uint32_t id) {
  auto& st = self->state;
  if (st.versions.count(id))
    return;
  auto a = spawn_app_version(self->system(), app_version_state{id}, st.logic.state.index,
                             credit_settings_from(st.config.credit));
  self->link_to(a);
  st.versions.emplace(id, std::move(a));
}

} // namespace

std::vector<event> route(project_ptr self, std::vector<event> events, decided_by who) {
  auto& st = self->state;
  auto now = st.clk->now();
  bool apps_changed = false;
  for (const auto& e : events) {
    // New versions get their statistics' owner before their first event.
    if (auto x = std::get_if<ev::app_version_added>(&e.data))
      ensure_version(self, x->version.id);
    if (auto x = std::get_if<ev::app_added>(&e.data))
      for (std::uint8_t r = 0; r < n_resource_types; ++r)
        ensure_version(self, anonymous_version_id(x->app.id, r));
    apps_changed = apps_changed || std::holds_alternative<ev::app_added>(e.data)
                   || std::holds_alternative<ev::app_version_added>(e.data)
                   || std::holds_alternative<ev::app_version_deprecated>(e.data);
    if (!who.project)
      st.logic.apply_delivered(e);
    auto owners = owners_of(e.data);
    for (auto h : owners.hosts) {
      if (h == who.host)
        continue;
      auto* hs = std::holds_alternative<ev::host_registered>(e.data) ? &st.hosts.add(h, now)
                                                                     : st.hosts.find(h, now);
      if (hs == nullptr)
        continue;
      std::string name;
      if (auto r = result_of(e.data))
        name = st.logic.state.result_name(*r);
      apply(*hs, e, name, st.logic.state.credit);
    }
    // A sequence decides only events of its own; they never go back to it.
    if (owners.sequence != 0 && !who.sequence && st.sequences.count(owners.sequence))
      st.to_sequences[owners.sequence].push_back(e);
    for (auto v : owners.app_versions)
      if (st.versions.count(v))
        st.to_versions[v].push_back(e);
  }
  if (apps_changed)
    st.host_config = host_settings_of(st.logic.state, st.config);
  return events;
}

namespace {

/// Sends the routed events to their sequence and app-version actors. Called right after the
/// events went to the log: the log's mailbox has them before a sequence can append what it
/// decides on them.
void deliver_routed(project_ptr self) {
  auto& st = self->state;
  auto batch = [](std::vector<event>& xs) {
    return event_batch_ptr{std::make_shared<std::vector<event>>(std::move(xs))};
  };
  for (auto& [seq, xs] : st.to_sequences)
    self->send(st.sequences.at(seq), atom::deliver_v, batch(xs));
  for (auto& [id, xs] : st.to_versions)
    self->send(st.versions.at(id), atom::deliver_v, batch(xs));
  st.to_sequences.clear();
  st.to_versions.clear();
}

} // namespace

void append(project_ptr self, std::vector<event> events) {
  if (!events.empty())
    self->send(self->state.log, atom::append_v,
               event_batch_ptr{std::make_shared<std::vector<event>>(std::move(events))});
  deliver_routed(self);
}

void answer_when_durable(project_ptr self, std::vector<event> events, rpc_token token,
                         std::shared_ptr<const sched_reply> reply) {
  self->send(self->state.log, atom::append_v,
             event_batch_ptr{std::make_shared<std::vector<event>>(std::move(events))},
             rpc_answer_ptr{
               std::make_shared<const rpc_answer>(rpc_answer{token, std::move(reply)})});
  deliver_routed(self);
}

// -- workunits moving along ------------------------------------------------------------

namespace {

template <class T>
void move_into(std::vector<T>& out, std::vector<T>&& more) {
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

} // namespace

std::vector<event> run_transitions(project_ptr self, const std::set<id_type>& dirty) {
  auto& st = self->state;
  auto now = st.clk->now();
  std::vector<event> events;
  for (auto id : dirty)
    move_into(events, st.logic.transition(id, now));
  events = route(self, std::move(events), decided_by{true, 0, false});
  std::vector<id_type> finished;
  std::map<id_type, std::vector<validation_notice>> notices;
  for (const auto& e : events) {
    if (auto a = std::get_if<ev::workunit_assimilated>(&e.data))
      finished.push_back(a->wu);
    else if (auto f = std::get_if<ev::workunit_failed>(&e.data))
      finished.push_back(f->wu);
    else if (std::holds_alternative<ev::workunit_validated>(e.data))
      for (auto& [host, list] : st.logic.notices(e))
        move_into(notices[host], std::move(list));
  }
  // Hosts learn the verdicts after the validation: each records its own statistics update.
  for (auto& [host, list] : notices) {
    auto* hs = st.hosts.find(host, now);
    if (hs == nullptr)
      continue;
    host_logic hl{*hs, st.host_config};
    move_into(events, route(self, hl.learn(list, now), decided_by{false, host, false}));
  }
  for (auto wu : finished)
    hand_over_files(self, wu, st.config.file_grace_period);
  return events;
}

std::vector<event> sweep_deadlines(project_ptr self) {
  auto& st = self->state;
  auto now = st.clk->now();
  std::vector<event> events;
  std::set<id_type> dirty;
  for (auto& [host, names] : st.logic.overdue(now)) {
    auto* hs = st.hosts.find(host, now);
    if (hs == nullptr)
      continue;
    host_logic hl{*hs, st.host_config};
    auto timed_out = route(self, hl.time_out(names, now), decided_by{false, host, false});
    for (const auto& e : timed_out)
      if (auto r = result_of(e.data))
        dirty.insert(r->wu);
    move_into(events, std::move(timed_out));
  }
  move_into(events, run_transitions(self, dirty));
  return events;
}

// -- hosts in memory ----------------------------------------------------------------------

namespace {

/// Hosts one sweep passivates at most: about 40 ms of encoding (printed by
/// tests/actors/host_table_test.cpp), so that a sweep after a
/// restart (when every host may be idle) does not hold the project's RPCs for seconds; a
/// million idle hosts are passivated over the next few minutes.
constexpr std::size_t hosts_passivated_per_sweep = 20'000;

} // namespace

void passivate_idle_hosts(project_ptr self) {
  auto& st = self->state;
  auto now = st.clk->now();
  passivation_policy policy{seconds_to_us(std::max(st.config.passivate_hosts_after, 0.0)),
                            static_cast<std::size_t>(std::max(st.config.max_live_hosts, 0)),
                            hosts_passivated_per_sweep};
  if (auto n = st.hosts.passivate(now, policy); n > 0)
    spdlog::debug("project {}: {} idle hosts passivated", st.config.name, n);
  // A work-request time older than the interval no longer holds anything back.
  auto interval = st.config.limits.min_sendwork_interval.value_or(st.config.request_delay);
  auto cutoff = now - seconds_to_us(std::max(interval, 0.0));
  std::erase_if(st.last_work_request, [cutoff](const auto& kv) { return kv.second <= cutoff; });
}

// -- work sequences ---------------------------------------------------------------------

namespace {

/// Arms the end of the grace period of a sequence element's released state files.
void schedule_release(project_ptr self, id_type wu, double delay) {
  auto addr = self->address();
  self->state.clk->schedule(seconds_to_us(std::max(delay, 0.0)), [addr, wu] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::cleanup_v, wu);
  });
}

} // namespace

work_sequence_actor spawn_sequence(project_ptr self, sequence_state st) {
  auto& ps = self->state;
  auto id = st.id;
  std::vector<std::string> output_names;
  if (auto app = ps.logic.state.app(st.app))
    output_names = app->output_names;
  work_sequence_init init{std::move(st),
                          ps.log,
                          project_actor{self},
                          ps.clk,
                          ps.logic.state.index,
                          std::move(output_names),
                          static_cast<std::uint32_t>(ps.config.sequence_slow_replica_lag)};
  auto a = spawn_work_sequence(self->system(), std::move(init));
  self->link_to(a);
  ps.sequences[id] = a;
  return a;
}

std::vector<event> absorb_sequence_events(project_ptr self, const std::vector<event>& events) {
  if (events.empty())
    return {};
  auto& st = self->state;
  auto dirty = st.logic.apply_sequence_events(events);
  route(self, events, decided_by{true, 0, true});
  for (const auto& e : events) {
    for (auto wu : st.logic.released_by(e))
      schedule_release(self, wu, st.config.file_grace_period);
    // Elements a dead branch or the end cancelled are finished: their files go too.
    std::vector<id_type> retired;
    if (auto gone = std::get_if<ev::sequence_deassigned>(&e.data))
      retired = gone->dead;
    else if (auto ended = std::get_if<ev::sequence_ended>(&e.data))
      retired = ended->cancelled;
    for (auto id : retired)
      if (auto w = st.logic.state.workunit(id);
          w && w->state == wu_state::failed && !w->files_deleted && w->finished == e.time)
        hand_over_files(self, id, st.config.file_grace_period);
  }
  return run_transitions(self, dirty);
}

// -- files of finished work ---------------------------------------------------------------

void hand_over_files(project_ptr self, id_type wu, double delay) {
  auto& st = self->state;
  if (!st.assimilator)
    return;
  auto files = std::make_shared<wu_files>(
    st.logic.files_of(wu, std::max(delay, 0.0), st.config.file_grace_period));
  auto w = st.logic.state.workunit(wu);
  if (w && w->sequence && !w->sequence->staged.empty() && !files->keep && delay > 0) {
    // Released state files: what to delete is decided when the grace period ends (another
    // element may keep the same content by then).
    files->keep = true;
    schedule_release(self, wu, delay);
  }
  self->send(st.assimilator, atom::assimilate_v, wu_files_ptr{std::move(files)});
}

void release_files(project_ptr self, id_type wu) {
  auto& st = self->state;
  auto w = st.logic.state.workunit(wu);
  if (w == nullptr || w->files_deleted || !w->sequence || w->sequence->released == 0)
    return;
  for (const auto& name : w->sequence->staged)
    if (st.logic.state.state_file_in_use(*w, name)) {
      st.release_due.insert(wu);
      return;
    }
  st.release_due.erase(wu);
  hand_over_files(self, wu, 0);
}

// -- normalization and timers -----------------------------------------------------------

namespace {

void finish_normalization(project_ptr self, std::vector<app_version_state> stats) {
  auto& st = self->state;
  std::sort(stats.begin(), stats.end(), [](auto& a, auto& b) { return a.id < b.id; });
  st.last_stats.clear();
  for (const auto& s : stats)
    st.last_stats[s.id] = s;
  auto events = st.logic.normalize(stats, st.cross_project, st.clk->now());
  append(self, route(self, std::move(events), decided_by{true, 0, false}));
}

} // namespace

void run_normalization(project_ptr self) {
  auto& st = self->state;
  if (st.versions.empty())
    return;
  auto pending = std::make_shared<std::size_t>(st.versions.size());
  auto gathered = std::make_shared<std::vector<app_version_state>>();
  for (const auto& [id, av] : st.versions) {
    self->request(av, std::chrono::seconds(30), atom::state_v)
      .then(
        [self, pending, gathered](const app_version_state_ptr& s) {
          gathered->push_back(*s);
          if (--*pending == 0)
            finish_normalization(self, std::move(*gathered));
        },
        [self, pending, gathered, id = id](caf::error& err) {
          spdlog::warn("normalization: app version {} did not answer: {}", id, caf::to_string(err));
          if (--*pending == 0)
            finish_normalization(self, std::move(*gathered));
        });
  }
}

void schedule_normalization(project_ptr self) {
  auto period = seconds_to_us(std::max(self->state.logic.state.credit.normalization_interval, 1.0));
  auto addr = self->address();
  self->state.clk->schedule(period, [addr] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::normalize_v);
  });
}

void check_sequences(project_ptr self) {
  auto& st = self->state;
  auto now = st.clk->now();
  if (now < st.next_sequence_check)
    return;
  st.next_sequence_check = now + seconds_to_us(std::max(st.config.sequence_check_interval, 0.01));
  for (const auto& [id, seq] : st.sequences)
    self->send(seq, atom::tick_v);
}

void schedule_tick(project_ptr self) {
  auto period = seconds_to_us(std::max(self->state.config.deadline_check_interval, 0.01));
  auto addr = self->address();
  self->state.clk->schedule(period, [addr] {
    if (auto h = caf::actor_cast<caf::actor>(addr))
      caf::anon_send(h, atom::tick_v);
  });
}

// -- the live world -------------------------------------------------------------------------

caf::result<project_world_ptr> live_world(project_ptr self) {
  auto& st = self->state;
  // Copy-constructed: a project_state copies but does not copy-assign (wu_table).
  auto out = std::make_shared<project_world>(project_world{st.logic.state, st.hosts.all(), {}, {}});
  auto pending = std::make_shared<std::size_t>(st.sequences.size() + st.versions.size());
  auto rp = self->make_response_promise<project_world_ptr>();
  if (*pending == 0) {
    rp.deliver(project_world_ptr{std::move(out)});
    return rp;
  }
  auto done = [rp, out, pending]() mutable {
    if (--*pending == 0)
      rp.deliver(project_world_ptr{out});
  };
  auto fail = [rp](caf::error& err) mutable { rp.deliver(std::move(err)); };
  for (const auto& [id, seq] : st.sequences)
    self->request(seq, std::chrono::seconds(10), atom::state_v)
      .then(
        [out, done](const sequence_state_ptr& s) mutable {
          out->sequences[s->id] = *s;
          done();
        },
        fail);
  for (const auto& [id, av] : st.versions)
    self->request(av, std::chrono::seconds(10), atom::state_v)
      .then(
        [out, done](const app_version_state_ptr& s) mutable {
          out->app_versions[s->id] = *s;
          done();
        },
        fail);
  return rp;
}

} // namespace cobble
