#include "net/web_operator.hpp"

#include "actors/event_codec.hpp"
#include "actors/event_text.hpp"
#include "actors/project_views.hpp"
#include "actors/routing.hpp"
#include "net/admin_api.hpp"
#include "net/password.hpp"
#include "net/web_rpc_xml.hpp"
#include "net/web_visit.hpp"
#include "net/xml_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace cobble::net {

namespace {

constexpr std::size_t workunits_per_page = 50;
constexpr std::size_t results_per_page = 50;
constexpr std::size_t jobs_listed = 200; ///< Jobs in progress on an operator's host page.
constexpr std::size_t max_token = 512;   ///< Bytes of a typed admin token.
constexpr std::size_t max_reason = 512;  ///< Bytes of a cancellation's reason.

/// The wrong-token counter's key: one per project, so guesses at the token are slowed (the
/// admin API's bearer token is not: it is not counted).
std::string token_failure_key(const std::string& project) {
  return "operator\n" + project;
}

bool is_operator(const visit& v) {
  return !v.operator_session.empty()
         && web::operator_valid(*v.ctx->key, v.project_name, v.operator_session, now_unix(),
                                v.ctx->admin_token);
}

std::string operator_session_cookie(const visit& v) {
  auto expires = now_unix() + web::operator_seconds;
  return v.cookie(web::operator_cookie,
                  web::operator_value(*v.ctx->key, v.project_name, expires, v.ctx->admin_token),
                  web::operator_seconds, "Strict");
}

/// Calls `then` when the visit has an operator session; sends anyone else to the log-in form.
template <class F>
void as_operator(const visit_ptr& v, F then) {
  if (is_operator(*v))
    then();
  else
    v->see_other("ops/login");
}

/// A failure handler for ask(): the error `code` answers 404 with `heading` and `text`; any
/// other error is the server's trouble.
auto missing_as(const visit_ptr& v, ec code, std::string heading, std::string text) {
  return [v, code, heading = std::move(heading), text = std::move(text)](caf::error& err) {
    if (!is(err, code))
      return false;
    v->message(http::status::not_found, heading, text, v->base + "ops/", "Operator");
    return true;
  };
}

// -- logging in and out ----------------------------------------------------------------------

void login_form(const visit_ptr& v, http::status status, const std::string& error) {
  web::data values{web::object{}};
  if (!error.empty())
    values.set("error", error);
  if (v->ctx->admin_token.empty())
    values.set("closed", true);
  v->page(status, "ops_login", "Operator log in", std::move(values));
}

void login(const visit_ptr& v) {
  if (!v->post) {
    if (is_operator(*v))
      v->see_other("ops/");
    else
      login_form(v, http::status::ok, {});
    return;
  }
  if (!v->form_allowed())
    return;
  if (v->ctx->admin_token.empty()) {
    login_form(v, http::status::forbidden, {});
    return;
  }
  auto token = v->field("token");
  if (token.empty() || token.size() > max_token) {
    login_form(v, http::status::bad_request, "Give the admin token.");
    return;
  }
  auto key = token_failure_key(v->project_name);
  const auto& failures = v->ctx->web->failures;
  if (auto wait = failures->wait(key); wait > 0) {
    login_form(v, http::status::too_many_requests,
               "Too many wrong tokens; try again in "
                 + std::to_string(static_cast<int>(std::ceil(wait / 60))) + " minutes.");
    return;
  }
  if (!constant_time_equal(token, v->ctx->admin_token)) {
    failures->failed(key);
    spdlog::warn("site of {}: a wrong admin token on the operator log-in", v->project_name);
    login_form(v, http::status::unauthorized, "That is not the admin token.");
    return;
  }
  failures->succeeded(key);
  spdlog::info("site of {}: an operator logged in", v->project_name);
  v->see_other("ops/", {operator_session_cookie(*v)});
}

void logout(const visit_ptr& v) {
  if (!v->form_allowed())
    return;
  v->see_other("ops/login", {v->cookie(web::operator_cookie, "", 0, "Strict")});
}

// -- the operator's home -------------------------------------------------------------------

constexpr std::array<wu_state, 5> wu_states{wu_state::active, wu_state::validated,
                                            wu_state::assimilated, wu_state::failed,
                                            wu_state::cancelled};

/// The workunit listing's state tabs (each keeps the app filter), the current one marked.
web::list state_tabs(const std::string& current, const std::string& app = {}) {
  web::list out;
  for (auto s : wu_states) {
    std::string name = to_string(s);
    web::object tab{{"name", name}, {"current", name == current}};
    if (!app.empty())
      tab["app"] = php_urlencode(app);
    out.emplace_back(std::move(tab));
  }
  return out;
}

void home(const visit_ptr& v) {
  as_operator(v, [v] {
    v->operator_page(http::status::ok, "ops_home", "Operator",
                     web::data{web::object{{"states", state_tabs({})}}});
  });
}

// -- workunits -----------------------------------------------------------------------------

/// Counts of a workunit's results by state in words: "2 valid, 1 in progress".
std::string result_summary(const workunit_rec& wu) {
  std::map<std::string, int> counts;
  for (const auto& r : wu.results)
    ++counts[result_words(r)];
  std::string out;
  for (const auto& [words, n] : counts)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, words);
  return out.empty() ? std::string{"none"} : out;
}

