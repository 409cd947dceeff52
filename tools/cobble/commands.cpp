#include "tools/cobble/commands.hpp"

#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace cobble::cli {

void add_group(CLI::App& app, context& ctx, const std::string& name, const std::string& help,
               std::initializer_list<void (*)(CLI::App&, context&)> commands) {
  auto group = app.add_subcommand(name, help);
  group->require_subcommand(1);
  for (auto add : commands)
    add(*group, ctx);
}

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw failure("cannot read " + what + " " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void on_run(CLI::App& command, context& ctx, std::function<int()> action) {
  command.callback([&ctx, action = std::move(action)] { ctx.action = action; });
}

namespace {

/// Where a `list` command starts and how many it shows.
struct page_options {
  std::uint64_t offset = 0;
  std::uint64_t limit = 100;
};

} // namespace

int show(const context& ctx, const nlohmann::json& x, printer print) {
  ctx.options.json ? print_json(x) : print(std::cout, x);
  return exit_ok;
}

void add_show_command(CLI::App& group, context& ctx, const std::string& help,
                      const std::string& key, const std::string& key_help,
                      const std::string& resource, printer print) {
  auto name = std::make_shared<std::string>();
  auto show_cmd = group.add_subcommand("show", help);
  show_cmd->add_option(key, *name, key_help)->required();
  on_run(*show_cmd, ctx, [&ctx, name, resource, print] {
    auto& on = ctx.server;
    return show(ctx, on.api().get(on.project_path() + resource + path_escape(*name)), print);
  });
}

void add_list_command(CLI::App& group, context& ctx, const std::string& help,
                      const std::string& resource, printer print_items,
                      const std::vector<list_filter>& filters) {
  auto page = std::make_shared<page_options>();
  auto list = group.add_subcommand("list", help);
  list->add_option("--offset", page->offset, "Skip this many")->capture_default_str();
  list->add_option("--limit", page->limit, "At most this many")
    ->capture_default_str()
    ->check(CLI::Range(1, 10000));
  auto values = std::make_shared<std::vector<std::string>>(filters.size());
  for (std::size_t i = 0; i < filters.size(); ++i)
    list->add_option("--" + filters[i].name, (*values)[i], filters[i].help)
      ->check(CLI::IsMember(filters[i].choices));
  on_run(*list, ctx, [&ctx, page, resource, print_items, filters, values] {
    auto& on = ctx.server;
    auto query = "?offset=" + std::to_string(page->offset)
                 + "&limit=" + std::to_string(page->limit);
    for (std::size_t i = 0; i < filters.size(); ++i)
      if (!(*values)[i].empty())
        query += "&" + filters[i].name + "=" + (*values)[i];
    auto res = on.api().get(on.project_path() + resource + query);
    ctx.options.json ? print_json(res) : print_items(std::cout, res.at("items"));
    return exit_ok;
  });
}

} // namespace cobble::cli
