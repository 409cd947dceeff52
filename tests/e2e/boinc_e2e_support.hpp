#pragma once

// Shared by the end-to-end tests with real BOINC clients (boinc_e2e_test.cpp,
// autoflops_e2e_test.cpp): a real cobbled on 127.0.0.1 port 0 in a temporary directory, and
// real BOINC 7.20.5 clients (/usr/bin/boinc, anonymous platform with tools/testapp) in data
// dirs of their own, set up as docs/real-clients.md says.
//
// COBBLE_BOINC_CLIENT=/path/to/boinc overrides the client (boinccmd is taken from the same
// directory); COBBLE_E2E_KEEP=1 keeps the temporary directory (server data, client data dirs
// with their logs in boinc.log) for a post-mortem; COBBLE_E2E_BUDGET=SECONDS changes a test's
// time limit.

#include "../support/http_client.hpp"
#include "../support/process.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace cobble::e2e {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using cobble::test::child_process;
using cobble::test::http_client;
using json = nlohmann::json;
using steady = std::chrono::steady_clock;

/// The project every e2e configuration declares.
inline const std::string project = "demo";

/// A test's time limit: COBBLE_E2E_BUDGET seconds if set, else `fallback`.
inline std::chrono::seconds test_budget(std::chrono::seconds fallback) {
  if (const char* env = std::getenv("COBBLE_E2E_BUDGET"); env && *env)
    return std::chrono::seconds{std::atoi(env)};
  return fallback;
}

// -- small helpers -----------------------------------------------------------------------

inline std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out{p, std::ios::binary | std::ios::trunc};
  out << text;
  out.close();
  REQUIRE(out.good());
}

inline std::string md5_hex(const std::string& data) {
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

inline std::string tail(const std::vector<std::string>& lines, std::size_t n) {
  std::string out;
  auto from = lines.size() > n ? lines.size() - n : 0;
  if (from > 0)
    out += "[... " + std::to_string(from) + " earlier lines ...]\n";
  for (auto i = from; i < lines.size(); ++i)
    out += lines[i] + "\n";
  return out;
}

/// A free TCP port on 127.0.0.1: bound to port 0, read back and released.
inline unsigned short free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
            && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  REQUIRE(ok);
  return ntohs(addr.sin_port);
}

/// The client's project directory name for a master URL (protocol reference, section 7):
/// drop the scheme, every character but [A-Za-z0-9._-] becomes '_', drop one trailing '_'.
inline std::string project_dir_name(const std::string& master_url) {
  auto rest = master_url.substr(master_url.find("://") + 3);
  for (auto& c : rest)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      c = '_';
  if (!rest.empty() && rest.back() == '_')
    rest.pop_back();
  return rest;
}

inline std::string boinc_binary() {
  if (const char* env = std::getenv("COBBLE_BOINC_CLIENT"); env && *env)
    return env;
  return "/usr/bin/boinc";
}

/// boinccmd (the client's GUI RPC command line tool) next to the client binary.
inline std::string boinccmd_binary() {
  return (fs::path{boinc_binary()}.parent_path() / "boinccmd").string();
}

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("cobble-e2e-" + std::to_string(rd() % 1000000000));
    fs::create_directories(path);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    if (const char* keep = std::getenv("COBBLE_E2E_KEEP"); keep && *keep) {
      std::fprintf(stderr, "kept %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// The md5 of the out.txt that tools/testapp writes for a command line (and an in.txt, if
/// given): the app run here, in a fresh scratch directory.
inline std::string testapp_md5(const fs::path& scratch, const std::string& command_line,
                               const std::optional<std::string>& input) {
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  if (input)
    write_file(scratch / "in.txt", *input);
  std::vector<std::string> argv{cobble::test::program("tools/testapp/testapp")};
  std::istringstream words{command_line};
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

// -- the server --------------------------------------------------------------------------

/// A configuration with the demo project (quick RPC turnaround) and one app, testapp, with the
/// version of docs/real-clients.md's app_info.xml; `app_settings` are more keys of the app,
/// one per line, indented by eight spaces (replication, delay_bound, autoflops, ...).
inline std::string server_config(const std::string& long_name, const std::string& app_settings) {
  return R"(server:
  listen: 127.0.0.1:0
projects:
  - name: demo
    long_name: )"
         + long_name + R"(
    request_delay: 1s
    next_rpc_delay: 3s
    deadline_check_interval: 10s
    users:
      - {name: demo, email: demo@example.org}
    apps:
      - name: testapp
        user_friendly_name: Cobble test app
        validator: bitwise
        max_jobs_per_rpc: 10
        rsc_fpops_est: 1e9
        rsc_fpops_bound: 1e12
        max_output_nbytes: 1MiB
        output_names: [out.txt]
)" + app_settings
         + R"(        versions:
          - {platform: x86_64-pc-linux-gnu, version_num: 100}
)";
}

