#include "actors/host.hpp"

#include "actors/autoflops.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace cobble {

host_info_rec host_info_from(const sched_request& req) {
  host_info_rec h;
  h.host_cpid = req.host.host_cpid;
  h.domain_name = req.host.domain_name;
  h.p_ncpus = req.host.p_ncpus;
  h.p_vendor = req.host.p_vendor;
  h.p_model = req.host.p_model;
  h.p_fpops = req.host.p_fpops;
  h.p_iops = req.host.p_iops;
  h.m_nbytes = req.host.m_nbytes;
  h.d_free = req.host.d_free;
  h.os_name = req.host.os_name;
  h.os_version = req.host.os_version;
  for (const auto& c : req.coprocs) {
    h.coprocs.emplace_back(static_cast<std::uint8_t>(c.type), c.count);
    h.coproc_peak_flops.push_back(c.peak_flops);
  }
  return h;
}

report_rec report_from(const reported_result& r) {
  constexpr double year = 365.0 * 86400;
  report_rec rep;
  rep.client_state = r.state;
  rep.exit_status = r.exit_status;
  // BOINC's "files uploaded" state with exit 0 is a success; anything else is an error.
  rep.success = r.state == 5 && r.exit_status == 0;
  rep.elapsed = r.final_elapsed_time;
  rep.cpu = r.final_cpu_time;
  if (!std::isfinite(rep.elapsed) || rep.elapsed < 0 || rep.elapsed > year)
    rep.flags |= flag_bad_elapsed;
  if (!std::isfinite(rep.cpu) || rep.cpu < 0 || rep.cpu > 64 * year)
    rep.flags |= flag_bad_cpu;
  for (const auto& f : r.files)
    rep.outputs.push_back(file_rec{f.name, f.nbytes, f.md5_cksum});
  return rep;
}

std::map<std::uint32_t, autoflops_settings> autoflops_by_version(const std::vector<app_rec>& apps) {
  std::map<std::uint32_t, autoflops_settings> out;
  for (const auto& a : apps) {
    for (const auto& v : a.versions)
      out[v.id] = a.autoflops;
    for (std::uint8_t t = 0; t < n_resource_types; ++t)
      out[anonymous_version_id(a.id, t)] = a.autoflops;
  }
  return out;
}

namespace {

struct host_actor_state {
  host_state host;
  log_actor log;
  project_actor project;
  clock_ptr clk;
  credit_settings credit;
  std::map<std::uint32_t, autoflops_settings> autoflops;

  /// The cherry-picking countermeasures of the version's app, when its policy is app_units.
  const autoflops_settings* app_units_policy(std::uint32_t version) const {
    auto i = autoflops.find(version);
    if (i == autoflops.end() || i->second.policy != credit_policy::app_units)
      return nullptr;
    return &i->second;
  }
  static inline const char* name = "host";
};

using host_ptr = host_actor::stateful_pointer<host_actor_state>;

event make_event(host_ptr self, payload p) {
  event e;
  e.time = self->state.clk->now();
  e.project = 0;
  e.data = std::move(p);
  return e;
}

/// Records the jobs the project dispatched to this host as results in progress.
void record_grant(host_ptr self, const job_grant& grant, std::uint16_t project_index) {
  for (const auto& job : grant.jobs) {
    event e;
    e.time = job.time;
    e.project = project_index;
    e.data = job.dispatched;
    apply(self->state.host, e, job.result.name, self->state.credit);
  }
}

} // namespace

void add_grant(sched_reply& reply, const job_grant& grant) {
  std::set<std::string> files;
  for (const auto& f : reply.files)
    files.insert(f.name);
  for (const auto& job : grant.jobs) {
    for (const auto& f : job.files)
      if (files.insert(f.name).second)
        reply.files.push_back(f);
    reply.workunits.push_back(job.workunit);
    reply.results.push_back(job.result);
  }
  reply.sequences_revoked = grant.sequences_revoked;
  reply.result_aborts.insert(reply.result_aborts.end(), grant.aborts.begin(), grant.aborts.end());
  reply.messages.insert(reply.messages.end(), grant.messages.begin(), grant.messages.end());
  reply.app_units = grant.app_units;
}

