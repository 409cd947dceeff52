// End-to-end: two real BOINC 7.20.5 clients (/usr/bin/boinc, anonymous platform) attach to a
// real cobbled on 127.0.0.1, fetch jobs of tools/testapp, download inputs, run the app, upload
// outputs and report; every workunit reaches a quorum of two and is assimilated, every result
// is acknowledged, both clients leave by themselves (--exit_when_idle), and the event log
// verifies. docs/real-clients.md describes the same client setup for operators.
//
// COBBLE_BOINC_CLIENT=/path/to/boinc overrides the client; COBBLE_E2E_KEEP=1 keeps the temporary
// directory (server data, client data dirs with their logs in boinc.log) for a post-mortem;
// COBBLE_E2E_BUDGET=SECONDS changes the time limit (default 170).

#include "../support/http_client.hpp"
#include "../support/process.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using cobble::test::child_process;
using cobble::test::http_client;
using json = nlohmann::json;
using steady = std::chrono::steady_clock;

namespace {

/// The whole test, setup to `cobble log verify`, must end within this (under CTest's 3 minutes
/// with room for the final checks).
std::chrono::seconds test_budget() {
  if (const char* env = std::getenv("COBBLE_E2E_BUDGET"); env && *env)
    return std::chrono::seconds{std::atoi(env)};
  return 170s;
}
constexpr int workunit_count = 20;
constexpr int max_restarts = 3;
const std::string project = "demo";

// -- small helpers -----------------------------------------------------------------------

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << text;
  out.close();
  REQUIRE(out.good());
}

std::string md5_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  REQUIRE(EVP_Digest(data.data(), data.size(), digest, &len, EVP_md5(), nullptr) == 1);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

std::string tail(const std::vector<std::string>& lines, std::size_t n) {
  std::string out;
  auto from = lines.size() > n ? lines.size() - n : 0;
  if (from > 0)
    out += "[... " + std::to_string(from) + " earlier lines ...]\n";
  for (auto i = from; i < lines.size(); ++i)
    out += lines[i] + "\n";
  return out;
}

/// A free TCP port on 127.0.0.1: bound to port 0, read back and released.
unsigned short free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  REQUIRE(ok);
  return ntohs(addr.sin_port);
}

/// The client's project directory name for a master URL (protocol reference, section 7):
/// drop the scheme, every character but [A-Za-z0-9._-] becomes '_', drop one trailing '_'.
std::string project_dir_name(const std::string& master_url) {
  auto rest = master_url.substr(master_url.find("://") + 3);
  for (auto& c : rest)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      c = '_';
  if (!rest.empty() && rest.back() == '_')
    rest.pop_back();
  return rest;
}