/// Stops the test when the BOINC client is not installed, saying where it was looked for.
inline void require_boinc_client() {
  const auto boinc = boinc_binary();
  INFO("the BOINC client " << boinc << " is required (Debian package boinc-client)");
  REQUIRE(fs::exists(boinc));
}

/// A real cobbled started with a configuration file on 127.0.0.1 port 0.
struct server {
  fs::path data;
  std::unique_ptr<child_process> proc;
  unsigned short port = 0;       ///< The public listener.
  unsigned short admin_port = 0; ///< The admin API's listener.
  std::string account_key;
  std::string token;

  /// With an empty `config`, the embedded demo: its account key is the one cobbled prints.
  server(const fs::path& config, fs::path dir) : data(std::move(dir)) {
    cobble::test::spawn_options opts;
    opts.die_with_parent = true;
    std::vector<std::string> argv{cobble::test::program("tools/cobbled"),
                                  "--data-dir",
                                  data.string(),
                                  "--port",
                                  "0",
                                  "--admin-port",
                                  "0",
                                  "--log-level",
                                  "warn"};
    if (!config.empty())
      argv.insert(argv.begin() + 1, {"--config", config.string()});
    proc = std::make_unique<child_process>(argv, opts);
    auto listening = proc->wait_for("listening on http://127.0.0.1:", 60s);
    INFO("cobbled output:\n" << tail(proc->lines(), 50));
    REQUIRE(listening);
    port = static_cast<unsigned short>(std::stoi(listening->substr(listening->rfind(':') + 1)));
    if (config.empty()) {
      const std::string printed_key = "account key of user demo: ";
      auto line = proc->wait_for(printed_key, 30s);
      REQUIRE(line);
      account_key = line->substr(line->find(printed_key) + printed_key.size());
    }
    auto admin = proc->wait_for("admin API:", 30s);
    REQUIRE(admin);
    admin_port = cobble::test::admin_port_of(*admin);
    REQUIRE(admin_port != 0);
    std::ifstream in{data / "admin_token"};
    std::getline(in, token);
    REQUIRE(!token.empty());
    // With --config cobbled prints no account key: the admin API lists them.
    auto listed = cobble::test::account_key_of(admin_port, token, project, "demo");
    REQUIRE(!listed.empty());
    if (!config.empty())
      account_key = listed;
    REQUIRE(account_key == listed);
  }

  std::string base() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string master_url() const { return base() + "/" + project + "/"; }

  /// GET on the admin API.
  json get(const std::string& target) const {
    http_client c{"127.0.0.1", admin_port};
    auto r = c.get(target, token);
    INFO("GET " << target << " -> " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }

  /// POSTs a work spec (or batch) to the admin API; the answer, which must be a 201.
  json create_work(const json& spec) const {
    http_client c{"127.0.0.1", admin_port};
    auto r = c.post("/api/projects/" + project + "/workunits", spec.dump(), token,
                    "application/json");
    INFO("create " << spec.dump() << ": " << r.status << " " << r.body);
    REQUIRE(r.status == 201);
    return json::parse(r.body);
  }

  std::vector<std::string> cli(std::vector<std::string> args, const std::string& what) const {
    // No --server: cobble finds the admin API in the data directory's admin_url.
    std::vector<std::string> argv{cobble::test::program("tools/cobble"), "--data-dir",
                                  data.string()};
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

  /// Stops the server (SIGTERM, a clean exit) and checks that `cobble log verify` accepts
  /// its event log.
  void stop_and_verify_log() {
    proc->signal(SIGTERM);
    CHECK(proc->wait(60s).value_or(-1) == 0);
    auto [code, out] = cobble::test::run_command({cobble::test::program("tools/cobble"), "log",
                                                  "verify", "--data-dir", data.string()},
                                                 60s);
    INFO(out);
    CHECK(code == 0);
  }
};

// -- a BOINC client ----------------------------------------------------------------------

/// The app_info.xml of docs/real-clients.md, read from that page so that the page shows what
/// the tests check.
inline std::string app_info_xml() {
  auto doc = read_file(fs::path{COBBLE_SOURCE_DIR} / "docs/real-clients.md");
  auto begin = doc.find("<app_info>");
  auto end = doc.find("</app_info>");
  INFO("docs/real-clients.md must show one <app_info> ... </app_info> block");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  REQUIRE(end > begin);
  return doc.substr(begin, end + std::string{"</app_info>"}.size() - begin) + "\n";
}

/// `allow_multiple_clients`: several clients on one machine (the tests' usual case); a client
/// without it is one a server may take for the same machine attached again (the CPID rule).
inline std::string cc_config_xml(int ncpus, bool allow_multiple_clients = true) {
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
    <allow_multiple_clients>)"
         + std::string(allow_multiple_clients ? "1" : "0") + R"(</allow_multiple_clients>
    <ncpus>)"
         + std::to_string(ncpus) + R"(</ncpus>
  </options>
</cc_config>
)";
}

