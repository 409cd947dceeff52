#include "config/units.hpp"

#include <catch2/catch.hpp>

using namespace cobble::config;

TEST_CASE("sizes: plain numbers and suffixes", "[config][units]") {
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("4096") == 4096);
  CHECK(parse_size("1e8") == 1e8);
  CHECK(parse_size("12B") == 12);
  CHECK(parse_size("4K") == 4000);
  CHECK(parse_size("4kb") == 4000);
  CHECK(parse_size("4KiB") == 4096);
  CHECK(parse_size("4M") == 4e6);
  CHECK(parse_size("4MB") == 4e6);
  CHECK(parse_size("4MiB") == 4 * 1024 * 1024);
  CHECK(parse_size("4 mib") == 4 * 1024 * 1024);
  CHECK(parse_size("2G") == 2e9);
  CHECK(parse_size("2GiB") == 2.0 * 1024 * 1024 * 1024);
  CHECK(parse_size("1TiB") == 1024.0 * 1024 * 1024 * 1024);
  CHECK(parse_size("1.5KiB") == 1536);
  CHECK(parse_size(" 7 ") == 7);
  CHECK(parse_size("-1") == -1); // sign is the caller's business
}

TEST_CASE("sizes: malformed text is refused", "[config][units]") {
  for (auto bad : {"", "abc", "4X", "4 MiBs", "MiB", "inf", "nan", "4e", "1..2", "4 M i B"})
    CHECK_FALSE(parse_size(bad).has_value());
}

TEST_CASE("durations: seconds and suffixes", "[config][units]") {
  CHECK(parse_duration("30") == 30);
  CHECK(parse_duration("30s") == 30);
  CHECK(parse_duration("5m") == 300);
  CHECK(parse_duration("2h") == 7200);
  CHECK(parse_duration("7d") == 7 * 86400);
  CHECK(parse_duration("0.5s") == 0.5);
  CHECK(parse_duration("1.5m") == 90);
  CHECK(parse_duration("10 s") == 10);
  for (auto bad : {"", "s", "5x", "5ms", "5M", "5H", "five", "inf"})
    CHECK_FALSE(parse_duration(bad).has_value());
}

TEST_CASE("formatting reads back exactly", "[config][units]") {
  CHECK(format_size(4 * 1024 * 1024) == "4MiB");
  CHECK(format_size(1536) == "1536");
  CHECK(format_size(3 * 512 * 1024) == "1536KiB");
  CHECK(format_size(1000) == "1K");
  CHECK(format_size(64e6) == "64M");
  CHECK(format_size(1e8) == "100M");
  CHECK(format_size(1001) == "1001");
  CHECK(format_duration(300) == "5m");
  CHECK(format_duration(7 * 86400) == "7d");
  CHECK(format_duration(30) == "30s");
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(0.25) == "0.25s");
  for (double v : {0.0, 1.0, 1536.0, 64e6, 1e8, 3.6e12, 123456789.0, 0.1})
    CHECK(parse_size(format_size(v)) == v);
  for (double v : {0.0, 0.1, 5.0, 90.0, 300.0, 3600.0, 86400.0 * 7, 12345.5})
    CHECK(parse_duration(format_duration(v)) == v);
}
