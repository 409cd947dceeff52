#include "net/admin_handlers.hpp"

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "net/admin_json.hpp"
#include "net/app_json.hpp"
#include "net/files.hpp"
#include "net/one_shot.hpp"
#include "storage/backup.hpp"
#include "storage/error.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>

#include <nlohmann/json.hpp>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <limits>
#include <optional>

namespace cobble::net::admin {

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
  // Invalid UTF-8 in state written before the edge replaced it would make dump() throw:
  // replaced here too, so that every view of an old log still answers.
  res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  return res;
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

/// The JSON error of an actor's error.
response error_response_of(const caf::error& err) {
  return error_response(status_of(err), describe(err));
}

// -- request parsing -----------------------------------------------------------

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  std::uint64_t x = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size())
    return std::nullopt;
  return x;
}

/// Reads offset and limit from the query; an error message on bad values.
std::optional<std::string>
paging(const request_target& t, std::uint64_t& offset, std::uint64_t& limit) {
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

/// The request's body as JSON; nullopt, answered with a 400, when it is not JSON. Where
/// `empty_is_null`, an empty body is JSON null.
std::optional<json> json_body(const call& c, bool empty_is_null = false) {
  if (empty_is_null && c.req.body().empty())
    return json(nullptr);
  // Any JSON error is the client's (1e400 is nlohmann's out_of_range, not a parse_error).
  auto body = parse_json_body(c.req.body());
  if (!body.value)
    c.respond(error_response(http::status::bad_request, body.error));
  return std::move(body.value);
}

/// The request's JSON body as `parse` (one of admin_json.hpp's parse_*) reads it; nullopt,
/// answered with a 400, when the body is not JSON or `parse` refuses it. Where
/// `empty_is_null`, an empty body is JSON null.
template <class Parse>
auto read_body(const call& c, Parse parse, bool empty_is_null = false)
  -> decltype(parse(json{}).value) {
  auto body = json_body(c, empty_is_null);
  if (!body)
    return std::nullopt;
  auto out = parse(*body);
  if (!out.value)
    c.respond(error_response(http::status::bad_request, out.error));
  return std::move(out.value);
}

/// Longest Idempotency-Key.
constexpr std::size_t max_key_length = 200;

/// An Idempotency-Key: 1-200 visible ASCII characters.
bool valid_idempotency_key(std::string_view key) {
  if (key.empty() || key.size() > max_key_length)
    return false;
  return std::all_of(key.begin(), key.end(), [](char ch) { return ch > ' ' && ch < 0x7f; });
}

/// The SHA-256 of `text`, in hex.
std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> md{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), md.data());
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (auto b : md) {
    out += hex[b >> 4];
    out += hex[b & 0xf];
  }
  return out;
}

// -- bridges to the actors -----------------------------------------------------------

/// Spawns a one-shot actor that sends `xs...` to `p` with the context's timeout, hands the
/// answer to `on_value` (which must call `respond`) and turns an error into a JSON error.
template <class Handle, class OnValue, class... Ts>
void ask(const ctx_ptr& ctx, const responder& respond, const Handle& p, OnValue on_value,
         Ts... xs) {
  spawn_one_shot(*ctx->sys, [ctx, respond, p, on_value, xs...](caf::event_based_actor* self) {
    self->request(p, ctx->timeout, xs...).then(on_value, [respond](caf::error& err) {
      respond(error_response_of(err));
    });
  });
}

/// ask() of the call's project.
template <class OnValue, class... Ts>
void ask_project(const call& c, OnValue on_value, Ts... xs) {
  ask(c.ctx, c.respond, c.project, std::move(on_value), std::move(xs)...);
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
      [respond](caf::error& err) { respond(error_response_of(err)); });
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

/// to_json_brief as a function object: the items of most listings.
struct brief_json {
  template <class T>
  json operator()(const T& v) const {
    return to_json_brief(v);
  }
};

/// GET of a paged listing: reads offset/limit, asks the project, answers one page.
template <class Ptr, class Kind, class F = brief_json>
void list_page(const call& c, Kind kind, F to_item = {}) {
  std::uint64_t offset = 0, limit = 0;
  if (auto err = paging(c.target, offset, limit)) {
    c.respond(error_response(http::status::bad_request, *err));
    return;
  }
  ask_project(
    c,
    [respond = c.respond, offset, limit, to_item](const Ptr& xs) {
      respond(page_response(offset, limit, *xs, to_item));
    },
    atom::list_v, kind, offset, limit);
}

/// Answers 200 with `to_json` of what the project answers to `xs...`.
template <class Ptr, class... Ts>
void show(const call& c, Ts... xs) {
  ask_project(
    c,
    [respond = c.respond](const Ptr& v) { respond(json_response(http::status::ok, to_json(*v))); },
    std::move(xs)...);
}

