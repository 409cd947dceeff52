#pragma once

// Test support: a real cobbled on its own data directory (127.0.0.1, port 0 and admin port 0),
// scheduler requests in the exact shape a BOINC 7.20.5 client sends (from tests/net/fixtures),
// and a reader of scheduler replies.

#include "http_client.hpp"
#include "process.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <pugixml.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>

namespace cobble::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json = nlohmann::json;

inline std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A configuration file in `dir` for the demo project with account settings `accounts` (a
/// YAML flow mapping) and `more` YAML lines of the project (each indented four spaces).
inline fs::path
demo_config_with(const fs::path& dir, const std::string& accounts, const std::string& more = {}) {
  auto cfg = dir / "cobble.yaml";
  std::ofstream{cfg} << "projects:\n"
                        "  - name: demo\n"
                     << (more.empty() ? "    long_name: Cobble demo project\n" : more)
                     << "    accounts: " << accounts
                     << "\n"
                        "    users: [{name: demo}]\n"
                        "    apps:\n"
                        "      - name: testapp\n"
                        "        versions: [{platform: x86_64-pc-linux-gnu, version_num: 100}]\n";
  return cfg;
}

/// A running cobbled on its own data directory.
struct server {
  fs::path data;
  std::unique_ptr<child_process> proc;
  unsigned short port = 0;       ///< The public listener: BOINC protocol, files, web.
  unsigned short admin_port = 0; ///< The admin API's listener.
  std::string account_key;
  std::string token;

  std::vector<std::string> extra; ///< More arguments for cobbled (e.g. --config FILE).
  /// More environment for cobbled (e.g. ASAN_OPTIONS for a memory measurement).
  std::vector<std::pair<std::string, std::string>> env;

  explicit server(fs::path dir, std::vector<std::string> more = {},
                  std::vector<std::pair<std::string, std::string>> environment = {})
    : data(std::move(dir)), extra(std::move(more)), env(std::move(environment)) {
    start();
  }

  void start() {
    std::vector<std::string> args{cobble::test::program("tools/cobbled"),
                                  "--data-dir",
                                  data.string(),
                                  "--port",
                                  "0",
                                  "--admin-port",
                                  "0"};
    // Warnings only, unless the test asks for more (to wait for a line cobbled logs).
    if (std::find(extra.begin(), extra.end(), "--log-level") == extra.end())
      args.insert(args.end(), {"--log-level", "warn"});
    args.insert(args.end(), extra.begin(), extra.end());
    spawn_options options;
    options.set_env = env;
    proc = std::make_unique<child_process>(std::move(args), options);
    auto listening = proc->wait_for("listening on http://127.0.0.1:", 60s);
    INFO("cobbled output so far: " << join(proc->lines()));
    REQUIRE(listening);
    port = static_cast<unsigned short>(std::stoi(listening->substr(listening->rfind(':') + 1)));
    auto admin = proc->wait_for("admin API:", 30s);
    REQUIRE(admin);
    admin_port = admin_port_of(*admin);
    REQUIRE(admin_port != 0);
    std::ifstream in{data / "admin_token"};
    std::getline(in, token);
    REQUIRE(!token.empty());
    account_key = account_key_of(admin_port, token, "demo", "demo");
    REQUIRE(!account_key.empty());
  }

  void kill9() {
    proc->signal(SIGKILL);
    REQUIRE(proc->wait(30s).value_or(-1) == 128 + SIGKILL);
  }

  int stop() {
    proc->signal(SIGTERM);
    return proc->wait(60s).value_or(-1);
  }

  static std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (auto& l : lines)
      out += l + "\n";
    return out;
  }
};

struct report {
  std::string name;
  int state = 5;
  int exit_status = 0;
  std::string elapsed = "2.035510";
  std::vector<std::pair<std::string, std::string>> files; // name, md5
};

