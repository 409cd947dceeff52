// cobble-bench: benchmarks of a running or self-started cobbled. See `cobble-bench --help`
// and docs/benchmarks.md; tools/bench/run runs them all and writes BENCHMARKS.md.

#include "child.hpp"
#include "hostile.hpp"
#include "http_call.hpp"
#include "ledger.hpp"
#include "load.hpp"
#include "populate.hpp"
#include "site.hpp"
#include "site_load.hpp"
#include "storage/event_store.hpp"
#include "tools/heap.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <regex>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;
using namespace cobble::bench;

namespace {

// -- small helpers ----------------------------------------------------------------------

/// A request to the admin API (a JSON body, the bearer token) or /metrics.
http_exchange api_call(std::uint16_t port, boost::beast::http::verb verb, const std::string& target,
                       const std::string& body = {}, const std::string& token = {}) {
  http_call_options o;
  o.body = body;
  o.content_type = "application/json";
  o.token = token;
  return http_call(port, verb, target, o);
}

/// A counter or gauge from /metrics text.
double metric(const std::string& text, const std::string& name) {
  auto at = text.find("\n" + name + " ");
  if (at == std::string::npos)
    return 0;
  return std::stod(text.substr(at + name.size() + 2));
}

double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
         + static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

std::string grouped(double v) {
  auto s = fmt::format("{:.0f}", v);
  std::string out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n > 0 && n % 3 == 0 && *it != '-')
      out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return out;
}

/// "met" or "missed by X" for a target.
std::string verdict(bool met, const std::string& by) {
  return met ? "met" : "**missed** (" + by + ")";
}

fs::path self_dir() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : p.parent_path();
}

struct binaries {
  std::string cobbled, cobble;
  std::string baseline; ///< Another cobbled measured first, the same way (before/after).
  std::string baseline_label = "before"; ///< Its name in the tables.
  std::string label = "this build";      ///< This build's name in the tables.

  /// (label, binary) of each cobbled to measure, the baseline first.
  std::vector<std::pair<std::string, std::string>> builds() const {
    if (baseline.empty())
      return {{label, cobbled}};
    return {{baseline_label, baseline}, {label, cobbled}};
  }
};

void add_binary_options(CLI::App* app, binaries& b) {
  // Built next to us: build/tools/bench/cobble-bench -> build/tools/{cobbled,cobble}.
  b.cobbled = (self_dir().parent_path() / "cobbled").string();
  b.cobble = (self_dir().parent_path() / "cobble").string();
  app->add_option("--cobbled", b.cobbled, "The cobbled binary")->capture_default_str();
  app->add_option("--cobble", b.cobble, "The cobble binary")->capture_default_str();
}

void add_baseline_options(CLI::App* app, binaries& b) {
  app
    ->add_option("--baseline-cobbled", b.baseline,
                 "Also measure this cobbled (e.g. built from an older commit) first, in the "
                 "same run, and put both in the tables")
    ->check(CLI::ExistingFile);
  app->add_option("--baseline-label", b.baseline_label, "The baseline's name in the tables")
    ->capture_default_str();
  app->add_option("--label", b.label, "This build's name in the tables")->capture_default_str();
}

/// Appends a Markdown section to the report file (if one was given) and prints it.
void emit(const std::string& report, const std::string& text) {
  std::cout << text << std::flush;
  if (report.empty())
    return;
  std::ofstream out{report, std::ios::app};
  out << text;
}

// -- a cobbled we started ---------------------------------------------------------------

struct server {
  fs::path data;
  std::vector<std::string> extra;
  std::string binary;
  std::unique_ptr<child> proc;
  std::uint16_t port = 0;       ///< The public listener: scheduler RPCs, /metrics.
  std::uint16_t admin_port = 0; ///< The admin API's listener (the public one before it had one).
  std::string key, token;
  /// Project settings written into the demo configuration (key, value), where the build's
  /// --print-config has the key (an older build does not: the setting is left out).
  std::vector<std::pair<std::string, std::string>> project_settings;
  double recovery_reported = 0; ///< "recovered N events in X s"
  double start_seconds = 0;     ///< Process start to "listening".

  server(fs::path dir, std::vector<std::string> args, std::string bin)
    : data(std::move(dir)), extra(std::move(args)), binary(std::move(bin)) {}

  void start() {
    std::vector<std::string> args{binary, "--data-dir",  data.string(), "--port",
                                  "0",    "--log-level", "error"};
    if (has_admin_port())
      args.insert(args.end(), {"--admin-port", "0"});
    args.insert(args.end(), extra.begin(), extra.end());
    if (std::find(extra.begin(), extra.end(), "--config") == extra.end()) {
      if (auto config = bench_demo_config(); !config.empty()) {
        args.emplace_back("--config");
        args.push_back(config);
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    proc = std::make_unique<child>(args);
    auto fail = [&](const std::string& what) {
      proc->drain();
      std::string out;
      for (const auto& l : proc->lines())
        out += "  " + l + "\n";
      throw std::runtime_error("cobbled " + what + "; its output:\n" + out);
    };
    auto rec = proc->wait_for(" events in ", 3600s);
    if (!rec)
      fail("did not recover");
    auto listening = proc->wait_for("listening on http://127.0.0.1:", 600s);
    if (!listening)
      fail("did not start listening");
    start_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto in = rec->find(" events in ");
    recovery_reported = std::stod(rec->substr(in + 11));
    port = static_cast<std::uint16_t>(std::stoi(listening->substr(listening->rfind(':') + 1)));
    // "admin API: http://127.0.0.1:PORT/api/ (token in ...)", the public port in older ones.
    auto admin = proc->wait_for("admin API:", 60s);
    if (!admin || admin->find("/api/") == std::string::npos)
      fail("printed no admin API line");
    auto api_at = admin->find("/api/");
    auto colon = admin->rfind(':', api_at);
    admin_port = static_cast<std::uint16_t>(
      std::stoi(admin->substr(colon + 1, api_at - colon - 1)));
    std::ifstream tf{data / "admin_token"};
    std::getline(tf, token);
    // cobbled prints no account key with --config: the admin API lists them.
    auto users = api_call(admin_port, boost::beast::http::verb::get, "/api/projects/demo/users", {},
                          token);
    if (users.status != 200)
      fail("listed no users: " + std::to_string(users.status) + " " + users.body);
    for (const auto& u : json::parse(users.body))
      if (u.value("name", "") == "demo")
        key = u.value("authenticator", "");
    if (key.empty())
      fail("has no user demo");
  }

  /// The build's effective demo configuration (--print-config), a line each.
  std::vector<std::string> printed_config() const {
    child print{{binary, "--print-config"}};
    print.wait(60s);
    print.drain();
    return print.lines();
  }

  /// Whether the build's configuration has a key (a newer setting than a baseline's).
  bool config_has(const std::string& setting) const {
    auto lines = printed_config();
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      return l.find(" " + setting + ":") != std::string::npos;
    });
  }

  /// The generator plays thousands of hosts under the demo's one account, each asking again
  /// at once: a cobbled with the limits of a public project (10 new hosts per account a day,
  /// a minimum interval between a host's work requests) would refuse it. For such a build
  /// this writes its demo configuration with those two off and `project_settings` set,
  /// beside the data directory, and returns its path; for an older build (a --baseline),
  /// nothing.
  std::string bench_demo_config() const {
    std::string yaml;
    for (const auto& l : printed_config()) {
      auto key_at = l.find_first_not_of(' ');
      auto colon = l.find(':');
      auto name = key_at == std::string::npos || colon == std::string::npos
                    ? std::string{}
                    : l.substr(key_at, colon - key_at);
      auto set = std::find_if(project_settings.begin(), project_settings.end(),
                              [&](const auto& kv) { return kv.first == name; });
      if (name == "max_new_hosts_per_day")
        yaml += l.substr(0, key_at) + "max_new_hosts_per_day: 0\n";
      else if (set != project_settings.end())
        yaml += l.substr(0, key_at) + name + ": " + set->second + "\n";
      else if (name != "min_sendwork_interval")
        yaml += l + "\n";
      if (l.ends_with("limits:"))
        yaml += l.substr(0, l.find("limits:")) + "  min_sendwork_interval: 0s\n";
    }
    if (yaml.find("max_new_hosts_per_day: 0") == std::string::npos)
      return {};
    auto path = fs::absolute(data).string() + ".bench.yaml";
    fs::create_directories(fs::absolute(data).parent_path());
    std::ofstream out{path};
    out << yaml;
    if (!out.flush())
      throw std::runtime_error("cannot write " + path);
    return path;
  }

