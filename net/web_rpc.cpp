#include "net/web_rpc.hpp"

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "net/one_shot.hpp"
#include "net/web_rpc_xml.hpp"
#include "net/xml_text.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <utility>

namespace cobble::net {

namespace {

namespace wen = web_error_num;

constexpr auto ask_timeout = std::chrono::seconds(30);
constexpr std::size_t max_param = 4096; ///< Bytes of one parameter (preferences are not kept).

/// One web RPC in progress: where its answer goes and what it asked.
struct call {
  std::shared_ptr<web_rpc_context> ctx;
  std::string project_name;
  project_actor project;
  reply_shape shape;
  responder respond;
  std::map<std::string, std::string> form;
  std::string master_url;

  void answer(std::string xml) const {
    respond(shaped(shape, http::status::ok, std::move(xml), "text/xml; charset=utf-8"));
  }
  void error(int num, std::string_view msg) const { answer(web_error_xml(num, msg)); }

  /// The parameter, or nullopt when absent.
  [[nodiscard]] std::optional<std::string> get(const std::string& key) const {
    auto i = form.find(key);
    return i == form.end() ? std::nullopt : std::optional<std::string>{i->second};
  }
  /// The parameter, empty when absent.
  [[nodiscard]] std::string str(const std::string& key) const { return get(key).value_or(""); }

  [[nodiscard]] const config::accounts_config& accounts() const {
    static const config::accounts_config defaults{};
    auto i = ctx->accounts.find(project_name);
    return i == ctx->accounts.end() ? defaults : i->second;
  }

