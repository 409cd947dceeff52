/// `cobble work create|show|list|cancel`: workunits, through the admin API.

#include "net/admin_json.hpp"
#include "net/number_text.hpp"
#include "tools/cobble/batch.hpp"
#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>

namespace cobble::cli {

namespace {

using nlohmann::json;

// -- work create --------------------------------------------------------------------------

/// Options of `work create`. The optional parameters go straight into the spec: one not given
/// stays unset and takes the app's default.
struct create_options {
  work_spec spec;
  int count = 0;
  std::string submitter;
  std::vector<std::string> inputs; ///< PATH or PATH:OPEN_NAME
  std::string batch;               ///< --batch FILE: every workunit from the file
  CLI::Option* count_opt = nullptr;
  CLI::Option* submitter_opt = nullptr;
};

/// Accepts a finite number above zero, saying what is wrong otherwise.
CLI::Validator positive_app_units() {
  return CLI::Validator(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || !(v > 0))
        return "predicted app units must be a positive number, got '" + text + "'";
      return {};
    },
    "POSITIVE", "positive");
}

void declare_create_options(CLI::App& create, create_options& co) {
  auto& spec = co.spec;
  create.add_option("--app", spec.app, "App name (required without --batch)");
  create.add_option("--name", spec.name, "Workunit name (default: generated)");
  co.count_opt = create.add_option("--count", co.count, "Create N workunits (generated names)")
                   ->check(CLI::Range(1, 100000))
                   ->excludes("--name");
  create.add_option("--command-line", spec.command_line, "Command-line arguments of the app");
  create.add_option("--fpops-est", spec.rsc_fpops_est, "Estimated FLOPs")
    ->check(CLI::PositiveNumber);
  create.add_option("--fpops-bound", spec.rsc_fpops_bound, "FLOPs after which a job aborts")
    ->check(CLI::PositiveNumber);
  create
    .add_option("--predicted-app-units", spec.predicted_app_units,
                "AutoFlops: predicted app units of each job (default 1); "
                "rsc_fpops_est/bound then follow from the app's statistics "
                "(docs/autoflops.md)")
    ->check(positive_app_units());
  create.add_option("--delay-bound", spec.delay_bound, "Deadline, seconds after sending")
    ->check(CLI::PositiveNumber);
  create.add_option("--min-quorum", spec.min_quorum, "Agreeing results needed")
    ->check(CLI::PositiveNumber);
  create.add_option("--target-nresults", spec.target_nresults, "Replicas created at once")
    ->check(CLI::PositiveNumber);
  create
    .add_option("--max-error-results", spec.max_error_results,
                "Failed results after which the workunit fails")
    ->check(CLI::PositiveNumber);
  create
    .add_option("--max-total-results", spec.max_total_results,
                "Results in all after which the workunit fails")
    ->check(CLI::PositiveNumber);
  create
    .add_option("--max-success-results", spec.max_success_results,
                "Successful results without a quorum after which the workunit fails")
    ->check(CLI::PositiveNumber);
  create.add_option("--memory-bound", spec.rsc_memory_bound, "Bytes of memory a job may use")
    ->check(CLI::PositiveNumber);
  create.add_option("--disk-bound", spec.rsc_disk_bound, "Bytes of disk a job may use")
    ->check(CLI::PositiveNumber);
  co.submitter_opt = create.add_option("--submitter", co.submitter,
                                       "Who creates the work (default: cobble-cli)");
  create.add_option("--input", co.inputs,
                    "Input file PATH[:OPEN_NAME] (repeatable): copied into the server's data "
                    "directory (identical content is stored once); the app opens it as "
                    "OPEN_NAME (default: the file's name)");
  auto* batch = create.add_option(
    "--batch", co.batch,
    "A JSON or YAML file of workunits, created all or none: a list of specs with the admin "
    "API's fields (app, name, count, min_quorum, ... docs/admin-api.md), or {items: [...], "
    "submitter: S}; an input {file: PATH, open_name: NAME} is staged first");
  // The batch file says everything: no other option of a workunit beside it.
  for (auto* o : create.get_options())
    if (o != batch && o != co.submitter_opt && o->get_name() != "--help")
      batch->excludes(o);
}

