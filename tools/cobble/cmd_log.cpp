/// `cobble log tail|replay|verify`: the event log of a data directory, offline. The log is
/// opened read-only (a RocksDB secondary instance), so these are safe next to a running
/// cobbled.

#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/event_text.hpp"
#include "actors/log.hpp"
#include "actors/routing.hpp"
#include "actors/state.hpp"
#include "net/admin_json.hpp"
#include "storage/event_store.hpp"
#include "tools/cobble/commands.hpp"
#include "tools/cobble/print.hpp"
#include "tools/cobble/state_diff.hpp"
#include "tools/prefault.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

namespace cobble::cli {

namespace {

using nlohmann::json;

// -- reading the log ----------------------------------------------------------------------

} // namespace

std::unique_ptr<storage::event_store> open_log(const global_options& g) {
  if (g.data_dir.empty())
    throw usage_error("the log commands need --data-dir DIR (the event log is DIR/log)");
  auto dir = std::filesystem::path{g.data_dir} / "log";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw failure("no event log in " + dir.string());
  storage::store_options opts;
  opts.read_only = true;
  opts.create_if_missing = false;
  auto st = storage::event_store::open(dir, opts);
  if (!st)
    throw failure("cannot open the event log in " + dir.string() + ": " + describe(st.error()));
  return std::move(*st);
}

namespace {

json event_json(const event& e) {
  auto [kind, id] = entity_of(e.data);
  return {{"seq", e.seq},
          {"time", us_to_seconds(e.time)},
          {"project", e.project},
          {"kind", kind_name(kind_of(e.data))},
          {"entity", std::string{to_string(kind)} + ":" + std::to_string(id)},
          {"text", describe(e)}};
}

/// "event 7 (kind 3) does not decode".
std::string undecodable(const storage::event_record& r) {
  return "event " + std::to_string(r.seq) + " (kind " + std::to_string(r.kind)
         + ") does not decode";
}

/// Decodes a record or fails naming its seq.
event decode(const storage::event_record& r) {
  auto e = from_record(r);
  if (!e)
    throw failure(undecodable(r));
  return std::move(*e);
}

/// Prints events from..to; returns the last seq printed (from-1 when none).
std::uint64_t
print_events(const storage::event_store& st, std::uint64_t from, std::uint64_t to, bool as_json) {
  std::uint64_t last = from - 1;
  if (from > to)
    return last;
  std::string decode_error;
  auto err = st.scan(from, to, [&](const storage::event_record& r) {
    auto e = from_record(r);
    if (!e) {
      decode_error = undecodable(r);
      return false;
    }
    if (as_json)
      std::cout << event_json(*e).dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    else
      std::cout << describe(*e) << '\n';
    last = r.seq;
    return true;
  });
  std::cout << std::flush;
  if (err)
    throw failure(describe(err));
  if (!decode_error.empty())
    throw failure(decode_error);
  return last;
}

/// Moves `x` to the heap for the rest of the process. The CLI exits soon after it is done with
/// a replayed world, and the system takes the memory back at exit far faster than destructors
/// free millions of records one by one (over a third of `cobble log replay` at full size).
/// The objects stay reachable from a static list (never destroyed), so a leak checker does
/// not count them as lost.
template <class T>
const T& keep_until_exit(T&& x) {
  static auto* kept = new std::vector<const void*>; // never destroyed, on purpose
  auto* p = new T(std::forward<T>(x));              // never freed, on purpose
  kept->push_back(p);
  return *p;
}

} // namespace

/// Replays events 1..to, printing progress and speed to stderr. The world lives until exit.
const world& replay(const storage::event_store& st, std::uint64_t to) {
  auto start = std::chrono::steady_clock::now();
  heap::prefaulter prefault; // replay builds the state on this thread; another faults its heap in
  auto w = recover(st, true, to,
                   [](std::uint64_t seq) { std::cerr << "replayed up to seq " << seq << '\n'; });
  if (!w)
    throw failure("replay failed: " + describe(w.error()));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto n = w->seq;
  std::ostringstream rate;
  rate.precision(0);
  rate << std::fixed << (secs > 0 ? static_cast<double>(n) / secs : 0.0);
  std::cerr << "replayed " << n << " events in " << secs << " s (" << rate.str() << " events/s)\n";
  return keep_until_exit(std::move(*w));
}

namespace {

// -- log tail -----------------------------------------------------------------------------

volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_sigint(int) {
  interrupted = 1;
}

struct tail_options {
  std::uint64_t from = 0;
  std::uint64_t n = 20;
  bool follow = false;
  bool from_given = false;
  bool n_given = false;
};

/// Prints new events as they are appended, from `next` on, until SIGINT or SIGTERM.
void follow_log(storage::event_store& st, std::uint64_t next, bool as_json) {
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  while (!interrupted) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (interrupted)
      break;
    if (auto err = st.refresh())
      throw failure("cannot catch up with the log: " + describe(err));
    auto now_last = st.last_seq();
    if (now_last >= next)
      next = print_events(st, next, now_last, as_json) + 1;
  }
}

int log_tail(const global_options& g, const tail_options& o) {
  auto st = open_log(g);
  auto last = st->last_seq();
  std::uint64_t from = 0, to = last;
  if (o.from_given) {
    from = std::max<std::uint64_t>(o.from, 1);
    if (o.n_given)
      to = std::min(last, from + o.n - 1);
  } else {
    from = last >= o.n ? last - o.n + 1 : 1;
  }
  if (o.n_given && o.n == 0)
    to = from - 1;
  auto printed = print_events(*st, from, to, g.json);
  if (o.follow)
    follow_log(*st, std::max(printed, to) + 1, g.json);
  return exit_ok;
}

void add_log_tail(CLI::App& log, context& ctx) {
  auto o = std::make_shared<tail_options>();
  auto tail = log.add_subcommand("tail", "Print the newest events, one per line");
  auto from_opt = tail->add_option("--from", o->from, "Start at this seq (default: the last N)");
  auto n_opt = tail->add_option("-n", o->n, "Number of events")->capture_default_str();
  tail->add_flag("--follow,-f", o->follow, "Keep printing new events until interrupted");
  on_run(*tail, ctx, [&ctx, o, from_opt, n_opt] {
    o->from_given = from_opt->count() > 0;
    o->n_given = n_opt->count() > 0;
    return log_tail(ctx.options, *o);
  });
}

// -- log replay ---------------------------------------------------------------------------

/// What `--entity` names.
struct entity_ref {
  entity_kind kind = entity_kind::project;
  std::string key; ///< The id or name as given.
};

entity_ref parse_entity(const std::string& s) {
  auto colon = s.find(':');
  if (colon == std::string::npos || colon + 1 == s.size())
    throw usage_error("--entity must be KIND:ID (host:ID, wu:ID, wu:NAME, user:ID, "
                      "project:NAME, seq:ID, seq:NAME, app:ID, app:NAME, team:ID), got '"
                      + s + "'");
  auto kind = s.substr(0, colon);
  entity_ref out;
  out.key = s.substr(colon + 1);
  bool numeric = std::all_of(out.key.begin(), out.key.end(), ::isdigit);
  if (kind == "host")
    out.kind = entity_kind::host;
  else if (kind == "wu" || kind == "workunit")
    out.kind = entity_kind::workunit;
  else if (kind == "user")
    out.kind = entity_kind::user;
  else if (kind == "project")
    out.kind = entity_kind::project;
  else if (kind == "seq" || kind == "sequence")
    out.kind = entity_kind::sequence;
  else if (kind == "app")
    out.kind = entity_kind::app;
  else if (kind == "team")
    out.kind = entity_kind::team;
  else
    throw usage_error("unknown entity kind '" + kind
                      + "' (host, wu, user, project, seq, app, team)");
  if ((out.kind == entity_kind::host || out.kind == entity_kind::user
       || out.kind == entity_kind::team)
      && !numeric)
    throw usage_error("a " + kind + " is named by its numeric id, got '" + out.key + "'");
  return out;
}

/// One match of an entity in the replayed world: its project's index, id and JSON view.
struct entity_match {
  std::uint16_t project = 0;
  id_type id = 0;
  json state;
};

/// The match in one project (`index`), as the admin API would show it, or nullopt.
std::optional<entity_match>
find_in_project(const project_world& pw, std::uint16_t index, const entity_ref& ref) {
  const auto& ps = pw.project;
  switch (ref.kind) {
    case entity_kind::project:
      if (ps.name == ref.key)
        return entity_match{index, 0, net::to_json(cobble::summarize(ps))};
      break;
    case entity_kind::workunit: {
      const workunit_rec* wu = ps.find_workunit(ref.key);
      if (wu == nullptr && std::all_of(ref.key.begin(), ref.key.end(), ::isdigit))
        wu = ps.workunit(std::stoull(ref.key));
      if (wu != nullptr)
        return entity_match{index, wu->id, net::to_json(net::view_of(ps, *wu))};
      break;
    }
    case entity_kind::host: {
      auto id = std::stoull(ref.key);
      auto reg = ps.hosts.find(id);
      if (reg == ps.hosts.end())
        break;
      host_view v{reg->second, std::nullopt};
      if (auto h = pw.hosts.find(id); h != pw.hosts.end())
        v.state = h->second;
      return entity_match{index, id, net::to_json(v)};
    }
    case entity_kind::user: {
      auto id = std::stoull(ref.key);
      if (auto u = ps.users.find(id); u != ps.users.end())
        return entity_match{index, id, net::to_json(u->second)};
      break;
    }
    case entity_kind::team: {
      auto id = std::stoull(ref.key);
      if (auto t = ps.team_dir.find(id); t != ps.team_dir.end())
        return entity_match{index, id, net::to_json(t->second)};
      break;
    }
    case entity_kind::sequence: {
      auto entry = ps.sequence(ref.key);
      if (entry == nullptr)
        break;
      auto st = pw.sequences.find(entry->id);
      if (st == pw.sequences.end())
        break;
      auto app = ps.app(entry->app);
      return entity_match{index, entry->id,
                          net::to_json(sequence_view{st->second, app ? app->name : "?"})};
    }
    case entity_kind::app: {
      const app_rec* app = ps.app(std::string_view{ref.key});
      if (app == nullptr && ref.key.size() <= 9
          && std::all_of(ref.key.begin(), ref.key.end(), ::isdigit))
        app = ps.app(static_cast<std::uint32_t>(std::stoul(ref.key)));
      if (app != nullptr)
        return entity_match{index, app->id, net::to_json(*app)};
      break;
    }
  }
  return std::nullopt;
}

/// Every project's match (only --project's when given).
std::vector<entity_match>
find_entity(const world& w, const entity_ref& ref, const std::string& only_project) {
  std::vector<entity_match> out;
  for (std::size_t i = 0; i < w.projects.size(); ++i) {
    const auto& pw = w.projects[i];
    const auto& name = pw.project.name;
    if (name.empty() || (!only_project.empty() && name != only_project))
      continue;
    if (auto m = find_in_project(pw, static_cast<std::uint16_t>(i), ref))
      out.push_back(std::move(*m));
  }
  return out;
}

struct replay_options {
  std::uint64_t to = 0;
  bool to_given = false;
  std::string entity;
};

/// Without --entity: every project's summary (only --project's when given).
int print_summaries(const global_options& g, const world& w) {
  json all = json::array();
  for (const auto& pw : w.projects)
    if (!pw.project.name.empty() && (g.project.empty() || pw.project.name == g.project))
      all.push_back(net::to_json(cobble::summarize(pw.project)));
  if (g.json) {
    print_json(json{{"seq", w.seq}, {"projects", all}});
  } else {
    std::cout << "state at seq " << w.seq << ":\n";
    for (const auto& s : all)
      print_summary(std::cout, s);
  }
  return exit_ok;
}

/// The events 1..to that touch the match's entity.
std::vector<event> history_of(const storage::event_store& st, std::uint64_t to,
                              const entity_match& m, entity_kind kind) {
  std::vector<event> history;
  if (to == 0)
    return history;
  auto err = st.scan(1, to, [&](const storage::event_record& r) {
    auto e = decode(r);
    if (e.project == m.project && touches(e, kind, m.id))
      history.push_back(std::move(e));
    return true;
  });
  if (err)
    throw failure(describe(err));
  return history;
}

/// With --entity: each match's history (events 1..to) and state.
int print_entity(const global_options& g, const storage::event_store& st, const world& w,
                 std::uint64_t to, const replay_options& o) {
  auto ref = parse_entity(o.entity);
  auto matches = find_entity(w, ref, g.project);
  if (matches.empty()) {
    std::cerr << "cobble: no " << o.entity << " at seq " << w.seq
              << (g.project.empty() ? "" : " in project " + g.project) << '\n';
    return exit_failure;
  }
  json out = json::array();
  for (const auto& m : matches) {
    const auto& pname = w.projects[m.project].project.name;
    auto history = history_of(st, to, m, ref.kind);
    if (g.json) {
      json h = json::array();
      for (const auto& e : history)
        h.push_back(event_json(e));
      out.push_back({{"project", pname},
                     {"entity", o.entity},
                     {"seq", w.seq},
                     {"history", std::move(h)},
                     {"state", m.state}});
      continue;
    }
    std::cout << "history of " << o.entity << " in project " << pname << " (events 1.." << w.seq
              << "):\n";
    for (const auto& e : history)
      std::cout << describe(e) << '\n';
    std::cout << "state of " << o.entity << " at seq " << w.seq << ":\n"
              << m.state.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
  }
  if (g.json)
    print_json(matches.size() == 1 ? out[0] : out);
  return exit_ok;
}

int log_replay(const global_options& g, const replay_options& o) {
  auto st = open_log(g);
  auto last = st->last_seq();
  auto to = o.to_given ? o.to : last;
  if (to > last) {
    std::cerr << "the log ends at seq " << last << "; replaying to there\n";
    to = last;
  }
  const auto& w = replay(*st, to);
  if (o.entity.empty())
    return print_summaries(g, w);
  return print_entity(g, *st, w, to, o);
}

void add_log_replay(CLI::App& log, context& ctx) {
  auto o = std::make_shared<replay_options>();
  auto rp = log.add_subcommand("replay", "Rebuild the state up to a seq and print an entity's "
                                         "history and state");
  auto to_opt = rp->add_option("--to", o->to, "Last event to apply (default: the end)");
  rp->add_option("--entity", o->entity,
                 "host:ID, wu:ID, wu:NAME, user:ID, project:NAME, seq:ID or seq:NAME "
                 "(default: every project's summary)");
  on_run(*rp, ctx, [&ctx, o, to_opt] {
    o->to_given = to_opt->count() > 0;
    return log_replay(ctx.options, *o);
  });
}

// -- log verify ---------------------------------------------------------------------------

/// Replays up to the newest snapshot and compares; prints a mismatch and returns false.
bool matches_snapshot(const storage::event_store& st, std::uint64_t snap_seq) {
  const auto& replayed = replay(st, snap_seq);
  auto blob = st.read_snapshot(snap_seq);
  if (!blob)
    throw failure("cannot read snapshot " + std::to_string(snap_seq) + ": "
                  + describe(blob.error()));
  const auto& snapshot = keep_until_exit(decode_snapshot(*blob));
  if (!snapshot)
    throw failure("snapshot " + std::to_string(snap_seq) + " does not decode");
  if (auto d = first_difference(replayed, *snapshot)) {
    std::cout << "MISMATCH: state rebuilt from the events up to seq " << snap_seq
              << " differs from snapshot " << snap_seq << ": " << *d << '\n';
    return false;
  }
  return true;
}

/// Checks that events from..to decode.
void check_decodes(const storage::event_store& st, std::uint64_t from, std::uint64_t to) {
  std::string decode_error;
  auto err = st.scan(from, to, [&](const storage::event_record& r) {
    if (!from_record(r)) {
      decode_error = undecodable(r);
      return false;
    }
    return true;
  });
  if (err)
    throw failure("verify failed: " + describe(err));
  if (!decode_error.empty())
    throw failure("verify failed: " + decode_error);
}

int log_verify(const global_options& g) {
  auto st = open_log(g);
  auto last = st->last_seq();
  // Events lost at the end leave no gap in the numbers, but a snapshot taken after them.
  if (auto err = st->check_no_lost_tail())
    throw failure("verify failed: " + describe(err));
  auto snaps = st->list_snapshots();
  if (!snaps)
    throw failure("cannot list snapshots: " + describe(snaps.error()));
  std::uint64_t checked_to = 0;
  std::optional<std::uint64_t> snap_seq;
  if (!snaps->empty()) {
    snap_seq = snaps->back().seq;
    if (!matches_snapshot(*st, *snap_seq))
      return exit_failure;
    checked_to = *snap_seq;
  }
  // The rest of the log (or all of it, without a snapshot) must decode.
  if (checked_to < last)
    check_decodes(*st, checked_to + 1, last);
  if (snap_seq)
    std::cout << "verified " << last << " events; state at seq " << *snap_seq << " equals snapshot "
              << *snap_seq << '\n';
  else
    std::cout << "verified " << last << " events (every one decodes); no snapshot to compare\n";
  return exit_ok;
}

void add_log_verify(CLI::App& log, context& ctx) {
  auto verify = log.add_subcommand("verify", "Fold every event and compare with the newest "
                                             "snapshot; check the whole log decodes");
  on_run(*verify, ctx, [&ctx] { return log_verify(ctx.options); });
}

} // namespace

void add_log_commands(CLI::App& app, context& ctx) {
  add_group(app, ctx, "log",
            "Read the event log of a data directory (offline; safe while cobbled runs)",
            {add_log_tail, add_log_replay, add_log_verify});
}

} // namespace cobble::cli
