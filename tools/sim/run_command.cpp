#include "tools/sim/run_command.hpp"

#include "config/config.hpp"
#include "tools/common/admin_url.hpp"
#include "tools/sim/emulator.hpp"
#include "tools/sim/http_link.hpp"
#include "tools/sim/report.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

namespace cobble::sim {

void add_run_command(CLI::App& app, int& rc) {
  struct opts {
    std::string scenario;
    std::string report;
    std::string server;
    std::string admin_server;
    std::string token;
    std::string data_dir;
    double timeout = 30;
    bool print_config = false;
    bool quiet = false;
  };
  auto o = std::make_shared<opts>();
  auto* cmd = app.add_subcommand(
    "run", "Run a scenario (docs/emulator.md): emulated hosts attached to the scenario's "
           "projects, in virtual time on an in-process node, then print the figures");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--report", o->report, "Also write a self-contained HTML report here");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress output on stderr");
  cmd->add_flag("--print-config", o->print_config,
                "Print the cobbled configuration (YAML) the scenario needs and exit: the "
                "in-process node uses it; start cobbled with it for --server");
  cmd->add_option("--server", o->server,
                  "Drive a running cobbled at this base URL (http://HOST:PORT) over HTTP in "
                  "real time instead of an in-process node in virtual time");
  cmd->add_option("--admin-server", o->admin_server,
                  "Base URL of that cobbled's admin API (default: the URL in DIR/admin_url of "
                  "--data-dir, else "
                    + std::string{common::default_admin_url} + ")");
  cmd->add_option("--token", o->token, "Admin token of --server (env COBBLE_ADMIN_TOKEN)")
    ->envname("COBBLE_ADMIN_TOKEN");
  cmd->add_option("--data-dir", o->data_dir,
                  "The server's data directory: read the admin token from DIR/admin_token and "
                  "the admin API's URL from DIR/admin_url");
  cmd->add_option("--timeout", o->timeout, "Seconds to wait for each HTTP answer (--server)")
    ->check(CLI::PositiveNumber);
  cmd->callback([o, &rc] {
    scenario sc;
    try {
      sc = load_scenario(o->scenario);
    } catch (const config::config_error& e) {
      std::cerr << "cobble-sim: " << e.what() << "\n";
      rc = 2;
      return;
    }
    spdlog::set_level(spdlog::level::warn); // the node's own log lines are not the output
    if (o->print_config) {
      std::cout << config::to_yaml(make_config(sc));
      rc = 0;
      return;
    }
    if (o->server.empty()
        && (!o->token.empty() || !o->data_dir.empty() || !o->admin_server.empty())) {
      std::cerr << "cobble-sim: --token, --admin-server and --data-dir need --server\n";
      rc = 2;
      return;
    }
    if (!o->server.empty() && o->admin_server.empty()) {
      auto kept = o->data_dir.empty() ? std::nullopt : common::read_admin_url(o->data_dir);
      o->admin_server = kept ? *kept : common::default_admin_url;
    }
    if (!o->server.empty()) {
      try {
        check_server_url(o->server, "--server");
        check_server_url(o->admin_server, "--admin-server");
      } catch (const std::invalid_argument& e) {
        std::cerr << "cobble-sim: " << e.what() << "\n";
        rc = 2;
        return;
      }
    }
    if (!o->server.empty() && o->token.empty() && !o->data_dir.empty()) {
      std::ifstream in(std::filesystem::path(o->data_dir) / "admin_token");
      std::getline(in, o->token);
    }
    if (!o->server.empty() && o->token.empty()) {
      std::cerr << "cobble-sim: --server needs the admin token (--token, COBBLE_ADMIN_TOKEN or "
                   "--data-dir)\n";
      rc = 2;
      return;
    }
    run_options ro;
    if (!o->quiet)
      ro.progress = [](double done, double total) {
        std::fprintf(stderr, "cobble-sim: %.1f of %.1f virtual days (%.0f%%)\n", done / 86400,
                     total / 86400, 100 * done / total);
      };
    run_result res;
    try {
      auto link = o->server.empty()
                    ? in_process_link(sc)
                    : http_link(o->server, o->admin_server, o->token,
                                std::chrono::milliseconds(static_cast<long>(o->timeout * 1000)));
      res = run_scenario(sc, *link, ro);
    } catch (const std::exception& e) {
      std::cerr << "cobble-sim: " << e.what() << "\n";
      rc = 1;
      return;
    }
    std::cout << figures_table(res);
    std::fprintf(stdout, "\n%ld host-steps in %.2f s of wall time\n", res.host_steps,
                 res.wall_seconds);
    if (!o->report.empty()) {
      std::ofstream out(o->report);
      out << html_report(res, o->scenario);
      if (!out) {
        std::cerr << "cobble-sim: cannot write " << o->report << "\n";
        rc = 1;
        return;
      }
      std::fprintf(stdout, "report: %s\n", o->report.c_str());
    }
    rc = 0;
  });
}

} // namespace cobble::sim
