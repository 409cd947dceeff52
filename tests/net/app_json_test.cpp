/// Tests of net/app_json: the bodies of the admin API's app routes, what the CLI sends and
/// what the server reads back, and the defaults and refusals of the parsers.

#include "actors/project_logic.hpp"
#include "net/app_json.hpp"

#include <catch2/catch.hpp>

using namespace cobble;
using nlohmann::json;

TEST_CASE("an app change survives the JSON the CLI sends", "[net][apps]") {
  SECTION("an app with its policy") {
    app_change c;
    c.what = app_change::op::add_app;
    c.by = "alice";
    c.app = "newapp";
    auto parsed_default = net::parse_new_app(json{{"name", "newapp"}});
    REQUIRE(parsed_default.value);
    c.new_app = parsed_default.value->new_app;
    c.new_app.min_quorum = 1;
    c.new_app.target_nresults = 1;
    c.new_app.validator = config::validator_kind::accept_all;
    c.new_app.output_names = {"a", "b"};
    c.new_app.versions.clear();
    auto back = net::parse_new_app(net::to_json(c));
    INFO(back.error);
    REQUIRE(back.value);
    CHECK(back.value->app == "newapp");
    CHECK(back.value->by == "alice");
    // The same app once the project converts it (what JSON leaves out takes its default).
    auto as_project_sees = [](const app_change& x) {
      config::project_config one;
      one.apps.push_back(x.new_app);
      one.apps[0].name = x.app;
      return apps_from_config(one, {}).at(0);
    };
    CHECK(as_project_sees(*back.value) == as_project_sees(c));
    CHECK(back.value->new_app.validator == config::validator_kind::accept_all);
    CHECK(back.value->new_app.output_names == c.new_app.output_names);
  }
  SECTION("a version with its files") {
    app_change c;
    c.what = app_change::op::add_version;
    c.by = "bob";
    c.app = "testapp";
    c.version.platform = "x86_64-pc-linux-gnu";
    c.version.version_num = 7;
    c.version.plan_class = "cuda";
    c.version.resource = 1;
    c.version.coproc_count = 0.5;
    c.version.api_version = "7.22.0";
    c.version.files = {app_file_rec{"app_1", "worker", 10, "ab", "sig\n.\n", true, true, false},
                       app_file_rec{"app_2", "data", 3, "cd", "sig2\n.\n", false, false, true}};
    auto back = net::parse_new_version(net::to_json(c), "testapp");
    INFO(back.error);
    REQUIRE(back.value);
    CHECK(back.value->by == "bob");
    CHECK(back.value->version == c.version);
  }
  SECTION("a deprecation and a key") {
    app_change d;
    d.what = app_change::op::deprecate_version;
    d.deprecated = false;
    auto dep = net::parse_deprecation(net::to_json(d), "testapp", 4);
    REQUIRE(dep.value);
    CHECK_FALSE(dep.value->deprecated);
    CHECK(dep.value->version_id == 4);
    app_change k;
    k.what = app_change::op::add_key;
    k.public_key = "1024\nab\n.\n";
    k.signature = "cd\n.\n";
    auto key = net::parse_new_key(net::to_json(k));
    REQUIRE(key.value);
    CHECK(key.value->public_key == k.public_key);
    CHECK(key.value->signature == k.signature);
  }
}

TEST_CASE("app bodies take the configuration's defaults and refuse what is wrong", "[net][apps]") {
  auto app = net::parse_new_app(json{{"name", "x"}});
  REQUIRE(app.value);
  CHECK(app.value->new_app.delay_bound > 0);
  CHECK(app.value->new_app.rsc_fpops_est > 0);
  CHECK(app.value->by == "admin");
  CHECK(net::parse_deprecation(json{}, "testapp", 2).value->deprecated);

  CHECK_THAT(net::parse_new_app(json{{"name", "x"}, {"validator", "vote"}}).error,
             Catch::Contains("validator"));
  CHECK_THAT(net::parse_new_app(json{{"name", ""}}).error, Catch::Contains("name"));
  CHECK_THAT(net::parse_new_app(json{{"output_names", "out"}, {"name", "x"}}).error,
             Catch::Contains("output_names"));
  json version = {{"platform", "p"}, {"version_num", 1}, {"files", json::array()}};
  CHECK_THAT(net::parse_new_version(version, "a").error, Catch::Contains("files"));
  version.erase("version_num");
  CHECK_THAT(net::parse_new_version(version, "a").error, Catch::Contains("version_num"));
  json file_without_md5 = {{"name", "app_1"}, {"signature", "s"}};
  json bad_file = {{"platform", "p"}, {"version_num", 1}, {"files", {file_without_md5}}};
  CHECK_THAT(net::parse_new_version(bad_file, "a").error, Catch::Contains("md5"));
  CHECK_THAT(net::parse_new_version(bad_file, "a").error, Catch::Contains("file 0"));
  json gpu = {{"platform", "p"}, {"version_num", 1}, {"resource", "tpu"}};
  CHECK_THAT(net::parse_new_version(gpu, "a").error, Catch::Contains("resource"));
  CHECK_THAT(net::parse_new_key(json{{"signature", "s"}}).error, Catch::Contains("public_key"));
  CHECK_THAT(net::parse_deprecation(json{{"deprecated", "yes"}}, "a", 1).error,
             Catch::Contains("true or false"));
}