  int stop() {
    proc->signal(SIGTERM);
    return proc->wait(600s).value_or(-1);
  }

  /// Whether `binary` takes --admin-port (a baseline cobbled may predate the admin listener).
  bool has_admin_port() {
    if (!admin_port_flag) {
      child help{{binary, "--help"}};
      admin_port_flag = help.wait_for("--admin-port", 60s).has_value();
      help.wait(60s);
    }
    return *admin_port_flag;
  }
  std::optional<bool> admin_port_flag;

  void kill9() {
    proc->signal(SIGKILL);
    proc->wait(60s);
  }

  std::string metrics() const {
    auto r = api_call(port, boost::beast::http::verb::get, "/metrics");
    return r.body;
  }

  json project() const {
    auto r = api_call(admin_port, boost::beast::http::verb::get, "/api/projects/demo", {}, token);
    if (r.status != 200)
      throw std::runtime_error("GET /api/projects/demo: " + std::to_string(r.status) + " "
                               + r.body);
    return json::parse(r.body);
  }
};

/// Creates workunits through the admin API, in batches; returns seconds taken.
double create_work(const server& s, std::uint64_t workunits, double job_seconds) {
  auto t0 = std::chrono::steady_clock::now();
  std::uint64_t made = 0;
  while (made < workunits) {
    auto n = std::min<std::uint64_t>(10000, workunits - made); // server.max_batch_items
    json body{{"submitter", "cobble-bench"},
              {"items", json::array({json{{"app", "testapp"},
                                          {"count", n},
                                          {"rsc_fpops_est", job_seconds * 1e9},
                                          {"rsc_fpops_bound", job_seconds * 1e10}}})}};
    auto r = api_call(s.admin_port, boost::beast::http::verb::post, "/api/projects/demo/workunits",
                      body.dump(), s.token);
    if (r.status != 201)
      throw std::runtime_error("creating work: HTTP " + std::to_string(r.status) + " " + r.body);
    made += n;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_load(const char* what, const load_result& r) {
  std::cout << fmt::format("  {}: {:.0f}/s over {:.1f} s ({} requests), jobs {:.0f}/s, reports "
                           "{:.0f}/s, latency p50 {:.2f} ms p99 {:.2f} ms p99.9 {:.2f} ms max "
                           "{:.1f} ms, errors {}, replies without work {}, {} requests in all\n",
                           what, r.rate(), r.seconds, r.rpcs,
                           r.seconds > 0 ? r.jobs / r.seconds : 0,
                           r.seconds > 0 ? r.reports / r.seconds : 0, r.p50_ms, r.p99_ms, r.p999_ms,
                           r.max_ms, r.errors, r.no_work, r.all_rpcs)
            << std::flush;
}

// -- load: against a running server -----------------------------------------------------

struct load_cli {
  load_options o;
  std::size_t hosts = 2000;
};

void add_load_options(CLI::App* app, load_options& o, std::size_t& hosts) {
  app->add_option("--hosts", hosts, "Simulated hosts")->capture_default_str();
  app->add_option("--connections", o.connections, "Keep-alive connections")->capture_default_str();
  app->add_option("--threads", o.threads, "Generator threads (one io_context each)")
    ->capture_default_str();
  app->add_option("--seconds", o.seconds, "Length of the measured window")->capture_default_str();
  app
    ->add_option("--warmup", o.warmup_seconds,
                 "Warm-up before the window (at least until every host is registered)")
    ->capture_default_str();
  app->add_option("--jobs-per-rpc", o.jobs_per_rpc, "CPU instances each RPC asks work for")
    ->capture_default_str();
}

int cmd_load(load_cli& c, bool healthz) {
  c.o.healthz = healthz;
  generator g{c.hosts};
  auto r = g.run(c.o);
  print_load(healthz ? "GET /healthz" : "scheduler RPCs", r);
  return r.rpcs > 0 ? 0 : 1;
}

// -- throughput: sync and async, with the ceiling ---------------------------------------

struct throughput_cli {
  binaries bin;
  load_options o;
  std::size_t hosts = 5000;
  std::uint64_t workunits = 300000;
  std::vector<std::string> modes{"sync", "async"};
  std::string work_dir = "bench-data";
  std::string report;
  std::string scheduler; ///< cobbled --actor-scheduler; empty: its default
  std::string config;    ///< cobbled --config; empty: the embedded demo project
};

/// One measured run of scheduler RPCs against a started server.
struct sched_run {
  load_result load;
  double events = 0, commits = 0, syncs = 0, wall = 0, server_cpu = 0, gen_cpu = 0;
  std::uint64_t rss = 0;
  /// cobbled's CPU time per answered RPC, in ms (over the whole run, warm-up included).
  double cpu_ms_per_rpc() const {
    return load.all_rpcs > 0 ? 1e3 * server_cpu / static_cast<double>(load.all_rpcs) : 0;
  }
};

sched_run measure_rpcs(const server& s, const load_options& o, std::size_t hosts) {
  sched_run rw;
  generator g{hosts};
  auto m0 = s.metrics();
  auto cpu0 = cpu_seconds(s.proc->pid());
  auto self0 = self_cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  rw.load = g.run(o);
  rw.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rw.server_cpu = cpu_seconds(s.proc->pid()) - cpu0;
  rw.gen_cpu = self_cpu_seconds() - self0;
  auto m1 = s.metrics();
  rw.events = metric(m1, "cobble_log_events_total") - metric(m0, "cobble_log_events_total");
  rw.commits = metric(m1, "cobble_log_commits_total") - metric(m0, "cobble_log_commits_total");
  rw.syncs = metric(m1, "cobble_log_syncs_total") - metric(m0, "cobble_log_syncs_total");
  rw.rss = resident_bytes(s.proc->pid());
  print_load("scheduler RPCs", rw.load);
  std::cout << fmt::format("  log: {:.0f} events in {:.0f} commits ({:.1f} events/commit), "
                           "{:.0f} fsyncs/s; CPU over {:.1f} s: cobbled {:.1f} s ({:.3f} ms per "
                           "RPC), generator {:.1f} s\n",
                           rw.events, rw.commits, rw.commits > 0 ? rw.events / rw.commits : 0,
                           rw.syncs / rw.wall, rw.wall, rw.server_cpu, rw.cpu_ms_per_rpc(),
                           rw.gen_cpu);
  if (rw.load.no_work > rw.load.rpcs / 100)
    std::cout << "  warning: " << rw.load.no_work
              << " replies carried no job: create more work (--workunits)\n";
  return rw;
}

/// Starts `binary` on a fresh data directory with `workunits` queued.
std::unique_ptr<server>
start_with_work(const fs::path& dir, std::vector<std::string> args, const std::string& binary,
                std::uint64_t workunits, double job_seconds, double* create_secs = nullptr) {
  fs::remove_all(dir);
  auto s = std::make_unique<server>(dir, std::move(args), binary);
  s->start();
  std::cout << "cobbled " << binary << " on port " << s->port << ", creating " << workunits
            << " workunits (" << 2 * workunits << " jobs)..." << std::endl;
  auto secs = create_work(*s, workunits, job_seconds);
  std::cout << fmt::format("  created in {:.1f} s ({:.0f} workunits/s through the admin API)\n",
                           secs, static_cast<double>(workunits) / secs);
  if (create_secs != nullptr)
    *create_secs = secs;
  return s;
}

void stop_server(server& s) {
  auto code = s.stop();
  if (code != 0)
    std::cout << "  warning: cobbled exited with " << code << "\n";
  fs::remove_all(s.data);
}

int cmd_throughput(throughput_cli& c) {
  struct row {
    std::string build, mode;
    load_result ceiling;
    sched_run sched;
    double create_secs = 0;
  };
  std::vector<row> rows;
  for (const auto& mode : c.modes) {
    for (const auto& [label, binary] : c.bin.builds()) {
      row rw;
      rw.build = label;
      rw.mode = mode;
      std::vector<std::string> args{"--durability", mode};
      if (!c.scheduler.empty()) {
        args.emplace_back("--actor-scheduler");
        args.push_back(c.scheduler);
      }
      if (!c.config.empty()) {
        args.emplace_back("--config");
        args.push_back(c.config);
      }
      std::cout << "durability " << mode << ", " << label << ":\n";
      auto s = start_with_work(fs::path{c.work_dir} / ("throughput-" + mode), args, binary,
                               c.workunits, c.o.job_seconds, &rw.create_secs);
      auto o = c.o;
      o.port = s->port;
      o.account_key = s->key;
      {
        o.healthz = true;
        generator g{c.hosts};
        rw.ceiling = g.run(o);
        print_load("ceiling, GET /healthz", rw.ceiling);
      }
      o.healthz = false;
      rw.sched = measure_rpcs(*s, o, c.hosts);
      stop_server(*s);
      rows.push_back(rw);
    }
  }

  std::string md;
  md += fmt::format("Load: {} simulated hosts on {} keep-alive connections, {} generator "
                    "thread(s), {} s measured after a warm-up of at least {} s, {} job(s) asked "
                    "per RPC; every RPC after a host's first reports the results it got last "
                    "time. cobbled's actor scheduler: {}; its configuration: {}.{}\n\n",
                    c.hosts, c.o.connections, c.o.threads, c.o.seconds, c.o.warmup_seconds,
                    c.o.jobs_per_rpc, c.scheduler.empty() ? "its default" : c.scheduler,
                    c.config.empty()
                      ? "the embedded demo project, with no cap on new hosts per account a "
                        "day and no interval between a host's work requests "
                        "(the generator's hosts share one account and ask at once)"
                      : c.config,
                    c.bin.baseline.empty()
                      ? ""
                      : fmt::format(" Each mode ran `{}` first, then `{}`, one after the other.",
                                    c.bin.baseline_label, c.bin.label));
  md += "| cobbled | durability | ceiling: GET /healthz per s | scheduler RPCs/s | ratio to "
        "ceiling | jobs dispatched/s | results reported/s | p50 ms | p99 ms | p99.9 ms | "
        "events/commit | fsyncs/s | CPU s cobbled / generator | cobbled CPU ms per RPC |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& l = r.sched.load;
    auto secs = l.seconds > 0 ? l.seconds : 1;
    md += fmt::format("| {} | {} | {} | {} | {:.0f} % | {} | {} | {:.2f} | {:.2f} | {:.2f} | "
                      "{:.1f} | {:.0f} | {:.1f} / {:.1f} | {:.3f} |\n",
                      r.build, r.mode, grouped(r.ceiling.rate()), grouped(l.rate()),
                      r.ceiling.rate() > 0 ? 100 * l.rate() / r.ceiling.rate() : 0,
                      grouped(l.jobs / secs), grouped(l.reports / secs), l.p50_ms, l.p99_ms,
                      l.p999_ms, r.sched.commits > 0 ? r.sched.events / r.sched.commits : 0,
                      r.sched.syncs / r.sched.wall, r.sched.server_cpu, r.sched.gen_cpu,
                      r.sched.cpu_ms_per_rpc());
  }
  md += "\n";
  for (const auto& r : rows) {
    if (r.mode != "sync" || r.build != c.bin.label)
      continue;
    auto rate = r.sched.load.rate();
    auto ratio = r.ceiling.rate() > 0 ? rate / r.ceiling.rate() : 0;
    md += fmt::format("Targets (sync, {}): ≥ 10,000 RPCs/s: {}; p99 < 50 ms: {}; ≥ 30 % of the "
                      "ceiling: {}.\n\n",
                      r.build,
                      verdict(rate >= 10000,
                              fmt::format("{:.0f} % of the target, {} RPCs/s short",
                                          100 * rate / 10000, grouped(10000 - rate))),
                      verdict(r.sched.load.p99_ms < 50,
                              fmt::format("p99 {:.1f} ms", r.sched.load.p99_ms)),
                      verdict(ratio >= 0.3, fmt::format("{:.0f} %", 100 * ratio)));
  }
  for (const auto& r : rows)
    md += fmt::format("- {}, {}: work created through the admin API at {} workunits/s; cobbled "
                      "resident {:.0f} MB after the run; {} errors, {} replies without work.\n",
                      r.build, r.mode, grouped(static_cast<double>(c.workunits) / r.create_secs),
                      static_cast<double>(r.sched.rss) / 1e6,
                      r.sched.load.errors + r.ceiling.errors, r.sched.load.no_work);
  md += "\n";
  emit(c.report, md);
  return 0;
}

// -- hostile: honest load with and without attackers -----------------------------------------

struct hostile_cli {
  binaries bin;
  load_options o;
  attack_options a;
  std::size_t hosts = 2000;
  std::uint64_t workunits = 200000;
  std::string work_dir = "bench-data";
  std::string report;
};

/// The project the hostile benchmark runs: the demo's app and every default of a public
/// project (one result of a workunit per user, 10 new hosts per account a day, the caps on
/// claimed CPUs and jobs in progress), except the interval between a host's work requests,
/// which is 0 for everyone: the generator plays each honest host asking again at once.
std::string hostile_config(std::size_t honest_users) {
  std::string users = "      - {name: demo, email: demo@example.org}\n"
                      "      - {name: mallory, email: mallory@example.org}\n";
  for (std::size_t i = 1; i < honest_users; ++i)
    users += fmt::format("      - {{name: honest{}, email: honest{}@example.org}}\n", i, i);
  return "projects:\n"
         "  - name: demo\n"
         "    limits:\n"
         "      min_sendwork_interval: 0s\n"
         "    users:\n"
         + users
         + "    apps:\n"
           "      - name: testapp\n"
           "        min_quorum: 2\n"
           "        target_nresults: 2\n"
           "        validator: bitwise\n"
           "        versions:\n"
           "          - {platform: x86_64-pc-linux-gnu, version_num: 100}\n";
}

int cmd_hostile(hostile_cli& c) {
  const auto honest_users = (c.hosts + 9) / 10; // 10 new hosts per account a day
  fs::create_directories(c.work_dir);
  const auto config = fs::absolute(fs::path{c.work_dir} / "hostile.yaml");
  {
    std::ofstream out{config};
    out << hostile_config(honest_users);
  }
  auto s = start_with_work(fs::path{c.work_dir} / "hostile", {"--config", config.string()},
                           c.bin.cobbled, c.workunits, c.o.job_seconds);
  auto users = api_call(s->admin_port, boost::beast::http::verb::get, "/api/projects/demo/users",
                        {}, s->token);
  auto o = c.o;
  o.port = s->port;
  auto a = c.a;
  a.port = s->port;
  for (const auto& u : json::parse(users.body)) {
    if (u.value("name", "") == "mallory")
      a.account_key = u.value("authenticator", "");
    else
      o.account_keys.push_back(u.value("authenticator", ""));
  }
  if (a.account_key.empty() || o.account_keys.size() != honest_users)
    throw std::runtime_error("the hostile project's users are not as configured");

  generator g{c.hosts};
  std::cout << "honest load alone:\n";
  auto alone = g.run(o);
  print_load("scheduler RPCs", alone);
  auto rss0 = resident_bytes(s->proc->pid());
  auto m0 = s->metrics();
  std::cout << "honest load with the attackers:\n";
  attack attackers{a};
  attackers.start();
  auto t0 = std::chrono::steady_clock::now();
  auto attacked = g.run(o);
  auto n = attackers.stop();
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_load("scheduler RPCs", attacked);
  auto m1 = s->metrics();
  auto rss1 = resident_bytes(s->proc->pid());
  auto after = api_call(s->port, boost::beast::http::verb::get, "/healthz");
  stop_server(*s);

  const double kept = alone.rate() > 0 ? attacked.rate() / alone.rate() : 0;
  std::string md;
  md += fmt::format(
    "Honest load: {} simulated hosts under {} accounts on {} keep-alive connections, {} s "
    "measured after a warm-up of at least {} s; the project keeps a public project's defaults "
    "but `min_sendwork_interval: 0s`. Attackers (one thread each, {} ms between requests, "
    "{} idle connections): a new host per RPC from one account, a host claiming 1,024 CPUs "
    "asking for a year of work, uploads announcing 200 MiB under a forged signature, "
    "requests with NaN speeds and invalid UTF-8 in 10 kB host strings, and connections "
    "that send half a header and stall.\n\n",
    c.hosts, honest_users, c.o.connections, c.o.seconds, c.o.warmup_seconds, c.a.pause_ms,
    c.a.idle_connections);
  md += "| honest load | RPCs/s | p50 ms | p99 ms | p99.9 ms | max ms | errors |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto& [label, r] : {std::pair{"alone", &alone}, std::pair{"under attack", &attacked}})
    md += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1f} | {} |\n", label,
                      grouped(r->rate()), r->p50_ms, r->p99_ms, r->p999_ms, r->max_ms, r->errors);
  md += fmt::format(
    "\nThe attackers over {:.1f} s: {} registrations, {} of them answered with a host id; {} "
    "hoarding RPCs got {} jobs in all; {} uploads, {} refused from their header; {} poisoned "
    "requests, {} answered with a message; {} idle connections opened; {} attacker "
    "connections failed. cobbled's resident memory {:.0f} MB before the attack, {:.0f} MB "
    "after; {} connections refused busy, {} read timeouts; /healthz after: {}.\n\n",
    secs, n.registrations, n.hosts_registered, n.hoard_rpcs, n.jobs_hoarded, n.uploads,
    n.uploads_refused, n.poisoned, n.poisoned_refused, n.idle_opened, n.errors,
    static_cast<double>(rss0) / 1e6, static_cast<double>(rss1) / 1e6,
    metric(m1, "cobble_http_refused_busy_total") - metric(m0, "cobble_http_refused_busy_total"),
    metric(m1, "cobble_http_timeouts_total") - metric(m0, "cobble_http_timeouts_total"),
    after.status);
  md += fmt::format(
    "Targets: the honest rate under attack within 20 % of the rate alone: {}; honest p99 "
    "under attack < 100 ms: {}.\n\n",
    verdict(kept >= 0.8, fmt::format("{:.0f} % kept", 100 * kept)),
    verdict(attacked.p99_ms < 100, fmt::format("p99 {:.1f} ms", attacked.p99_ms)));
  emit(c.report, md);
  return 0;
}

