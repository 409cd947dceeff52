#include "actors/error.hpp"
#include "actors/project_logic_detail.hpp"

#include <spdlog/spdlog.h>

namespace cobble {

using namespace detail;

// -- project_logic ------------------------------------------------------------

event project_logic::make(payload p, time_us now) const {
  event e;
  e.time = now;
  e.project = state.index;
  e.data = std::move(p);
  return e;
}

void project_logic::emit(std::vector<event>& out, payload p, time_us now) {
  auto e = make(std::move(p), now);
  apply(state, e);
  out.push_back(std::move(e));
}

std::vector<event> project_logic::configure(const config::project_config& cfg, time_us now) {
  std::vector<event> out;
  plan_classes = cfg.plan_classes;
  auto apps = apps_from_config(cfg, state.apps);
  auto credit = credit_settings_from(cfg.credit);
  if (apps != state.apps || state.name != cfg.name || state.long_name != cfg.long_name
      || !(credit == state.credit))
    emit(out, ev::project_configured{cfg.name, cfg.long_name, std::move(apps), credit}, now);
  for (const auto& u : cfg.users) {
    bool exists = std::any_of(state.users.begin(), state.users.end(),
                              [&](auto& kv) { return kv.second.name == u.name; });
    if (exists)
      continue;
    auto auth = u.authenticator.empty() ? random_authenticator() : u.authenticator;
    if (state.user_by_auth.count(auth))
      continue;
    emit(out,
         ev::user_created{
           state.next_user, u.name, u.email, auth, u.team, {}, {}, {}, random_authenticator()},
         now);
  }
  return out;
}

caf::expected<event> project_logic::create_user(const std::string& name, const std::string& email,
                                                const std::string& authenticator, time_us now) {
  if (name.empty())
    return caf::make_error(ec::invalid_argument, "user name is empty");
  for (const auto& [id, u] : state.users)
    if (u.name == name)
      return caf::make_error(ec::duplicate, "user " + name + " exists");
  if (state.user_by_auth.count(authenticator))
    return caf::make_error(ec::duplicate, "authenticator in use");
  auto e = make(
    ev::user_created{
      state.next_user, name, email, authenticator, {}, {}, {}, {}, random_authenticator()},
    now);
  apply(state, e);
  return e;
}

event project_logic::register_host(id_type user, const host_info_rec& info, time_us now) {
  auto e = make(ev::host_registered{state.next_host, user, info}, now);
  apply(state, e);
  return e;
}

event project_logic::reattach_host(id_type host, id_type user, ev::host_match how, time_us now) {
  auto e = make(ev::host_reattached{host, user, static_cast<std::uint8_t>(how)}, now);
  apply(state, e);
  return e;
}

std::size_t project_logic::hosts_registered_since(id_type user, time_us since) const {
  std::size_t n = 0;
  for (auto h = state.hosts.rbegin(); h != state.hosts.rend() && h->second.created >= since; ++h)
    if (h->second.user == user)
      ++n;
  return n;
}

std::optional<std::string>
project_logic::host_registration_refusal(id_type user, time_us now, int per_day) const {
  if (per_day <= 0)
    return std::nullopt;
  auto n = hosts_registered_since(user, now - seconds_to_us(86400));
  if (n < static_cast<std::size_t>(per_day))
    return std::nullopt;
  return "This account registered " + std::to_string(n) + " new computers in the last 24 hours, "
         + "the most this project allows (" + std::to_string(per_day)
         + "). Use the computer's existing host id, or try again tomorrow.";
}

caf::expected<std::vector<event>>
project_logic::create_work(const work_batch& batch, time_us now, work_created& out) {
  if (batch.items.empty())
    return caf::make_error(ec::invalid_argument, "no work in the batch");
  if (!batch.key.empty()) {
    auto held = state.batch_keys.find(batch.key);
    if (held != state.batch_keys.end() && held->second.created >= now - batch_key_retention) {
      const auto& k = held->second;
      if (k.digest != batch.digest)
        return caf::make_error(ec::conflict, "Idempotency-Key '" + batch.key
                                               + "' was used for another batch: send this "
                                                 "batch with a new key");
      for (auto id = k.first; id < k.first + k.count; ++id) {
        const auto* wu = state.workunit(id);
        out.ids.push_back(id);
        out.names.push_back(wu != nullptr ? wu->name : std::string{});
      }
      out.replayed = true;
      return std::vector<event>{};
    }
  }
  std::set<std::string> names;
  std::vector<ev::workunit_created> planned;
  auto next = state.next_wu;
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    const auto& w = batch.items[i];
    auto where = "item " + std::to_string(i) + ": ";
    auto app = state.app(w.app);
    if (app == nullptr)
      return caf::make_error(ec::unknown_app, where + "no app named '" + w.app + "'");
    ev::workunit_created c;
    c.id = next++;
    c.name = w.name.empty() ? app->name + "_wu" + std::to_string(c.id) : w.name;
    if (!valid_wu_name(c.name))
      return caf::make_error(ec::invalid_argument,
                             where + "workunit name '" + c.name
                               + "' must be 1-200 characters of letters, digits, _ - .");
    if (state.find_workunit(c.name) != nullptr || !names.insert(c.name).second)
      return caf::make_error(ec::duplicate, where + "a workunit named '" + c.name + "' exists");
    for (const auto& err :
         {positive("rsc_fpops_est", w.rsc_fpops_est),
          positive("rsc_fpops_bound", w.rsc_fpops_bound),
          positive("rsc_memory_bound", w.rsc_memory_bound),
          positive("rsc_disk_bound", w.rsc_disk_bound), check_delay_bound(w.delay_bound)})
      if (err)
        return caf::make_error(ec::invalid_argument, where + describe(err));
    if (w.predicted_app_units
        && !(std::isfinite(*w.predicted_app_units) && *w.predicted_app_units > 0))
      return caf::make_error(ec::invalid_argument,
                             where + "predicted_app_units must be a positive number");
    for (auto x : {w.rsc_fpops_est, w.rsc_fpops_bound})
      if (x && !std::isfinite(*x))
        return caf::make_error(ec::invalid_argument, where + "rsc_fpops_* must be finite");
    auto& p = c.params;
    p.predicted_app_units = w.predicted_app_units.value_or(1);
    p.command_line = w.command_line;
    p.rsc_fpops_est = w.rsc_fpops_est.value_or(app->rsc_fpops_est);
    p.rsc_fpops_bound = w.rsc_fpops_bound.value_or(
      std::max(app->rsc_fpops_bound, p.rsc_fpops_est * 10));
    p.rsc_memory_bound = w.rsc_memory_bound.value_or(app->rsc_memory_bound);
    p.rsc_disk_bound = w.rsc_disk_bound.value_or(app->rsc_disk_bound);
    p.delay_bound = w.delay_bound.value_or(app->delay_bound);
    p.min_quorum = w.min_quorum.value_or(app->min_quorum);
    p.target_nresults = w.target_nresults.value_or(std::max(app->target_nresults, p.min_quorum));
    p.max_error_results = w.max_error_results.value_or(app->max_error_results);
    p.max_total_results = w.max_total_results.value_or(app->max_total_results);
    p.max_success_results = w.max_success_results.value_or(app->max_success_results);
    if (p.rsc_fpops_bound < p.rsc_fpops_est)
      return caf::make_error(ec::invalid_argument,
                             where + "rsc_fpops_bound must be at least rsc_fpops_est");
    if (p.min_quorum < 1 || p.target_nresults < p.min_quorum
        || p.max_total_results < p.target_nresults || p.max_total_results > 255
        || p.max_error_results < 0 || p.max_success_results < p.min_quorum)
      return caf::make_error(ec::invalid_argument, where
                                                     + "need 1 <= min_quorum <= target_nresults <= "
                                                       "max_total_results <= 255 and "
                                                       "max_success_results >= min_quorum");
    for (const auto& in : w.inputs) {
      if (auto problem = input_problem(in); !problem.empty())
        return caf::make_error(ec::invalid_argument, where + problem);
      p.inputs.push_back(file_rec{in.stored_name, in.nbytes, in.md5});
      p.input_open_names.push_back(in.open_name);
    }
    c.app = app->id;
    c.n_results = static_cast<std::uint32_t>(p.target_nresults);
    c.submitter = batch.submitter;
    planned.push_back(std::move(c));
  }
  if (!batch.key.empty()) {
    planned.front().batch_key = batch.key;
    planned.front().batch_digest = batch.digest;
    planned.front().batch_size = static_cast<std::uint32_t>(planned.size());
  }
  std::vector<event> events;
  for (auto& c : planned) {
    out.ids.push_back(c.id);
    out.names.push_back(c.name);
    emit(events, std::move(c), now);
  }
  return events;
}

