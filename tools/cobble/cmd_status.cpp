/// `cobble status`: the project's status, from the admin API.

#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

namespace cobble::cli {

void add_status_commands(CLI::App& app, context& ctx) {
  auto status = app.add_subcommand("status", "Show the project's status");
  on_run(*status, ctx, [&ctx] {
    auto& on = ctx.server;
    return show(ctx, on.api().get(on.project_path()), print_summary);
  });
}

} // namespace cobble::cli
