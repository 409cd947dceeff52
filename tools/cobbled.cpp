// cobbled: the Cobble server. See `cobbled --help` and docs/.

#include "actors/error.hpp"
#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "config/config.hpp"
#include "net/admin_api.hpp"
#include "net/edge.hpp"
#include "net/files.hpp"
#include "net/http_server.hpp"
#include "net/stats_export.hpp"
#include "net/web_rpc.hpp"
#include "net/web_site.hpp"
#include "net/web_templates.hpp"
#include "storage/disk_space.hpp"
#include "storage/event_store.hpp"
#include "tools/demo_app.hpp"
#include "tools/heap.hpp"
#include "tools/kept_files.hpp"
#include "tools/prefault.hpp"

#include <caf/all.hpp>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using cobble::tools::kept_secret;
using cobble::tools::read_secret;
using cobble::tools::write_durably;

namespace {

/// Connections the admin listener takes at once (operators and their scripts, not the public).
constexpr std::size_t admin_connections = 64;

/// File descriptors kept beside the public connections: 256 for the log, snapshots, downloads
/// and uploads, and the admin listener's connections.
constexpr rlim_t fds_reserved = 256 + admin_connections;

/// Raises the soft file-descriptor limit to the hard one (the common default of 1,024 would
/// cap a public server at about a thousand connections) and returns the connections the
/// result leaves room for, at most `wanted`.
std::size_t connection_room(std::size_t wanted) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return wanted;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
      lim = raised;
  }
  if (lim.rlim_cur == RLIM_INFINITY)
    return wanted;
  auto room = lim.rlim_cur > 2 * fds_reserved ? lim.rlim_cur - fds_reserved : lim.rlim_cur / 2;
  if (room < wanted) {
    spdlog::warn("server.max_connections {} lowered to {}: the file-descriptor limit is {} "
                 "(raise it with LimitNOFILE= or ulimit -Hn)",
                 wanted, room, lim.rlim_cur);
    return static_cast<std::size_t>(room);
  }
  return wanted;
}

/// The base URL a local client reaches a listener on `address`:`port` at: a wildcard address
/// becomes the loopback one, an IPv6 address goes in brackets.
std::string local_url(const std::string& address, std::uint16_t port) {
  auto host = address == "0.0.0.0" ? std::string{"127.0.0.1"} : address == "::" ? "::1" : address;
  if (host.find(':') != std::string::npos)
    host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port);
}

/// Results in progress in a recovered world: each was sent with upload URLs signed with the
/// upload secret of the time.
std::size_t results_in_progress(const cobble::world& w) {
  std::size_t n = 0;
  for (const auto& pw : w.projects)
    for (const auto& [id, host] : pw.hosts)
      n += host.in_progress.size();
  return n;
}

/// The upload secret, kept in <data_dir>/upload_secret: read when there; generated only when
/// no result is in progress (the first start, or an idle server, with a warning then). A new
/// secret would make every upload signature issued before it invalid, so with results in
/// progress a missing file refuses the start.
caf::error upload_secret(const fs::path& path, const cobble::world& w, std::string& out) {
  if (auto kept = read_secret(path)) {
    out = std::move(*kept);
    return {};
  }
  if (auto n = results_in_progress(w); n > 0)
    return caf::make_error(
      cobble::ec::invalid_argument,
      "the upload secret is missing: " + path.string() + " is absent or empty, and "
        + std::to_string(n)
        + " results in progress were sent with upload URLs signed with the secret it held; a "
          "new secret would refuse every one of their uploads. Restore the file from a backup "
          "of the data directory (or from the old machine) and start again.");
  try {
    out = kept_secret(path);
  } catch (const std::exception& e) {
    return caf::make_error(cobble::ec::storage_failure,
                           "cannot create the upload secret " + path.string() + ": " + e.what());
  }
  if (w.seq > 0)
    spdlog::warn("upload secret {} was missing; a new one was generated (no result was in "
                 "progress, so no upload signature is lost)",
                 path.string());
  return {};
}

