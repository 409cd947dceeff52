/// A scheduler RPC in the project actor, from admission to the one append that carries its
/// answer (docs/architecture.md, "One scheduler RPC").

#include "actors/error.hpp"
#include "actors/project_flow.hpp"
#include "actors/routing.hpp"
#include "actors/work_sequence.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <cmath>
#include <stdexcept>

namespace cobble {

namespace {

template <class T>
void move_into(std::vector<T>& out, std::vector<T>&& more) {
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

/// A request the project admitted: its user and its host.
struct admitted {
  id_type user = 0;
  id_type host = 0;
  bool new_host = false;
  /// A host of the user found by its CPID or traits (host_reattached): the client came
  /// without its id.
  bool reattached = false;
  ev::host_match match = ev::host_match::cpid;
};

/// How recently a host of the same traits but another CPID must have been heard from to be
/// taken for another machine (cloned from one image, running beside it on one account) rather
/// than this client before it lost its CPID.
constexpr double traits_quiet_seconds = 86400;

/// The user's host that a client without a known CPID is, by BOINC's second rule: the newest
/// with the same host name, OS, CPU model and memory (project_state::host_with_traits), not
/// for a client that runs beside others on one machine (allow_multiple_clients). Cobble's
/// deviation: a candidate that reported another CPID within a day is another machine.
id_type host_by_traits(project_ptr self, id_type user, const sched_request& req, time_us now) {
  auto& st = self->state;
  const auto& ps = st.logic.state;
  if (req.allow_multiple_clients)
    return 0;
  auto found = ps.host_with_traits(user, host_info_from(req));
  if (found == 0)
    return 0;
  auto cpid = ps.hosts.at(found).cpid;
  if (cpid != 0 && cpid != cpid_key(req.host.host_cpid)) {
    auto other = st.hosts.copy_of(found);
    if (other && other->last_rpc > now - seconds_to_us(traits_quiet_seconds))
      return 0;
  }
  return found;
}

/// Authenticates a request and finds or registers its host. Returns the refusal to send back,
/// or null with `out` set (and the registration, if any, in `events`).
std::shared_ptr<const sched_reply> admit(project_ptr self, const sched_request& req, time_us now,
                                         admitted& out, std::vector<event>& events) {
  auto& st = self->state;
  auto& ps = st.logic.state;
  auto u = ps.user_by_auth.find(req.authenticator);
  if (u == ps.user_by_auth.end()) {
    spdlog::info("scheduler RPC with unknown account key refused");
    return std::make_shared<const sched_reply>(
      sched_reply::error("Unknown account key. Check the key you attached with.",
                         std::max(st.config.request_delay, 3600.0)));
  }
  out.user = u->second;
  auto h = ps.hosts.find(req.hostid);
  if (req.hostid == 0 || h == ps.hosts.end() || h->second.user != u->second) {
    // A client without its host id (attached again, or its state file lost) that the user
    // has seen before keeps its host: by the CPID the client keeps across detach and attach.
    // A client that lost its CPID (a new data directory on a machine without a MAC address):
    // by the machine's traits.
    auto how = ev::host_match::cpid;
    auto found = ps.host_with_cpid(u->second, req.host.host_cpid);
    if (found == 0) {
      how = ev::host_match::traits;
      found = host_by_traits(self, u->second, req, now);
    }
    if (found != 0) {
      out.host = found;
      out.reattached = true;
      out.match = how;
      move_into(events, route(self, {st.logic.reattach_host(found, u->second, how, now)},
                              decided_by{true, 0, false}));
      return nullptr;
    }
    if (auto why = st.logic.host_registration_refusal(u->second, now,
                                                      st.config.limits.max_new_hosts_per_day)) {
      spdlog::info("user {}: new host refused: {}", u->second, *why);
      return std::make_shared<const sched_reply>(
        sched_reply::error(*why, std::max(st.config.request_delay, 3600.0)));
    }
    auto e = st.logic.register_host(u->second, host_info_from(req), now);
    out.host = std::get<ev::host_registered>(e.data).id;
    out.new_host = true;
    move_into(events, route(self, {std::move(e)}, decided_by{true, 0, false}));
  } else {
    out.host = req.hostid;
  }
  return nullptr;
}

/// A reattached client that lists no job it holds (`<other_results>` empty) and did not set
/// allow_multiple_clients, or one found by its traits, lost what the host had in progress (a
/// detach deletes the project's jobs): those results are written off, so that their workunits are
/// replaced now rather than at their deadlines, as BOINC's scheduler does. The host keeps its
/// results over, so it never gets a replacement of its own job. Adds the events and the workunits
/// to transition.
void write_off_detached(project_ptr self, const sched_request& req, const admitted& who,
                        host_logic& host, sched_reply& reply, std::vector<event>& events,
                        std::set<id_type>& dirty) {
  // Found by its traits, the client is a new installation: it holds none of the host's jobs
  // whatever it lists (BOINC marks them over on that path always).
  if (who.match == ev::host_match::cpid
      && (req.allow_multiple_clients || !req.other_results.empty()))
    return;
  auto id = who.host;
  auto& st = self->state;
  auto off = route(self, host.write_off(ev::write_off_reason::detached, st.clk->now()),
                   decided_by{false, id, false});
  if (off.empty())
    return;
  for (const auto& e : off)
    if (auto r = result_of(e.data))
      dirty.insert(r->wu);
  reply.messages.push_back(
    {"This computer attached again as host " + std::to_string(id) + ": "
       + std::to_string(off.size())
       + (off.size() == 1 ? " task it had in progress was" : " tasks it had in progress were")
       + " given up and will be sent to other computers.",
     false});
  move_into(events, std::move(off));
}

/// Results the host holds that its client no longer lists (host_logic::lost), when the
/// project resends lost results and the client asks for work (BOINC's conditions): sent again
/// in this reply, or written off (their workunits join `dirty`). After a resend the client
/// gets no new work in this RPC (as BOINC): its queue is what it was before it lost them.
void recover_lost(project_ptr self, const sched_request& req, const host_logic& host,
                  job_request& jr, job_grant& grant, sched_reply& reply, std::vector<event>& events,
                  std::set<id_type>& dirty) {
  auto& st = self->state;
  if (!st.config.resend_lost_results || !jr.send_work)
    return;
  auto lost = host.lost(req);
  if (lost.empty())
    return;
  std::vector<event> decided;
  auto r = st.logic.recover_lost(jr, lost, st.clk->now(), decided);
  move_into(events, route(self, std::move(decided), decided_by{true, 0, false}));
  dirty.insert(r.written_off.begin(), r.written_off.end());
  move_into(reply.messages, std::move(r.messages));
  if (r.resent.empty())
    return;
  spdlog::info("host {}: {} lost results sent again", jr.host, r.resent.size());
  move_into(grant.jobs, std::move(r.resent));
  jr.send_work = false;
}

/// limits.min_sendwork_interval: a work request sooner than that after the host's last
/// served one gets no work, the remaining time as its request_delay and a message; its
/// reports were accepted already.
void throttle(project_ptr self, id_type host, job_request& jr, sched_reply& reply, time_us now) {
  auto& st = self->state;
  if (!jr.send_work)
    return;
  double interval = st.config.limits.min_sendwork_interval.value_or(st.config.request_delay);
  std::optional<time_us> last;
  if (auto i = st.last_work_request.find(host); i != st.last_work_request.end())
    last = i->second;
  double wait = sendwork_wait(last, now, interval);
  if (wait <= 0) {
    st.last_work_request[host] = now;
    return;
  }
  jr.send_work = false;
  reply.request_delay = std::max(reply.request_delay, std::ceil(wait));
  reply.messages.push_back({"Not sending work: last request too recent. Please wait "
                              + std::to_string(static_cast<long long>(std::ceil(wait)))
                              + " seconds.",
                            false});
}

/// The reply's header: identity, delays, the user's and the host's credit.
std::shared_ptr<sched_reply> begin_reply(project_ptr self, const admitted& who, time_us now) {
  auto& st = self->state;
  const auto& ps = st.logic.state;
  auto reply = std::make_shared<sched_reply>();
  reply->project_name = ps.long_name;
  reply->request_delay = st.config.request_delay;
  reply->next_rpc_delay = st.config.next_rpc_delay;
  reply->host = who.host;
  if (who.new_host || who.reattached)
    reply->hostid = who.host;
  const auto& user = ps.users.at(who.user);
  reply->user_name = user.name;
  reply->userid = user.id;
  reply->team_name = user.team;
  auto half_life = ps.credit.credit_half_life;
  reply->user_total_credit = user.credit.total;
  reply->user_expavg_credit = user.credit.expavg_at(now, half_life);
  if (auto h = ps.hosts.find(who.host); h != ps.hosts.end()) {
    reply->host_total_credit = h->second.credit.total;
    reply->host_expavg_credit = h->second.credit.expavg_at(now, half_life);
  }
  return reply;
}

/// Completes a job request: applies what the sequences decided, dispatches the elements they
/// picked, then fills the rest of the request with ordinary work. Returns the events.
std::vector<event> finish_jobs(project_ptr self, const job_request& req, job_grant& grant,
                               const std::vector<seq_answer_ptr>& answers) {
  auto& st = self->state;
  auto now = st.clk->now();
  std::vector<event> decided;
  for (const auto& a : answers)
    decided.insert(decided.end(), a->events.begin(), a->events.end());
  auto events = absorb_sequence_events(self, decided);
  std::vector<event> dispatched;
  double seq_secs = 0;
  // One call for every sequence's elements, so that the (host, version) daily quota holds
  // across them.
  std::vector<id_type> send;
  for (const auto& a : answers)
    send.insert(send.end(), a->send.begin(), a->send.end());
  std::map<std::uint32_t, int> seq_sent;  // per app version
  std::map<std::uint32_t, int> seq_quota; // its initial daily quota
  for (auto& j : st.logic.dispatch_sequence(req, send, now, dispatched)) {
    seq_secs += j.runtime_estimate;
    ++seq_sent[j.dispatched.version.app_version_id];
    seq_quota[j.dispatched.version.app_version_id] = j.dispatched.jobs_per_day;
    grant.jobs.push_back(std::move(j));
  }
  if (req.send_work) {
    auto rest = req;
    if (!rest.requests.empty())
      rest.requests[0].req_secs = std::max(0.0, rest.requests[0].req_secs - seq_secs);
    // Elements sent now count against the day's quota of ordinary jobs too (also when the
    // host had no record of the version yet: then against the initial quota).
    for (auto& [vid, n] : seq_sent) {
      auto& hint = rest.hints[vid];
      int left = hint.jobs_left >= 0 ? hint.jobs_left : seq_quota[vid];
      if (left > 0 || hint.jobs_left >= 0)
        hint.jobs_left = std::max(0, left - n);
    }
    for (auto& j : st.logic.select_jobs(rest, now, dispatched, &grant.messages))
      grant.jobs.push_back(std::move(j));
    move_into(grant.messages, st.logic.no_version_messages(req, grant.jobs));
  }
  if (!grant.jobs.empty() || !req.unit_versions.empty()) {
    std::set<std::uint32_t> sent;
    for (const auto& j : grant.jobs)
      sent.insert(j.app);
    grant.app_units = st.logic.app_units_infos(sent);
  }
  st.logic.add_deliveries(req, grant);
  move_into(events, route(self, std::move(dispatched), decided_by{true, 0, false}));
  return events;
}

/// The sequence part of a job request: what the project tells the host at once (revoked
/// sequences), and the sequences to ask.
project_logic::sequence_plan plan(project_ptr self, const job_request& req, job_grant& grant) {
  auto& st = self->state;
  auto p = st.logic.plan_sequences(req, static_cast<std::uint32_t>(st.config.sequence_high_water),
                                   static_cast<std::uint32_t>(st.config.sequences_per_host));
  grant.sequences_revoked = p.revoked;
  for (const auto& name : p.revoked)
    grant.messages.push_back(
      {"Work sequence " + name + " is no longer assigned to this host.", false});
  return p;
}

/// Asks every sequence of the plan, then finishes the RPC with what they answered. The
/// events decided before must already be appended: other RPCs run while the sequences think.
void ask_sequences(project_ptr self, const project_logic::sequence_plan& p,
                   std::shared_ptr<const job_request> req, std::shared_ptr<job_grant> grant,
                   std::shared_ptr<sched_reply> reply, rpc_token token) {
  auto& st = self->state;
  auto answers = std::make_shared<std::vector<seq_answer_ptr>>();
  auto pending = std::make_shared<std::size_t>(p.queries.size());
  auto done = [self, req = std::move(req), grant = std::move(grant), reply = std::move(reply),
               token, answers, pending]() {
    if (--*pending > 0)
      return;
    auto events = finish_jobs(self, *req, *grant, *answers);
    add_grant(*reply, *grant);
    answer_when_durable(self, std::move(events), token, reply);
  };
  for (auto& [id, q] : p.queries) {
    auto it = st.sequences.find(id);
    if (it == st.sequences.end()) {
      done();
      continue;
    }
    self
      ->request(it->second, std::chrono::seconds(30), atom::rpc_v,
                seq_query_ptr{std::make_shared<seq_query>(q)})
      .then(
        [answers, done](const seq_answer_ptr& a) mutable {
          answers->push_back(a);
          done();
        },
        [id = id, done](caf::error& err) mutable {
          spdlog::error("sequence {} did not answer: {}", id, describe(err));
          done();
        });
  }
}

} // namespace

void serve_rpc(project_ptr self, const sched_request_ptr& req, rpc_token token) {
  auto& st = self->state;
  auto now = st.clk->now();
  std::vector<event> events;
  admitted who;
  if (auto refusal = admit(self, *req, now, who, events)) {
    answer_when_durable(self, std::move(events), token, std::move(refusal));
    return;
  }
  auto reply = begin_reply(self, who, now);
  auto* hs = st.hosts.find(who.host, now);
  if (hs == nullptr) // admitted hosts are registered, and every registered host has a state
    throw std::logic_error("no state of admitted host " + std::to_string(who.host));
  host_logic host{*hs, st.host_config};
  auto info = host_info_from(*req);
  if (!who.new_host)
    if (auto described = host.describe(info, now))
      move_into(events, route(self, {std::move(*described)}, decided_by{false, who.host, false}));
  std::set<id_type> dirty;
  if (who.reattached)
    write_off_detached(self, *req, who, host, *reply, events, dirty);
  auto reports = host.report(*req, now);
  reply->result_acks = std::move(reports.acks);
  move_into(reply->messages, std::move(reports.messages));
  auto reported = route(self, std::move(reports.events), decided_by{false, who.host, false});
  for (const auto& e : reported)
    if (auto r = result_of(e.data))
      dirty.insert(r->wu);
  move_into(events, std::move(reported));
  if (!reports.unheld.empty()) {
    std::vector<event> decided;
    auto late = st.logic.late_reports(who.host, reports.unheld, now, decided);
    move_into(events, route(self, std::move(decided), decided_by{true, 0, false}));
    dirty.insert(late.workunits.begin(), late.workunits.end());
    move_into(reply->messages, std::move(late.messages));
  }
  auto request = host.job_request_for(*req, info, std::move(reports.workunits), now);
  // A client that could not check the files of a distributed version gets none of its work
  // (add_deliveries tells it why).
  request.code_sign = st.logic.key_standing_of(request.code_sign_key);
  auto grant = std::make_shared<job_grant>();
  recover_lost(self, *req, host, request, *grant, *reply, events, dirty);
  move_into(events, run_transitions(self, dirty));
  throttle(self, who.host, request, *reply, now);
  move_into(reply->messages, host.limit_messages(request));
  auto jr = std::make_shared<const job_request>(std::move(request));
  // Results taken back (cancelled, or a sequence's) are aborted whether the host asks for
  // work or not: a client on "no new tasks" would run them to the end for nothing.
  grant->aborts = st.logic.result_aborts(*jr);
  bool asks = wants_project(*jr);
  if (!asks && grant->jobs.empty()) {
    reply->result_aborts.insert(reply->result_aborts.end(), grant->aborts.begin(),
                                grant->aborts.end());
    answer_when_durable(self, std::move(events), token, std::move(reply));
    return;
  }
  // Lost results sent again finish like any grant (their versions, AutoFlops figures).
  auto p = asks ? plan(self, *jr, *grant) : project_logic::sequence_plan{};
  if (p.queries.empty()) {
    move_into(events, finish_jobs(self, *jr, *grant, {}));
    add_grant(*reply, *grant);
    answer_when_durable(self, std::move(events), token, std::move(reply));
    return;
  }
  append(self, std::move(events));
  ask_sequences(self, p, std::move(jr), std::move(grant), std::move(reply), token);
}

} // namespace cobble
