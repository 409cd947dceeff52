#pragma once
/// BOINC's web RPCs, served at each project's master URL as BOINC serves them (GET,
/// URL-encoded parameters, XML answers with BOINC's error numbers): get_project_config.php,
/// create_account.php, lookup_account.php, am_get_info.php, am_set_info.php, show_user.php,
/// team_lookup.php and create_team.php. What the BOINC Manager's "add project" wizard,
/// `boinccmd --create_account` / `--lookup_account` and account managers call.
///
/// Each request is read on the Asio thread, then handed to a one-shot actor that asks the
/// project; passwords are hashed and checked on the password pool's thread
/// (net/password.hpp). docs/web.md lists every RPC, parameter and error.
#include "config/config.hpp"
#include "net/edge.hpp"
#include "net/password.hpp"

#include <caf/actor.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

/// What the web RPCs need beyond the edge's context.
struct web_rpc_context {
  std::shared_ptr<edge_context> edge;
  /// Each project's account settings, by project name; a project not listed has the defaults.
  std::map<std::string, config::accounts_config> accounts;
  std::shared_ptr<password_pool> passwords = std::make_shared<password_pool>();
  std::shared_ptr<failure_limiter> failures = std::make_shared<failure_limiter>();
};

/// Why an account may not be made: BOINC's error number and its text; num 0: it may.
struct creation_refusal {
  int num = 0;
  std::string text{};
};

/// Whether the project's settings `a` let an account named `name` with address `email` be
/// made (`invite_code` for projects that need an invitation): the checks create_account.php
/// and the site's form share.
creation_refusal account_creation_problem(const config::accounts_config& a, std::string_view name,
                                          std::string_view email, std::string_view invite_code);

/// The key of an account's wrong-password counter in a failure_limiter, shared by the web RPCs
/// and the site so that guesses count the same through either.
std::string password_failure_key(std::string_view project, std::string_view email);

/// Hashes `passwd_hash` (what BOINC sends: md5(password + lower-case e-mail)) for storage on
/// `pool` and sends the stored form to `to` as (create, stored). False when the pool is full
/// (nothing was queued). When hashing fails, `failed` runs on the pool's thread and `to` is
/// told to exit.
bool post_store_password(password_pool& pool, const caf::actor& to, std::string passwd_hash,
                         std::function<void()> failed);

/// The web RPC routes of every project of `ctx->edge`.
std::vector<route> web_rpc_routes(const std::shared_ptr<web_rpc_context>& ctx);

} // namespace cobble::net