inline std::string global_prefs_override_xml() {
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

/// How a test runs its clients.
struct client_options {
  /// --exit_when_idle: the client leaves once it has no task (after having had work).
  bool exit_when_idle = true;
  int ncpus = 2;
  /// Anonymous platform: app_info.xml and testapp placed by hand (docs/real-clients.md);
  /// false: the client gets the app from the server, as a volunteer's would.
  bool anonymous = true;
  /// cc_config.xml's allow_multiple_clients (see cc_config_xml).
  bool allow_multiple_clients = true;
};

/// The GUI RPC password every test client gets (gui_rpc_auth.cfg).
inline const std::string gui_rpc_password = "cobble-e2e";

struct boinc_client {
  std::string name;
  fs::path dir;
  client_options options;
  unsigned short rpc_port = 0;
  std::unique_ptr<child_process> proc;
  std::vector<std::string> log; ///< every line of every run
  std::optional<int> exit_code; ///< of the last run, once it ended
  std::vector<int> exit_codes;  ///< of every run that ended
  int starts = 0;

  boinc_client(std::string n, fs::path d, client_options o = {})
    : name(std::move(n)), dir(std::move(d)), options(o) {}
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
    if (options.anonymous) {
      write_file(pdir / "app_info.xml", app_info_xml());
      fs::copy_file(cobble::test::program("tools/testapp/testapp"), pdir / "testapp",
                    fs::copy_options::overwrite_existing);
      fs::permissions(pdir / "testapp",
                      fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec
                        | fs::perms::others_read | fs::perms::others_exec,
                      fs::perm_options::replace);
    }
    write_file(dir / "cc_config.xml", cc_config_xml(options.ncpus, options.allow_multiple_clients));
    write_file(dir / "global_prefs_override.xml", global_prefs_override_xml());
    write_file(dir / "gui_rpc_auth.cfg", gui_rpc_password + "\n");
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
                                  "--sched_retry_delay_min",
                                  "1",
                                  "--sched_retry_delay_max",
                                  "10",
                                  "--pers_retry_delay_min",
                                  "1",
                                  "--pers_retry_delay_max",
                                  "10"};
    if (options.exit_when_idle)
      argv.emplace_back("--exit_when_idle");
    if (starts == 0 && !key.empty()) // an empty key: attached later (boinccmd)
      argv.insert(argv.end(), {"--attach_project", master_url, key});
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

  /// Runs boinccmd against this client's GUI RPC port (127.0.0.1); {exit code, output}.
  std::pair<int, std::string> boinccmd(std::vector<std::string> args) {
    std::vector<std::string> argv{boinccmd_binary(), "--host",
                                  "127.0.0.1:" + std::to_string(rpc_port), "--passwd",
                                  gui_rpc_password};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = cobble::test::run_command(argv, 30s);
    log.push_back("=== test: boinccmd " + json(args).dump() + " -> "
                  + std::to_string(result.first));
    return result;
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

  /// The client's state file (empty before it wrote one).
  std::string state_xml() const { return read_file(dir / "client_state.xml"); }

  /// The host id the server gave this client (client_state.xml), 0 before the first reply.
  std::uint64_t hostid() const {
    auto state = state_xml();
    std::smatch m;
    if (std::regex_search(state, m, std::regex{"<hostid>(\\d+)</hostid>"}))
      return std::stoull(m[1]);
    return 0;
  }

  /// Tasks the client still holds (client_state.xml <result> records).
  std::size_t held_results() const {
    auto state = state_xml();
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
      "unparsed_xml|No app|Invalid|exceeds|exceeded|Aborting|aborted|Message from server|"
      "exiting|Not requesting tasks|Elapsed time limit|retval -|status -|status 1\\b"};
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
    return "---- " + name + " (" + dir.string() + "): notable lines ----\n" + notable() + "---- "
           + name + ": last lines ----\n" + tail(log, n);
  }

private:
  std::size_t collected_ = 0;
};

} // namespace cobble::e2e
