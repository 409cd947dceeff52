#include "net/web_site.hpp"

#include "actors/clock.hpp"
#include "actors/credit.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/rpc.hpp"
#include "net/boinc_xml.hpp"
#include "net/one_shot.hpp"
#include "net/password.hpp"
#include "net/web_operator.hpp"
#include "net/web_rpc_xml.hpp"
#include "net/web_templates.hpp"
#include "net/web_visit.hpp"
#include "net/xml_text.hpp"

#include <caf/all.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <utility>

namespace cobble::net {

namespace {

// -- the home page ------------------------------------------------------------------------

void home(const visit_ptr& v) {
  std::string head;
  try {
    head = scheduler_lines(v->master_url + "cgi");
  } catch (const std::invalid_argument&) {
    v->message(http::status::bad_request, "Bad request",
               "The request's Host header cannot be part of a URL.");
    return;
  }
  with_session(v, account_parts::bare, [v, head](const account_view_ptr& a) {
    const auto& acc = v->accounts();
    web::data values{web::object{{"master_url", v->master_url}}};
    if (auto i = v->ctx->descriptions.find(v->project_name);
        i != v->ctx->descriptions.end() && !i->second.empty())
      values.set("description", i->second);
    values.set("creation_open", acc.creation == config::account_creation::open && !a);
    values.set("creation_closed", acc.creation == config::account_creation::closed);
    values.set("creation_invitation", acc.creation == config::account_creation::invitation);
    v->page(http::status::ok, "home", "Home", std::move(values), user_name(a), {}, head);
  });
}

// -- logging in and out ---------------------------------------------------------------------

void login_form(const visit_ptr& v, http::status status, const std::string& error,
                const std::string& email) {
  web::data values{web::object{{"email", email}}};
  if (!error.empty())
    values.set("error", error);
  v->page(status, "login", "Log in", std::move(values));
}

/// The stored form of a password no one has, checked when the address has no account so that
/// an unknown address takes as long to refuse as a wrong password.
const std::string& decoy_password() {
  static const std::string stored = store_password(boinc_password_hash("", "decoy"));
  return stored;
}

void login(const visit_ptr& v) {
  if (!v->post) {
    with_session(v, account_parts::bare, [v](const account_view_ptr& a) {
      if (a)
        v->see_other("account");
      else
        login_form(v, http::status::ok, {}, {});
    });
    return;
  }
  if (!v->form_allowed())
    return;
  auto email = v->field("email");
  auto password = v->field("password");
  if (email.empty() || password.empty()) {
    login_form(v, http::status::bad_request, "Give your e-mail address and password.", email);
    return;
  }
  if (password.size() > max_password) {
    login_form(v, http::status::bad_request, "That password is longer than any account's.", email);
    return;
  }
  auto key = password_failure_key(v->project_name, email);
  if (auto wait = v->ctx->web->failures->wait(key); wait > 0) {
    login_form(v, http::status::too_many_requests,
               "Too many wrong passwords for this account; try again in "
                 + std::to_string(static_cast<int>(std::ceil(wait / 60))) + " minutes.",
               email);
    return;
  }
  spawn_one_shot(*v->ctx->web->edge->sys, [v, email, password, key](caf::event_based_actor* self) {
    auto q = std::make_shared<account_query>();
    q->text = email;
    auto check = [v, email, password, key](const account_view_ptr& a) {
      bool queued = v->ctx->web->passwords->post([v, a, email, password, key] {
        auto hash = boinc_password_hash(password, email);
        bool right = false;
        if (a && !a->user.passwd.empty())
          right = password_matches(a->user.passwd, hash);
        else
          (void)password_matches(decoy_password(), hash); // as long as a wrong password
        if (!right) {
          v->ctx->web->failures->failed(key);
          login_form(v, http::status::unauthorized, "Wrong e-mail address or password.", email);
          return;
        }
        v->ctx->web->failures->succeeded(key);
        spdlog::info("account {} of {} logged in on the site", a->user.id, v->project_name);
        v->see_other("account", {v->session_cookie_for(a->user)});
      });
      if (!queued)
        v->message(http::status::service_unavailable, "Busy",
                   "The server is busy checking passwords; try again in a minute.",
                   v->base + "login", "Log in");
    };
    self->request(v->project, ask_timeout, atom::user_v, account_query_ptr{q})
      .then([check](const account_view_ptr& a) { check(a); },
            [v, check](caf::error& err) {
              if (is(err, ec::unknown_account))
                check(account_view_ptr{});
              else
                v->trouble(err);
            });
  });
}

void logout(const visit_ptr& v) {
  if (!v->form_allowed())
    return;
  v->see_other("", {v->cleared_session()});
}

// -- making an account ----------------------------------------------------------------------

void creation_form(const visit_ptr& v, http::status status, const std::string& error) {
  const auto& acc = v->accounts();
  web::data values{web::object{{"name", v->field("name")},
                               {"email", v->field("email")},
                               {"invite_code", v->field("invite_code")},
                               {"min_password_length", std::to_string(acc.min_password_length)}}};
  values.set("closed", acc.creation == config::account_creation::closed);
  values.set("invitation", acc.creation == config::account_creation::invitation);
  if (!acc.terms_of_use.empty())
    values.set("terms_of_use", acc.terms_of_use);
  if (!error.empty())
    values.set("error", error);
  v->page(status, "create_account", "Join", std::move(values));
}

/// Makes the account once the password pool has hashed its password into `stored`.
void make_account(const visit_ptr& v, caf::event_based_actor* self, const std::string& stored) {
  auto spec = std::make_shared<account_spec>();
  spec->name = v->field("name");
  spec->email = v->field("email");
  spec->passwd = stored;
  self->request(v->project, ask_timeout, atom::create_v, account_spec_ptr{spec})
    .then(
      [v, self](const account_view_ptr& made) {
        spdlog::info("account {} made on {} by the site", made->user.id, v->project_name);
        v->see_other("account", {v->session_cookie_for(made->user)});
        self->quit(); // it became a waiting actor: it ends only when told
      },
      [v, self](caf::error& err) {
        if (is(err, ec::duplicate))
          creation_form(v, http::status::conflict,
                        "An account with this e-mail address exists; log in instead.");
        else if (is(err, ec::invalid_argument))
          creation_form(v, http::status::bad_request, describe_sentence(err));
        else
          v->trouble(err);
        self->quit();
      });
}

void create_account(const visit_ptr& v) {
  const auto& acc = v->accounts();
  if (!v->post) {
    creation_form(v, http::status::ok, {});
    return;
  }
  if (!v->form_allowed())
    return;
  auto email = v->field("email");
  auto password = v->field("password");
  if (auto why = account_creation_problem(acc, v->field("name"), email, v->field("invite_code"));
      why.num != 0) {
    creation_form(v,
                  acc.creation == config::account_creation::closed ? http::status::forbidden
                                                                   : http::status::bad_request,
                  why.text);
    return;
  }
  if (password.size() < static_cast<std::size_t>(acc.min_password_length)
      || password.size() > max_password) {
    creation_form(v, http::status::bad_request,
                  "The password must have at least " + std::to_string(acc.min_password_length)
                    + " and at most " + std::to_string(max_password) + " characters.");
    return;
  }
  if (v->disk_low())
    return;
  spawn_one_shot(*v->ctx->web->edge->sys, [v, email, password](caf::event_based_actor* self) {
    auto q = std::make_shared<account_query>();
    q->text = email;
    self->request(v->project, ask_timeout, atom::user_v, account_query_ptr{q})
      .then(
        [v](const account_view_ptr&) {
          creation_form(v, http::status::conflict,
                        "An account with this e-mail address exists; log in instead.");
        },
        [v, self, email, password](caf::error& err) {
          if (!is(err, ec::unknown_account)) {
            v->trouble(err);
            return;
          }
          // Hash on the pool; the pool hands the stored form back to this actor.
          self->become(
            [v, self](atom::create, const std::string& stored) { make_account(v, self, stored); });
          bool queued = post_store_password(
            *v->ctx->web->passwords, caf::actor_cast<caf::actor>(self),
            boinc_password_hash(password, email), [v] {
              v->message(http::status::service_unavailable, "Try again later",
                         "The server could not store the password; please try again.");
            });
          if (!queued) {
            v->message(http::status::service_unavailable, "Busy",
                       "The server is busy checking passwords; try again in a minute.");
            self->quit();
          }
        });
  });
}

// -- the account page -----------------------------------------------------------------------

constexpr std::size_t computers_listed = 100; ///< Computers on the account page (the newest).

void account(const visit_ptr& v) {
  with_account(v, account_parts::detail, [v](const account_view_ptr& a) {
    auto now = wall_now();
    const auto& u = a->user;
    auto hosts = host_rows(*v, *a, now, computers_listed);
    web::data values{web::object{
      {"name", u.name},
      {"email", u.email},
      {"created", date_text(u.created)},
      {"authenticator", u.authenticator},
      {"total_credit", credit_text(u.credit.total)},
      {"recent_credit", credit_text(u.credit.expavg_at(now, v->half_life()))},
      {"host_count", std::to_string(a->hosts.size())},
    }};
    values.set("has_hosts", !a->hosts.empty());
    values.set("hosts", hosts);
    if (a->hosts.size() > computers_listed)
      values.set("more_hosts", count_text(a->hosts.size() - computers_listed));
    values.set("plot", plot_values(*a, now));
    values.set("has_apps", !a->apps.empty());
    values.set("apps", app_credit_rows(*v, *a, now));
    values.set("has_recent", !a->recent.empty());
    values.set("recent", recent_result_rows(*a));
    if (!u.team.empty()) {
      values.set("team", u.team);
      values.set("team_id", std::to_string(a->team));
    }
    v->page(http::status::ok, "account", "Your account", std::move(values), u.name);
  });
}

// -- teams ---------------------------------------------------------------------------------

constexpr std::size_t teams_listed = 100;   ///< Teams on the teams page.
constexpr std::size_t members_listed = 100; ///< Members on a team's page.

void teams(const visit_ptr& v) {
  auto q = v->param("q");
  if (q.size() > 254) {
    v->message(http::status::bad_request, "Bad request", "A team's name has at most 254 bytes.",
               v->base + "teams", "Teams");
    return;
  }
  with_session(v, account_parts::bare, [v, q](const account_view_ptr& a) {
    auto tq = std::make_shared<team_query>();
    tq->name = q;
    tq->limit = teams_listed + 1;
    ask(
      v,
      [v, a, q](const team_list_ptr& found) {
        auto now = wall_now();
        auto sorted = *found;
        std::stable_sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
          return x.credit.total > y.credit.total;
        });
        bool more = sorted.size() > teams_listed;
        sorted.resize(std::min(sorted.size(), teams_listed));
        web::list rows;
        for (const auto& t : sorted)
          rows.emplace_back(
            web::object{{"id", std::to_string(t.team.id)},
                        {"name", t.team.name},
                        {"members", std::to_string(t.members)},
                        {"total_credit", credit_text(t.credit.total)},
                        {"recent_credit", credit_text(t.credit.expavg_at(now, v->half_life()))}});
        web::data values{web::object{{"q", q}, {"shown", std::to_string(sorted.size())}}};
        values.set("searched", !q.empty());
        values.set("has_teams", !rows.empty());
        values.set("teams", rows);
        values.set("more", more);
        values.set("logged_in", a != nullptr);
        v->page(http::status::ok, "teams", "Teams", std::move(values), user_name(a));
      },
      [](caf::error&) { return false; }, atom::team_v, team_query_ptr{tq});
  });
}

