// The pieces of BOINC's web RPCs that need no server: the password hash a client sends and
// how Cobble stores it, the wrong-password limiter, form decoding, PHP's urlencode, the
// public CPID, and the XML a 7.20 client and account managers read.

#include "net/password.hpp"
#include "net/web_rpc_xml.hpp"

#include <catch2/catch.hpp>
#include <pugixml.hpp>

#include <string>

using namespace cobble;
using namespace cobble::net;

TEST_CASE("the password hash is md5 of the password and the lower-case e-mail", "[web]") {
  // What the BOINC client computes (md5("secret" + "ann@example.org")).
  CHECK(boinc_password_hash("secret", "Ann@Example.ORG") == "327f8bcd9f637af48b3c283500126d86");
  CHECK(is_boinc_password_hash("327f8bcd9f637af48b3c283500126d86"));
  CHECK(is_boinc_password_hash("327F8BCD9F637AF48B3C283500126D86"));
  CHECK_FALSE(is_boinc_password_hash("327f8bcd9f637af48b3c283500126d8"));
  CHECK_FALSE(is_boinc_password_hash("327f8bcd9f637af48b3c283500126d8g"));
  CHECK_FALSE(is_boinc_password_hash(""));
}

TEST_CASE("a stored password is Argon2id, salted, and checks the hash it came from", "[web]") {
  auto hash = boinc_password_hash("secret", "ann@example.org");
  auto stored = store_password(hash);
  CHECK(stored.rfind("$argon2id$", 0) == 0);
  CHECK(stored.find(hash) == std::string::npos); // never the bare md5
  CHECK(store_password(hash) != stored);         // a new salt each time
  CHECK(password_matches(stored, hash));
  CHECK(password_matches(stored, "327F8BCD9F637AF48B3C283500126D86")); // hex in any case
  CHECK_FALSE(password_matches(stored, boinc_password_hash("Secret", "ann@example.org")));
  CHECK_FALSE(password_matches("", hash)); // an account without a password
  CHECK_FALSE(password_matches("not a stored password", hash));
}

TEST_CASE("wrong passwords lock an account for the rest of the window", "[web]") {
  failure_limiter limiter{3, 600, 2};
  CHECK(limiter.wait("a", 0) == 0);
  limiter.failed("a", 10);
  limiter.failed("a", 20);
  CHECK(limiter.wait("a", 30) == 0);
  limiter.failed("a", 30);
  CHECK(limiter.wait("a", 40) == Approx(570)); // 600 s after the first of the three
  CHECK(limiter.wait("b", 40) == 0);           // other accounts are not touched
  CHECK(limiter.wait("a", 611) == 0);          // the window is over: a fresh start
  limiter.failed("a", 620);
  limiter.failed("a", 621);
  limiter.succeeded("a"); // a right password clears the count
  limiter.failed("a", 622);
  limiter.failed("a", 623);
  CHECK(limiter.wait("a", 624) == 0);
  // Full (two counters): the oldest goes.
  limiter.failed("b", 700);
  limiter.failed("c", 701);
  limiter.failed("c", 702);
  limiter.failed("c", 703);
  CHECK(limiter.wait("c", 704) > 0);
}

TEST_CASE("a web RPC's parameters decode as a form", "[web]") {
  auto f = parse_form("email_addr=ann%2Btag%40example.org&user_name=Ann+Lee&x=&flag&x=2");
  REQUIRE(f);
  CHECK(f->at("email_addr") == "ann+tag@example.org");
  CHECK(f->at("user_name") == "Ann Lee");
  CHECK(f->at("x").empty()); // the first value stays
  CHECK(f->at("flag").empty());
  CHECK_FALSE(parse_form("a=%zz"));
  CHECK(parse_form("")->empty());
}

TEST_CASE("names go out URL-encoded as PHP writes them", "[web]") {
  CHECK(php_urlencode("Joe Smith") == "Joe+Smith");
  CHECK(php_urlencode("a&b<c>/é") == "a%26b%3Cc%3E%2F%C3%A9");
  CHECK(php_urlencode("A-z_0.9") == "A-z_0.9");
}

TEST_CASE("e-mail addresses need a local part and a dotted domain", "[web]") {
  CHECK(plausible_email("ann@example.org"));
  CHECK(plausible_email("ann+tag@mail.example.org"));
  CHECK_FALSE(plausible_email("ann"));
  CHECK_FALSE(plausible_email("@example.org"));
  CHECK_FALSE(plausible_email("ann@example"));
  CHECK_FALSE(plausible_email("ann@example."));
  CHECK_FALSE(plausible_email("ann@@example.org"));
  CHECK_FALSE(plausible_email("ann lee@example.org"));
  CHECK_FALSE(plausible_email("<script>@example.org"));
  CHECK_FALSE(plausible_email(std::string(250, 'a') + "@example.org"));
}

