#pragma once
/// One request to the project's site (volunteer and operator pages) while it is answered: what
/// it brought (form, query, cookies), how it answers (pages from templates, messages, redirects,
/// the site's security headers) and the helpers every page uses to ask the project from a
/// one-shot actor. net/web_site.cpp holds the volunteer pages, net/web_operator.cpp the
/// operator pages.
#include "actors/clock.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "net/boinc_xml.hpp"
#include "net/number_text.hpp"
#include "net/one_shot.hpp"
#include "net/web_site.hpp"
#include "net/web_templates.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

inline constexpr auto ask_timeout = std::chrono::seconds(30);
inline constexpr std::size_t max_password = 256; ///< Bytes of a password typed into the site.
inline constexpr double default_half_life = 7 * 86400;

/// Now, in Unix seconds.
std::int64_t now_unix();
/// A moment as its UTC date, 2026-12-03.
std::string date_text(time_us t);
/// A moment as its UTC date and time, 2026-12-03 14:05 UTC; "never" for 0.
std::string time_text(time_us t);
/// The scheme and authority of `url` (what a browser's Origin header holds for it).
std::string origin_of(std::string_view url);

/// One page request in progress: where its answer goes and what it brought.
struct visit {
  std::shared_ptr<web_site_context> ctx;
  std::string project_name;
  project_actor project;
  reply_shape shape;
  responder respond;
  std::string base;       ///< `/NAME/`.
  std::string master_url; ///< The project's URL, as clients attach with it.
  bool secure = false;    ///< Served over https: cookies are Secure.
  bool post = false;
  std::string csrf_cookie;                   ///< The form-token cookie, the browser's or a new one.
  bool new_csrf = false;                     ///< The browser had none: the answer sets csrf_cookie.
  std::string session;                       ///< The session cookie; empty: none.
  std::string operator_session;              ///< The operator cookie; empty: none.
  std::string origin;                        ///< The request's Origin header; empty: none.
  std::map<std::string, std::string> form{}; ///< A POST's fields.
  std::map<std::string, std::string> query{}; ///< The query string's parameters.

  [[nodiscard]] const config::accounts_config& accounts() const {
    static const config::accounts_config defaults{};
    auto i = ctx->web->accounts.find(project_name);
    return i == ctx->web->accounts.end() ? defaults : i->second;
  }
  [[nodiscard]] std::string long_name() const {
    const auto& names = ctx->web->edge->long_names;
    auto i = names.find(project_name);
    return i == names.end() ? project_name : i->second;
  }
  [[nodiscard]] double half_life() const {
    auto i = ctx->credit_half_lives.find(project_name);
    return i == ctx->credit_half_lives.end() ? default_half_life : i->second;
  }
  [[nodiscard]] std::string field(const std::string& key) const {
    auto i = form.find(key);
    return i == form.end() ? std::string{} : i->second;
  }
  [[nodiscard]] std::string param(const std::string& key) const {
    auto i = query.find(key);
    return i == query.end() ? std::string{} : i->second;
  }
  /// The hidden field of this visit's forms.
  [[nodiscard]] std::string csrf() const {
    return web::csrf_field(*ctx->key, project_name, csrf_cookie);
  }
  [[nodiscard]] std::string cookie(std::string_view name, std::string_view value,
                                   std::int64_t max_age, std::string_view same_site) const {
    return web::set_cookie(name, value, base, max_age, same_site, secure);
  }

