#include "net/request_target.hpp"
#include "net/route_table.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace cobble::net;
using http::verb;

namespace {

/// The decoded path segments of `target`.
std::vector<std::string> path_of(std::string_view target) {
  auto t = split_target(target);
  REQUIRE(t);
  return t->path;
}

/// A table whose handlers are their names.
route_table<std::string> sample_table() {
  route_table<std::string> t;
  t.add(verb::get, "/api/projects", "list projects");
  t.add(verb::get, "/api/projects/{project}", "show project");
  t.add(verb::get, "/api/projects/{project}/workunits", "list workunits");
  t.add(verb::post, "/api/projects/{project}/workunits", "create work");
  t.add(verb::get, "/api/projects/{project}/workunits/{workunit}", "show workunit");
  t.add(verb::post, "/api/projects/{project}/sequences/{sequence}/end", "end sequence");
  return t;
}

} // namespace

TEST_CASE("a route pattern binds its named segments", "[net][route]") {
  route_pattern p{"/api/projects/{project}/workunits/{workunit}"};
  CHECK(p.text() == "/api/projects/{project}/workunits/{workunit}");
  auto bound = p.match(path_of("/api/projects/demo/workunits/wu-1"));
  REQUIRE(bound);
  CHECK(*bound == route_params{{"project", "demo"}, {"workunit", "wu-1"}});
  // Literals must be equal, and the path must have exactly the pattern's segments.
  CHECK_FALSE(p.match(path_of("/api/projects/demo/hosts/wu-1")));
  CHECK_FALSE(p.match(path_of("/api/projects/demo/workunits")));
  CHECK_FALSE(p.match(path_of("/api/projects/demo/workunits/wu-1/more")));
  // Empty segments do not count, in the path as in the pattern.
  CHECK(p.match(path_of("//api/projects//demo/workunits/wu-1/")));
  CHECK(route_pattern{"api//projects/"}.match(path_of("/api/projects")));
  CHECK(route_pattern{"/"}.match(path_of("/")));
}

TEST_CASE("a prefix match binds the leading segments", "[net][route]") {
  route_pattern scope{"/api/projects/{project}"};
  auto deeper = scope.match_prefix(path_of("/api/projects/demo/sequences/s/end"));
  REQUIRE(deeper);
  CHECK(*deeper == route_params{{"project", "demo"}});
  CHECK(scope.match_prefix(path_of("/api/projects/demo")));
  CHECK_FALSE(scope.match_prefix(path_of("/api/projects")));
  CHECK_FALSE(scope.match_prefix(path_of("/api/credit/demo")));
  CHECK_FALSE(scope.match(path_of("/api/projects/demo/apps")));
}

TEST_CASE("segments are matched and bound percent-decoded", "[net][route]") {
  route_pattern p{"/api/projects/{project}/workunits/{workunit}"};
  auto bound = p.match(path_of("/api/projects/my%20project/workunits/a%2Fb%25c"));
  REQUIRE(bound);
  CHECK(bound->at("project") == "my project");
  // An escaped slash is part of its segment, not a separator.
  CHECK(bound->at("workunit") == "a/b%c");
  // A literal matches its escaped spelling too.
  CHECK(p.match(path_of("/api/proj%65cts/demo/%77orkunits/x")));
  CHECK_FALSE(split_target("/api/projects/bad%2"));
}

TEST_CASE("malformed route patterns are refused", "[net][route]") {
  CHECK_THROWS_AS(route_pattern{"/api/{}"}, std::invalid_argument);
  CHECK_THROWS_AS(route_pattern{"/api/{a}/x/{a}"}, std::invalid_argument);
  CHECK_THROWS_AS(route_pattern{"/api/pre{a}"}, std::invalid_argument);
  CHECK_THROWS_AS(route_pattern{"/api/{a}post"}, std::invalid_argument);
  CHECK_THROWS_AS(route_pattern{"/api/{a{b}"}, std::invalid_argument);
  CHECK_THROWS_AS(route_pattern{"/api/{"}, std::invalid_argument);
  route_table<int> t;
  CHECK_THROWS_AS(t.add(verb::get, "/x/{}", 1), std::invalid_argument);
  CHECK(t.entries().empty());
}

