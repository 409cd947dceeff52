// The volunteer site against a real cobbled on 127.0.0.1, port 0, asked as a browser asks it
// (cookies kept, forms posted URL-encoded): the home page is both the front door and the
// BOINC master file; a volunteer joins, sees their account, logs out and in again, and the
// account is the one the BOINC client attaches with; forged forms, wrong passwords and bad
// input change nothing and say why.

#include "../support/cobbled.hpp"
#include "net/password.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace cobble::test;
using Catch::Matchers::Contains;

namespace {

/// A form body from name/value pairs.
std::string form(std::initializer_list<std::pair<std::string, std::string>> fields) {
  std::string out;
  for (const auto& [k, v] : fields) {
    if (!out.empty())
      out += '&';
    out += k;
    out += '=';
    out += percent_encode(v);
  }
  return out;
}

/// A browser: keeps the cookies the site sets and sends them back.
struct browser {
  http_client http;
  std::map<std::string, std::string> jar;
  std::string origin; ///< Sent as Origin on posts; empty: none (as older browsers).

  explicit browser(unsigned short port) : http("127.0.0.1", port) {}

  http_reply
  send(boost::beast::http::verb verb, const std::string& target, const std::string& body = {}) {
    http_client::headers more;
    std::string cookies;
    for (const auto& [k, v] : jar) {
      if (!cookies.empty())
        cookies += "; ";
      cookies += k;
      cookies += '=';
      cookies += v;
    }
    if (!cookies.empty())
      more.emplace_back("Cookie", cookies);
    if (!origin.empty() && verb == boost::beast::http::verb::post)
      more.emplace_back("Origin", origin);
    auto r = http.request(verb, target, body, {}, "application/x-www-form-urlencoded", more);
    for (const auto& c : r.set_cookies) {
      auto eq = c.find('=');
      auto semi = c.find(';');
      auto name = c.substr(0, eq);
      auto value = c.substr(eq + 1, semi - eq - 1);
      if (c.find("Max-Age=0") != std::string::npos)
        jar.erase(name);
      else
        jar[name] = value;
    }
    return r;
  }
  http_reply get(const std::string& target) { return send(boost::beast::http::verb::get, target); }
  http_reply post(const std::string& target, const std::string& body) {
    return send(boost::beast::http::verb::post, target, body);
  }

  /// The form token of the page `target` (its hidden csrf field).
  std::string token(const std::string& target) {
    auto page = get(target);
    REQUIRE(page.status == 200);
    const std::string marker = "name=\"csrf\" value=\"";
    auto at = page.body.find(marker);
    REQUIRE(at != std::string::npos);
    at += marker.size();
    return page.body.substr(at, page.body.find('"', at) - at);
  }

  http_reply join(const std::string& name, const std::string& email, const std::string& password,
                  const std::string& extra = {}) {
    auto csrf = token("/demo/create_account");
    return post("/demo/create_account",
                form({{"csrf", csrf}, {"name", name}, {"email", email}, {"password", password}})
                  + extra);
  }
  http_reply login(const std::string& email, const std::string& password) {
    auto csrf = token("/demo/login");
    return post("/demo/login", form({{"csrf", csrf}, {"email", email}, {"password", password}}));
  }
};

/// What BOINC's lookup_account.php answers for this address and password: the account key,
/// or the error number.
std::string looked_up(http_client& c, const std::string& email, const std::string& password) {
  auto r = c.get("/demo/lookup_account.php?email_addr=" + percent_encode(email)
                 + "&passwd_hash=" + cobble::net::boinc_password_hash(password, email));
  REQUIRE(r.status == 200);
  auto key_at = r.body.find("<authenticator>");
  if (key_at != std::string::npos)
    return r.body.substr(key_at + 15, 32);
  auto num_at = r.body.find("<error_num>");
  REQUIRE(num_at != std::string::npos);
  return r.body.substr(num_at + 11, r.body.find('<', num_at + 11) - num_at - 11);
}

/// The demo project with account settings `accounts`, a name and a description that need
/// escaping.
fs::path config_with(const fs::path& dir, const std::string& accounts) {
  return demo_config_with(dir, accounts,
                          "    long_name: Primes & <friends>\n"
                          "    description: \"We look for primes <b>here</b> & there.\"\n");
}

} // namespace

TEST_CASE("the home page is the site's front door and the client's master file", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  browser b{s.port};
  auto home = b.get("/demo/");
  REQUIRE(home.status == 200);
  CHECK(home.content_type == "text/html; charset=utf-8");
  // The client reads the page as text and wants both lines at column 0.
  const auto sched = "http://127.0.0.1:" + std::to_string(s.port) + "/demo/cgi";
  CHECK_THAT(home.body, Contains("\n<scheduler>" + sched + "</scheduler>\n"));
  CHECK_THAT(home.body, Contains("\n<link rel=\"boinc_scheduler\" href=\"" + sched + "\">\n"));
  // The volunteer sees how to join, and where.
  CHECK_THAT(home.body, Contains("http://127.0.0.1:" + std::to_string(s.port) + "/demo/"));
  CHECK_THAT(home.body, Contains("href=\"/demo/create_account\""));
  CHECK_THAT(home.body, Contains("href=\"/demo/login\""));
  // Pages run no script and load nothing from elsewhere.
  CHECK_THAT(home.field("Content-Security-Policy"), Contains("default-src 'none'"));
  CHECK(home.field("X-Content-Type-Options") == "nosniff");
  CHECK(home.body.find("<script") == std::string::npos);
  // The form token's cookie is set on the first visit, for the project's path only.
  REQUIRE(b.jar.count("cobble_csrf") == 1);
  CHECK_THAT(home.set_cookies.front(),
             Contains("Path=/demo/") && Contains("HttpOnly") && Contains("SameSite=Strict"));
  CHECK(b.http.request(boost::beast::http::verb::head, "/demo/").status == 200);
  // Only the site's pages exist: the rest is 404, a wrong method 405.
  CHECK(b.get("/demo/nothing").status == 404);
  CHECK(b.get("/demo/logout").status == 405);
}

