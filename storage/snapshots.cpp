#include "storage/error.hpp"
#include "storage/event_store.hpp"
#include "storage/event_store_impl.hpp"
#include "storage/keys.hpp"
#include "storage/snapshot_stream.hpp"

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/write_batch.h>

#include <limits>
#include <mutex>
#include <utility>

namespace cobble::storage {

using namespace detail;

// -- manifests ----------------------------------------------------------------

rocksdb::ReadOptions event_store::impl::snapshot_read_options() {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  return ro;
}

caf::expected<std::vector<std::pair<std::uint64_t, snapshot_manifest>>>
event_store::impl::manifests() const {
  std::vector<std::pair<std::uint64_t, snapshot_manifest>> result;
  std::unique_ptr<rocksdb::Iterator> it{db->NewIterator({}, snapshots_cf.get())};
  auto start = std::string(1, static_cast<char>(key_prefix::snapshot_manifest));
  for (it->Seek(start); it->Valid(); it->Next()) {
    auto key = snapshot_manifest_key::decode(as_view(it->key()));
    if (!key)
      break; // past the manifests
    auto manifest = snapshot_manifest::decode(as_view(it->value()));
    if (!manifest)
      return fail(ec::corruption, snapshot_name(key->seq), "malformed manifest", dir);
    result.emplace_back(key->seq, *manifest);
  }
  if (!it->status().ok())
    return from_status(it->status(), "list snapshots", dir);
  return result;
}

caf::expected<std::optional<snapshot_manifest>>
event_store::impl::find_manifest(std::uint64_t seq) const {
  std::string value;
  auto s = db->Get({}, snapshots_cf.get(), snapshot_manifest_key{seq}.encode(), &value);
  if (s.IsNotFound())
    return std::optional<snapshot_manifest>{};
  if (!s.ok())
    return from_status(s, "read " + snapshot_name(seq), dir);
  auto manifest = snapshot_manifest::decode(value);
  if (!manifest)
    return fail(ec::corruption, snapshot_name(seq), "malformed manifest", dir);
  return std::optional<snapshot_manifest>{*manifest};
}

caf::expected<snapshot_manifest>
event_store::impl::read_manifest(rocksdb::Iterator& it, std::uint64_t seq) const {
  auto name = snapshot_name(seq);
  auto manifest_key = snapshot_manifest_key{seq}.encode();
  it.Seek(as_slice(manifest_key));
  if (!it.status().ok())
    return from_status(it.status(), "read " + name, dir);
  if (!it.Valid() || as_view(it.key()) != manifest_key)
    return fail(ec::not_found, name, "not found", dir);
  auto manifest = snapshot_manifest::decode(as_view(it.value()));
  if (!manifest)
    return fail(ec::corruption, name, "malformed manifest", dir);
  return *manifest;
}

caf::expected<std::string>
event_store::impl::load_snapshot(rocksdb::Iterator& it, std::uint64_t seq) const {
  auto manifest = read_manifest(it, seq);
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->storage == snapshot_storage::file)
    return load_snapshot_file(seq, *manifest);
  return load_snapshot_chunks(it, seq, *manifest);
}

// -- snapshots ----------------------------------------------------------------

caf::error event_store::write_snapshot(std::uint64_t seq, std::string_view blob) {
  auto name = snapshot_name(seq);
  if (auto err = impl_->refuse_if_read_only("write " + name))
    return err;
  auto chunk_bytes = impl_->opts.snapshot_chunk_bytes;
  auto as_file = impl_->opts.snapshots == snapshot_storage::file;
  auto chunks = as_file ? 0 : (blob.size() + chunk_bytes - 1) / chunk_bytes;
  if (chunks > std::numeric_limits<std::uint32_t>::max())
    return fail(ec::invalid_argument, name, "too many chunks", impl_->dir);
  // Neither the append mutex nor one big WriteBatch: appends share RocksDB's write queue, and
  // a snapshot of hundreds of MB written in one synced batch held every append (and so every
  // acknowledged RPC) for up to a second. A file snapshot does not go through RocksDB at all
  // but for its manifest; a chunked one writes each chunk as a batch of its own, without sync.
  // The manifest comes last, in a synced batch (which syncs the WAL with every chunk before
  // it); until it exists the snapshot does not (list_snapshots and latest_snapshot go by
  // manifests). Chunks or files orphaned by a crash are deleted by the next write at the same
  // seq, by prune_snapshots, and (files) at the next open.
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto old = impl_->find_manifest(seq);
  if (!old && old.error() != ec::corruption)
    return std::move(old.error());
  // What the manifest at `seq` names now (a malformed manifest is simply overwritten).
  bool had_file = old && *old && (*old)->storage == snapshot_storage::file;
  bool had_chunks = old && *old && (*old)->storage == snapshot_storage::chunks;
  std::uint64_t old_generation = had_file ? (*old)->generation : 0;
  snapshot_manifest manifest;
  manifest.bytes = blob.size();
  if (as_file) {
    // A new file next to the one the manifest names (if any): that one stays whole until the
    // new manifest is written.
    manifest.storage = snapshot_storage::file;
    if (had_file)
      manifest.generation = old_generation + 1;
    auto crc = impl_->write_snapshot_file(seq, manifest.generation, blob);
    if (!crc)
      return std::move(crc.error());
    manifest.crc = *crc;
  } else {
    manifest.chunks = static_cast<std::uint32_t>(chunks);
    manifest.crc = crc32(blob);
    if (auto err = impl_->write_snapshot_chunks(seq, blob))
      return err;
  }
  rocksdb::WriteBatch wb;
  rocksdb::Status s;
  // A file replacing a chunked snapshot: its chunks go with the old manifest, atomically.
  if (as_file && had_chunks)
    s = impl_->delete_snapshot_chunks(wb, seq);
  if (s.ok())
    s = wb.Put(impl_->snapshots_cf.get(), snapshot_manifest_key{seq}.encode(), manifest.encode());
  if (s.ok()) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = impl_->db->Write(wo, &wb);
  }
  // On error a new file stays behind as an orphan (for the next prune or open to remove):
  // whether a failed write left its manifest behind cannot be told here.
  if (!s.ok())
    return from_status(s, "write " + name, impl_->dir);
  // The file the old manifest named is no snapshot any more.
  if (had_file)
    impl_->remove_snapshot_file(seq, old_generation);
  impl_->snapshots_written.fetch_add(1, std::memory_order_relaxed);
  return {};
}

