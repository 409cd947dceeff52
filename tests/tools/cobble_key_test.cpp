// `cobble key generate|sign|verify` as a child process: the key files an operator keeps, the
// signatures a BOINC client checks, and what a wrong key or a changed file gets.

#include "actors/code_sign.hpp"
#include "storage/file_store.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

using namespace cobble;
namespace fs = std::filesystem;

namespace {

std::pair<int, std::string> cobble_cli(std::vector<std::string> args) {
  args.insert(args.begin(), test::program("tools/cobble"));
  return test::run_command(std::move(args), std::chrono::seconds{60});
}

std::string slurp(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << text;
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 0777U;
}

} // namespace

TEST_CASE("cobble key generate writes a BOINC key pair once and keeps the private one private",
          "[cli][key]") {
  test::temp_dir dir;
  auto keys = dir.path() / "keys";
  auto [code, out] = cobble_cli({"key", "generate", "--out", keys.string()});
  REQUIRE(code == 0);
  CHECK_THAT(out, Catch::Contains("keep it offline"));
  auto priv = slurp(keys / "code_sign_private");
  auto pub = slurp(keys / "code_sign_public");
  CHECK(mode_of(keys / "code_sign_private") == 0600U);
  CHECK(mode_of(keys / "code_sign_public") == 0644U);
  // BOINC's text form: the bit count, then hex lines, then a line ".".
  CHECK(priv.rfind("1024\n", 0) == 0);
  CHECK(pub.rfind("1024\n", 0) == 0);
  CHECK(pub.size() > 3);
  CHECK(pub.substr(pub.size() - 2) == ".\n");
  auto derived = public_code_sign_key(priv);
  REQUIRE(derived);
  CHECK(strip_key_text(*derived) == strip_key_text(pub));

  SECTION("a second generate refuses and leaves both keys as they were") {
    auto [again, why] = cobble_cli({"key", "generate", "--out", keys.string()});
    CHECK(again == 1);
    CHECK_THAT(why, Catch::Contains("code_sign_private exists"));
    CHECK(slurp(keys / "code_sign_private") == priv);
    CHECK(slurp(keys / "code_sign_public") == pub);
  }
  SECTION("without --out it is a usage error and writes nothing") {
    auto [usage, why] = cobble_cli({"key", "generate"});
    CHECK(usage == 2);
    CHECK_THAT(why, Catch::Contains("--out"));
  }
}

TEST_CASE("cobble key sign writes signatures a client's check accepts, and verify says so",
          "[cli][key]") {
  test::temp_dir dir;
  auto keys = dir.path() / "keys";
  REQUIRE(cobble_cli({"key", "generate", "--out", keys.string()}).first == 0);
  auto priv = (keys / "code_sign_private").string();
  auto pub = (keys / "code_sign_public").string();
  auto app = dir.path() / "worker_1.0_x86_64-pc-linux-gnu";
  auto lib = dir.path() / "libworker.so";
  spit(app, "#!/bin/sh\necho worker\n");
  spit(lib, std::string(5000, 'x'));

  auto [code, out] = cobble_cli({"key", "sign", app.string(), lib.string(), "--key", priv});
  REQUIRE(code == 0);
  for (const auto& f : {app, lib}) {
    auto sig = slurp(f.string() + ".sig");
    auto md5 = storage::md5_of_file(f.string());
    REQUIRE(md5);
    CHECK_THAT(out, Catch::Contains(*md5));
    CHECK_FALSE(verify_md5(slurp(pub), *md5, sig));
    auto [ok, said] = cobble_cli({"key", "verify", f.string(), "--public", pub});
    CHECK(ok == 0);
    CHECK_THAT(said, Catch::Contains("signature OK"));
  }

  SECTION("a file changed after signing does not verify") {
    spit(app, "#!/bin/sh\necho something else\n");
    auto [bad, why] = cobble_cli({"key", "verify", app.string(), "--public", pub});
    CHECK(bad == 1);
    CHECK_THAT(why, Catch::Contains("other content"));
  }
  SECTION("another project's key does not verify the signature") {
    auto other = dir.path() / "other";
    REQUIRE(cobble_cli({"key", "generate", "--out", other.string()}).first == 0);
    auto [bad, why] = cobble_cli(
      {"key", "verify", app.string(), "--public", (other / "code_sign_public").string()});
    CHECK(bad == 1);
    CHECK_THAT(why, Catch::Contains("does not verify"));
  }
  SECTION("--signature names a signature kept elsewhere") {
    auto moved = dir.path() / "moved.sig";
    fs::rename(lib.string() + ".sig", moved);
    auto [ok, said] = cobble_cli(
      {"key", "verify", lib.string(), "--public", pub, "--signature", moved.string()});
    CHECK(ok == 0);
    auto [missing, why] = cobble_cli({"key", "verify", lib.string(), "--public", pub});
    CHECK(missing == 1);
    CHECK_THAT(why, Catch::Contains("cannot read signature"));
  }
  SECTION("--new-key signs the next key's text, as the server checks a key change") {
    auto next = dir.path() / "next";
    REQUIRE(cobble_cli({"key", "generate", "--out", next.string()}).first == 0);
    auto next_pub = next / "code_sign_public";
    auto [ok, said] = cobble_cli({"key", "sign", "--new-key", next_pub.string(), "--key", priv});
    REQUIRE(ok == 0);
    auto text = canonical_public_key(slurp(next_pub));
    REQUIRE(text);
    CHECK_FALSE(verify_text(slurp(pub), *text, slurp(next_pub.string() + ".sig")));
    // A file that is no public key is refused.
    auto [bad, why] = cobble_cli({"key", "sign", "--new-key", app.string(), "--key", priv});
    CHECK(bad == 1);
    CHECK_THAT(why, Catch::Contains("not a BOINC public key"));
  }
  SECTION("the public key given as --key is refused before any signature is written") {
    auto fresh = dir.path() / "fresh.bin";
    spit(fresh, "data");
    auto [bad, why] = cobble_cli({"key", "sign", fresh.string(), "--key", pub});
    CHECK(bad == 1);
    CHECK_THAT(why, Catch::Contains("this is a public key"));
    CHECK_FALSE(fs::exists(fresh.string() + ".sig"));
  }
  SECTION("a missing file or --key is a usage error") {
    CHECK(cobble_cli({"key", "sign", app.string()}).first == 2);
    CHECK(cobble_cli({"key", "sign", (dir.path() / "absent").string(), "--key", priv}).first == 2);
  }
}