// -- site-load: the volunteer site's pages through HTTP, and the scheduler beside them ------

struct site_load_cli {
  binaries bin;
  load_options o;
  std::size_t hosts = 5000;
  std::uint64_t workunits = 300000;
  std::size_t site_connections = 16;
  double site_rate = 200; ///< Pages per second in phase C.
  std::string work_dir = "bench-data";
  std::string report;
};

/// Runs `site` (page requests) and `sched` (scheduler RPCs) at once, their windows aligned.
std::pair<load_result, load_result>
run_both(generator& pages, const load_options& site, generator& fleet, const load_options& sched) {
  load_result page_result;
  std::thread t{[&] { page_result = pages.run(site); }};
  auto sched_result = fleet.run(sched);
  t.join();
  return {page_result, sched_result};
}

int cmd_site_load(site_load_cli& c) {
  auto s = start_with_work(fs::path{c.work_dir} / "site-load", {}, c.bin.cobbled, c.workunits,
                           c.o.job_seconds);
  auto vol = join_site(s->port, "demo", "Ann Bench", "ann@example.org", "a bench password");
  // One host in 1,000 is the volunteer's (five of the default 5,000): their account page
  // lists computers that are working, and their recent results.
  auto sched = c.o;
  sched.port = s->port;
  sched.account_keys.assign(1000, s->key);
  sched.account_keys[0] = vol.account_key;
  generator fleet{c.hosts};
  std::cout << "scheduler RPCs alone (A):\n";
  auto a_cpu0 = cpu_seconds(s->proc->pid());
  auto alone = fleet.run(sched);
  auto a_cpu = cpu_seconds(s->proc->pid()) - a_cpu0;
  print_load("scheduler RPCs", alone);

  auto account = get_page(s->port, "/demo/account", vol.cookie);
  auto computers = host_links(account.body);
  if (account.status != 200 || computers.empty())
    throw std::runtime_error("the volunteer's account page lists no computer (HTTP "
                             + std::to_string(account.status) + ")");
  auto kinds = site_pages("demo", computers.front(), c.hosts);
  auto site = c.o;
  site.port = s->port;
  site.connections = c.site_connections;
  site.cookie = vol.cookie;
  site.pages = page_mix(kinds);
  generator pages{0};
  std::cout << "site pages alone (B), each kind, then the mix:\n";
  std::vector<std::pair<std::string, load_result>> by_kind;
  for (const auto& k : kinds) {
    auto one = site;
    one.pages = k.targets;
    by_kind.emplace_back(k.name, pages.run(one));
    print_load(k.name.c_str(), by_kind.back().second);
  }
  auto b_cpu0 = cpu_seconds(s->proc->pid());
  auto site_alone = pages.run(site);
  auto b_cpu = cpu_seconds(s->proc->pid()) - b_cpu0;
  print_load("page mix", site_alone);

  std::cout << fmt::format("both at once, pages at {:.0f}/s (C):\n", c.site_rate);
  auto paced = site;
  paced.pages_per_second = c.site_rate;
  auto c_cpu0 = cpu_seconds(s->proc->pid());
  auto [site_both, sched_both] = run_both(pages, paced, fleet, sched);
  auto c_cpu = cpu_seconds(s->proc->pid()) - c_cpu0;
  print_load("page mix", site_both);
  print_load("scheduler RPCs", sched_both);
  std::cout << "both at once, pages as fast as they come (D):\n";
  auto d_cpu0 = cpu_seconds(s->proc->pid());
  auto [site_flood, sched_flood] = run_both(pages, site, fleet, sched);
  auto d_cpu = cpu_seconds(s->proc->pid()) - d_cpu0;
  print_load("page mix", site_flood);
  print_load("scheduler RPCs", sched_flood);
  std::cout << "scheduler RPCs alone again (A'):\n";
  auto again = fleet.run(sched);
  print_load("scheduler RPCs", again);
  auto after = get_page(s->port, "/demo/account", vol.cookie);
  stop_server(*s);

  auto errors = site_alone.errors + site_both.errors + site_flood.errors;
  for (const auto& [name, r] : by_kind)
    errors += r.errors;
  if (after.status != 200 || after.body.find("Ann Bench") == std::string::npos)
    ++errors;
  const double sched_alone = (alone.rate() + again.rate()) / 2;
  const double kept = sched_alone > 0 ? sched_both.rate() / sched_alone : 0;
  const double kept_flooded = sched_alone > 0 ? sched_flood.rate() / sched_alone : 0;
  std::string md;
  md += fmt::format(
    "cobbled on the demo project with {} workunits queued; the scheduler load is {} simulated "
    "hosts on {} keep-alive connections, five of them a volunteer's who joined through the "
    "site's form; the pages are asked on {} keep-alive connections with that volunteer's "
    "session, in the mix account 4 : top lists 4 : computer 1 : home 1 (top lists of users, "
    "computers and teams by recent and total credit, pages spread over the first {} ranks). "
    "Each phase: {} s measured after a warm-up of at least {} s. The generators share the "
    "machine's cores with cobbled.\n\n",
    grouped(static_cast<double>(c.workunits)), c.hosts, c.o.connections, c.site_connections,
    std::min<std::size_t>(c.hosts, 10000), c.o.seconds, c.o.warmup_seconds);
  md += "| phase | requests | per second | p50 ms | p99 ms | max ms | errors | cobbled CPU s |\n"
        "|---|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string& phase, const std::string& what, const load_result& r,
                 const std::string& cpu) {
    md += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {} | {} |\n", phase, what,
                      grouped(r.rate()), r.p50_ms, r.p99_ms, r.max_ms, r.errors, cpu);
  };
  row("A: scheduler alone", "scheduler RPCs", alone, fmt::format("{:.1f}", a_cpu));
  for (const auto& [name, r] : by_kind)
    row("B: one kind of page", name + " pages", r, "");
  row("B: the site alone", "pages (mix)", site_alone, fmt::format("{:.1f}", b_cpu));
  auto c_label = fmt::format("C: both, pages at {:.0f}/s", c.site_rate);
  row(c_label, "pages (mix)", site_both, fmt::format("{:.1f}", c_cpu));
  row(c_label, "scheduler RPCs", sched_both, "");
  row("D: both, pages unpaced", "pages (mix)", site_flood, fmt::format("{:.1f}", d_cpu));
  row("D: both, pages unpaced", "scheduler RPCs", sched_flood, "");
  row("A': scheduler alone again", "scheduler RPCs", again, "");
  md += fmt::format(
    "\nTarget: scheduler RPCs per second with the site under load ({:.0f} pages/s) within 10 % "
    "of the rate alone (the mean of A and A'): {}; every page answered 200 and the account "
    "page after the run still shows the volunteer: {}. With the pages unpaced (D), the two "
    "loads share the cores: the scheduler kept {:.0f} % of its rate while the site served "
    "{:.0f} pages/s.\n\n",
    c.site_rate, verdict(kept >= 0.9, fmt::format("{:.0f} % kept", 100 * kept)),
    verdict(errors == 0, fmt::format("{} errors", errors)), 100 * kept_flooded, site_flood.rate());
  emit(c.report, md);
  return errors == 0 ? 0 : 1;
}