/// Answers 200 with the array of `to_json` of the items the project answers to `xs...`.
template <class Ptr, class... Ts>
void show_all(const call& c, Ts... xs) {
  ask_project(
    c,
    [respond = c.respond](const Ptr& items) {
      json out = json::array();
      for (const auto& x : *items)
        out.push_back(to_json(x));
      respond(json_response(http::status::ok, out));
    },
    std::move(xs)...);
}

void command_sequence(const call& c, seq_command::op what) {
  auto cmd = read_body(
    c, [what](const json& body) { return parse_seq_command(body, what); }, true);
  if (!cmd)
    return;
  show<sequence_view_ptr>(c, atom::command_v, c.params.at("sequence"),
                          seq_command_ptr{std::make_shared<const seq_command>(*cmd)});
}

/// A backup's answer: where it is and what it holds.
json backup_json(const std::string& dir, const storage::backup_summary& b, double seconds) {
  return json{{"dir", dir},       {"last_event", b.last_seq}, {"files", b.files},
              {"bytes", b.bytes}, {"linked", b.linked},       {"seconds", seconds}};
}

} // namespace

void back_up(call& c) {
  const auto& ctx = c.ctx;
  if (!ctx->store || ctx->data_dir.empty()) {
    c.respond(error_response(http::status::not_found, "this server has no data directory to "
                                                      "back up"));
    return;
  }
  auto body = json_body(c);
  if (!body)
    return;
  const auto dir = body->is_object() && body->contains("dir") && (*body)["dir"].is_string()
                     ? (*body)["dir"].get<std::string>()
                     : std::string{};
  if (dir.empty() || !std::filesystem::path{dir}.is_absolute()) {
    c.respond(error_response(http::status::bad_request,
                             "give {\"dir\": \"/absolute/path\"}: a new directory on the "
                             "server's machine, outside its data directory"));
    return;
  }
  if (ctx->backing_up->exchange(true)) {
    c.respond(error_response(http::status::conflict, "a backup is running; try again when it "
                                                     "is done"));
    return;
  }
  // Blocking file I/O, possibly for minutes: on the file service's threads.
  ctx->files->post([ctx, dir, respond = c.respond] {
    auto started = std::chrono::steady_clock::now();
    auto made = storage::back_up(*ctx->store, ctx->data_dir, dir);
    ctx->backing_up->store(false);
    if (!made) {
      auto status = made.error() == storage::ec::invalid_argument
                      ? http::status::bad_request
                      : http::status::internal_server_error;
      respond(error_response(status, describe(made.error())));
      return;
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    spdlog::info("backup of {} into {}: events 1..{}, {} files ({} bytes, {} linked), {:.1f} s",
                 ctx->data_dir.string(), dir, made->last_seq, made->files, made->bytes,
                 made->linked, took.count());
    respond(json_response(http::status::created, backup_json(dir, *made, took.count())));
  });
}

response error_response(http::status status, const std::string& message) {
  return json_response(status, json{{"error", message}});
}

// -- projects ------------------------------------------------------------------

void list_projects(call& c) {
  auto st = std::make_shared<gather_state>();
  for (const auto& [name, p] : c.ctx->projects)
    st->projects.push_back(p);
  spawn_one_shot(*c.ctx->sys, [ctx = c.ctx, st, respond = c.respond](caf::event_based_actor* self) {
    gather_step(self, ctx, st, 0, respond);
  });
}

void show_project(call& c) {
  show<project_summary_ptr>(c, atom::status_v);
}

void list_apps(call& c) {
  show_all<app_list_ptr>(c, atom::list_v, atom::app_v);
}

void show_app(call& c) {
  ask_project(
    c,
    [respond = c.respond, name = c.params.at("app")](const app_list_ptr& apps) {
      for (const auto& a : *apps)
        if (a.name == name) {
          respond(json_response(http::status::ok, to_json(a)));
          return;
        }
      respond(error_response(http::status::not_found, "no app named '" + name + "'"));
    },
    atom::list_v, atom::app_v);
}

// -- workunits, results, input files ----------------------------------------------

void create_work(call& c) {
  std::string key;
  if (auto h = c.req.find("Idempotency-Key"); h != c.req.end()) {
    key = std::string{h->value()};
    if (!valid_idempotency_key(key)) {
      c.respond(error_response(http::status::bad_request, "the Idempotency-Key must be 1-"
                                                            + std::to_string(max_key_length)
                                                            + " visible ASCII characters"));
      return;
    }
  }
  auto body = json_body(c);
  if (!body)
    return;
  // Counted before any spec is read or expanded: an over-long batch costs its JSON parse.
  const auto limit = c.ctx->max_batch_items;
  if (auto n = work_count(*body); n > limit) {
    c.respond(error_response(http::status::payload_too_large,
                             "the batch asks for " + std::to_string(n)
                               + " workunits, more than this server creates in one batch ("
                               + std::to_string(limit)
                               + ", server.max_batch_items): split it into smaller batches"));
    return;
  }
  auto batch = parse_work_batch(*body);
  if (!batch.value) {
    c.respond(error_response(http::status::bad_request, batch.error));
    return;
  }
  batch.value->key = key;
  if (!key.empty()) // nlohmann's objects are sorted: the same JSON gives the same digest
    batch.value->digest = sha256_hex(body->dump());
  auto ptr = std::make_shared<const work_batch>(std::move(*batch.value));
  ask_project(
    c,
    [respond = c.respond](const work_created_ptr& created) {
      respond(json_response(
        created->replayed ? http::status::ok : http::status::created,
        json{{"ids", created->ids}, {"names", created->names}, {"replayed", created->replayed}}));
    },
    atom::create_v, work_batch_ptr{ptr});
}

void list_workunits(call& c) {
  auto state = c.target.query.find("state");
  if (state == c.target.query.end()) {
    list_page<workunit_list_ptr>(c, atom::workunit_v);
    return;
  }
  std::uint64_t offset = 0, limit = 0;
  if (auto err = paging(c.target, offset, limit)) {
    c.respond(error_response(http::status::bad_request, *err));
    return;
  }
  if (!parse_wu_state(state->second)) {
    c.respond(error_response(http::status::bad_request,
                             "state must be active, validated, assimilated, failed or cancelled"));
    return;
  }
  ask_project(
    c,
    [respond = c.respond, offset, limit](const workunit_list_ptr& xs) {
      respond(page_response(offset, limit, *xs, [](const workunit_view& v) { return to_json(v); }));
    },
    atom::list_v, atom::workunit_v, state->second, offset, limit);
}

void show_workunit(call& c) {
  show<workunit_view_ptr>(c, atom::workunit_v, c.params.at("workunit"));
}

void show_result(call& c) {
  const auto& name = c.params.at("result");
  auto split = split_indexed_name(name);
  if (!split || split->first.empty()) {
    c.respond(error_response(http::status::not_found,
                             "no result '" + name + "' (result names are <workunit>_<index>)"));
    return;
  }
  auto wu_name = std::string{split->first};
  std::uint64_t i = split->second;
  ask_project(
    c,
    [respond = c.respond, name, i](const workunit_view_ptr& v) {
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

void stage_file(call& c) {
  stage_input(c.ctx->files, c.params.at("project"), std::move(c.req), c.respond);
}

// -- apps and code signing ---------------------------------------------------------

namespace {

/// Asks the project to make an app change: 201 {"id", "changed": true}, or 200 with
/// "changed": false for a change made before (a retry).
void change_apps(const ctx_ptr& ctx, const responder& respond, const project_actor& p,
                 app_change_ptr change) {
  ask(
    ctx, respond, p,
    [respond](std::uint32_t id, bool changed) {
      respond(json_response(changed ? http::status::created : http::status::ok,
                            json{{"id", id}, {"changed", changed}}));
    },
    atom::app_v, std::move(change));
}

void change_apps(const call& c, app_change change) {
  change_apps(c.ctx, c.respond, c.project, std::make_shared<const app_change>(std::move(change)));
}

/// Why a version's file is not what the download area holds; empty when it is.
std::string
staging_problem(file_service& files, const std::string& project, const app_file_rec& f) {
  if (f.name.rfind("app_", 0) != 0)
    return "file " + f.name
           + " is not an app file: stage it with POST .../app-files and "
             "use the stored_name it answers (app_<md5>)";
  auto staged = files.store().find_staged(project, f.name);
  if (!staged)
    return "file " + f.name + " is not staged (POST .../app-files): " + describe(staged.error());
  if (staged->md5 != f.md5 || static_cast<double>(staged->nbytes) != f.nbytes)
    return "file " + f.name + " is staged with " + std::to_string(staged->nbytes)
           + " bytes and MD5 " + staged->md5 + ", not what the version says";
  return {};
}

} // namespace

void stage_app_file(call& c) {
  stage_input(c.ctx->files, c.params.at("project"), std::move(c.req), c.respond, "app_");
}

void add_app(call& c) {
  if (auto change = read_body(c, [](const json& body) { return parse_new_app(body); }))
    change_apps(c, std::move(*change));
}

void add_app_version(call& c) {
  const auto& app = c.params.at("app");
  auto change = read_body(c, [&app](const json& body) { return parse_new_version(body, app); });
  if (!change)
    return;
  // The files must be in the download area as the version describes them: read on the file
  // service's threads, then the project decides.
  auto shared = std::make_shared<const app_change>(std::move(*change));
  auto files = c.ctx->files;
  files->post([files, shared, ctx = c.ctx, respond = c.respond, p = c.project,
               project = c.params.at("project")] {
    for (const auto& f : shared->version.files)
      if (auto problem = staging_problem(*files, project, f); !problem.empty()) {
        respond(error_response(http::status::bad_request, problem));
        return;
      }
    change_apps(ctx, respond, p, shared);
  });
}

void deprecate_app_version(call& c) {
  const auto& key = c.params.at("version");
  auto id = parse_u64(key);
  if (!id || *id > std::numeric_limits<std::uint32_t>::max()) {
    c.respond(
      error_response(http::status::not_found, "no version '" + key + "' (ids are numbers)"));
    return;
  }
  const auto& app = c.params.at("app");
  auto version = static_cast<std::uint32_t>(*id);
  auto change = read_body(
    c, [&](const json& body) { return parse_deprecation(body, app, version); }, true);
  if (change)
    change_apps(c, std::move(*change));
}

void add_code_sign_key(call& c) {
  if (auto change = read_body(c, [](const json& body) { return parse_new_key(body); }))
    change_apps(c, std::move(*change));
}

void list_code_sign_keys(call& c) {
  ask_project(
    c,
    [respond = c.respond](const key_list_ptr& keys) {
      json out = json::array();
      for (std::size_t i = 0; i < keys->size(); ++i)
        out.push_back(to_json((*keys)[i], i + 1));
      respond(json_response(http::status::ok, out));
    },
    atom::list_v, atom::key_v);
}

// -- hosts and users ----------------------------------------------------------------

void list_hosts(call& c) {
  list_page<host_list_ptr>(c, atom::host_v, [](const host_view& v) { return to_json(v); });
}

void show_host(call& c) {
  const auto& key = c.params.at("host");
  auto id = parse_u64(key);
  if (!id) {
    c.respond(error_response(http::status::not_found, "no host '" + key + "' (ids are numbers)"));
    return;
  }
  show<host_view_ptr>(c, atom::host_v, id_type{*id});
}

void list_users(call& c) {
  show_all<user_list_ptr>(c, atom::list_v, atom::user_v);
}

void create_user(call& c) {
  auto user = read_body(c, parse_new_user);
  if (!user)
    return;
  ask_project(
    c,
    [respond = c.respond](id_type id, const std::string& auth) {
      respond(json_response(http::status::created, json{{"id", id}, {"authenticator", auth}}));
    },
    atom::create_v, user->first, user->second);
}

// -- work sequences ----------------------------------------------------------------

void create_sequence(call& c) {
  auto spec = read_body(c, [](const json& body) { return parse_sequence_spec(body); });
  if (!spec)
    return;
  ask_project(
    c,
    [respond = c.respond](const sequence_view_ptr& v) {
      respond(json_response(http::status::created, to_json(*v)));
    },
    atom::create_v, sequence_spec_ptr{std::make_shared<const sequence_spec>(*spec)});
}

void list_sequences(call& c) {
  list_page<sequence_list_ptr>(c, atom::sequence_v);
}

void show_sequence(call& c) {
  show<sequence_view_ptr>(c, atom::sequence_v, c.params.at("sequence"));
}

void cancel_workunit(call& c) {
  auto cancel = read_body(
    c, [](const json& body) { return parse_work_cancel(body); }, true);
  if (!cancel)
    return;
  show<workunit_view_ptr>(c, atom::cancel_v, c.params.at("workunit"), cancel->reason, cancel->by);
}

void extend_sequence(call& c) {
  command_sequence(c, seq_command::op::extend);
}

void end_sequence(call& c) {
  command_sequence(c, seq_command::op::end);
}

void reassign_sequence(call& c) {
  command_sequence(c, seq_command::op::reassign);
}

// -- credit ------------------------------------------------------------------

void export_credit(call& c) {
  show<credit_export_ptr>(c, atom::credit_v);
}

void import_credit(call& c) {
  auto import = read_body(c, parse_credit_import);
  if (!import)
    return;
  ask_project(
    c,
    [respond = c.respond](std::uint64_t n) {
      respond(json_response(http::status::ok, json{{"imported", n}}));
    },
    atom::credit_v, credit_import_ptr{std::make_shared<ev::credit_imported>(std::move(*import))});
}

void plan_class_table(call& c) {
  if (!c.ctx->aggregator) {
    c.respond(error_response(http::status::not_found, "no credit aggregator on this server"));
    return;
  }
  ask(
    c.ctx, c.respond, c.ctx->aggregator,
    [respond = c.respond](const plan_class_scales_ptr& t) {
      respond(json_response(http::status::ok, to_json(*t)));
    },
    atom::credit_v);
}

} // namespace cobble::net::admin
