#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/event_store_impl.hpp"
#include "storage/keys.hpp"
#include "storage/posix_file.hpp"
#include "storage/snapshot_stream.hpp"

#include <cerrno>
#include <cstddef>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// File snapshots: the blob as one plain file `<dir>/snapshots/<seq>-<generation>.snap`
// (storage/keys.hpp), described by a version-2 manifest, read through a memory mapping.

namespace fs = std::filesystem;

namespace cobble::storage {

using namespace detail;

namespace {

/// How much of a mapped snapshot a stream checksums at a time (and how often it looks for a
/// stop). Files are written in pieces of durable_write_piece_bytes (storage/posix_file.hpp).
constexpr std::size_t snapshot_piece_bytes = 4u << 20;

} // namespace

std::string event_store::impl::file_label(std::uint64_t seq, std::uint64_t generation) {
  std::string out = snapshot_dir_name;
  out += '/';
  out += snapshot_file_name(seq, generation);
  return out;
}

caf::expected<std::uint32_t>
event_store::impl::write_snapshot_file(std::uint64_t seq, std::uint64_t gen,
                                       std::string_view blob) {
  auto name = snapshot_name(seq);
  std::error_code err;
  if (fs::create_directories(snap_dir, err)) {
    // A new directory entry in the store directory: make it durable too.
    if (auto e = sync_dir(dir))
      return fail(e, name, dir);
  } else if (err) {
    return fail(posix_error("create", snap_dir, err), name, dir);
  }
  auto path = snap_dir / snapshot_file_name(seq, gen);
  auto tmp = path;
  tmp += ".tmp";
  std::uint32_t crc = 0;
  auto e = write_file_durably(tmp, path, blob,
                              [&crc](std::string_view piece) { crc = crc32_update(crc, piece); });
  if (e)
    return fail(e, name, dir);
  return crc;
}

void event_store::impl::remove_snapshot_file(std::uint64_t seq, std::uint64_t gen) const {
  std::error_code ignored;
  fs::remove(snap_dir / snapshot_file_name(seq, gen), ignored);
}

caf::error event_store::impl::remove_orphan_files(bool past_end_too) const {
  std::error_code err;
  if (!fs::exists(snap_dir, err))
    return {};
  auto all = manifests();
  if (!all)
    return std::move(all.error());
  std::set<snapshot_file_id> live;
  for (const auto& [seq, m] : *all)
    if (m.storage == snapshot_storage::file)
      live.insert(snapshot_file_id{seq, m.generation});
  std::vector<fs::path> orphans;
  for (fs::directory_iterator i{snap_dir, err}, end; !err && i != end; i.increment(err)) {
    auto file = i->path().filename().string();
    std::string_view name = file;
    bool temporary = name.ends_with(".tmp");
    if (temporary)
      name.remove_suffix(4);
    auto id = parse_snapshot_file_name(name);
    // A file past the last event of a log that has events is not left by a crash but by
    // events lost at the end of the log: it stays as the evidence (check_no_lost_tail) until
    // drop_snapshots_past_end().
    auto last = last_seq.load();
    if (id && last > 0 && id->seq > last && !past_end_too)
      continue;
    if (id && (temporary || !live.count(*id)))
      orphans.push_back(i->path());
  }
  for (const auto& p : orphans) {
    std::error_code ignored;
    fs::remove(p, ignored);
  }
  return {};
}

caf::expected<unique_fd>
event_store::impl::open_snapshot_file(std::uint64_t seq, const snapshot_manifest& m) const {
  auto name = snapshot_name(seq);
  auto label = file_label(seq, m.generation);
  unique_fd fd;
  if (opts.read_only) {
    std::lock_guard<std::mutex> guard{pins_mutex};
    auto i = pins.find(snapshot_file_id{seq, m.generation});
    if (i != pins.end())
      fd.reset(::fcntl(i->second.get(), F_DUPFD_CLOEXEC, 0));
  }
  if (!fd) {
    auto path = snap_dir / snapshot_file_name(seq, m.generation);
    fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    auto code = errno;
    if (!fd && code == ENOENT)
      return fail(ec::corruption, name, "file " + label + " missing", dir);
    if (!fd)
      return fail(posix_error("open", path, code), name, dir);
  }
  struct stat sb {};
  if (::fstat(fd.get(), &sb) != 0)
    return fail(posix_error("stat", label, errno), name, dir);
  if (static_cast<std::uint64_t>(sb.st_size) != m.bytes)
    return fail(ec::corruption, name,
                "file " + label + " has size " + std::to_string(sb.st_size)
                  + " but the manifest says " + std::to_string(m.bytes),
                dir);
  return fd;
}

caf::error event_store::impl::checksum_mismatch(std::uint64_t seq) const {
  return fail(ec::corruption, snapshot_name(seq), "checksum mismatch", dir);
}

caf::expected<std::string>
event_store::impl::load_snapshot_file(std::uint64_t seq, const snapshot_manifest& m) const {
  auto fd = open_snapshot_file(seq, m);
  if (!fd)
    return std::move(fd.error());
  auto label = file_label(seq, m.generation);
  std::string blob;
  // The size is the file's, checked above: the allocation is as real as the file.
  blob.resize(static_cast<std::size_t>(m.bytes));
  auto done = read_at(fd->get(), blob.data(), blob.size(), 0, label);
  if (!done)
    return fail(done.error(), snapshot_name(seq), dir);
  if (*done < blob.size()) // shrunk since the check
    return fail(ec::corruption, snapshot_name(seq),
                "file " + label + " has size " + std::to_string(*done) + " but the manifest says "
                  + std::to_string(m.bytes),
                dir);
  if (crc32(blob) != m.crc)
    return checksum_mismatch(seq);
  return blob;
}

void event_store::impl::pin_snapshot_files() {
  auto all = manifests();
  if (!all)
    return; // reading a snapshot reports it
  std::map<snapshot_file_id, unique_fd> fresh;
  std::lock_guard<std::mutex> guard{pins_mutex};
  for (const auto& [seq, m] : *all) {
    if (m.storage != snapshot_storage::file)
      continue;
    snapshot_file_id id{seq, m.generation};
    if (auto i = pins.find(id); i != pins.end()) {
      fresh.emplace(id, std::move(i->second));
      continue;
    }
    auto path = snap_dir / snapshot_file_name(seq, m.generation);
    unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd) // if not, reading the snapshot says it is missing
      fresh.emplace(id, std::move(fd));
  }
  pins = std::move(fresh);
}