// -- cost: CPU per RPC at low and high concurrency -----------------------------------------

struct cost_cli {
  binaries bin;
  load_options o;
  std::size_t hosts = 2000;
  std::vector<std::size_t> connections{2, 8, 64};
  std::uint64_t workunits = 100000;
  std::string work_dir = "bench-data";
  std::string report;
};

int cmd_cost(cost_cli& c) {
  struct row {
    std::string build;
    std::size_t connections = 0;
    sched_run sched;
  };
  std::vector<row> rows;
  for (auto n : c.connections) {
    for (const auto& [label, binary] : c.bin.builds()) {
      std::cout << n << " connections, " << label << ":\n";
      auto s = start_with_work(fs::path{c.work_dir} / "cost", {"--durability", "sync"}, binary,
                               c.workunits, c.o.job_seconds);
      auto o = c.o;
      o.port = s->port;
      o.account_key = s->key;
      o.connections = n;
      rows.push_back(row{label, n, measure_rpcs(*s, o, c.hosts)});
      stop_server(*s);
    }
  }
  std::string md = fmt::format(
    "Durability sync; {} simulated hosts; each connection sends its next RPC when the last is "
    "answered, so at 2 connections at most 2 RPCs are in flight and group commit has little to "
    "group. {} s measured after a warm-up of at least {} s. CPU is cobbled's user + system time "
    "over the whole run (warm-up included) divided by every RPC it answered.{}\n\n",
    c.hosts, c.o.seconds, c.o.warmup_seconds,
    c.bin.baseline.empty()
      ? ""
      : fmt::format(" Each count ran `{}` first, then `{}`.", c.bin.baseline_label, c.bin.label));
  md += "| connections | cobbled | scheduler RPCs/s | p50 ms | p99 ms | events/commit | "
        "cobbled CPU ms per RPC |\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows)
    md += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {:.3f} |\n", r.connections,
                      r.build, grouped(r.sched.load.rate()), r.sched.load.p50_ms,
                      r.sched.load.p99_ms,
                      r.sched.commits > 0 ? r.sched.events / r.sched.commits : 0,
                      r.sched.cpu_ms_per_rpc());
  md += "\n";
  emit(c.report, md);
  return 0;
}

