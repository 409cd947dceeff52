#include "tools/heap.hpp"
#include "tools/prefault.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

using namespace cobble;

namespace {

constexpr std::size_t header = std::size_t{2} << 20; // left to mimalloc (tools/prefault.cpp)

/// How many bytes of [from, from + bytes) are resident.
std::size_t resident(const char* from, std::size_t bytes) {
  auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  REQUIRE(mincore(const_cast<char*>(from), bytes, in_core.data()) == 0);
  std::size_t n = 0;
  for (auto c : in_core)
    n += (c & 1) != 0 ? page : 0;
  return n;
}

const char* block_start(const heap::arena_range& a, std::size_t block) {
  return a.start + block * heap::arena_block_bytes;
}

/// Small records, each filled with a pattern from its index, as a replay makes them.
struct records {
  static constexpr std::size_t size = 200;
  std::vector<std::unique_ptr<char[]>> all;

  void add() {
    auto r = std::make_unique<char[]>(size);
    std::memset(r.get(), static_cast<int>(all.size() % 251), size);
    all.push_back(std::move(r));
  }

  /// The index of the first record whose bytes changed, or all.size().
  std::size_t first_damaged() const {
    for (std::size_t i = 0; i < all.size(); ++i)
      for (std::size_t j = 0; j < size; ++j)
        if (all[i][j] != static_cast<char>(i % 251))
          return i;
    return all.size();
  }
};

} // namespace

// The test process gets the arena as the programs do, before its big allocations. 1 GiB of
// address space (32 blocks) is plenty here and reserves no memory.
TEST_CASE("a prefaulter faults in the blocks ahead of mimalloc, and no further", "[tools][heap]") {
  heap::use_huge_pages();
  auto arena = heap::reserve_arena(std::size_t{1} << 30);
  REQUIRE(arena.start != nullptr);
  CHECK(arena.bytes == (std::size_t{1} << 30));
  CHECK(heap::reserved_arena().start == arena.start);
  CHECK(reinterpret_cast<std::uintptr_t>(arena.start) % heap::arena_block_bytes == 0);

  heap::prefaulter pf{2, false};
  REQUIRE(pf.active());
  CHECK_FALSE(pf.step()); // nothing taken from the arena yet: nothing to go by
  CHECK(pf.populated_bytes() == 0);

  // A small state is left alone: nothing is faulted in ahead of its first blocks.
  records recs;
  for (int i = 0; i < 2'000'000 && pf.started_blocks() == 0; ++i) {
    recs.add();
    if (i % 10'000 == 0)
      pf.step();
  }
  REQUIRE(pf.started_blocks() >= 1);
  CHECK(pf.populated_bytes() == 0);
  CHECK(resident(block_start(arena, 1) + header, heap::arena_block_bytes - header) == 0);
  // A growing one gets the blocks ahead of it once it has started four (128 MiB).
  for (int i = 0; i < 4'000'000 && pf.started_blocks() < 4; ++i) {
    recs.add();
    if (i % 10'000 == 0)
      pf.step();
  }
  REQUIRE(pf.started_blocks() >= 4);
  auto started = pf.started_blocks();
  pf.step();
  // The block being filled and the two after it are populated, past their header pages.
  for (auto b = started; b < started + 2; ++b) {
    INFO("block " << b << " of the arena, " << started << " started");
    CHECK(resident(block_start(arena, b) + header, heap::arena_block_bytes - header)
          == heap::arena_block_bytes - header);
  }
  CHECK(pf.populated_bytes() >= 2 * (heap::arena_block_bytes - header));
  // Nothing beyond: resident memory grows by at most the blocks ahead.
  auto beyond = block_start(arena, started + 2);
  CHECK(resident(beyond, arena.start + arena.bytes - beyond) == 0);

  // mimalloc goes on into the populated blocks, and every record keeps its bytes.
  while (pf.started_blocks() < started + 1) {
    for (int i = 0; i < 10'000; ++i)
      recs.add();
    pf.step();
  }
  CHECK(recs.first_damaged() == recs.all.size());
  // The arena holds the new records.
  auto* last = recs.all.back().get();
  CHECK(last >= arena.start);
  CHECK(last < arena.start + arena.bytes);
}

TEST_CASE("records built while a prefaulter thread runs keep their bytes, and it stops when told",
          "[tools][heap]") {
  heap::use_huge_pages();
  auto arena = heap::reserve_arena(std::size_t{1} << 30);
  REQUIRE(arena.start != nullptr);
  records recs;
  {
    heap::prefaulter pf;
    REQUIRE(pf.active());
    for (int i = 0; i < 600'000; ++i) // about 150 MB with mimalloc's size classes
      recs.add();
    CHECK(recs.all.back().get() >= arena.start);
    CHECK(recs.all.back().get() < arena.start + arena.bytes);
    // Other threads keep their memory out of the arena, so the prefaulter faults in nothing
    // of theirs.
    const char* other = nullptr;
    std::thread([&other] {
      auto* p = new char[200];
      other = p;
      delete[] p;
    }).join();
    CHECK((other < arena.start || other >= arena.start + arena.bytes));
    pf.stop();
    auto populated = pf.populated_bytes();
    pf.stop(); // a second stop is harmless
    CHECK(pf.populated_bytes() == populated);
  }
  CHECK(recs.first_damaged() == recs.all.size());
}
