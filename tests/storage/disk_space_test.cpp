#include "../support/temp_dir.hpp"
#include "storage/disk_space.hpp"
#include "storage/error.hpp"

#include <catch2/catch.hpp>

#include <cstdint>

using cobble::storage::disk_space;
using cobble::test::temp_dir;

TEST_CASE("the free space is low below the watermark, and 0 turns the watermark off",
          "[storage][disk]") {
  temp_dir dir{"disk-space"};
  disk_space off{dir.path(), 0};
  REQUIRE_FALSE(off.check());
  CHECK(off.free_bytes() > 0);
  CHECK_FALSE(off.low());

  disk_space tiny{dir.path(), 1};
  REQUIRE_FALSE(tiny.check());
  CHECK_FALSE(tiny.low());

  // More than any disk has free: low, and the message says by how much.
  disk_space huge{dir.path(), UINT64_MAX / 4};
  CHECK_FALSE(huge.low()); // nothing read yet
  REQUIRE_FALSE(huge.check());
  CHECK(huge.low());
  CHECK(huge.free_bytes() < huge.min_free());
  auto what = huge.describe();
  CHECK_THAT(what, Catch::Contains(std::to_string(huge.free_bytes()) + " bytes free on "
                                   + dir.path().string()));
  CHECK_THAT(what, Catch::Contains("below server.min_free_disk (" + std::to_string(UINT64_MAX / 4)
                                   + " bytes)"));
}

TEST_CASE("a free-space reading that fails names the path and keeps the last reading",
          "[storage][disk]") {
  temp_dir dir{"disk-space-gone"};
  disk_space d{dir.path() / "missing", 1};
  auto err = d.check();
  REQUIRE(err);
  CHECK_THAT(cobble::storage::describe(err), Catch::Contains("statvfs"));
  CHECK_THAT(cobble::storage::describe(err), Catch::Contains("missing"));
  CHECK_FALSE(d.low());
}
