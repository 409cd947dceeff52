#include "net/file_window.hpp"

#include <algorithm>
#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>

namespace cobble::net {

namespace beast = boost::beast;

file_window file_window::open_regular(const std::filesystem::path& path, beast::error_code& ec) {
  file_window w;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    // ELOOP: the last component is a symbolic link; served as missing.
    ec = beast::error_code{errno == ELOOP ? ENOENT : errno, beast::system_category()};
    return w;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ec = beast::error_code{ENOENT, beast::system_category()};
    ::close(fd);
    return w;
  }
  w.file_.native_handle(fd);
  w.file_size_ = static_cast<std::uint64_t>(st.st_size);
  w.length_ = w.file_size_;
  ec = {};
  return w;
}

void file_window::restrict(std::uint64_t begin, std::uint64_t length, beast::error_code& ec) {
  if (begin > file_size_ || length > file_size_ - begin) {
    ec = beast::error_code{EINVAL, beast::system_category()};
    return;
  }
  begin_ = begin;
  length_ = length;
  file_.seek(begin_, ec);
}

void file_window::open(char const* path, beast::file_mode mode, beast::error_code& ec) {
  if (mode != beast::file_mode::read && mode != beast::file_mode::scan) {
    ec = beast::error_code{EROFS, beast::system_category()};
    return;
  }
  *this = open_regular(path, ec);
}

std::uint64_t file_window::size(beast::error_code& ec) const {
  ec = {};
  return length_;
}

std::uint64_t file_window::pos(beast::error_code& ec) const {
  return file_.pos(ec) - begin_;
}

void file_window::seek(std::uint64_t offset, beast::error_code& ec) {
  file_.seek(begin_ + std::min(offset, length_), ec);
}

std::size_t file_window::read(void* buffer, std::size_t n, beast::error_code& ec) const {
  // The body's writer never asks for more than size() bytes in all.
  return file_.read(buffer, n, ec);
}

std::size_t file_window::write(void const*, std::size_t, beast::error_code& ec) {
  ec = beast::error_code{EROFS, beast::system_category()};
  return 0;
}

} // namespace cobble::net
