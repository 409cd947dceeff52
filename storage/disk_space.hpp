#pragma once

/// The free space of the file system that holds the data directory, against a low watermark
/// (server.min_free_disk; docs/security.md, "Durability and a full disk").
///
/// Below the watermark the server stops accepting changes (the scheduler edge answers with a
/// message and a request_delay, the admin API with 507) before RocksDB runs out of space.
/// check() reads the space with statvfs, a blocking call: it runs at start and on the
/// snapshotter's own thread (once a second), never on an actor or Asio thread. low() is a
/// relaxed atomic read, cheap enough for every request.

#include <caf/error.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

namespace cobble::storage {

/// The free space of one file system against a watermark; safe to share between threads.
class disk_space {
public:
  /// Watches the file system of `dir`; below `min_free` bytes available (to an unprivileged
  /// user, as statvfs's f_bavail counts them) it is low. 0 disables the watermark.
  disk_space(std::filesystem::path dir, std::uint64_t min_free);

  /// Reads the free space now (statvfs). An error (the path vanished, ...) leaves the last
  /// reading in place and is returned, naming the path.
  caf::error check();

  /// Whether the last reading was below the watermark.
  bool low() const { return low_.load(std::memory_order_relaxed); }

  /// Bytes available at the last reading.
  std::uint64_t free_bytes() const { return free_.load(std::memory_order_relaxed); }

  std::uint64_t min_free() const { return min_free_; }

  const std::filesystem::path& path() const { return dir_; }

  /// "N bytes free on <dir>, below server.min_free_disk (M bytes)" (or "... at or above ...").
  std::string describe() const;

private:
  std::filesystem::path dir_;
  std::uint64_t min_free_;
  std::atomic<std::uint64_t> free_{UINT64_MAX};
  std::atomic<bool> low_{false};
};

} // namespace cobble::storage
