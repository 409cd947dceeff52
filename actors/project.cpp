#include "actors/project.hpp"

#include "actors/error.hpp"
#include "actors/project_flow.hpp"
#include "actors/project_views.hpp"
#include "actors/work_sequence.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

namespace cobble {

namespace {

// -- start --------------------------------------------------------------------------------

/// True when transition() has nothing to decide for `wu`: a plain active workunit without a
/// canonical result, none of whose results is over, with at least a quorum of them out (so
/// no errors, no successes to validate, no replacement needed).
bool only_waiting(const workunit_rec& wu) {
  if (wu.state != wu_state::active || wu.canonical || wu.sequence)
    return false;
  if (wu.params->max_error_results < 0
      || static_cast<std::int64_t>(wu.results.size()) < wu.params->min_quorum)
    return false;
  for (const auto& r : wu.results)
    if (r.state == result_state::over)
      return false;
  return true;
}

/// Takes over the recovered state, moves unfinished work along and starts the timers.
void start(project_ptr self, project_init in) {
  auto& st = self->state;
  st.logic.state = std::move(in.state);
  st.logic.state.index = in.index;
  st.config = std::move(in.config);
  st.log = in.log;
  st.clk = in.clk;
  st.assimilator = in.assimilator;
  st.hosts = host_table{std::move(in.hosts)};
  st.versions = std::move(in.versions);
  for (auto& [id, seq] : in.sequences)
    spawn_sequence(self, std::move(seq));
  auto now = st.clk->now();
  auto events = route(self, st.logic.configure(st.config, now), decided_by{true, 0, false});
  st.host_config = host_settings_of(st.logic.state, st.config);
  // Recovery: move every unfinished workunit along (work that was decided before a crash but
  // never appended is decided again here). Workunits that only wait for their results have
  // nothing to decide; at scale they are nearly all of them, so they are skipped.
  std::set<id_type> active;
  for (const auto& [id, wu] : st.logic.state.workunits)
    if ((wu.state == wu_state::active || wu.state == wu_state::validated) && !only_waiting(wu))
      active.insert(id);
  auto more = run_transitions(self, active);
  events.insert(events.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
  append(self, std::move(events));
  // Finished workunits whose files outlived a restart: assimilate (idempotent) and delete
  // them when their grace period ends.
  for (const auto& [id, wu] : st.logic.state.workunits)
    if ((wu.state == wu_state::assimilated || ended_unfinished(wu.state)) && !wu.files_deleted) {
      // Released state files of a sequence count their grace period from their release.
      auto since = wu.sequence && wu.sequence->released ? wu.sequence->released : wu.finished;
      hand_over_files(self, id, st.config.file_grace_period - us_to_seconds(now - since));
    }
  st.next_sequence_check = now + seconds_to_us(std::max(st.config.sequence_check_interval, 0.01));
  schedule_tick(self);
  schedule_normalization(self);
}

// -- admin commands -------------------------------------------------------------------------

caf::result<work_created_ptr> create_work(project_ptr self, const work_batch& batch) {
  auto out = std::make_shared<work_created>();
  auto events = self->state.logic.create_work(batch, self->state.clk->now(), *out);
  if (!events)
    return events.error();
  auto rp = self->make_response_promise<work_created_ptr>();
  answer_when_durable(self, route(self, std::move(*events), decided_by{true, 0, false}), rp,
                      work_created_ptr{out});
  return rp;
}

caf::result<id_type, std::string>
create_user(project_ptr self, const std::string& name, const std::string& email) {
  auto auth = random_authenticator();
  auto e = self->state.logic.create_user(name, email, auth, self->state.clk->now());
  if (!e)
    return e.error();
  auto id = std::get<ev::user_created>(e->data).id;
  auto rp = self->make_response_promise<id_type, std::string>();
  answer_when_durable(self, route(self, {std::move(*e)}, decided_by{true, 0, false}), rp, id, auth);
  return rp;
}

/// The account `id` as it is now, for an answer; with `hosts`, its hosts too, with `detail`
/// its credit per app and recent results as well.
account_view_ptr
account_now(project_ptr self, id_type id, bool hosts = false, bool detail = false) {
  auto v = account_of(self->state.logic.state, id, hosts || detail ? &self->state.hosts : nullptr,
                      detail);
  return account_view_ptr{std::make_shared<account_view>(v ? std::move(*v) : account_view{})};
}

caf::result<account_view_ptr> show_account(project_ptr self, const account_query& q) {
  auto id = account_id(self->state.logic.state, q);
  if (id == 0)
    return caf::make_error(ec::unknown_account, "no such account");
  return account_now(self, id, q.hosts, q.detail);
}

caf::result<account_view_ptr> create_account(project_ptr self, const account_spec& spec) {
  auto e = self->state.logic.create_account(spec, random_authenticator(), self->state.clk->now());
  if (!e)
    return e.error();
  auto view = account_now(self, std::get<ev::user_created>(e->data).id);
  auto rp = self->make_response_promise<account_view_ptr>();
  answer_when_durable(self, route(self, {std::move(*e)}, decided_by{true, 0, false}), rp, view);
  return rp;
}

caf::result<account_view_ptr> change_account(project_ptr self, const account_update& update) {
  auto e = self->state.logic.change_account(update, self->state.clk->now());
  if (!e)
    return e.error();
  auto view = account_now(self, std::get<ev::user_changed>(e->data).id);
  auto rp = self->make_response_promise<account_view_ptr>();
  answer_when_durable(self, route(self, {std::move(*e)}, decided_by{true, 0, false}), rp, view);
  return rp;
}

caf::result<team_list_ptr> create_team(project_ptr self, const team_spec& spec) {
  auto e = self->state.logic.create_team(spec, self->state.clk->now());
  if (!e)
    return e.error();
  team_query q;
  q.id = std::get<ev::team_created>(e->data).id;
  auto view = team_list_ptr{
    std::make_shared<std::vector<team_view>>(find_teams(self->state.logic.state, q))};
  auto rp = self->make_response_promise<team_list_ptr>();
  answer_when_durable(self, route(self, {std::move(*e)}, decided_by{true, 0, false}), rp, view);
  return rp;
}

caf::result<std::uint64_t> import_credit(project_ptr self, const ev::credit_imported& import) {
  auto e = self->state.logic.import_credit(import, self->state.clk->now());
  if (!e)
    return e.error();
  std::uint64_t n = import.records.size();
  auto rp = self->make_response_promise<std::uint64_t>();
  answer_when_durable(self, route(self, {std::move(*e)}, decided_by{true, 0, false}), rp, n);
  return rp;
}

caf::result<std::uint32_t, bool> change_apps(project_ptr self, const app_change& change) {
  app_changed out;
  auto events = self->state.logic.change_apps(change, self->state.clk->now(), out);
  if (!events)
    return events.error();
  auto rp = self->make_response_promise<std::uint32_t, bool>();
  answer_when_durable(self, route(self, std::move(*events), decided_by{true, 0, false}), rp, out.id,
                      out.changed);
  return rp;
}

void files_deleted(project_ptr self, id_type wu, std::vector<std::string> inputs) {
  auto& st = self->state;
  auto events = st.logic.files_deleted(wu, std::move(inputs), st.clk->now());
  append(self, route(self, std::move(events), decided_by{true, 0, false}));
  // State uploads waiting for these files to go.
  for (auto x : std::exchange(st.release_due, {}))
    release_files(self, x);
}

// -- work sequences -------------------------------------------------------------------------

caf::result<sequence_view_ptr> create_sequence(project_ptr self, const sequence_spec& spec) {
  auto& st = self->state;
  auto e = st.logic.create_sequence(spec, st.clk->now());
  if (!e)
    return e.error();
  sequence_state seq;
  apply(seq, *e);
  auto view = std::make_shared<sequence_view>(sequence_view{seq, spec.app});
  spawn_sequence(self, std::move(seq));
  auto rp = self->make_response_promise<sequence_view_ptr>();
  // The sequence actor has its state already: the event is not sent to it again.
  answer_when_durable(self, route(self, {std::move(*e)}, decided_by{true, 0, true}), rp,
                      sequence_view_ptr{view});
  return rp;
}

/// The sequence actor named by `key` (name or id), with its app's name.
caf::expected<std::pair<work_sequence_actor, std::string>>
sequence_by_key(project_ptr self, const std::string& key) {
  auto& st = self->state;
  auto entry = st.logic.state.sequence(key);
  if (entry == nullptr || !st.sequences.count(entry->id))
    return caf::make_error(ec::unknown_sequence, "no sequence '" + key + "'");
  return std::pair{st.sequences.at(entry->id), app_name(st.logic.state, entry->app)};
}

caf::result<sequence_view_ptr> show_sequence(project_ptr self, const std::string& key) {
  auto found = sequence_by_key(self, key);
  if (!found)
    return found.error();
  auto rp = self->make_response_promise<sequence_view_ptr>();
  self->request(found->first, std::chrono::seconds(10), atom::state_v)
    .then(
      [rp, name = found->second](const sequence_state_ptr& s) mutable {
        rp.deliver(sequence_view_ptr{std::make_shared<sequence_view>(sequence_view{*s, name})});
      },
      [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<sequence_list_ptr>
list_sequences(project_ptr self, std::uint64_t offset, std::uint64_t limit) {
  auto& st = self->state;
  std::vector<std::pair<work_sequence_actor, std::string>> page;
  std::uint64_t i = 0;
  for (const auto& [id, entry] : st.logic.state.sequences) {
    if (i++ < offset)
      continue;
    if (page.size() >= limit)
      break;
    if (auto it = st.sequences.find(id); it != st.sequences.end())
      page.emplace_back(it->second, app_name(st.logic.state, entry.app));
  }
  auto out = std::make_shared<std::vector<sequence_view>>(page.size());
  if (page.empty())
    return sequence_list_ptr{out};
  auto rp = self->make_response_promise<sequence_list_ptr>();
  auto pending = std::make_shared<std::size_t>(page.size());
  for (std::size_t k = 0; k < page.size(); ++k)
    self->request(page[k].first, std::chrono::seconds(10), atom::state_v)
      .then(
        [rp, out, pending, k, name = page[k].second](const sequence_state_ptr& s) mutable {
          (*out)[k] = sequence_view{*s, name};
          if (--*pending == 0)
            rp.deliver(sequence_list_ptr{out});
        },
        [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<sequence_view_ptr>
command_sequence(project_ptr self, const std::string& key, const seq_command_ptr& cmd) {
  auto found = sequence_by_key(self, key);
  if (!found)
    return found.error();
  if (cmd->what == seq_command::op::reassign && !self->state.logic.state.hosts.count(cmd->to))
    return caf::make_error(ec::unknown_host, "no host " + std::to_string(cmd->to));
  auto rp = self->make_response_promise<sequence_view_ptr>();
  self->request(found->first, std::chrono::seconds(30), atom::command_v, cmd)
    .then(
      [self, rp, name = found->second](const seq_answer_ptr& a) mutable {
        auto events = absorb_sequence_events(self, a->events);
        auto view = std::make_shared<sequence_view>(sequence_view{*a->state, name});
        answer_when_durable(self, std::move(events), rp, sequence_view_ptr{view});
      },
      [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

caf::result<workunit_view_ptr> cancel_workunit(project_ptr self, const std::string& key,
                                               const std::string& reason, const std::string& by) {
  auto& st = self->state;
  auto e = st.logic.cancel_workunit(key, reason, by, st.clk->now());
  if (!e)
    return e.error();
  auto id = std::get<ev::workunit_cancelled>(e->data).wu;
  auto events = route(self, {std::move(*e)}, decided_by{true, 0, false});
  // Finished: its files go after the grace period, as a failed workunit's.
  hand_over_files(self, id, st.config.file_grace_period);
  auto view = workunit_view_ptr{
    std::make_shared<workunit_view>(view_of(st.logic.state, *st.logic.state.workunit(id)))};
  auto rp = self->make_response_promise<workunit_view_ptr>();
  answer_when_durable(self, std::move(events), rp, view);
  return rp;
}

// -- views ----------------------------------------------------------------------------------

caf::result<workunit_view_ptr> show_workunit(project_ptr self, const std::string& key) {
  const auto& ps = self->state.logic.state;
  auto wu = workunit_by_key(ps, key);
  if (wu == nullptr)
    return caf::make_error(ec::unknown_workunit, "no workunit '" + key + "'");
  return workunit_view_ptr{std::make_shared<workunit_view>(view_of(ps, *wu))};
}

caf::result<host_view_ptr> show_host(project_ptr self, id_type id) {
  const auto& ps = self->state.logic.state;
  auto v = host_view_of(ps, self->state.hosts.copy_of(id), id);
  if (!v)
    return caf::make_error(ec::unknown_host, "no host " + std::to_string(id));
  v->last_contact = self->state.hosts.last_contact(id);
  if (v->state)
    for (auto r = v->state->finished.rbegin(); r != v->state->finished.rend(); ++r)
      if (auto row = result_row_of(ps, *r))
        v->finished.push_back(std::move(*row));
  return host_view_ptr{std::make_shared<host_view>(std::move(*v))};
}

caf::result<double> upload_limit(project_ptr self, const std::string& name, id_type host) {
  if (auto limit = self->state.logic.upload_limit(name, host))
    return *limit;
  return caf::make_error(ec::unknown_workunit, "'" + name
                                                 + "' is no output of a result in progress on host "
                                                 + std::to_string(host));
}

/// An output finished uploading: records the server's digest, answers once it is durable.
caf::result<bool> output_received(project_ptr self, const std::string& name, id_type host,
                                  std::uint64_t nbytes, const std::string& md5) {
  auto& st = self->state;
  auto events = st.logic.output_received(name, host, nbytes, md5, st.clk->now());
  if (!events)
    return events.error();
  auto rp = self->make_response_promise<bool>();
  answer_when_durable(self, route(self, std::move(*events), decided_by{true, 0, false}), rp, true);
  return rp;
}

} // namespace

project_actor::behavior_type project(project_ptr self, project_init init) {
  start(self, std::move(init));
  return {
    // -- scheduler RPCs and events decided elsewhere --
    [self](atom::rpc, const sched_request_ptr& req, rpc_token token) {
      serve_rpc(self, req, token);
    },
    [self](atom::deliver, const event_batch_ptr& batch) {
      // A sequence's own decisions (a relocation, a comparison), appended by it.
      append(self, absorb_sequence_events(self, *batch));
    },
    // -- admin commands --
    [self](atom::create, const work_batch_ptr& batch) { return create_work(self, *batch); },
    [self](atom::create, const std::string& name, const std::string& email) {
      return create_user(self, name, email);
    },
    [self](atom::create, const sequence_spec_ptr& spec) { return create_sequence(self, *spec); },
    [self](atom::command, const std::string& key, const seq_command_ptr& cmd) {
      return command_sequence(self, key, cmd);
    },
    [self](atom::credit, const credit_import_ptr& import) { return import_credit(self, *import); },
    [self](atom::app, const app_change_ptr& change) { return change_apps(self, *change); },
    // -- views --
    [self](atom::status) -> project_summary_ptr {
      return std::make_shared<project_summary>(summarize(self->state.logic.state));
    },
    [self](atom::status, atom::host) {
      return project_gauges_ptr{
        std::make_shared<project_gauges>(gauges_of(self->state.logic.state, self->state.hosts))};
    },
    [self](atom::workunit, const std::string& key) { return show_workunit(self, key); },
    [self](atom::workunit, const result_refs_ptr& refs) {
      auto names = std::make_shared<std::vector<std::string>>();
      names->reserve(refs->size());
      for (auto r : *refs)
        names->push_back(self->state.logic.state.result_name(r));
      return names_ptr{std::move(names)};
    },
    [self](atom::cancel, const std::string& key, const std::string& reason, const std::string& by) {
      return cancel_workunit(self, key, reason, by);
    },
    [self](atom::list, atom::workunit, std::uint64_t offset, std::uint64_t limit) {
      return workunit_list_ptr{std::make_shared<std::vector<workunit_view>>(
        workunit_page(self->state.logic.state, offset, limit))};
    },
    [self](atom::list, atom::workunit, const std::string& state, std::uint64_t offset,
           std::uint64_t limit) -> caf::result<workunit_list_ptr> {
      auto s = parse_wu_state(state);
      if (!s)
        return caf::make_error(ec::invalid_argument, "no workunit state '" + state + "'");
      return workunit_list_ptr{std::make_shared<std::vector<workunit_view>>(
        workunit_page(self->state.logic.state, offset, limit, s))};
    },
    [self](atom::host, id_type id) { return show_host(self, id); },
    [self](atom::list, atom::host, std::uint64_t offset, std::uint64_t limit) {
      auto page = host_page(self->state.logic.state, offset, limit);
      for (auto& h : page)
        h.last_contact = self->state.hosts.last_contact(h.reg.id);
      return host_list_ptr{std::make_shared<std::vector<host_view>>(std::move(page))};
    },
    [self](atom::sequence, const std::string& key) { return show_sequence(self, key); },
    [self](atom::list, atom::sequence, std::uint64_t offset, std::uint64_t limit) {
      return list_sequences(self, offset, limit);
    },
    [self](atom::list, atom::app) {
      return app_list_ptr{std::make_shared<std::vector<app_rec>>(self->state.logic.state.apps)};
    },
    [self](atom::list, atom::key) {
      return key_list_ptr{
        std::make_shared<std::vector<code_sign_key_rec>>(self->state.logic.state.code_sign_keys)};
    },
    [self](atom::list, atom::user) {
      return user_list_ptr{
        std::make_shared<std::vector<user_rec>>(users_of(self->state.logic.state))};
    },
    // -- accounts and teams (web RPCs, the site) --
    [self](atom::user, const account_query_ptr& q) { return show_account(self, *q); },
    [self](atom::create, const account_spec_ptr& spec) { return create_account(self, *spec); },
    [self](atom::user, const account_update_ptr& u) { return change_account(self, *u); },
    [self](atom::create, const team_spec_ptr& spec) { return create_team(self, *spec); },
    [self](atom::status, atom::workunit) {
      return server_status_ptr{std::make_shared<server_status_view>(
        server_status_of(self->state.logic.state, self->state.hosts, self->state.clk->now()))};
    },
    [self](atom::list, const listing_query_ptr& q) -> caf::result<listing_page_ptr> {
      auto page = listing_of(self->state.logic.state, *q);
      if (!page)
        return std::move(page.error());
      return listing_page_ptr{std::make_shared<listing_page>(std::move(*page))};
    },
    [self](atom::list, const top_query_ptr& q) {
      return top_page_ptr{std::make_shared<top_page>(top_of(self->state.logic.state, *q))};
    },
    [self](atom::team, const team_query_ptr& q) {
      return team_list_ptr{
        std::make_shared<std::vector<team_view>>(find_teams(self->state.logic.state, *q))};
    },
    [self](atom::state) { return live_world(self); },
    // -- files --
    [self](atom::upload, const std::string& name, id_type host) {
      return upload_limit(self, name, host);
    },
    [self](atom::upload, const std::string& name, id_type host, std::uint64_t nbytes,
           const std::string& md5) { return output_received(self, name, host, nbytes, md5); },
    [self](atom::cleanup, id_type wu) { release_files(self, wu); },
    [self](atom::cleanup, id_type wu, std::vector<std::string> inputs) {
      files_deleted(self, wu, std::move(inputs));
    },
    // -- timers and credit --
    [self](atom::tick) {
      append(self, sweep_deadlines(self));
      check_sequences(self);
      passivate_idle_hosts(self);
      schedule_tick(self);
    },
    [self](atom::normalize) {
      run_normalization(self);
      schedule_normalization(self);
    },
    [self](atom::credit) {
      auto& st = self->state;
      return credit_export_ptr{
        std::make_shared<credit_export>(st.logic.export_credit(st.last_stats, st.clk->now()))};
    },
    [self](atom::credit, const plan_class_scales_ptr& table) {
      self->state.cross_project = *table;
    },
  };
}

project_actor spawn_project(caf::actor_system& sys, project_init init) {
  return sys.spawn(project, std::move(init));
}

} // namespace cobble
