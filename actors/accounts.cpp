/// Volunteers' accounts and teams: made and changed by their owners through BOINC's web RPCs
/// and the site (project_logic::create_account, change_account, create_team), and the views
/// of them (account_of, find_teams). The edge checks the protocol's rules first (e-mail form,
/// password hash, account creation open); these checks keep the state sane whoever asks.

#include "actors/project_logic_detail.hpp"
#include "actors/project_views.hpp"

#include <algorithm>

namespace cobble {

namespace {

constexpr std::size_t max_name = 254;  // BOINC's user.name and team.name are varchar(254)
constexpr std::size_t max_field = 254; // url, e-mail
constexpr std::size_t max_short = 64;  // country, postal code
constexpr std::size_t max_description = 4096;

/// Why a text field is refused; empty when acceptable. `required`: empty is refused too.
std::string
field_problem(std::string_view what, std::string_view text, std::size_t max, bool required) {
  if (required && text.empty())
    return std::string{what} + " is empty";
  if (text.size() > max)
    return std::string{what} + " is longer than " + std::to_string(max) + " bytes";
  if (std::any_of(text.begin(), text.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return std::string{what} + " contains a control character";
  return {};
}

caf::error invalid(const std::string& why) {
  return caf::make_error(ec::invalid_argument, why);
}

} // namespace

caf::expected<event> project_logic::create_account(const account_spec& spec,
                                                   const std::string& authenticator, time_us now) {
  for (const auto& problem : {field_problem("name", spec.name, max_name, true),
                              field_problem("e-mail address", spec.email, max_field, true),
                              field_problem("country", spec.country, max_short, false),
                              field_problem("postal code", spec.postal_code, max_short, false)})
    if (!problem.empty())
      return invalid(problem);
  if (state.user_with_email(spec.email) != 0)
    return caf::make_error(ec::duplicate, "an account with this e-mail address exists");
  if (authenticator.empty() || state.user_by_auth.count(authenticator))
    return caf::make_error(ec::duplicate, "authenticator in use");
  std::string team;
  if (auto t = spec.team.empty() ? 0 : state.team_named(spec.team); t != 0)
    team = state.team_dir.at(t).name;
  auto e = make(ev::user_created{state.next_user, spec.name, spec.email, authenticator, team,
                                 spec.passwd, spec.country, spec.postal_code,
                                 random_authenticator()},
                now);
  apply(state, e);
  return e;
}

caf::expected<event> project_logic::change_account(const account_update& update, time_us now) {
  auto found = state.user_by_auth.find(update.authenticator);
  if (update.authenticator.empty() || found == state.user_by_auth.end())
    return caf::make_error(ec::unknown_account, "no account has this account key");
  const auto& u = state.users.at(found->second);
  ev::user_changed x{u.id, u.name, u.email, u.passwd, u.country, u.postal_code, u.url, u.team};
  auto set = [](std::string& field, const std::optional<std::string>& value) {
    if (value)
      field = *value;
  };
  set(x.name, update.name);
  set(x.email, update.email);
  set(x.passwd, update.passwd);
  set(x.country, update.country);
  set(x.postal_code, update.postal_code);
  set(x.url, update.url);
  for (const auto& problem : {field_problem("name", x.name, max_name, true),
                              field_problem("e-mail address", x.email, max_field, !u.email.empty()),
                              field_problem("country", x.country, max_short, false),
                              field_problem("postal code", x.postal_code, max_short, false),
                              field_problem("URL", x.url, max_field, false)})
    if (!problem.empty())
      return invalid(problem);
  if (auto other = state.user_with_email(x.email); other != 0 && other != u.id)
    return caf::make_error(ec::duplicate, "another account has this e-mail address");
  if (update.team) {
    if (*update.team == 0) {
      x.team.clear();
    } else {
      auto t = state.team_dir.find(*update.team);
      if (t == state.team_dir.end())
        return invalid("no team has id " + std::to_string(*update.team));
      x.team = t->second.name;
    }
  }
  auto e = make(std::move(x), now);
  apply(state, e);
  return e;
}

caf::expected<event> project_logic::create_team(const team_spec& spec, time_us now) {
  auto found = state.user_by_auth.find(spec.authenticator);
  if (spec.authenticator.empty() || found == state.user_by_auth.end())
    return caf::make_error(ec::unknown_account, "no account has this account key");
  for (const auto& problem : {field_problem("team name", spec.name, max_name, true),
                              field_problem("URL", spec.url, max_field, false),
                              field_problem("country", spec.country, max_short, false)})
    if (!problem.empty())
      return invalid(problem);
  if (spec.description.size() > max_description)
    return invalid("description is longer than " + std::to_string(max_description) + " bytes");
  if (state.team_named(spec.name) != 0)
    return caf::make_error(ec::duplicate, "a team named " + spec.name + " exists");
  auto e = make(ev::team_created{state.next_team, spec.name, found->second, spec.url,
                                 spec.description, spec.country},
                now);
  apply(state, e);
  return e;
}

id_type account_id(const project_state& ps, const account_query& q) {
  switch (q.by) {
    case account_query::key::email:
      return q.text.empty() ? 0 : ps.user_with_email(q.text);
    case account_query::key::authenticator: {
      auto i = ps.user_by_auth.find(q.text);
      return q.text.empty() || i == ps.user_by_auth.end() ? 0 : i->second;
    }
    case account_query::key::id:
      return ps.users.count(q.id) ? q.id : 0;
  }
  return 0;
}

namespace {

/// What the web calls an app: its user-friendly name, else its name.
std::string app_title(const app_rec& a) {
  return a.user_friendly_name.empty() ? a.name : a.user_friendly_name;
}

/// Hosts whose finished results the account page reads: the most recently in touch (each
/// read may decode a passivated host).
constexpr std::size_t hosts_read_for_results = 20;

/// The results the account's hosts finished, newest first, at most max_account_results, from
/// the hosts_read_for_results hosts in touch last.
std::vector<result_row>
recent_results(const project_state& ps, const host_table& table, const account_view& a) {
  struct found {
    result_ref ref;
    id_type host;
    time_us at;
  };
  std::vector<std::size_t> order(a.hosts.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  auto read = std::min(order.size(), hosts_read_for_results);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(read), order.end(),
                    [&](std::size_t x, std::size_t y) { return a.contact[x] > a.contact[y]; });
  std::vector<found> all;
  for (std::size_t k = 0; k < read; ++k) {
    const auto& h = a.hosts[order[k]];
    auto state = table.copy_of(h.id);
    if (!state)
      continue;
    for (auto ref : state->finished) {
      const auto* r = ps.result(ref);
      if (r == nullptr || r->host != h.id)
        continue;
      all.push_back({ref, h.id, r->received != 0 ? r->received : r->deadline});
    }
  }
  auto n = std::min(all.size(), max_account_results);
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                    [](const found& x, const found& y) { return x.at > y.at; });
  std::vector<result_row> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& f = all[i];
    const auto* r = ps.result(f.ref);
    const auto* wu = ps.workunit(f.ref.wu);
    const auto* app = ps.app(wu->app);
    out.push_back({ps.result_name(f.ref), f.host, app ? app_title(*app) : std::string{},
                   result_words(*r), r->credit->granted, f.at});
  }
  return out;
}

} // namespace

std::optional<account_view>
account_of(const project_state& ps, id_type id, const host_table* hosts, bool detail) {
  auto u = ps.users.find(id);
  if (u == ps.users.end())
    return std::nullopt;
  account_view out{u->second};
  out.team = u->second.team.empty() ? 0 : ps.team_named(u->second.team);
  if (auto t = ps.team_dir.find(out.team); t != ps.team_dir.end())
    out.team_founder = t->second.founder == id;
  if (hosts == nullptr)
    return out;
  for (auto hid : ps.hosts_of(id, ps.hosts.size()))
    if (auto h = ps.hosts.find(hid); h != ps.hosts.end()) {
      out.hosts.push_back(h->second);
      out.contact.push_back(hosts->last_contact(hid));
    }
  if (!detail)
    return out;
  if (const auto& c = u->second.credit_detail)
    for (const auto& a : c->apps) {
      const auto* app = ps.app(a.app);
      out.apps.push_back({app ? app_title(*app) : std::to_string(a.app), a.jobs, a.credit});
    }
  out.recent = recent_results(ps, *hosts, out);
  return out;
}

std::vector<team_view> find_teams(const project_state& ps, const team_query& q) {
  std::vector<const team_rec*> picked;
  if (q.id != 0) {
    if (auto t = ps.team_dir.find(q.id); t != ps.team_dir.end())
      picked.push_back(&t->second);
  } else {
    auto wanted = fold_case(q.name);
    for (const auto& [id, t] : ps.team_dir) {
      if (picked.size() >= q.limit)
        break;
      if (fold_case(t.name).find(wanted) != std::string::npos)
        picked.push_back(&t);
    }
  }
  std::vector<team_view> out;
  for (const auto* t : picked) {
    team_view v{*t};
    if (auto c = ps.teams.find(t->name); c != ps.teams.end())
      v.credit = c->second;
    if (auto f = ps.users.find(t->founder); f != ps.users.end())
      v.founder_name = f->second.name;
    out.push_back(std::move(v));
  }
  // Members: one pass over the users for all the picked teams.
  for (const auto& [id, u] : ps.users)
    if (!u.team.empty())
      for (auto& v : out)
        if (v.team.name == u.team) {
          ++v.members;
          if (q.roster)
            v.roster.push_back(team_member{id, u.name, u.credit});
        }
  for (auto& v : out) {
    auto by_credit = [](const team_member& a, const team_member& b) {
      return a.credit.total != b.credit.total ? a.credit.total > b.credit.total : a.id < b.id;
    };
    auto keep = std::min(v.roster.size(), q.roster_limit);
    std::partial_sort(v.roster.begin(), v.roster.begin() + static_cast<std::ptrdiff_t>(keep),
                      v.roster.end(), by_credit);
    v.roster.resize(keep);
  }
  return out;
}

} // namespace cobble