/// `after` of a listing's page: "WU" (workunits) or "WU.INDEX" (results).
std::optional<result_ref> after_in(const std::string& text) {
  result_ref r;
  if (text.empty())
    return r;
  auto dot = text.find('.');
  std::uint64_t index = 0;
  if (!xml::to_integer(text.substr(0, dot), r.wu)
      || (dot != std::string::npos
          && (!xml::to_integer(text.substr(dot + 1), index)
              || index > std::numeric_limits<std::uint32_t>::max())))
    return std::nullopt;
  r.index = static_cast<std::uint32_t>(index);
  return r;
}

/// The address of a listing's page with the query's filters, starting after `after`.
std::string listing_url(const visit& v, const listing_query& q, std::optional<result_ref> after) {
  bool results = q.what == listing_query::of::results;
  auto out = fmt::format("{}ops/{}?state={}", v.base, results ? "results" : "workunits",
                         php_urlencode(q.state.empty() ? "any" : q.state));
  if (!q.app.empty())
    out += "&app=" + php_urlencode(q.app);
  if (q.host != 0)
    out += "&host=" + std::to_string(q.host);
  if (after)
    out += results ? fmt::format("&after={}.{}", after->wu, after->index)
                   : fmt::format("&after={}", after->wu);
  return out;
}

/// Reads a listing's filters from the page's parameters into `q`; on a bad one answers 400
/// and returns false. `state` "any" (or none given: `fallback`) lists every state.
bool filters_in(const visit_ptr& v, listing_query& q, const std::string& fallback) {
  bool results = q.what == listing_query::of::results;
  const auto* page = results ? "ops/results" : "ops/workunits";
  q.state = v->param("state");
  if (q.state.empty())
    q.state = fallback;
  if (q.state == "any")
    q.state.clear();
  q.app = v->param("app");
  auto after = after_in(v->param("after"));
  std::uint64_t host = 0;
  auto host_text = v->param("host");
  if (!after || (!host_text.empty() && (!results || !xml::to_integer(host_text, host)))) {
    v->message(http::status::bad_request, "Bad filter",
               results ? "`after` is WORKUNIT.INDEX and `host` a host's id."
                       : "`after` is a workunit's id.",
               v->base + page, "First page");
    return false;
  }
  q.after = *after;
  q.host = host;
  q.limit = results ? results_per_page : workunits_per_page;
  return true;
}

/// The rows of a listing's state choices and its app choices, with the current one marked.
void filter_choices(web::data& values, const std::vector<std::string>& states,
                    const listing_page& page, const listing_query& q) {
  web::list state_rows;
  for (const auto& s : states)
    state_rows.emplace_back(web::object{{"name", s}, {"selected", s == q.state}});
  web::list app_rows;
  for (const auto& a : page.apps)
    app_rows.emplace_back(web::object{{"name", a}, {"selected", a == q.app}});
  values.set("states", state_rows);
  values.set("apps", app_rows);
}