/// The demo's app when --demo-app is not given: testapp/testapp in cobbled's directory (where
/// the build puts it), else ../libexec/cobble/testapp (where `cmake --install` puts it);
/// empty when there is none.
fs::path default_demo_app() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  for (auto app : {self.parent_path() / "testapp" / "testapp",
                   self.parent_path().parent_path() / "libexec" / "cobble" / "testapp"})
    if (fs::is_regular_file(app, ec))
      return app;
  return {};
}

/// The admin token: from the configuration, or kept in <data_dir>/admin_token.
std::string admin_token(const cobble::config::server_config& server) {
  if (!server.admin_token.empty())
    return server.admin_token;
  return kept_secret(server.data_dir / "admin_token");
}

/// --check-config: what a start with `cfg` would find, without starting. The data directory
/// must be a writable directory, or one that can be made (nothing is made here).
int checked_config(const cobble::config::cobble_config& cfg) {
  const auto& dir = cfg.server.data_dir;
  std::error_code err;
  std::string data_state;
  if (fs::exists(dir, err)) {
    if (!fs::is_directory(dir, err) || ::access(dir.c_str(), W_OK | X_OK) != 0) {
      std::cerr << "cobbled: the data directory " << dir.string()
                << " is no directory this user can write to\n";
      return 1;
    }
    data_state = fs::exists(dir / "log", err) ? "exists, with an event log"
                                              : "exists, empty of Cobble's files";
  } else {
    auto parent = fs::absolute(dir, err).parent_path();
    while (!parent.empty() && !fs::exists(parent, err) && parent != parent.root_path())
      parent = parent.parent_path();
    if (::access(parent.c_str(), W_OK | X_OK) != 0) {
      std::cerr << "cobbled: the data directory " << dir.string()
                << " does not exist and cannot be made: " << parent.string()
                << " is not writable by this user\n";
      return 1;
    }
    data_state = "to be made at the first start";
  }
  std::cout << "configuration OK\n"
            << "  data directory: " << fs::absolute(dir, err).string() << " (" << data_state
            << ")\n"
            << "  listening on:   http://" << cfg.server.listen_address << ':' << cfg.server.port
            << "/\n"
            << "  admin API on:   http://" << cfg.server.admin_address << ':'
            << cfg.server.admin_port << "/api/\n";
  for (const auto& p : cfg.projects) {
    std::cout << "  project " << p.name << ": apps";
    for (const auto& a : p.apps)
      std::cout << ' ' << a.name;
    std::cout << '\n';
  }
  return 0;
}