/// A scheduler request in the 7.20.5 fixture's shape with our account, host and results.
inline std::string make_request(const std::string& auth, std::uint64_t hostid, double req_secs,
                                double req_instances, const std::vector<report>& results) {
  static const std::string fixture = read_file(fs::path{COBBLE_SOURCE_DIR}
                                               / "tests/net/fixtures/sched_request_7.20.5.xml");
  auto head = fixture.substr(0, fixture.find("    <result>"));
  auto tail = fixture.substr(fixture.find("<app_versions>"));
  head = std::regex_replace(head, std::regex{"<authenticator>[^<]*</authenticator>"},
                            "<authenticator>" + auth + "</authenticator>");
  head = std::regex_replace(head, std::regex{"<hostid>[^<]*</hostid>"},
                            "<hostid>" + std::to_string(hostid) + "</hostid>");
  head = std::regex_replace(head, std::regex{"<cpu_req_secs>[^<]*</cpu_req_secs>"},
                            "<cpu_req_secs>" + std::to_string(req_secs) + "</cpu_req_secs>");
  head = std::regex_replace(head, std::regex{"<work_req_seconds>[^<]*</work_req_seconds>"},
                            "<work_req_seconds>" + std::to_string(req_secs)
                              + "</work_req_seconds>");
  head = std::regex_replace(head, std::regex{"<cpu_req_instances>[^<]*</cpu_req_instances>"},
                            "<cpu_req_instances>" + std::to_string(req_instances)
                              + "</cpu_req_instances>");
  // Without <other_results> (as clients before 7 sent it): these test clients do not say what
  // they hold, so a job they got and have not reported yet is not taken for lost
  // (project_logic::recover_lost).
  tail = std::regex_replace(tail, std::regex{"<other_results>[\\s\\S]*</other_results>"}, "");
  if (hostid == 0) {
    // A new client: a CPID of its own, or the server would take it for the fixture's host
    // attached again (project_state::host_with_cpid).
    static std::atomic<int> new_clients{0};
    head = std::regex_replace(head, std::regex{"<host_cpid>[^<]*</host_cpid>"},
                              "<host_cpid>http-test-client-" + std::to_string(++new_clients)
                                + "</host_cpid>");
  }
  std::string body;
  for (const auto& r : results) {
    body += "    <result>\n        <name>" + r.name
            + "</name>\n"
              "        <final_cpu_time>0.000000</final_cpu_time>\n"
              "        <final_elapsed_time>"
            + r.elapsed
            + "</final_elapsed_time>\n"
              "        <exit_status>"
            + std::to_string(r.exit_status)
            + "</exit_status>\n"
              "        <state>"
            + std::to_string(r.state)
            + "</state>\n"
              "        <platform>x86_64-pc-linux-gnu</platform>\n"
              "        <version_num>100</version_num>\n"
              "        <app_version_num>100</app_version_num>\n"
              "<stderr_out>\n<core_client_version>7.20.5</core_client_version>\n"
              "<![CDATA[\n<stderr_txt>\ndone\n</stderr_txt>\n]]>\n</stderr_out>\n";
    for (const auto& [name, md5] : r.files) {
      body += "    <file_info>\n        <name>";
      body += name;
      body += "</name>\n        <nbytes>12.000000</nbytes>\n"
              "        <max_nbytes>65536.000000</max_nbytes>\n        <md5_cksum>";
      body += md5;
      body += "</md5_cksum>\n        <upload_url>http://127.0.0.1/demo/upload</upload_url>\n"
              "    </file_info>\n";
    }
    body += "    </result>\n";
  }
  return head + body + tail;
}

/// What the tests read from a scheduler reply.
struct parsed_reply {
  std::optional<std::uint64_t> hostid;
  double request_delay = -1;
  std::vector<std::string> messages;
  std::vector<std::string> acks;
  struct job {
    std::string result, wu, platform, output;
    double deadline = 0;
  };
  std::vector<job> jobs;
  struct file {
    std::string name, download_url, upload_url, md5, signature;
    double nbytes = 0, max_nbytes = 0;
  };
  std::vector<file> files;
  std::vector<std::string> input_refs; ///< file_name of every workunit input
};

inline parsed_reply parse_reply(const std::string& xml) {
  pugi::xml_document doc;
  REQUIRE(doc.load_string(xml.c_str()));
  auto root = doc.child("scheduler_reply");
  REQUIRE(root);
  parsed_reply out;
  if (auto h = root.child("hostid"))
    out.hostid = std::stoull(h.text().get());
  if (auto d = root.child("request_delay"))
    out.request_delay = d.text().as_double();
  for (auto m : root.children("message"))
    out.messages.emplace_back(m.text().get());
  for (auto a : root.children("result_ack"))
    out.acks.emplace_back(a.child("name").text().get());
  for (auto f : root.children("file_info")) {
    std::string sig = f.child("xml_signature").text().get();
    sig.erase(0, sig.find_first_not_of(" \n"));
    sig.erase(sig.find_last_not_of(" \n") + 1);
    out.files.push_back({f.child("name").text().get(), f.child("download_url").text().get(),
                         f.child("upload_url").text().get(), f.child("md5_cksum").text().get(), sig,
                         f.child("nbytes").text().as_double(),
                         f.child("max_nbytes").text().as_double()});
  }
  for (auto w : root.children("workunit"))
    for (auto ref : w.children("file_ref"))
      out.input_refs.emplace_back(ref.child("file_name").text().get());
  for (auto r : root.children("result"))
    out.jobs.push_back({r.child("name").text().get(), r.child("wu_name").text().get(),
                        r.child("platform").text().get(),
                        r.child("file_ref").child("file_name").text().get(),
                        r.child("report_deadline").text().as_double()});
  return out;
}