/// What a listing page says beside its rows: where the next page is, whether the look was
/// cut short by the budget, and the link back to the first page.
void pager(web::data& values, const visit& v, const listing_query& q, const listing_page& page,
           std::size_t rows) {
  values.set("has_rows", rows > 0);
  values.set("searched", count_text(page.looked_at));
  if (page.next)
    values.set("next", listing_url(v, q, page.next));
  if (page.budget_spent)
    values.set("budget_spent", true);
  if (q.after != result_ref{})
    values.set("first_page", listing_url(v, q, std::nullopt));
}

/// A listing query's failure: an unknown state or app answers 400 with why.
auto bad_filter(const visit_ptr& v, const char* page) {
  return [v, page](caf::error& err) {
    if (!is(err, ec::invalid_argument))
      return false;
    v->message(http::status::bad_request, "Bad filter", describe_sentence(err), v->base + page,
               "First page");
    return true;
  };
}

void workunits(const visit_ptr& v) {
  as_operator(v, [v] {
    auto q = std::make_shared<listing_query>();
    q->what = listing_query::of::workunits;
    if (!filters_in(v, *q, "active"))
      return;
    ask(
      v,
      [v, q](const listing_page_ptr& page) {
        web::list rows;
        for (const auto& w : page->workunits)
          rows.emplace_back(
            web::object{{"name", w.wu.name},
                        {"app", w.app_name},
                        {"state", to_string(w.wu.state)},
                        {"created", time_text(w.wu.created)},
                        {"finished", w.wu.finished ? time_text(w.wu.finished) : std::string{}},
                        {"results", result_summary(w.wu)},
                        {"failure", w.wu.failure}});
        auto shown = q->state.empty() ? std::string{"any"} : q->state;
        web::data values{web::object{{"state", shown}, {"any", q->state.empty()}}};
        filter_choices(values, {}, *page, *q);
        values.set("tabs", state_tabs(shown, q->app));
        values.set("rows", rows);
        pager(values, *v, *q, *page, rows.size());
        v->operator_page(http::status::ok, "ops_workunits", "Workunits: " + shown,
                         std::move(values));
      },
      bad_filter(v, "ops/workunits"), atom::list_v, listing_query_ptr{q});
  });
}

/// Rows of results as the listings and the host page show them.
web::list result_rows(const std::vector<result_listing_row>& results) {
  web::list rows;
  for (const auto& x : results) {
    const auto& r = x.rec;
    bool reported = r.received != 0;
    web::object row{{"name", x.name},
                    {"wu", x.wu_name},
                    {"app", x.app},
                    {"state", result_words(r)},
                    {"bad", r.outcome == result_outcome::client_error
                              || r.outcome == result_outcome::no_reply
                              || r.validation == validate_state::invalid},
                    {"sent", r.sent ? time_text(r.sent) : std::string{}},
                    {"received", reported ? time_text(r.received) : std::string{}},
                    {"credit", r.validation == validate_state::valid
                                 ? credit_text(r.credit->granted)
                                 : std::string{}}};
    if (r.host != 0) {
      row["host"] = std::to_string(r.host);
      row["has_host"] = true;
    }
    rows.emplace_back(std::move(row));
  }
  return rows;
}

void results(const visit_ptr& v) {
  as_operator(v, [v] {
    auto q = std::make_shared<listing_query>();
    q->what = listing_query::of::results;
    if (!filters_in(v, *q, "any"))
      return;
    ask(
      v,
      [v, q](const listing_page_ptr& page) {
        auto rows = result_rows(page->results);
        auto shown = q->state.empty() ? std::string{"any state"} : q->state;
        web::data values{web::object{{"state", shown}}};
        std::vector<std::string> states;
        for (auto s : result_states())
          states.emplace_back(s);
        filter_choices(values, states, *page, *q);
        if (q->host != 0)
          values.set("host", std::to_string(q->host));
        values.set("rows", rows);
        pager(values, *v, *q, *page, rows.size());
        v->operator_page(http::status::ok, "ops_results", "Results: " + shown, std::move(values));
      },
      bad_filter(v, "ops/results"), atom::list_v, listing_query_ptr{q});
  });
}