// -- hosts: memory after many distinct hosts called once -----------------------------------

struct hosts_cli {
  binaries bin;
  load_options o;
  std::size_t hosts = 1000000;
  double passivate_after = 2; ///< Seconds, for the run with passivation on.
  std::string work_dir = "bench-data";
  std::string report;
};

int cmd_hosts(hosts_cli& c) {
  struct row {
    std::string build, passivation;
    double seconds = 0;
    std::uint64_t rss0 = 0, rss1 = 0;
    double in_memory = 0, live = 0, passivated = 0, estimate = 0;
    load_result load;
  };
  // Both runs sweep every second (the project's tick passivates), so that hosts are
  // passivated while others still register and their memory is used again, as in a project
  // whose hosts come and go. Both wait as long after the load before reading memory: long
  // enough for every host to be idle past passivate_after and for a sweep to passivate it.
  auto settle = std::chrono::duration<double>(c.passivate_after + 3);
  std::vector<row> rows;
  for (const auto& [label, binary] : c.bin.builds()) {
    auto dir = fs::path{c.work_dir} / "hosts";
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> runs;
    if (server{dir, {}, binary}.config_has("passivate_hosts_after"))
      runs = {{"off",
               {{"passivate_hosts_after", "0s"},
                {"max_live_hosts", "0"},
                {"deadline_check_interval", "1s"}}},
              {fmt::format("after {:g} s", c.passivate_after),
               {{"passivate_hosts_after", fmt::format("{:g}s", c.passivate_after)},
                {"deadline_check_interval", "1s"}}}};
    else
      runs = {{"not built", {}}};
    for (const auto& [passivation, settings] : runs) {
      std::cout << c.hosts << " hosts, " << label << ", passivation " << passivation << ":\n";
      fs::remove_all(dir);
      server s{dir, {"--durability", "sync"}, binary};
      s.project_settings = settings;
      s.start();
      row r;
      r.build = label;
      r.passivation = passivation;
      r.rss0 = resident_bytes(s.proc->pid());
      auto o = c.o;
      o.port = s.port;
      o.account_key = s.key;
      // The warm-up lasts until every host has registered; the window after it is short.
      o.warmup_seconds = 0;
      o.seconds = 0.5;
      generator g{c.hosts};
      auto t0 = std::chrono::steady_clock::now();
      r.load = g.run(o);
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::this_thread::sleep_for(settle);
      r.rss1 = resident_bytes(s.proc->pid());
      auto m = s.metrics();
      r.in_memory = metric(m, "cobble_hosts_in_memory{project=\"demo\"}");
      r.live = metric(m, "cobble_hosts_live{project=\"demo\"}");
      r.passivated = metric(m, "cobble_hosts_passivated{project=\"demo\"}");
      r.estimate = metric(m, "cobble_host_state_bytes{project=\"demo\"}");
      std::cout << fmt::format(
        "  {} RPCs in {:.1f} s; resident {:.0f} MB before, {:.0f} MB {:.0f} s after; "
        "/metrics: {:.0f} hosts in memory ({:.0f} live, {:.0f} passivated), {:.0f} MB "
        "estimated\n",
        r.load.all_rpcs, r.seconds, static_cast<double>(r.rss0) / 1e6,
        static_cast<double>(r.rss1) / 1e6, settle.count(), r.in_memory, r.live, r.passivated,
        r.estimate / 1e6);
      auto code = s.stop();
      if (code != 0)
        std::cout << "  warning: cobbled exited with " << code << "\n";
      fs::remove_all(dir);
      rows.push_back(r);
    }
  }
  std::string md = fmt::format(
    "{} distinct simulated hosts each register with one scheduler RPC (durability sync, no "
    "work queued, so no host holds a job), on {} connections. Resident memory of cobbled "
    "before and {:.0f} s after the load; the project sweeps every second, and with "
    "passivation on every host is then idle past `passivate_hosts_after` and passivated; "
    "the estimate is `cobble_host_state_bytes` from /metrics.\n\n",
    c.hosts, c.o.connections, settle.count());
  md += "| cobbled | passivation | hosts in memory (live / passivated) | RPCs | seconds | "
        "resident before MB | resident after MB | per host bytes | /metrics estimate MB "
        "|\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    // Every host registered during the warm-up; the old builds have no host gauge.
    auto per_host = (static_cast<double>(r.rss1) - static_cast<double>(r.rss0))
                    / static_cast<double>(c.hosts);
    auto held = r.in_memory <= 0            ? std::string{"not shown"}
                : r.live + r.passivated > 0 ? fmt::format("{} ({} / {})", grouped(r.in_memory),
                                                          grouped(r.live), grouped(r.passivated))
                                            : grouped(r.in_memory);
    md += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.0f} | {:.0f} | {:.0f} | {} |\n", r.build,
                      r.passivation, held, grouped(static_cast<double>(r.load.all_rpcs)), r.seconds,
                      static_cast<double>(r.rss0) / 1e6, static_cast<double>(r.rss1) / 1e6,
                      per_host,
                      r.estimate > 0 ? fmt::format("{:.0f}", r.estimate / 1e6) : "not shown");
  }
  md += "\n";
  emit(c.report, md);
  return 0;
}