host_actor spawn_host(caf::actor_system& sys, host_init init) {
  auto fn = [](host_ptr self, host_init in,
               std::uint16_t project_index) -> host_actor::behavior_type {
    self->state.host = std::move(in.state);
    self->state.log = in.log;
    self->state.project = in.project;
    self->state.clk = in.clk;
    self->state.credit = in.credit;
    self->state.autoflops = std::move(in.autoflops);
    auto append = [self, project_index](std::vector<event> events) {
      if (events.empty())
        return;
      for (auto& e : events)
        e.project = project_index;
      self->send(self->state.log, atom::append_v,
                 event_batch_ptr{std::make_shared<std::vector<event>>(std::move(events))});
    };
    // Serves one RPC; `done` gets the reply once the project's part is done (the reply's
    // events are appended then, not yet durable). With a sink, when the project has a part,
    // the project finishes the RPC instead (`done` is not called): the host's events travel
    // with the job request, and the project appends them before its dispatches.
    auto serve = [self, append,
                  project_index](const rpc_context_ptr& ctx, const sched_request_ptr& req,
                                 const rpc_sink_ptr& sink,
                                 std::function<void(std::shared_ptr<sched_reply>)> done) {
      auto& st = self->state;
      auto reply = std::make_shared<sched_reply>();
      reply->project_name = ctx->project_name;
      reply->request_delay = ctx->request_delay;
      reply->next_rpc_delay = ctx->next_rpc_delay;
      reply->host = st.host.id;
      if (ctx->new_host)
        reply->hostid = st.host.id;
      reply->user_name = ctx->user.name;
      reply->userid = ctx->user.id;
      auto now = st.clk->now();
      reply->user_total_credit = ctx->user.credit.total;
      reply->user_expavg_credit = ctx->user.credit.expavg_at(now, ctx->credit_half_life);
      reply->host_total_credit = ctx->host_credit.total;
      reply->host_expavg_credit = ctx->host_credit.expavg_at(now, ctx->credit_half_life);
      std::vector<event> events;
      auto info = host_info_from(*req);
      if (!ctx->new_host && !(info == st.host.info)) {
        auto e = make_event(self, ev::host_described{st.host.id, info});
        e.project = project_index;
        apply(st.host, e, {}, st.credit);
        events.push_back(std::move(e));
      }
      std::vector<id_type> reported;
      for (const auto& r : req->results) {
        reply->result_acks.push_back(r.name);
        auto held = st.host.in_progress.find(r.name);
        if (held == st.host.in_progress.end()) {
          spdlog::info("host {} reported result '{}' it does not hold (not sent to it, "
                       "already reported or timed out): acknowledged, not applied",
                       st.host.id, r.name);
          if (is_sequence_name(r.name))
            reply->messages.push_back({"Result " + r.name
                                         + " was not accepted: this host no longer holds it (its "
                                           "work sequence was taken from the host, or ended).",
                                       false});
          continue;
        }
        auto rep = report_from(r);
        if ((rep.flags & (flag_bad_elapsed | flag_bad_cpu)) != 0)
          spdlog::warn("host {} reported result '{}' with implausible times (elapsed {}, "
                       "cpu {}): stored as reported, flagged",
                       st.host.id, r.name, r.final_elapsed_time, r.final_cpu_time);
        reported.push_back(held->second.result.wu);
        // AutoFlops: the job's app units, and its raw_flops_per_au when the client says
        // what its raw FLOPS were (its own figure, or T × raw_flops_per_sec / A).
        if (std::isfinite(r.app_units) && r.app_units > 0)
          rep.app_units = r.app_units;
        if (std::isfinite(r.raw_flops_per_au) && r.raw_flops_per_au > 0) {
          rep.raw_flops_per_au = r.raw_flops_per_au;
        } else {
          const app_unit_version* match = nullptr;
          int matches = 0;
          for (const auto& u : req->app_unit_versions)
            if (u.version_num == r.version_num && u.plan_class == r.plan_class
                && u.raw_flops_per_sec > 0) {
              match = &u;
              ++matches;
            }
          if (matches == 1)
            rep.raw_flops_per_au = raw_flops_per_au(rep.elapsed, match->raw_flops_per_sec,
                                                    reported_app_units(rep))
                                     .value_or(0);
        }
        // The report carries what the host knows of its scale for that version, so the
        // validator can compute Scale(H) without asking.
        ev::result_reported x{held->second.result, st.host.id, rep, {}, true, 0};
        auto policy = st.app_units_policy(held->second.app_version_id);
        if (auto hav = st.host.app_versions.find(held->second.app_version_id);
            hav != st.host.app_versions.end()) {
          x.host_pfc = hav->second.pfc;
          x.probation = hav->second.scale_probation;
          x.scale_time = hav->second.host_scale_time;
          // Cherry picking: a host whose error rate (aborts, timeouts, errors) is high is
          // under suspicion; its jobs validated alone are checked.
          if (policy && hav->second.error_rate > policy->suspicion_error_rate)
            x.report.flags |= flag_suspect;
        }
        if (policy && rep.client_state == client_state_aborted)
          x.quota_factor = policy->abort_quota_factor;
        auto e = make_event(self, std::move(x));
        e.project = project_index;
        apply(st.host, e, r.name, st.credit);
        events.push_back(std::move(e));
      }
      auto finish = [reply, done = std::move(done)]() { done(reply); };
      bool wants = false;
      auto jr = std::make_shared<job_request>();
      jr->host = st.host.id;
      jr->info = info;
      for (int t = 0; t < n_resource_types; ++t) {
        jr->requests.push_back(req->request_for(static_cast<resource_type>(t)));
        wants = wants || jr->requests.back().wants_work();
      }
      jr->send_work = wants && !req->dont_send_work;
      jr->sequences_held = req->sequences_held;
      jr->reported = std::move(reported);
      for (const auto& o : req->other_results)
        jr->other_results.push_back(o.name);
      // Without work to send, the project is asked only about listed sequences and
      // results a sequence may have taken back.
      bool seq_news = !req->sequences_held.empty()
                      || std::any_of(jr->other_results.begin(), jr->other_results.end(),
                                     [](const std::string& n) { return is_sequence_name(n); });
      if (!jr->send_work && !seq_news) {
        append(std::move(events));
        finish();
        return;
      }
      for (const auto& [id, hav] : st.host.app_versions)
        if (hav.elapsed_n > 0)
          jr->avg_elapsed[id] = hav.elapsed_sum / static_cast<double>(hav.elapsed_n);
      jr->anonymous = req->platform_name == "anonymous" || !req->app_versions.empty();
      jr->offered = req->app_versions;
      jr->platform = req->platform_name;
      for (const auto& [id, hav] : st.host.app_versions)
        jr->hints[id] = version_hint{hav.jobs_left(now), hav.et, hav.spau, hav.spau_var};
      jr->unit_versions = req->app_unit_versions;
      if (sink) {
        // One message, no answer: the project appends these events with its dispatches,
        // finishes the reply and hands it over (one actor hand-off and one append fewer
        // per RPC than asking and finishing here).
        jr->events = std::make_shared<std::vector<event>>(std::move(events));
        jr->reply = std::move(reply);
        self->send(st.project, atom::get_jobs_v, job_request_ptr{std::move(jr)}, sink);
        return;
      }
      append(std::move(events));
      self->request(st.project, std::chrono::seconds(30), atom::get_jobs_v, job_request_ptr{jr})
        .then(
          [self, reply, finish, project_index](const job_grant_ptr& grant) mutable {
            record_grant(self, *grant, project_index);
            add_grant(*reply, *grant);
            finish();
          },
          [self, reply, finish](caf::error& err) mutable {
            spdlog::error("host {}: job request failed: {}", self->state.host.id,
                          caf::to_string(err));
            reply->messages.push_back({"The server could not select jobs; retrying later.", false});
            finish();
          });
    };
    return {
      [self, serve](atom::rpc, const rpc_context_ptr& ctx,
                    const sched_request_ptr& req) -> caf::result<sched_reply_ptr> {
        auto rp = self->make_response_promise<sched_reply_ptr>();
        serve(ctx, req, nullptr, [self, rp](const std::shared_ptr<sched_reply>& reply) mutable {
          self->request(self->state.log, caf::infinite, atom::sync_v)
            .then([rp, reply](std::uint64_t) mutable { rp.deliver(sched_reply_ptr{reply}); });
        });
        return rp;
      },
      [self, serve](atom::rpc, const rpc_context_ptr& ctx, const sched_request_ptr& req,
                    const rpc_sink_ptr& sink) {
        serve(ctx, req, sink, [self, sink](std::shared_ptr<sched_reply> reply) {
          // The edge renders the reply here; the log hands it to the connection right after
          // the commit that makes its events durable (no message back to this actor).
          auto then = sink->ready(sched_reply_ptr{std::move(reply)});
          self->send(self->state.log, atom::sync_v,
                     durable_callback_ptr{
                       std::make_shared<const std::function<void()>>(std::move(then))});
        });
      },
      [self, append, project_index](atom::timeout, const result_names_ptr& names) {
        std::vector<event> events;
        for (const auto& name : *names) {
          auto held = self->state.host.in_progress.find(name);
          if (held == self->state.host.in_progress.end())
            continue;
          ev::result_timed_out x{held->second.result, self->state.host.id};
          if (auto policy = self->state.app_units_policy(held->second.app_version_id))
            x.quota_factor = policy->abort_quota_factor;
          auto e = make_event(self, x);
          e.project = project_index;
          apply(self->state.host, e, name, self->state.credit);
          events.push_back(std::move(e));
        }
        append(std::move(events));
      },
      [self, append, project_index](atom::validated, const validation_notices_ptr& notices) {
        std::vector<event> events;
        for (const auto& n : *notices) {
          auto e = make_event(self, n.data);
          e.project = project_index;
          apply(self->state.host, e, n.result_name, self->state.credit);
          events.push_back(std::move(e));
        }
        append(std::move(events));
      },
      [self, project_index](atom::deliver, const job_grant_ptr& grant) {
        record_grant(self, *grant, project_index);
      },
      [self](atom::state) -> host_state_ptr {
        return std::make_shared<host_state>(self->state.host);
      },
      [self](atom::deliver, const event_batch_ptr& batch) {
        for (const auto& e : *batch)
          apply(self->state.host, e, {}, self->state.credit);
      },
    };
  };
  auto index = init.project_index;
  return sys.spawn(fn, std::move(init), index);
}

} // namespace cobble