void team(const visit_ptr& v) {
  auto id = id_in(v->param("id"));
  auto missing = [v] {
    v->message(http::status::not_found, "No such team", "There is no team with this id.",
               v->base + "teams", "All teams");
  };
  if (id == 0) {
    missing();
    return;
  }
  with_session(v, account_parts::bare, [v, id, missing](const account_view_ptr& a) {
    auto tq = std::make_shared<team_query>();
    tq->id = id;
    tq->roster = true;
    tq->roster_limit = members_listed;
    ask(
      v,
      [v, a, missing](const team_list_ptr& found) {
        if (found->empty()) {
          missing();
          return;
        }
        const auto& t = found->front();
        auto now = wall_now();
        web::list roster;
        std::size_t rank = 0;
        for (const auto& m : t.roster)
          roster.emplace_back(
            web::object{{"rank", std::to_string(++rank)},
                        {"name", m.name},
                        {"total_credit", credit_text(m.credit.total)},
                        {"recent_credit", credit_text(m.credit.expavg_at(now, v->half_life()))}});
        web::data values{
          web::object{{"id", std::to_string(t.team.id)},
                      {"name", t.team.name},
                      {"members", std::to_string(t.members)},
                      {"created", date_text(t.team.created)},
                      {"shown", std::to_string(t.roster.size())},
                      {"total_credit", credit_text(t.credit.total)},
                      {"recent_credit", credit_text(t.credit.expavg_at(now, v->half_life()))}}};
        if (!t.team.description.empty())
          values.set("description", t.team.description);
        // A link only to a web site: never a javascript: or data: URL a founder typed.
        if (t.team.url.starts_with("https://") || t.team.url.starts_with("http://"))
          values.set("url", t.team.url);
        if (!t.team.country.empty())
          values.set("country", t.team.country);
        if (!t.founder_name.empty())
          values.set("founder", t.founder_name);
        bool member = a && a->user.team == t.team.name;
        values.set("is_member", member);
        values.set("can_join", a && !member);
        values.set("anonymous", !a);
        if (a && !member && !a->user.team.empty())
          values.set("other_team", a->user.team);
        values.set("has_roster", !roster.empty());
        values.set("roster", roster);
        values.set("more", t.members > t.roster.size());
        v->page(http::status::ok, "team", t.team.name, std::move(values), user_name(a));
      },
      [](caf::error&) { return false; }, atom::team_v, team_query_ptr{tq});
  });
}

