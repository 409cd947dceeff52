#pragma once

/// The command groups of `cobble`. Each group declares its own subcommands with CLI11 in its
/// own file (cmd_<group>.cpp); main.cpp declares the global options and calls them in the
/// order `--help` lists them.
///
/// A subcommand's CLI11 callback only leaves its work in `context::action` (on_run); main runs
/// that once parsing is done, and turns what it throws into a message and an exit code in one
/// place (usage_error: 2, anything else: 1).

#include "tools/cobble/admin.hpp"
#include "tools/cobble/cli.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
} // namespace CLI

namespace cobble {
struct world;
namespace storage {
class event_store;
} // namespace storage
} // namespace cobble

namespace cobble::cli {

/// What the command groups share while the command line is parsed and run.
struct context {
  global_options options;      ///< Filled by parsing.
  online server{options};      ///< The admin API, resolved from `options` when first used.
  std::function<int()> action; ///< Set by the chosen subcommand; returns the exit code.
};

/// Declares a command group: `name`, which requires one of the subcommands that `commands`
/// declare, in that order.
void add_group(CLI::App& app, context& ctx, const std::string& name, const std::string& help,
               std::initializer_list<void (*)(CLI::App&, context&)> commands);

/// The whole of the file at `path`; a failure "cannot read WHAT PATH" when it cannot be read.
std::string read_file(const std::string& path, const std::string& what);

/// Makes `action` the work of `command` when it is the one chosen.
void on_run(CLI::App& command, context& ctx, std::function<int()> action);

/// Prints what the server answered, as text.
using printer = void (*)(std::ostream&, const nlohmann::json&);

/// Prints what the server answered: as JSON with --json, else with `print`. Returns exit_ok.
int show(const context& ctx, const nlohmann::json& x, printer print);

/// Declares `show` in `group`: the project's `resource` ("/workunits/") named by the argument
/// `key` (escaped into the path), printed with `print`.
void add_show_command(CLI::App& group, context& ctx, const std::string& help,
                      const std::string& key, const std::string& key_help,
                      const std::string& resource, printer print);

/// An option of a `list` command that narrows the list: `--NAME VALUE` becomes the query
/// parameter `NAME=VALUE`; VALUE must be one of `choices`.
struct list_filter {
  std::string name;
  std::string help;
  std::vector<std::string> choices;
};

/// Declares `list` in `group`: a page (--offset, --limit) of the project's `resource`
/// ("/hosts"), narrowed by `filters`, printed as JSON with --json, else its items with
/// `print_items`.
void add_list_command(CLI::App& group, context& ctx, const std::string& help,
                      const std::string& resource, printer print_items,
                      const std::vector<list_filter>& filters = {});

/// The event log of --data-dir, opened read-only (safe while cobbled runs); a failure when
/// the directory has none, a usage error without --data-dir.
std::unique_ptr<storage::event_store> open_log(const global_options& g);

/// The world at event `to` (the newest snapshot at or before it and the events after it),
/// with progress and speed on stderr; it lives until the process exits.
const world& replay(const storage::event_store& st, std::uint64_t to);

// -- the command groups, in the order of `cobble --help` ----------------------------------

/// `status`: the project's status.
void add_status_commands(CLI::App& app, context& ctx);

/// `work create|show|list`: workunits.
void add_work_commands(CLI::App& app, context& ctx);

/// `host show|list`: hosts.
void add_host_commands(CLI::App& app, context& ctx);

/// `seq create|show|list|reassign|end|extend`: work sequences (docs/sequences.md).
void add_seq_commands(CLI::App& app, context& ctx);

/// `user create|list`: user accounts.
void add_user_commands(CLI::App& app, context& ctx);

/// `app list|show|add|add-version|deprecate-version`: apps and the versions the server sends.
void add_app_commands(CLI::App& app, context& ctx);

/// `key generate|sign|verify|add|list`: code-signing keys and app file signatures (offline
/// but for add and list).
void add_key_commands(CLI::App& app, context& ctx);

/// `log tail|replay|verify`: the event log of a data directory, offline.
void add_log_commands(CLI::App& app, context& ctx);

/// `stats export`: the statistics export for stats sites, offline (docs/web.md).
void add_stats_commands(CLI::App& app, context& ctx);

/// `backup DIR`: a backup of the running server's data directory (docs/operations.md).
void add_backup_commands(CLI::App& app, context& ctx);

} // namespace cobble::cli
