#include "actors/error.hpp"
#include "actors/project_logic_detail.hpp"
#include "actors/work_sequence.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace cobble {

using namespace detail;

// -- work sequences -------------------------------------------------------------

namespace {

/// The first version of an app the host can run, over the resource types in order.
std::optional<version_choice>
any_version(const app_rec& app, const job_request& req,
            const std::vector<config::plan_class_config>& plan_classes) {
  for (int t = 0; t < n_resource_types; ++t)
    if (auto c = choose_version(app, req, static_cast<resource_type>(t), plan_classes))
      return c;
  return std::nullopt;
}

} // namespace

caf::expected<event> project_logic::create_sequence(const sequence_spec& spec, time_us now) {
  auto bad = [](std::string text) {
    return caf::make_error(ec::invalid_argument, std::move(text));
  };
  if (!valid_wu_name(spec.name))
    return bad("sequence name '" + spec.name
               + "' must be 1-200 characters of letters, digits, _ - .");
  if (state.seq_by_name.count(spec.name))
    return caf::make_error(ec::duplicate, "a sequence named '" + spec.name + "' exists");
  auto app = state.app(spec.app);
  if (app == nullptr)
    return caf::make_error(ec::unknown_app, "no app named '" + spec.app + "'");
  if (spec.count < 1 || spec.count > 100000)
    return bad("count must be from 1 to 100000");
  if (spec.replicas < 1 || spec.replicas > 2)
    return bad("replicas must be 1 or 2");
  if (static_cast<std::uint64_t>(spec.count) * spec.replicas > max_sequence_wus)
    return bad("a sequence has at most " + std::to_string(max_sequence_wus) + " workunits");
  if (!(spec.max_result_time >= 0))
    return bad("max_result_time must not be negative");
  for (const auto& err :
       {positive("rsc_fpops_est", spec.rsc_fpops_est),
        positive("rsc_fpops_bound", spec.rsc_fpops_bound),
        positive("rsc_memory_bound", spec.rsc_memory_bound),
        positive("rsc_disk_bound", spec.rsc_disk_bound), check_delay_bound(spec.delay_bound)})
    if (err)
      return bad(describe(err));
  if (state.next_seq > max_sequence_id)
    return caf::make_error(ec::invalid_argument, "no sequence ids left");
  ev::sequence_created c;
  c.id = state.next_seq;
  c.name = spec.name;
  c.app = app->id;
  c.replicas = spec.replicas;
  c.accept_all = app->validator == 1;
  c.by = spec.by.empty() ? "admin" : spec.by;
  auto& p = c.params;
  p.command_line = spec.command_line;
  p.rsc_fpops_est = spec.rsc_fpops_est.value_or(app->rsc_fpops_est);
  p.rsc_fpops_bound = spec.rsc_fpops_bound.value_or(
    std::max(app->rsc_fpops_bound, p.rsc_fpops_est * 10));
  p.rsc_memory_bound = spec.rsc_memory_bound.value_or(app->rsc_memory_bound);
  p.rsc_disk_bound = spec.rsc_disk_bound.value_or(app->rsc_disk_bound);
  p.delay_bound = spec.delay_bound.value_or(app->delay_bound);
  if (p.rsc_fpops_bound < p.rsc_fpops_est)
    return bad("rsc_fpops_bound must be at least rsc_fpops_est");
  // One result per workunit: the sequence, not the workunit, replicates and relocates.
  p.min_quorum = 1;
  p.target_nresults = 1;
  p.max_error_results = 0;
  p.max_total_results = 1;
  p.max_success_results = 1;
  for (const auto& in : spec.inputs) {
    if (auto problem = input_problem(in); !problem.empty())
      return bad(problem);
    p.inputs.push_back(file_rec{in.stored_name, in.nbytes, in.md5});
    p.input_open_names.push_back(in.open_name);
  }
  c.max_result_time = spec.max_result_time > 0 ? spec.max_result_time : p.delay_bound;
  c.elements = make_sequence_elements(c.id, c.name, c.replicas, 0, 1, spec.count, spec.state_every,
                                      spec.final_state);
  auto e = make(std::move(c), now);
  apply(state, e);
  return e;
}

