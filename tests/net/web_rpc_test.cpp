// BOINC's web RPCs against a real cobbled on 127.0.0.1, port 0, asked as the 7.20 client and
// account managers ask them (GET, URL-encoded parameters): a volunteer makes an account with
// e-mail and password, looks it up, attaches with the key; account managers read and change
// accounts and teams; what is refused is refused with BOINC's error numbers and nothing made.

#include "../support/cobbled.hpp"
#include "net/password.hpp"

#include <catch2/catch.hpp>
#include <pugixml.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace cobble::test;

namespace {

/// A parsed web RPC answer.
struct answer {
  int status = 0;
  pugi::xml_document doc;
  std::string body;

  [[nodiscard]] int error_num() const {
    return doc.child("error").child("error_num").text().as_int();
  }
  [[nodiscard]] std::string error_msg() const {
    return doc.child("error").child_value("error_msg");
  }
  [[nodiscard]] std::string key() const {
    return doc.child("account_out").child_value("authenticator");
  }
};

struct web_client {
  http_client http;
  explicit web_client(unsigned short port) : http("127.0.0.1", port) {}

  std::unique_ptr<answer> get(const std::string& target) {
    auto out = std::make_unique<answer>();
    auto r = http.get(target);
    out->status = r.status;
    out->body = r.body;
    INFO(target << " answered " << r.body);
    REQUIRE(r.status == 200);
    REQUIRE(out->doc.load_string(r.body.c_str()));
    return out;
  }

  std::unique_ptr<answer> create(const std::string& email, const std::string& password,
                                 const std::string& name, const std::string& extra = {}) {
    return get("/demo/create_account.php?email_addr=" + percent_encode(email)
               + "&passwd_hash=" + cobble::net::boinc_password_hash(password, email)
               + "&user_name=" + percent_encode(name) + extra);
  }

  std::unique_ptr<answer> lookup(const std::string& email, const std::string& password) {
    return get("/demo/lookup_account.php?email_addr=" + percent_encode(email)
               + "&passwd_hash=" + cobble::net::boinc_password_hash(password, email));
  }
};

} // namespace

TEST_CASE("a volunteer makes an account, looks it up and attaches with its key", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  auto client = std::make_unique<web_client>(s.port);
  auto& w = *client;

  auto config = w.get("/demo/get_project_config.php");
  auto pc = config->doc.child("project_config");
  CHECK(std::string{pc.child_value("name")} == "Cobble demo project");
  CHECK(std::string{pc.child_value("master_url")}
        == "http://127.0.0.1:" + std::to_string(s.port) + "/demo/");
  CHECK(pc.child("min_passwd_length").text().as_int() == 6);
  CHECK_FALSE(pc.child("account_creation_disabled"));

  auto made = w.create("Ann@Example.org", "secret pass", "Ann Lee");
  REQUIRE(made->key().size() == 32);

  // Looked up with the same password (the address in any case: the hash uses it lowered).
  CHECK(w.lookup("ann@example.org", "secret pass")->key() == made->key());
  // Only whether it exists, without a password.
  auto exists = w.get("/demo/lookup_account.php?email_addr=ann%40example.org");
  CHECK(exists->doc.child("account_out").child("success"));
  CHECK(exists->key().empty());
  // Wrong password, unknown address.
  CHECK(w.lookup("ann@example.org", "wrong")->error_num() == -206);
  CHECK(w.lookup("bob@example.org", "secret pass")->error_num() == -136);
  // Made again with the same password: a login (BOINC answers the existing key); with
  // another: the address is taken.
  CHECK(w.create("ann@example.org", "secret pass", "Ann again")->key() == made->key());
  CHECK(w.create("ann@example.org", "other pass", "Ann again")->error_num() == -137);

  // The key attaches a client.
  auto reply = rpc(w.http, make_request(made->key(), 0, 0, 0, {}));
  CHECK(reply.hostid.has_value());
  auto info = w.get("/demo/am_get_info.php?account_key=" + made->key());
  CHECK(std::string{info->doc.child("am_get_info_reply").child_value("name")} == "Ann+Lee");

  // Still there after a restart (the connection closed first: a stopping server waits for
  // open connections to go idle).
  client.reset();
  REQUIRE(s.stop() == 0);
  s.start();
  web_client again{s.port};
  CHECK(again.lookup("ann@example.org", "secret pass")->key() == made->key());
}

