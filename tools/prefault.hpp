#pragma once

/// Faulting the heap in on a second core while one thread builds a large state (recovery,
/// `cobble log replay`).
///
/// Building the state of a big project touches gigabytes of new heap, and the first write to
/// each new page is a page fault in which the kernel zeroes the page. On the VMs we measure
/// on, the hypervisor also has to back the page first (the guest hands freed memory back to
/// the host, "free page reporting"), which makes a first touch cost about 3 s per GB: half or
/// more of a replay was spent there, on the one thread that replays (docs/performance.md).
///
/// The faults of pages that nobody uses yet can be taken by another thread. The heap gets an
/// arena of address space up front (`reserve_arena`), a mimalloc arena of its own that only
/// the building thread allocates from while a `prefaulter` lives (the prefaulter gives that
/// thread a heap in the arena). mimalloc hands out the arena's 32 MiB blocks from the lowest
/// free one up; the prefaulter's thread watches which blocks mimalloc has started (it writes a
/// segment header at the start of each block) and populates the rest of those blocks and of
/// the next few with MADV_POPULATE_WRITE, so the building thread mostly finds its pages
/// there. It never writes to the memory (populating is a fault without a store), so it cannot
/// disturb what the allocator put there. Because no other thread's memory is in the arena,
/// what is faulted in ahead and then not used stays bounded by `blocks_ahead` blocks.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace cobble::heap {

/// The block size of mimalloc 2.0's arenas (its segment size): blocks start on multiples of it
/// from the arena's start.
inline constexpr std::size_t arena_block_bytes = std::size_t{32} << 20;

/// The arena made by reserve_arena(): its first byte and size (both 0 when there is none).
struct arena_range {
  char* start = nullptr;
  std::size_t bytes = 0;
  int id = -1; ///< mimalloc's arena id.
};

/// Reserves `bytes` of address space (default: the machine's physical memory) without
/// committing any of it and gives it to mimalloc as an exclusive arena: only heaps made for it
/// (a prefaulter's) allocate there. Call once, early in main() (after use_huge_pages());
/// later calls return the first arena. The arena is empty if the reservation failed (then
/// prefaulters do nothing).
arena_range reserve_arena(std::size_t bytes = 0);

/// The arena reserved by reserve_arena(), if any.
arena_range reserved_arena();

/// While alive, the constructing thread allocates in the arena (a heap of its own made its
/// default; at stop() or destruction, which must run on that thread, the default is restored
/// and what the heap holds moves to it), and arena blocks are populated just ahead of
/// mimalloc, on a thread of its own (or by explicit step() calls when constructed with
/// `threaded = false`, for tests). Does nothing when there is no arena, when the kernel lacks
/// MADV_POPULATE_WRITE (Linux < 5.14), or when the environment sets COBBLE_PREFAULT=0.
class prefaulter {
public:
  explicit prefaulter(std::size_t blocks_ahead = 2, bool threaded = true);
  ~prefaulter();
  prefaulter(const prefaulter&) = delete;
  prefaulter& operator=(const prefaulter&) = delete;

  /// One pass: finds the blocks mimalloc started since the last pass and, once the state has
  /// started four blocks (128 MiB; smaller ones are left alone), populates what is not yet
  /// populated below (highest started block + 1 + blocks_ahead). Returns whether it populated
  /// anything.
  bool step();

  /// Stops and joins the thread and gives the constructing thread its default heap back (the
  /// destructor does it too). Call on the constructing thread.
  void stop();

  /// Bytes populated so far (read from any thread).
  std::size_t populated_bytes() const { return populated_.load(std::memory_order_relaxed); }

  /// 1 + the highest block seen started by mimalloc (0 before any).
  std::size_t started_blocks() const { return started_.load(std::memory_order_relaxed); }

  /// False when the prefaulter cannot work here (no arena, or an old kernel).
  bool active() const { return active_.load(std::memory_order_relaxed); }

private:
  void run();
  bool header_resident(std::size_t block) const;

  arena_range arena_;
  std::size_t blocks_ = 0;
  std::size_t ahead_;
  std::atomic<bool> active_{false};
  std::vector<bool> done_;    ///< Blocks populated (touched by step() only).
  std::size_t next_todo_ = 0; ///< No block below this is left to populate.
  std::atomic<std::size_t> started_{0};
  std::atomic<std::size_t> populated_{0};

  std::mutex mtx_;
  std::condition_variable cv_;
  bool stopping_ = false; ///< Guarded by mtx_.
  std::thread thread_;
  void* heap_ = nullptr;          ///< The building thread's heap in the arena (mi_heap_t*).
  void* previous_heap_ = nullptr; ///< Its default heap before.
};

} // namespace cobble::heap
