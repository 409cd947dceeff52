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
#include "storage/event_store.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cobble::net {

/// Answers of the project that cost it a pass over every user, host or workunit (the status
/// page's figures, the top lists), kept a while by key so that a busy page costs the project
/// one pass a `max_age`, not one a visit.
template <class T>
class kept_answers {
public:
  explicit kept_answers(time_us max_age) : max_age_(max_age) {}
  /// The answer kept for `key` if taken within max_age of `now`; null otherwise.
  std::shared_ptr<const T> fresh(const std::string& key, time_us now) const {
    std::lock_guard lock{mtx_};
    auto i = kept_.find(key);
    return i != kept_.end() && now - i->second.second < max_age_ ? i->second.first : nullptr;
  }
  /// Keeps `answer`, taken at `at`, for `key`.
  void keep(const std::string& key, std::shared_ptr<const T> answer, time_us at) {
    std::lock_guard lock{mtx_};
    kept_[key] = {std::move(answer), at};
  }

private:
  time_us max_age_;
  mutable std::mutex mtx_;
  std::map<std::string, std::pair<std::shared_ptr<const T>, time_us>> kept_;
};

/// What the site needs beyond the web RPCs' context.
struct web_site_context {
  /// The edge, the projects' account settings, the password pool and the wrong-password
  /// counter, shared with the web RPCs.
  std::shared_ptr<web_rpc_context> web;
  /// The admin token: what an operator types to log in to the operator pages (`/NAME/ops/`);
  /// empty: those pages are closed.
  std::string admin_token{};
  /// The event log, read (never written) for the operator pages' stories; null: no stories.
  std::shared_ptr<const storage::event_store> events{};
  /// Each project's index in the log's events, by name (actors/node.hpp's project_index).
  std::map<std::string, std::uint16_t> project_indexes{};
  /// The thread that reads the log for stories, holding at most four at once (a story reads
  /// up to 200,000 events; no Asio thread or actor waits for it).
  std::shared_ptr<password_pool> stories = std::make_shared<password_pool>(4);
  /// Signs sessions and form tokens; from a secret kept in the data directory.
  std::shared_ptr<const web::site_key> key;
  /// Each project's description for its home page, by project name; empty: none.
  std::map<std::string, std::string> descriptions{};
  /// Each project's half-life of recent average credit in seconds, by project name (the
  /// account page shows the average decayed to now); a project not listed: 7 days.
  std::map<std::string, double> credit_half_lives{};
  /// The status pages' figures, by project: taken at most once a minute.
  std::shared_ptr<kept_answers<server_status_view>> status
    = std::make_shared<kept_answers<server_status_view>>(60 * us_per_second);
  /// The top lists' first 10,000 rows, by project, list and order: ranked at most once in
  /// five minutes.
  std::shared_ptr<kept_answers<top_page>> top = std::make_shared<kept_answers<top_page>>(
    300 * us_per_second);
};

/// The site's routes for every project of `ctx->web->edge`: `/NAME/` (the home page),
/// `/NAME/login`, `/NAME/logout`, `/NAME/create_account`, `/NAME/account`, the teams' pages,
/// the top lists (`/NAME/top`), a computer's page (`/NAME/host`), the status page and the
/// operator pages (`/NAME/ops/`, net/web_operator.hpp); docs/web.md lists them.
std::vector<route> web_site_routes(const std::shared_ptr<web_site_context>& ctx);

} // namespace cobble::net
