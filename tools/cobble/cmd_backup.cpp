/// `cobble backup DIR`: a consistent backup of the running server's data directory, made by
/// the server (POST /api/backup; docs/operations.md says how to restore it).

#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

namespace cobble::cli {

namespace {

/// Seconds a backup may take before the command gives up waiting (the server finishes it
/// anyway): a day, whatever --timeout says for other requests.
constexpr double backup_wait = 86400;

} // namespace

void add_backup_commands(CLI::App& app, context& ctx) {
  auto dir = std::make_shared<std::string>();
  auto backup = app.add_subcommand(
    "backup", "Back up the server's data directory into DIR, a new directory on the server's "
              "machine (the event log at one moment, then the secrets, keys and files)");
  backup->add_option("dir", *dir, "The new directory (made by the server; relative to here)")
    ->required();
  on_run(*backup, ctx, [&ctx, dir] {
    ctx.options.timeout = std::max(ctx.options.timeout, backup_wait);
    auto target = std::filesystem::absolute(*dir).lexically_normal().string();
    auto res = ctx.server.api().post("/api/backup", nlohmann::json{{"dir", target}});
    if (ctx.options.json) {
      print_json(res);
      return exit_ok;
    }
    std::cout << "backed up into " << res.at("dir").get<std::string>() << ": events 1.."
              << res.at("last_event").get<std::uint64_t>() << ", "
              << res.at("files").get<std::uint64_t>() << " files ("
              << res.at("bytes").get<std::uint64_t>() << " bytes, "
              << res.at("linked").get<std::uint64_t>() << " of them linked), "
              << res.at("seconds").get<double>() << " s\n"
              << "restore: stop cobbled, then start it with --data-dir "
              << res.at("dir").get<std::string>() << " (or move the directory into place)\n";
    return exit_ok;
  });
}

} // namespace cobble::cli
