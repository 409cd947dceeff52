#include "tools/heap.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

using namespace cobble;

// The programs link cobble_heap as this test does: malloc must then be mimalloc's, or
// recovery and replay fall back to glibc's malloc in small pages without anyone noticing.
TEST_CASE("linking cobble_heap puts malloc on mimalloc with huge pages", "[tools][heap]") {
  CHECK(heap::malloc_is_mimalloc());
  heap::use_huge_pages();
  auto what = heap::describe();
  CHECK_THAT(what, Catch::StartsWith("mimalloc 2."));
  CHECK_THAT(what, !Catch::Contains("not in use"));
  if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr)
    CHECK_THAT(what, Catch::Contains("large OS pages on"));
}
