#include "storage/error.hpp"

#include <caf/sec.hpp>

#include <catch2/catch.hpp>

using namespace cobble::storage;

TEST_CASE("storage errors compare by code and render without an actor system", "[storage][error]") {
  auto e = make_error(ec::corruption, "event 42: checksum mismatch");
  CHECK(e == ec::corruption);
  CHECK(e != ec::not_found);
  CHECK(e.category() == caf::atom("storage"));
  CHECK(describe(e) == "storage corruption: event 42: checksum mismatch");
  CHECK(describe(make_error(ec::not_found, "snapshot 7: not found"))
        == "storage not found: snapshot 7: not found");
  CHECK(describe(caf::error{ec::io_error}) == "storage io error");
  CHECK(describe(caf::make_error(ec::unsupported_format, "version", 7))
        == "storage unsupported format: version, 7");
  CHECK(describe(caf::error{}) == "no error");
  CHECK(describe(caf::make_error(caf::sec::request_timeout)) == "system request_timeout");
  CHECK(std::string{to_string(ec::invalid_argument)} == "invalid_argument");
}
