/// `cobble user create|list`: user accounts, through the admin API.

#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace cobble::cli {

namespace {

using nlohmann::json;

/// The options of `user create`.
struct user_options {
  std::string name;
  std::string email;
};

int user_create(context& ctx, const user_options& o) {
  auto& on = ctx.server;
  auto res = on.api().post(on.project_path() + "/users",
                           json{{"name", o.name}, {"email", o.email}});
  if (ctx.options.json)
    print_json(res);
  else
    std::cout << "user " << field(res, "id") << " " << o.name << "\nauthenticator "
              << field(res, "authenticator") << '\n';
  return exit_ok;
}

void add_user_create(CLI::App& user, context& ctx) {
  auto o = std::make_shared<user_options>();
  auto create = user.add_subcommand("create", "Create an account; prints its authenticator");
  create->add_option("name", o->name, "User name")->required();
  create->add_option("--email", o->email, "E-mail address");
  on_run(*create, ctx, [&ctx, o] { return user_create(ctx, *o); });
}

/// The accounts, one per row.
void print_users(std::ostream& out, const json& users) {
  table t{{"ID", "NAME", "EMAIL", "AUTHENTICATOR", "CREATED"}};
  for (const auto& u : users)
    t.add({field(u, "id"), field(u, "name"), field(u, "email"), field(u, "authenticator"),
           time_field(u, "created")});
  t.print(out);
}

void add_user_list(CLI::App& user, context& ctx) {
  auto list = user.add_subcommand("list", "List user accounts");
  on_run(*list, ctx, [&ctx] {
    auto& on = ctx.server;
    return show(ctx, on.api().get(on.project_path() + "/users"), print_users);
  });
}

} // namespace

void add_user_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "user", "Create and list user accounts", {add_user_create, add_user_list});
}

} // namespace cobble::cli
