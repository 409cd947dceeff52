// The site's signed cookies: a session holds for its account as it is until it ends, and
// any change to the cookie, the account's password or key, the project or the server's secret
// ends it; form tokens go only with the cookie they were made for.

#include "net/web_session.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace cobble::net::web;

namespace {
const site_key key{"a secret of at least sixteen bytes"};
constexpr std::int64_t now = 1'800'000'000;
} // namespace

TEST_CASE("a session holds for its account until it ends", "[web]") {
  auto value = session_value(key, "demo", 42, now + 100, "authkey", "$argon2id$stored");
  auto claim = read_session(value, now);
  REQUIRE(claim);
  CHECK(claim->user == 42);
  CHECK(claim->expires == now + 100);
  CHECK(session_valid(key, "demo", *claim, "authkey", "$argon2id$stored"));
  // Ended.
  CHECK_FALSE(read_session(value, now + 100));
  // Another project, a changed password or account key, another server's secret.
  CHECK_FALSE(session_valid(key, "other", *claim, "authkey", "$argon2id$stored"));
  CHECK_FALSE(session_valid(key, "demo", *claim, "authkey", "$argon2id$changed"));
  CHECK_FALSE(session_valid(key, "demo", *claim, "newkey", "$argon2id$stored"));
  const site_key other{"another secret, sixteen bytes or more"};
  CHECK_FALSE(session_valid(other, "demo", *claim, "authkey", "$argon2id$stored"));
}

TEST_CASE("an altered session cookie is refused", "[web]") {
  auto value = session_value(key, "demo", 42, now + 100, "authkey", "stored");
  // Another account, a later end: the MAC no longer fits.
  auto other_user = "43" + value.substr(2);
  auto claim = read_session(other_user, now);
  REQUIRE(claim);
  CHECK_FALSE(session_valid(key, "demo", *claim, "authkey", "stored"));
  auto dot = value.find('.', 3);
  auto later = value.substr(0, 3) + std::to_string(now + 10'000'000) + value.substr(dot);
  claim = read_session(later, now);
  REQUIRE(claim);
  CHECK_FALSE(session_valid(key, "demo", *claim, "authkey", "stored"));
  // Malformed.
  for (const char* bad : {"", "42", "42.1", "x.1800000100.ab", "0.1800000100.ab", "42.y.ab",
                          "42.1800000100.short", "-1.1800000100.ab"})
    CHECK_FALSE(read_session(bad, now));
  CHECK_THROWS_AS(site_key{"too short"}, std::invalid_argument);
}

TEST_CASE("an operator's session holds for the admin token until it ends", "[web]") {
  auto value = operator_value(key, "demo", now + 100, "the-admin-token");
  CHECK(operator_valid(key, "demo", value, now, "the-admin-token"));
  // Ended; a new token, another project, another server's secret; no token at all.
  CHECK_FALSE(operator_valid(key, "demo", value, now + 100, "the-admin-token"));
  CHECK_FALSE(operator_valid(key, "demo", value, now, "a-new-token"));
  CHECK_FALSE(operator_valid(key, "other", value, now, "the-admin-token"));
  CHECK_FALSE(operator_valid(site_key{"another secret, sixteen bytes+"}, "demo", value, now,
                             "the-admin-token"));
  CHECK_FALSE(operator_valid(key, "demo", operator_value(key, "demo", now + 100, ""), now, ""));
  // Altered: a later end, a changed MAC, no MAC, garbage.
  auto dot = value.find('.');
  CHECK_FALSE(operator_valid(key, "demo", std::to_string(now + 200) + value.substr(dot), now,
                             "the-admin-token"));
  auto flipped = value;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  CHECK_FALSE(operator_valid(key, "demo", flipped, now, "the-admin-token"));
  CHECK_FALSE(operator_valid(key, "demo", value.substr(0, dot + 1), now, "the-admin-token"));
  CHECK_FALSE(operator_valid(key, "demo", "x.y", now, "the-admin-token"));
  // A volunteer's session is no operator's.
  CHECK_FALSE(operator_valid(key, "demo", session_value(key, "demo", 1, now + 100, "a", "b"), now,
                             "the-admin-token"));
}

TEST_CASE("a form token goes with its cookie only", "[web]") {
  auto cookie = new_csrf_value();
  CHECK(cookie.size() == 32);
  CHECK(new_csrf_value() != cookie);
  auto field = csrf_field(key, "demo", cookie);
  CHECK(csrf_matches(key, "demo", cookie, field));
  CHECK_FALSE(csrf_matches(key, "demo", new_csrf_value(), field));
  CHECK_FALSE(csrf_matches(key, "other", cookie, field));
  CHECK_FALSE(csrf_matches(key, "demo", cookie, field.substr(1)));
  CHECK_FALSE(csrf_matches(key, "demo", "", csrf_field(key, "demo", "")));
}

TEST_CASE("cookies are read from the header and written with their attributes", "[web]") {
  CHECK(cookie_value("a=1; cobble_session=42.9.ab; b=2", "cobble_session") == "42.9.ab");
  CHECK(cookie_value("cobble_session=\"x\"", "cobble_session") == "x");
  CHECK(cookie_value("xcobble_session=1", "cobble_session") == std::nullopt);
  CHECK(cookie_value("", "cobble_session") == std::nullopt);
  CHECK(cookie_value("cobble_session", "cobble_session") == std::nullopt);
  CHECK(set_cookie("n", "v", "/demo/", 60, "Lax", false)
        == "n=v; Path=/demo/; Max-Age=60; HttpOnly; SameSite=Lax");
  CHECK(set_cookie("n", "", "/demo/", 0, "Strict", true)
        == "n=; Path=/demo/; Max-Age=0; HttpOnly; SameSite=Strict; Secure");
}