/// The request body of `work create`: the batch file's, or one item from the options.
json create_body(online& on, create_options& co) {
  if (!co.batch.empty()) {
    auto body = read_batch(on, co.batch);
    if (co.submitter_opt->count())
      body["submitter"] = co.submitter;
    return body;
  }
  if (co.spec.app.empty())
    throw usage_error("work create: give --app APP (or --batch FILE)");
  for (auto& in : stage_inputs(on, co.inputs))
    co.spec.inputs.push_back(std::move(in));
  auto item = net::to_json(co.spec);
  if (co.count_opt->count())
    item["count"] = co.count;
  return {{"items", json::array({item})},
          {"submitter", co.submitter.empty() ? "cobble-cli" : co.submitter}};
}

int work_create(context& ctx, create_options& co) {
  auto& on = ctx.server;
  auto res = on.api().post(on.project_path() + "/workunits", create_body(on, co));
  if (ctx.options.json)
    print_json(res);
  else
    for (const auto& n : res.at("names"))
      std::cout << n.get<std::string>() << '\n';
  return exit_ok;
}

void add_work_create(CLI::App& work, context& ctx) {
  auto co = std::make_shared<create_options>();
  auto create = work.add_subcommand("create", "Create workunits; prints their names");
  declare_create_options(*create, *co);
  on_run(*create, ctx, [&ctx, co] { return work_create(ctx, *co); });
}

// -- work show ----------------------------------------------------------------------------

/// A workunit's parameters, one per line.
void print_params(std::ostream& out, const json& w) {
  const auto& p = w.at("params");
  table kv{{"state", field(w, "state")}};
  kv.add({"created", time_field(w, "created")});
  kv.add({"finished", time_field(w, "finished")});
  kv.add({"canonical", field(w, "canonical_result")});
  kv.add({"failure", field(w, "failure")});
  kv.add({"command line", p.at("command_line").get<std::string>().empty()
                            ? "-"
                            : p.at("command_line").get<std::string>()});
  kv.add({"fpops est/bound", field(p, "rsc_fpops_est") + " / " + field(p, "rsc_fpops_bound")});
  if (p.contains("predicted_app_units"))
    kv.add({"predicted app units", field(p, "predicted_app_units")});
  kv.add({"memory/disk bound", field(p, "rsc_memory_bound") + " / " + field(p, "rsc_disk_bound")});
  kv.add({"delay bound", field(p, "delay_bound") + " s"});
  kv.add({"quorum", "min " + field(p, "min_quorum") + ", target " + field(p, "target_nresults")
                      + ", max errors " + field(p, "max_error_results") + ", max total "
                      + field(p, "max_total_results") + ", max success "
                      + field(p, "max_success_results")});
  for (const auto& in : p.at("inputs"))
    kv.add({"input", field(in, "open_name") + " <- " + field(in, "stored_name") + " ("
                       + field(in, "nbytes") + " bytes)"});
  kv.print(out, "  ");
}

/// A workunit's results, one per row.
void print_results(std::ostream& out, const json& results) {
  table t{{"RESULT", "STATE", "HOST", "SENT", "DEADLINE", "RECEIVED", "ELAPSED", "CPU", "EXIT",
           "CREDIT", "FLAGS", "OUTPUTS"}};
  for (const auto& r : results) {
    std::string flags;
    for (const auto& f : r.at("flags"))
      flags += (flags.empty() ? "" : ",") + f.get<std::string>();
    if (r.value("canonical", false))
      flags += (flags.empty() ? "" : ",") + std::string{"canonical"};
    const auto& credit = r.at("credit");
    t.add({field(r, "name"), field(r, "status"), field(r, "host"), time_field(r, "sent"),
           time_field(r, "deadline"), time_field(r, "received"), field(r, "elapsed"),
           field(r, "cpu"), field(r, "exit_status"),
           credit.is_object() ? net::credit_text(credit.at("granted").get<double>()) : "-",
           flags.empty() ? "-" : flags, std::to_string(r.at("outputs").size())});
  }
  t.print(out, "  ");
}

