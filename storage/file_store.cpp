#include "storage/file_store.hpp"

#include <openssl/evp.h>

#include <array>
#include <atomic>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace cobble::storage {

namespace {

std::string to_hex(const unsigned char* p, std::size_t n) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(hex[p[i] >> 4]);
    out.push_back(hex[p[i] & 15]);
  }
  return out;
}

struct md5_ctx {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  md5_ctx() {
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_md5(), nullptr) != 1)
      throw std::runtime_error("OpenSSL MD5 unavailable");
  }
  void update(const void* p, std::size_t n) { EVP_DigestUpdate(ctx.get(), p, n); }
  std::string hex() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), out, &len);
    return to_hex(out, len);
  }
};

[[noreturn]] void fail(const std::string& what, const fs::path& p) {
  throw std::runtime_error(what + " " + p.string() + ": " + std::generic_category().message(errno));
}

/// RAII file descriptor.
struct fd_guard {
  int fd = -1;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

void write_all(int fd, std::string_view data, const fs::path& p) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot write", p);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

} // namespace

bool safe_file_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.')
    return false;
  if (name.find("..") != std::string_view::npos)
    return false;
  for (unsigned char c : name)
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f)
      return false;
  return true;
}

std::string md5_hex(std::string_view bytes) {
  md5_ctx ctx;
  ctx.update(bytes.data(), bytes.size());
  return ctx.hex();
}

std::optional<std::string> md5_of_file(const fs::path& file) {
  std::ifstream in{file, std::ios::binary};
  if (!in)
    return std::nullopt;
  md5_ctx ctx;
  std::array<char, 1 << 16> buf;
  while (in) {
    in.read(buf.data(), buf.size());
    ctx.update(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return ctx.hex();
}

fs::path file_store::download_dir(std::string_view project) const {
  return root_ / "projects" / std::string{project} / "download";
}

fs::path file_store::upload_dir(std::string_view project) const {
  return root_ / "projects" / std::string{project} / "upload";
}

fs::path file_store::results_dir(std::string_view project) const {
  return root_ / "projects" / std::string{project} / "results";
}

staged_file file_store::stage(std::string_view project, std::string_view content) {
  staged_file out;
  out.md5 = md5_hex(content);
  out.nbytes = content.size();
  out.name = "in_" + out.md5;
  auto dir = download_dir(project);
  fs::create_directories(dir);
  auto target = dir / out.name;
  std::error_code ec;
  if (fs::exists(target, ec) && fs::file_size(target, ec) == content.size()) {
    out.existed = true;
    return out;
  }
  static std::atomic<unsigned> counter{0};
  auto tmp = dir / (".staging-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  {
    fd_guard f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (f.fd < 0)
      fail("cannot create", tmp);
    write_all(f.fd, content, tmp);
    if (::fsync(f.fd) != 0)
      fail("cannot sync", tmp);
  }
  fs::rename(tmp, target);
  return out;
}

staged_file file_store::stage_file(std::string_view project, const fs::path& from,
                                   std::string_view expected_md5) {
  std::error_code ec;
  auto size = fs::file_size(from, ec);
  if (ec)
    throw std::runtime_error("cannot read " + from.string() + ": " + ec.message());
  staged_file out;
  out.md5 = std::string{expected_md5};
  out.nbytes = size;
  out.name = "in_" + out.md5;
  if (!safe_file_name(out.name))
    throw std::invalid_argument("bad md5 '" + out.md5 + "'");
  auto dir = download_dir(project);
  fs::create_directories(dir);
  auto target = dir / out.name;
  if (fs::exists(target, ec) && fs::file_size(target, ec) == size) {
    out.existed = true;
    return out;
  }
  auto md5 = md5_of_file(from);
  if (!md5)
    throw std::runtime_error("cannot read " + from.string());
  if (*md5 != expected_md5)
    throw std::runtime_error("the content of " + from.string() + " has md5 " + *md5
                             + ", not the reported " + std::string{expected_md5});
  static std::atomic<unsigned> counter{0};
  auto tmp = dir / (".staging-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::create_hard_link(from, tmp, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw std::runtime_error("cannot copy " + from.string() + " to " + tmp.string() + ": "
                               + ec.message());
  }
  fs::rename(tmp, target);
  return out;
}

std::optional<std::uint64_t>
file_store::input_size(std::string_view project, std::string_view name) const {
  if (!safe_file_name(name))
    return std::nullopt;
  std::error_code ec;
  auto size = fs::file_size(download_dir(project) / std::string{name}, ec);
  if (ec)
    return std::nullopt;
  return size;
}

std::optional<std::string>
file_store::read_input(std::string_view project, std::string_view name, std::uint64_t offset,
                       std::uint64_t length) const {
  if (!safe_file_name(name))
    return std::nullopt;
  auto path = download_dir(project) / std::string{name};
  fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT)
      return std::nullopt;
    fail("cannot open", path);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    fail("cannot stat", path);
  auto size = static_cast<std::uint64_t>(st.st_size);
  if (offset >= size)
    return std::string{};
  length = std::min(length, size - offset);
  std::string out(length, '\0');
  std::size_t done = 0;
  while (done < length) {
    auto n = ::pread(f.fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot read", path);
    }
    if (n == 0)
      break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

std::uint64_t file_store::output_size(std::string_view project, std::string_view name) const {
  if (!safe_file_name(name))
    return 0;
  std::error_code ec;
  auto size = fs::file_size(upload_dir(project) / std::string{name}, ec);
  return ec ? 0 : size;
}

upload_progress file_store::write_output(std::string_view project, std::string_view name,
                                         std::uint64_t offset, std::string_view data) {
  if (!safe_file_name(name))
    throw std::invalid_argument("unsafe output file name");
  auto dir = upload_dir(project);
  fs::create_directories(dir);
  auto path = dir / std::string{name};
  fd_guard f{::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)};
  if (f.fd < 0)
    fail("cannot open", path);
  if (::ftruncate(f.fd, static_cast<off_t>(offset)) != 0)
    fail("cannot truncate", path);
  if (::lseek(f.fd, static_cast<off_t>(offset), SEEK_SET) < 0)
    fail("cannot seek", path);
  write_all(f.fd, data, path);
  if (::fdatasync(f.fd) != 0)
    fail("cannot sync", path);
  return upload_progress{offset + data.size()};
}

fs::path file_store::output_path(std::string_view project, std::string_view name) const {
  return upload_dir(project) / std::string{name};
}

bool file_store::remove_output(std::string_view project, std::string_view name) {
  if (!safe_file_name(name))
    return false;
  std::error_code ec;
  return fs::remove(upload_dir(project) / std::string{name}, ec);
}

bool file_store::remove_input(std::string_view project, std::string_view name) {
  if (!safe_file_name(name))
    return false;
  std::error_code ec;
  return fs::remove(download_dir(project) / std::string{name}, ec);
}

} // namespace cobble::storage
