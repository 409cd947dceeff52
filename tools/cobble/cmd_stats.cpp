/// `cobble stats export`: the statistics export for stats sites, in BOINC's db_dump format
/// (net/stats_export.hpp), made offline from the data directory's event log: the newest
/// snapshot and the events after it, never the live server (safe while cobbled runs).

#include "actors/state.hpp"
#include "net/stats_export.hpp"
#include "storage/event_store.hpp"
#include "tools/cobble/commands.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

namespace cobble::cli {

namespace {

struct export_options {
  std::string out; ///< Empty: <data_dir>/stats.
};

int stats_export(const global_options& g, const export_options& o) {
  auto st = open_log(g);
  const auto& w = replay(*st, st->last_seq());
  auto out = o.out.empty() ? std::filesystem::path{g.data_dir} / "stats"
                           : std::filesystem::path{o.out};
  auto now = std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
  std::vector<net::project_export> written;
  try {
    written = net::export_world(w, out, now, g.project);
  } catch (const std::exception& e) {
    throw failure(e.what());
  }
  for (const auto& e : written)
    std::cout << "project " << e.project << ": " << e.counts.users << " users, " << e.counts.teams
              << " teams, " << e.counts.hosts << " hosts with credit (total "
              << e.counts.total_credit << ") in " << e.dir.string() << '\n';
  if (written.empty())
    throw failure(g.project.empty() ? "the log holds no project"
                                    : "the log holds no project named " + g.project);
  return exit_ok;
}

void add_stats_export(CLI::App& stats, context& ctx) {
  auto o = std::make_shared<export_options>();
  auto cmd = stats.add_subcommand(
    "export", "Write each project's statistics for stats sites (BOINC's db_dump files: "
              "tables.xml, user.gz, team.gz, host.gz and the *_id.gz copies) into "
              "OUT/<project>/, replacing the previous export at once. Users, teams and hosts "
              "with credit; no e-mail addresses. Needs --data-dir; --project: only that one");
  cmd->add_option("--out", o->out, "Directory of the export (default: <data-dir>/stats)");
  on_run(*cmd, ctx, [&ctx, o] { return stats_export(ctx.options, *o); });
}

} // namespace

void add_stats_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "stats",
            "Statistics export for stats sites (offline; safe while cobbled runs)",
            {add_stats_export});
}

} // namespace cobble::cli