void print_workunit(std::ostream& out, const json& w) {
  out << "workunit " << field(w, "id") << " " << field(w, "name") << " (app " << field(w, "app")
      << ")\n";
  print_params(out, w);
  if (!w.contains("results"))
    return;
  out << "results:\n";
  print_results(out, w.at("results"));
}

void add_work_show(CLI::App& work, context& ctx) {
  add_show_command(work, ctx, "Show a workunit and its results", "name", "Workunit name or id",
                   "/workunits/", print_workunit);
}

// -- work list ----------------------------------------------------------------------------

/// Workunits, one per row, with their results counted by state.
void print_workunits(std::ostream& out, const json& workunits) {
  table t{{"ID", "NAME", "APP", "STATE", "RESULTS", "UNSENT", "IN PROGRESS", "OVER", "CANONICAL",
           "CREATED"}};
  for (const auto& w : workunits) {
    const auto& c = w.at("result_counts");
    t.add({field(w, "id"), field(w, "name"), field(w, "app"), field(w, "state"), field(c, "total"),
           field(c, "unsent"), field(c, "in_progress"), field(c, "over"),
           field(w, "canonical_result"), time_field(w, "created")});
  }
  t.print(out);
}

void add_work_list(CLI::App& work, context& ctx) {
  add_list_command(work, ctx, "List workunits by id", "/workunits", print_workunits,
                   {{"state",
                     "Only workunits in this state: active (being computed), validated (waiting "
                     "for the assimilator), assimilated (done), failed or cancelled",
                     {"active", "validated", "assimilated", "failed", "cancelled"}}});
}

// -- work cancel --------------------------------------------------------------------------

struct cancel_options {
  std::vector<std::string> names;
  std::string reason;
  std::string by;
};

/// Cancels each workunit in turn; each is durable on its own. Stops at the first the server
/// refuses, naming those cancelled before it.
int work_cancel(context& ctx, const cancel_options& o) {
  auto& on = ctx.server;
  json body = {{"by", operator_name(o.by)}};
  if (!o.reason.empty())
    body["reason"] = o.reason;
  std::vector<std::string> done;
  for (const auto& name : o.names) {
    json w;
    try {
      w = on.api().post(on.project_path() + "/workunits/" + path_escape(name) + "/cancel", body);
    } catch (const failure& e) {
      if (done.empty())
        throw;
      std::string list;
      for (const auto& d : done)
        list += (list.empty() ? "" : ", ") + d;
      throw failure(std::string{e.what()} + " (cancelled before it: " + list + ")");
    }
    show(ctx, w, print_workunit);
    done.push_back(name);
  }
  return exit_ok;
}

void add_work_cancel(CLI::App& work, context& ctx) {
  auto o = std::make_shared<cancel_options>();
  auto cancel = work.add_subcommand(
    "cancel", "Cancel workunits: no replica is sent any more, hosts running one are told to "
              "abort it at their next contact, and the workunit ends cancelled (its files "
              "are deleted after the grace period). Not for a sequence's elements (seq end)");
  cancel->add_option("names", o->names, "Workunit names or ids")->required();
  cancel->add_option("--reason", o->reason, "Why (recorded in the event)");
  cancel->add_option("--by", o->by,
                     "Who does it, recorded in the event (default: your login name)");
  on_run(*cancel, ctx, [&ctx, o] { return work_cancel(ctx, *o); });
}

} // namespace

void add_work_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "work", "Create, inspect and cancel workunits",
            {add_work_create, add_work_show, add_work_list, add_work_cancel});
}

} // namespace cobble::cli