std::string boinc_binary() {
  if (const char* env = std::getenv("COBBLE_BOINC_CLIENT"); env && *env)
    return env;
  return "/usr/bin/boinc";
}

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("cobble-e2e-" + std::to_string(rd() % 1000000000));
    fs::create_directories(path);
  }
  ~temp_dir() {
    if (const char* keep = std::getenv("COBBLE_E2E_KEEP"); keep && *keep) {
      std::fprintf(stderr, "kept %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// -- the server --------------------------------------------------------------------------

/// The configuration the test runs: quick RPC turnaround, one app with a quorum of two.
std::string server_config() {
  return R"(server:
  listen: 127.0.0.1:0
projects:
  - name: demo
    long_name: Cobble end-to-end test
    request_delay: 1s
    next_rpc_delay: 3s
    deadline_check_interval: 10s
    users:
      - {name: demo, email: demo@example.org}
    apps:
      - name: testapp
        user_friendly_name: Cobble test app
        min_quorum: 2
        target_nresults: 2
        validator: bitwise
        delay_bound: 2d
        max_jobs_per_rpc: 10
        rsc_fpops_est: 1e9
        rsc_fpops_bound: 1e12
        max_output_nbytes: 1MiB
        output_names: [out.txt]
        versions:
          - {platform: x86_64-pc-linux-gnu, version_num: 100}
)";
}

struct server {
  fs::path data;
  std::unique_ptr<child_process> proc;
  unsigned short port = 0;
  std::string account_key;
  std::string token;

  server(const fs::path& config, fs::path dir) : data(std::move(dir)) {
    cobble::test::spawn_options opts;
    opts.die_with_parent = true;
    proc = std::make_unique<child_process>(
        std::vector<std::string>{COBBLE_BINARY_DIR "/tools/cobbled", "--config", config.string(),
                                 "--data-dir", data.string(), "--port", "0", "--log-level", "warn"},
        opts);
    auto listening = proc->wait_for("listening on http://127.0.0.1:", 60s);
    INFO("cobbled output:\n" << tail(proc->lines(), 50));
    REQUIRE(listening);
    port = static_cast<unsigned short>(std::stoi(listening->substr(listening->rfind(':') + 1)));
    auto key = proc->wait_for("account key of user demo: ", 30s);
    REQUIRE(key);
    account_key = key->substr(key->rfind(' ') + 1);
    REQUIRE(proc->wait_for("admin API:", 30s));
    std::ifstream in{data / "admin_token"};
    std::getline(in, token);
    REQUIRE(!token.empty());
  }

  std::string base() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string master_url() const { return base() + "/" + project + "/"; }

  json get(const std::string& target) const {
    http_client c{"127.0.0.1", port};
    auto r = c.get(target, token);
    INFO("GET " << target << " -> " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }

  std::vector<std::string> cli(std::vector<std::string> args, const std::string& what) const {
    std::vector<std::string> argv{COBBLE_BINARY_DIR "/tools/cobble", "--server", base(),
                                  "--data-dir", data.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto [code, out] = cobble::test::run_command(argv, 60s);
    INFO(what << ": cobble exited " << code << ":\n" << out);
    REQUIRE(code == 0);
    std::vector<std::string> lines;
    std::istringstream in{out};
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        lines.push_back(line);
    return lines;
  }
};

// -- the jobs ----------------------------------------------------------------------------

/// One workunit the test created and what its output must be.
struct job {
  std::string name;
  std::string command_line;
  std::string input; ///< content of in.txt; empty when created without an input
  bool has_input = false;
  std::string expected_md5; ///< of out.txt, computed by running testapp here
};

/// Input i: 300 + 5000 i bytes of deterministic text (input 99, the shared one: ~500 KB).
std::string input_text(int i) {
  std::string out = "cobble end-to-end input " + std::to_string(i) + "\n";
  std::mt19937_64 gen{static_cast<std::uint64_t>(i) * 7919 + 1};
  std::size_t size = 300 + static_cast<std::size_t>(i) * 5000;
  while (out.size() < size)
    out += std::to_string(gen()) + "\n";
  return out;
}

/// What out.txt must hold: testapp run here, in a scratch dir, on the same input and args.
std::string expected_md5(const fs::path& scratch, const job& j) {
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  if (j.has_input)
    write_file(scratch / "in.txt", j.input);
  std::vector<std::string> argv{COBBLE_BINARY_DIR "/tools/testapp/testapp"};
  std::istringstream words{j.command_line};
  for (std::string w; words >> w;)
    argv.push_back(w);
  cobble::test::spawn_options opts;
  opts.cwd = scratch;
  child_process p{argv, opts};
  while (p.read_line(10s)) {
  }
  REQUIRE(p.wait(30s).value_or(-1) == 0);
  REQUIRE(read_file(scratch / "boinc_finish_called") == "0\n");
  return md5_hex(read_file(scratch / "out.txt"));
}

// -- a BOINC client ----------------------------------------------------------------------

/// The app_info.xml of docs/real-clients.md, read from that page so that the page shows what
/// this test checks.
std::string app_info_xml() {
  auto doc = read_file(fs::path{COBBLE_SOURCE_DIR} / "docs/real-clients.md");
  auto begin = doc.find("<app_info>");
  auto end = doc.find("</app_info>");
  INFO("docs/real-clients.md must show one <app_info> ... </app_info> block");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  REQUIRE(end > begin);
  return doc.substr(begin, end + std::string{"</app_info>"}.size() - begin) + "\n";
}

std::string cc_config_xml() {
  return R"(<cc_config>
  <log_flags>
    <task>1</task>
    <file_xfer>1</file_xfer>
    <file_xfer_debug>1</file_xfer_debug>
    <sched_ops>1</sched_ops>
    <sched_op_debug>1</sched_op_debug>
    <unparsed_xml>1</unparsed_xml>
  </log_flags>
  <options>
    <report_results_immediately>1</report_results_immediately>
    <allow_multiple_clients>1</allow_multiple_clients>
    <ncpus>2</ncpus>
  </options>
</cc_config>
)";
}

std::string global_prefs_override_xml() {
  return R"(<global_preferences>
  <run_on_batteries>1</run_on_batteries>
  <run_if_user_active>1</run_if_user_active>
  <suspend_cpu_usage>0</suspend_cpu_usage>
  <cpu_usage_limit>100</cpu_usage_limit>
  <max_ncpus_pct>100</max_ncpus_pct>
  <work_buf_min_days>0.001</work_buf_min_days>
  <work_buf_additional_days>0</work_buf_additional_days>
</global_preferences>
)";
}

struct boinc_client {
  std::string name;
  fs::path dir;
  unsigned short rpc_port = 0;
  std::unique_ptr<child_process> proc;
  std::vector<std::string> log; ///< every line of every run
  std::optional<int> exit_code; ///< of the last run, once it ended
  std::vector<int> exit_codes;  ///< of every run that ended
  int starts = 0;

  boinc_client(std::string n, fs::path d) : name(std::move(n)), dir(std::move(d)) {}
  boinc_client(const boinc_client&) = delete;
  boinc_client& operator=(const boinc_client&) = delete;

  /// Stops the client (and its apps) and leaves its whole log in <dir>/boinc.log.
  ~boinc_client() {
    collect();
    proc.reset();
    std::ofstream out{dir / "boinc.log"};
    for (const auto& line : log)
      out << line << '\n';
  }

  /// The data dir as docs/real-clients.md says, before the first start.
  void prepare(const std::string& master_url) {
    auto pdir = dir / "projects" / project_dir_name(master_url);
    fs::create_directories(pdir);
    write_file(pdir / "app_info.xml", app_info_xml());
    fs::copy_file(COBBLE_BINARY_DIR "/tools/testapp/testapp", pdir / "testapp",
                  fs::copy_options::overwrite_existing);
    fs::permissions(pdir / "testapp",
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                        fs::perms::others_read | fs::perms::others_exec,
                    fs::perm_options::replace);
    write_file(dir / "cc_config.xml", cc_config_xml());
    write_file(dir / "global_prefs_override.xml", global_prefs_override_xml());
    write_file(dir / "gui_rpc_auth.cfg", "cobble-e2e\n");
  }

  void start(const std::string& master_url, const std::string& key) {
    rpc_port = free_port();
    std::vector<std::string> argv{boinc_binary(),
                                  "--dir",
                                  dir.string(),
                                  "--no_gpus",
                                  "--skip_cpu_benchmarks",
                                  "--no_info_fetch",
                                  "--no_priority_change",
                                  "--gui_rpc_port",
                                  std::to_string(rpc_port),
                                  "--exit_when_idle",
                                  "--sched_retry_delay_min",
                                  "1",
                                  "--sched_retry_delay_max",
                                  "10",
                                  "--pers_retry_delay_min",
                                  "1",
                                  "--pers_retry_delay_max",
                                  "10"};
    if (starts == 0) {
      argv.insert(argv.end(), {"--attach_project", master_url, key});
    }
    cobble::test::spawn_options opts;
    opts.own_process_group = true; // the apps it runs die with it
    opts.die_with_parent = true;
    opts.unset_env = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                      "all_proxy",  "ALL_PROXY",  "no_proxy",    "NO_PROXY"};
    if (proc)
      collect();
    proc = std::make_unique<child_process>(argv, opts);
    exit_code.reset();
    ++starts;
    log.push_back("=== test: started " + name + " (run " + std::to_string(starts) + ")");
  }

  /// Moves the lines of the current run into `log`.
  void collect() {
    if (!proc)
      return;
    proc->drain();
    auto& lines = proc->lines();
    log.insert(log.end(), lines.begin() + static_cast<std::ptrdiff_t>(collected_), lines.end());
    collected_ = lines.size();
  }

  /// Whether the client exited (non-blocking); records the exit code.
  bool exited() {
    if (exit_code)
      return true;
    if (!proc)
      return false;
    exit_code = proc->wait(0ms);
    if (exit_code) {
      exit_codes.push_back(*exit_code);
      collect();
      log.push_back("=== test: " + name + " exited with " + std::to_string(*exit_code));
      proc.reset();
      collected_ = 0;
    }
    return exit_code.has_value();
  }

  /// The host id the server gave this client (client_state.xml), 0 before the first reply.
  std::uint64_t hostid() const {
    auto state = read_file(dir / "client_state.xml");
    std::smatch m;
    if (std::regex_search(state, m, std::regex{"<hostid>(\\d+)</hostid>"}))
      return std::stoull(m[1]);
    return 0;
  }

  /// Tasks the client still holds (client_state.xml <result> records).
  std::size_t held_results() const {
    auto state = read_file(dir / "client_state.xml");
    std::size_t n = 0;
    for (auto pos = state.find("<result>"); pos != std::string::npos;
         pos = state.find("<result>", pos + 1))
      ++n;
    return n;
  }

  /// Task names the log shows as acknowledged by the server.
  std::set<std::string> acked() {
    collect();
    std::set<std::string> out;
    static const std::regex ack{"got ack for task (\\S+)"};
    std::smatch m;
    for (const auto& line : log)
      if (std::regex_search(line, m, ack))
        out.insert(m[1]);
    return out;
  }

  /// The lines that tell what went wrong, each with how often it came (timestamps cut).
  std::string notable() {
    collect();
    static const std::regex interesting{
        "error|Error|fail|Fail|Backing off|deferred|Can't|can't|absent|discarding|"
        "unparsed_xml|No app|Invalid|exceeds|Aborting|aborted|Message from server|"
        "exiting|Not requesting tasks|retval -|status -|status 1\\b"};
    static const std::regex stamp{"^\\S+ \\S+ "};
    static const std::regex digits{"\\d+"};
    std::map<std::string, std::pair<int, std::string>> seen; // shape -> count, first line
    std::vector<std::string> order;
    for (const auto& line : log) {
      if (line.find("log flags:") != std::string::npos || !std::regex_search(line, interesting))
        continue;
      auto text = std::regex_replace(line, stamp, "");
      auto shape = std::regex_replace(text, digits, "N");
      auto [it, fresh] = seen.try_emplace(shape, 0, text);
      if (fresh)
        order.push_back(shape);
      ++it->second.first;
    }
    std::string out;
    for (const auto& shape : order)
      out += "  " + std::to_string(seen[shape].first) + "x  " + seen[shape].second + "\n";
    return out;
  }

  std::string log_tail(std::size_t n) {
    collect();
    return "---- " + name + " (" + dir.string() + "): notable lines ----\n" + notable() + "---- " +
           name + ": last lines ----\n" + tail(log, n);
  }

private:
  std::size_t collected_ = 0;
};

// -- progress ----------------------------------------------------------------------------

struct progress {
  std::size_t workunits = 0, assimilated = 0, failed = 0;
  std::int64_t in_progress = -1, unsent = -1;
  json summary;
  std::string text() const {
    return std::to_string(assimilated) + "/" + std::to_string(workunits) + " assimilated, " +
           std::to_string(failed) + " failed, results in progress " + std::to_string(in_progress) +
           ", unsent " + std::to_string(unsent);
  }
};

progress read_progress(const server& s) {
  progress p;
  p.summary = s.get("/api/projects/" + project);
  p.in_progress = p.summary.value("results_in_progress", std::int64_t{-1});
  p.unsent = 0;
  for (const auto& app : p.summary["apps"])
    p.unsent += app.value("unsent", std::int64_t{0});
  auto list = s.get("/api/projects/" + project + "/workunits?limit=1000");
  for (const auto& w : list["items"]) {
    ++p.workunits;
    if (w["state"] == "assimilated")
      ++p.assimilated;
    if (w["state"] == "failed")
      ++p.failed;
  }
  return p;
}

/// Whether a client that left could still get a job: an unfinished workunit with an unsent
/// result and no result on this client's host.
bool could_get_work(const server& s, std::uint64_t hostid) {
  auto list = s.get("/api/projects/" + project + "/workunits?limit=1000");
  for (const auto& w : list["items"]) {
    if (w["state"] != "active")
      continue;
    auto detail = s.get("/api/projects/" + project + "/workunits/" + w["name"].get<std::string>());
    bool unsent = false, mine = false;
    for (const auto& r : detail["results"]) {
      unsent = unsent || r["state"] == "unsent";
      mine = mine || (r["host"].is_number() && r["host"].get<std::uint64_t>() == hostid);
    }
    if (unsent && !mine)
      return true;
  }
  return false;
}

/// Stages an input file through the admin API (POST /api/projects/P/files, raw bytes); the
/// server's answer {"stored_name", "md5", "nbytes", "existed"}.
json stage_file(const server& s, const std::string& content) {
  http_client c{"127.0.0.1", s.port};
  auto r =
      c.post("/api/projects/" + project + "/files", content, s.token, "application/octet-stream");
  INFO("POST /api/projects/" << project << "/files -> " << r.status << " " << r.body);
  REQUIRE(r.status == 201);
  auto body = json::parse(r.body);
  REQUIRE(body["stored_name"].is_string());
  CHECK(body.value("md5", std::string{}) == md5_hex(content));
  CHECK(body.value("nbytes", 0.0) == static_cast<double>(content.size()));
  return body;
}

} // namespace

