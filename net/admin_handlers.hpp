#pragma once

/// The handlers of the admin API: net/admin_api.cpp authenticates a request and routes it to
/// one of these, which reads what the route bound, asks an actor through a one-shot bridge
/// (with the context's timeout) and answers JSON. None blocks.

#include "actors/actors.hpp"
#include "net/admin_api.hpp"
#include "net/http_server.hpp"
#include "net/request_target.hpp"
#include "net/route_table.hpp"

#include <memory>
#include <string>

namespace cobble::net::admin {

/// One authenticated request on its way to its handler.
struct call {
  std::shared_ptr<const admin_context> ctx;
  request req;
  request_target target; ///< The decoded path and query of `req`.
  route_params params;   ///< What the route's pattern bound.
  project_actor project; ///< The path's `{project}`; null on routes without one.
  responder respond;
};

/// Serves one call; answers through `c.respond`, now or later from an actor.
using handler = void (*)(call& c);

/// `{"error": message}` with `status`.
response error_response(http::status status, const std::string& message);

// GET /api/credit
void plan_class_table(call& c);

// /api/projects[/{project}[/apps[/{app}]]]
void list_projects(call& c);
void show_project(call& c);
void list_apps(call& c);
void show_app(call& c);

// /api/projects/{project}/workunits[/{workunit}[/cancel]], results/{result}, files
void list_workunits(call& c);
void create_work(call& c);
void show_workunit(call& c);
void cancel_workunit(call& c);
void show_result(call& c);
void stage_file(call& c);

// /api/projects/{project}/app-files, apps (POST), apps/{app}/versions[/{version}/deprecate],
// keys
void stage_app_file(call& c);
void add_app(call& c);
void add_app_version(call& c);
void deprecate_app_version(call& c);
void add_code_sign_key(call& c);
void list_code_sign_keys(call& c);

// /api/projects/{project}/hosts[/{host}], users
void list_hosts(call& c);
void show_host(call& c);
void list_users(call& c);
void create_user(call& c);

// /api/projects/{project}/sequences[/{sequence}[/extend|end|reassign]]
void list_sequences(call& c);
void create_sequence(call& c);
void show_sequence(call& c);
void extend_sequence(call& c);
void end_sequence(call& c);
void reassign_sequence(call& c);

// /api/projects/{project}/credit[/import]
void export_credit(call& c);
void import_credit(call& c);

// POST /api/backup
void back_up(call& c);

} // namespace cobble::net::admin
