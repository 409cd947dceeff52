#include "net/admin_api.hpp"

#include "net/admin_handlers.hpp"
#include "net/request_target.hpp"
#include "net/route_table.hpp"

#include <array>
#include <cctype>
#include <memory>
#include <span>

namespace cobble::net {

namespace {

using ctx_ptr = std::shared_ptr<const admin_context>;
using http::verb;

/// One route of the admin API.
struct admin_route {
  verb method;
  std::string_view pattern;
  admin::handler handler;
  bool needs_files = false; ///< Only with a file service (admin_context::files); 404 without.
  /// Its body may be up to `server.upload_limit` (a staged file); every other route's is
  /// held to `server.body_limit`.
  bool large_body = false;
};

/// Every route of the admin API (docs/admin-api.md has a section for each). A path's GET
/// comes before its POST: the `Allow` header of a 405 lists them in this order.
constexpr std::array admin_table{
  admin_route{verb::post, "/api/backup", admin::back_up, true},
  admin_route{verb::get, "/api/credit", admin::plan_class_table},
  admin_route{verb::get, "/api/projects", admin::list_projects},
  admin_route{verb::get, "/api/projects/{project}", admin::show_project},
  admin_route{verb::get, "/api/projects/{project}/apps", admin::list_apps},
  admin_route{verb::post, "/api/projects/{project}/apps", admin::add_app},
  admin_route{verb::get, "/api/projects/{project}/apps/{app}", admin::show_app},
  admin_route{verb::post, "/api/projects/{project}/apps/{app}/versions", admin::add_app_version,
              true},
  admin_route{verb::post, "/api/projects/{project}/apps/{app}/versions/{version}/deprecate",
              admin::deprecate_app_version},
  admin_route{verb::post, "/api/projects/{project}/app-files", admin::stage_app_file, true, true},
  admin_route{verb::get, "/api/projects/{project}/keys", admin::list_code_sign_keys},
  admin_route{verb::post, "/api/projects/{project}/keys", admin::add_code_sign_key},
  admin_route{verb::get, "/api/projects/{project}/workunits", admin::list_workunits},
  admin_route{verb::post, "/api/projects/{project}/workunits", admin::create_work},
  admin_route{verb::get, "/api/projects/{project}/workunits/{workunit}", admin::show_workunit},
  admin_route{verb::post, "/api/projects/{project}/workunits/{workunit}/cancel",
              admin::cancel_workunit},
  admin_route{verb::get, "/api/projects/{project}/results/{result}", admin::show_result},
  admin_route{verb::post, "/api/projects/{project}/files", admin::stage_file, true, true},
  admin_route{verb::get, "/api/projects/{project}/hosts", admin::list_hosts},
  admin_route{verb::get, "/api/projects/{project}/hosts/{host}", admin::show_host},
  admin_route{verb::get, "/api/projects/{project}/users", admin::list_users},
  admin_route{verb::post, "/api/projects/{project}/users", admin::create_user},
  admin_route{verb::get, "/api/projects/{project}/sequences", admin::list_sequences},
  admin_route{verb::post, "/api/projects/{project}/sequences", admin::create_sequence},
  admin_route{verb::get, "/api/projects/{project}/sequences/{sequence}", admin::show_sequence},
  admin_route{verb::post, "/api/projects/{project}/sequences/{sequence}/extend",
              admin::extend_sequence},
  admin_route{verb::post, "/api/projects/{project}/sequences/{sequence}/end", admin::end_sequence},
  admin_route{verb::post, "/api/projects/{project}/sequences/{sequence}/reassign",
              admin::reassign_sequence},
  admin_route{verb::get, "/api/projects/{project}/credit", admin::export_credit},
  admin_route{verb::post, "/api/projects/{project}/credit/import", admin::import_credit},
};

/// The routes of one admin API, as admin_routes() builds them from its context.
struct router {
  route_table<const admin_route*> table;
  /// Every path below a project names the project first: an unknown one is a 404 whatever
  /// follows and whatever the method.
  route_pattern project_scope{"/api/projects/{project}"};
};

/// The token of an `Authorization: Bearer TOKEN` header, or empty.
std::string_view bearer_token(const request& req) {
  auto it = req.find(http::field::authorization);
  if (it == req.end())
    return {};
  std::string_view value = it->value();
  constexpr std::string_view scheme = "bearer ";
  if (value.size() <= scheme.size())
    return {};
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i])
      return {};
  auto token = value.substr(scheme.size());
  while (!token.empty() && token.front() == ' ')
    token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ')
    token.remove_suffix(1);
  return token;
}