void workunit_page_of(const visit_ptr& v, const workunit_view& w, http::status status,
                      const std::string& note) {
  const auto& wu = w.wu;
  web::list results;
  for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
    const auto& r = wu.results[i];
    bool reported = r.received != 0;
    auto name = i < w.result_names.size() ? w.result_names[i] : wu.name + "_" + std::to_string(i);
    web::object row{{"name", name},
                    {"state", result_words(r)},
                    {"bad", r.outcome == result_outcome::client_error
                              || r.outcome == result_outcome::no_reply
                              || r.validation == validate_state::invalid},
                    {"canonical", wu.canonical && *wu.canonical == i},
                    {"sent", r.sent ? time_text(r.sent) : std::string{}},
                    {"deadline", r.deadline ? time_text(r.deadline) : std::string{}},
                    {"received", reported ? time_text(r.received) : std::string{}},
                    {"elapsed", reported ? fmt::format("{:.0f} s", r.report->elapsed) : ""},
                    {"exit_status", reported ? std::to_string(r.report->exit_status) : ""},
                    {"credit", r.validation == validate_state::valid
                                 ? credit_text(r.credit->granted)
                                 : std::string{}}};
    if (r.host != 0) {
      row["host"] = std::to_string(r.host);
      row["has_host"] = true;
    }
    results.emplace_back(std::move(row));
  }
  web::data values{web::object{{"name", wu.name},
                               {"app", w.app_name},
                               {"state", to_string(wu.state)},
                               {"created", time_text(wu.created)},
                               {"finished", wu.finished ? time_text(wu.finished) : "not yet"},
                               {"active", wu.state == wu_state::active && !wu.sequence},
                               {"in_sequence", static_cast<bool>(wu.sequence)}}};
  // An empty string is a true section in Mustache: only what is there is set.
  if (!wu.failure.empty())
    values.set("failure", wu.failure);
  if (!note.empty())
    values.set("note", note);
  values.set("results", results);
  v->operator_page(status, "ops_workunit", "Workunit " + wu.name, std::move(values));
}

/// The workunit named by `key`, or the one a result name belongs to.
void show_workunit(const visit_ptr& v, const std::string& key, http::status status,
                   const std::string& note) {
  ask(
    v, [v, status, note](const workunit_view_ptr& w) { workunit_page_of(v, *w, status, note); },
    [v, key, status, note](caf::error& err) {
      if (!is(err, ec::unknown_workunit))
        return false;
      // A result's name is its workunit's name and _INDEX.
      auto split = split_indexed_name(key);
      if (split && !split->first.empty()) {
        show_workunit(v, std::string{split->first}, status, note);
        return true;
      }
      v->message(http::status::not_found, "No such workunit",
                 "No workunit or result is named \"" + key + "\".", v->base + "ops/", "Operator");
      return true;
    },
    atom::workunit_v, key);
}

void workunit(const visit_ptr& v) {
  as_operator(v, [v] {
    auto name = v->param("name");
    if (name.empty()) {
      v->see_other("ops/");
      return;
    }
    show_workunit(v, name, http::status::ok, {});
  });
}

void cancel(const visit_ptr& v) {
  as_operator(v, [v] {
    if (!v->form_allowed() || v->disk_low())
      return;
    auto name = v->field("name");
    auto reason = v->field("reason");
    if (name.empty() || reason.size() > max_reason) {
      v->message(http::status::bad_request, "Not cancelled",
                 "Name the workunit; a reason takes at most 512 bytes.", v->base + "ops/",
                 "Operator");
      return;
    }
    ask(
      v,
      [v](const workunit_view_ptr& w) {
        spdlog::info("site of {}: an operator cancelled workunit {}", v->project_name, w->wu.name);
        workunit_page_of(v, *w, http::status::ok, "Cancelled.");
      },
      [v, name](caf::error& err) {
        if (is(err, ec::conflict) || is(err, ec::invalid_argument)) {
          show_workunit(v, name, http::status::conflict, "Not cancelled: " + describe(err));
          return true;
        }
        return missing_as(v, ec::unknown_workunit, "No such workunit",
                          "No workunit is named \"" + name + "\".")(err);
      },
      atom::cancel_v, name, reason, std::string{"operator (web)"});
  });
}

