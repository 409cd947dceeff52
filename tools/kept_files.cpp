#include "tools/kept_files.hpp"

#include "actors/error.hpp"
#include "storage/posix_file.hpp"

#include <openssl/rand.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace cobble::tools {

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1)
    throw std::runtime_error("OpenSSL random generator failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (auto b : buf) {
    out.push_back(hex[b >> 4]);
    out.push_back(hex[b & 15]);
  }
  return out;
}

std::optional<std::string> read_secret(const fs::path& path) {
  if (!fs::exists(path))
    return std::nullopt;
  std::ifstream in{path};
  std::string token;
  std::getline(in, token);
  if (token.empty())
    return std::nullopt;
  return token;
}

std::optional<std::string> read_whole(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return std::nullopt;
  std::ifstream in{path, std::ios::binary};
  if (!in.is_open())
    return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return std::nullopt;
  return std::move(text).str();
}

void write_durably(const fs::path& path, const std::string& content, mode_t mode) {
  auto tmp = path;
  tmp += ".tmp";
  storage::unique_fd fd{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)};
  if (!fd)
    throw std::runtime_error(describe(storage::posix_error("create", tmp, errno)));
  auto err = storage::write_all(fd.get(), content, tmp);
  if (!err && ::fsync(fd.get()) != 0)
    err = storage::posix_error("sync", tmp, errno);
  fd.reset();
  if (!err) {
    std::error_code renamed;
    fs::rename(tmp, path, renamed);
    if (renamed)
      throw std::runtime_error("cannot rename " + tmp.string() + ": " + renamed.message());
    err = storage::sync_dir(path.parent_path());
  }
  if (err)
    throw std::runtime_error(describe(err));
}

std::string kept_secret(const fs::path& path) {
  if (auto kept = read_secret(path))
    return *kept;
  auto token = random_hex(24);
  write_durably(path, token + '\n', S_IRUSR | S_IWUSR);
  return token;
}

} // namespace cobble::tools