// -- top lists -------------------------------------------------------------------------------

constexpr std::size_t top_page_rows = 20;   ///< Rows per page of a top list (as BOINC).
constexpr std::size_t top_max_rank = 10000; ///< How deep the lists go (as BOINC).

/// One of the site's top lists: `list` users, hosts or teams; `sort` recent (the default, as
/// BOINC's expavg_credit) or total; `offset` a multiple of the page size below top_max_rank.
void top(const visit_ptr& v) {
  static const std::map<std::string, std::pair<top_query::of, std::string>> lists{
    {"users", {top_query::of::users, "Top volunteers"}},
    {"hosts", {top_query::of::hosts, "Top computers"}},
    {"teams", {top_query::of::teams, "Top teams"}}};
  auto list = v->param("list").empty() ? std::string{"users"} : v->param("list");
  auto sort = v->param("sort").empty() ? std::string{"recent"} : v->param("sort");
  std::size_t offset = 0;
  auto it = lists.find(list);
  if (it == lists.end() || (sort != "recent" && sort != "total")
      || (!v->param("offset").empty()
          && (!xml::to_integer(v->param("offset"), offset) || offset >= top_max_rank))) {
    v->message(http::status::bad_request, "Bad request",
               "A top list is list=users, hosts or teams, sort=recent or total, and an offset "
               "below 10,000.",
               v->base + "top", "Top volunteers");
    return;
  }
  offset -= offset % top_page_rows;
  auto title = it->second.second;
  // The whole list to rank 10,000 is ranked at most once in five minutes and kept; each page
  // is a slice of it, so a busy list costs the project one ranking, not one per visit.
  auto render = [v, list, sort, title, offset](const account_view_ptr& a, const top_page_ptr& p) {
    web::list rows;
    for (auto i = offset; i < std::min(p->rows.size(), offset + top_page_rows); ++i) {
      const auto& r = p->rows[i];
      web::object row{{"rank", std::to_string(r.rank)},
                      {"id", std::to_string(r.id)},
                      {"name", r.name},
                      {"detail", r.detail},
                      {"total_credit", credit_text(r.credit.total)},
                      {"recent_credit", credit_text(r.recent)}};
      rows.emplace_back(std::move(row));
    }
    auto link = [&](std::size_t at) {
      return v->base + "top?list=" + list + "&sort=" + sort + "&offset=" + std::to_string(at);
    };
    auto shown_end = std::min(p->total, top_max_rank);
    web::data values{web::object{{"list", list}, {"sort", sort}}};
    values.set("rows", rows);
    values.set("has_rows", !rows.empty());
    values.set("users", list == "users");
    values.set("hosts", list == "hosts");
    values.set("teams", list == "teams");
    values.set("by_recent", sort == "recent");
    values.set("first", std::to_string(offset + 1));
    values.set("last", std::to_string(offset + rows.size()));
    values.set("total", std::to_string(p->total));
    if (offset > 0)
      values.set("previous", link(offset - top_page_rows));
    if (offset + top_page_rows < shown_end)
      values.set("next", link(offset + top_page_rows));
    v->page(http::status::ok, "top", title, std::move(values), user_name(a));
  };
  auto key = v->project_name + "\n" + list + "\n" + sort;
  with_session(v, account_parts::bare,
               [v, render, key, what = it->second.first, sort](const account_view_ptr& a) {
                 auto now = wall_now();
                 if (auto kept = v->ctx->top->fresh(key, now)) {
                   render(a, kept);
                   return;
                 }
                 auto q = std::make_shared<top_query>();
                 q->what = what;
                 q->recent = sort == "recent";
                 q->limit = top_max_rank;
                 q->now = now;
                 ask(
                   v,
                   [v, a, render, key, now](const top_page_ptr& p) {
                     v->ctx->top->keep(key, p, now);
                     render(a, p);
                   },
                   [](caf::error&) { return false; }, atom::list_v, top_query_ptr{q});
               });
}