// -- hosts and accounts --------------------------------------------------------------------

void host_page_of(const visit_ptr& v, const host_view& h) {
  auto now = wall_now();
  const auto& reg = h.reg;
  web::data values{
    web::object{{"id", std::to_string(reg.id)},
                {"user", std::to_string(reg.user)},
                {"created", time_text(reg.created)},
                {"total_credit", credit_text(reg.credit.total)},
                {"recent_credit", credit_text(reg.credit.expavg_at(now, v->half_life()))}}};
  web::list versions;
  web::list jobs;
  if (h.state) {
    const auto& s = *h.state;
    const auto& info = s.info;
    values.set("last_contact", time_text(s.last_rpc));
    values.set("domain_name", info.domain_name);
    values.set("os", info.os_name + " " + info.os_version);
    values.set("cpu", fmt::format("{} {} × {}", info.p_vendor, info.p_model, info.p_ncpus));
    values.set("flops", fmt::format("{:.2f} GFLOPS", info.p_fpops / 1e9));
    values.set("reported", count_text(s.results_reported));
    for (const auto& [id, av] : s.app_versions)
      versions.emplace_back(
        web::object{{"id", std::to_string(id)},
                    {"sent", count_text(av.n_sent)},
                    {"success", count_text(av.n_success)},
                    {"error", count_text(av.n_error)},
                    {"timeout", count_text(av.n_timeout)},
                    {"error_rate", fmt::format("{:.3f}", av.error_rate)},
                    {"turnaround", av.turnaround.n
                                     ? fmt::format("{:.1f} h", av.turnaround.avg / 3600)
                                     : std::string{"–"}},
                    {"quota", av.max_jobs_per_day > 0
                                ? fmt::format("{} of {}", av.n_jobs_today, av.max_jobs_per_day)
                                : std::string{"none"}},
                    {"probation", av.scale_probation ? "yes" : "no"}});
    for (const auto& [name, held] : s.in_progress) {
      if (jobs.size() >= jobs_listed)
        break;
      jobs.emplace_back(web::object{{"name", name},
                                    {"sent", time_text(held.sent)},
                                    {"deadline", time_text(held.deadline)},
                                    {"late", held.deadline < now}});
    }
    values.set("in_progress", count_text(s.in_progress.size()));
    values.set("more_jobs", s.in_progress.size() > jobs.size());
  }
  values.set("has_versions", !versions.empty());
  values.set("versions", versions);
  values.set("has_jobs", !jobs.empty());
  values.set("jobs", jobs);
  values.set("has_finished", !h.finished.empty());
  values.set("finished", result_rows(h.finished));
  v->operator_page(http::status::ok, "ops_host", "Host " + std::to_string(reg.id),
                   std::move(values));
}

void host(const visit_ptr& v) {
  as_operator(v, [v] {
    auto id = id_in(v->param("id"));
    ask(
      v, [v](const host_view_ptr& h) { host_page_of(v, *h); },
      missing_as(v, ec::unknown_host, "No such host", "No host has this id."), atom::host_v, id);
  });
}

void user(const visit_ptr& v) {
  as_operator(v, [v] {
    auto q = std::make_shared<account_query>();
    q->by = account_query::key::id;
    q->id = id_in(v->param("id"));
    q->hosts = true;
    q->detail = true;
    ask(
      v,
      [v](const account_view_ptr& a) {
        auto now = wall_now();
        const auto& u = a->user;
        auto hosts = host_rows(*v, *a, now, a->hosts.size());
        web::data values{
          web::object{{"id", std::to_string(u.id)},
                      {"name", u.name},
                      {"email", u.email},
                      {"created", time_text(u.created)},
                      {"total_credit", credit_text(u.credit.total)},
                      {"recent_credit", credit_text(u.credit.expavg_at(now, v->half_life()))},
                      {"has_hosts", !hosts.empty()}}};
        values.set("hosts", hosts);
        auto recent = recent_result_rows(*a);
        values.set("has_recent", !recent.empty());
        values.set("recent", recent);
        if (!u.country.empty())
          values.set("country", u.country);
        if (!u.team.empty())
          values.set("team", u.team);
        v->operator_page(http::status::ok, "ops_user", "Account " + std::to_string(u.id),
                         std::move(values));
      },
      missing_as(v, ec::unknown_account, "No such account", "No account has this id."),
      atom::user_v, account_query_ptr{q});
  });
}