  /// The project's refusal as BOINC's error number.
  void refused(const caf::error& err) const {
    if (is(err, ec::unknown_account))
      error(wen::not_found, "No account with this account key or e-mail address.");
    else if (is(err, ec::duplicate))
      error(wen::not_unique, describe_sentence(err));
    else if (is(err, ec::invalid_argument))
      error(wen::generic, describe_sentence(err));
    else {
      spdlog::warn("web RPC on {}: {}", project_name, describe(err));
      error(wen::generic, "The server could not answer; try again later.");
    }
  }
};

using call_ptr = std::shared_ptr<const call>;

/// The key of an account's wrong-password counter.
std::string failure_key(const call& c, std::string_view email) {
  return password_failure_key(c.project_name, email);
}

// -- get_project_config.php --------------------------------------------------------------

void project_config(const call_ptr& c) {
  spawn_one_shot(*c->ctx->edge->sys, [c](caf::event_based_actor* self) {
    self->request(c->project, ask_timeout, atom::list_v, atom::app_v)
      .then(
        [c](const app_list_ptr& apps) {
          const auto& a = c->accounts();
          project_config_info info;
          const auto& names = c->ctx->edge->long_names;
          info.name = names.count(c->project_name) ? names.at(c->project_name) : c->project_name;
          info.master_url = c->master_url;
          info.min_passwd_length = a.min_password_length;
          info.creation_disabled = a.creation == config::account_creation::closed;
          info.invitation_required = a.creation == config::account_creation::invitation;
          info.terms_of_use = a.terms_of_use;
          info.platforms = platforms_of(*apps);
          c->answer(project_config_xml(info));
        },
        [c](caf::error& err) { c->refused(err); });
  });
}

// -- lookup_account.php, create_account.php -----------------------------------------------

/// Checks `passwd_hash` against the account's stored password on the password pool, then
/// answers the account key or -206 (`on_wrong`: the error number when it does not match).
void check_password(const call_ptr& c, const account_view_ptr& account,
                    const std::string& passwd_hash, int on_wrong) {
  auto key = failure_key(*c, account->user.email);
  if (auto wait = c->ctx->failures->wait(key); wait > 0) {
    c->error(wen::bad_passwd, "Too many wrong passwords for this account; try again in "
                                + std::to_string(static_cast<int>(std::ceil(wait / 60)))
                                + " minutes.");
    return;
  }
  bool queued = c->ctx->passwords->post([c, account, passwd_hash, on_wrong, key] {
    if (password_matches(account->user.passwd, passwd_hash)) {
      c->ctx->failures->succeeded(key);
      c->answer(account_out_xml(account->user.authenticator));
    } else {
      c->ctx->failures->failed(key);
      c->error(on_wrong, on_wrong == wen::bad_passwd
                           ? "Invalid password."
                           : "An account with this e-mail address exists, with another password.");
    }
  });
  if (!queued)
    c->error(wen::retry, "The server is busy checking passwords; try again in a minute.");
}

/// Hashes `passwd_hash` for storage on the password pool, which sends the stored form to
/// `self` as (create, stored) for the behavior it has become; answers the errors itself.
void hash_for(const call_ptr& c, caf::event_based_actor* self, const std::string& passwd_hash) {
  bool queued
    = post_store_password(*c->ctx->passwords, caf::actor_cast<caf::actor>(self), passwd_hash, [c] {
        c->error(wen::generic, "The server could not store the password; try again.");
      });
  if (!queued) {
    c->error(wen::retry, "The server is busy checking passwords; try again in a minute.");
    self->quit();
  }
}

void lookup_account(const call_ptr& c) {
  auto email = c->str("email_addr");
  auto passwd_hash = c->get("passwd_hash");
  if (email.empty()) {
    c->error(wen::bad_email, "No e-mail address given (email_addr).");
    return;
  }
  if (passwd_hash && !is_boinc_password_hash(*passwd_hash)) {
    c->error(wen::bad_passwd, "Invalid password (passwd_hash must be 32 hex digits).");
    return;
  }
  spawn_one_shot(*c->ctx->edge->sys, [c, email, passwd_hash](caf::event_based_actor* self) {
    auto q = std::make_shared<account_query>();
    q->text = email;
    self->request(c->project, ask_timeout, atom::user_v, account_query_ptr{q})
      .then(
        [c, passwd_hash](const account_view_ptr& account) {
          if (!passwd_hash)
            c->answer(account_exists_xml());
          else
            check_password(c, account, *passwd_hash, wen::bad_passwd);
        },
        [c](caf::error& err) {
          if (is(err, ec::unknown_account))
            c->error(wen::not_found, "No account has this e-mail address.");
          else
            c->refused(err);
        });
  });
}

/// Why a create_account.php request is refused before anything is asked; empty: acceptable.
std::pair<int, std::string> creation_problem(const call& c) {
  if (auto why = account_creation_problem(c.accounts(), c.str("user_name"), c.str("email_addr"),
                                          c.str("invite_code"));
      why.num != 0)
    return {why.num, why.text};
  if (!is_boinc_password_hash(c.str("passwd_hash")))
    return {wen::generic, "password hash length not 32"};
  return {0, {}};
}

void create_account(const call_ptr& c) {
  if (auto [num, why] = creation_problem(*c); num != 0) {
    c->error(num, why);
    return;
  }
  spawn_one_shot(*c->ctx->edge->sys, [c](caf::event_based_actor* self) {
    auto q = std::make_shared<account_query>();
    q->text = c->str("email_addr");
    self->request(c->project, ask_timeout, atom::user_v, account_query_ptr{q})
      .then(
        // The address has an account: with the same password this is a login (BOINC's
        // create_account.php answers the existing key), else the address is taken.
        [c](const account_view_ptr& account) {
          check_password(c, account, c->str("passwd_hash"), wen::not_unique);
        },
        [c, self](caf::error& err) {
          if (!is(err, ec::unknown_account)) {
            c->refused(err);
            return;
          }
          // Hash on the pool; the pool hands the stored form back to this actor.
          self->become([c, self](atom::create, const std::string& stored) {
            auto spec = std::make_shared<account_spec>();
            spec->name = c->str("user_name");
            spec->email = c->str("email_addr");
            spec->passwd = stored;
            spec->team = c->str("team_name");
            self->request(c->project, ask_timeout, atom::create_v, account_spec_ptr{spec})
              .then(
                [c, self](const account_view_ptr& made) {
                  spdlog::info("account {} made on {} by the web RPC", made->user.id,
                               c->project_name);
                  c->answer(account_out_xml(made->user.authenticator));
                  self->quit(); // it became a waiting actor: it ends only when told
                },
                [c, self](caf::error& e) {
                  c->refused(e);
                  self->quit();
                });
          });
          hash_for(c, self, c->str("passwd_hash"));
        });
  });
}

// -- am_get_info.php, am_set_info.php, show_user.php ---------------------------------------

/// Asks for the account `q` names and hands it to `then`; -136 when there is none.
template <class F>
void with_account(const call_ptr& c, account_query q, F then) {
  spawn_one_shot(*c->ctx->edge->sys, [c, q = std::move(q), then](caf::event_based_actor* self) {
    self
      ->request(c->project, ask_timeout, atom::user_v,
                account_query_ptr{std::make_shared<account_query>(q)})
      .then([then](const account_view_ptr& a) { then(a); },
            [c](caf::error& err) {
              if (is(err, ec::unknown_account))
                c->error(wen::not_found, "Not found.");
              else
                c->refused(err);
            });
  });
}

account_query by_key(const std::string& key) {
  account_query q;
  q.by = account_query::key::authenticator;
  q.text = key;
  return q;
}

void am_get_info(const call_ptr& c) {
  auto key = c->str("account_key");
  if (key.empty()) {
    c->error(wen::not_found, "No account key given (account_key).");
    return;
  }
  with_account(c, by_key(key),
               [c](const account_view_ptr& a) { c->answer(am_get_info_xml(*a, a->team_founder)); });
}

/// An integer parameter in [0, 2^53]; nullopt when absent, an error answered when malformed.
std::optional<std::optional<id_type>> id_param(const call& c, const std::string& key) {
  auto text = c.get(key);
  if (!text)
    return std::optional<id_type>{};
  id_type v = 0;
  if (!xml::to_integer(*text, v)) {
    c.error(wen::generic, key + " must be a non-negative integer.");
    return std::nullopt;
  }
  return std::optional<id_type>{v};
}

void am_set_info(const call_ptr& c) {
  auto update = std::make_shared<account_update>();
  update->authenticator = c->str("account_key");
  if (update->authenticator.empty()) {
    c->error(wen::not_found, "No account key given (account_key).");
    return;
  }
  // Only fields given and not empty change, as on BOINC.
  auto text = [&](const char* key, std::optional<std::string>& field) {
    if (auto v = c->get(key); v && !v->empty())
      field = *v;
  };
  text("name", update->name);
  text("country", update->country);
  text("postal_code", update->postal_code);
  text("url", update->url);
  text("email_addr", update->email);
  auto team = id_param(*c, "teamid");
  if (!team)
    return;
  update->team = *team;
  auto passwd_hash = c->str("password_hash");
  if (!passwd_hash.empty() && !is_boinc_password_hash(passwd_hash)) {
    c->error(wen::bad_passwd, "password_hash must be 32 hex digits.");
    return;
  }
  if (update->email) {
    if (!plausible_email(*update->email)) {
      c->error(wen::bad_email, "Email address has invalid syntax.");
      return;
    }
    // The BOINC hash covers the address: a new address without its hash would leave a
    // password no one can type.
    if (passwd_hash.empty()) {
      c->error(wen::bad_passwd,
               "A new e-mail address needs the password hash made with it (password_hash).");
      return;
    }
  }
  spawn_one_shot(*c->ctx->edge->sys, [c, update, passwd_hash](caf::event_based_actor* self) {
    auto send = [c, self](const std::shared_ptr<account_update>& u) {
      // quit(): after become() (a password to hash) the actor ends only when told.
      self->request(c->project, ask_timeout, atom::user_v, account_update_ptr{u})
        .then(
          [c, self](const account_view_ptr&) {
            c->answer(am_set_info_xml());
            self->quit();
          },
          [c, self](caf::error& err) {
            c->refused(err);
            self->quit();
          });
    };
    if (passwd_hash.empty()) {
      send(update);
      return;
    }
    self->become([update, send](atom::create, const std::string& stored) {
      update->passwd = stored;
      send(update);
    });
    hash_for(c, self, passwd_hash);
  });
}

void show_user(const call_ptr& c) {
  account_query q;
  bool owner = false;
  if (auto key = c->str("auth"); !key.empty()) {
    q = by_key(key);
    q.hosts = true; // the owner sees the account's hosts
    owner = true;
  } else {
    auto id = id_param(*c, "userid");
    if (!id)
      return;
    if (!*id) {
      c->error(wen::not_found, "Give userid or auth.");
      return;
    }
    q.by = account_query::key::id;
    q.id = **id;
  }
  with_account(c, q, [c, owner](const account_view_ptr& a) { c->answer(user_xml(*a, owner)); });
}

// -- team_lookup.php, create_team.php -------------------------------------------------------

void team_lookup(const call_ptr& c) {
  auto q = std::make_shared<team_query>();
  bool single = false;
  std::vector<id_type> ids;
  if (c->get("team_id")) {
    auto id = id_param(*c, "team_id");
    if (!id)
      return;
    q->id = id->value_or(0);
    single = true;
    if (q->id == 0) {
      c->error(wen::not_found, "Not found.");
      return;
    }
  } else if (auto list = c->get("team_ids")) {
    std::string_view rest = *list;
    while (!rest.empty() && ids.size() < 100) {
      auto comma = rest.find(',');
      id_type v = 0;
      if (xml::to_integer(rest.substr(0, comma), v) && v != 0)
        ids.push_back(v);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    if (ids.empty()) { // bad or unknown ids are skipped, as on BOINC: here all of them
      c->answer(teams_xml({}));
      return;
    }
  } else {
    q->name = c->str("team_name");
    if (q->name.empty()) {
      c->error(wen::not_found, "Give team_id, team_ids or team_name.");
      return;
    }
  }
  spawn_one_shot(*c->ctx->edge->sys, [c, q, single, ids](caf::event_based_actor* self) {
    if (!ids.empty()) {
      // Several ids: one question each, answered together in the order given.
      auto found = std::make_shared<std::vector<std::optional<team_view>>>(ids.size());
      auto left = std::make_shared<std::size_t>(ids.size());
      for (std::size_t i = 0; i < ids.size(); ++i) {
        auto one = std::make_shared<team_query>();
        one->id = ids[i];
        auto done = [c, found, left] {
          if (--*left > 0)
            return;
          std::vector<team_view> out;
          for (auto& t : *found)
            if (t)
              out.push_back(*t);
          c->answer(teams_xml(out));
        };
        self->request(c->project, ask_timeout, atom::team_v, team_query_ptr{one})
          .then(
            [found, i, done](const team_list_ptr& teams) {
              if (!teams->empty())
                (*found)[i] = teams->front();
              done();
            },
            [done](caf::error&) { done(); });
      }
      return;
    }
    self->request(c->project, ask_timeout, atom::team_v, team_query_ptr{q})
      .then(
        [c, single](const team_list_ptr& teams) {
          if (single) {
            if (teams->empty())
              c->error(wen::not_found, "Not found.");
            else
              c->answer(team_xml(teams->front()));
            return;
          }
          auto sorted = *teams;
          std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
            return a.credit.expavg > b.credit.expavg;
          });
          c->answer(teams_xml(sorted));
        },
        [c](caf::error& err) { c->refused(err); });
  });
}

void create_team(const call_ptr& c) {
  auto spec = std::make_shared<team_spec>();
  spec->authenticator = c->str("account_key");
  spec->name = c->str("name");
  spec->url = c->str("url");
  spec->description = c->str("description");
  spec->country = c->str("country");
  if (spec->authenticator.empty()) {
    c->error(wen::not_found, "No account key given (account_key).");
    return;
  }
  if (spec->name.empty()) {
    c->error(wen::generic, "must set team name");
    return;
  }
  if (spec->name.find('<') != std::string::npos) {
    c->error(wen::generic, "A team name may not contain '<'.");
    return;
  }
  spawn_one_shot(*c->ctx->edge->sys, [c, spec](caf::event_based_actor* self) {
    self->request(c->project, ask_timeout, atom::create_v, team_spec_ptr{spec})
      .then([c](const team_list_ptr& made) { c->answer(create_team_xml(made->front().team.id)); },
            [c](caf::error& err) { c->refused(err); });
  });
}

using rpc_fn = void (*)(const call_ptr&);

/// A route that reads the form (query string, or a POSTed body for am_set_info) and runs
/// `fn` with it. A `changes` page is refused while the data directory is low on disk space
/// (-183, "project down": the client tries again later), before anything is asked.
route web_route(const std::shared_ptr<web_rpc_context>& ctx, const std::string& name,
                const project_actor& project, const char* page, rpc_fn fn, bool post,
                bool changes) {
  std::vector<http::verb> methods{http::verb::get};
  if (post)
    methods.push_back(http::verb::post);
  return route{"/" + name + "/" + page,
               true,
               methods,
               std::size_t{64} * 1024,
               [ctx, name, project, fn, changes](request&& req, const responder& respond) {
                 auto c = std::make_shared<call>();
                 c->ctx = ctx;
                 c->project_name = name;
                 c->project = project;
                 c->shape = reply_shape{req.version(), req.keep_alive()};
                 c->respond = respond;
                 c->master_url = base_url(*ctx->edge, req) + "/" + name + "/";
                 if (changes && ctx->edge->disk && ctx->edge->disk->low()) {
                   c->error(wen::project_down, "The project's server is low on disk space and "
                                               "accepts no changes for now; try again later.");
                   return;
                 }
                 auto target = std::string_view{req.target()};
                 auto q = target.find('?');
                 auto query = q == std::string_view::npos ? std::string_view{}
                                                          : target.substr(q + 1);
                 auto form = parse_form(query);
                 if (form && req.method() == http::verb::post) {
                   auto body = parse_form(req.body());
                   if (!body)
                     form.reset();
                   else
                     for (auto& [k, v] : *body)
                       form->emplace(k, v); // the query's value wins, as one of them must
                 }
                 if (!form) {
                   c->error(wen::xml_parse, "Malformed parameters (a bad %-escape).");
                   return;
                 }
                 for (auto& [k, v] : *form)
                   if (v.size() > max_param) {
                     c->error(wen::generic, k + " is longer than 4096 bytes.");
                     return;
                   }
                 c->form = std::move(*form);
                 fn(c);
               },
               {},
               {}};
}

} // namespace

