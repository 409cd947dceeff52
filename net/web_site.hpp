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
#include "actors/messages.hpp"
#include "net/web_rpc.hpp"
#include "net/web_session.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cobble::net {

/// The status pages' figures, kept a while per project: each takes a pass over every
/// workunit, user and host on the project's actor, so at most one pass a `max_age`.
class status_cache {
public:
  explicit status_cache(time_us max_age = 60 * us_per_second) : max_age_(max_age) {}
  /// The project's figures if taken within max_age of `now`; null otherwise.
  server_status_ptr fresh(const std::string& project, time_us now) const;
  void keep(const std::string& project, server_status_ptr figures);

private:
  time_us max_age_;
  mutable std::mutex mtx_;
  std::map<std::string, server_status_ptr> kept_;
};

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
  /// The status pages' figures, shared by every request.
  std::shared_ptr<status_cache> status = std::make_shared<status_cache>();
};

/// The site's routes for every project of `ctx->web->edge`: `/NAME/` (the home page),
/// `/NAME/login`, `/NAME/logout`, `/NAME/create_account`, `/NAME/account`, the teams' pages,
/// the top lists (`/NAME/top`) and a computer's page (`/NAME/host`); docs/web.md lists them.
std::vector<route> web_site_routes(const std::shared_ptr<web_site_context>& ctx);

} // namespace cobble::net