caf::expected<std::unique_ptr<snapshot_stream>>
event_store::impl::stream_file(std::uint64_t seq, const snapshot_manifest& m) const {
  // The size is checked first: the mapping must not reach past the end of the file.
  auto fd = open_snapshot_file(seq, m);
  if (!fd)
    return std::move(fd.error());
  auto size = static_cast<std::size_t>(m.bytes);
  std::unique_ptr<snapshot_stream> st{new snapshot_stream(seq, size)};
  void* mapping = size == 0 ? MAP_FAILED
                            : ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd->get(), 0);
  if (mapping == MAP_FAILED) {
    // Empty, or no address space for it: read it the plain way (which checks it as well).
    auto blob = load_snapshot_file(seq, m);
    if (!blob)
      return std::move(blob.error());
    st->hold_whole(std::move(*blob));
    return st;
  }
  // Read once, front to back, by the checksum and the decoder: read ahead, and start now.
  ::madvise(mapping, size, MADV_SEQUENTIAL);
  ::madvise(mapping, size, MADV_WILLNEED);
  st->mapping_ = mapping;
  st->data_ = static_cast<const char*>(mapping);
  st->ready_ = size; // all of it is addressable; only its checksum is still to come
  st->thread_ = std::thread{[s = st.get(), expected = m.crc, self = this] {
    std::uint32_t crc = 0;
    std::string_view all{s->data_, s->size_};
    for (std::size_t offset = 0; offset < all.size(); offset += snapshot_piece_bytes) {
      if (s->stopping()) {
        s->end(fail(ec::unspecified, snapshot_name(s->seq_), "reading stopped", self->dir));
        return;
      }
      crc = crc32_update(crc, all.substr(offset, snapshot_piece_bytes));
    }
    s->end(crc == expected ? caf::error{} : self->checksum_mismatch(s->seq_));
  }};
  return st;
}

} // namespace cobble::storage