std::string password_failure_key(std::string_view project, std::string_view email) {
  std::string key{project};
  key += '\n';
  key += fold_case(email);
  return key;
}

bool post_store_password(password_pool& pool, const caf::actor& to, std::string passwd_hash,
                         std::function<void()> failed) {
  return pool.post([to, passwd_hash = std::move(passwd_hash), failed = std::move(failed)] {
    try {
      caf::anon_send(to, atom::create_v, store_password(passwd_hash));
    } catch (const std::exception& e) {
      spdlog::error("password hashing failed: {}", e.what());
      failed();
      caf::anon_send_exit(to, caf::exit_reason::user_shutdown);
    }
  });
}

creation_refusal account_creation_problem(const config::accounts_config& a, std::string_view name,
                                          std::string_view email, std::string_view invite_code) {
  if (a.creation == config::account_creation::closed)
    return {wen::creation_disabled, "This project is not accepting new accounts."};
  if (a.creation == config::account_creation::invitation
      && (invite_code.empty()
          || std::find(a.invitation_codes.begin(), a.invitation_codes.end(), invite_code)
               == a.invitation_codes.end()))
    return {wen::bad_invitation, "Invalid invitation code."};
  auto trimmed = xml::trim(name);
  if (name.empty() || trimmed.size() != name.size())
    return {wen::bad_user_name, "The user name must not be empty or begin or end with spaces."};
  if (name.size() > 254 || name.find('<') != std::string_view::npos)
    return {wen::bad_user_name, "The user name must have at most 254 bytes and no '<'."};
  if (!plausible_email(email))
    return {wen::bad_email, "Email address has invalid syntax."};
  return {};
}

std::vector<route> web_rpc_routes(const std::shared_ptr<web_rpc_context>& ctx) {
  std::vector<route> out;
  for (const auto& [name, project] : ctx->edge->projects) {
    // page, handler, POST too, changes state
    out.push_back(
      web_route(ctx, name, project, "get_project_config.php", project_config, false, false));
    out.push_back(
      web_route(ctx, name, project, "lookup_account.php", lookup_account, false, false));
    out.push_back(web_route(ctx, name, project, "create_account.php", create_account, false, true));
    out.push_back(web_route(ctx, name, project, "am_get_info.php", am_get_info, false, false));
    out.push_back(web_route(ctx, name, project, "am_set_info.php", am_set_info, true, true));
    out.push_back(web_route(ctx, name, project, "show_user.php", show_user, false, false));
    out.push_back(web_route(ctx, name, project, "team_lookup.php", team_lookup, false, false));
    out.push_back(web_route(ctx, name, project, "create_team.php", create_team, false, true));
  }
  return out;
}

} // namespace cobble::net