// -- crash: kill -9 under load ----------------------------------------------------------

struct crash_cli {
  binaries bin;
  load_options o;
  std::size_t hosts = 2000;
  int runs = 20;
  std::uint64_t workunits = 200000;
  double min_seconds = 0.5, max_seconds = 4;
  std::string durability = "sync";
  std::string work_dir = "bench-data";
  std::string report;
  unsigned seed = 0;
};

int cmd_crash(crash_cli& c) {
  auto dir = fs::path{c.work_dir} / "crash";
  fs::remove_all(dir);
  server s{dir, {"--durability", c.durability}, c.bin.cobbled};
  s.start();
  create_work(s, c.workunits, c.o.job_seconds);
  std::mt19937 rng{c.seed != 0 ? c.seed : std::random_device{}()};
  std::uniform_real_distribution<double> pause{c.min_seconds, c.max_seconds};
  generator g{c.hosts};
  int failed_runs = 0, verify_failures = 0, recovered_mismatch = 0;
  check_result last;
  std::uint64_t total_rpcs = 0;
  std::string md_runs;
  for (int round = 1; round <= c.runs; ++round) {
    auto o = c.o;
    o.port = s.port;
    o.account_key = s.key;
    o.seconds = 0;
    o.warmup_seconds = 0;
    o.end_on_error = true;
    std::atomic<bool> stop{false};
    o.stop = &stop;
    load_result lr;
    std::thread load{[&] { lr = g.run(o); }};
    auto wait = pause(rng);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    s.kill9();
    load.join();
    total_rpcs += lr.all_rpcs;
    // Offline: the log as the restart will find it.
    log_facts facts;
    {
      cobble::storage::store_options so;
      so.read_only = true;
      auto st = cobble::storage::event_store::open(dir / "log", so);
      if (!st)
        throw std::runtime_error("cannot open the log: " + caf::to_string(st.error()));
      facts = collect(**st);
    }
    last = check(g.acknowledged(), facts);
    auto [vcode, vout] = run_command({c.bin.cobble, "log", "verify", "--data-dir", dir.string()},
                                     600s);
    s.start();
    // The restarted server recovered exactly what the log holds.
    auto counters = s.project()["counters"];
    std::uint64_t log_reports = 0;
    for (const auto& [ref, hosts] : facts.reports)
      log_reports += hosts.size();
    bool same = counters["results_dispatched"].get<std::uint64_t>() == last.log_dispatches
                && counters["results_reported"].get<std::uint64_t>() == log_reports;
    recovered_mismatch += same ? 0 : 1;
    verify_failures += vcode == 0 ? 0 : 1;
    failed_runs += last.ok() ? 0 : 1;
    auto line = fmt::format(
      "| {} | {:.2f} | {} | {} | {}/{} | {}/{} | {}/{} | {} | {} | {} | {} |\n", round, wait,
      lr.all_rpcs, last.events, last.hosts_checked - last.hosts_missing, last.hosts_checked,
      last.dispatches_checked - last.dispatches_missing, last.dispatches_checked,
      last.reports_checked - last.reports_missing, last.reports_checked, last.double_dispatches,
      last.repeated_dispatches, vcode == 0 ? "passes" : "FAILS", same ? "yes" : "NO");
    std::cout << line << std::flush;
    for (const auto& p : last.problems)
      std::cout << "    " << p << "\n";
    if (vcode != 0)
      std::cout << "    cobble log verify: " << vout;
    md_runs += line;
  }
  // Let the last run's server finish cleanly, then verify once more against its snapshot.
  auto code = s.stop();
  auto [vcode, vout] = run_command({c.bin.cobble, "log", "verify", "--data-dir", dir.string()},
                                   600s);
  verify_failures += vcode == 0 ? 0 : 1;
  std::string md = fmt::format(
    "{} kill -9 of cobbled (durability {}) under load from {} hosts on {} connections, each "
    "after a random {:.1f}–{:.1f} s; {} RPCs answered in all. After each kill: the log is read "
    "offline and every change acknowledged so far (cumulative) is looked up in it, `cobble log "
    "verify` runs, cobbled restarts and its counters (via the admin API) must equal the "
    "log's.\n\n",
    c.runs, c.durability, c.hosts, c.o.connections, c.min_seconds, c.max_seconds, total_rpcs);
  md += "| run | killed after s | RPCs answered | events in log | hosts found | dispatches "
        "found | reports found | double dispatches in log | job in two replies | log verify | "
        "restart matches log |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  md += md_runs;
  md += fmt::format(
    "\nResult: {} acknowledged changes lost, {} double dispatches, {} failed verifications, {} "
    "restarts that did not match the log (clean stop at the end: exit {}, final verify {}). "
    "Target (zero lost, zero double): {}.\n\n",
    last.hosts_missing + last.dispatches_missing + last.reports_missing,
    last.double_dispatches + last.repeated_dispatches, verify_failures, recovered_mismatch, code,
    vcode == 0 ? "passes" : "FAILS",
    verdict(failed_runs == 0 && verify_failures == 0 && recovered_mismatch == 0, "see the table"));
  emit(c.report, md);
  if (!c.report.empty())
    fs::remove_all(dir);
  return failed_runs == 0 && verify_failures == 0 && recovered_mismatch == 0 ? 0 : 1;
}

// -- populate and scale -----------------------------------------------------------------

struct scale_cli {
  binaries bin;
  populate_options p;
  std::string report;
  bool keep = false;
  bool full_targets = false;
};

populate_result do_populate(const populate_options& p) {
  std::cout << "populating " << p.data_dir << " with " << p.hosts << " hosts and " << p.jobs
            << " queued jobs..." << std::endl;
  std::uint64_t next_note = 1'000'000;
  auto r = populate(p, [&](const populate_result& pr) {
    if (pr.events >= next_note) {
      std::cout << "  " << pr.events << " events" << std::endl;
      next_note += 1'000'000;
    }
  });
  std::cout << fmt::format("  {} events ({} hosts, {} workunits, {} jobs) in {:.1f} s ({:.0f} "
                           "events/s), log {:.0f} MB\n",
                           r.events, r.hosts, r.workunits, r.jobs, r.seconds, r.events / r.seconds,
                           r.log_bytes / 1e6);
  return r;
}

int cmd_populate(populate_options& p) {
  do_populate(p);
  return 0;
}