inline parsed_reply rpc(http_client& c, const std::string& body) {
  auto r = c.post("/demo/cgi", body);
  REQUIRE(r.status == 200);
  return parse_reply(r.body);
}

/// The hex MD5 of bytes.
inline std::string md5_of(const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(bytes.data(), bytes.size(), out, &len, EVP_md5(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

/// An upload request: the header exactly as the 7.20 client writes it, then the raw bytes.
inline std::string
upload_body(const std::string& name, const std::string& signature, long long max, long long nbytes,
            const std::string& md5, long long offset, std::string_view data) {
  // The header exactly as the 7.20 client writes it (file_xfer.cpp), then the raw bytes.
  std::string h = "<data_server_request>\n"
                  "    <core_client_major_version>7</core_client_major_version>\n"
                  "    <core_client_minor_version>20</core_client_minor_version>\n"
                  "    <core_client_release>5</core_client_release>\n"
                  "<file_upload>\n<file_info>\n    <name>"
                  + name
                  + "</name>\n"
                    "    <max_nbytes>"
                  + std::to_string(max)
                  + "</max_nbytes>\n"
                    "<xml_signature>\n"
                  + signature
                  + "\n</xml_signature>\n</file_info>\n"
                    "<nbytes>"
                  + std::to_string(nbytes)
                  + "</nbytes>\n"
                    "<md5_cksum>"
                  + md5
                  + "</md5_cksum>\n"
                    "<offset>"
                  + std::to_string(offset) + "</offset>\n<data>\n";
  return h + std::string{data};
}

/// The <status> of an upload reply.
inline int status_of(const std::string& body) {
  auto a = body.find("<status>");
  REQUIRE(a != std::string::npos);
  return std::stoi(body.substr(a + 8));
}

/// Uploads the whole of output `name` (given in `reply`, with its signature) as the client
/// does before it reports the result; the upload reply's status.
inline int upload(http_client& c, const parsed_reply& reply, const std::string& name,
                  const std::string& content) {
  for (const auto& f : reply.files)
    if (f.name == name) {
      auto r = c.post("/demo/upload",
                      upload_body(f.name, f.signature, static_cast<long long>(f.max_nbytes),
                                  static_cast<long long>(content.size()), md5_of(content), 0,
                                  content));
      INFO(r.body);
      REQUIRE(r.status == 200);
      return status_of(r.body);
    }
  FAIL("no file " << name << " in the reply");
  return -1;
}

inline json admin_get(server& s, const std::string& target) {
  http_client c{"127.0.0.1", s.admin_port};
  auto r = c.get(target, s.token);
  INFO(target << " -> " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  return json::parse(r.body);
}

inline void create_work(server& s, const std::string& name) {
  http_client c{"127.0.0.1", s.admin_port};
  auto r = c.post("/api/projects/demo/workunits", json{{"app", "testapp"}, {"name", name}}.dump(),
                  s.token, "application/json");
  INFO(r.body);
  REQUIRE(r.status == 201);
}

/// Two computers of the account `key` each compute a replica of a new workunit `wu`, upload
/// and report it; the quorum of two validates and both are granted credit. The project needs
/// `one_result_per_user_per_wu: false` so that one volunteer's computers share a workunit.
inline void earn_credit(server& s, const std::string& key, const std::string& wu = "wu_credit") {
  const std::string output = "hello world\n";
  const std::string md5 = "6f5902ac237024bdd0c176cb93063dc4"; // md5 of output
  http_client c{"127.0.0.1", s.port};
  http_client c2{"127.0.0.1", s.port};
  create_work(s, wu);
  auto a = rpc(c, make_request(key, 0, 103680, 2, {}));
  auto b = rpc(c2, make_request(key, 0, 103680, 2, {}));
  REQUIRE(a.jobs.size() == 1);
  REQUIRE(b.jobs.size() == 1);
  REQUIRE(upload(c, a, a.jobs[0].output, output) == 0);
  REQUIRE(upload(c2, b, b.jobs[0].output, output) == 0);
  rpc(c, make_request(key, *a.hostid, 0, 0,
                      {{a.jobs[0].result, 5, 0, "2.0", {{a.jobs[0].output, md5}}}}));
  rpc(c2, make_request(key, *b.hostid, 0, 0,
                       {{b.jobs[0].result, 5, 0, "3.0", {{b.jobs[0].output, md5}}}}));
  auto done = admin_get(s, "/api/projects/demo/workunits/" + wu);
  INFO(done.dump(2));
  REQUIRE(done["state"] == "assimilated");
}

} // namespace cobble::test