  /// An answer with the site's headers and `cookies` (plus a new form token's).
  [[nodiscard]] response
  answer(http::status status, std::string body, const std::vector<std::string>& cookies) const {
    auto res = shaped(shape, status, std::move(body), "text/html; charset=utf-8");
    res.set("Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    res.set("X-Content-Type-Options", "nosniff");
    res.set("X-Frame-Options", "DENY");
    res.set("Referrer-Policy", "same-origin");
    res.set(http::field::cache_control, "no-store");
    if (new_csrf)
      res.insert(http::field::set_cookie,
                 cookie(web::csrf_cookie, csrf_cookie, web::session_seconds, "Strict"));
    for (const auto& c : cookies)
      res.insert(http::field::set_cookie, c);
    return res;
  }

  /// Page `page` with `values`, for `user` (empty: nobody logged in).
  void page(http::status status, std::string_view page, const std::string& title, web::data values,
            const std::string& user = {}, const std::vector<std::string>& cookies = {},
            std::string head = {}) const {
    render_page(status, page, web::frame{title, long_name(), base, user, csrf(), std::move(head)},
                std::move(values), cookies);
  }

  /// An operator page `page` with `values` (the header shows the operator's links).
  void operator_page(http::status status, std::string_view page, const std::string& title,
                     web::data values, const std::vector<std::string>& cookies = {}) const {
    web::frame f{title, long_name(), base, {}, csrf(), {}};
    f.operator_pages = true;
    render_page(status, page, f, std::move(values), cookies);
  }

  /// `page` with `values` in the frame `f`.
  void render_page(http::status status, std::string_view page, const web::frame& f,
                   web::data values, const std::vector<std::string>& cookies) const {
    values.set("base", base);
    values.set("project", f.project);
    values.set("csrf", f.csrf);
    respond(answer(status, web::render(page, values, f), cookies));
  }

  /// A short page that says what happened, with a link onwards.
  void message(http::status status, const std::string& heading, const std::string& text,
               const std::string& href = {}, const std::string& label = {},
               const std::vector<std::string>& cookies = {}) const {
    web::data values{web::object{{"heading", heading}, {"text", text}}};
    if (!href.empty())
      values.set("link", web::object{{"href", href}, {"label", label}});
    page(status, "message", heading, std::move(values), {}, cookies);
  }

  /// 303 to `path` (relative to the project's path), setting `cookies`.
  void see_other(const std::string& path, const std::vector<std::string>& cookies = {}) const {
    auto res = answer(http::status::see_other, {}, cookies);
    res.set(http::field::location, base + path);
    res.prepare_payload();
    respond(std::move(res));
  }

  /// The server could not answer now (an actor's error or timeout).
  void trouble(const caf::error& err) const {
    spdlog::warn("site of {}: {}", project_name, describe(err));
    message(http::status::service_unavailable, "Try again later",
            "The server could not answer just now. Please try again in a minute.", base, "Home");
  }

  /// Whether the data directory is too low on space for a change; answers 503 when it is.
  [[nodiscard]] bool disk_low() const {
    const auto& disk = ctx->web->edge->disk;
    if (!disk || !disk->low())
      return false;
    message(http::status::service_unavailable, "Try again later",
            "The project's server is low on disk space and accepts no changes for now.", base,
            "Home");
    return true;
  }

  /// Whether a posted form may act: it came from this site's page (Origin, when the browser
  /// sends one, is the site's) and carries the token of this browser's cookie. Answers 403
  /// when not.
  [[nodiscard]] bool form_allowed() const {
    if (!origin.empty() && origin != origin_of(master_url)) {
      message(http::status::forbidden, "Form refused",
              "This form was sent from another site; nothing was changed.", base, "Home");
      return false;
    }
    if (new_csrf || !web::csrf_matches(*ctx->key, project_name, csrf_cookie, field("csrf"))) {
      message(http::status::forbidden, "Form expired",
              "The form was out of date or your browser did not keep this site's cookie; "
              "nothing was changed. Go back, reload the page and send it again.",
              base, "Home");
      return false;
    }
    return true;
  }

  /// A session cookie for `account`, valid for session_seconds from now.
  [[nodiscard]] std::string session_cookie_for(const user_rec& account) const {
    auto expires = now_unix() + web::session_seconds;
    return cookie(web::session_cookie,
                  web::session_value(*ctx->key, project_name, account.id, expires,
                                     account.authenticator, account.passwd),
                  web::session_seconds, "Lax");
  }
  [[nodiscard]] std::string cleared_session() const {
    return cookie(web::session_cookie, "", 0, "Lax");
  }
};

using visit_ptr = std::shared_ptr<const visit>;

/// What a page asks of an account besides the account itself.
enum class account_parts : std::uint8_t {
  bare,   ///< Nothing more.
  hosts,  ///< Its hosts and their last contact.
  detail, ///< Its hosts, credit per app and recent results (the account page).
};

/// Finds the account of the visit's session and calls `then` with it, or with null when
/// there is no session, it ended, or it does not match the account as it is now (a changed
/// password).
template <class F>
void with_session(const visit_ptr& v, account_parts parts, F then) {
  auto claim = v->session.empty() ? std::nullopt : web::read_session(v->session, now_unix());
  if (!claim) {
    then(account_view_ptr{});
    return;
  }
  auto q = std::make_shared<account_query>();
  q->by = account_query::key::id;
  q->id = claim->user;
  q->hosts = parts != account_parts::bare;
  q->detail = parts == account_parts::detail;
  spawn_one_shot(*v->ctx->web->edge->sys,
                 [v, q, claim = *claim, then](caf::event_based_actor* self) {
                   self->request(v->project, ask_timeout, atom::user_v, account_query_ptr{q})
                     .then(
                       [v, claim, then](const account_view_ptr& a) {
                         if (web::session_valid(*v->ctx->key, v->project_name, claim,
                                                a->user.authenticator, a->user.passwd))
                           then(a);
                         else
                           then(account_view_ptr{});
                       },
                       [v, then](caf::error& err) {
                         if (is(err, ec::unknown_account))
                           then(account_view_ptr{});
                         else
                           v->trouble(err);
                       });
                 });
}

/// The name of the logged-in account; empty for nobody.
std::string user_name(const account_view_ptr& a);

/// Asks the project `xs...` from a one-shot actor; `then` gets the answer, an error or a
/// timeout the server's trouble page unless `fail` (caf::error& -> bool) took it.
template <class F, class E, class... Ts>
void ask(const visit_ptr& v, F then, E fail, Ts... xs) {
  spawn_one_shot(*v->ctx->web->edge->sys, [v, then, fail, xs...](caf::event_based_actor* self) {
    self->request(v->project, ask_timeout, xs...).then(then, [v, fail](caf::error& err) {
      if (!fail(err))
        v->trouble(err);
    });
  });
}

/// Calls `then` with the logged-in account; sends anyone else to the login page.
template <class F>
void with_account(const visit_ptr& v, account_parts parts, F then) {
  with_session(v, parts, [v, then](const account_view_ptr& a) {
    if (a)
      then(a);
    else
      v->see_other("login", v->session.empty() ? std::vector<std::string>{}
                                               : std::vector{v->cleared_session()});
  });
}

/// An account's newest `max` hosts as the pages' rows: id, joined, last contact, total and
/// recent credit at `now`.
web::list host_rows(const visit& v, const account_view& a, time_us now, std::size_t max);

/// An account's credit per app as the account page's rows, recent credit at `now`.
web::list app_credit_rows(const visit& v, const account_view& a, time_us now);

/// An account's recent results as the account page's rows.
web::list recent_result_rows(const account_view& a);

/// The account page's plot of credit over time, as the template's values; null (a false
/// section) when there is no credit to plot.
web::data plot_values(const account_view& a, time_us now);

/// A positive id in a parameter; 0 when it is absent or malformed.
id_type id_in(const std::string& text);

/// What a page does with its visit.
using page_fn = void (*)(const visit_ptr&);

/// The route of page `fn` at `/NAME/path` of project `name`, answering `methods`: it reads the
/// cookies, the query and a posted form (refusing bad escapes and fields over 4096 bytes) into
/// a visit and hands it to `fn`.
route site_route(const std::shared_ptr<web_site_context>& ctx, const std::string& name,
                 const project_actor& project, const std::string& path,
                 std::vector<http::verb> methods, page_fn fn);

} // namespace cobble::net
