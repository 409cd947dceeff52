#pragma once

/// The POSIX file primitives of the storage layer, in one place for the snapshot files of the
/// event store (storage/snapshot_files.cpp) and the files of the projects
/// (storage/file_store.cpp): an owned file descriptor, errors naming the operation and the file,
/// reading and writing a whole buffer, syncing a directory, and writing a file crash-safely under a
/// temporary name.
///
/// Errors are storage errors (storage/error.hpp) of code ec::io_error whose context is
/// "<operation> <path>: <errno text>", e.g. "write /data/x.tmp: No space left on device";
/// callers put what they were doing in front of it (context_of()).

#include "storage/error.hpp"

#include <caf/error.hpp>
#include <caf/expected.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace cobble::storage {

/// An owned file descriptor, closed when it goes. That close cannot report an error: where one
/// matters (after writing), call close() and check it.
class unique_fd {
public:
  /// No descriptor.
  unique_fd() = default;
  /// Takes `fd` (-1, as a failed open() returns it, for none).
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& x) noexcept : fd_(std::exchange(x.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& x) noexcept {
    reset(std::exchange(x.fd_, -1));
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  /// The descriptor, -1 for none.
  int get() const { return fd_; }
  /// True when there is a descriptor.
  explicit operator bool() const { return fd_ >= 0; }
  /// Gives the descriptor up without closing it.
  int release() { return std::exchange(fd_, -1); }
  /// Closes the descriptor held (ignoring close()'s result) and takes `fd`.
  void reset(int fd = -1);
  /// Closes the descriptor now and returns what ::close() returned (0, or -1 with errno set),
  /// for callers to whom a failed close means lost data. 0 when there is none.
  int close();

private:
  int fd_ = -1;
};

/// An ec::io_error whose context is "<operation> <path>: <errno text>", e.g. "open /x: No such
/// file or directory".
caf::error posix_error(std::string_view operation, const std::filesystem::path& path, int err);

/// The same for an error of std::filesystem: "<operation> <path>: <err.message()>".
caf::error posix_error(std::string_view operation, const std::filesystem::path& path,
                       const std::error_code& err);

/// Reads up to `n` bytes at `offset` of `fd` into `out`, resuming after short reads and EINTR;
/// returns how many it read, fewer than `n` only where the file ends. `path` names the file in
/// the error ("read <path>: ...").
caf::expected<std::size_t>
read_at(int fd, char* out, std::size_t n, std::uint64_t offset, const std::filesystem::path& path);

/// Writes all of `data` to `fd` at its offset, resuming after short writes and EINTR. `path`
/// names the file in the error ("write <path>: ...").
caf::error write_all(int fd, std::string_view data, const std::filesystem::path& path);

/// Syncs directory `dir`, so that an entry created, renamed or removed in it survives a crash.
/// The error reads "sync directory <dir>: ...".
caf::error sync_dir(const std::filesystem::path& dir);

/// Syncs the data of file `path` (written by someone else, e.g. a copy) to disk. The error
/// reads "sync <path>: ...".
caf::error sync_file(const std::filesystem::path& path);

/// The size of the pieces in which write_file_durably() writes its data and shows them to its
/// observer.
inline constexpr std::size_t durable_write_piece_bytes = 4u << 20;

/// Sees each piece of the data write_file_durably() writes, just before it is written (while it
/// is in the cache: the snapshot store computes the blob's CRC-32 there).
using piece_observer = std::function<void(std::string_view)>;

/// Writes `data` as the file `path` so that a crash leaves either all of it under that name or
/// what was there before: into `tmp` (created or truncated, mode 0644), fdatasync()ed, closed,
/// renamed to `path`, and the directory of `path` synced. `observe`, if set, sees every piece
/// first. On an error before the rename `tmp` is removed and `path` untouched; when only the
/// directory sync fails, the new file is in place but may not survive a crash. The error names
/// the step and the file: "create|write|sync|close|rename <tmp>: ..." or "sync directory ...".
caf::error write_file_durably(const std::filesystem::path& tmp, const std::filesystem::path& path,
                              std::string_view data, const piece_observer& observe = {});

} // namespace cobble::storage