TEST_CASE("bad account requests get BOINC's error numbers and make nothing", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  web_client w{s.port};
  auto hash = cobble::net::boinc_password_hash("pw", "x@example.org");
  CHECK(w.create("not-an-address", "pw", "X")->error_num() == -205);
  CHECK(w.create("x@example.org", "pw", "")->error_num() == -188);
  CHECK(w.create("x@example.org", "pw", " padded")->error_num() == -188);
  CHECK(w.create("x@example.org", "pw", "<script>alert(1)</script>")->error_num() == -188);
  CHECK(w.create("x@example.org", "pw", std::string(300, 'n'))->error_num() == -188);
  CHECK(w.get("/demo/create_account.php?email_addr=x%40example.org&user_name=X&passwd_hash=abc")
          ->error_num()
        == -1);
  CHECK(w.get("/demo/create_account.php?email_addr=x%40example.org&user_name=X&passwd_hash=" + hash
              + "%zz")
          ->error_num()
        == -112);
  CHECK(w.get("/demo/lookup_account.php")->error_num() == -205);
  CHECK(w.get("/demo/am_get_info.php?account_key=nope")->error_num() == -136);
  CHECK(w.get("/demo/show_user.php?userid=999&format=xml")->error_num() == -136);
  // Nothing was made: the address is still free.
  CHECK(w.lookup("x@example.org", "pw")->error_num() == -136);
  CHECK(w.create("x@example.org", "pw", "X")->key().size() == 32);

  // Wrong passwords: after five, even the right one waits.
  for (int i = 0; i < 5; ++i)
    CHECK(w.lookup("x@example.org", "guess" + std::to_string(i))->error_num() == -206);
  auto locked = w.lookup("x@example.org", "pw");
  CHECK(locked->error_num() == -206);
  CHECK(locked->error_msg().find("Too many wrong passwords") != std::string::npos);
}