TEST_CASE("the project's name and description are shown as text", "[web]") {
  temp_dir dir;
  server s{dir.path(), {"--config", config_with(dir.path(), "{creation: open}").string()}};
  browser b{s.port};
  auto home = b.get("/demo/");
  REQUIRE(home.status == 200);
  CHECK_THAT(home.body, Contains("<title>Home · Primes &amp; &lt;friends&gt;</title>"));
  CHECK_THAT(home.body, Contains("We look for primes &lt;b&gt;here&lt;/b&gt; &amp; there."));
}

TEST_CASE("a volunteer joins on the site, attaches with it and logs in again", "[web]") {
  temp_dir dir;
  auto s = std::make_unique<server>(dir.path());
  auto b = std::make_unique<browser>(s->port);

  auto made = b->join("Ann \"A\" & co", "Ann@Example.org", "secret pass");
  REQUIRE(made.status == 303);
  CHECK(made.location == "/demo/account");
  REQUIRE(b->jar.count("cobble_session") == 1);
  auto session_cookie = std::find_if(made.set_cookies.begin(), made.set_cookies.end(),
                                     [](auto& c) { return c.starts_with("cobble_session="); });
  REQUIRE(session_cookie != made.set_cookies.end());
  CHECK_THAT(*session_cookie,
             Contains("HttpOnly") && Contains("SameSite=Lax") && Contains("Path=/demo/"));

  auto page = b->get("/demo/account");
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Contains("<h1>Ann &quot;A&quot; &amp; co</h1>"));
  CHECK_THAT(page.body, Contains("Ann@Example.org"));
  CHECK_THAT(page.body, Contains("No computer has attached"));
  // The header shows who is logged in, and a log-out button.
  CHECK_THAT(page.body, Contains("action=\"/demo/logout\""));

  // The BOINC Manager finds the same account with the same address and password.
  auto key = looked_up(b->http, "ann@example.org", "secret pass");
  REQUIRE(key.size() == 32);
  CHECK_THAT(page.body, Contains("<code>" + key + "</code>"));

  // A client attaches with the key: the account page lists the computer.
  auto reply = rpc(b->http, make_request(key, 0, 0, 0, {}));
  REQUIRE(reply.hostid.has_value());
  page = b->get("/demo/account");
  CHECK_THAT(page.body,
             Contains("<td><a href=\"/demo/host?id=" + std::to_string(*reply.hostid) + "\">"));
  CHECK(page.body.find("No computer has attached") == std::string::npos);

  // The session outlives a restart (its key is kept in the data directory).
  auto jar = b->jar;
  b.reset();
  REQUIRE(s->stop() == 0);
  s = std::make_unique<server>(dir.path());
  b = std::make_unique<browser>(s->port);
  b->jar = jar;
  CHECK(b->get("/demo/account").status == 200);

  // Logging out ends the session in this browser.
  auto csrf = b->token("/demo/account");
  auto out = b->post("/demo/logout", form({{"csrf", csrf}}));
  CHECK(out.status == 303);
  CHECK(out.location == "/demo/");
  CHECK(b->jar.count("cobble_session") == 0);
  auto anonymous = b->get("/demo/account");
  CHECK(anonymous.status == 303);
  CHECK(anonymous.location == "/demo/login");
  // An old copy of the cookie still works until it ends (nothing is stored on the server),
  // but one altered by a single digit does not.
  auto old = jar.at("cobble_session");
  auto forged = old;
  forged[0] = forged[0] == '9' ? '8' : static_cast<char>(forged[0] + 1);
  b->jar["cobble_session"] = forged;
  CHECK(b->get("/demo/account").status == 303);
  CHECK(b->jar.count("cobble_session") == 0); // the bad cookie is cleared
  b->jar["cobble_session"] = old;
  CHECK(b->get("/demo/account").status == 200);
  b->jar.erase("cobble_session");

  // Logging in: a wrong password and an unknown address get the same answer.
  auto wrong = b->login("ann@example.org", "not it");
  CHECK(wrong.status == 401);
  CHECK_THAT(wrong.body, Contains("Wrong e-mail address or password."));
  CHECK_THAT(wrong.body, Contains("value=\"ann@example.org\"")); // kept for the next try
  auto unknown = b->login("nobody@example.org", "secret pass");
  CHECK(unknown.status == 401);
  CHECK_THAT(unknown.body, Contains("Wrong e-mail address or password."));
  auto in = b->login("ANN@example.org", "secret pass");
  CHECK(in.status == 303);
  CHECK(in.location == "/demo/account");
  CHECK(b->get("/demo/account").status == 200);
  // Logged in, the login page leads to the account.
  CHECK(b->get("/demo/login").location == "/demo/account");
}

