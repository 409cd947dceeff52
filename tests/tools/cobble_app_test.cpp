// `cobble key add|list` and `cobble app ...` against a real cobbled (127.0.0.1, port 0): an
// operator gives the server a key, adds an app and signed versions while it runs, deprecates
// one, and reads the story back offline with `cobble log replay --entity app:NAME`.

#include "../support/cobbled.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <utility>
#include <vector>

using namespace cobble::test;
namespace fs = std::filesystem;

namespace {

/// `cobble` with `args`; {exit code, stdout and stderr}.
std::pair<int, std::string> cobble_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv{program("tools/cobble")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(std::move(argv), std::chrono::seconds{60});
}

/// `cobble --server URL --token T args...` for server `s`.
std::pair<int, std::string> online(const server& s, std::vector<std::string> args) {
  args.insert(args.begin(),
              {"--server", "http://127.0.0.1:" + std::to_string(s.admin_port), "--token", s.token});
  return cobble_cli(args);
}

void write_program(const fs::path& p, const std::string& text) {
  std::ofstream{p, std::ios::binary | std::ios::trunc} << text;
  fs::permissions(p, fs::perms::owner_all);
}

} // namespace

TEST_CASE("an operator adds a key, an app and signed versions with cobble", "[integration][cli]") {
  temp_dir dir{"cobble-app"};
  temp_dir offline{"cobble-app-keys"};
  // A project of the operator's (the embedded demo signs its own app with a key of its own).
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                        "    users: [{name: demo}]\n"
                        "    apps: [{name: testapp}]\n";
  server s{dir.path() / "data", {"--config", cfg.string()}};
  auto keys = offline.path() / "keys";
  REQUIRE(cobble_cli({"key", "generate", "--out", keys.string()}).first == 0);
  auto priv = (keys / "code_sign_private").string();
  auto pub = (keys / "code_sign_public").string();

  // No key yet: a version cannot be signed for the server.
  auto none = online(s, {"key", "list"});
  CHECK(none.first == 0);
  CHECK(none.second.find("no (first key)") == std::string::npos);

  auto added = online(s, {"key", "add", pub, "--by", "alice"});
  INFO(added.second);
  REQUIRE(added.first == 0);
  CHECK_THAT(added.second, Catch::Contains("key 1 is the project's code-signing key"));
  CHECK_THAT(online(s, {"key", "add", pub}).second, Catch::Contains("nothing changed"));
  auto listed = online(s, {"key", "list"});
  CHECK_THAT(listed.second, Catch::Matches("[\\s\\S]*1 +\\S+ \\S+ +no \\(first key\\) +yes\\s*"));

  // A key that is not signed with the current one is refused by the server.
  auto other = offline.path() / "other";
  REQUIRE(cobble_cli({"key", "generate", "--out", other.string()}).first == 0);
  auto refused = online(s, {"key", "add", (other / "code_sign_public").string()});
  CHECK(refused.first == 1);
  CHECK_THAT(refused.second, Catch::Contains("signed with the current private key"));

  auto app = online(s, {"app", "add", "newapp", "--output", "out", "--min-quorum", "1",
                        "--target-nresults", "1", "--friendly-name", "New App"});
  INFO(app.second);
  REQUIRE(app.first == 0);
  CHECK_THAT(app.second, Catch::Contains("app newapp (id 2)"));
  CHECK(online(s, {"app", "add", "Bad Name"}).first == 1);
  CHECK(online(s, {"app", "add", "x", "--validator", "majority"}).first == 2);

  // Signed here with --key, staged, named by the version.
  auto prog = offline.path() / "newapp_1.01";
  write_program(prog, "#!/bin/sh\necho hello > out\n");
  std::vector<std::string> version{"app",           "add-version",
                                   "newapp",        prog.string() + ":newapp",
                                   "--platform",    "x86_64-pc-linux-gnu",
                                   "--version-num", "101",
                                   "--key",         priv};
  auto v1 = online(s, version);
  INFO(v1.second);
  REQUIRE(v1.first == 0);
  CHECK_THAT(v1.second, Catch::Contains("staged " + prog.string() + " as app_"));
  CHECK_THAT(v1.second, Catch::Contains("of newapp (x86_64-pc-linux-gnu 101)"));
  auto again = online(s, version);
  CHECK(again.first == 0);
  CHECK_THAT(again.second, Catch::Contains("(already there)"));
  CHECK_THAT(again.second, Catch::Contains("nothing changed"));

  // Without --key the signature comes from FILE.sig; none there is named before anything is
  // sent, and a signature by another key is refused by the server.
  auto prog2 = offline.path() / "newapp_1.02";
  write_program(prog2, "#!/bin/sh\necho hello again > out\n");
  std::vector<std::string> v2{"app",           "add-version",
                              "newapp",        prog2.string() + ":newapp",
                              "--platform",    "x86_64-pc-linux-gnu",
                              "--version-num", "102"};
  auto unsigned_version = online(s, v2);
  CHECK(unsigned_version.first == 1);
  CHECK_THAT(unsigned_version.second, Catch::Contains("no signature " + prog2.string() + ".sig"));
  REQUIRE(
    cobble_cli({"key", "sign", prog2.string(), "--key", (other / "code_sign_private").string()}).first
    == 0);
  auto forged = online(s, v2);
  CHECK(forged.first == 1);
  CHECK_THAT(forged.second, Catch::Contains("does not verify"));
  REQUIRE(cobble_cli({"key", "sign", prog2.string(), "--key", priv}).first == 0);
  auto signed_version = online(s, v2);
  INFO(signed_version.second);
  REQUIRE(signed_version.first == 0);

  auto usage = online(s, {"app", "add-version", "newapp", prog2.string(), "--version-num", "103"});
  CHECK(usage.first == 2);
  auto no_main = online(s, {"app", "add-version", "newapp", prog2.string(), "--platform", "p",
                            "--version-num", "103", "--main", "nope", "--key", priv});
  CHECK(no_main.first == 2);
  CHECK_THAT(no_main.second, Catch::Contains("--main nope is none of the files' open names"));
  CHECK(online(s, {"app", "add-version", "newapp", prog2.string(), "--platform", "p",
                   "--version-num", "103", "--resource", "nvidia", "--key", priv})
          .first
        == 2);
  CHECK(online(s, {"app", "add-version", "nope", prog.string(), "--platform", "p", "--version-num",
                   "1", "--key", priv})
          .first
        == 1);

  auto shown = online(s, {"app", "show", "newapp"});
  INFO(shown.second);
  REQUIRE(shown.first == 0);
  CHECK_THAT(shown.second, Catch::Contains("app newapp (id 2): New App"));
  CHECK_THAT(shown.second, Catch::Contains("quorum 1 of 1"));
  CHECK_THAT(shown.second, Catch::Matches("[\\s\\S]*x86_64-pc-linux-gnu +101 +- +CPU +1 +offered"
                                          "[\\s\\S]*x86_64-pc-linux-gnu +102 +- +CPU +1 "
                                          "+offered[\\s\\S]*"));
  CHECK(online(s, {"app", "show", "nope"}).first == 1);
  CHECK_THAT(online(s, {"app", "list"}).second, Catch::Contains("newapp"));

  // The version ids are the project's: the first added one is deprecated, then offered again.
  auto json = nlohmann::json::parse(online(s, {"--json", "app", "show", "newapp"}).second);
  auto id = json.at("versions").at(0).at("id").get<int>();
  CHECK(json.at("versions").at(0).at("files").at(0).at("executable") == true);
  auto dep = online(s, {"app", "deprecate-version", "newapp", std::to_string(id)});
  CHECK(dep.first == 0);
  CHECK_THAT(dep.second, Catch::Contains("is deprecated"));
  CHECK_THAT(online(s, {"app", "show", "newapp"}).second, Catch::Contains("deprecated"));
  CHECK_THAT(online(s, {"app", "deprecate-version", "newapp", std::to_string(id)}).second,
             Catch::Contains("nothing changed"));
  CHECK_THAT(online(s, {"app", "deprecate-version", "newapp", std::to_string(id), "--undo"}).second,
             Catch::Contains("is offered again"));

  // A Linux host (not anonymous) asking for work gets newapp's newest version: the app, the
  // version with its file, the signature, the download URL of the staged bytes, and the key.
  auto work = online(s, {"work", "create", "--app", "newapp", "--count", "2"});
  INFO(work.second);
  REQUIRE(work.first == 0);
  http_client c{"127.0.0.1", s.port};
  auto body = make_request(s.account_key, 0, 1e6, 1, {});
  body = std::regex_replace(body, std::regex{"<platform_name>anonymous</platform_name>"},
                            "<platform_name>x86_64-pc-linux-gnu</platform_name>");
  body = std::regex_replace(body, std::regex{"<app_versions>[\\s\\S]*</app_versions>"}, "");
  auto r = c.post("/demo/cgi", body);
  REQUIRE(r.status == 200);
  INFO(r.body);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(r.body.c_str()));
  auto reply = doc.child("scheduler_reply");
  auto sent = reply.find_child([](const pugi::xml_node& n) {
    return std::string{n.name()} == "app_version"
           && std::string{n.child("app_name").text().get()} == "newapp";
  });
  REQUIRE(sent);
  CHECK(sent.child("version_num").text().as_int() == 102);
  std::string program_file = sent.child("file_ref").child("file_name").text().get();
  CHECK(sent.child("file_ref").child("main_program"));
  pugi::xml_node info;
  for (auto f : reply.children("file_info"))
    if (std::string{f.child("name").text().get()} == program_file)
      info = f;
  REQUIRE(info);
  CHECK(info.child("executable"));
  CHECK(std::string{reply.child("code_sign_key").text().get()}.find("1024") != std::string::npos);
  std::string url = info.child("download_url").text().get();
  auto path = url.substr(url.find('/', url.find("//") + 2));
  auto download = c.get(path);
  CHECK(download.status == 200);
  std::ifstream in{prog2, std::ios::binary};
  std::string bytes{std::istreambuf_iterator<char>{in}, {}};
  CHECK(download.body == bytes);
  // What the client checks before it runs the file, with the key the reply gave it.
  auto got = offline.path() / "downloaded";
  std::ofstream{got, std::ios::binary} << download.body;
  std::ofstream{offline.path() / "downloaded.sig"} << info.child("file_signature").text().get();
  std::ofstream{offline.path() / "sent_key"} << reply.child("code_sign_key").text().get();
  auto verified = cobble_cli(
    {"key", "verify", got.string(), "--public", (offline.path() / "sent_key").string()});
  INFO(verified.second);
  CHECK(verified.first == 0);

  // The story, offline, from the same data directory.
  auto history = cobble_cli(
    {"--data-dir", s.data.string(), "log", "replay", "--entity", "app:newapp"});
  INFO(history.second);
  CHECK(history.first == 0);
  CHECK_THAT(history.second, Catch::Contains("app_added"));
  CHECK_THAT(history.second, Catch::Contains("app_version_added"));
  CHECK_THAT(history.second, Catch::Contains("app_version_deprecated"));
}
