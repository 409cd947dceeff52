/// `cobble seq create|show|list|reassign|end|extend`: work sequences (docs/sequences.md),
/// through the admin API.

#include "net/admin_json.hpp"
#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace cobble::cli {

namespace {

using nlohmann::json;

constexpr const char* by_help = "Who does it, recorded in the event (default: your login name)";

// -- printing -----------------------------------------------------------------------------

void print_elements(std::ostream& out, const json& elements, const std::string& indent) {
  table t{{"POS", "WORKUNIT", "KIND", "STATUS", "VALID", "HOST", "SENT", "DEADLINE", "RECEIVED"}};
  for (const auto& el : elements) {
    auto valid = el.at("valid").get<bool>() ? std::string{"yes"} : std::string{"no"};
    if (el.contains("check"))
      valid += " (" + el.at("check").get<std::string>() + ")";
    t.add({field(el, "position"), field(el, "name"), field(el, "kind"), field(el, "status"), valid,
           field(el, "host"), time_field(el, "sent"), time_field(el, "deadline"),
           time_field(el, "received")});
  }
  t.print(out, indent);
}

void print_dead_branches(std::ostream& out, const json& branches) {
  if (!branches.is_array() || branches.empty()) {
    out << "  no dead branches\n";
    return;
  }
  for (const auto& b : branches) {
    out << "  dead branch " << field(b, "number") << " of chain " << field(b, "replica")
        << ": taken from host " << field(b, "host") << " at " << time_field(b, "time") << " by "
        << field(b, "by") << " (" << field(b, "reason") << "); continued after position "
        << field(b, "restart_after") << '\n';
    print_elements(out, b.at("elements"), "    ");
  }
}

void print_sequence(std::ostream& out, const json& s) {
  out << "sequence " << field(s, "name") << " (id " << field(s, "id") << ", app " << field(s, "app")
      << "): " << field(s, "length") << " elements, " << field(s, "replicas")
      << " replica chain(s), "
      << (s.at("ended").get<bool>() ? "ended " + time_field(s, "ended_at") + " by "
                                        + field(s, "ended_by") + " (" + field(s, "end_reason") + ")"
                                    : std::string{"running"})
      << '\n';
  out << "  head " << field(s, "head") << ", max result time " << field(s, "max_result_time")
      << " s, deadline " << field(s, "delay_bound") << " s after sending; created "
      << time_field(s, "created") << " by " << field(s, "created_by") << '\n';
  for (const auto& c : s.at("chains")) {
    out << "  chain " << field(c, "replica") << ": host " << field(c, "host")
        << ", first unvalidated " << field(c, "first_unvalidated") << ", first undispatched "
        << field(c, "first_undispatched") << '\n';
    if (c.contains("elements"))
      print_elements(out, c.at("elements"), "    ");
  }
  print_dead_branches(out, s.at("dead_branches"));
}

// -- seq create ---------------------------------------------------------------------------

/// Options of `seq create`. The optional parameters go straight into the spec: one not given
/// stays unset and takes the app's default.
struct create_options {
  sequence_spec spec;
  int replicas = 1;
  std::string by;
  std::vector<std::string> inputs; ///< PATH or PATH:OPEN_NAME
};

void declare_create_options(CLI::App& create, create_options& o) {
  auto& ss = o.spec;
  create.add_option("name", ss.name, "Sequence name (letters, digits, _ - .)")->required();
  create.add_option("--app", ss.app, "App name")->required();
  create.add_option("--count", ss.count, "Elements created now")
    ->required()
    ->check(CLI::Range(1, 100000));
  create.add_option("--state-every", ss.state_every,
                    "Positions that are multiples of K upload full state files; the others "
                    "are heartbeats without output files (default 0: none)");
  create.add_flag("--final-state", ss.final_state, "The last element uploads full state");
  create
    .add_option("--max-result-time", ss.max_result_time,
                "Seconds a host may need for one element; slower hosts are not given "
                "the sequence (default: the deadline)")
    ->check(CLI::PositiveNumber);
  create
    .add_option("--replicas", o.replicas,
                "2: run the sequence on two hosts and compare element by element")
    ->check(CLI::Range(1, 2));
  create.add_option("--command-line", ss.command_line, "Command-line arguments of the app");
  create.add_option("--fpops-est", ss.rsc_fpops_est, "Estimated FLOPs of one element")
    ->check(CLI::PositiveNumber);
  create
    .add_option("--delay-bound", ss.delay_bound, "Deadline of an element, seconds after sending")
    ->check(CLI::PositiveNumber);
  create.add_option("--input", o.inputs,
                    "Input file PATH[:OPEN_NAME] of every element (repeatable), e.g. the "
                    "initial state; staged like `work create --input`");
  create.add_option("--by", o.by, by_help);
}

int seq_create(context& ctx, create_options& o) {
  auto& on = ctx.server;
  o.spec.replicas = static_cast<std::uint8_t>(o.replicas);
  o.spec.by = operator_name(o.by);
  for (auto& in : stage_inputs(on, o.inputs))
    o.spec.inputs.push_back(std::move(in));
  auto res = on.api().post(on.project_path() + "/sequences", net::to_json(o.spec));
  return show(ctx, res, print_sequence);
}

void add_seq_create(CLI::App& seq, context& ctx) {
  auto o = std::make_shared<create_options>();
  auto create = seq.add_subcommand(
    "create", "Create a sequence of N elements (one workunit each) kept on one host");
  declare_create_options(*create, *o);
  on_run(*create, ctx, [&ctx, o] { return seq_create(ctx, *o); });
}

// -- seq show, seq list -------------------------------------------------------------------

void add_seq_show(CLI::App& seq, context& ctx) {
  add_show_command(seq, ctx,
                   "Show a sequence: its chain(s) element by element, assignment, dead branches",
                   "seq", "Sequence name or id", "/sequences/", print_sequence);
}

/// Sequences, one row per replica chain.
void print_sequences(std::ostream& out, const json& sequences) {
  table t{{"ID", "NAME", "APP", "LENGTH", "CHAIN", "HOST", "VALIDATED", "UNDISPATCHED",
           "DEAD BRANCHES", "STATE"}};
  for (const auto& s : sequences)
    for (const auto& c : s.at("chains"))
      t.add({field(s, "id"), field(s, "name"), field(s, "app"), field(s, "length"),
             field(c, "replica"), field(c, "host"), field(c, "validated"),
             field(c, "first_undispatched"), field(s, "dead_branches"),
             s.at("ended").get<bool>() ? "ended" : "running"});
  t.print(out);
}

void add_seq_list(CLI::App& seq, context& ctx) {
  add_list_command(seq, ctx, "List sequences by id", "/sequences", print_sequences);
}

// -- seq reassign, end, extend: commands on one sequence ----------------------------------

/// What the commands on one sequence share: which sequence, and who gives the command.
struct steer_options {
  std::string key;
  std::string by;
};

/// Declares the sequence argument of a command on one sequence.
void add_seq_argument(CLI::App& command, steer_options& o) {
  command.add_option("seq", o.key, "Sequence name or id")->required();
}

/// Posts `verb` on the sequence with `body` (and who gives it); prints the sequence.
int post_command(context& ctx, const steer_options& o, const std::string& verb, json body) {
  auto& on = ctx.server;
  body["by"] = operator_name(o.by);
  auto res = on.api().post(on.project_path() + "/sequences/" + path_escape(o.key) + "/" + verb,
                           body);
  return show(ctx, res, print_sequence);
}

/// Options of `seq reassign`.
struct reassign_options : steer_options {
  std::uint64_t to_host = 0;
  int replica = 0;
  bool unassign = false;
  CLI::Option* to_opt = nullptr;
};

int seq_reassign(context& ctx, const reassign_options& o) {
  if (!o.to_opt->count() && !o.unassign)
    throw usage_error("seq reassign needs --to HOST or --unassign");
  json body = {{"replica", o.replica}};
  if (o.unassign)
    body["unassign"] = true;
  else
    body["to"] = o.to_host;
  return post_command(ctx, o, "reassign", body);
}

void add_seq_reassign(CLI::App& seq, context& ctx) {
  auto o = std::make_shared<reassign_options>();
  auto reassign = seq.add_subcommand(
    "reassign", "Take a sequence's chain from its host (its work after the last full state "
                "upload becomes a dead branch) and give it to another host, or to none");
  add_seq_argument(*reassign, *o);
  o->to_opt = reassign->add_option("--to", o->to_host, "Host id to give the chain to");
  auto unassign_opt = reassign->add_flag("--unassign", o->unassign,
                                         "Leave the chain unassigned: the next fast enough host "
                                         "that asks for work takes it");
  o->to_opt->excludes(unassign_opt);
  reassign->add_option("--replica", o->replica, "Which chain of a replicated sequence (0 or 1)")
    ->check(CLI::Range(0, 1));
  reassign->add_option("--by", o->by, by_help);
  on_run(*reassign, ctx, [&ctx, o] { return seq_reassign(ctx, *o); });
}

/// Options of `seq end`.
struct end_options : steer_options {
  std::string reason;
};

void add_seq_end(CLI::App& seq, context& ctx) {
  auto o = std::make_shared<end_options>();
  auto end = seq.add_subcommand(
    "end", "End a sequence: no more elements; unreported ones are cancelled and hosts told");
  add_seq_argument(*end, *o);
  end->add_option("--reason", o->reason, "Why (recorded)");
  end->add_option("--by", o->by, by_help);
  on_run(*end, ctx, [&ctx, o] {
    json body = json::object();
    if (!o->reason.empty())
      body["reason"] = o->reason;
    return post_command(ctx, *o, "end", body);
  });
}

/// Options of `seq extend`.
struct extend_options : steer_options {
  std::uint32_t count = 0, state_every = 0;
  bool final_state = false;
};

int seq_extend(context& ctx, const extend_options& o) {
  json body = {{"count", o.count}};
  if (o.state_every)
    body["state_every"] = o.state_every;
  if (o.final_state)
    body["final_state"] = true;
  return post_command(ctx, o, "extend", body);
}

void add_seq_extend(CLI::App& seq, context& ctx) {
  auto o = std::make_shared<extend_options>();
  auto extend = seq.add_subcommand("extend", "Add elements at the end of a sequence");
  add_seq_argument(*extend, *o);
  extend->add_option("--count", o->count, "Elements to add")
    ->required()
    ->check(CLI::Range(1, 100000));
  extend->add_option("--state-every", o->state_every,
                     "New positions that are multiples of K upload full state");
  extend->add_flag("--final-state", o->final_state, "The last new element uploads full state");
  extend->add_option("--by", o->by, by_help);
  on_run(*extend, ctx, [&ctx, o] { return seq_extend(ctx, *o); });
}

} // namespace

void add_seq_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "seq", "Create, inspect and steer work sequences (docs/sequences.md)",
            {add_seq_create, add_seq_show, add_seq_list, add_seq_reassign, add_seq_end,
             add_seq_extend});
}

} // namespace cobble::cli