TEST_CASE("a form from elsewhere changes nothing", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  browser b{s.port};
  auto fields = form(
    {{"name", "Mallory"}, {"email", "m@example.org"}, {"password", "secret pass"}});

  // No form-token cookie at all (a first visit straight to the post).
  auto none = b.post("/demo/create_account", fields + "&csrf=00");
  CHECK(none.status == 403);
  CHECK_THAT(none.body, Contains("nothing was changed"));
  // The cookie, but the token of another browser.
  browser other{s.port};
  auto theirs = other.token("/demo/create_account");
  b.get("/demo/create_account");
  CHECK(b.post("/demo/create_account", fields + "&csrf=" + theirs).status == 403);
  // The right token, sent from another site.
  auto csrf = b.token("/demo/create_account");
  b.origin = "http://evil.example";
  CHECK(b.post("/demo/create_account", fields + "&csrf=" + csrf).status == 403);
  CHECK(looked_up(b.http, "m@example.org", "secret pass") == "-136");
  // From the site itself, it is made.
  b.origin = "http://127.0.0.1:" + std::to_string(s.port);
  CHECK(b.post("/demo/create_account", fields + "&csrf=" + csrf).status == 303);
  CHECK(looked_up(b.http, "m@example.org", "secret pass").size() == 32);

  // Logging out needs the token too.
  b.origin.clear();
  CHECK(b.post("/demo/logout", "csrf=" + theirs).status == 403);
  CHECK(b.get("/demo/account").status == 200);
}

TEST_CASE("wrong passwords count the same through the site and the BOINC Manager", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  browser b{s.port};
  REQUIRE(b.join("Bo", "bo@example.org", "right pass").status == 303);
  b.jar.erase("cobble_session");
  for (int i = 0; i < 5; ++i)
    CHECK(b.login("bo@example.org", "wrong " + std::to_string(i)).status == 401);
  // Then even the right password waits, on the site and through lookup_account.php.
  auto refused = b.login("bo@example.org", "right pass");
  CHECK(refused.status == 429);
  CHECK_THAT(refused.body, Contains("Too many wrong passwords"));
  CHECK(looked_up(b.http, "bo@example.org", "right pass") == "-206");
  CHECK(b.jar.count("cobble_session") == 0);
}

TEST_CASE("bad input is refused with a reason, the form kept and nothing made", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  browser b{s.port};

  auto bad_name = b.join("<script>x</script>", "x@example.org", "secret pass");
  CHECK(bad_name.status == 400);
  CHECK_THAT(bad_name.body, Contains("no &apos;&lt;&apos;"));
  CHECK_THAT(bad_name.body, Contains("value=\"&lt;script&gt;x&lt;/script&gt;\""));
  CHECK(bad_name.body.find("<script>") == std::string::npos);

  auto spaces = b.join(" padded ", "x@example.org", "secret pass");
  CHECK(spaces.status == 400);
  auto bad_email = b.join("X", "not an address", "secret pass");
  CHECK(bad_email.status == 400);
  CHECK_THAT(bad_email.body, Contains("Email address has invalid syntax."));
  auto short_password = b.join("X", "x@example.org", "abc");
  CHECK(short_password.status == 400);
  CHECK_THAT(short_password.body, Contains("at least 6"));
  auto long_password = b.join("X", "x@example.org", std::string(300, 'p'));
  CHECK(long_password.status == 400);
  auto huge = b.join(std::string(5000, 'n'), "x@example.org", "secret pass");
  CHECK(huge.status == 400);
  CHECK_THAT(huge.body, Contains("longer than 4096 bytes"));
  auto csrf = b.token("/demo/create_account");
  CHECK(b.post("/demo/create_account", "csrf=" + csrf + "&name=%zz").status == 400);
  auto empty_login = b.login("", "");
  CHECK(empty_login.status == 400);
  CHECK(looked_up(b.http, "x@example.org", "secret pass") == "-136");

  // An address that has an account already.
  REQUIRE(b.join("X", "x@example.org", "secret pass").status == 303);
  b.jar.erase("cobble_session");
  auto again = b.join("Y", "X@example.org", "other pass");
  CHECK(again.status == 409);
  CHECK_THAT(again.body, Contains("exists; log in instead"));
}

TEST_CASE("a project's account settings shape the join form", "[web]") {
  SECTION("closed") {
    temp_dir dir;
    server s{dir.path(), {"--config", config_with(dir.path(), "{creation: closed}").string()}};
    browser b{s.port};
    auto page = b.get("/demo/create_account");
    CHECK(page.status == 200);
    CHECK_THAT(page.body, Contains("not accepting new accounts"));
    CHECK(page.body.find("name=\"password\"") == std::string::npos);
    CHECK_THAT(b.get("/demo/").body, Contains("not accepting new accounts"));
    auto csrf = b.token("/demo/login");
    auto made = b.post("/demo/create_account", form({{"csrf", csrf},
                                                     {"name", "X"},
                                                     {"email", "x@example.org"},
                                                     {"password", "secret pass"}}));
    CHECK(made.status == 403);
    CHECK(looked_up(b.http, "x@example.org", "secret pass") == "-136");
  }
  SECTION("by invitation, with terms of use") {
    temp_dir dir;
    server s{dir.path(),
             {"--config", config_with(dir.path(), "{creation: invitation, invitation_codes: "
                                                  "[sesame], terms_of_use: \"Be <nice>.\"}")
                            .string()}};
    browser b{s.port};
    auto page = b.get("/demo/create_account");
    CHECK_THAT(page.body, Contains("name=\"invite_code\""));
    CHECK_THAT(page.body, Contains("Be &lt;nice&gt;."));
    auto wrong = b.join("X", "x@example.org", "secret pass", "&invite_code=nope");
    CHECK(wrong.status == 400);
    CHECK_THAT(wrong.body, Contains("Invalid invitation code."));
    CHECK(b.join("X", "x@example.org", "secret pass", "&invite_code=sesame").status == 303);
  }
}

