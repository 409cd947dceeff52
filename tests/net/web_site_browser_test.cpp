// The volunteer site in a real browser: Debian's Chromium, headless, driven through the
// DevTools protocol as a volunteer uses it. They join, log out and in, see the credit their
// computers earned, make a team, leave and join it, and log out; every page fits a phone's
// width, and screenshots of each page at phone and desktop width are written to
// BUILD/artefacts/site/ for people to look at.

#include "../support/cobbled.hpp"
#include "../support/devtools.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace cobble::test;

namespace {

const fs::path artefacts = fs::path{COBBLE_BINARY_DIR} / "artefacts" / "site";

/// Shows the page at a phone's and a desktop's width (laid out again at each): it must fit
/// the phone without sideways scrolling (wide tables scroll in their own box); both are
/// written as screenshots.
void look_at(devtools_browser& b, const std::string& name) {
  b.resize(390, 844, true);
  INFO(name << " at 390 px: " << b.url());
  CHECK(b.fits_width());
  b.screenshot(artefacts / (name + "-phone.png"));
  b.resize(1280, 900, false);
  b.screenshot(artefacts / (name + "-desktop.png"));
}

} // namespace

TEST_CASE("a volunteer uses the site in Chromium, on a phone and a desktop", "[web][browser]") {
  temp_dir dir;
  // One user's two computers may share a workunit, so one volunteer earns credit alone.
  auto cfg = dir.path() / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                        "    long_name: Cobble demo project\n"
                        "    description: Searching for nothing in particular, carefully.\n"
                        "    limits: {min_sendwork_interval: 0s}\n"
                        "    users: [{name: demo}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        one_result_per_user_per_wu: false\n"
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  server s{dir.path() / "data", {"--config", cfg.string()}};
  const auto site = "http://127.0.0.1:" + std::to_string(s.port) + "/demo/";
  devtools_browser b{dir.path() / "chromium"};

  b.open(site);
  CHECK(b.text().find("Join with the BOINC Manager") != std::string::npos);
  look_at(b, "home");

  // Join.
  b.click("a[href='/demo/create_account']");
  look_at(b, "create_account");
  b.type("#name", "Ann Lee");
  b.type("#email", "ann@example.org");
  b.type("#password", "secret pass");
  b.click("form.stacked button[type=submit]");
  CHECK(b.url() == site + "account");
  CHECK(b.text().find("Ann Lee") != std::string::npos);
  CHECK(b.text().find("No computer has attached") != std::string::npos);

  // Log out, then in again; a wrong password first.
  b.click("header form button");
  CHECK(b.url() == site);
  b.click("a[href='/demo/login']");
  b.type("#email", "ann@example.org");
  b.type("#password", "not it");
  b.click("form.stacked button[type=submit]");
  CHECK(b.text().find("Wrong e-mail address or password.") != std::string::npos);
  look_at(b, "login-refused");
  b.type("#password", "secret pass");
  b.click("form.stacked button[type=submit]");
  REQUIRE(b.url() == site + "account");

  // Her computers earn credit; the account page shows it and them.
  auto key = b.eval("document.querySelector('code').textContent").get<std::string>();
  REQUIRE(key.size() == 32);
  earn_credit(s, key);
  b.open(site + "account");
  auto total = b.eval("document.querySelector('.figure .value').textContent").get<std::string>();
  INFO("total credit shown: " << total);
  CHECK(total != "0.00");
  CHECK(std::stod(total) > 0);
  CHECK(b.eval("document.querySelectorAll('table.hosts tbody tr').length").get<int>() == 2);
  // Credit over time as a plot that fits the phone's width, per app, and the two results.
  CHECK(b.eval("document.querySelectorAll('svg.plot path.line').length").get<int>() == 1);
  b.resize(390, 844, true);
  CHECK(
    b.eval("document.querySelector('svg.plot').getBoundingClientRect().width <= 390").get<bool>());
  CHECK(b.eval("document.querySelectorAll('table.apps tbody tr').length").get<int>() == 1);
  CHECK(b.eval("document.querySelectorAll('table.recent tbody tr').length").get<int>() == 2);
  CHECK(b.text().find("valid") != std::string::npos);
  look_at(b, "account");

  // A team: made (and joined), left, joined again.
  b.click("a[href='/demo/teams']");
  look_at(b, "teams-empty");
  b.click("a[href='/demo/create_team']");
  look_at(b, "create_team");
  b.type("#name", "Gauss & co");
  b.type("#description", "We look for primes together.");
  b.type("#url", "https://example.org/gauss");
  b.click("form.stacked button[type=submit]");
  CHECK(b.text().find("You are a member.") != std::string::npos);
  look_at(b, "team");
  auto team_url = b.url();
  b.click("form[action='/demo/team_leave'] button");
  CHECK(b.url() == site + "account");
  CHECK(b.text().find("none yet") != std::string::npos);
  b.open(team_url);
  b.click("form[action='/demo/team_join'] button");
  CHECK(b.url() == team_url);
  CHECK(b.text().find("You are a member.") != std::string::npos);
  b.click("a[href='/demo/teams']");
  CHECK(b.text().find("Gauss & co") != std::string::npos);
  look_at(b, "teams");

  // The top lists: she and her team lead; her computer's page.
  b.click("header a[href='/demo/top']");
  CHECK(b.eval("document.querySelector('tbody tr td:nth-child(2)').textContent").get<std::string>()
        == "Ann Lee");
  look_at(b, "top-users");
  b.click("a[href='/demo/top?list=hosts&sort=recent']");
  look_at(b, "top-hosts");
  b.click("tbody a");
  CHECK(b.text().find("Your computer") != std::string::npos);
  CHECK(b.text().find("last contact never") == std::string::npos);
  look_at(b, "host");
  b.open(site + "top?list=teams&sort=total");
  CHECK(b.text().find("Gauss & co") != std::string::npos);
  look_at(b, "top-teams");
  b.open(site);
  b.click("a[href='/demo/server_status.php']");
  CHECK(b.text().find("tasks ready to send") != std::string::npos);
  look_at(b, "status");

  // Log out: the account page is closed to this browser again.
  b.click("header form button");
  b.open(site + "account");
  CHECK(b.url() == site + "login");
  for (const auto* name : {"home", "create_account", "account", "team", "teams", "top-users",
                           "top-hosts", "host", "status"})
    CHECK(fs::file_size(artefacts / (std::string{name} + "-phone.png")) > 1000);
}