std::map<id_type, std::vector<std::string>> project_logic::overdue(time_us now) {
  std::map<id_type, std::vector<std::string>> out;
  while (!state.deadlines.empty() && state.deadlines.top().first <= now) {
    auto [deadline, ref] = state.deadlines.top();
    state.deadlines.pop();
    auto r = state.result(ref);
    if (r == nullptr || r->state != result_state::in_progress || r->deadline != deadline)
      continue;
    out[r->host].push_back(state.result_name(ref));
  }
  return out;
}

project_summary summarize(const project_state& ps) {
  project_summary s;
  s.name = ps.name;
  s.long_name = ps.long_name;
  s.users = ps.users.size();
  s.hosts = ps.hosts.size();
  s.workunits = ps.workunits.size();
  s.counters = ps.counters;
  s.active_workunits
    = ps.active_workunits; // kept by apply: not yet assimilated, failed or cancelled
  std::map<std::uint32_t, std::size_t> unsent;
  for (const auto& [id, wu] : ps.workunits) {
    for (const auto& r : wu.results) {
      if (r.state == result_state::in_progress)
        ++s.results_in_progress;
      else if (r.state == result_state::unsent)
        ++unsent[wu.app];
    }
  }
  for (const auto& a : ps.apps)
    s.apps.push_back(app_summary{a.name, a.versions.size(), unsent[a.id]});
  s.teams = ps.teams;
  return s;
}

} // namespace cobble
