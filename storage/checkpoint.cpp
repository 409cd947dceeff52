/// event_store::checkpoint(): a consistent copy of a live store, for backups (storage/backup).

#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/event_store_impl.hpp"
#include "storage/keys.hpp"
#include "storage/posix_file.hpp"

#include <rocksdb/utilities/checkpoint.h>

#include <memory>
#include <mutex>
#include <system_error>

namespace cobble::storage {

namespace fs = std::filesystem;

namespace {

/// `to` as a hard link to `from`, or a copy where the file systems differ; synced either way
/// (a link's data is the original's, already synced by the store).
caf::error link_or_copy(const fs::path& from, const fs::path& to) {
  std::error_code err;
  fs::create_hard_link(from, to, err);
  if (!err)
    return {};
  err.clear();
  fs::copy_file(from, to, err);
  if (err)
    return posix_error("copy " + from.string() + " to", to, err);
  return sync_file(to);
}

} // namespace

caf::error event_store::checkpoint(const fs::path& target) const {
  if (auto err = impl_->refuse_if_read_only("checkpoint"))
    return err;
  std::error_code err;
  if (fs::exists(target, err) || err)
    return detail::fail(ec::invalid_argument, "checkpoint " + target.string(),
                        "it exists already; a checkpoint goes into a new directory", impl_->dir);
  // No snapshot is written or pruned meanwhile: the files the manifests name stay put.
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto snapshots = list_snapshots();
  if (!snapshots)
    return std::move(snapshots.error());
  auto fail = [&target](caf::error e) {
    std::error_code ignored;
    fs::remove_all(target, ignored);
    return e;
  };
  rocksdb::Checkpoint* raw = nullptr;
  auto s = rocksdb::Checkpoint::Create(impl_->db.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> cp{raw};
  if (!s.ok())
    return detail::from_status(s, "checkpoint", impl_->dir);
  // A log_size_for_flush of 0 flushes the memtables first: the copy holds table files and
  // at most a short write-ahead log.
  s = cp->CreateCheckpoint(target.string());
  if (!s.ok())
    return fail(detail::from_status(s, "checkpoint into " + target.string(), impl_->dir));
  auto snap_dir = target / snapshot_dir_name;
  fs::create_directories(snap_dir, err);
  if (err)
    return fail(posix_error("create directory", snap_dir, err));
  for (const auto& snap : *snapshots)
    if (snap.storage == snapshot_storage::file)
      if (auto e = link_or_copy(impl_->dir / snap.where, target / snap.where))
        return fail(e);
  if (auto e = sync_dir(snap_dir))
    return fail(e);
  if (auto e = sync_dir(target))
    return fail(e);
  return {};
}

} // namespace cobble::storage