std::optional<double> project_logic::estimate_seconds(const app_rec& app, const wu_params& params,
                                                      const job_request& req) const {
  auto choice = any_version(app, req, plan_classes);
  if (!choice)
    return std::nullopt;
  if (auto i = req.avg_elapsed.find(choice->echo.app_version_id);
      i != req.avg_elapsed.end() && i->second > 0)
    return i->second;
  return params.rsc_fpops_est / choice->flops;
}

project_logic::sequence_plan
project_logic::plan_sequences(const job_request& req, std::uint32_t high_water,
                              std::uint32_t per_host) const {
  sequence_plan out;
  auto holds = [&](const seq_entry& e) {
    return std::find(e.hosts.begin(), e.hosts.end(), req.host) != e.hosts.end();
  };
  for (const auto& name : req.sequences_held) {
    auto e = state.sequence(name);
    if (e == nullptr || e->ended || !holds(*e))
      out.revoked.push_back(name);
  }
  std::uint32_t held = 0;
  for (const auto& [id, e] : state.sequences)
    if (!e.ended && holds(e)) {
      out.queries.emplace_back(id, seq_query{req.host, 0, false, high_water, req.reported});
      ++held;
    }
  if (!req.send_work)
    return out;
  for (const auto& [id, e] : state.sequences) {
    if (held >= per_host)
      break;
    if (e.ended || holds(e) || std::find(e.hosts.begin(), e.hosts.end(), 0) == e.hosts.end())
      continue;
    auto app = state.app(e.app);
    if (app == nullptr)
      continue;
    auto est = estimate_seconds(*app, e.params, req);
    // Only a host that can finish an element within the maximum result time.
    if (!est || (e.max_result_time > 0 && *est > e.max_result_time))
      continue;
    out.queries.emplace_back(id, seq_query{req.host, *est, true, high_water, req.reported});
    ++held;
  }
  return out;
}

std::vector<granted_job>
project_logic::dispatch_sequence(const job_request& req, const std::vector<id_type>& wus,
                                 time_us now, std::vector<event>& events) {
  std::vector<granted_job> jobs;
  std::map<std::uint32_t, int> sent; // per app version, against its daily quota
  for (auto id : wus) {
    auto wu = state.workunit(id);
    if (wu == nullptr || !wu->sequence || wu->sequence->dead || wu->state != wu_state::active
        || wu->results.empty() || wu->results[0].state != result_state::unsent)
      continue;
    auto app = state.app(wu->app);
    auto choice = app ? any_version(*app, req, plan_classes) : std::nullopt;
    if (!choice) {
      spdlog::warn("sequence element {} not sent to host {}: it runs no version of the app",
                   wu->name, req.host);
      continue;
    }
    // The (host, version) pair's daily quota holds for sequence elements too: an element
    // over it stays unsent for a later RPC (the chain waits; the relocation check decides
    // whether the host keeps the sequence).
    auto vid = choice->echo.app_version_id;
    version_hint hint;
    if (auto h = req.hints.find(vid); h != req.hints.end())
      hint = h->second;
    int quota = initial_jobs_per_day(app->max_jobs_per_day, choice->devices);
    if (sent[vid] >= (hint.jobs_left >= 0 ? hint.jobs_left : quota))
      continue;
    auto dc = job_dispatch_credit(state, *app, wu->params, *choice, hint, quota);
    jobs.push_back(dispatch(*app, result_ref{id, 0}, req.host, choice->echo, now, events, dc));
    ++sent[vid];
  }
  return jobs;
}

std::set<id_type> project_logic::apply_sequence_events(const std::vector<event>& events) {
  std::set<id_type> dirty;
  for (const auto& e : events) {
    apply(state, e);
    if (auto x = std::get_if<ev::sequence_element_checked>(&e.data))
      dirty.insert(x->wus.begin(), x->wus.end());
  }
  return dirty;
}

} // namespace cobble