int cmd_scale(scale_cli& c) {
  fs::remove_all(c.p.data_dir);
  auto pr = do_populate(c.p);
  server s{c.p.data_dir, {}, c.bin.cobbled};
  struct start_figures {
    double recovery = 0, start = 0;
    std::uint64_t rss = 0;
  };
  auto measure = [&](const char* what) {
    s.start();
    start_figures f{s.recovery_reported, s.start_seconds, 0};
    // Resident memory once started, after a moment for the snapshotter's copy to settle.
    std::this_thread::sleep_for(2s);
    f.rss = resident_bytes(s.proc->pid());
    std::cout << fmt::format("  start {}: recovery {:.2f} s, listening after {:.2f} s, resident "
                             "{:.0f} MB\n",
                             what, f.recovery, f.start, f.rss / 1e6)
              << std::flush;
    return f;
  };
  auto cold = measure("without a snapshot");
  auto t0 = std::chrono::steady_clock::now();
  auto code = s.stop(); // writes the final snapshot
  auto stop_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (code != 0)
    throw std::runtime_error("cobbled did not stop cleanly: exit " + std::to_string(code));
  auto warm = measure("with a recent snapshot");
  s.stop();
  std::uint64_t snapshot_bytes = 0;
  {
    cobble::storage::store_options so;
    so.read_only = true;
    auto st = cobble::storage::event_store::open(c.p.data_dir / "log", so);
    if (st) {
      auto snaps = (*st)->snapshots();
      if (!snaps.empty())
        snapshot_bytes = snaps.back().bytes;
    }
  }
  std::cout << "  cobble log replay..." << std::endl;
  auto [rcode, rout] = run_command({c.bin.cobble, "log", "replay", "--data-dir",
                                    c.p.data_dir.string()},
                                   3600s);
  double replay_events = 0, replay_secs = 0;
  // Its summary line on stderr: "replayed N events in S s (R events/s)".
  std::smatch m;
  if (std::regex_search(rout, m, std::regex{R"(replayed (\d+) events in ([0-9.e+-]+) s)"})) {
    replay_events = std::stod(m[1]);
    replay_secs = std::stod(m[2]);
  }
  if (rcode != 0 || replay_secs <= 0)
    throw std::runtime_error("cobble log replay failed:\n" + rout);
  auto rate = replay_events / replay_secs;
  std::cout << fmt::format("  replay: {:.0f} events in {:.2f} s ({:.0f} events/s)\n", replay_events,
                           replay_secs, rate);
  double scale_hosts = 1e6 / std::max<double>(1, pr.hosts);
  double scale_jobs = 1e7 / std::max<double>(1, pr.jobs);
  bool full = pr.hosts >= 1'000'000 && pr.jobs >= 10'000'000;
  std::string md = fmt::format(
    "Data directory generated through the event path (`cobble-bench populate`): {} hosts, {} "
    "workunits with {} queued jobs (results) in all, {} events, log {:.0f} MB on disk; generated "
    "in {:.1f} s ({} events/s).\n\n",
    grouped(pr.hosts), grouped(pr.workunits), grouped(pr.jobs), grouped(pr.events),
    pr.log_bytes / 1e6, pr.seconds, grouped(pr.events / pr.seconds));
  md += "| figure | value |\n|---|---|\n";
  md += fmt::format("| recovery without a snapshot (all {} events) | {:.2f} s (listening after "
                    "{:.2f} s) |\n",
                    grouped(pr.events), cold.recovery, cold.start);
  md += fmt::format("| recovery with a recent snapshot ({:.0f} MB) | {:.2f} s (listening after "
                    "{:.2f} s) |\n",
                    snapshot_bytes / 1e6, warm.recovery, warm.start);
  md += fmt::format("| clean stop, writing the final snapshot | {:.2f} s |\n", stop_secs);
  md += fmt::format("| resident memory after start (without / with snapshot) | {:.0f} MB / "
                    "{:.0f} MB |\n",
                    cold.rss / 1e6, warm.rss / 1e6);
  md += fmt::format("| `cobble log replay` | {} events/s ({} events in {:.2f} s) |\n\n",
                    grouped(rate), grouped(replay_events), replay_secs);
  auto rss = std::max(cold.rss, warm.rss);
  md += fmt::format("Targets: replay ≥ 1,000,000 events/s: {}.\n",
                    verdict(rate >= 1e6, fmt::format("{:.0f} % of the target", rate / 1e4)));
  if (full) {
    md += fmt::format("Recovery of this directory < 10 s with a recent snapshot: {}. Resident < "
                      "4 GB: {}.\n\n",
                      verdict(warm.recovery < 10, fmt::format("{:.1f} s", warm.recovery)),
                      verdict(rss < 4e9, fmt::format("{:.1f} GB", rss / 1e9)));
  } else {
    // Both grow linearly with the data; the full size is 1M hosts and 10M jobs.
    auto est_rec = warm.recovery * std::max(scale_hosts, scale_jobs);
    auto est_rss = static_cast<double>(rss) * std::max(scale_hosts, scale_jobs);
    md += fmt::format("This is not the full size (1,000,000 hosts, 10,000,000 jobs). Scaled "
                      "linearly by ×{:.0f}, the full size would take about {:.1f} s to recover "
                      "with a snapshot (target < 10 s: {}) and about {:.1f} GB resident "
                      "(target < 4 GB: {}); an estimate, not a measurement.\n\n",
                      std::max(scale_hosts, scale_jobs), est_rec,
                      est_rec < 10 ? "would be met" : "would be missed", est_rss / 1e9,
                      est_rss < 4e9 ? "would be met" : "would be missed");
  }
  emit(c.report, md);
  if (!c.keep)
    fs::remove_all(c.p.data_dir);
  return 0;
}

