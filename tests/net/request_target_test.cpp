#include "net/request_target.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace cobble::net;

TEST_CASE("percent_decode decodes escapes and refuses malformed ones", "[net][target]") {
  CHECK(percent_decode("plain") == "plain");
  CHECK(percent_decode("a%20b%2fc%2F") == "a b/c/");
  CHECK(percent_decode("%e2%82%AC") == "\xe2\x82\xac");
  CHECK(percent_decode("1+1") == "1+1");
  CHECK(percent_decode("") == "");
  CHECK_FALSE(percent_decode("%"));
  CHECK_FALSE(percent_decode("ab%2"));
  CHECK_FALSE(percent_decode("%zz"));
  CHECK_FALSE(percent_decode("%2g"));
}

TEST_CASE("a target splits into decoded segments and query parameters", "[net][target]") {
  auto t = split_target("/api//projects/my%20project/workunits/a%2Fb/?offset=3&limit=%31%30");
  REQUIRE(t);
  CHECK(t->path == std::vector<std::string>{"api", "projects", "my project", "workunits", "a/b"});
  CHECK(t->query == std::map<std::string, std::string>{{"offset", "3"}, {"limit", "10"}});

  auto q = split_target("/x?flag&k=1&&k=2&e=&a%3Db=c%26d");
  REQUIRE(q);
  CHECK(q->path == std::vector<std::string>{"x"});
  CHECK(q->query
        == std::map<std::string, std::string>{{"flag", ""}, {"k", "2"}, {"e", ""}, {"a=b", "c&d"}});

  auto root = split_target("/");
  REQUIRE(root);
  CHECK(root->path.empty());
  CHECK(root->query.empty());
}

TEST_CASE("a malformed escape anywhere in the target is refused", "[net][target]") {
  CHECK_FALSE(split_target("/api/projects/%zz"));
  CHECK_FALSE(split_target("/api/projects?limit=%1"));
  CHECK_FALSE(split_target("/api/projects?%g0=1"));
  CHECK(split_target("/api/projects?limit=%31"));
}

TEST_CASE("a Host header is a host name or address with an optional port", "[net][target]") {
  for (std::string_view good :
       {"example.org", "boinc.example.org:8080", "127.0.0.1:0", "127.0.0.1", "localhost",
        "my_host-1.lan", "[::1]", "[::1]:80", "[fe80::1]:65535", "EXAMPLE.ORG"}) {
    INFO(good);
    CHECK(valid_host(good));
  }
  for (std::string_view bad : {"", "bad host", "a/b", "x:99999", "x:65536", "x:", ":80", "[::1",
                               "[::1]x", "[]", "[::1]:", "user@example.org", "ex\"ample",
                               "\xc3\xa9.com", "x:8o", "x:000008080", "<a>", "a\tb"}) {
    INFO(bad);
    CHECK_FALSE(valid_host(bad));
  }
  CHECK_FALSE(valid_host(std::string(256, 'a')));
  CHECK(valid_host(std::string(255, 'a')));
}