TEST_CASE("the public CPID is md5 of the cross-project id and the e-mail", "[web]") {
  user_rec u;
  u.email = "ann@example.org";
  u.cross_project_id = "fedcba9876543210fedcba9876543210";
  CHECK(public_cpid(u) == "fb693029d8df5dd6b4260808349b4e9a");
  u.cross_project_id.clear();
  CHECK(public_cpid(u).empty());
}

TEST_CASE("the web RPCs' XML reads as BOINC's", "[web]") {
  pugi::xml_document doc;

  SECTION("an error") {
    REQUIRE(doc.load_string(web_error_xml(-206, "Invalid <password> & more").c_str()));
    CHECK(doc.child("error").child("error_num").text().as_int() == -206);
    CHECK(std::string{doc.child("error").child_value("error_msg")} == "Invalid <password> & more");
  }

  SECTION("the project configuration") {
    app_rec app;
    app_version_rec v1;
    v1.platform = "x86_64-pc-linux-gnu";
    app_version_rec v2 = v1;
    v2.plan_class = "mt";
    app_version_rec old = v1;
    old.platform = "windows_x86_64";
    old.deprecated = true;
    app.versions = {v1, v2, v1, old};
    project_config_info info;
    info.name = "Demo & Co";
    info.master_url = "http://127.0.0.1:8080/demo/";
    info.min_passwd_length = 8;
    info.invitation_required = true;
    info.terms_of_use = "Be nice.";
    info.platforms = platforms_of({app});
    REQUIRE(info.platforms.size() == 2); // each once, deprecated versions left out
    REQUIRE(doc.load_string(project_config_xml(info).c_str()));
    auto pc = doc.child("project_config");
    CHECK(std::string{pc.child_value("name")} == "Demo & Co");
    CHECK(std::string{pc.child_value("master_url")} == "http://127.0.0.1:8080/demo/");
    CHECK(pc.child("min_passwd_length").text().as_int() == 8);
    CHECK(pc.child("account_creation_disabled"));
    CHECK(pc.child("invite_code_required"));
    CHECK(std::string{pc.child_value("terms_of_use")}.find("Be nice.") != std::string::npos);
    int n = 0;
    for (auto p : pc.child("platforms").children("platform")) {
      CHECK(std::string{p.child_value("platform_name")} == "x86_64-pc-linux-gnu");
      ++n;
    }
    CHECK(n == 2);
  }

  SECTION("an account for its owner and for everyone") {
    account_view a;
    a.user.id = 7;
    a.user.name = "Ann \"the\" <Cruncher>";
    a.user.email = "ann@example.org";
    a.user.country = "United States";
    a.user.cross_project_id = "fedcba9876543210fedcba9876543210";
    a.user.credit.total = 1234.5;
    a.team = 3;
    a.team_founder = true;
    host_reg h;
    h.id = 11;
    a.hosts = {h};
    REQUIRE(doc.load_string(am_get_info_xml(a, a.team_founder).c_str()));
    auto r = doc.child("am_get_info_reply");
    CHECK(r.child("success"));
    CHECK(r.child("id").text().as_int() == 7);
    CHECK(std::string{r.child_value("name")} == "Ann+%22the%22+%3CCruncher%3E");
    CHECK(std::string{r.child_value("country")} == "United+States");
    CHECK(std::string{r.child_value("cpid")} == "fb693029d8df5dd6b4260808349b4e9a");
    CHECK(r.child("teamid").text().as_int() == 3);
    CHECK(r.child("teamfounder"));

    REQUIRE(doc.load_string(user_xml(a, false).c_str()));
    auto u = doc.child("user");
    CHECK(std::string{u.child_value("name")} == "Ann \"the\" <Cruncher>"); // escaped, read back
    CHECK(u.child("total_credit").text().as_double() == 1234.5);
    CHECK_FALSE(u.child("host"));
    CHECK(user_xml(a, false).find("<Cruncher>") == std::string::npos);
    REQUIRE(doc.load_string(user_xml(a, true).c_str()));
    CHECK(doc.child("user").child("host").child("id").text().as_int() == 11);
  }

  SECTION("teams") {
    team_view t;
    t.team.id = 5;
    t.team.name = "Night & Owls";
    t.team.founder = 7;
    t.members = 2;
    REQUIRE(doc.load_string(team_xml(t).c_str()));
    CHECK(doc.child("team").child("id").text().as_int() == 5);
    CHECK(std::string{doc.child("team").child_value("name")} == "Night & Owls");
    CHECK(doc.child("team").child("userid").text().as_int() == 7);
    REQUIRE(doc.load_string(teams_xml({t, t}).c_str()));
    CHECK(std::distance(doc.child("teams").children("team").begin(),
                        doc.child("teams").children("team").end())
          == 2);
    REQUIRE(doc.load_string(create_team_xml(5).c_str()));
    CHECK(doc.child("create_team_reply").child("team_id").text().as_int() == 5);
  }
}