// -- stories: what the event log says of one workunit, host or account ---------------------

constexpr std::uint64_t story_window = 200000; ///< Events read for one page of a story.
constexpr std::size_t story_lines = 200;       ///< The newest lines of the window shown.

/// What a story is of, as the page's `of` parameter names it.
struct story_subject {
  entity_kind kind = entity_kind::workunit;
  id_type id = 0;
  std::string param; ///< `wu:NAME`, `host:ID`, `user:ID`.
  std::string title;
  std::string back; ///< The subject's operator page.
};

/// The results an event names (its result, or a validation's verdicts).
void refs_in(const event& e, std::vector<result_ref>& out) {
  if (auto r = result_of(e.data))
    out.push_back(*r);
  if (const auto* x = std::get_if<ev::workunit_validated>(&e.data)) {
    for (const auto& d : x->verdicts)
      out.push_back({x->wu, d.index});
    if (x->canonical)
      out.push_back({x->wu, *x->canonical});
  }
  if (const auto* x = std::get_if<ev::workunit_assimilated>(&e.data))
    out.push_back({x->wu, x->canonical});
}

void story_page(const visit_ptr& v, const story_subject& subject,
                const std::shared_ptr<const std::vector<event>>& events, std::uint64_t from,
                std::uint64_t to, bool cut, const std::map<result_ref, std::string>& names) {
  auto namer = [&names](result_ref r) {
    auto i = names.find(r);
    return i != names.end() ? i->second : fmt::format("wu{}_{}", r.wu, r.index);
  };
  web::list lines;
  for (const auto& e : *events)
    lines.emplace_back(web::object{{"seq", std::to_string(e.seq)},
                                   {"time", time_text(e.time)},
                                   {"text", story_of(e, namer)}});
  web::data values{web::object{{"title", subject.title},
                               {"back", subject.back},
                               {"from", count_text(from)},
                               {"to", count_text(to)},
                               {"has_lines", !lines.empty()},
                               {"cut", cut}}};
  values.set("lines", lines);
  if (from > 1)
    values.set("earlier", fmt::format("{}ops/story?of={}&before={}", v->base,
                                      php_urlencode(subject.param), from));
  v->operator_page(http::status::ok, "ops_story", subject.title, std::move(values));
}

/// Reads the window of the log that ends before `before` (0: the newest event) on the story
/// thread, then asks the project for the results' names and shows the page.
void tell_story(const visit_ptr& v, story_subject subject, std::uint64_t before) {
  auto index = v->ctx->project_indexes.find(v->project_name);
  if (!v->ctx->events || index == v->ctx->project_indexes.end()) {
    v->message(http::status::service_unavailable, "No stories here",
               "This server does not read its event log for pages.", v->base + "ops/", "Operator");
    return;
  }
  auto project = index->second;
  bool queued = v->ctx->stories->post([v, subject, before, project] {
    const auto& store = *v->ctx->events;
    auto last = store.last_seq();
    auto to = before == 0 || before > last + 1 ? last : before - 1;
    auto from = to > story_window ? to - story_window + 1 : std::uint64_t{1};
    auto found = std::make_shared<std::vector<event>>();
    bool cut = false;
    caf::error err;
    if (to > 0)
      err = store.scan(from, to, [&](const storage::event_record& r) {
        auto e = from_record(r);
        if (e && e->project == project && touches(*e, subject.kind, subject.id)) {
          found->push_back(std::move(*e));
          if (found->size() > 2 * story_lines) { // keep the newest, in order
            found->erase(found->begin(), found->end() - story_lines);
            cut = true;
          }
        }
        return true;
      });
    if (err) {
      v->trouble(err);
      return;
    }
    if (found->size() > story_lines) {
      found->erase(found->begin(), found->end() - story_lines);
      cut = true;
    }
    auto refs = std::make_shared<std::vector<result_ref>>();
    for (const auto& e : *found)
      refs_in(e, *refs);
    std::sort(refs->begin(), refs->end());
    refs->erase(std::unique(refs->begin(), refs->end()), refs->end());
    ask(
      v,
      [v, subject, found, from, to, cut, refs](const names_ptr& names) {
        std::map<result_ref, std::string> by_ref;
        for (std::size_t i = 0; i < refs->size() && i < names->size(); ++i)
          by_ref.emplace((*refs)[i], (*names)[i]);
        story_page(v, subject, found, from, to, cut, by_ref);
      },
      [](caf::error&) { return false; }, atom::workunit_v, result_refs_ptr{refs});
  });
  if (!queued)
    v->message(http::status::service_unavailable, "Busy",
               "Other stories are being read from the log; try again in a minute.",
               v->base + "ops/", "Operator");
}