caf::expected<std::optional<std::pair<std::uint64_t, std::string>>>
event_store::latest_snapshot() const {
  using result = std::optional<std::pair<std::uint64_t, std::string>>;
  // One iterator for finding and reading: it sees one consistent state, even while pruning.
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  it->SeekForPrev(snapshot_manifest_key{std::numeric_limits<std::uint64_t>::max()}.encode());
  if (!it->status().ok())
    return from_status(it->status(), "find the latest snapshot", impl_->dir);
  if (!it->Valid())
    return result{};
  auto key = snapshot_manifest_key::decode(as_view(it->key()));
  if (!key)
    return result{}; // only chunk keys sort below the manifests: there is no manifest
  auto blob = impl_->load_snapshot(*it, key->seq);
  if (!blob)
    return std::move(blob.error());
  return result{std::pair{key->seq, std::move(*blob)}};
}

caf::expected<std::string> event_store::read_snapshot(std::uint64_t seq) const {
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  return impl_->load_snapshot(*it, seq);
}

caf::expected<std::unique_ptr<snapshot_stream>>
event_store::stream_snapshot(std::uint64_t seq) const {
  std::unique_ptr<rocksdb::Iterator> it{
    impl_->db->NewIterator(impl::snapshot_read_options(), impl_->snapshots_cf.get())};
  auto manifest = impl_->read_manifest(*it, seq);
  if (!manifest)
    return std::move(manifest.error());
  if (manifest->storage == snapshot_storage::file)
    return impl_->stream_file(seq, *manifest);
  return impl_->stream_chunks(std::move(it), seq, *manifest);
}

caf::expected<std::vector<snapshot_info>> event_store::list_snapshots() const {
  auto all = impl_->manifests();
  if (!all)
    return std::move(all.error());
  std::vector<snapshot_info> result;
  result.reserve(all->size());
  for (const auto& [seq, m] : *all)
    result.push_back(snapshot_info{seq, m.bytes, m.storage,
                                   m.storage == snapshot_storage::file
                                     ? impl_->file_label(seq, m.generation)
                                     : "chunks of " + snapshot_name(seq)});
  return result;
}

std::vector<snapshot_info> event_store::snapshots() const {
  auto result = list_snapshots();
  if (!result)
    return {};
  return std::move(*result);
}

caf::error event_store::prune_snapshots(std::size_t keep) {
  if (auto err = impl_->refuse_if_read_only("prune snapshots"))
    return err;
  std::lock_guard<std::mutex> guard{impl_->snapshot_mutex};
  auto all = list_snapshots();
  if (!all)
    return std::move(all.error());
  if (all->size() > keep) {
    // The manifests first, in a synced batch: from then on the pruned snapshots do not exist,
    // and a crash before their files are removed leaves orphans, which the next prune or open
    // removes. (Files first would leave, after a crash, a manifest naming a missing file: a
    // snapshot that looks whole and fails when read.)
    auto* cf = impl_->snapshots_cf.get();
    rocksdb::WriteBatch wb;
    rocksdb::Status s;
    for (std::size_t i = 0; s.ok() && i < all->size() - keep; ++i)
      s = wb.Delete(cf, snapshot_manifest_key{(*all)[i].seq}.encode());
    // Every chunk below the oldest snapshot kept (all of them when none is kept): those of
    // the pruned snapshots and any orphaned by a crash during a snapshot write.
    auto end = keep == 0 ? snapshot_chunk_key::upper_bound()
                         : snapshot_chunk_key::seq_prefix((*all)[all->size() - keep].seq);
    if (s.ok())
      s = wb.DeleteRange(cf, snapshot_chunk_key::seq_prefix(0), end);
    if (!s.ok())
      return from_status(s, "prune snapshots", impl_->dir);
    rocksdb::WriteOptions wo;
    wo.sync = true;
    s = impl_->db->Write(wo, &wb);
    if (!s.ok())
      return from_status(s, "prune snapshots", impl_->dir);
  }
  // The files of the pruned snapshots, and any other file no manifest names.
  return impl_->remove_orphan_files();
}

} // namespace cobble::storage
