/// `cobble host show|list`: hosts, through the admin API.

#include "net/number_text.hpp"
#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace cobble::cli {

namespace {

using nlohmann::json;

/// What the host said about itself in its last scheduler RPC, one item per line.
void print_host_info(std::ostream& out, const json& s) {
  const auto& i = s.at("info");
  table kv{{"last rpc", time_field(s, "last_rpc")}};
  kv.add({"domain", field(i, "domain_name")});
  kv.add({"cpid", field(i, "host_cpid")});
  kv.add({"os", field(i, "os_name") + " " + field(i, "os_version")});
  kv.add({"cpu", field(i, "p_ncpus") + " x " + field(i, "p_vendor") + " " + field(i, "p_model")});
  kv.add({"fpops/iops", field(i, "p_fpops") + " / " + field(i, "p_iops")});
  kv.add({"memory/disk free", field(i, "m_nbytes") + " / " + field(i, "d_free")});
  for (const auto& c : i.at("coprocs"))
    kv.add({"coproc", field(c, "count") + " x " + field(c, "type") + " (peak flops "
                        + field(c, "peak_flops") + ")"});
  kv.add({"results reported", field(s, "results_reported")});
  kv.print(out, "  ");
}

void print_host(std::ostream& out, const json& h) {
  const auto& c = h.at("credit");
  out << "host " << field(h, "id") << " (user " << field(h, "user") << ", registered "
      << time_field(h, "created") << ", last contact " << time_field(h, "last_contact") << ")\n"
      << "credit: " << net::credit_text(c.at("total_credit").get<double>()) << " total, "
      << net::credit_text(c.at("expavg_credit").get<double>()) << " recent average\n";
  if (!h.contains("state"))
    return;
  const auto& s = h.at("state");
  print_host_info(out, s);
  out << "in progress:\n";
  table ip{{"RESULT", "DEADLINE", "APP VERSION"}};
  for (const auto& r : s.at("in_progress"))
    ip.add({field(r, "result"), time_field(r, "deadline"), field(r, "app_version_id")});
  ip.print(out, "  ");
  out << "app versions:\n";
  table av{{"APP VERSION", "SENT", "SUCCESS", "ERROR", "TIMEOUT", "AVG ELAPSED"}};
  for (const auto& v : s.at("app_versions"))
    av.add({field(v, "app_version_id"), field(v, "n_sent"), field(v, "n_success"),
            field(v, "n_error"), field(v, "n_timeout"), field(v, "avg_elapsed")});
  av.print(out, "  ");
}

void add_host_show(CLI::App& host, context& ctx) {
  auto id = std::make_shared<std::uint64_t>(0);
  auto show_cmd = host.add_subcommand("show", "Show a host with its state");
  show_cmd->add_option("id", *id, "Host id")->required();
  on_run(*show_cmd, ctx, [&ctx, id] {
    auto& on = ctx.server;
    return show(ctx, on.api().get(on.project_path() + "/hosts/" + std::to_string(*id)), print_host);
  });
}

/// Hosts, one per row.
void print_hosts(std::ostream& out, const json& hosts) {
  table t{{"ID", "USER", "REGISTERED", "LAST CONTACT", "TOTAL CREDIT", "RECENT AVERAGE"}};
  for (const auto& h : hosts) {
    const auto& c = h.at("credit");
    t.add({field(h, "id"), field(h, "user"), time_field(h, "created"),
           time_field(h, "last_contact"), net::credit_text(c.at("total_credit").get<double>()),
           net::credit_text(c.at("expavg_credit").get<double>())});
  }
  t.print(out);
}

void add_host_list(CLI::App& host, context& ctx) {
  add_list_command(host, ctx, "List hosts by id", "/hosts", print_hosts);
}

} // namespace

void add_host_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "host", "Inspect hosts", {add_host_show, add_host_list});
}

} // namespace cobble::cli