response method_not_allowed(std::span<const verb> allowed) {
  auto allow = allow_header(allowed);
  auto res = admin::error_response(http::status::method_not_allowed,
                                   "method not allowed (allowed: " + allow + ")");
  res.set(http::field::allow, allow);
  return res;
}

/// The 401 for a request without the admin token; nullopt for one with it.
std::optional<response> unauthorized(const admin_context& ctx, const request& req) {
  auto token = bearer_token(req);
  if (!ctx.token.empty() && !token.empty() && constant_time_equal(token, ctx.token))
    return std::nullopt;
  auto res = admin::error_response(http::status::unauthorized,
                                   token.empty() ? "missing bearer token" : "invalid bearer token");
  res.set(http::field::www_authenticate, "Bearer realm=\"cobble admin\"");
  return res;
}

/// Judges an admin request by its header: no token, no body read; a staged file may be up to
/// upload_limit, any other body up to the server's body_limit.
admission admit(const admin_context& ctx, const router& r, const request& header) {
  if (auto refusal = unauthorized(ctx, header))
    return {std::move(refusal), 0};
  if (auto target = split_target(header.target())) {
    auto m = r.table.match(header.method(), target->path);
    if (m.outcome == route_outcome::found && m.route->handler->large_body)
      return {std::nullopt, ctx.upload_limit};
  }
  return {};
}

void serve(const ctx_ptr& ctx, const router& r, request&& req, responder respond) {
  if (auto refusal = unauthorized(*ctx, req)) {
    respond(std::move(*refusal));
    return;
  }
  auto target = split_target(req.target());
  if (!target) {
    respond(
      admin::error_response(http::status::bad_request, "malformed percent-escape in the target"));
    return;
  }
  admin::call c{ctx, std::move(req), std::move(*target), {}, {}, std::move(respond)};
  if (auto scope = r.project_scope.match_prefix(c.target.path)) {
    const auto& name = scope->at("project");
    auto pi = ctx->projects.find(name);
    if (pi == ctx->projects.end()) {
      c.respond(admin::error_response(http::status::not_found, "no project '" + name + "'"));
      return;
    }
    c.project = pi->second;
  }
  auto m = r.table.match(c.req.method(), c.target.path);
  switch (m.outcome) {
    case route_outcome::found:
      if (c.req.method() != verb::get && ctx->disk && ctx->disk->low()) {
        c.respond(admin::error_response(http::status::insufficient_storage,
                                        "the server is low on disk space and accepts no changes: "
                                          + ctx->disk->describe()));
        return;
      }
      c.params = std::move(m.params);
      m.route->handler->handler(c);
      return;
    case route_outcome::wrong_method:
      c.respond(method_not_allowed(m.allowed));
      return;
    case route_outcome::no_match:
      c.respond(admin::error_response(http::status::not_found,
                                      "no such resource: " + std::string{c.req.target()}));
      return;
  }
}

} // namespace

bool constant_time_equal(std::string_view given, std::string_view expected) {
  // Compare every byte of `expected` whatever `given` holds, so the time depends only on the
  // length of the secret.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

std::vector<admin_route_info> admin_route_list() {
  std::vector<admin_route_info> out;
  out.reserve(admin_table.size());
  for (const auto& r : admin_table)
    out.push_back({r.method, r.pattern});
  return out;
}

std::vector<route> admin_routes(admin_context ctx) {
  auto shared = std::make_shared<const admin_context>(std::move(ctx));
  auto table = std::make_shared<router>();
  for (const auto& a : admin_table)
    if (!a.needs_files || shared->files)
      table->table.add(a.method, a.pattern, &a);
  route r;
  r.prefix = "/api/";
  auto routes = std::shared_ptr<const router>{table};
  r.admit = [shared, routes](const request& header) { return admit(*shared, *routes, header); };
  r.serve = [shared, routes](request&& req, responder respond) {
    serve(shared, *routes, std::move(req), std::move(respond));
  };
  route exact;
  exact.prefix = "/api";
  exact.exact = true;
  exact.admit = r.admit;
  exact.serve = r.serve;
  return {std::move(r), std::move(exact)};
}

} // namespace cobble::net
