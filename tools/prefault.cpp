#include "tools/prefault.hpp"

#include <mimalloc.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include <sys/mman.h>
#include <unistd.h>

namespace cobble::heap {

namespace {

/// The first 2 MiB of a block (one huge page) hold mimalloc's segment header. They are left
/// to mimalloc: its first write there is how a prefaulter sees that the block was started.
constexpr std::size_t header_bytes = std::size_t{2} << 20;

/// Nothing is populated until the building thread has started this many blocks (128 MiB): a
/// small state (a demo, a fresh project) is built in no time anyway, and the blocks faulted in
/// ahead would only stay resident, unused.
constexpr std::size_t start_after_blocks = 4;

/// How far past the highest started block a pass looks for newly started ones.
constexpr std::size_t scan_window = 16;

/// How long the thread waits when a pass found nothing to do. At the rate a replay takes new
/// memory (under 1 GB/s) this is under 2 MB; the blocks ahead are 64 MiB.
constexpr auto idle_wait = std::chrono::milliseconds(2);

/// COBBLE_PREFAULT=0 turns prefaulters off (to measure without them).
bool disabled_by_environment() {
  const char* v = std::getenv("COBBLE_PREFAULT");
  return v != nullptr && std::string_view{v} == "0";
}

arena_range the_arena;
std::once_flag arena_once;

} // namespace

arena_range reserve_arena(std::size_t bytes) {
  std::call_once(arena_once, [bytes]() mutable {
    if (bytes == 0) {
      auto pages = sysconf(_SC_PHYS_PAGES);
      auto page = sysconf(_SC_PAGESIZE);
      if (pages <= 0 || page <= 0)
        return;
      bytes = static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
    }
    bytes -= bytes % arena_block_bytes;
    if (bytes < 4 * arena_block_bytes)
      return;
    // mimalloc needs the arena aligned to its block size: map one block more and trim.
    auto total = bytes + arena_block_bytes;
    void* raw = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
      return;
    auto first = reinterpret_cast<std::uintptr_t>(raw);
    auto aligned = (first + arena_block_bytes - 1) / arena_block_bytes * arena_block_bytes;
    if (aligned > first)
      munmap(raw, aligned - first);
    auto tail = first + total - (aligned + bytes);
    if (tail > 0)
      munmap(reinterpret_cast<void*>(aligned + bytes), tail);
    auto* start = reinterpret_cast<char*>(aligned);
    // Transparent huge pages are opt-in (madvise) on our machines; follow mimalloc's setting.
    if (mi_option_is_enabled(mi_option_large_os_pages))
      madvise(start, bytes, MADV_HUGEPAGE);
    // Not committed: mimalloc then counts and returns (decommits) freed blocks as it does
    // for memory of its own; committed arenas keep everything resident for good. Exclusive:
    // other threads' heaps stay out, so a prefaulter populates only what the building thread
    // fills.
    mi_arena_id_t id = -1;
    if (!mi_manage_os_memory_ex(start, bytes, /*is_committed=*/false, /*is_large=*/false,
                                /*is_zero=*/true, /*numa_node=*/-1, /*exclusive=*/true, &id)) {
      munmap(start, bytes);
      return;
    }
    the_arena = arena_range{start, bytes, id};
  });
  return the_arena;
}

arena_range reserved_arena() {
  return the_arena;
}

prefaulter::prefaulter(std::size_t blocks_ahead, bool threaded)
  : arena_(reserved_arena()), ahead_(std::max<std::size_t>(blocks_ahead, 1)) {
  if (arena_.start == nullptr || disabled_by_environment())
    return;
  blocks_ = arena_.bytes / arena_block_bytes;
  done_.assign(blocks_, false); // before the switch: the bookkeeping stays out of the arena
  auto* heap = mi_heap_new_in_arena(arena_.id);
  if (heap == nullptr)
    return;
  heap_ = heap;
  previous_heap_ = mi_heap_set_default(heap);
  active_.store(true);
  if (threaded)
    thread_ = std::thread([this] { run(); });
}

prefaulter::~prefaulter() {
  stop();
}

void prefaulter::stop() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
  if (heap_ != nullptr) {
    mi_heap_set_default(static_cast<mi_heap_t*>(previous_heap_));
    // What was built stays where it is; its pages now belong to the default heap.
    mi_heap_delete(static_cast<mi_heap_t*>(heap_));
    heap_ = nullptr;
  }
}

bool prefaulter::header_resident(std::size_t block) const {
  unsigned char in_core = 0;
  auto* header = arena_.start + block * arena_block_bytes;
  return mincore(header, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), &in_core) == 0
         && (in_core & 1) != 0;
}

bool prefaulter::step() {
  if (!active_)
    return false;
  auto started = started_.load(std::memory_order_relaxed);
  auto scan_end = std::min(blocks_, started + scan_window);
  for (auto b = started; b < scan_end; ++b)
    if (header_resident(b))
      started = b + 1;
  started_.store(started, std::memory_order_relaxed);
  if (started < start_after_blocks)
    return false; // a small state so far (and none at all shows where mimalloc will start)
  bool did = false;
  auto limit = std::min(blocks_, started + ahead_);
  for (auto b = next_todo_; b < limit; ++b) {
    if (done_[b])
      continue;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (stopping_)
        break;
    }
    done_[b] = true;
    auto* from = arena_.start + b * arena_block_bytes + header_bytes;
    if (madvise(from, arena_block_bytes - header_bytes, MADV_POPULATE_WRITE) != 0
        && (errno == EINVAL || errno == ENOMEM)) {
      // EINVAL: the kernel predates MADV_POPULATE_WRITE; ENOMEM: memory is short, and
      // faulting in pages ahead of need would only make it shorter.
      active_.store(false);
      return did;
    }
    populated_.fetch_add(arena_block_bytes - header_bytes, std::memory_order_relaxed);
    did = true;
  }
  while (next_todo_ < blocks_ && done_[next_todo_])
    ++next_todo_;
  return did;
}

void prefaulter::run() {
  for (;;) {
    bool did = step();
    std::unique_lock<std::mutex> lock{mtx_};
    if (stopping_ || !active_)
      return;
    if (!did)
      cv_.wait_for(lock, idle_wait, [this] { return stopping_; });
  }
}

} // namespace cobble::heap
