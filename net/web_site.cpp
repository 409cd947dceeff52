#include "net/web_site.hpp"

#include "actors/credit.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "net/boinc_xml.hpp"
#include "net/one_shot.hpp"
#include "net/password.hpp"
#include "net/web_rpc_xml.hpp"
#include "net/web_templates.hpp"

#include <caf/all.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <utility>

namespace cobble::net {

namespace {

constexpr auto ask_timeout = std::chrono::seconds(30);
constexpr std::size_t max_field = 4096;   ///< Bytes of one form field.
constexpr std::size_t max_password = 256; ///< Bytes of a password typed into the site.
constexpr std::size_t body_limit = 16384; ///< Bytes of a posted form.
constexpr double default_half_life = 7 * 86400;

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

time_us now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// A credit figure as people read it: thousands grouped, two decimals below 100.
std::string credit_text(double credit) {
  if (!std::isfinite(credit) || credit < 0)
    credit = 0;
  if (credit < 100)
    return fmt::format("{:.2f}", credit);
  auto digits = fmt::format("{:.0f}", credit);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// A moment as its UTC date, 2026-12-03.
std::string date_text(time_us t) {
  std::time_t seconds = static_cast<std::time_t>(t / 1'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

/// The scheme and authority of `url` (what a browser's Origin header holds for it).
std::string origin_of(std::string_view url) {
  auto scheme = url.find("://");
  if (scheme == std::string_view::npos)
    return std::string{url};
  auto path = url.find('/', scheme + 3);
  return std::string{url.substr(0, path)};
}

/// Whether `value` looks like a form-token cookie this server made (32 hex digits).
bool plausible_csrf(std::string_view value) {
  if (value.size() != 32)
    return false;
  for (char c : value)
    if (!std::isxdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

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
  std::string csrf_cookie; ///< The form-token cookie, the browser's or a new one.
  bool new_csrf = false;   ///< The browser had none: the answer sets csrf_cookie.
  std::string session;     ///< The session cookie; empty: none.
  std::string origin;      ///< The request's Origin header; empty: none.
  std::map<std::string, std::string> form{};

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
    web::frame f{title, long_name(), base, user, csrf(), std::move(head)};
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

/// Finds the account of the visit's session and calls `then` with it, or with null when
/// there is no session, it ended, or it does not match the account as it is now (a changed
/// password). `hosts`: the account's hosts too.
template <class F>
void with_session(const visit_ptr& v, bool hosts, F then) {
  auto claim = v->session.empty() ? std::nullopt : web::read_session(v->session, now_unix());
  if (!claim) {
    then(account_view_ptr{});
    return;
  }
  auto q = std::make_shared<account_query>();
  q->by = account_query::key::id;
  q->id = claim->user;
  q->hosts = hosts;
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

std::string user_name(const account_view_ptr& a) {
  return a ? a->user.name : std::string{};
}

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
  with_session(v, false, [v, head](const account_view_ptr& a) {
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
    with_session(v, false, [v](const account_view_ptr& a) {
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
  if (auto wait = v->ctx->web->failures->wait(key, now_seconds()); wait > 0) {
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
          v->ctx->web->failures->failed(key, now_seconds());
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
          creation_form(v, http::status::bad_request, describe(err));
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
  const auto& disk = v->ctx->web->edge->disk;
  if (disk && disk->low()) {
    v->message(http::status::service_unavailable, "Try again later",
               "The project's server is low on disk space and makes no accounts for now.", v->base,
               "Home");
    return;
  }
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
          auto waiting = caf::actor_cast<caf::actor>(self);
          bool queued = v->ctx->web->passwords->post([v, waiting, email, password] {
            try {
              caf::anon_send(waiting, atom::create_v,
                             store_password(boinc_password_hash(password, email)));
            } catch (const std::exception& e) {
              spdlog::error("password hashing failed: {}", e.what());
              v->message(http::status::service_unavailable, "Try again later",
                         "The server could not store the password; please try again.");
              caf::anon_send_exit(waiting, caf::exit_reason::user_shutdown);
            }
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

void account(const visit_ptr& v) {
  with_session(v, true, [v](const account_view_ptr& a) {
    if (!a) {
      v->see_other("login", v->session.empty() ? std::vector<std::string>{}
                                               : std::vector{v->cleared_session()});
      return;
    }
    auto now = now_us();
    const auto& u = a->user;
    web::list hosts;
    for (const auto& h : a->hosts)
      hosts.emplace_back(
        web::object{{"id", std::to_string(h.id)},
                    {"created", date_text(h.created)},
                    {"total_credit", credit_text(h.credit.total)},
                    {"recent_credit", credit_text(h.credit.expavg_at(now, v->half_life()))}});
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
    if (!u.team.empty())
      values.set("team", u.team);
    v->page(http::status::ok, "account", "Your account", std::move(values), u.name);
  });
}

// -- routes ----------------------------------------------------------------------------------

using page_fn = void (*)(const visit_ptr&);

route site_route(const std::shared_ptr<web_site_context>& ctx, const std::string& name,
                 const project_actor& project, const std::string& path,
                 std::vector<http::verb> methods, page_fn fn) {
  return route{"/" + name + "/" + path,
               true,
               std::move(methods),
               body_limit,
               [ctx, name, project, fn](request&& req, const responder& respond) {
                 auto v = std::make_shared<visit>();
                 v->ctx = ctx;
                 v->project_name = name;
                 v->project = project;
                 v->shape = reply_shape{req.version(), req.keep_alive()};
                 v->respond = respond;
                 v->base = "/" + name + "/";
                 auto base = base_url(*ctx->web->edge, req);
                 v->master_url = base + v->base;
                 v->secure = base.starts_with("https://");
                 v->post = req.method() == http::verb::post;
                 v->origin = std::string{req[http::field::origin]};
                 auto cookies = req[http::field::cookie];
                 if (auto c = web::cookie_value(cookies, web::csrf_cookie); c && plausible_csrf(*c))
                   v->csrf_cookie = *c;
                 else {
                   v->csrf_cookie = web::new_csrf_value();
                   v->new_csrf = true;
                 }
                 v->session = web::cookie_value(cookies, web::session_cookie).value_or("");
                 if (v->post) {
                   auto form = parse_form(req.body());
                   if (!form) {
                     v->message(http::status::bad_request, "Bad request",
                                "The form could not be read (a bad %-escape).");
                     return;
                   }
                   for (const auto& [k, value] : *form)
                     if (value.size() > max_field) {
                       v->message(http::status::bad_request, "Bad request",
                                  "A field of the form is longer than 4096 bytes.");
                       return;
                     }
                   v->form = std::move(*form);
                 }
                 fn(v);
               },
               {},
               {}};
}

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
  }
  return out;
}

} // namespace cobble::net
