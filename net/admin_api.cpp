#include "net/admin_api.hpp"

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "net/admin_json.hpp"
#include "net/files.hpp"
#include "net/one_shot.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>

#include <nlohmann/json.hpp>

#include <charconv>
#include <memory>
#include <optional>

namespace cobble::net {

using nlohmann::json;

namespace {

using ctx_ptr = std::shared_ptr<const admin_context>;

/// Default and largest page of a list.
constexpr std::uint64_t default_limit = 100;
constexpr std::uint64_t max_limit = 10000;

// -- responses ----------------------------------------------------------------

response json_response(http::status status, const json& body) {
  response res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.body() = body.dump() + "\n";
  return res;
}

response error_response(http::status status, const std::string& message) {
  return json_response(status, json{{"error", message}});
}

/// The HTTP status an actor error maps to.
http::status status_of(const caf::error& err) {
  if (is(err, ec::invalid_argument))
    return http::status::bad_request;
  if (is(err, ec::duplicate) || is(err, ec::conflict))
    return http::status::conflict;
  if (is(err, ec::unknown_app) || is(err, ec::unknown_workunit) || is(err, ec::unknown_host)
      || is(err, ec::unknown_project) || is(err, ec::unknown_account)
      || is(err, ec::unknown_sequence))
    return http::status::not_found;
  if (is(err, ec::unauthorized))
    return http::status::unauthorized;
  if (err == caf::sec::request_timeout)
    return http::status::gateway_timeout;
  return http::status::internal_server_error;
}

response error_response(const caf::error& err) {
  return error_response(status_of(err), describe(err));
}

// -- request parsing -----------------------------------------------------------

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Percent-decodes one path segment or query value; nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size())
      return std::nullopt;
    int hi = hex_value(in[i + 1]);
    int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

/// A request target split into decoded path segments and query parameters.
struct target {
  std::vector<std::string> path;
  std::map<std::string, std::string> query;
};

std::optional<target> split_target(std::string_view t) {
  target out;
  auto q = t.find('?');
  auto path = t.substr(0, q);
  std::size_t pos = 0;
  while (pos < path.size()) {
    auto next = path.find('/', pos);
    if (next == std::string_view::npos)
      next = path.size();
    if (next > pos) {
      auto seg = percent_decode(path.substr(pos, next - pos));
      if (!seg)
        return std::nullopt;
      out.path.push_back(std::move(*seg));
    }
    pos = next + 1;
  }
  if (q != std::string_view::npos) {
    auto query = t.substr(q + 1);
    pos = 0;
    while (pos <= query.size()) {
      auto next = query.find('&', pos);
      if (next == std::string_view::npos)
        next = query.size();
      auto pair = query.substr(pos, next - pos);
      if (!pair.empty()) {
        auto eq = pair.find('=');
        auto key = percent_decode(pair.substr(0, eq));
        auto value = percent_decode(eq == std::string_view::npos ? std::string_view{}
                                                                 : pair.substr(eq + 1));
        if (!key || !value)
          return std::nullopt;
        out.query[*key] = *value;
      }
      pos = next + 1;
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t x = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
    return std::nullopt;
  return x;
}

/// Reads offset and limit from the query; an error message on bad values.
std::optional<std::string> paging(const target& t, std::uint64_t& offset, std::uint64_t& limit) {
  offset = 0;
  limit = default_limit;
  if (auto i = t.query.find("offset"); i != t.query.end()) {
    auto x = parse_u64(i->second);
    if (!x)
      return "offset must be a non-negative integer";
    offset = *x;
  }
  if (auto i = t.query.find("limit"); i != t.query.end()) {
    auto x = parse_u64(i->second);
    if (!x || *x < 1 || *x > max_limit)
      return "limit must be an integer from 1 to " + std::to_string(max_limit);
    limit = *x;
  }
  return std::nullopt;
}

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

std::optional<json> parse_body(const request& req, responder& respond) {
  try {
    return json::parse(req.body());
  } catch (const json::parse_error& e) {
    respond(error_response(http::status::bad_request,
                           std::string{"the body is not valid JSON: "} + e.what()));
    return std::nullopt;
  }
}

// -- bridges to the actors -----------------------------------------------------------

/// Spawns a one-shot actor that sends `xs...` to `p` with the context's timeout, hands the
/// answer to `on_value` (which must call `respond`) and turns an error into a JSON error.
template <class Handle, class OnValue, class... Ts>
void ask(const ctx_ptr& ctx, const responder& respond, const Handle& p, OnValue on_value,
         Ts... xs) {
  spawn_one_shot(*ctx->sys, [ctx, respond, p, on_value, xs...](caf::event_based_actor* self) {
    self->request(p, ctx->timeout, xs...).then(on_value, [respond](caf::error& err) {
      respond(error_response(err));
    });
  });
}

/// Gathers the summaries of several projects, one after the other, into a JSON array.
struct gather_state {
  std::vector<project_actor> projects;
  json out = json::array();
};

void gather_step(caf::event_based_actor* self, const ctx_ptr& ctx,
                 const std::shared_ptr<gather_state>& st, std::size_t i, const responder& respond) {
  if (i == st->projects.size()) {
    respond(json_response(http::status::ok, st->out));
    return;
  }
  self->request(st->projects[i], ctx->timeout, atom::status_v)
    .then(
      [self, ctx, st, i, respond](const project_summary_ptr& s) {
        st->out.push_back(to_json(*s));
        gather_step(self, ctx, st, i + 1, respond);
      },
      [respond](caf::error& err) { respond(error_response(err)); });
}

// -- handlers --------------------------------------------------------------------

void list_projects(const ctx_ptr& ctx, const responder& respond) {
  auto st = std::make_shared<gather_state>();
  for (const auto& [name, p] : ctx->projects)
    st->projects.push_back(p);
  spawn_one_shot(*ctx->sys, [ctx, st, respond](caf::event_based_actor* self) {
    gather_step(self, ctx, st, 0, respond);
  });
}

void show_project(const ctx_ptr& ctx, const project_actor& p, const responder& respond) {
  ask(
    ctx, respond, p,
    [respond](const project_summary_ptr& s) {
      respond(json_response(http::status::ok, to_json(*s)));
    },
    atom::status_v);
}

void create_work(const ctx_ptr& ctx, const project_actor& p, const request& req,
                 responder respond) {
  auto body = parse_body(req, respond);
  if (!body)
    return;
  auto batch = parse_work_batch(*body);
  if (!batch.value) {
    respond(error_response(http::status::bad_request, batch.error));
    return;
  }
  auto ptr = std::make_shared<const work_batch>(std::move(*batch.value));
  ask(
    ctx, respond, p,
    [respond](const work_created_ptr& c) {
      respond(json_response(http::status::created, json{{"ids", c->ids}, {"names", c->names}}));
    },
    atom::create_v, work_batch_ptr{ptr});
}

/// One page of a listing: {"offset", "limit", "count", "items"}.
template <class T, class F>
response
page_response(std::uint64_t offset, std::uint64_t limit, const std::vector<T>& xs, F to_item) {
  json items = json::array();
  for (const auto& v : xs)
    items.push_back(to_item(v));
  return json_response(http::status::ok, json{{"offset", offset},
                                              {"limit", limit},
                                              {"count", xs.size()},
                                              {"items", std::move(items)}});
}

/// GET of a paged listing: reads offset/limit, asks the project, answers one page.
template <class Ptr, class Kind, class F>
void list_page(const ctx_ptr& ctx, const project_actor& p, const target& t, responder respond,
               Kind kind, F to_item) {
  std::uint64_t offset = 0, limit = 0;
  if (auto err = paging(t, offset, limit)) {
    respond(error_response(http::status::bad_request, *err));
    return;
  }
  ask(
    ctx, respond, p,
    [respond, offset, limit, to_item](const Ptr& xs) {
      respond(page_response(offset, limit, *xs, to_item));
    },
    atom::list_v, kind, offset, limit);
}

void list_workunits(const ctx_ptr& ctx, const project_actor& p, const target& t,
                    responder respond) {
  list_page<workunit_list_ptr>(ctx, p, t, std::move(respond), atom::workunit_v,
                               [](const workunit_view& v) { return to_json_brief(v); });
}

void show_workunit(const ctx_ptr& ctx, const project_actor& p, const std::string& key,
                   const responder& respond) {
  ask(
    ctx, respond, p,
    [respond](const workunit_view_ptr& v) {
      respond(json_response(http::status::ok, to_json(*v)));
    },
    atom::workunit_v, key);
}

void show_result(const ctx_ptr& ctx, const project_actor& p, const std::string& name,
                 const responder& respond) {
  auto split = split_indexed_name(name);
  if (!split || split->first.empty()) {
    respond(error_response(http::status::not_found,
                           "no result '" + name + "' (result names are <workunit>_<index>)"));
    return;
  }
  auto wu_name = std::string{split->first};
  std::uint64_t i = split->second;
  ask(
    ctx, respond, p,
    [respond, name, i](const workunit_view_ptr& v) {
      if (i >= v->wu.results.size() || v->wu.name + "_" + std::to_string(i) != name) {
        respond(error_response(http::status::not_found, "no result '" + name + "'"));
        return;
      }
      auto out = result_json(v->wu, static_cast<std::uint32_t>(i), name);
      out["workunit"] = to_json_brief(*v);
      respond(json_response(http::status::ok, out));
    },
    atom::workunit_v, wu_name);
}

void list_apps(const ctx_ptr& ctx, const project_actor& p, const responder& respond) {
  ask(
    ctx, respond, p,
    [respond](const app_list_ptr& apps) {
      json out = json::array();
      for (const auto& a : *apps)
        out.push_back(to_json(a));
      respond(json_response(http::status::ok, out));
    },
    atom::list_v, atom::app_v);
}

void list_hosts(const ctx_ptr& ctx, const project_actor& p, const target& t, responder respond) {
  list_page<host_list_ptr>(ctx, p, t, std::move(respond), atom::host_v,
                           [](const host_view& v) { return to_json(v); });
}

void show_host(const ctx_ptr& ctx, const project_actor& p, const std::string& key,
               const responder& respond) {
  auto id = parse_u64(key);
  if (!id) {
    respond(error_response(http::status::not_found, "no host '" + key + "' (ids are numbers)"));
    return;
  }
  ask(
    ctx, respond, p,
    [respond](const host_view_ptr& v) { respond(json_response(http::status::ok, to_json(*v))); },
    atom::host_v, id_type{*id});
}

void list_users(const ctx_ptr& ctx, const project_actor& p, const responder& respond) {
  ask(
    ctx, respond, p,
    [respond](const user_list_ptr& xs) {
      json items = json::array();
      for (const auto& u : *xs)
        items.push_back(to_json(u));
      respond(json_response(http::status::ok, items));
    },
    atom::list_v, atom::user_v);
}

void create_user(const ctx_ptr& ctx, const project_actor& p, const request& req,
                 responder respond) {
  auto body = parse_body(req, respond);
  if (!body)
    return;
  auto user = parse_new_user(*body);
  if (!user.value) {
    respond(error_response(http::status::bad_request, user.error));
    return;
  }
  ask(
    ctx, respond, p,
    [respond](id_type id, const std::string& auth) {
      respond(json_response(http::status::created, json{{"id", id}, {"authenticator", auth}}));
    },
    atom::create_v, user.value->first, user.value->second);
}

// -- work sequences ----------------------------------------------------------------

void create_sequence(const ctx_ptr& ctx, const project_actor& p, const request& req,
                     responder respond) {
  auto body = parse_body(req, respond);
  if (!body)
    return;
  auto spec = parse_sequence_spec(*body);
  if (!spec.value) {
    respond(error_response(http::status::bad_request, spec.error));
    return;
  }
  ask(
    ctx, respond, p,
    [respond](const sequence_view_ptr& v) {
      respond(json_response(http::status::created, to_json(*v)));
    },
    atom::create_v, sequence_spec_ptr{std::make_shared<const sequence_spec>(*spec.value)});
}

void list_sequences(const ctx_ptr& ctx, const project_actor& p, const target& t,
                    responder respond) {
  list_page<sequence_list_ptr>(ctx, p, t, std::move(respond), atom::sequence_v,
                               [](const sequence_view& v) { return to_json_brief(v); });
}

void show_sequence(const ctx_ptr& ctx, const project_actor& p, const std::string& key,
                   const responder& respond) {
  ask(
    ctx, respond, p,
    [respond](const sequence_view_ptr& v) {
      respond(json_response(http::status::ok, to_json(*v)));
    },
    atom::sequence_v, key);
}

void command_sequence(const ctx_ptr& ctx, const project_actor& p, const std::string& key,
                      seq_command::op what, const request& req, responder respond) {
  std::optional<json> body = json(nullptr);
  if (!req.body().empty()) {
    body = parse_body(req, respond);
    if (!body)
      return;
  }
  auto cmd = parse_seq_command(*body, what);
  if (!cmd.value) {
    respond(error_response(http::status::bad_request, cmd.error));
    return;
  }
  ask(
    ctx, respond, p,
    [respond](const sequence_view_ptr& v) {
      respond(json_response(http::status::ok, to_json(*v)));
    },
    atom::command_v, key, seq_command_ptr{std::make_shared<const seq_command>(*cmd.value)});
}

// -- credit ------------------------------------------------------------------

void export_credit(const ctx_ptr& ctx, const project_actor& p, const responder& respond) {
  ask(
    ctx, respond, p,
    [respond](const credit_export_ptr& x) {
      respond(json_response(http::status::ok, to_json(*x)));
    },
    atom::credit_v);
}

void import_credit(const ctx_ptr& ctx, const project_actor& p, const request& req,
                   responder respond) {
  auto body = parse_body(req, respond);
  if (!body)
    return;
  auto import = parse_credit_import(*body);
  if (!import.value) {
    respond(error_response(http::status::bad_request, import.error));
    return;
  }
  ask(
    ctx, respond, p,
    [respond](std::uint64_t n) {
      respond(json_response(http::status::ok, json{{"imported", n}}));
    },
    atom::credit_v,
    credit_import_ptr{std::make_shared<ev::credit_imported>(std::move(*import.value))});
}

void plan_class_table(const ctx_ptr& ctx, const responder& respond) {
  if (!ctx->aggregator) {
    respond(error_response(http::status::not_found, "no credit aggregator on this server"));
    return;
  }
  ask(
    ctx, respond, ctx->aggregator,
    [respond](const plan_class_scales_ptr& t) {
      respond(json_response(http::status::ok, to_json(*t)));
    },
    atom::credit_v);
}

// -- dispatch ------------------------------------------------------------------

response method_not_allowed(std::initializer_list<http::verb> allowed) {
  std::string allow;
  for (auto v : allowed) {
    if (!allow.empty())
      allow += ", ";
    allow += std::string{http::to_string(v)};
  }
  auto res = error_response(http::status::method_not_allowed,
                            "method not allowed (allowed: " + allow + ")");
  res.set(http::field::allow, allow);
  return res;
}

void serve(const ctx_ptr& ctx, request&& req, responder respond) {
  auto token = bearer_token(req);
  if (ctx->token.empty() || token.empty() || !constant_time_equal(token, ctx->token)) {
    auto res = error_response(http::status::unauthorized,
                              token.empty() ? "missing bearer token" : "invalid bearer token");
    res.set(http::field::www_authenticate, "Bearer realm=\"cobble admin\"");
    respond(std::move(res));
    return;
  }
  auto t = split_target(req.target());
  if (!t) {
    respond(error_response(http::status::bad_request, "malformed percent-escape in the target"));
    return;
  }
  const auto& path = t->path;
  auto method = req.method();
  auto is_get = method == http::verb::get;
  auto not_found = [&] {
    respond(
      error_response(http::status::not_found, "no such resource: " + std::string{req.target()}));
  };
  if (path.size() == 2 && path[0] == "api" && path[1] == "credit") {
    if (!is_get)
      return respond(method_not_allowed({http::verb::get}));
    return plan_class_table(ctx, respond);
  }
  if (path.size() < 2 || path[0] != "api" || path[1] != "projects")
    return not_found();
  if (path.size() == 2) {
    if (!is_get)
      return respond(method_not_allowed({http::verb::get}));
    return list_projects(ctx, respond);
  }
  auto pi = ctx->projects.find(path[2]);
  if (pi == ctx->projects.end()) {
    respond(error_response(http::status::not_found, "no project '" + path[2] + "'"));
    return;
  }
  const auto& p = pi->second;
  if (path.size() == 3) {
    if (!is_get)
      return respond(method_not_allowed({http::verb::get}));
    return show_project(ctx, p, respond);
  }
  const auto& coll = path[3];
  if (path.size() == 4) {
    if (coll == "workunits") {
      if (is_get)
        return list_workunits(ctx, p, *t, std::move(respond));
      if (method == http::verb::post)
        return create_work(ctx, p, req, std::move(respond));
      return respond(method_not_allowed({http::verb::get, http::verb::post}));
    }
    if (coll == "hosts") {
      if (!is_get)
        return respond(method_not_allowed({http::verb::get}));
      return list_hosts(ctx, p, *t, std::move(respond));
    }
    if (coll == "apps") {
      if (!is_get)
        return respond(method_not_allowed({http::verb::get}));
      return list_apps(ctx, p, respond);
    }
    if (coll == "files" && ctx->files) {
      if (method != http::verb::post)
        return respond(method_not_allowed({http::verb::post}));
      return stage_input(ctx->files, path[2], std::move(req), respond);
    }
    if (coll == "sequences") {
      if (is_get)
        return list_sequences(ctx, p, *t, std::move(respond));
      if (method == http::verb::post)
        return create_sequence(ctx, p, req, std::move(respond));
      return respond(method_not_allowed({http::verb::get, http::verb::post}));
    }
    if (coll == "credit") {
      if (!is_get)
        return respond(method_not_allowed({http::verb::get}));
      return export_credit(ctx, p, respond);
    }
    if (coll == "users") {
      if (is_get)
        return list_users(ctx, p, respond);
      if (method == http::verb::post)
        return create_user(ctx, p, req, std::move(respond));
      return respond(method_not_allowed({http::verb::get, http::verb::post}));
    }
    return not_found();
  }
  if (path.size() == 5 && coll == "sequences") {
    if (!is_get)
      return respond(method_not_allowed({http::verb::get}));
    return show_sequence(ctx, p, path[4], respond);
  }
  if (path.size() == 6 && coll == "sequences") {
    std::optional<seq_command::op> what;
    if (path[5] == "extend")
      what = seq_command::op::extend;
    else if (path[5] == "end")
      what = seq_command::op::end;
    else if (path[5] == "reassign")
      what = seq_command::op::reassign;
    if (!what)
      return not_found();
    if (method != http::verb::post)
      return respond(method_not_allowed({http::verb::post}));
    return command_sequence(ctx, p, path[4], *what, req, std::move(respond));
  }
  if (path.size() == 5 && coll == "credit" && path[4] == "import") {
    if (method != http::verb::post)
      return respond(method_not_allowed({http::verb::post}));
    return import_credit(ctx, p, req, std::move(respond));
  }
  if (path.size() == 5) {
    const auto& key = path[4];
    if (coll != "workunits" && coll != "results" && coll != "hosts")
      return not_found();
    if (!is_get)
      return respond(method_not_allowed({http::verb::get}));
    if (coll == "workunits")
      return show_workunit(ctx, p, key, respond);
    if (coll == "results")
      return show_result(ctx, p, key, respond);
    return show_host(ctx, p, key, respond);
  }
  not_found();
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

std::vector<route> admin_routes(admin_context ctx) {
  auto shared = std::make_shared<const admin_context>(std::move(ctx));
  route r;
  r.prefix = "/api/";
  r.body_limit = shared->upload_limit;
  r.serve = [shared](request&& req, responder respond) {
    serve(shared, std::move(req), std::move(respond));
  };
  route exact;
  exact.prefix = "/api";
  exact.exact = true;
  exact.serve = r.serve;
  return {std::move(r), std::move(exact)};
}

} // namespace cobble::net