TEST_CASE("volunteers make, join and leave teams", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  browser ann{s.port};
  browser bob{s.port};

  auto list = ann.get("/demo/teams");
  REQUIRE(list.status == 200);
  CHECK_THAT(list.body, Contains("No team yet."));
  CHECK_THAT(list.body, Contains("Log in</a> to join a team"));
  CHECK(ann.get("/demo/create_team").location == "/demo/login"); // only for the logged-in

  REQUIRE(ann.join("Ann", "ann@example.org", "secret pass").status == 303);
  REQUIRE(bob.join("Bob", "bob@example.org", "secret pass").status == 303);
  auto make = [](browser& b, const std::string& name, const std::string& url) {
    auto csrf = b.token("/demo/create_team");
    return b.post("/demo/create_team", form({{"csrf", csrf},
                                             {"name", name},
                                             {"description", "We <3 primes & more"},
                                             {"url", url},
                                             {"country", "Norway"}}));
  };
  auto script = make(ann, "<script>", "");
  CHECK(script.status == 400);
  CHECK_THAT(script.body, Contains("without &apos;&lt;&apos;"));
  auto bad_url = make(ann, "Gauss & co", "javascript:alert(1)");
  CHECK(bad_url.status == 400);
  CHECK_THAT(bad_url.body, Contains("http:// or https://"));
  CHECK_THAT(bad_url.body, Contains("value=\"Gauss &amp; co\"")); // the form keeps it

  auto made = make(ann, "Gauss & co", "https://example.org/gauss");
  REQUIRE(made.status == 303);
  REQUIRE(made.location.starts_with("/demo/team?id="));
  auto team_path = made.location;
  auto page = ann.get(team_path);
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Contains("<h1>Gauss &amp; co</h1>"));
  CHECK_THAT(page.body, Contains("We &lt;3 primes &amp; more"));
  CHECK_THAT(page.body, Contains("href=\"https://example.org/gauss\""));
  CHECK_THAT(page.body, Contains("Founded "));
  CHECK_THAT(page.body, Contains(" by Ann."));
  CHECK_THAT(page.body, Contains("You are a member."));
  CHECK_THAT(page.body, Contains("<td>Ann</td>"));
  CHECK_THAT(ann.get("/demo/account").body, Contains("href=\"" + team_path + "\">Gauss &amp; co"));
  CHECK(make(bob, "Gauss & co", "").status == 409);

  // Bob finds it, joins, and is listed; then leaves.
  auto found = bob.get("/demo/teams?q=gauss");
  CHECK_THAT(found.body, Contains("href=\"" + team_path + "\">Gauss &amp; co</a>"));
  CHECK_THAT(bob.get("/demo/teams?q=zzz").body, Contains("No team's name contains “zzz”"));
  auto id = team_path.substr(team_path.find('=') + 1);
  auto bobs_view = bob.get(team_path);
  CHECK_THAT(bobs_view.body, Contains("Join this team"));
  auto csrf = bob.token(team_path);
  auto joined = bob.post("/demo/team_join", form({{"csrf", csrf}, {"id", id}}));
  CHECK(joined.status == 303);
  CHECK(joined.location == team_path);
  page = bob.get(team_path);
  CHECK_THAT(page.body, Contains("<td>Bob</td>"));
  CHECK_THAT(page.body, Contains("<div class=\"value\">2</div><div class=\"label\">members"));
  CHECK(bob.post("/demo/team_leave", form({{"csrf", csrf}})).location == "/demo/account");
  CHECK_THAT(bob.get(team_path).body,
             Contains("<div class=\"value\">1</div><div class=\"label\">members"));

  // What does not exist, and forms without their token.
  CHECK(bob.post("/demo/team_join", form({{"csrf", csrf}, {"id", "999"}})).status == 404);
  CHECK(bob.post("/demo/team_join", form({{"csrf", csrf}, {"id", "x"}})).status == 400);
  CHECK(bob.get("/demo/team?id=999").status == 404);
  CHECK(bob.get("/demo/team?id=abc").status == 404);
  CHECK(bob.get("/demo/team").status == 404);
  CHECK(bob.post("/demo/team_join", form({{"id", id}})).status == 403);
  CHECK(bob.get("/demo/team?id=%zz").status == 400);
  CHECK_THAT(bob.get(team_path).body,
             Contains("<div class=\"value\">1</div><div class=\"label\">members"));
}

