#pragma once
/// The volunteer site served by `cobbled` at each project's master URL: the home page (which
/// is also the BOINC master file), making an account, logging in and out, the volunteer's
/// account page, teams, top lists and a computer's page. Pages are rendered from templates
/// (net/web_templates.hpp); sessions and form tokens are signed cookies
/// (net/web_session.hpp); passwords are checked on the password pool and wrong ones counted
/// with the web RPCs' limiter, so guesses count the same through either door. docs/web.md
/// describes every page.
///
/// Each request is read on the Asio thread and handed to a one-shot actor that asks the
/// project; no Asio thread or actor waits for a password hash.
#include "net/web_rpc.hpp"
#include "net/web_session.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cobble::net {

/// What the site needs beyond the web RPCs' context.
struct web_site_context {
  /// The edge, the projects' account settings, the password pool and the wrong-password
  /// counter, shared with the web RPCs.
  std::shared_ptr<web_rpc_context> web;
  /// Signs sessions and form tokens; from a secret kept in the data directory.
  std::shared_ptr<const web::site_key> key;
  /// Each project's description for its home page, by project name; empty: none.
  std::map<std::string, std::string> descriptions{};
  /// Each project's half-life of recent average credit in seconds, by project name (the
  /// account page shows the average decayed to now); a project not listed: 7 days.
  std::map<std::string, double> credit_half_lives{};
};

/// The site's routes for every project of `ctx->web->edge`: `/NAME/` (the home page),
/// `/NAME/login`, `/NAME/logout`, `/NAME/create_account`, `/NAME/account`, the teams' pages,
/// the top lists (`/NAME/top`) and a computer's page (`/NAME/host`); docs/web.md lists them.
std::vector<route> web_site_routes(const std::shared_ptr<web_site_context>& ctx);

} // namespace cobble::net
