#pragma once

/// File transfer on the edge: input downloads (GET, with Range), the BOINC upload handler
/// (POST, get_file_size and file_upload with resume), and input staging for the admin API.
/// Disk I/O runs on a small thread pool, never on the Asio threads.

#include "actors/actors.hpp"
#include "net/http_server.hpp"
#include "storage/disk_space.hpp"
#include "storage/file_store.hpp"

#include <caf/actor_system.hpp>

#include <boost/asio/thread_pool.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace cobble::net {

/// The file side of the edge.
class file_service {
public:
  /// `secret` keys the upload tokens (kept in <data_dir>/upload_secret by cobbled).
  file_service(std::shared_ptr<storage::file_store> files, std::string secret, int threads = 2);
  ~file_service();

  /// The token the reply gives an output file and the client echoes when uploading it
  /// (`<xml_signature>`): "cobble:<host>:<HMAC-SHA256(secret, name|host)>".
  std::string sign(std::string_view file, std::uint64_t host) const;

  /// The host a token was made for, when it is valid for this file.
  std::optional<std::uint64_t> verify(std::string_view token, std::string_view file) const;

  storage::file_store& store() { return *files_; }

  /// Runs blocking work on the file pool.
  void post(std::function<void()> f);

private:
  std::shared_ptr<storage::file_store> files_;
  std::string secret_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
};

/// Settings of the file routes.
struct file_routes_context {
  caf::actor_system* sys = nullptr;
  std::map<std::string, project_actor> projects;
  std::shared_ptr<file_service> files;
  std::size_t upload_limit = 256u << 20;
  /// Below its watermark uploads are refused with a transient error (the client retries).
  std::shared_ptr<const storage::disk_space> disk;
  /// The statistics export (<data_dir>/stats), served at /<p>/stats/; empty: not served.
  std::filesystem::path stats_dir;
};

/// GET /<p>/download/<name> and POST /<p>/upload for every project, and the statistics
/// export at GET /<p>/stats/ (a page listing the files) and /<p>/stats/<file>.
std::vector<route> file_routes(file_routes_context ctx);

/// Stores the request body as an input of `project` ("in_<md5>"; "app_<md5>" with prefix
/// "app_", a file of an app version) and answers 201 with {"stored_name", "md5", "nbytes",
/// "existed"} (the admin API's POST .../files and .../app-files).
void stage_input(const std::shared_ptr<file_service>& files, const std::string& project,
                 request&& req, const responder& respond, const std::string& prefix = "in_");

} // namespace cobble::net