TEST_CASE("top lists page through volunteers, computers and teams", "[web]") {
  temp_dir dir;
  auto cfg = dir.path() / "cobble.yaml";
  {
    std::ofstream out{cfg};
    out << "projects:\n"
           "  - name: demo\n"
           "    limits: {min_sendwork_interval: 0s}\n"
           "    users:\n"
           "      - {name: demo}\n"; // the test server's own
    for (int i = 2; i <= 25; ++i)
      out << "      - {name: \"vol " << (i < 10 ? "0" : "") << i << "\""
          << (i % 5 == 0 ? ", team: \"Team <A>\"" : "") << "}\n";
    out << "    apps:\n"
           "      - name: testapp\n"
           "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  }
  server s{dir.path() / "data", {"--config", cfg.string()}};
  browser ann{s.port};
  browser bob{s.port};

  // Nobody has credit yet: ties go to the older account, 20 to a page.
  auto first = bob.get("/demo/top");
  REQUIRE(first.status == 200);
  CHECK_THAT(first.body, Contains("<h1>Top volunteers</h1>"));
  CHECK_THAT(first.body, Contains("<td class=\"num\">1</td><td>demo</td>"));
  CHECK_THAT(first.body, Contains("<td class=\"num\">2</td><td>vol 02</td>"));
  CHECK_THAT(first.body,
             Contains("<td class=\"num\">20</td><td>vol 20</td><td>Team &lt;A&gt;</td>"));
  CHECK_THAT(first.body, Contains("1–20 of 25"));
  CHECK_THAT(first.body, Contains("href=\"/demo/top?list=users&amp;sort=recent&amp;offset=20\""));
  CHECK_THAT(first.body, !Contains("Previous 20"));
  auto second = bob.get("/demo/top?list=users&sort=total&offset=20");
  REQUIRE(second.status == 200);
  CHECK_THAT(second.body, Contains("21–25 of 25"));
  CHECK_THAT(second.body, Contains("<td class=\"num\">25</td><td>vol 25</td>"));
  CHECK_THAT(second.body, Contains("offset=0\">← Previous 20"));
  CHECK_THAT(second.body, !Contains("Next 20"));
  CHECK_THAT(bob.get("/demo/top?offset=7").body, Contains("1–20 of 25")); // to a page's start
  auto teams = bob.get("/demo/top?list=teams");
  REQUIRE(teams.status == 200);
  CHECK_THAT(teams.body, Contains("<h1>Top teams</h1>"));
  CHECK_THAT(teams.body, Contains(">Team &lt;A&gt;</a>"));
  for (const auto* bad : {"/demo/top?list=bogus", "/demo/top?sort=best", "/demo/top?offset=10000",
                          "/demo/top?offset=-1", "/demo/top?offset=abc"})
    CHECK(bob.get(bad).status == 400);

  // Ann's computer attaches and gets a job: its page, and it heads the list of computers.
  REQUIRE(ann.join("Ann", "ann@example.org", "secret pass").status == 303);
  http_client c{"127.0.0.1", s.port};
  auto key = looked_up(c, "ann@example.org", "secret pass");
  REQUIRE(key.size() == 32);
  create_work(s, "wu_for_ann");
  auto reply = rpc(c, make_request(key, 0, 103680, 2, {}));
  REQUIRE(reply.hostid);
  REQUIRE(reply.jobs.size() == 1);
  auto host_path = "/demo/host?id=" + std::to_string(*reply.hostid);
  auto hosts = bob.get("/demo/top?list=hosts&sort=total");
  CHECK_THAT(hosts.body, Contains("href=\"" + host_path + "\">"));
  CHECK_THAT(hosts.body, !Contains("Ann")); // whose computer it is stays hers

  auto mine = ann.get(host_path);
  REQUIRE(mine.status == 200);
  CHECK_THAT(mine.body, Contains("<h1>Computer " + std::to_string(*reply.hostid) + "</h1>"));
  CHECK_THAT(mine.body, Contains("Your computer, named ci-runner"));
  CHECK_THAT(mine.body, Contains("Linux Debian"));
  CHECK_THAT(mine.body, Contains("GenuineIntel"));
  CHECK_THAT(mine.body, Contains(reply.jobs[0].result));
  CHECK_THAT(mine.body, !Contains("last contact never"));
  CHECK_THAT(ann.get("/demo/account").body, Contains("href=\"" + host_path + "\""));
  auto theirs = bob.get(host_path);
  REQUIRE(theirs.status == 200);
  // Whose it is and its name on her network are hers alone, as on BOINC by default.
  CHECK_THAT(theirs.body, !Contains("Ann"));
  CHECK_THAT(theirs.body, !Contains("ci-runner"));
  CHECK_THAT(theirs.body, Contains("Linux Debian"));
  CHECK(bob.get("/demo/host?id=999").status == 404);
  CHECK(bob.get("/demo/host?id=abc").status == 404);
  CHECK(bob.get("/demo/host").status == 404);
}

TEST_CASE("the account page shows credit per app, recent results and credit over time", "[web]") {
  temp_dir dir;
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                        "    limits: {min_sendwork_interval: 0s}\n"
                        "    users: [{name: demo}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        user_friendly_name: \"Test <app>\"\n"
                        "        one_result_per_user_per_wu: false\n"
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  server s{dir.path() / "data", {"--config", cfg.string()}};
  browser ann{s.port};
  REQUIRE(ann.join("Ann", "ann@example.org", "secret pass").status == 303);
  auto before = ann.get("/demo/account");
  CHECK_THAT(before.body, Contains("No credit yet"));
  CHECK_THAT(before.body, !Contains("<svg"));
  CHECK_THAT(before.body, !Contains("Recent results"));

  http_client c{"127.0.0.1", s.port};
  auto key = looked_up(c, "ann@example.org", "secret pass");
  REQUIRE(key.size() == 32);
  earn_credit(s, key);
  auto page = ann.get("/demo/account");
  REQUIRE(page.status == 200);
  // The plot: inline SVG markup with a title that says what it shows, and a table beside it.
  CHECK_THAT(page.body, Contains("<svg class=\"plot\""));
  CHECK_THAT(page.body, Contains("<title>Total credit over time: "));
  CHECK_THAT(page.body, Contains("<path class=\"line\" d=\"M48.0 "));
  CHECK_THAT(page.body, Contains("<summary>As a table</summary>"));
  CHECK_THAT(page.body, !Contains("<script"));
  CHECK_THAT(page.field("Content-Security-Policy"), Contains("default-src 'none'"));
  // Per app, its user-friendly name escaped: two jobs.
  CHECK_THAT(page.body, Contains("<td>Test &lt;app&gt;</td><td class=\"num\">2</td>"));
  // Both results, with their state, from both computers, and each computer's last contact.
  for (const auto* name : {"wu_credit_0", "wu_credit_1"})
    CHECK_THAT(page.body, Contains("<td>" + std::string{name} + "</td>"));
  CHECK_THAT(page.body, Contains("<td>valid</td>"));
  CHECK_THAT(page.body, !Contains("<td>never</td>"));
}

TEST_CASE("the status page counts the work, as BOINC's server_status.php", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  create_work(s, "wu_a");
  create_work(s, "wu_b");
  browser bob{s.port};
  http_client c{"127.0.0.1", s.port};
  auto reply = rpc(c, make_request(s.account_key, 0, 1, 1, {}));
  REQUIRE(reply.jobs.size() == 1);

  CHECK_THAT(bob.get("/demo/").body, Contains("href=\"/demo/server_status.php\""));
  auto page = bob.get("/demo/server_status.php");
  REQUIRE(page.status == 200);
  CHECK_THAT(page.body, Contains("<h1>Server status</h1>"));
  // Two replicas of each workunit: one sent, three ready.
  CHECK_THAT(page.body,
             Contains("<div class=\"value\">3</div><div class=\"label\">tasks ready to send"));
  CHECK_THAT(page.body,
             Contains("<div class=\"value\">1</div><div class=\"label\">tasks in progress"));
  CHECK_THAT(page.body, Contains("<div class=\"value\">1</div><div class=\"label\">computers in "
                                 "touch in the past 24 hours"));
  CHECK_THAT(page.body,
             Contains("<td>testapp</td><td class=\"num\">3</td><td class=\"num\">1</td>"));

  auto xml = bob.get("/demo/server_status.php?xml=1");
  REQUIRE(xml.status == 200);
  CHECK(xml.content_type.starts_with("text/xml"));
  CHECK_THAT(xml.body, Contains("<server_status>"));
  CHECK_THAT(xml.body, Contains("<results_ready_to_send>3</results_ready_to_send>"));
  CHECK_THAT(xml.body, Contains("<results_in_progress>1</results_in_progress>"));
  CHECK_THAT(xml.body, Contains("<workunits_waiting_for_assimilation>0</workunits_waiting_for_"
                                "assimilation>"));
  CHECK_THAT(xml.body, Contains("<users_registered_in_past_24_hours>1</users_registered_in_"
                                "past_24_hours>"));
  CHECK_THAT(xml.body, Contains("<hosts_registered_in_past_24_hours>1</hosts_registered_in_"
                                "past_24_hours>"));
  CHECK_THAT(xml.body, Contains("<app>\n        <id>"));
  CHECK_THAT(xml.body, Contains("<name>testapp</name>\n        <unsent>3</unsent>\n"
                                "        <in_progress>1</in_progress>\n      </app>"));
  CHECK_THAT(xml.body, Contains("<scheduler_rpcs_per_second>"));

  // The figures are kept for a minute: another job sent now shows on the next minute's page.
  http_client c2{"127.0.0.1", s.port};
  REQUIRE(!rpc(c2, make_request(s.account_key, 0, 1, 1, {})).jobs.empty());
  CHECK_THAT(bob.get("/demo/server_status.php?xml=1").body,
             Contains("<results_ready_to_send>3</results_ready_to_send>"));
}

TEST_CASE("an operator logs in with the admin token, browses work and cancels it", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  create_work(s, "wu_a");
  create_work(s, "wu_b");
  http_client c{"127.0.0.1", s.port};
  auto reply = rpc(c, make_request(s.account_key, 0, 1, 1, {}));
  REQUIRE(reply.jobs.size() == 1);
  browser op{s.port};

  // Nobody sees an operator page without logging in: each sends to the log-in form.
  for (const char* page : {"/demo/ops/", "/demo/ops/workunits", "/demo/ops/workunit?name=wu_a",
                           "/demo/ops/host?id=1", "/demo/ops/user?id=1"}) {
    auto r = op.get(page);
    CHECK(r.status == 303);
    CHECK(r.location == "/demo/ops/login");
  }
  // A volunteer's session is no operator's.
  browser volunteer{s.port};
  REQUIRE(volunteer.join("Vera", "vera@example.org", "a long passphrase").status == 303);
  CHECK(volunteer.get("/demo/ops/workunits").status == 303);

  // A wrong token is refused and counted; the right one opens the pages.
  auto csrf = op.token("/demo/ops/login");
  auto wrong = op.post("/demo/ops/login", form({{"csrf", csrf}, {"token", "not-the-token"}}));
  CHECK(wrong.status == 401);
  CHECK_THAT(wrong.body, Contains("That is not the admin token."));
  CHECK(op.jar.count("cobble_operator") == 0);
  auto in = op.post("/demo/ops/login", form({{"csrf", csrf}, {"token", s.token}}));
  REQUIRE(in.status == 303);
  CHECK(in.location == "/demo/ops/");
  REQUIRE(op.jar.count("cobble_operator") == 1);

  auto home = op.get("/demo/ops/");
  REQUIRE(home.status == 200);
  CHECK_THAT(home.body, Contains("href=\"/demo/ops/workunits?state=failed\""));

  // Active workunits, oldest first, with their results in words.
  auto list = op.get("/demo/ops/workunits?state=active");
  REQUIRE(list.status == 200);
  CHECK_THAT(list.body, Contains("<a href=\"/demo/ops/workunit?name=wu_a\">wu_a</a>"));
  CHECK_THAT(list.body, Contains("<td>1 in progress, 1 unsent</td>"));
  CHECK_THAT(list.body, Contains("<td>2 unsent</td>"));
  CHECK(list.body.find("wu_a") < list.body.find("wu_b"));
  CHECK(op.get("/demo/ops/workunits?state=lost").status == 400);
  CHECK(op.get("/demo/ops/workunits?state=active&after=x").status == 400);
  CHECK(op.get("/demo/ops/workunits?app=nope").status == 400);
  CHECK_THAT(op.get("/demo/ops/workunits?state=any&app=testapp").body,
             Contains("<option selected>testapp</option>"));

  // Results across workunits, by state in words, app and host.
  auto results = op.get("/demo/ops/results?state=in%20progress");
  REQUIRE(results.status == 200);
  CHECK_THAT(results.body, Contains("<h1>Results: in progress</h1>"));
  CHECK_THAT(results.body, Contains("<a href=\"/demo/ops/workunit?name=" + reply.jobs[0].result
                                    + "\">" + reply.jobs[0].result + "</a>"));
  CHECK_THAT(results.body, Contains("<option selected>in progress</option>"));
  auto unsent = op.get("/demo/ops/results?state=unsent&app=testapp");
  CHECK(unsent.body.find(reply.jobs[0].result) == std::string::npos);
  CHECK_THAT(unsent.body, Contains("wu_b_1"));
  auto on_host = op.get("/demo/ops/results?host=" + std::to_string(*reply.hostid));
  CHECK_THAT(on_host.body, Contains(reply.jobs[0].result));
  CHECK(on_host.body.find("wu_b_0") == std::string::npos);
  CHECK_THAT(op.get("/demo/ops/results?host=999").body, Contains("No results in this state here"));
  CHECK(op.get("/demo/ops/results?state=lost").status == 400);
  CHECK_THAT(op.get("/demo/ops/results?state=lost").body, Contains("No result state"));
  CHECK(op.get("/demo/ops/results?host=x").status == 400);
  CHECK(op.get("/demo/ops/results?after=1.x").status == 400);
  CHECK(op.get("/demo/ops/results").status == 200);
  CHECK_THAT(op.get("/demo/ops/workunits?state=cancelled").body,
             Contains("No cancelled workunits"));

  // One workunit: a result's name opens its workunit; the host links to its page.
  auto wu = op.get("/demo/ops/workunit?name=" + reply.jobs[0].result);
  REQUIRE(wu.status == 200);
  auto wu_name = reply.jobs[0].wu;
  CHECK_THAT(wu.body, Contains("<h1>Workunit " + wu_name + "</h1>"));
  CHECK_THAT(wu.body, Contains("<td>in progress</td>"));
  CHECK_THAT(wu.body, Contains("href=\"/demo/ops/host?id="));
  CHECK(op.get("/demo/ops/workunit?name=nothing_here").status == 404);

  auto host = op.get("/demo/ops/host?id=" + std::to_string(*reply.hostid));
  REQUIRE(host.status == 200);
  CHECK_THAT(host.body, Contains("<a href=\"/demo/ops/workunit?name=" + reply.jobs[0].result));
  CHECK(op.get("/demo/ops/host?id=999").status == 404);
  auto user = op.get("/demo/ops/user?id=1");
  REQUIRE(user.status == 200);
  CHECK_THAT(user.body, Contains("href=\"/demo/ops/host?id=" + std::to_string(*reply.hostid)));
  CHECK(op.get("/demo/ops/user?id=999").status == 404);

  // Cancelling: a form without the token changes nothing; with it the workunit is cancelled,
  // its page says so and it is listed as cancelled; a second cancel is refused with why.
  CHECK(op.post("/demo/ops/cancel", form({{"name", wu_name}})).status == 403);
  auto form_token = op.token("/demo/ops/workunit?name=" + wu_name);
  auto cancelled = op.post("/demo/ops/cancel", form({{"csrf", form_token},
                                                     {"name", wu_name},
                                                     {"reason", "bad input file"}}));
  REQUIRE(cancelled.status == 200);
  CHECK_THAT(cancelled.body, Contains("Cancelled."));
  CHECK_THAT(cancelled.body, Contains("<strong>cancelled</strong>"));
  CHECK_THAT(op.get("/demo/ops/workunits?state=cancelled").body, Contains(">" + wu_name + "</a>"));
  auto again = op.post("/demo/ops/cancel", form({{"csrf", form_token}, {"name", wu_name}}));
  CHECK(again.status == 409);
  CHECK_THAT(again.body, Contains("Not cancelled: workunit " + wu_name + " is cancelled already"));
  auto admin = admin_get(s, "/api/projects/demo/workunits/" + wu_name);
  CHECK(admin["state"] == "cancelled");
  // The host's page lists the result taken back among those it finished, and links to
  // every result sent to it.
  auto host_after = op.get("/demo/ops/host?id=" + std::to_string(*reply.hostid));
  auto finished_at = host_after.body.find("<h2>Finished lately</h2>");
  REQUIRE(finished_at != std::string::npos);
  CHECK(host_after.body.find(">" + reply.jobs[0].result + "</a>", finished_at)
        != std::string::npos);
  CHECK_THAT(host_after.body,
             Contains("href=\"/demo/ops/results?host=" + std::to_string(*reply.hostid) + "\""));
  CHECK_THAT(op.get("/demo/ops/user?id=1").body, Contains("<h2>Recent results</h2>"));

  // The workunit's story, from the event log, in sentences with names and times.
  CHECK_THAT(op.get("/demo/ops/workunit?name=" + wu_name).body,
             Contains("href=\"/demo/ops/story?of=wu:" + wu_name + "\""));
  auto story = op.get("/demo/ops/story?of=wu:" + wu_name);
  REQUIRE(story.status == 200);
  CHECK_THAT(story.body, Contains("Workunit " + wu_name + " created by "));
  CHECK_THAT(story.body, Contains("Result " + reply.jobs[0].result + " sent to host "
                                  + std::to_string(*reply.hostid) + ", which asked for work"));
  CHECK_THAT(story.body, Contains("Workunit cancelled by operator (web): bad input file; taken "
                                  "back: "
                                  + reply.jobs[0].result));
  CHECK(story.body.find(" created by ") < story.body.find(" sent to host "));
  CHECK(story.body.find("wu_b") == std::string::npos);
  CHECK_THAT(story.body, Contains(" UTC</time>"));
  // A host's story and an account's; an earlier window holds only what came before.
  auto host_story = op.get("/demo/ops/story?of=host:" + std::to_string(*reply.hostid));
  REQUIRE(host_story.status == 200);
  CHECK_THAT(host_story.body, Contains("attached for account"));
  CHECK_THAT(host_story.body, Contains("Result " + reply.jobs[0].result + " sent to host"));
  CHECK_THAT(op.get("/demo/ops/story?of=user:1").body, Contains("attached for account 1"));
  auto early = op.get("/demo/ops/story?of=wu:" + wu_name + "&before=2");
  REQUIRE(early.status == 200);
  CHECK_THAT(early.body, Contains("Nothing in these events."));
  CHECK(op.get("/demo/ops/story?of=wu:no_such").status == 404);
  CHECK(op.get("/demo/ops/story?of=team:1").status == 400);
  CHECK(op.get("/demo/ops/story?of=host:x").status == 400);
  CHECK(op.get("/demo/ops/story?of=host:1&before=x").status == 400);

  // Logging out ends the session.
  auto out = op.post("/demo/ops/logout", form({{"csrf", form_token}}));
  CHECK(out.status == 303);
  CHECK(op.jar.count("cobble_operator") == 0);
  CHECK(op.get("/demo/ops/").status == 303);
}

TEST_CASE("guesses at the admin token are slowed", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  browser guesser{s.port};
  auto csrf = guesser.token("/demo/ops/login");
  int refused = 0;
  for (int i = 0; i < 5; ++i)
    refused += guesser.post("/demo/ops/login", form({{"csrf", csrf}, {"token", "guess"}})).status
               == 401;
  CHECK(refused == 5);
  // Now even the right token waits: guesses cannot go on at speed.
  auto held = guesser.post("/demo/ops/login", form({{"csrf", csrf}, {"token", s.token}}));
  CHECK(held.status == 429);
  CHECK(guesser.jar.count("cobble_operator") == 0);
  // The admin API's bearer token is not held back by it.
  CHECK(admin_get(s, "/api/projects/demo")["name"] == "demo");
}

TEST_CASE("an operator pages through workunits and results, filters kept", "[web]") {
  temp_dir dir;
  server s{dir.path()};
  json items = json::array();
  for (int i = 0; i < 60; ++i)
    items.push_back({{"app", "testapp"}, {"name", "wu_page_" + std::to_string(100 + i)}});
  http_client admin{"127.0.0.1", s.admin_port};
  auto made = admin.post("/api/projects/demo/workunits", json{{"items", items}}.dump(), s.token,
                         "application/json");
  REQUIRE(made.status == 201);
  browser op{s.port};
  auto csrf = op.token("/demo/ops/login");
  REQUIRE(op.post("/demo/ops/login", form({{"csrf", csrf}, {"token", s.token}})).status == 303);

  // 50 workunits a page, oldest first; the next page starts after the last one shown.
  auto first = op.get("/demo/ops/workunits?state=active&app=testapp");
  REQUIRE(first.status == 200);
  CHECK_THAT(first.body, Contains(">wu_page_149</a>"));
  CHECK(first.body.find(">wu_page_150</a>") == std::string::npos);
  auto next_at = first.body.find(
    "href=\"/demo/ops/workunits?state=active&amp;app=testapp&amp;after=");
  REQUIRE(next_at != std::string::npos);
  auto target = first.body.substr(next_at + 6, first.body.find('"', next_at + 6) - next_at - 6);
  for (auto amp = target.find("&amp;"); amp != std::string::npos; amp = target.find("&amp;"))
    target.replace(amp, 5, "&");
  auto second = op.get(target);
  REQUIRE(second.status == 200);
  CHECK_THAT(second.body, Contains(">wu_page_150</a>"));
  CHECK_THAT(second.body, Contains(">wu_page_159</a>"));
  CHECK(second.body.find(">wu_page_149</a>") == std::string::npos);
  CHECK_THAT(second.body, Contains("← First page"));
  CHECK_THAT(second.body, Contains("<option selected>testapp</option>"));

  // Results: two per workunit, so the first page of 50 ends at the 25th workunit.
  auto results = op.get("/demo/ops/results?state=unsent");
  REQUIRE(results.status == 200);
  CHECK_THAT(results.body, Contains(">wu_page_124_1</a>"));
  CHECK(results.body.find(">wu_page_125_0</a>") == std::string::npos);
  CHECK_THAT(results.body, Contains("state=unsent&amp;after="));
}
