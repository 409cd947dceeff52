#pragma once

/// A window [begin, begin + length) of a read-only file, as a Beast File: an
/// http::basic_file_body<file_window> sends that part of the file as the client reads it,
/// holding one small buffer. Beast's own file body always sends from the file's position
/// to its end, which cannot answer `Range: bytes=N-M`.

#include <boost/beast/core/file.hpp>

#include <cstdint>
#include <filesystem>

namespace cobble::net {

class file_window {
public:
  file_window() = default;

  /// Opens `path` read-only without following a symbolic link in its last component (an
  /// operator's link under download/ must not serve what it points to). The window is the
  /// whole file.
  static file_window open_regular(const std::filesystem::path& path, boost::beast::error_code& ec);

  /// Bytes of the whole file, as opened.
  std::uint64_t file_size() const { return file_size_; }

  /// Narrows the window to [begin, begin + length); `begin + length` must not pass the end.
  void restrict(std::uint64_t begin, std::uint64_t length, boost::beast::error_code& ec);

  // -- Beast's File concept --------------------------------------------------------------------

  bool is_open() const { return file_.is_open(); }
  void close(boost::beast::error_code& ec) { file_.close(ec); }
  void open(char const* path, boost::beast::file_mode mode, boost::beast::error_code& ec);
  std::uint64_t size(boost::beast::error_code& ec) const;
  std::uint64_t pos(boost::beast::error_code& ec) const;
  void seek(std::uint64_t offset, boost::beast::error_code& ec);
  std::size_t read(void* buffer, std::size_t n, boost::beast::error_code& ec) const;
  std::size_t write(void const* buffer, std::size_t n, boost::beast::error_code& ec);

private:
  boost::beast::file file_;
  std::uint64_t file_size_ = 0;
  std::uint64_t begin_ = 0;
  std::uint64_t length_ = 0;
};

} // namespace cobble::net