TEST_CASE("the route table finds the route of a method and path", "[net][route]") {
  auto t = sample_table();
  auto shown = t.match(verb::get, path_of("/api/projects/demo/workunits/wu%201"));
  REQUIRE(shown.outcome == route_outcome::found);
  REQUIRE(shown.route != nullptr);
  CHECK(shown.route->handler == "show workunit");
  CHECK(shown.route->method == verb::get);
  CHECK(shown.route->pattern.text() == "/api/projects/{project}/workunits/{workunit}");
  CHECK(shown.params == route_params{{"project", "demo"}, {"workunit", "wu 1"}});

  // One path, a route per method.
  auto listed = t.match(verb::get, path_of("/api/projects/demo/workunits?limit=5"));
  REQUIRE(listed.outcome == route_outcome::found);
  CHECK(listed.route->handler == "list workunits");
  auto created = t.match(verb::post, path_of("/api/projects/demo/workunits"));
  REQUIRE(created.outcome == route_outcome::found);
  CHECK(created.route->handler == "create work");

  auto all = t.match(verb::get, path_of("/api/projects"));
  REQUIRE(all.outcome == route_outcome::found);
  CHECK(all.route->handler == "list projects");
  CHECK(all.params.empty());
}

TEST_CASE("a path with routes for other methods is a method mismatch", "[net][route]") {
  auto t = sample_table();
  auto put = t.match(verb::put, path_of("/api/projects/demo/workunits"));
  CHECK(put.outcome == route_outcome::wrong_method);
  CHECK(put.route == nullptr);
  // The path's methods in table order, each once.
  CHECK(put.allowed == std::vector<verb>{verb::get, verb::post});
  CHECK(allow_header(put.allowed) == "GET, POST");

  auto get_end = t.match(verb::get, path_of("/api/projects/demo/sequences/s1/end"));
  CHECK(get_end.outcome == route_outcome::wrong_method);
  CHECK(allow_header(get_end.allowed) == "POST");

  auto head = t.match(verb::head, path_of("/api/projects/demo"));
  CHECK(head.outcome == route_outcome::wrong_method);
  CHECK(allow_header(head.allowed) == "GET");

  route_table<int> twice;
  twice.add(verb::get, "/a/{x}", 1);
  twice.add(verb::get, "/a/b", 2);
  twice.add(verb::post, "/a/b", 3);
  auto del = twice.match(verb::delete_, path_of("/a/b"));
  CHECK(del.outcome == route_outcome::wrong_method);
  CHECK(allow_header(del.allowed) == "GET, POST");
  // The first matching entry wins.
  auto first = twice.match(verb::get, path_of("/a/b"));
  REQUIRE(first.outcome == route_outcome::found);
  CHECK(first.route->handler == 1);
  CHECK(first.params == route_params{{"x", "b"}});
}

TEST_CASE("a path no route has is no match", "[net][route]") {
  auto t = sample_table();
  for (const char* target : {"/", "/api", "/api/elsewhere", "/api/projects/demo/nothing",
                             "/api/projects/demo/workunits/wu-1/results",
                             "/api/projects/demo/sequences/s1/restart", "/API/projects"}) {
    INFO(target);
    auto m = t.match(verb::get, path_of(target));
    CHECK(m.outcome == route_outcome::no_match);
    CHECK(m.route == nullptr);
    CHECK(m.allowed.empty());
  }
  CHECK(route_table<int>{}.match(verb::get, path_of("/api")).outcome == route_outcome::no_match);
  CHECK(allow_header({}).empty());
}