TEST_CASE("an operator browses and cancels work in Chromium, on a phone and a desktop",
          "[web][browser]") {
  temp_dir dir;
  server s{dir.path() / "data"};
  create_work(s, "wu_stuck");
  create_work(s, "wu_fine");
  http_client c{"127.0.0.1", s.port};
  auto reply = rpc(c, make_request(s.account_key, 0, 1, 1, {}));
  REQUIRE(reply.jobs.size() == 1);
  const auto site = "http://127.0.0.1:" + std::to_string(s.port) + "/demo/";
  devtools_browser b{dir.path() / "chromium"};

  // The operator pages send to the log-in form; a wrong token is refused.
  b.open(site + "ops/workunits");
  CHECK(b.url() == site + "ops/login");
  look_at(b, "ops-login");
  b.type("#token", "not the token");
  b.click("form.stacked button[type=submit]");
  CHECK(b.text().find("That is not the admin token.") != std::string::npos);
  b.type("#token", s.token);
  b.click("form.stacked button[type=submit]");
  REQUIRE(b.url() == site + "ops/");
  look_at(b, "ops-home");

  // Active workunits; one of them, its results in words, its host.
  b.click("header a[href='/demo/ops/workunits']");
  CHECK(b.eval("document.querySelectorAll('tbody tr').length").get<int>() == 2);
  look_at(b, "ops-workunits");
  b.click("a[href='/demo/ops/workunit?name=" + reply.jobs[0].wu + "']");
  CHECK(b.text().find("in progress") != std::string::npos);
  look_at(b, "ops-workunit");
  // Results in progress, from the filter form; their host.
  b.open(site + "ops/results");
  b.eval("document.querySelector('#state').value = 'in progress'");
  b.click("form.search button[type=submit]");
  CHECK(b.url().find("ops/results?state=in+progress") != std::string::npos);
  CHECK(b.eval("document.querySelectorAll('tbody tr').length").get<int>() == 1);
  look_at(b, "ops-results");
  b.click("tbody a[href^='/demo/ops/host']");
  CHECK(b.text().find("Jobs in progress") != std::string::npos);
  look_at(b, "ops-host");
  b.click("a[href^='/demo/ops/user']");
  CHECK(b.text().find("demo") != std::string::npos);
  look_at(b, "ops-user");

  // Cancel the workunit the host holds; it is listed as cancelled.
  b.open(site + "ops/workunit?name=" + reply.jobs[0].wu);
  b.type("#reason", "its input was wrong");
  b.click("form[action='/demo/ops/cancel'] button");
  CHECK(b.text().find("Cancelled.") != std::string::npos);
  CHECK(b.text().find("Cancel this workunit") == std::string::npos);
  look_at(b, "ops-cancelled");
  b.click("a[href^='/demo/ops/story']");
  CHECK(b.text().find("Workunit cancelled by operator (web): its input was wrong")
        != std::string::npos);
  look_at(b, "ops-story");
  b.open(site + "ops/workunits?state=cancelled");
  CHECK(b.text().find(reply.jobs[0].wu) != std::string::npos);
  CHECK(admin_get(s, "/api/projects/demo/workunits/" + reply.jobs[0].wu)["state"] == "cancelled");

  // Log out: the pages are closed to this browser again.
  b.click("header form button");
  CHECK(b.url() == site + "ops/login");
  b.open(site + "ops/");
  CHECK(b.url() == site + "ops/login");
  for (const auto* name : {"ops-login", "ops-home", "ops-workunits", "ops-workunit", "ops-results",
                           "ops-host", "ops-user", "ops-story"})
    CHECK(fs::file_size(artefacts / (std::string{name} + "-phone.png")) > 1000);
}