// -- a computer's page ---------------------------------------------------------------------

constexpr std::size_t jobs_listed = 100; ///< Jobs in progress on a computer's page.

/// What a host's description says of its processors and GPUs, for people.
std::string hardware_text(const host_info_rec& info) {
  std::string out = info.p_vendor;
  if (!info.p_model.empty())
    out += (out.empty() ? "" : " ") + info.p_model;
  if (info.p_ncpus > 0)
    out += fmt::format("{}{} processor{}", out.empty() ? "" : ", ", info.p_ncpus,
                       info.p_ncpus == 1 ? "" : "s");
  for (const auto& [type, count] : info.coprocs)
    if (count > 0)
      out += fmt::format("; {} × {} GPU", count, to_string(static_cast<resource_type>(type)));
  return out.empty() ? std::string{"not reported"} : out;
}

/// A computer's page. Who owns it is shown to its owner only: BOINC names a host's owner to
/// others only when the volunteer chose to show their computers, which Cobble's accounts
/// cannot choose yet, so nobody has.
void host_page_of(const visit_ptr& v, const account_view_ptr& viewer, const host_view_ptr& h) {
  auto now = wall_now();
  const auto& reg = h->reg;
  web::data values{
    web::object{{"id", std::to_string(reg.id)},
                {"created", date_text(reg.created)},
                {"total_credit", credit_text(reg.credit.total)},
                {"recent_credit", credit_text(reg.credit.expavg_at(now, v->half_life()))}}};
  bool mine = viewer && viewer->user.id == reg.user;
  values.set("mine", mine);
  web::list jobs;
  if (h->state) {
    const auto& s = *h->state;
    const auto& info = s.info;
    values.set("last_contact", time_text(s.last_rpc));
    values.set("os", info.os_name.empty() ? std::string{"not reported"}
                                          : info.os_name + " " + info.os_version);
    values.set("hardware", hardware_text(info));
    values.set("memory", info.m_nbytes > 0 ? fmt::format("{:.1f} GB", info.m_nbytes / 1e9)
                                           : std::string{"not reported"});
    values.set("reported", std::to_string(s.results_reported));
    values.set("in_progress", std::to_string(s.in_progress.size()));
    // Its name on the volunteer's network is for the owner only, as on BOINC's pages.
    if (mine && !info.domain_name.empty())
      values.set("domain_name", info.domain_name);
    for (const auto& [name, held] : s.in_progress) {
      if (jobs.size() >= jobs_listed)
        break;
      jobs.emplace_back(web::object{{"name", name},
                                    {"sent", time_text(held.sent)},
                                    {"deadline", time_text(held.deadline)},
                                    {"late", held.deadline < now ? "late" : ""}});
    }
    values.set("more_jobs", s.in_progress.size() > jobs.size());
  }
  values.set("has_jobs", !jobs.empty());
  values.set("jobs", jobs);
  values.set("jobs_shown", std::to_string(jobs.size()));
  v->page(http::status::ok, "host", "Computer " + std::to_string(reg.id), std::move(values),
          user_name(viewer));
}

