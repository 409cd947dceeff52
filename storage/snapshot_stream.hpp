#pragma once

/// A snapshot read from the event store while the caller decodes it.
///
/// A file snapshot (the kind written now) is mapped into memory read-only: the decoder reads
/// the mapping directly, with no copy, and a thread of the stream computes the CRC-32 over the
/// same mapping meanwhile (running ahead of the decoder, it also takes the page faults). The
/// file's size is checked against the manifest before mapping (a mapping past the end of a file
/// would raise SIGBUS on access), so a truncated file is an error of `stream_snapshot` itself.
///
/// A chunked snapshot (older stores) is copied by the thread chunk after chunk into one buffer
/// of the manifest's size while it extends the CRC-32; `make_reader()` gives a
/// `storage::reader` over that buffer that waits for bytes not yet there.
///
/// The checks are those of `event_store::read_snapshot` (chunks missing, extra or too large,
/// total size, checksum), reported by `finish()` with the same messages; until `finish()`
/// returned no error, what was decoded must be treated as untrusted and discarded on error (a
/// decoder meeting a chunk that failed reads as if the input ended there; a damaged file is
/// read to its end, and only `finish()` tells).

#include "storage/codec.hpp"
#include "storage/event_store.hpp"

#include <caf/error.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace cobble::storage {

/// One snapshot being read (see the file comment). Not copyable or movable: the reading thread
/// refers to it. Destroying it stops the reading thread at the next chunk (or piece of the
/// checksum) and waits for it, then unmaps the file.
class snapshot_stream final : public byte_source {
public:
  ~snapshot_stream() override;
  snapshot_stream(const snapshot_stream&) = delete;
  snapshot_stream& operator=(const snapshot_stream&) = delete;

  /// The snapshot's seq.
  std::uint64_t seq() const { return seq_; }
  /// The blob's size as the manifest gives it.
  std::size_t size() const { return size_; }

  /// Blocks until the first `n` bytes are there or the read ended (done or failed); returns how
  /// many bytes are there.
  std::size_t wait_for(std::size_t n) override;

  /// A reader over the whole blob that waits (wait_for) whenever it would read past what is
  /// there (a file snapshot is all there at once). It runs out early, as if the input ended,
  /// when the read of a chunk fails.
  reader make_reader();

  /// Waits until the whole snapshot was read: no error, or the error read_snapshot() would
  /// have returned (ec::corruption naming the snapshot and what is wrong, or RocksDB's).
  caf::error finish();

private:
  friend class event_store;
  snapshot_stream(std::uint64_t seq, std::size_t size);
  void publish(std::size_t ready); ///< The thread: bytes [0, ready) are there.
  void end(caf::error err);        ///< The thread: nothing more comes.
  /// No thread: the stream serves `blob`, read and checked already (the fallback paths).
  void hold_whole(std::string blob);
  bool stopping(); ///< The thread: the owner went away.

  std::uint64_t seq_;
  std::size_t size_;
  std::unique_ptr<char[]> buffer_; ///< Chunked: size_ bytes, filled by the thread.
  std::string fallback_;           ///< The blob when buffer_ or the mapping failed.
  void* mapping_ = nullptr;        ///< File: the file mapped read-only (size_ bytes).
  const char* data_ = nullptr;     ///< buffer_, mapping_ or fallback_.

  std::mutex mtx_;
  std::condition_variable cv_;
  std::size_t ready_ = 0; ///< Guarded by mtx_.
  bool ended_ = false;    ///< Guarded by mtx_.
  bool stop_ = false;     ///< Guarded by mtx_.
  caf::error error_;      ///< Guarded by mtx_; set when ended_.
  std::thread thread_;
};

} // namespace cobble::storage