int program_main(int argc, char** argv) {
  cobble::heap::use_huge_pages();
  CLI::App app{"cobble-bench: benchmarks of cobbled (docs/benchmarks.md).\n\n"
               "  load / healthz   load a running cobbled (you give --port and --key)\n"
               "  throughput       start cobbled per durability mode, measure /healthz (the\n"
               "                   ceiling) and scheduler RPCs\n"
               "  cost             cobbled's CPU per RPC at 2, 8 and 64 connections\n"
               "  hosts            resident memory after N distinct hosts called once\n"
               "  crash            kill -9 cobbled under load N times; check every acknowledged\n"
               "                   change is in the log and nothing was dispatched twice\n"
               "  hostile          honest load alone, then alongside hostile clients\n"
               "  site             what the site's pages cost the project actor (in-process)\n"
               "  site-load        the site's pages through HTTP, alone and beside scheduler\n"
               "                   RPCs\n"
               "  populate         generate a data directory with hosts and queued jobs\n"
               "  scale            populate, then measure recovery, memory and replay\n\n"
               "Each of throughput, cost and hosts can measure a second cobbled first\n"
               "(--baseline-cobbled) for a before/after in one run. tools/bench/run runs them\n"
               "all with crash and scale and writes BENCHMARKS.md."};
  app.require_subcommand(1);
  std::signal(SIGPIPE, SIG_IGN);

  load_cli lc;
  auto load = app.add_subcommand("load", "Scheduler RPCs against a running cobbled");
  load->add_option("--port", lc.o.port, "cobbled's port on 127.0.0.1")->required();
  load->add_option("--key", lc.o.account_key, "Account key of the demo user")->required();
  load->add_option("--project", lc.o.project, "Project name")->capture_default_str();
  add_load_options(load, lc.o, lc.hosts);
  load_cli hc;
  auto healthz = app.add_subcommand("healthz", "GET /healthz against a running cobbled");
  healthz->add_option("--port", hc.o.port, "cobbled's port on 127.0.0.1")->required();
  add_load_options(healthz, hc.o, hc.hosts);

  throughput_cli tc;
  auto tp = app.add_subcommand("throughput", "The ceiling and scheduler throughput per durability");
  add_binary_options(tp, tc.bin);
  add_baseline_options(tp, tc.bin);
  add_load_options(tp, tc.o, tc.hosts);
  tp->add_option("--workunits", tc.workunits, "Workunits to queue first (2 jobs each)")
    ->capture_default_str();
  tp->add_option("--durability", tc.modes, "Modes to measure")->capture_default_str();
  tp->add_option("--actor-scheduler", tc.scheduler,
                 "cobbled's --actor-scheduler (sharing or stealing; default: cobbled's)")
    ->check(CLI::IsMember({"sharing", "stealing"}));
  tp->add_option("--config", tc.config,
                 "cobbled's --config (e.g. from cobbled --print-config, edited); it must serve "
                 "a project named demo with a user named demo")
    ->check(CLI::ExistingFile);
  tp->add_option("--work-dir", tc.work_dir, "Where data directories are made")
    ->capture_default_str();
  tp->add_option("--report", tc.report, "Append the Markdown section to this file");

  cost_cli kc;
  auto cost = app.add_subcommand(
    "cost", "cobbled's CPU per scheduler RPC at a few connection counts (sync durability)");
  add_binary_options(cost, kc.bin);
  add_baseline_options(cost, kc.bin);
  add_load_options(cost, kc.o, kc.hosts);
  cost->add_option("--at", kc.connections, "Connection counts to measure")->capture_default_str();
  cost->add_option("--workunits", kc.workunits, "Workunits to queue first (2 jobs each)")
    ->capture_default_str();
  cost->add_option("--work-dir", kc.work_dir, "Where data directories are made")
    ->capture_default_str();
  cost->add_option("--report", kc.report, "Append the Markdown section to this file");

  hosts_cli hoc;
  auto hosts = app.add_subcommand(
    "hosts", "Resident memory after many distinct hosts have each called once");
  add_binary_options(hosts, hoc.bin);
  add_baseline_options(hosts, hoc.bin);
  hosts->add_option("--hosts", hoc.hosts, "Distinct hosts")->capture_default_str();
  hosts
    ->add_option("--passivate-after", hoc.passivate_after,
                 "Seconds of passivate_hosts_after in the run with passivation on (a build "
                 "with passivation is measured with it off, then on)")
    ->capture_default_str()
    ->check(CLI::PositiveNumber);
  hosts->add_option("--connections", hoc.o.connections, "Keep-alive connections")
    ->capture_default_str();
  hosts->add_option("--work-dir", hoc.work_dir, "Where the data directory is made")
    ->capture_default_str();
  hosts->add_option("--report", hoc.report, "Append the Markdown section to this file");

  crash_cli cc;
  cc.o.connections = 32;
  auto crash = app.add_subcommand("crash", "kill -9 under load, restart, check");
  add_binary_options(crash, cc.bin);
  add_load_options(crash, cc.o, cc.hosts);
  crash->add_option("--runs", cc.runs, "Number of kills")->capture_default_str();
  crash->add_option("--workunits", cc.workunits, "Workunits to queue first")->capture_default_str();
  crash->add_option("--min-seconds", cc.min_seconds, "Shortest load before a kill")
    ->capture_default_str();
  crash->add_option("--max-seconds", cc.max_seconds, "Longest load before a kill")
    ->capture_default_str();
  crash->add_option("--durability", cc.durability, "sync or async")->capture_default_str();
  crash->add_option("--seed", cc.seed, "Random seed of the kill times (0: random)");
  crash->add_option("--work-dir", cc.work_dir, "Where the data directory is made")
    ->capture_default_str();
  crash->add_option("--report", cc.report, "Append the Markdown section to this file");

  hostile_cli xc;
  auto hostile = app.add_subcommand(
    "hostile", "Honest scheduler load alone, then alongside the attackers of docs/security.md");
  add_binary_options(hostile, xc.bin);
  add_load_options(hostile, xc.o, xc.hosts);
  hostile->add_option("--workunits", xc.workunits, "Workunits to queue first (2 jobs each)")
    ->capture_default_str();
  hostile->add_option("--pause-ms", xc.a.pause_ms, "Pause between two requests of an attacker")
    ->capture_default_str();
  hostile->add_option("--idle", xc.a.idle_connections, "Connections the slow-loris holds")
    ->capture_default_str();
  hostile->add_option("--work-dir", xc.work_dir, "Where the data directory is made")
    ->capture_default_str();
  hostile->add_option("--report", xc.report, "Append the Markdown section to this file");

  site_load_cli slc;
  auto site_load = app.add_subcommand(
    "site-load", "The site's pages through HTTP, alone and beside scheduler RPCs");
  add_binary_options(site_load, slc.bin);
  add_load_options(site_load, slc.o, slc.hosts);
  site_load->add_option("--workunits", slc.workunits, "Workunits to queue first (2 jobs each)")
    ->capture_default_str();
  site_load
    ->add_option("--site-connections", slc.site_connections,
                 "Keep-alive connections asking for pages")
    ->capture_default_str()
    ->check(CLI::Range(1, 1000));
  site_load
    ->add_option("--site-rate", slc.site_rate,
                 "Pages per second while the scheduler is loaded (phase C)")
    ->capture_default_str()
    ->check(CLI::PositiveNumber);
  site_load->add_option("--work-dir", slc.work_dir, "Where the data directory is made")
    ->capture_default_str();
  site_load->add_option("--report", slc.report, "Append the Markdown section to this file");

  site_options so;
  auto site = app.add_subcommand(
    "site", "What the site's top lists, account and status pages cost the project actor");
  site->add_option("--users", so.users, "Accounts")->capture_default_str();
  site->add_option("--hosts", so.hosts, "Hosts")->capture_default_str();
  site->add_option("--teams", so.teams, "Teams")->capture_default_str();
  site->add_option("--workunits", so.workunits, "Workunits (2 results each)")->capture_default_str();
  site->add_option("--repeat", so.repeat, "Timings per figure (the median is shown)")
    ->capture_default_str()
    ->check(CLI::Range(1, 1000));

  populate_options po;
  auto pop = app.add_subcommand("populate", "Generate a data directory with hosts and jobs");
  pop->add_option("--data-dir", po.data_dir, "A new data directory")->required();
  pop->add_option("--hosts", po.hosts, "Registered hosts")->capture_default_str();
  pop->add_option("--jobs", po.jobs, "Queued jobs (results; 2 per workunit)")->capture_default_str();
  pop->add_option("--batch", po.batch, "Events per append")->capture_default_str();

  scale_cli sc;
  sc.p.data_dir = "bench-data/scale";
  auto scale = app.add_subcommand("scale", "Populate, then recovery time, memory, replay speed");
  add_binary_options(scale, sc.bin);
  scale->add_option("--data-dir", sc.p.data_dir, "Data directory (made afresh)")
    ->capture_default_str();
  scale->add_option("--hosts", sc.p.hosts, "Registered hosts")->capture_default_str();
  scale->add_option("--jobs", sc.p.jobs, "Queued jobs (results; 2 per workunit)")
    ->capture_default_str();
  scale->add_option("--batch", sc.p.batch, "Events per append")->capture_default_str();
  scale->add_flag("--keep", sc.keep, "Keep the data directory");
  scale->add_option("--report", sc.report, "Append the Markdown section to this file");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*load)
      return cmd_load(lc, false);
    if (*healthz)
      return cmd_load(hc, true);
    if (*tp)
      return cmd_throughput(tc);
    if (*cost)
      return cmd_cost(kc);
    if (*hosts)
      return cmd_hosts(hoc);
    if (*crash)
      return cmd_crash(cc);
    if (*hostile)
      return cmd_hostile(xc);
    if (*pop)
      return cmd_populate(po);
    if (*site_load)
      return cmd_site_load(slc);
    if (*site) {
      run_site_bench(so, std::cout);
      return 0;
    }
    if (*scale)
      return cmd_scale(sc);
  } catch (const std::exception& e) {
    std::cerr << "cobble-bench: " << e.what() << '\n';
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return program_main(argc, argv);
  } catch (const std::exception& e) {
    // Nothing is expected to escape; if something does, say what instead of aborting.
    std::cerr << "cobble-bench: internal error: " << e.what() << '\n';
    return 70;
  }
}