void host(const visit_ptr& v) {
  auto id = id_in(v->param("id"));
  auto missing = [v] {
    v->message(http::status::not_found, "No such computer", "There is no computer with this id.",
               v->base + "top?list=hosts", "Top computers");
  };
  if (id == 0) {
    missing();
    return;
  }
  with_session(v, account_parts::bare, [v, id, missing](const account_view_ptr& a) {
    ask(
      v, [v, a](const host_view_ptr& h) { host_page_of(v, a, h); },
      [missing](caf::error& err) {
        if (!is(err, ec::unknown_host))
          return false;
        missing();
        return true;
      },
      atom::host_v, id);
  });
}

// -- the status page -----------------------------------------------------------------------

/// Hours, as BOINC's status page shows runtimes: rounded up to 0.01.
double hours(double seconds) {
  return std::ceil(seconds / 36.0) / 100.0;
}

/// The status page as BOINC's server_status.php?xml=1 writes it, element for element, with
/// Cobble's own figures in <cobble>.
std::string status_xml(const visit& v, const server_status_view& s, const log_status& log,
                       double rpcs_per_second) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<server_status>\n";
  auto element = [&out](std::string_view indent, std::string_view name, const auto& value) {
    out += indent;
    out += '<';
    out += name;
    out += '>';
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>)
      xml::append_escaped(out, value);
    else
      xml::append_number(out, value);
    out += "</";
    out += name;
    out += ">\n";
  };
  out += "  <daemon_status>\n    <daemon>\n";
  element("      ", "host", v.master_url);
  element("      ", "command", std::string{"cobbled (scheduler, validator, assimilator)"});
  element("      ", "status", std::string{"running"});
  out += "    </daemon>\n  </daemon_status>\n  <database_file_states>\n";
  element("    ", "results_ready_to_send", s.results_ready_to_send);
  element("    ", "results_in_progress", s.results_in_progress);
  element("    ", "workunits_waiting_for_validation", s.workunits_waiting_for_validation);
  element("    ", "workunits_waiting_for_assimilation", s.workunits_waiting_for_assimilation);
  element("    ", "workunits_waiting_for_deletion", s.workunits_waiting_for_deletion);
  element("    ", "results_waiting_for_deletion", s.results_waiting_for_deletion);
  element("    ", "transitioner_backlog_hours", 0); // every event is applied as it happens
  element("    ", "users_with_recent_credit", s.users_with_recent_credit);
  element("    ", "users_with_credit", s.users_with_credit);
  element("    ", "users_registered_in_past_24_hours", s.users_registered_24h);
  element("    ", "hosts_with_recent_credit", s.hosts_with_recent_credit);
  element("    ", "hosts_with_credit", s.hosts_with_credit);
  element("    ", "hosts_registered_in_past_24_hours", s.hosts_registered_24h);
  element("    ", "current_floating_point_speed", s.gigaflops);
  out += "    <tasks_by_app>\n";
  for (const auto& a : s.apps) {
    out += "      <app>\n";
    element("        ", "id", a.id);
    element("        ", "name", a.name);
    element("        ", "unsent", a.unsent);
    element("        ", "in_progress", a.in_progress);
    if (a.valid_24h > 0) {
      element("        ", "avg_runtime", hours(a.avg_runtime));
      element("        ", "min_runtime", hours(a.min_runtime));
      element("        ", "max_runtime", hours(a.max_runtime));
      element("        ", "users", a.users_24h);
    }
    out += "      </app>\n";
  }
  out += "    </tasks_by_app>\n  </database_file_states>\n  <cobble>\n";
  element("    ", "figures_time", s.at / us_per_second);
  element("    ", "scheduler_rpcs_per_second", rpcs_per_second);
  element("    ", "hosts_contacted_in_past_24_hours", s.hosts_contacted_24h);
  element("    ", "users", s.users);
  element("    ", "hosts", s.hosts);
  element("    ", "workunits_failed", s.counters.workunits_failed);
  element("    ", "workunits_cancelled", s.counters.workunits_cancelled);
  element("    ", "results_timed_out", s.counters.results_timed_out);
  element("    ", "log_last_seq", log.last_seq);
  element("    ", "log_bytes_appended", log.bytes);
  element("    ", "last_snapshot_seq", log.last_snapshot_seq);
  out += "  </cobble>\n</server_status>\n";
  return out;
}

