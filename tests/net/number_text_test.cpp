/// Tests of net/number_text: figures as the site's pages write them.

#include "net/number_text.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace cobble::net;

TEST_CASE("counts group thousands", "[number_text]") {
  CHECK(count_text(0) == "0");
  CHECK(count_text(999) == "999");
  CHECK(count_text(1000) == "1,000");
  CHECK(count_text(1234567) == "1,234,567");
  CHECK(grouped("123456") == "123,456");
}

TEST_CASE("credit has two decimals when small and groups thousands when large", "[number_text]") {
  CHECK(credit_text(0) == "0.00");
  CHECK(credit_text(12.345) == "12.35");
  CHECK(credit_text(99.994) == "99.99");
  CHECK(credit_text(100) == "100");
  CHECK(credit_text(1234567.8) == "1,234,568");
  // Nothing a page could print as "-3.00", "nan" or "inf".
  CHECK(credit_text(-3) == "0.00");
  CHECK(credit_text(std::numeric_limits<double>::quiet_NaN()) == "0.00");
  CHECK(credit_text(std::numeric_limits<double>::infinity()) == "0.00");
}