void story(const visit_ptr& v) {
  as_operator(v, [v] {
    auto of = v->param("of");
    std::uint64_t before = 0;
    if (auto b = v->param("before"); !b.empty() && (!xml::to_integer(b, before) || before == 0)) {
      v->message(http::status::bad_request, "Bad request", "`before` is an event's number.",
                 v->base + "ops/", "Operator");
      return;
    }
    auto colon = of.find(':');
    auto kind = of.substr(0, colon);
    auto key = colon == std::string::npos ? std::string{} : of.substr(colon + 1);
    story_subject subject;
    subject.param = of;
    if (kind == "wu" && !key.empty()) {
      ask(
        v,
        [v, subject, before](const workunit_view_ptr& w) mutable {
          subject.kind = entity_kind::workunit;
          subject.id = w->wu.id;
          subject.title = "Story of workunit " + w->wu.name;
          subject.back = v->base + "ops/workunit?name=" + php_urlencode(w->wu.name);
          tell_story(v, std::move(subject), before);
        },
        missing_as(v, ec::unknown_workunit, "No such workunit",
                   "No workunit is named \"" + key + "\"."),
        atom::workunit_v, key);
      return;
    }
    auto id = id_in(key);
    if ((kind != "host" && kind != "user") || id == 0) {
      v->message(http::status::bad_request, "Bad request",
                 "A story is of wu:NAME, host:ID or user:ID.", v->base + "ops/", "Operator");
      return;
    }
    bool host = kind == "host";
    subject.kind = host ? entity_kind::host : entity_kind::user;
    subject.id = id;
    subject.title = fmt::format("Story of {} {}", host ? "host" : "account", id);
    subject.back = fmt::format("{}ops/{}?id={}", v->base, kind, id);
    tell_story(v, std::move(subject), before);
  });
}

} // namespace

void add_operator_routes(const std::shared_ptr<web_site_context>& ctx, const std::string& name,
                         const project_actor& project, std::vector<route>& out) {
  using http::verb;
  out.push_back(site_route(ctx, name, project, "ops/", {verb::get}, home));
  out.push_back(site_route(ctx, name, project, "ops/login", {verb::get, verb::post}, login));
  out.push_back(site_route(ctx, name, project, "ops/logout", {verb::post}, logout));
  out.push_back(site_route(ctx, name, project, "ops/workunits", {verb::get}, workunits));
  out.push_back(site_route(ctx, name, project, "ops/workunit", {verb::get}, workunit));
  out.push_back(site_route(ctx, name, project, "ops/results", {verb::get}, results));
  out.push_back(site_route(ctx, name, project, "ops/cancel", {verb::post}, cancel));
  out.push_back(site_route(ctx, name, project, "ops/host", {verb::get}, host));
  out.push_back(site_route(ctx, name, project, "ops/user", {verb::get}, user));
  out.push_back(site_route(ctx, name, project, "ops/story", {verb::get}, story));
}

} // namespace cobble::net
