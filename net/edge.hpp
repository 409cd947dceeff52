#pragma once

/// The routes that connect HTTP to the actors: each project's scheduler,
/// /healthz and /metrics. A scheduler request is parsed on the Asio thread into a plain
/// struct, parked in the RPC port under a token and sent to the project actor with the token;
/// the project decides, the log makes the decision durable and hands the reply to the port,
/// which posts its rendering (XML, output-file signatures) to the connection's strand.

#include "actors/actors.hpp"
#include "actors/rpc_port.hpp"
#include "net/http_server.hpp"
#include "net/metrics.hpp"
#include "storage/disk_space.hpp"

#include <caf/actor_system.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

/// Everything the edge routes need.
struct edge_context {
  caf::actor_system* sys = nullptr;
  std::map<std::string, project_actor> projects; ///< By project name (the URL segment).
  std::map<std::string, std::string> long_names;
  log_actor log;
  std::string public_url;          ///< Empty: taken from the request's Host header.
  double error_request_delay = 60; ///< request_delay of replies to bad requests.
  std::shared_ptr<edge_metrics> metrics = std::make_shared<edge_metrics>();
  const server_stats* http = nullptr;        ///< Set once the server exists (for /metrics).
  const server_stats* admin_http = nullptr;  ///< The admin API listener's; null: none.
  std::shared_ptr<class file_service> files; ///< Signs output files; null: unsigned.
  /// Where scheduler requests wait for their replies; the same port the log actor answers
  /// (node_options::port).
  std::shared_ptr<parked_rpcs> port;
  /// The data directory's free space: while it is low every scheduler request is answered
  /// with a message and error_request_delay, and reaches no actor (nothing is appended).
  /// Null: not watched.
  std::shared_ptr<const storage::disk_space> disk;
};

/// What a response needs from its request once the request is gone (answers made later, on
/// another thread).
struct reply_shape {
  unsigned version = 11;
  bool keep_alive = true;
};

/// A response of `shape` with this status, body and content type.
response shaped(const reply_shape& shape, http::status status, std::string body,
                std::string_view content_type);

/// The routes of every project plus /healthz and /metrics.
std::vector<route> edge_routes(const std::shared_ptr<edge_context>& ctx);

/// The base URL clients should use: public_url, or http://<Host header>.
std::string base_url(const edge_context& ctx, const request& req);

} // namespace cobble::net
