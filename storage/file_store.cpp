#include "storage/file_store.hpp"

#include "storage/error.hpp"
#include "storage/posix_file.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <memory>
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

/// Creates `dir` and its parents where missing.
caf::error ensure_directory(const fs::path& dir) {
  std::error_code err;
  fs::create_directories(dir, err);
  if (err)
    return posix_error("create", dir, err);
  return {};
}

/// A fresh name in `dir` for a file being staged (one counter for stage() and stage_file(),
/// which may run at once: the edge's threads and the assimilator).
fs::path staging_path(const fs::path& dir) {
  static std::atomic<unsigned> counter{0};
  return dir / (".staging-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
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

caf::expected<staged_file>
file_store::find_staged(std::string_view project, std::string_view name) const {
  if (!safe_file_name(name))
    return make_error(ec::invalid_argument, "unsafe file name '" + std::string{name} + "'");
  auto path = download_dir(project) / std::string{name};
  std::error_code err;
  if (!fs::is_regular_file(path, err))
    return make_error(ec::not_found, "no staged file " + std::string{name});
  staged_file out;
  out.name = std::string{name};
  out.nbytes = fs::file_size(path, err);
  if (err)
    return posix_error("read", path, err);
  auto md5 = md5_of_file(path);
  if (!md5)
    return make_error(ec::io_error, "read " + path.string() + ": cannot read the file");
  out.md5 = std::move(*md5);
  out.existed = true;
  return out;
}

caf::expected<staged_file>
file_store::stage(std::string_view project, std::string_view content, std::string_view prefix) {
  staged_file out;
  out.md5 = md5_hex(content);
  out.nbytes = content.size();
  out.name = std::string{prefix} + out.md5;
  auto dir = download_dir(project);
  if (auto err = ensure_directory(dir))
    return err;
  auto target = dir / out.name;
  std::error_code err;
  if (fs::exists(target, err) && fs::file_size(target, err) == content.size()) {
    out.existed = true;
    return out;
  }
  if (auto failed = write_file_durably(staging_path(dir), target, content))
    return failed;
  return out;
}

caf::expected<staged_file> file_store::stage_file(std::string_view project, const fs::path& from,
                                                  std::string_view expected_md5) {
  std::error_code err;
  auto size = fs::file_size(from, err);
  if (err)
    return posix_error("read", from, err);
  staged_file out;
  out.md5 = std::string{expected_md5};
  out.nbytes = size;
  out.name = "in_" + out.md5;
  if (!safe_file_name(out.name))
    return make_error(ec::invalid_argument, "bad md5 '" + out.md5 + "'");
  auto dir = download_dir(project);
  if (auto failed = ensure_directory(dir))
    return failed;
  auto target = dir / out.name;
  if (fs::exists(target, err) && fs::file_size(target, err) == size) {
    out.existed = true;
    return out;
  }
  auto md5 = md5_of_file(from);
  if (!md5)
    return make_error(ec::io_error, "read " + from.string());
  if (*md5 != expected_md5)
    return make_error(ec::corruption, "the content of " + from.string() + " has md5 " + *md5
                                        + ", not the reported " + std::string{expected_md5});
  auto tmp = staging_path(dir);
  fs::create_hard_link(from, tmp, err);
  if (err) {
    err.clear();
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, err);
    if (err)
      return make_error(ec::io_error,
                        "copy " + from.string() + " to " + tmp.string() + ": " + err.message());
  }
  fs::rename(tmp, target, err);
  if (err) {
    auto failed = posix_error("rename", tmp, err);
    std::error_code ignored; // the error above is the one to report
    fs::remove(tmp, ignored);
    return failed;
  }
  return out;
}

std::uint64_t file_store::output_size(std::string_view project, std::string_view name) const {
  if (!safe_file_name(name))
    return 0;
  std::error_code err;
  auto size = fs::file_size(upload_dir(project) / std::string{name}, err);
  return err ? 0 : size;
}

struct output_writer::digest {
  md5_ctx md5;
};

output_writer::output_writer(unique_fd fd, fs::path path, std::unique_ptr<digest> md5,
                             std::uint64_t size)
  : fd_(std::move(fd)), path_(std::move(path)), md5_(std::move(md5)), size_(size) {}

output_writer::output_writer(output_writer&&) noexcept = default;
output_writer& output_writer::operator=(output_writer&&) noexcept = default;
output_writer::~output_writer() = default;

caf::error output_writer::append(std::string_view data) {
  if (auto err = write_all(fd_.get(), data, path_))
    return err;
  md5_->md5.update(data.data(), data.size());
  size_ += data.size();
  return {};
}

caf::error output_writer::sync() {
  if (::fdatasync(fd_.get()) != 0)
    return posix_error("sync", path_, errno);
  return {};
}

caf::expected<upload_progress> output_writer::finish() {
  if (auto err = sync())
    return err;
  return upload_progress{size_, md5_->md5.hex()};
}

caf::expected<output_writer>
file_store::open_output(std::string_view project, std::string_view name, std::uint64_t offset) {
  if (!safe_file_name(name))
    return make_error(ec::invalid_argument, "unsafe output file name '" + std::string{name} + "'");
  auto dir = upload_dir(project);
  if (auto err = ensure_directory(dir))
    return err;
  auto path = dir / std::string{name};
  unique_fd fd{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)};
  if (!fd)
    return posix_error("open", path, errno);
  if (::ftruncate(fd.get(), static_cast<off_t>(offset)) != 0)
    return posix_error("truncate", path, errno);
  // A resumed upload: the prefix stored by earlier requests is read once.
  auto md5 = std::make_unique<output_writer::digest>();
  std::string buf(std::min<std::uint64_t>(offset, std::uint64_t{1} << 16), '\0');
  for (std::uint64_t at = 0; at < offset;) {
    auto n = std::min<std::uint64_t>(buf.size(), offset - at);
    auto got = read_at(fd.get(), buf.data(), n, at, path);
    if (!got)
      return std::move(got.error());
    if (*got == 0)
      return make_error(ec::io_error, "read " + path.string() + ": shorter than its size");
    md5->md5.update(buf.data(), *got);
    at += *got;
  }
  if (::lseek(fd.get(), static_cast<off_t>(offset), SEEK_SET) < 0)
    return posix_error("seek", path, errno);
  return output_writer{std::move(fd), std::move(path), std::move(md5), offset};
}

caf::expected<upload_progress>
file_store::write_output(std::string_view project, std::string_view name, std::uint64_t offset,
                         std::string_view data, bool digest) {
  auto writer = open_output(project, name, offset);
  if (!writer)
    return std::move(writer.error());
  if (auto err = writer->append(data))
    return err;
  auto done = writer->finish();
  if (done && !digest)
    done->md5.reset();
  return done;
}

fs::path file_store::output_path(std::string_view project, std::string_view name) const {
  return upload_dir(project) / std::string{name};
}

bool file_store::remove_output(std::string_view project, std::string_view name) {
  if (!safe_file_name(name))
    return false;
  std::error_code err;
  return fs::remove(upload_dir(project) / std::string{name}, err);
}

bool file_store::remove_input(std::string_view project, std::string_view name) {
  if (!safe_file_name(name))
    return false;
  std::error_code err;
  return fs::remove(download_dir(project) / std::string{name}, err);
}

} // namespace cobble::storage
