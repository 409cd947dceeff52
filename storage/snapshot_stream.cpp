#include "storage/snapshot_stream.hpp"

#include <mutex>
#include <utility>

#include <sys/mman.h>

// The stream itself; event_store fills it (storage/snapshot_chunks.cpp and
// storage/snapshot_files.cpp start its thread).

namespace cobble::storage {

snapshot_stream::snapshot_stream(std::uint64_t seq, std::size_t size) : seq_(seq), size_(size) {
  // nop
}

snapshot_stream::~snapshot_stream() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stop_ = true;
  }
  if (thread_.joinable())
    thread_.join();
  if (mapping_)
    ::munmap(mapping_, size_);
}

std::size_t snapshot_stream::wait_for(std::size_t n) {
  std::unique_lock<std::mutex> guard{mtx_};
  cv_.wait(guard, [&] { return ready_ >= n || ended_; });
  return ready_;
}

reader snapshot_stream::make_reader() {
  std::size_t ready = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ready = ready_;
  }
  return reader{std::string_view{data_, size_}, ready, *this};
}

caf::error snapshot_stream::finish() {
  std::unique_lock<std::mutex> guard{mtx_};
  cv_.wait(guard, [&] { return ended_; });
  return error_;
}

void snapshot_stream::publish(std::size_t ready) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ready_ = ready;
  }
  cv_.notify_all();
}

void snapshot_stream::hold_whole(std::string blob) {
  fallback_ = std::move(blob);
  data_ = fallback_.data();
  ready_ = size_;
  ended_ = true;
}

void snapshot_stream::end(caf::error err) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ended_ = true;
    error_ = std::move(err);
  }
  cv_.notify_all();
}

bool snapshot_stream::stopping() {
  std::lock_guard<std::mutex> guard{mtx_};
  return stop_;
}

} // namespace cobble::storage
