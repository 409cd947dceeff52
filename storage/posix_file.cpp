#include "storage/posix_file.hpp"

#include <cerrno>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace cobble::storage {

void unique_fd::reset(int fd) {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = fd;
}

int unique_fd::close() {
  if (fd_ < 0)
    return 0;
  return ::close(std::exchange(fd_, -1));
}

caf::error posix_error(std::string_view operation, const fs::path& path, int err) {
  return posix_error(operation, path, std::error_code{err, std::system_category()});
}

caf::error
posix_error(std::string_view operation, const fs::path& path, const std::error_code& err) {
  std::string what{operation};
  what += ' ';
  what += path.string();
  what += ": ";
  what += err.message();
  return make_error(ec::io_error, std::move(what));
}

caf::expected<std::size_t>
read_at(int fd, char* out, std::size_t n, std::uint64_t offset, const fs::path& path) {
  std::size_t done = 0;
  while (done < n) {
    auto got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return posix_error("read", path, errno);
    if (got == 0) // the end of the file
      break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

caf::error write_all(int fd, std::string_view data, const fs::path& path) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return posix_error("write", path, errno);
    if (n == 0) // no progress and no errno: POSIX leaves it open for regular files
      return posix_error("write", path, EIO);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

caf::error sync_dir(const fs::path& dir) {
  unique_fd fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (!fd || ::fsync(fd.get()) != 0)
    return posix_error("sync directory", dir, errno);
  return {};
}

caf::error sync_file(const fs::path& path) {
  unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd || ::fdatasync(fd.get()) != 0)
    return posix_error("sync", path, errno);
  return {};
}

caf::error write_file_durably(const fs::path& tmp, const fs::path& path, std::string_view data,
                              const piece_observer& observe) {
  auto failed = [&](std::string_view operation, int err) {
    auto e = posix_error(operation, tmp, err);
    std::error_code ignored; // the error above is the one to report
    fs::remove(tmp, ignored);
    return e;
  };
  unique_fd fd{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (!fd)
    return failed("create", errno);
  for (std::size_t offset = 0; offset < data.size(); offset += durable_write_piece_bytes) {
    auto piece = data.substr(offset, durable_write_piece_bytes);
    if (observe)
      observe(piece);
    if (auto err = write_all(fd.get(), piece, tmp)) {
      std::error_code ignored; // as in failed(): the write error is reported
      fs::remove(tmp, ignored);
      return err;
    }
  }
  if (::fdatasync(fd.get()) != 0)
    return failed("sync", errno);
  if (fd.close() != 0)
    return failed("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return failed("rename", errno);
  auto parent = path.parent_path();
  return sync_dir(parent.empty() ? fs::path{"."} : parent);
}

} // namespace cobble::storage
