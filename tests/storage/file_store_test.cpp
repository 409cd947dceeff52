/// Tests of storage/file_store: staging content-addressed files and finding them again.

#include "../support/temp_dir.hpp"
#include "storage/error.hpp"
#include "storage/file_store.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

using namespace cobble;

TEST_CASE("staged files are found with the size and MD5 on disk", "[storage][files]") {
  test::temp_dir dir{"file-store"};
  storage::file_store store{dir.path()};
  auto input = store.stage("demo", "hello");
  REQUIRE(input);
  CHECK(input->name == "in_" + input->md5);
  CHECK(input->md5 == storage::md5_hex("hello"));
  auto app = store.stage("demo", "hello", "app_");
  REQUIRE(app);
  CHECK(app->name == "app_" + input->md5);
  CHECK_FALSE(app->existed); // another name: another file, which workunits never delete

  auto found = store.find_staged("demo", app->name);
  REQUIRE(found);
  CHECK(found->nbytes == 5);
  CHECK(found->md5 == app->md5);

  // Bytes changed behind the server's back show as they are.
  std::ofstream{store.download_dir("demo") / app->name} << "tampered";
  found = store.find_staged("demo", app->name);
  REQUIRE(found);
  CHECK(found->md5 == storage::md5_hex("tampered"));

  auto missing = store.find_staged("demo", "app_nothing");
  REQUIRE_FALSE(missing);
  CHECK(missing.error() == storage::ec::not_found);
  auto unsafe = store.find_staged("demo", "../log");
  REQUIRE_FALSE(unsafe);
  CHECK(unsafe.error() == storage::ec::invalid_argument);
  std::filesystem::create_directory(store.download_dir("demo") / "app_dir");
  CHECK_FALSE(store.find_staged("demo", "app_dir"));
}