TEST_CASE("two real BOINC clients compute every workunit to a quorum of two", "[e2e]") {
  const auto started = steady::now();
  const auto budget = test_budget();
  const auto deadline = started + budget;
  const auto boinc = boinc_binary();
  INFO("the BOINC client " << boinc << " is required (Debian package boinc-client)");
  REQUIRE(fs::exists(boinc));

  temp_dir root;
  write_file(root.path / "cobble.yaml", server_config());
  server s{root.path / "cobble.yaml", root.path / "server"};

  // -- jobs: all of them before any client starts (--exit_when_idle) ---------------------
  std::vector<job> jobs;
  // Half through the CLI, sharing one input file that `work create --input PATH:OPEN_NAME`
  // stages and the app opens as in.txt.
  {
    job j;
    j.command_line = "--iterations 300000 --output-bytes 20000";
    j.has_input = true;
    j.input = input_text(99);
    auto path = root.path / "inputs" / "shared-input.dat";
    write_file(path, j.input);
    for (const auto& name :
         s.cli({"work", "create", "--app", "testapp", "--count", std::to_string(workunit_count / 2),
                "--command-line", j.command_line, "--fpops-est", "1e9", "--fpops-bound", "1e12",
                "--input", path.string() + ":in.txt"},
               "work create"))
      jobs.push_back(job{name, j.command_line, j.input, j.has_input, {}});
  }
  // The other half through the admin API, each with its own staged input (300 B to 45 KB),
  // amount of work and output size (some outputs of 8192 bytes or more, whose upload starts
  // with a size query).
  for (int i = 0; i < workunit_count - workunit_count / 2; ++i) {
    job j;
    j.name = "e2e_api_" + std::to_string(i);
    j.command_line = "--iterations " + std::to_string(100000 + i * 50000);
    if (i % 3 == 0)
      j.command_line += " --output-bytes " + std::to_string(8192 + i * 1000);
    j.has_input = true;
    j.input = input_text(i);
    auto staged = stage_file(s, j.input);
    json spec{{"app", "testapp"},
              {"name", j.name},
              {"command_line", j.command_line},
              {"rsc_fpops_est", 1e9},
              {"rsc_fpops_bound", 1e12},
              {"inputs", json::array({json{{"stored_name", staged["stored_name"]},
                                           {"open_name", "in.txt"},
                                           {"nbytes", j.input.size()},
                                           {"md5", md5_hex(j.input)}}})}};
    http_client c{"127.0.0.1", s.port};
    auto r =
        c.post("/api/projects/" + project + "/workunits", spec.dump(), s.token, "application/json");
    INFO("create " << j.name << ": " << r.status << " " << r.body);
    REQUIRE(r.status == 201);
    jobs.push_back(std::move(j));
  }
  REQUIRE(jobs.size() == static_cast<std::size_t>(workunit_count));
  for (auto& j : jobs)
    j.expected_md5 = expected_md5(root.path / "scratch", j);

  // -- two clients ---------------------------------------------------------------------
  std::vector<std::unique_ptr<boinc_client>> clients;
  for (const char* n : {"client-a", "client-b"}) {
    clients.push_back(std::make_unique<boinc_client>(n, root.path / n));
    clients.back()->prepare(s.master_url());
  }
  for (auto& c : clients)
    c->start(s.master_url(), s.account_key);

  auto diagnostics = [&](const std::string& why) {
    std::string out = why + "\n";
    for (auto& c : clients)
      out += c->log_tail(60);
    s.proc->drain();
    out += "---- cobbled ----\n" + tail(s.proc->lines(), 40);
    return out;
  };

  progress p;
  auto next_check = steady::now();
  bool done = false;
  while (!done) {
    if (steady::now() >= deadline) {
      std::string state;
      try {
        state = read_progress(s).text();
      } catch (...) {
      }
      FAIL(diagnostics("timed out after " + std::to_string(budget.count()) + " s: " + state));
    }
    std::vector<child_process*> pipes{s.proc.get()};
    for (auto& c : clients)
      if (c->proc)
        pipes.push_back(c->proc.get());
    cobble::test::pump_output(pipes, 500ms);
    if (auto code = s.proc->wait(0ms))
      FAIL(diagnostics("cobbled exited with " + std::to_string(*code)));
    for (auto& c : clients)
      c->exited();
    if (steady::now() < next_check)
      continue;
    next_check = steady::now() + 1s;

    p = read_progress(s);
    if (p.failed > 0)
      FAIL(diagnostics("a workunit failed: " + p.text() + "\n" + p.summary.dump(2)));
    bool all_assimilated = p.workunits == jobs.size() && p.assimilated == jobs.size();
    bool all_exited = true, restarted = false;
    for (auto& c : clients) {
      if (!c->exited()) {
        all_exited = false;
        continue;
      }
      // A client that left while it could still get a job is started again (it keeps its
      // host id and project); the server's job selection should make this rare.
      if (!all_assimilated && c->starts <= max_restarts && could_get_work(s, c->hostid())) {
        WARN(c->name << " exited with " << *c->exit_code << " while work was left for it ("
                     << p.text() << "); starting it again");
        c->start(s.master_url(), s.account_key);
        all_exited = false;
        restarted = true;
      }
    }
    done = all_assimilated && p.in_progress == 0 && all_exited;
    if (!done && all_exited && !restarted)
      FAIL(diagnostics("both clients left, and the work is not done: " + p.text()));
  }

  // -- what must hold ------------------------------------------------------------------
  INFO(diagnostics("final state: " + p.text()));
  std::map<std::uint64_t, boinc_client*> by_host;
  for (auto& c : clients) {
    INFO(c->name << " exit codes: " << json(c->exit_codes).dump());
    CHECK(c->exit_codes == std::vector<int>(c->exit_codes.size(), 0));
    CHECK(c->exit_code == 0);
    CHECK(c->held_results() == 0); // nothing left to report or compute
    auto id = c->hostid();
    CHECK(id != 0);
    by_host[id] = c.get();
  }
  CHECK(by_host.size() == clients.size());
  std::map<boinc_client*, std::set<std::string>> sent_to;
  double granted_total = 0;
  std::map<std::uint64_t, double> host_granted;
  for (const auto& j : jobs) {
    auto wu = s.get("/api/projects/" + project + "/workunits/" + j.name);
    std::vector<double> claims, grants;
    INFO(wu.dump(2));
    CHECK(wu["state"] == "assimilated");
    std::set<std::uint64_t> hosts;
    for (const auto& r : wu["results"]) {
      if (r["state"] == "unsent" || r["outcome"] == "didnt_need")
        continue;
      CHECK(r["state"] == "over");
      CHECK(r["outcome"] == "success");
      CHECK(r["validation"] == "valid");
      CHECK(r["exit_status"] == 0);
      CHECK(r["client_state"] == 5);
      REQUIRE(r["host"].is_number());
      auto host = r["host"].get<std::uint64_t>();
      hosts.insert(host);
      if (by_host.count(host))
        sent_to[by_host[host]].insert(r["name"].get<std::string>());
      REQUIRE(r["outputs"].size() == 1);
      CHECK(r["outputs"][0]["md5"] == j.expected_md5);
      // Validated results of real clients get credit. With a peak speed known, PFC = the
      // elapsed time the client reported x peak_flops(J); these clients skip their CPU
      // benchmark (--skip_cpu_benchmarks) and may report none, and then the sanity check
      // gives the default PFC (E(J), or min_avg_pfc(A) x E(J)). Either way, in Cobblestones.
      REQUIRE(r["credit"].is_object());
      const auto& cr = r["credit"];
      bool default_pfc = false;
      for (const auto& f : cr["flags"])
        default_pfc = default_pfc || f == "default_pfc";
      CHECK(cr["pfc"].get<double>() > 0);
      if (cr["peak_flops"].get<double>() > 0 && !default_pfc)
        CHECK(cr["pfc"].get<double>()
              == Approx(r["elapsed"].get<double>() * cr["peak_flops"].get<double>()));
      else
        CHECK(default_pfc);
      CHECK(cr["claimed"].get<double>() > 0);
      CHECK(cr["granted"].get<double>() > 0);
      claims.push_back(cr["claimed"].get<double>());
      grants.push_back(cr["granted"].get<double>());
      granted_total += cr["granted"].get<double>();
      host_granted[host] += cr["granted"].get<double>();
    }
    CHECK(hosts.size() == 2);
    // The quorum's grant is the mean of the two claims (neither replica is on probation:
    // the app does not check), and every replica gets it.
    REQUIRE(claims.size() == 2);
    CHECK(grants[0] == Approx((claims[0] + claims[1]) / 2));
    CHECK(grants[1] == Approx(grants[0]));
    CHECK(wu["granted_credit"].get<double>() == Approx(grants[0]));
  }
  // The hosts and their user have the credit totals the grants add up to.
  for (const auto& [id, c] : by_host) {
    auto host = s.get("/api/projects/" + project + "/hosts/" + std::to_string(id));
    INFO(host.dump(2));
    CHECK(host["credit"]["total_credit"].get<double>() > 0);
    CHECK(host["credit"]["total_credit"].get<double>() == Approx(host_granted[id]));
  }
  auto users = s.get("/api/projects/" + project + "/users");
  double user_total = 0;
  for (const auto& u : users)
    user_total += u["credit"]["total_credit"].get<double>();
  CHECK(user_total > 0);
  CHECK(user_total == Approx(granted_total));
  // Every result a client got shows as acknowledged in its log.
  for (auto& c : clients) {
    auto acked = c->acked();
    for (const auto& r : sent_to[c.get()]) {
      INFO(c->name << ": result " << r);
      CHECK(acked.count(r) == 1);
    }
  }
  // Things the client did not understand in our replies, for the record.
  for (auto& c : clients)
    for (const auto& line : c->log)
      if (line.find("[unparsed_xml]") != std::string::npos)
        WARN(c->name << ": " << line);

  // -- the log verifies after a clean stop ----------------------------------------------
  s.proc->signal(SIGTERM);
  CHECK(s.proc->wait(60s).value_or(-1) == 0);
  auto [code, out] = cobble::test::run_command(
      {COBBLE_BINARY_DIR "/tools/cobble", "log", "verify", "--data-dir", s.data.string()}, 60s);
  INFO(out);
  CHECK(code == 0);
  auto seconds = std::chrono::duration<double>(steady::now() - started).count();
  INFO("took " << seconds << " s");
  CHECK(steady::now() < deadline + 30s);
}
