/// `cobble`: the operator's command line (see docs/cli.md).
///
/// Most commands talk to the admin JSON API of a running `cobbled` (docs/admin-api.md) with a
/// blocking Boost.Beast client. The `log` commands work offline on a data directory: they open
/// the event log read-only (a RocksDB secondary instance), so they are safe next to a running
/// server.
///
/// Exit codes: 0 success, 1 failure (server error, corrupt log, mismatch), 2 usage error.
///
/// This file holds the global options and runs the chosen command; each command group
/// declares its subcommands in its own file (commands.hpp).

#include "tools/cobble/commands.hpp"
#include "tools/common/admin_url.hpp"
#include "tools/heap.hpp"
#include "tools/prefault.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

namespace {

using namespace cobble::cli;

/// Declares the options that come before the command.
void add_global_options(CLI::App& app, global_options& g) {
  app
    .add_option("--server", g.server,
                std::string{"Base URL of the server's admin API (default: the URL cobbled wrote "
                            "to DIR/admin_url of --data-dir, else "}
                  + cobble::common::default_admin_url + ")")
    ->envname("COBBLE_SERVER");
  app.add_option("--token", g.token, "Admin API token")->envname("COBBLE_ADMIN_TOKEN");
  app.add_option("--data-dir", g.data_dir,
                 "Server data directory: the token is read from DIR/admin_token and the admin "
                 "API's URL from DIR/admin_url; the log commands read DIR/log");
  app.add_option("--project", g.project, "Project name (default: the server's first project)");
  app.add_flag("--json", g.json, "Print raw JSON");
  app.add_option("--timeout", g.timeout, "Seconds to wait for each HTTP answer")
    ->capture_default_str()
    ->check(CLI::PositiveNumber);
}

/// Runs the chosen command; what it throws becomes a message and an exit code.
int run_action(const std::function<int()>& action) {
  try {
    return action();
  } catch (const usage_error& e) {
    std::cerr << "cobble: " << e.what() << '\n';
    return exit_usage;
  } catch (const failure& e) {
    std::cerr << "cobble: " << e.what() << '\n';
    return exit_failure;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "cobble: unexpected answer from the server: " << e.what() << '\n';
    return exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "cobble: " << e.what() << '\n';
    return exit_failure;
  }
}

int run(int argc, char** argv) {
  CLI::App app{"cobble: the operator's command line of a Cobble server"};
  app.fallthrough();
  app.require_subcommand(1);
  context ctx;
  add_global_options(app, ctx.options);
  add_status_commands(app, ctx);
  add_work_commands(app, ctx);
  add_host_commands(app, ctx);
  add_seq_commands(app, ctx);
  add_user_commands(app, ctx);
  add_app_commands(app, ctx);
  add_key_commands(app, ctx);
  add_log_commands(app, ctx);
  add_stats_commands(app, ctx);
  add_backup_commands(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    auto code = app.exit(e);
    return code == 0 ? exit_ok : exit_usage;
  }
  if (!ctx.action)
    return exit_usage;
  return run_action(ctx.action);
}

int program_main(int argc, char** argv) {
  cobble::heap::use_huge_pages();
  cobble::heap::reserve_arena();
  return run(argc, argv);
}

} // namespace

int main(int argc, char** argv) {
  try {
    return program_main(argc, argv);
  } catch (const std::exception& e) {
    // Nothing is expected to escape; if something does, say what instead of aborting.
    std::cerr << "cobble: internal error: " << e.what() << '\n';
    return 70;
  }
}