void status_page(const visit_ptr& v, const server_status_ptr& s, const log_status_ptr& log,
                 const std::string& user) {
  auto now_s = wall_now() / us_per_second;
  double rate = v->ctx->web->edge->metrics->rpc_rate.per_second(now_s);
  if (v->param("xml") == "1") {
    auto res = shaped(v->shape, http::status::ok, status_xml(*v, *s, *log, rate),
                      "text/xml; charset=utf-8");
    res.set(http::field::cache_control, "no-store");
    v->respond(std::move(res));
    return;
  }
  web::list apps;
  for (const auto& a : s->apps) {
    web::object row{{"name", a.name},
                    {"unsent", count_text(a.unsent)},
                    {"in_progress", count_text(a.in_progress)},
                    {"users", count_text(a.users_24h)}};
    row.emplace("runtime", a.valid_24h > 0
                             ? fmt::format("{:.2f} ({:.2f} – {:.2f})", hours(a.avg_runtime),
                                           hours(a.min_runtime), hours(a.max_runtime))
                             : std::string{"—"});
    apps.emplace_back(std::move(row));
  }
  web::data values{web::object{
    {"as_of", time_text(s->at)},
    {"ready", count_text(s->results_ready_to_send)},
    {"in_progress", count_text(s->results_in_progress)},
    {"waiting_validation", count_text(s->workunits_waiting_for_validation)},
    {"waiting_assimilation", count_text(s->workunits_waiting_for_assimilation)},
    {"waiting_deletion", count_text(s->workunits_waiting_for_deletion)},
    {"failed", count_text(s->counters.workunits_failed)},
    {"cancelled", count_text(s->counters.workunits_cancelled)},
    {"timed_out", count_text(s->counters.results_timed_out)},
    {"users", count_text(s->users)},
    {"users_recent", count_text(s->users_with_recent_credit)},
    {"users_new", count_text(s->users_registered_24h)},
    {"hosts", count_text(s->hosts)},
    {"hosts_recent", count_text(s->hosts_with_recent_credit)},
    {"hosts_new", count_text(s->hosts_registered_24h)},
    {"hosts_contacted", count_text(s->hosts_contacted_24h)},
    {"gigaflops", fmt::format("{:.2f}", s->gigaflops)},
    {"rpc_rate", fmt::format("{:.1f}", rate)},
    {"log_seq", count_text(log->last_seq)},
    {"log_bytes", fmt::format("{:.1f} MB", static_cast<double>(log->bytes) / 1e6)},
    {"snapshot_seq",
     log->last_snapshot_seq > 0 ? count_text(log->last_snapshot_seq) : std::string{"none yet"}},
  }};
  values.set("apps", apps);
  values.set("has_apps", !apps.empty());
  v->page(http::status::ok, "status", "Server status", std::move(values), user);
}