TEST_CASE("account managers change accounts and make, find and join teams", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  web_client w{s.port};
  auto ann = w.create("ann@example.org", "pw", "Ann")->key();
  auto bob = w.create("bob@example.org", "pw", "Bob")->key();

  auto set = w.get("/demo/am_set_info.php?account_key=" + ann
                   + "&name=Ann+%26+Co&country=Norway&url=https%3A%2F%2Fann.example.org");
  CHECK(set->doc.child("am_set_info_reply").child("success"));
  auto info_answer = w.get("/demo/am_get_info.php?account_key=" + ann); // holds the document
  auto info = info_answer->doc.child("am_get_info_reply");
  CHECK(std::string{info.child_value("name")} == "Ann+%26+Co");
  CHECK(std::string{info.child_value("country")} == "Norway");
  CHECK(info.child("teamid").text().as_int() == 0);

  // A team: made by Ann (who joins it), found by part of its name, joined by Bob.
  auto made = w.get("/demo/create_team.php?account_key=" + ann + "&name=Night+%26+Owls"
                    + "&description=We+crunch");
  auto team = made->doc.child("create_team_reply").child("team_id").text().as_int();
  REQUIRE(team > 0);
  CHECK(w.get("/demo/create_team.php?account_key=" + bob + "&name=NIGHT+%26+OWLS")->error_num()
        == -137);
  auto found = w.get("/demo/team_lookup.php?team_name=owls&format=xml");
  auto t = found->doc.child("teams").child("team");
  CHECK(t.child("id").text().as_int() == team);
  CHECK(std::string{t.child_value("name")} == "Night & Owls");
  CHECK(found->body.find("Night &amp; Owls") != std::string::npos); // escaped on the wire
  CHECK(w.get("/demo/team_lookup.php?team_id=" + std::to_string(team))
          ->doc.child("team")
          .child("nusers")
          .text()
          .as_int()
        == 1);
  CHECK(w.get("/demo/am_set_info.php?account_key=" + bob + "&teamid=" + std::to_string(team))
          ->doc.child("am_set_info_reply")
          .child("success"));
  CHECK(w.get("/demo/team_lookup.php?team_ids=" + std::to_string(team) + ",999")
          ->doc.child("teams")
          .child("team")
          .child("nusers")
          .text()
          .as_int()
        == 2);
  // No valid id among team_ids: no team (not every team).
  CHECK_FALSE(w.get("/demo/team_lookup.php?team_ids=x,0")->doc.child("teams").child("team"));
  auto bob_answer = w.get("/demo/am_get_info.php?account_key=" + bob);
  auto bob_info = bob_answer->doc.child("am_get_info_reply");
  CHECK(bob_info.child("teamid").text().as_int() == team);
  CHECK_FALSE(bob_info.child("teamfounder"));
  CHECK(w.get("/demo/am_get_info.php?account_key=" + ann)
          ->doc.child("am_get_info_reply")
          .child("teamfounder"));

  // A new address needs its new password hash; with it, the old address no longer finds her.
  CHECK(
    w.get("/demo/am_set_info.php?account_key=" + ann + "&email_addr=ann%40example.net")->error_num()
    == -206);
  CHECK(w.get("/demo/am_set_info.php?account_key=" + ann + "&email_addr=bob%40example.org"
              + "&password_hash=" + cobble::net::boinc_password_hash("pw", "bob@example.org"))
          ->error_num()
        == -137);
  CHECK(w.get("/demo/am_set_info.php?account_key=" + ann + "&email_addr=ann%40example.net"
              + "&password_hash=" + cobble::net::boinc_password_hash("new", "ann@example.net"))
          ->doc.child("am_set_info_reply")
          .child("success"));
  CHECK(w.lookup("ann@example.net", "new")->key() == ann);
  CHECK(w.lookup("ann@example.org", "pw")->error_num() == -136);

  // show_user: public without hosts, with the key the owner's view.
  auto id = info.child("id").text().as_int();
  auto pub = w.get("/demo/show_user.php?userid=" + std::to_string(id) + "&format=xml");
  CHECK(std::string{pub->doc.child("user").child_value("name")} == "Ann & Co");
  CHECK(pub->doc.child("user").child("teamid").text().as_int() == team);

  // Leaving the team.
  CHECK(w.get("/demo/am_set_info.php?account_key=" + bob + "&teamid=0")
          ->doc.child("am_set_info_reply")
          .child("success"));
  CHECK(w.get("/demo/am_set_info.php?account_key=" + bob + "&teamid=999")->error_num() == -1);
  CHECK(w.get("/demo/am_set_info.php?account_key=" + bob + "&teamid=x")->error_num() == -1);
}

TEST_CASE("account creation closed, or open to invitation codes", "[web]") {
  temp_dir dir;

  SECTION("closed") {
    server s{dir.path(), {"--config", demo_config_with(dir.path(), "{creation: closed}").string()}};
    web_client w{s.port};
    CHECK(w.get("/demo/get_project_config.php")
            ->doc.child("project_config")
            .child("account_creation_disabled"));
    CHECK(w.create("ann@example.org", "pw", "Ann")->error_num() == -208);
    CHECK(w.lookup("ann@example.org", "pw")->error_num() == -136);
  }

  SECTION("by invitation") {
    server s{dir.path(),
             {"--config",
              demo_config_with(dir.path(),
                               "{creation: invitation, invitation_codes: [open-sesame], "
                               "min_password_length: 10}")
                .string()}};
    web_client w{s.port};
    auto config = w.get("/demo/get_project_config.php");
    auto pc = config->doc.child("project_config");
    CHECK(pc.child("invite_code_required"));
    CHECK(pc.child("min_passwd_length").text().as_int() == 10);
    CHECK(w.create("ann@example.org", "pw", "Ann")->error_num() == -209);
    CHECK(w.create("ann@example.org", "pw", "Ann", "&invite_code=guess")->error_num() == -209);
    CHECK(w.create("ann@example.org", "pw", "Ann", "&invite_code=open-sesame")->key().size() == 32);
  }
}
