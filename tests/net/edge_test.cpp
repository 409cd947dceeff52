// Tests of the scheduler edge and the admin API on a node whose disk is low
// (server.min_free_disk above the free space): every change is refused before it reaches an
// actor, nothing is appended, and reads still answer. The node runs in process, wired as
// cobbled wires it.

#include "../support/cobbled.hpp"
#include "actors/clock.hpp"
#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "config/config.hpp"
#include "net/admin_api.hpp"
#include "net/edge.hpp"
#include "net/files.hpp"
#include "net/password.hpp"
#include "net/web_rpc.hpp"
#include "storage/disk_space.hpp"
#include "storage/event_store.hpp"
#include "tests/support/demo_config.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>

using namespace cobble;
using cobble::test::http_client;

namespace {

/// A node on the demo configuration behind the scheduler edge and the admin API, with its
/// disk watched against `min_free` bytes (read once, at construction).
struct node_fixture {
  cobble::test::temp_dir dir{"edge"};
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<storage::event_store> store;
  std::shared_ptr<storage::disk_space> disk;
  std::shared_ptr<net::file_service> files;
  node_handles handles;
  std::unique_ptr<net::http_server> server;
  std::uint16_t port = 0;
  std::string account_key;
  const std::string token = "edge-test-token-0123456789";

  explicit node_fixture(std::uint64_t min_free) {
    register_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    auto conf = cobble::test::demo_config();
    conf.server.data_dir = dir.path();
    auto opened = storage::event_store::open(dir.path() / "log");
    REQUIRE(opened);
    store = std::move(*opened);
    disk = std::make_shared<storage::disk_space>(dir.path(), min_free);
    REQUIRE_FALSE(disk->check());
    auto rpc_port = std::make_shared<parked_rpcs>();
    node_options opts;
    opts.port = rpc_port;
    opts.disk = disk;
    auto started = start_node(*sys, conf, store, std::make_shared<system_clock>(), opts);
    REQUIRE(started);
    handles = *started;
    auto ctx = std::make_shared<net::edge_context>();
    ctx->sys = sys.get();
    ctx->projects = handles.projects;
    ctx->log = handles.log;
    ctx->port = rpc_port;
    ctx->disk = disk;
    auto routes = net::edge_routes(ctx);
    auto web = std::make_shared<net::web_rpc_context>();
    web->edge = ctx;
    for (auto& r : net::web_rpc_routes(web))
      routes.push_back(std::move(r));
    net::admin_context actx;
    actx.sys = sys.get();
    actx.projects = handles.projects;
    actx.token = token;
    actx.disk = disk;
    for (auto& r : net::admin_routes(actx))
      routes.push_back(std::move(r));
    files = std::make_shared<net::file_service>(std::make_shared<storage::file_store>(dir.path()),
                                                "edge-test-secret");
    for (auto& r : net::file_routes({sys.get(), handles.projects, files, 1u << 20, disk, {}}))
      routes.push_back(std::move(r));
    server = std::make_unique<net::http_server>(net::server_options{}, std::move(routes));
    port = server->start();
    caf::scoped_actor self{*sys};
    self->request(handles.projects.at("demo"), std::chrono::seconds(30), atom::list_v, atom::user_v)
      .receive([&](const user_list_ptr& users) { account_key = users->at(0).authenticator; },
               [](caf::error& err) { FAIL(describe(err)); });
  }

  ~node_fixture() {
    server->stop();
    server.reset();
    handles = node_handles{};
    sys.reset();
  }

  /// The last event once everything appended so far is durable.
  std::uint64_t durable_seq() const {
    std::uint64_t out = 0;
    caf::scoped_actor self{*sys};
    self->request(handles.log, std::chrono::seconds(30), atom::sync_v)
      .receive([&](std::uint64_t last) { out = last; },
               [](caf::error& err) { FAIL(describe(err)); });
    return out;
  }

  cobble::test::http_reply create_work(const std::string& name) const {
    http_client c{"127.0.0.1", port};
    return c.post("/api/projects/demo/workunits",
                  cobble::test::json{{"app", "testapp"}, {"name", name}}.dump(), token,
                  "application/json");
  }

  cobble::test::parsed_reply ask_for_work() const {
    http_client c{"127.0.0.1", port};
    return cobble::test::rpc(c, cobble::test::make_request(account_key, 0, 100, 1, {}));
  }
};

} // namespace

TEST_CASE("below server.min_free_disk no change is accepted and reads still answer",
          "[net][edge][disk]") {
  node_fixture n{UINT64_MAX / 4}; // more than any disk has free
  REQUIRE(n.disk->low());
  auto before = n.durable_seq();

  // A scheduler RPC: answered at once with a message and a request_delay, no host, no job.
  auto reply = n.ask_for_work();
  REQUIRE(reply.messages.size() == 1);
  CHECK_THAT(reply.messages[0], Catch::Contains("low on disk space"));
  CHECK(reply.request_delay == 60);
  CHECK_FALSE(reply.hostid);
  CHECK(reply.jobs.empty());

  // An admin write: 507, naming the watermark.
  auto created = n.create_work("wu_refused");
  CHECK(created.status == 507);
  CHECK_THAT(created.body, Catch::Contains("low on disk space"));
  CHECK_THAT(created.body, Catch::Contains("server.min_free_disk"));

  // Reads answer as usual.
  http_client c{"127.0.0.1", n.port};
  auto status = c.get("/api/projects/demo", n.token);
  CHECK(status.status == 200);
  auto list = c.get("/api/projects/demo/workunits", n.token);
  CHECK(list.status == 200);
  CHECK(list.body.find("wu_refused") == std::string::npos);

  // An upload with a valid signature: a transient refusal the client retries, nothing stored.
  const std::string output = "wu_any_0_0";
  auto up = c.post("/demo/upload", cobble::test::upload_body(output, n.files->sign(output, 1), 1000,
                                                             4, "", 0, "abcd"));
  CHECK(cobble::test::status_of(up.body) == 1);
  CHECK_THAT(up.body, Catch::Contains("low on disk space"));
  CHECK_FALSE(std::filesystem::exists(n.dir.path() / "projects/demo/upload" / output));

  // A volunteer's new account (a web RPC): "project down", which the client retries.
  auto account = c.get("/demo/create_account.php?email_addr=a%40example.org&user_name=A"
                       "&passwd_hash="
                       + net::boinc_password_hash("pw", "a@example.org"));
  CHECK(account.status == 200);
  CHECK_THAT(account.body, Catch::Contains("<error_num>-183</error_num>"));
  CHECK_THAT(account.body, Catch::Contains("low on disk space"));
  // Reading web RPCs still answer.
  CHECK_THAT(c.get("/demo/get_project_config.php").body, Catch::Contains("<project_config>"));

  // Nothing was appended.
  CHECK(n.durable_seq() == before);
}

TEST_CASE("at or above server.min_free_disk the same requests change state", "[net][edge][disk]") {
  node_fixture n{0}; // no watermark
  REQUIRE_FALSE(n.disk->low());
  auto before = n.durable_seq();
  CHECK(n.create_work("wu_accepted").status == 201);
  auto reply = n.ask_for_work();
  CHECK(reply.hostid);
  CHECK(reply.jobs.size() == 1);
  http_client c{"127.0.0.1", n.port};
  auto account = c.get("/demo/create_account.php?email_addr=a%40example.org&user_name=A"
                       "&passwd_hash="
                       + net::boinc_password_hash("pw", "a@example.org"));
  CHECK_THAT(account.body, Catch::Contains("<authenticator>"));
  CHECK(n.durable_seq() > before);
}
