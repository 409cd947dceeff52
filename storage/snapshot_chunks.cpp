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

#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <optional>
#include <thread>
#include <utility>

// Chunked snapshots: the blob cut into chunks of store_options::snapshot_chunk_bytes under
// snapshot_chunk_key in CF `snapshots`, described by a version-1 manifest (storage/keys.hpp).
// Every store written before file snapshots holds them; they are still read, and written when
// store_options::snapshots says so.

namespace cobble::storage {

using namespace detail;

namespace {

/// The first key after every chunk key of snapshot `seq` (exclusive end of a DeleteRange).
std::string chunk_range_end(std::uint64_t seq) {
  if (seq < std::numeric_limits<std::uint64_t>::max())
    return snapshot_chunk_key::seq_prefix(seq + 1);
  return std::string(1, static_cast<char>(key_prefix::snapshot_manifest));
}

} // namespace

template <class Sink>
caf::error event_store::impl::read_chunks(rocksdb::Iterator& it, std::uint64_t seq,
                                          const snapshot_manifest& m, Sink&& sink) const {
  auto name = snapshot_name(seq);
  std::uint64_t offset = 0;
  std::uint32_t crc = 0;
  it.Seek(as_slice(snapshot_chunk_key::seq_prefix(seq)));
  for (std::uint32_t idx = 0; idx < m.chunks; ++idx, it.Next()) {
    std::optional<snapshot_chunk_key> key;
    if (it.Valid())
      key = snapshot_chunk_key::decode(as_view(it.key()));
    if (!key || key->seq != seq || key->chunk != idx) {
      if (!it.status().ok())
        return from_status(it.status(), "read " + name, dir);
      return fail(ec::corruption, name,
                  "chunk " + std::to_string(idx) + " of " + std::to_string(m.chunks) + " missing",
                  dir);
    }
    auto chunk = as_view(it.value());
    if (chunk.size() > m.bytes - offset)
      return fail(ec::corruption, name,
                  "chunks exceed the manifest's " + std::to_string(m.bytes) + " bytes", dir);
    crc = crc32_update(crc, chunk);
    if (!sink(offset, chunk))
      return fail(ec::unspecified, name, "reading stopped", dir);
    offset += chunk.size();
  }
  if (!it.status().ok())
    return from_status(it.status(), "read " + name, dir);
  if (it.Valid()) {
    auto extra = snapshot_chunk_key::decode(as_view(it.key()));
    if (extra && extra->seq == seq)
      return fail(ec::corruption, name,
                  "unexpected chunk " + std::to_string(extra->chunk) + " beyond the manifest's "
                    + std::to_string(m.chunks),
                  dir);
  }
  if (offset != m.bytes)
    return fail(ec::corruption, name,
                "size " + std::to_string(offset) + " but the manifest says "
                  + std::to_string(m.bytes),
                dir);
  if (crc != m.crc)
    return fail(ec::corruption, name, "checksum mismatch", dir);
  return {};
}

caf::expected<std::string>
event_store::impl::load_snapshot_chunks(rocksdb::Iterator& it, std::uint64_t seq,
                                        const snapshot_manifest& m) const {
  std::string blob;
  // One allocation for the whole snapshot: appending chunk by chunk to a growing string
  // copied it over and over (half of recovery's time at a million workunits).
  // (A damaged manifest may claim any size: then no reservation, and the size check
  // reports it.)
  try {
    blob.reserve(static_cast<std::size_t>(m.bytes));
  } catch (const std::exception&) {
  }
  auto err = read_chunks(it, seq, m, [&](std::uint64_t, std::string_view chunk) {
    blob.append(chunk.data(), chunk.size());
    return true;
  });
  if (err)
    return err;
  return blob;
}

caf::expected<std::unique_ptr<snapshot_stream>>
event_store::impl::stream_chunks(std::unique_ptr<rocksdb::Iterator> it, std::uint64_t seq,
                                 const snapshot_manifest& m) const {
  std::unique_ptr<snapshot_stream> st{new snapshot_stream(seq, static_cast<std::size_t>(m.bytes))};
  // Not zeroed: the reading thread touches each page first, in parallel with the decoding.
  try {
    st->buffer_.reset(new char[st->size_]);
  } catch (const std::bad_alloc&) {
    // A damaged manifest may claim any size: read it the plain way, which reports what is
    // wrong (or, should the blob really be this large, has it).
    auto blob = load_snapshot(*it, seq);
    if (!blob)
      return std::move(blob.error());
    st->hold_whole(std::move(*blob));
    return st;
  }
  st->data_ = st->buffer_.get();
  st->thread_ = std::thread{[s = st.get(), it = std::move(it), m, self = this] {
    auto err = self->read_chunks(*it, s->seq_, m, [&](std::uint64_t offset, std::string_view chunk) {
      std::memcpy(s->buffer_.get() + offset, chunk.data(), chunk.size());
      // Published per chunk (4 MB by default); the check for a stop goes with it.
      s->publish(static_cast<std::size_t>(offset + chunk.size()));
      return !s->stopping();
    });
    s->end(std::move(err));
  }};
  return st;
}

caf::error event_store::impl::write_snapshot_chunks(std::uint64_t seq, std::string_view blob) {
  auto chunk_bytes = opts.snapshot_chunk_bytes;
  auto chunks = (blob.size() + chunk_bytes - 1) / chunk_bytes;
  auto write = [&](rocksdb::WriteBatch& wb) {
    rocksdb::WriteOptions wo;
    wo.sync = false; // the manifest's synced batch syncs the WAL with every chunk before it
    return db->Write(wo, &wb);
  };
  rocksdb::Status s;
  {
    // Chunks left over from an earlier snapshot at the same seq must not survive.
    rocksdb::WriteBatch wb;
    s = delete_snapshot_chunks(wb, seq);
    if (s.ok())
      s = write(wb);
  }
  for (std::size_t i = 0; s.ok() && i < chunks; ++i) {
    auto chunk = blob.substr(i * chunk_bytes, chunk_bytes);
    rocksdb::WriteBatch wb;
    s = wb.Put(snapshots_cf.get(), snapshot_chunk_key{seq, static_cast<std::uint32_t>(i)}.encode(),
               as_slice(chunk));
    if (s.ok())
      s = write(wb);
  }
  if (!s.ok())
    return from_status(s, "write " + snapshot_name(seq), dir);
  return {};
}

rocksdb::Status
event_store::impl::delete_snapshot_chunks(rocksdb::WriteBatch& wb, std::uint64_t seq) const {
  return wb.DeleteRange(snapshots_cf.get(), snapshot_chunk_key::seq_prefix(seq),
                        chunk_range_end(seq));
}

} // namespace cobble::storage