/// The project's status page, as BOINC's server_status.php (and its ?xml=1 form): the
/// project's figures, taken at most once a minute, and the log's, taken now.
void server_status(const visit_ptr& v) {
  with_session(v, account_parts::bare, [v](const account_view_ptr& a) {
    auto user = user_name(a);
    auto cached = v->ctx->status->fresh(v->project_name, wall_now());
    spawn_one_shot(*v->ctx->web->edge->sys, [v, user, cached](caf::event_based_actor* self) {
      auto with_log = [v, user, self](const server_status_ptr& s) {
        self->request(v->ctx->web->edge->log, ask_timeout, atom::status_v)
          .then([v, user, s](const log_status_ptr& log) { status_page(v, s, log, user); },
                [v](caf::error& err) { v->trouble(err); });
      };
      if (cached) {
        with_log(cached);
        return;
      }
      self->request(v->project, ask_timeout, atom::status_v, atom::workunit_v)
        .then(
          [v, with_log](const server_status_ptr& s) {
            v->ctx->status->keep(v->project_name, s, s->at);
            with_log(s);
          },
          [v](caf::error& err) { v->trouble(err); });
    });
  });
}

/// Moves the logged-in volunteer into team `id` (0: out of their team), then on to `next`.
void change_team(const visit_ptr& v, id_type id, const std::string& next) {
  if (!v->form_allowed() || v->disk_low())
    return;
  with_account(v, account_parts::bare, [v, id, next](const account_view_ptr& a) {
    auto update = std::make_shared<account_update>();
    update->authenticator = a->user.authenticator;
    update->team = id;
    ask(
      v, [v, next](const account_view_ptr&) { v->see_other(next); },
      [v](caf::error& err) {
        if (!is(err, ec::invalid_argument))
          return false;
        v->message(http::status::not_found, "No such team", describe_sentence(err),
                   v->base + "teams", "All teams");
        return true;
      },
      atom::user_v, account_update_ptr{update});
  });
}

