// cobbled's start-up output: account keys are secrets, printed only for the embedded demo.

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

using namespace cobble::test;

namespace {

bool any_line_has(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

} // namespace

TEST_CASE("the embedded demo prints the demo user's account key, and it is the real one") {
  temp_dir dir;
  server s{dir.path() / "data"};
  auto lines = s.proc->lines();
  INFO(server::join(lines));
  auto printed = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("account key of user demo: ") != std::string::npos;
  });
  REQUIRE(printed != lines.end());
  CHECK(printed->substr(printed->rfind(' ') + 1) == s.account_key);
  CHECK(s.stop() == 0);
}

TEST_CASE("with --config cobbled prints no account key and says where to find them") {
  temp_dir dir;
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                        "    users: [{name: demo}, {name: alice}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  server s{dir.path() / "data", {"--config", cfg.string()}};
  auto alice = account_key_of(s.port, s.token, "demo", "alice");
  REQUIRE(!alice.empty());
  auto lines = s.proc->lines();
  INFO(server::join(lines));
  CHECK_FALSE(any_line_has(lines, "account key of user"));
  CHECK_FALSE(any_line_has(lines, s.account_key));
  CHECK_FALSE(any_line_has(lines, alice));
  CHECK(any_line_has(lines, "cobble user list"));
  CHECK(s.stop() == 0);
}
