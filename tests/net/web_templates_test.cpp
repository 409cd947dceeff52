// The site's templates: every one parses, what volunteers typed is shown as text, and the
// layout frames every page with the project's name and who is logged in.

#include "net/web_templates.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace cobble::net::web;
using Catch::Matchers::Contains;

TEST_CASE("every template parses", "[web]") {
  CHECK_NOTHROW(check_templates());
  for (const char* page : {"layout", "home", "login", "create_account", "account", "message"})
    CHECK(template_texts().count(page) == 1);
  CHECK_THROWS_AS(render("no such page", data{object{}}, frame{}), std::invalid_argument);
}

TEST_CASE("values are escaped and the layout frames the page", "[web]") {
  frame f{"Your account", "P & <Q>", "/demo/", "<img src=x onerror=alert(1)>", "tok", ""};
  data values{object{{"name", std::string{"\"quoted\" & <b>bold</b> 'single'"}},
                     {"email", std::string{"a@b.c"}},
                     {"created", std::string{"2026-12-03"}},
                     {"authenticator", std::string{"k"}},
                     {"total_credit", std::string{"1"}},
                     {"recent_credit", std::string{"2"}},
                     {"host_count", std::string{"0"}}}};
  values.set("has_hosts", false);
  values.set("hosts", list{});
  auto page = render("account", values, f);
  CHECK_THAT(page, Contains("&quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt; &apos;single&apos;"));
  CHECK_THAT(page, Contains("<title>Your account · P &amp; &lt;Q&gt;</title>"));
  CHECK_THAT(page, Contains("&lt;img src=x onerror=alert(1)&gt;"));
  CHECK(page.find("<img") == std::string::npos);
  CHECK(page.find("<b>") == std::string::npos);
  // The log-out button carries the form token.
  CHECK_THAT(page, Contains("action=\"/demo/logout\"><input type=\"hidden\" name=\"csrf\" "
                            "value=\"tok\">"));
  // Nobody logged in: links to log in and join instead.
  f.user.clear();
  auto anonymous = render("account", values, f);
  CHECK_THAT(anonymous, Contains("href=\"/demo/login\""));
  CHECK(anonymous.find("logout") == std::string::npos);
}