int program_main(int argc, char** argv) {
  cobble::heap::use_huge_pages();
  cobble::heap::reserve_arena();
  CLI::App app{"cobbled: the Cobble volunteer-computing project server.\n\n"
               "Without --config it serves the embedded demo project: one user, 'demo', and one\n"
               "app, 'testapp', which it distributes to BOINC clients signed with a key it makes\n"
               "in <data-dir>/keys/demo/ (see --demo-app). It prints the master URL, and for the\n"
               "demo the demo user's account key to attach a BOINC client with (with --config no\n"
               "key is printed: 'cobble user list' shows them). Every change is kept in an event\n"
               "log under the data directory.\n"
               "SIGINT or SIGTERM stop it cleanly (a final snapshot is written)."};
  std::string config_file;
  std::string data_dir;
  std::string listen;
  int port = -1;
  int admin_port = -1;
  std::string public_url;
  std::string durability;
  std::string token;
  std::string scheduler;
  std::string log_level = "info";
  bool print_config = false;
  auto* config_opt = app
                       .add_option("-c,--config", config_file,
                                   "YAML configuration file (docs/configuration.md)")
                       ->check(CLI::ExistingFile);
  std::string demo_app;
  app
    .add_option("--demo-app", demo_app,
                "The program the embedded demo distributes as its app 'testapp', signed with a "
                "key kept in <data-dir>/keys/demo/ (default: testapp/testapp beside cobbled; "
                "only without --config)")
    ->check(CLI::ExistingFile)
    ->excludes(config_opt);
  app.add_option("-d,--data-dir", data_dir, "Data directory (overrides server.data_dir)");
  app.add_option("-l,--listen", listen, "Listen address HOST:PORT (overrides server.listen)");
  app.add_option("-p,--port", port, "Listen port; 0 picks a free one (overrides the config)")
    ->check(CLI::Range(0, 65535));
  app
    .add_option("--admin-port", admin_port,
                "Admin API port on server.admin_address; 0 picks a free one (overrides "
                "server.admin_port)")
    ->check(CLI::Range(0, 65535));
  app.add_option("--public-url", public_url, "Base URL clients use (default: the Host header)");
  app.add_option("--durability", durability, "sync (default) or async")
    ->check(CLI::IsMember({"sync", "async"}));
  app
    .add_option("--actor-scheduler", scheduler,
                "sharing (default) or stealing: how actors share their threads "
                "(overrides server.actor_scheduler)")
    ->check(CLI::IsMember({"sharing", "stealing"}));
  app.add_option("--admin-token", token, "Admin API token (default: <data-dir>/admin_token)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
    ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_flag("--print-config", print_config, "Print the effective configuration and exit");
  bool check_config = false;
  app.add_flag("--check-config", check_config,
               "Check the configuration, the page templates and the data directory, say what "
               "would be served, and exit: 0 when it would start, 1 with what is wrong");
  bool salvage_wal = false;
  app.add_flag("--salvage-wal", salvage_wal,
               "Start on a damaged write-ahead log, dropping every event after the damage "
               "(and the snapshots past it); only after a refusal that says so, and a copy");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2; // every usage error is 2, as for cobble
  }

  spdlog::set_level(spdlog::level::from_str(log_level));
  try {
    cobble::net::web::check_templates(); // a broken page template stops the server here
  } catch (const std::exception& e) {
    std::cerr << "cobbled: " << e.what() << '\n';
    return 1;
  }
  cobble::config::cobble_config cfg;
  try {
    cfg = config_file.empty() ? cobble::config::demo() : cobble::config::load_file(config_file);
    if (!data_dir.empty())
      cfg.server.data_dir = data_dir;
    if (!listen.empty()) {
      auto colon = listen.rfind(':');
      if (colon == std::string::npos)
        throw std::invalid_argument("--listen must be HOST:PORT");
      cfg.server.listen_address = listen.substr(0, colon);
      cfg.server.port = static_cast<std::uint16_t>(std::stoi(listen.substr(colon + 1)));
    }
    if (port >= 0)
      cfg.server.port = static_cast<std::uint16_t>(port);
    if (admin_port >= 0)
      cfg.server.admin_port = static_cast<std::uint16_t>(admin_port);
    if (!public_url.empty())
      cfg.server.public_url = public_url;
    if (!durability.empty())
      cfg.server.mode = durability == "async" ? cobble::config::durability::async
                                              : cobble::config::durability::sync;
    if (!token.empty())
      cfg.server.admin_token = token;
    if (!scheduler.empty())
      cfg.server.scheduler = scheduler == "stealing" ? cobble::config::actor_scheduler::stealing
                                                     : cobble::config::actor_scheduler::sharing;
    cobble::config::validate(cfg);
  } catch (const std::exception& e) {
    std::cerr << "cobbled: " << e.what() << '\n';
    return 1;
  }
  if (print_config) {
    std::cout << cobble::config::to_yaml(cfg);
    return 0;
  }
  if (check_config)
    return checked_config(cfg);

  // Signals go to the main thread only (sigwait below); every thread inherits this mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::error_code fs_err;
  fs::create_directories(cfg.server.data_dir, fs_err);
  if (fs_err) {
    std::cerr << "cobbled: cannot create data directory " << cfg.server.data_dir << ": "
              << fs_err.message() << '\n';
    return 1;
  }
  auto data = fs::absolute(cfg.server.data_dir);
  // Opening the log writes (RocksDB flushes what it recovered): not on a disk that is full.
  auto disk = std::make_shared<cobble::storage::disk_space>(data, cfg.server.min_free_disk);
  if (auto err = disk->check()) {
    std::cerr << "cobbled: cannot read the free space of " << data.string() << ": "
              << cobble::describe(err) << '\n';
    return 1;
  }
  if (disk->low()) {
    std::cerr << "cobbled: refusing to start: " << disk->describe()
              << ". Free space on that file system (or lower server.min_free_disk) and start "
                 "again; nothing was changed.\n";
    return 1;
  }
  cobble::storage::store_options so;
  so.mode = cfg.server.mode == cobble::config::durability::sync
              ? cobble::storage::durability::sync
              : cobble::storage::durability::async;
  so.salvage_wal = salvage_wal;
  auto opened = cobble::storage::event_store::open(data / "log", so);
  if (!opened) {
    std::cerr << "cobbled: cannot open the event log in " << (data / "log") << ": "
              << cobble::describe(opened.error()) << '\n';
    return 1;
  }
  std::shared_ptr<cobble::storage::event_store> store = std::move(*opened);
  if (salvage_wal) {
    // The log now ends where the damage was: snapshots past it hold lost events.
    if (auto err = store->drop_snapshots_past_end()) {
      std::cerr << "cobbled: salvaging the event log: " << cobble::describe(err) << '\n';
      return 1;
    }
    spdlog::warn("write-ahead log salvaged: the event log now ends at event {}; events after "
                 "the damage are lost",
                 store->last_seq());
  }
  std::string admin;
  try {
    admin = admin_token(cfg.server);
  } catch (const std::exception& e) {
    std::cerr << "cobbled: secrets in " << data << ": " << e.what() << '\n';
    return 1;
  }
  std::string upload_key;
  auto file_store = std::make_shared<cobble::storage::file_store>(data);

  caf::actor_system_config sys_cfg;
  cobble::register_types(sys_cfg);
  sys_cfg.set("logger.console", caf::atom("none"));
  // Sharing: idle scheduler threads sleep on a condition variable instead of polling, which
  // measured less CPU per RPC on small machines (docs/performance.md).
  sys_cfg.set("scheduler.policy", cfg.server.scheduler == cobble::config::actor_scheduler::sharing
                                    ? caf::atom("sharing")
                                    : caf::atom("stealing"));
  if (cfg.server.actor_threads > 0)
    sys_cfg.set("scheduler.max-threads", static_cast<std::size_t>(cfg.server.actor_threads));
  caf::actor_system sys{sys_cfg};
  auto clk = std::make_shared<cobble::system_clock>();
  auto started = std::chrono::steady_clock::now();
  // The scheduler RPC's one path ends here: the log hands each reply to this port once
  // durable, and the edge (which parks the requests) renders it on the connection's strand.
  auto rpc_port = std::make_shared<cobble::parked_rpcs>();
  cobble::node_options node_opts;
  node_opts.files = file_store;
  node_opts.port = rpc_port;
  node_opts.disk = disk;
  {
    std::vector<std::string> names;
    for (const auto& p : cfg.projects)
      names.push_back(p.name);
    node_opts.reader = cobble::net::periodic_export(data / "stats", names,
                                                    cfg.server.stats_export_interval);
  }
  // Creating the secret (two fsyncs, on a first start) is not recovery: its time is left out
  // of the figure printed below.
  std::chrono::steady_clock::duration secret_time{};
  node_opts.before_start = [&](const cobble::world& w) {
    auto t0 = std::chrono::steady_clock::now();
    auto err = upload_secret(data / "upload_secret", w, upload_key);
    secret_time = std::chrono::steady_clock::now() - t0;
    return err;
  };
  auto node = [&] {
    // Recovery builds the whole state on this thread; another faults its heap in meanwhile.
    cobble::heap::prefaulter prefault;
    return cobble::start_node(sys, cfg, store, clk, node_opts);
  }();
  if (!node) {
    std::cerr << "cobbled: refusing to start: " << cobble::describe(node.error())
              << "\n(nothing was changed; see `cobble log verify --data-dir " << data.string()
              << "`)\n";
    return 1;
  }
  auto recovery = std::chrono::duration<double>(std::chrono::steady_clock::now() - started
                                                - secret_time);
  // The demo distributes its app before the first client can ask (docs/apps.md).
  std::string demo_line;
  if (config_file.empty()) {
    cobble::tools::demo_app_options demo;
    demo.key_dir = data / "keys" / "demo";
    demo.program = demo_app.empty() ? default_demo_app() : fs::path{demo_app};
    if (demo.program.empty()) {
      demo_line = "demo app: not distributed: no testapp/testapp beside cobbled (give "
                  "--demo-app PATH); clients need app_info.xml (docs/real-clients.md)";
    } else if (auto did = cobble::tools::distribute_demo_app(sys, node->projects.at(demo.project),
                                                             *file_store, demo)) {
      demo_line = std::move(*did);
    } else {
      std::cerr << "cobbled: the demo cannot distribute its app: " << cobble::describe(did.error())
                << '\n';
      return 1;
    }
  }
  auto files = std::make_shared<cobble::net::file_service>(file_store, upload_key);

  auto ctx = std::make_shared<cobble::net::edge_context>();
  ctx->sys = &sys;
  ctx->projects = node->projects;
  for (const auto& p : cfg.projects)
    ctx->long_names[p.name] = p.long_name.empty() ? p.name : p.long_name;
  ctx->log = node->log;
  ctx->public_url = cfg.server.public_url;
  ctx->files = files;
  ctx->port = rpc_port;
  ctx->disk = disk;
  auto routes = cobble::net::edge_routes(ctx);
  auto web = std::make_shared<cobble::net::web_rpc_context>();
  web->edge = ctx;
  for (const auto& p : cfg.projects)
    web->accounts[p.name] = p.accounts;
  for (auto& r : cobble::net::web_rpc_routes(web))
    routes.push_back(std::move(r));
  // The volunteer site (docs/web.md): its sessions are signed with a secret kept in the data
  // directory, so they outlive restarts.
  auto site = std::make_shared<cobble::net::web_site_context>();
  site->web = web;
  site->admin_token = admin;
  site->events = store;
  site->project_indexes = node->project_index;
  site->key = std::make_shared<const cobble::net::web::site_key>(kept_secret(data / "web_secret"));
  for (const auto& p : cfg.projects) {
    site->descriptions[p.name] = p.description;
    site->credit_half_lives[p.name] = p.credit.credit_half_life;
  }
  for (auto& r : cobble::net::web_site_routes(site))
    routes.push_back(std::move(r));
  cobble::net::admin_context actx;
  actx.sys = &sys;
  actx.projects = node->projects;
  actx.token = admin;
  actx.files = files;
  actx.aggregator = node->aggregator;
  actx.upload_limit = cfg.server.upload_limit;
  actx.max_batch_items = cfg.server.max_batch_items;
  actx.disk = disk;
  actx.store = store;
  actx.data_dir = data;
  for (auto& r : cobble::net::file_routes(
         {&sys, node->projects, files, cfg.server.upload_limit, disk, data / "stats"}))
    routes.push_back(std::move(r));
  cobble::net::server_options opts;
  opts.address = cfg.server.listen_address;
  opts.port = cfg.server.port;
  opts.threads = cfg.server.worker_threads;
  opts.body_limit = cfg.server.body_limit;
  opts.read_timeout = cfg.server.read_timeout;
  opts.max_connections = connection_room(cfg.server.max_connections);
  cobble::net::http_server server{opts, std::move(routes)};
  // The admin API on its own listener (by default on the loopback address only), so that the
  // public one serves nothing but the BOINC protocol, files and the web (docs/security.md).
  auto admin_opts = opts;
  admin_opts.address = cfg.server.admin_address;
  admin_opts.port = cfg.server.admin_port;
  admin_opts.threads = 1;
  admin_opts.max_connections = admin_connections;
  cobble::net::http_server admin_server{admin_opts, cobble::net::admin_routes(actx)};
  ctx->admin_http = &admin_server.stats();
  std::uint16_t bound = 0;
  std::uint16_t admin_bound = 0;
  try {
    bound = server.start();
  } catch (const std::exception& e) {
    std::cerr << "cobbled: cannot listen on " << opts.address << ":" << opts.port << ": "
              << e.what() << '\n';
    return 1;
  }
  try {
    admin_bound = admin_server.start();
  } catch (const std::exception& e) {
    std::cerr << "cobbled: cannot listen for the admin API on " << admin_opts.address << ":"
              << admin_opts.port << " (server.admin_address, server.admin_port): " << e.what()
              << '\n';
    return 1;
  }
  ctx->http = &server.stats();
  // The CLI (and scripts) find the admin API here: `cobble --data-dir DIR` reads it.
  auto admin_base = local_url(admin_opts.address, admin_bound);
  try {
    write_durably(data / "admin_url", admin_base + '\n', S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH);
  } catch (const std::exception& e) {
    std::cerr << "cobbled: cannot write " << (data / "admin_url").string() << ": " << e.what()
              << '\n';
    return 1;
  }

  auto base = cfg.server.public_url.empty() ? "http://" + opts.address + ":" + std::to_string(bound)
                                            : cfg.server.public_url;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  std::cout << "cobbled " << COBBLE_VERSION << ": data directory " << data.string()
            << " (recovered " << node->recovered_seq << " events in " << recovery.count()
            << " s, durability "
            << (cfg.server.mode == cobble::config::durability::sync ? "sync" : "async") << ")\n";
  std::cout << "listening on " << base << "\n";
  if (!demo_line.empty())
    std::cout << demo_line << "\n";
  {
    // Account keys are secrets: a real project's go to nobody's terminal or journal. The
    // embedded demo prints its one user's, so that a BOINC client can attach at once.
    caf::scoped_actor self{sys};
    for (const auto& [name, project] : node->projects) {
      std::cout << "project " << name << ": master URL " << base << "/" << name << "/\n";
      if (!config_file.empty())
        continue;
      self->request(project, std::chrono::seconds(30), cobble::atom::list_v, cobble::atom::user_v)
        .receive(
          [&](const cobble::user_list_ptr& users) {
            for (const auto& u : *users)
              if (u.name == "demo")
                std::cout << "  account key of user demo: " << u.authenticator << "\n";
          },
          [&](caf::error& err) {
            std::cerr << "cobbled: listing users failed: " << cobble::describe(err) << '\n';
          });
    }
    if (!config_file.empty())
      std::cout << "account keys: cobble user list (not printed: they are secrets)\n";
  }
  std::cout << "admin API: " << admin_base << "/api/ (token in "
            << (cfg.server.admin_token.empty() ? (data / "admin_token").string()
                                               : std::string{"the configuration"})
            << ")" << std::endl;

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  server.stop();
  admin_server.stop();
  {
    caf::scoped_actor self{sys};
    self
      ->request(node->node, std::chrono::seconds(60), cobble::atom::snapshot_v,
                cobble::atom::sync_v)
      .receive([](std::uint64_t seq) { spdlog::info("final snapshot at seq {}", seq); },
               [](caf::error& err) {
                 spdlog::error("shutdown snapshot failed: {}", cobble::describe(err));
               });
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return program_main(argc, argv);
  } catch (const std::exception& e) {
    // Nothing is expected to escape; if something does, say what instead of aborting.
    std::cerr << "cobbled: internal error: " << e.what() << '\n';
    return 70;
  }
}