void team_join(const visit_ptr& v) {
  auto id = id_in(v->field("id"));
  if (id == 0) {
    v->message(http::status::bad_request, "Bad request", "Which team? The form had no team id.",
               v->base + "teams", "All teams");
    return;
  }
  change_team(v, id, "team?id=" + std::to_string(id));
}

void team_leave(const visit_ptr& v) {
  change_team(v, 0, "account");
}

void team_form(const visit_ptr& v, const account_view_ptr& a, http::status status,
               const std::string& error) {
  web::data values{web::object{{"name", v->field("name")},
                               {"description", v->field("description")},
                               {"url", v->field("url")},
                               {"country", v->field("country")}}};
  if (!error.empty())
    values.set("error", error);
  v->page(status, "create_team", "Make a team", std::move(values), user_name(a));
}

void create_team(const visit_ptr& v) {
  if (v->post && (!v->form_allowed() || v->disk_low()))
    return;
  with_account(v, account_parts::bare, [v](const account_view_ptr& a) {
    if (!v->post) {
      team_form(v, a, http::status::ok, {});
      return;
    }
    auto spec = std::make_shared<team_spec>();
    spec->authenticator = a->user.authenticator;
    spec->name = v->field("name");
    spec->description = v->field("description");
    spec->url = v->field("url");
    spec->country = v->field("country");
    if (spec->name.empty() || spec->name.find('<') != std::string::npos) {
      team_form(v, a, http::status::bad_request, "A team needs a name, without '<'.");
      return;
    }
    if (!spec->url.empty() && !spec->url.starts_with("http://")
        && !spec->url.starts_with("https://")) {
      team_form(v, a, http::status::bad_request,
                "The web site must be an address starting with http:// or https://.");
      return;
    }
    ask(
      v,
      [v](const team_list_ptr& made) {
        auto id = made->front().team.id;
        spdlog::info("team {} made on {} by the site", id, v->project_name);
        v->see_other("team?id=" + std::to_string(id));
      },
      [v, a](caf::error& err) {
        if (is(err, ec::duplicate))
          team_form(v, a, http::status::conflict, describe_sentence(err));
        else if (is(err, ec::invalid_argument))
          team_form(v, a, http::status::bad_request, describe_sentence(err));
        else
          return false;
        return true;
      },
      atom::create_v, team_spec_ptr{spec});
  });
}

// -- routes ----------------------------------------------------------------------------------

} // namespace

std::vector<route> web_site_routes(const std::shared_ptr<web_site_context>& ctx) {
  if (!ctx->web || !ctx->web->edge || !ctx->key)
    throw std::invalid_argument("web_site_routes: the context lacks the edge or the key");
  using http::verb;
  std::vector<route> out;
  for (const auto& [name, project] : ctx->web->edge->projects) {
    out.push_back(site_route(ctx, name, project, "", {verb::get, verb::head}, home));
    out.push_back(site_route(ctx, name, project, "login", {verb::get, verb::post}, login));
    out.push_back(site_route(ctx, name, project, "logout", {verb::post}, logout));
    out.push_back(
      site_route(ctx, name, project, "create_account", {verb::get, verb::post}, create_account));
    out.push_back(site_route(ctx, name, project, "account", {verb::get}, account));
    out.push_back(site_route(ctx, name, project, "teams", {verb::get}, teams));
    out.push_back(site_route(ctx, name, project, "team", {verb::get}, team));
    out.push_back(site_route(ctx, name, project, "top", {verb::get}, top));
    out.push_back(site_route(ctx, name, project, "host", {verb::get}, host));
    out.push_back(site_route(ctx, name, project, "server_status.php", {verb::get}, server_status));
    out.push_back(site_route(ctx, name, project, "team_join", {verb::post}, team_join));
    out.push_back(site_route(ctx, name, project, "team_leave", {verb::post}, team_leave));
    out.push_back(
      site_route(ctx, name, project, "create_team", {verb::get, verb::post}, create_team));
    add_operator_routes(ctx, name, project, out);
  }
  return out;
}

} // namespace cobble::net
