#pragma once

/// The admin JSON API of Cobble (see docs/admin-api.md): project status, work creation,
/// workunits, results, hosts and users, behind a bearer token.
///
/// Every request is bridged to the project actor by a one-shot actor that asks with a timeout
/// and answers through the responder; no handler blocks an HTTP thread.

#include "actors/actors.hpp"
#include "net/http_server.hpp"
#include "storage/disk_space.hpp"
#include "storage/event_store.hpp"

#include <caf/actor_system.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

/// What the admin API needs from the running node.
struct admin_context {
  caf::actor_system* sys = nullptr;              ///< Spawns the per-request bridges.
  std::map<std::string, project_actor> projects; ///< By project name.
  std::string token;                             ///< The bearer token every request must carry.
  std::chrono::milliseconds timeout{10000};      ///< Upper bound of one actor request.
  std::shared_ptr<class file_service> files;     ///< Input staging; null: POST .../files is 404.
  std::size_t upload_limit = 256u << 20;         ///< Body limit of a staged file (POST .../files).
  /// Most workunits in one batch (POST .../workunits); a larger batch is answered 413.
  std::size_t max_batch_items = 10000;
  aggregator_actor aggregator; ///< Cross-project credit; null: GET /api/credit is 404.
  /// The data directory's free space: while it is low every write (any method but GET) is
  /// answered 507 and reaches no actor. Null: not watched.
  std::shared_ptr<const storage::disk_space> disk;
  /// The event log and the data directory it lives in (POST /api/backup); null: 404.
  std::shared_ptr<const storage::event_store> store;
  std::filesystem::path data_dir;
  /// True while a backup runs: one at a time.
  std::shared_ptr<std::atomic<bool>> backing_up = std::make_shared<std::atomic<bool>>(false);
};

/// The routes of the admin API, all under `/api/`.
std::vector<route> admin_routes(admin_context ctx);

/// One route of the admin API: a method and a path pattern such as
/// `/api/projects/{project}/workunits/{workunit}`.
struct admin_route_info {
  http::verb method;
  std::string_view pattern;
};

/// Every route the admin API serves, in the order it tries them (POST .../files only with a
/// file service); docs/admin-api.md has a section for each, which its test checks.
std::vector<admin_route_info> admin_route_list();

/// True when `given` equals `expected`, in time that depends only on their lengths (so the
/// token cannot be guessed byte by byte from response times).
bool constant_time_equal(std::string_view given, std::string_view expected);

} // namespace cobble::net
