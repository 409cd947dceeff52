#pragma once
/// The operator pages of each project's site, at `/NAME/ops/`: log in with the admin token
/// (a signed cookie of 12 hours, net/web_session.hpp), browse workunits by state, one workunit
/// with its results in words and a button that cancels it, a host with its statistics per app
/// version and jobs in progress, and an account with its hosts. Every page but the log-in
/// form sends anyone without an operator session to it; every form carries the site's form
/// token. docs/web.md describes the pages.
#include "net/web_site.hpp"

#include <memory>
#include <string>
#include <vector>

namespace cobble::net {

/// The operator pages' routes for project `name` (its actor `project`), appended to `out`.
void add_operator_routes(const std::shared_ptr<web_site_context>& ctx, const std::string& name,
                         const project_actor& project, std::vector<route>& out);

} // namespace cobble::net
