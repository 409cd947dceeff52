/// `cobble`: the operator's command line (see docs/cli.md).
///
/// Most commands talk to the admin JSON API of a running `cobbled` (docs/admin-api.md) with a
/// blocking Boost.Beast client. The `log` commands work offline on a data directory: they open
/// the event log read-only (a RocksDB secondary instance), so they are safe next to a running
/// server.
///
/// Exit codes: 0 success, 1 failure (server error, corrupt log, mismatch), 2 usage error.

#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/event_text.hpp"
#include "actors/log.hpp"
#include "actors/routing.hpp"
#include "actors/state.hpp"
#include "net/admin_json.hpp"
#include "storage/event_store.hpp"
#include "tools/heap.hpp"
#include "tools/prefault.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;
using namespace cobble;

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

/// A mistake in how the command was called: printed, exit code 2.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The command failed: printed, exit code 1.
struct failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Options every command shares.
struct global_options {
  std::string server = "http://127.0.0.1:8080";
  std::string token;
  std::string data_dir;
  std::string project;
  bool json = false;
  double timeout = 30; ///< Seconds, per HTTP request.
};

// -- HTTP client ----------------------------------------------------------------------

/// The parts of a server URL.
struct server_url {
  std::string host;
  std::string port;
  std::string base; ///< Path prefix without a trailing slash ("" or "/cobble").
  std::string text; ///< As given, for messages.
};

server_url parse_server(const std::string& url) {
  constexpr std::string_view scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    throw usage_error("--server must be an http:// URL, got '" + url + "'");
  server_url out;
  out.text = url;
  auto rest = url.substr(scheme.size());
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  if (slash != std::string::npos)
    out.base = rest.substr(slash);
  while (!out.base.empty() && out.base.back() == '/')
    out.base.pop_back();
  if (authority.empty())
    throw usage_error("--server has no host: '" + url + "'");
  if (authority.front() == '[') { // [::1]:8080
    auto close = authority.find(']');
    if (close == std::string::npos)
      throw usage_error("--server has a malformed IPv6 address: '" + url + "'");
    out.host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    out.port = after.size() > 1 && after[0] == ':' ? after.substr(1) : "80";
  } else if (auto colon = authority.rfind(':'); colon != std::string::npos) {
    out.host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
  } else {
    out.host = authority;
    out.port = "80";
  }
  if (out.port.empty() || !std::all_of(out.port.begin(), out.port.end(), ::isdigit))
    throw usage_error("--server has a bad port: '" + url + "'");
  return out;
}

/// One HTTP answer.
struct http_result {
  unsigned status = 0;
  std::string body;
};

/// Performs one request and waits for the answer, at most `timeout`.
http_result
http_call(const server_url& url, http::verb verb, const std::string& path, const std::string& token,
          const std::string& body, std::chrono::milliseconds timeout) {
  asio::io_context ioc;
  tcp::resolver resolver{ioc};
  beast::tcp_stream stream{ioc};
  beast::error_code ec;
  auto endpoints = resolver.resolve(url.host, url.port, ec);
  if (ec)
    throw failure("cannot resolve " + url.host + ": " + ec.message());
  http::request<http::string_body> req{verb, url.base + path, 11};
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::user_agent, "cobble-cli");
  req.set(http::field::accept, "application/json");
  req.set(http::field::authorization, "Bearer " + token);
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256u << 20);
  beast::error_code result;
  std::string stage = "connect to";
  stream.expires_after(timeout);
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
    if (e) {
      result = e;
      return;
    }
    stage = "send to";
    http::async_write(stream, req, [&](beast::error_code we, std::size_t) {
      if (we) {
        result = we;
        return;
      }
      stage = "read from";
      http::async_read(stream, buffer, parser,
                       [&](beast::error_code re, std::size_t) { result = re; });
    });
  });
  ioc.run();
  if (result == beast::error::timeout)
    throw failure("no answer from " + url.text + " within "
                  + std::to_string(timeout.count() / 1000.0).substr(0, 5) + " s (" + stage
                  + " it)");
  if (result)
    throw failure("cannot " + stage + " " + url.text + ": " + result.message());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return {parser.get().result_int(), parser.get().body()};
}

/// The admin API of one server.
class api_client {
public:
  api_client(server_url url, std::string token, std::chrono::milliseconds timeout)
    : url_(std::move(url)), token_(std::move(token)), timeout_(timeout) {}

  /// GET; the JSON answer, or a failure with the server's error message.
  json get(const std::string& path) const { return call(http::verb::get, path, {}); }

  /// POST with a JSON body.
  json post(const std::string& path, const json& body) const {
    return call(http::verb::post, path, body.dump());
  }

  /// POST with raw bytes (input staging).
  json post_bytes(const std::string& path, const std::string& bytes) const {
    return call(http::verb::post, path, bytes);
  }

private:
  json call(http::verb verb, const std::string& path, const std::string& body) const {
    auto res = http_call(url_, verb, path, token_, body, timeout_);
    json parsed = json::parse(res.body, nullptr, false);
    if (res.status >= 200 && res.status < 300) {
      if (parsed.is_discarded())
        throw failure("the server answered " + path + " with something that is not JSON");
      return parsed;
    }
    std::string message;
    if (!parsed.is_discarded() && parsed.is_object() && parsed.contains("error")
        && parsed["error"].is_string())
      message = parsed["error"].get<std::string>();
    else
      message = res.body.substr(0, 200);
    while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back())))
      message.pop_back();
    auto reason = std::string{http::obsolete_reason(static_cast<http::status>(res.status))};
    throw failure(message + " (HTTP " + std::to_string(res.status) + " " + reason + ")");
  }

  server_url url_;
  std::string token_;
  std::chrono::milliseconds timeout_;
};

/// Escapes a path segment (workunit names are plain, but a user may type anything).
std::string path_escape(const std::string& s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

// -- text output --------------------------------------------------------------------

/// A table printed with aligned columns.
class table {
public:
  explicit table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void print(std::ostream& out, const std::string& indent = "") const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i)
          width.push_back(0);
        width[i] = std::max(width[i], r[i].size());
      }
    for (const auto& r : rows_) {
      std::string line = indent;
      for (std::size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size())
          line += std::string(width[i] - r[i].size() + 2, ' ');
      }
      out << line << '\n';
    }
  }

private:
  std::vector<std::vector<std::string>> rows_;
};

/// A JSON value as short text: strings bare, null as "-", numbers compact.
std::string text(const json& x) {
  if (x.is_null())
    return "-";
  if (x.is_string())
    return x.get<std::string>();
  if (x.is_number_float()) {
    std::ostringstream out;
    out << x.get<double>();
    return out.str();
  }
  if (x.is_boolean())
    return x.get<bool>() ? "yes" : "no";
  return x.dump();
}

/// A member as text ("-" when absent or null).
std::string field(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key))
    return "-";
  return text(obj.at(key));
}

/// Unix seconds as "2024-05-01 12:00:00Z"; "-" for null.
std::string time_text(const json& x) {
  if (!x.is_number())
    return "-";
  auto t = static_cast<std::time_t>(x.get<double>());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string time_field(const json& obj, const char* key) {
  return obj.contains(key) ? time_text(obj.at(key)) : "-";
}

void print_summary(std::ostream& out, const json& s) {
  out << "project " << field(s, "name") << " (" << field(s, "long_name") << ")\n";
  out << "  users " << field(s, "users") << ", hosts " << field(s, "hosts") << ", workunits "
      << field(s, "workunits") << " (" << field(s, "active_workunits") << " active), "
      << "results in progress " << field(s, "results_in_progress") << '\n';
  const auto& c = s.at("counters");
  out << "  counters:";
  for (const auto& [key, value] : c.items())
    out << ' ' << key << '=' << text(value);
  out << '\n';
  table t{{"APP", "VERSIONS", "UNSENT"}};
  for (const auto& a : s.at("apps"))
    t.add({field(a, "name"), field(a, "versions"), field(a, "unsent")});
  t.print(out, "  ");
}

void print_workunit(std::ostream& out, const json& w) {
  out << "workunit " << field(w, "id") << " " << field(w, "name") << " (app " << field(w, "app")
      << ")\n";
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
  if (!w.contains("results"))
    return;
  out << "results:\n";
  table t{{"RESULT", "STATE", "OUTCOME", "VALIDATION", "HOST", "SENT", "DEADLINE", "RECEIVED",
           "ELAPSED", "CPU", "EXIT", "FLAGS", "OUTPUTS"}};
  for (const auto& r : w.at("results")) {
    std::string flags;
    for (const auto& f : r.at("flags"))
      flags += (flags.empty() ? "" : ",") + f.get<std::string>();
    if (r.value("canonical", false))
      flags += (flags.empty() ? "" : ",") + std::string{"canonical"};
    t.add({field(r, "name"), field(r, "state"), field(r, "outcome"), field(r, "validation"),
           field(r, "host"), time_field(r, "sent"), time_field(r, "deadline"),
           time_field(r, "received"), field(r, "elapsed"), field(r, "cpu"), field(r, "exit_status"),
           flags.empty() ? "-" : flags, std::to_string(r.at("outputs").size())});
  }
  t.print(out, "  ");
}

void print_host(std::ostream& out, const json& h) {
  out << "host " << field(h, "id") << " (user " << field(h, "user") << ", registered "
      << time_field(h, "created") << ")\n";
  if (!h.contains("state"))
    return;
  const auto& s = h.at("state");
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

void print_json(const json& x) {
  std::cout << x.dump(2) << '\n';
}

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
  const auto& branches = s.at("dead_branches");
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

/// Who an operator command is recorded as: --by, else the login name.
std::string operator_name(const std::string& by) {
  if (!by.empty())
    return by;
  for (const char* var : {"USER", "LOGNAME"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0')
      return v;
  return "cobble-cli";
}

// -- admin commands -----------------------------------------------------------------

/// Everything an online command needs, resolved lazily from the global options.
class online {
public:
  explicit online(const global_options& g) : g_(g) {}

  const api_client& api() {
    if (!api_) {
      auto url = parse_server(g_.server);
      api_.emplace(url, token(),
                   std::chrono::milliseconds(static_cast<std::int64_t>(g_.timeout * 1000)));
    }
    return *api_;
  }

  /// "/api/projects/<name>", the project from --project or the server's first project.
  std::string project_path() {
    if (project_.empty()) {
      if (!g_.project.empty()) {
        project_ = g_.project;
      } else {
        auto all = api().get("/api/projects");
        if (!all.is_array() || all.empty())
          throw failure("the server has no projects");
        project_ = all[0].at("name").get<std::string>();
      }
    }
    return "/api/projects/" + path_escape(project_);
  }

private:
  std::string token() const {
    if (!g_.token.empty())
      return g_.token;
    if (g_.data_dir.empty())
      throw usage_error("no admin token: give --token, set COBBLE_ADMIN_TOKEN, or give "
                        "--data-dir of the server (its admin_token file)");
    auto path = std::filesystem::path{g_.data_dir} / "admin_token";
    std::ifstream in{path};
    if (!in)
      throw failure("cannot read the admin token from " + path.string());
    std::string t;
    std::getline(in, t);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())))
      t.pop_back();
    if (t.empty())
      throw failure(path.string() + " is empty");
    return t;
  }

  const global_options& g_;
  std::optional<api_client> api_;
  std::string project_;
};

// -- offline log commands ---------------------------------------------------------------

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

json event_json(const event& e) {
  auto [kind, id] = entity_of(e.data);
  return {{"seq", e.seq},
          {"time", us_to_seconds(e.time)},
          {"project", e.project},
          {"kind", kind_name(kind_of(e.data))},
          {"entity", std::string{to_string(kind)} + ":" + std::to_string(id)},
          {"text", describe(e)}};
}

/// Decodes a record or fails naming its seq.
event decode(const storage::event_record& r) {
  auto e = from_record(r);
  if (!e)
    throw failure("event " + std::to_string(r.seq) + " (kind " + std::to_string(r.kind)
                  + ") does not decode");
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
      decode_error = "event " + std::to_string(r.seq) + " (kind " + std::to_string(r.kind)
                     + ") does not decode";
      return false;
    }
    if (as_json)
      std::cout << event_json(*e).dump() << '\n';
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
  if (!o.follow)
    return exit_ok;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  auto next = std::max(printed, to) + 1;
  while (!interrupted) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (interrupted)
      break;
    if (auto err = st->refresh())
      throw failure("cannot catch up with the log: " + describe(err));
    auto now_last = st->last_seq();
    if (now_last >= next)
      next = print_events(*st, next, now_last, g.json) + 1;
  }
  return exit_ok;
}

/// What `--entity` names.
struct entity_ref {
  entity_kind kind = entity_kind::project;
  std::string key; ///< The id or name as given.
};

entity_ref parse_entity(const std::string& s) {
  auto colon = s.find(':');
  if (colon == std::string::npos || colon + 1 == s.size())
    throw usage_error("--entity must be KIND:ID (host:ID, wu:ID, wu:NAME, user:ID, "
                      "project:NAME, seq:ID, seq:NAME), got '"
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
  else
    throw usage_error("unknown entity kind '" + kind + "' (host, wu, user, project, seq)");
  if ((out.kind == entity_kind::host || out.kind == entity_kind::user) && !numeric)
    throw usage_error("a " + kind + " is named by its numeric id, got '" + out.key + "'");
  return out;
}

/// One match of an entity in the replayed world.
struct entity_match {
  std::uint16_t project = 0;
  id_type id = 0;
  json state;
};

std::vector<entity_match>
find_entity(const world& w, const entity_ref& ref, const std::string& only_project) {
  std::vector<entity_match> out;
  for (std::size_t i = 0; i < w.projects.size(); ++i) {
    const auto& pw = w.projects[i];
    const auto& ps = pw.project;
    if (ps.name.empty() || (!only_project.empty() && ps.name != only_project))
      continue;
    auto index = static_cast<std::uint16_t>(i);
    switch (ref.kind) {
      case entity_kind::project:
        if (ps.name == ref.key)
          out.push_back({index, 0, net::to_json(cobble::summarize(ps))});
        break;
      case entity_kind::workunit: {
        const workunit_rec* wu = ps.find_workunit(ref.key);
        if (wu != nullptr)
          ;
        else if (std::all_of(ref.key.begin(), ref.key.end(), ::isdigit))
          wu = ps.workunit(std::stoull(ref.key));
        if (wu != nullptr)
          out.push_back({index, wu->id, net::to_json(net::view_of(ps, *wu))});
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
        out.push_back({index, id, net::to_json(v)});
        break;
      }
      case entity_kind::user: {
        auto id = std::stoull(ref.key);
        if (auto u = ps.users.find(id); u != ps.users.end())
          out.push_back({index, id, net::to_json(u->second)});
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
        out.push_back(
          {index, entry->id, net::to_json(sequence_view{st->second, app ? app->name : "?"})});
        break;
      }
    }
  }
  return out;
}

struct replay_options {
  std::uint64_t to = 0;
  bool to_given = false;
  std::string entity;
};

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

int log_replay(const global_options& g, const replay_options& o) {
  auto st = open_log(g);
  auto last = st->last_seq();
  auto to = o.to_given ? o.to : last;
  if (to > last) {
    std::cerr << "the log ends at seq " << last << "; replaying to there\n";
    to = last;
  }
  const auto& w = replay(*st, to);
  if (o.entity.empty()) {
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
    std::vector<event> history;
    if (to > 0) {
      auto err = st->scan(1, to, [&](const storage::event_record& r) {
        auto e = decode(r);
        if (e.project == m.project && touches(e, ref.kind, m.id))
          history.push_back(std::move(e));
        return true;
      });
      if (err)
        throw failure(describe(err));
    }
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
    std::cout << "state of " << o.entity << " at seq " << w.seq << ":\n" << m.state.dump(2) << '\n';
  }
  if (g.json)
    print_json(matches.size() == 1 ? out[0] : out);
  return exit_ok;
}

// -- verify ------------------------------------------------------------------------

/// "at /results/0/state: replayed "over", snapshot "in_progress"" from two JSON views.
std::string json_difference(const json& replayed, const json& snapshot) {
  auto patch = json::diff(replayed, snapshot);
  if (patch.empty())
    return "(a difference not visible in its JSON view)";
  const auto& op = patch[0];
  auto path = op.at("path").get<std::string>();
  json::json_pointer ptr{path};
  auto show = [&](const json& doc) {
    return doc.contains(ptr) ? doc.at(ptr).dump() : std::string{"(absent)"};
  };
  return "at " + (path.empty() ? std::string{"/"} : path) + ": replayed " + show(replayed)
         + ", snapshot " + show(snapshot);
}

template <class Map, class Describe>
std::optional<std::string> first_map_difference(const Map& a, const Map& b, Describe describe) {
  std::set<std::remove_cvref_t<decltype(a.begin()->first)>> keys;
  for (const auto& [k, v] : a)
    keys.insert(k);
  for (const auto& [k, v] : b)
    keys.insert(k);
  for (const auto& k : keys) {
    auto ia = a.find(k);
    auto ib = b.find(k);
    if (ia == a.end())
      return describe(k, nullptr, &ib->second);
    if (ib == b.end())
      return describe(k, &ia->second, nullptr);
    if (!(ia->second == ib->second))
      return describe(k, &ia->second, &ib->second);
  }
  return std::nullopt;
}

template <class T>
std::string presence(const std::string& what, const T* a, const T* b) {
  if (a == nullptr)
    return what + " exists only in the snapshot";
  if (b == nullptr)
    return what + " exists only in the replayed state";
  return what;
}

/// Names the first difference between the replayed world and the snapshot, or nullopt.
std::optional<std::string> first_difference(const world& a, const world& b) {
  if (a.seq != b.seq)
    return "the replayed state is at seq " + std::to_string(a.seq) + ", the snapshot at "
           + std::to_string(b.seq);
  if (a.projects.size() != b.projects.size())
    return "the replayed state has " + std::to_string(a.projects.size())
           + " projects, the snapshot " + std::to_string(b.projects.size());
  for (std::size_t i = 0; i < a.projects.size(); ++i) {
    const auto& pa = a.projects[i];
    const auto& pb = b.projects[i];
    if (pa == pb)
      continue;
    const auto& sa = pa.project;
    const auto& sb = pb.project;
    auto where = "project " + (sa.name.empty() ? "#" + std::to_string(i) : sa.name) + ": ";
    if (sa.name != sb.name || sa.long_name != sb.long_name || sa.index != sb.index)
      return where + "name or index differs (replayed '" + sa.name + "', snapshot '" + sb.name
             + "')";
    if (!(sa.apps == sb.apps)) {
      for (std::size_t k = 0; k < std::max(sa.apps.size(), sb.apps.size()); ++k)
        if (k >= sa.apps.size() || k >= sb.apps.size() || !(sa.apps[k] == sb.apps[k]))
          return where + "app #" + std::to_string(k + 1) + " ("
                 + (k < sa.apps.size() ? sa.apps[k].name : sb.apps[k].name) + ") differs";
    }
    if (auto d = first_map_difference(
          sa.users, sb.users, [&](id_type id, const user_rec* x, const user_rec* y) {
            auto what = presence("user " + std::to_string(id), x, y);
            return x && y ? what + " differs " + json_difference(net::to_json(*x), net::to_json(*y))
                          : what;
          }))
      return where + *d;
    if (auto d = first_map_difference(
          sa.hosts, sb.hosts, [&](id_type id, const host_reg* x, const host_reg* y) {
            return presence("host " + std::to_string(id) + " (registration)", x, y)
                   + (x && y ? " differs" : "");
          }))
      return where + *d;
    if (auto d = first_map_difference(
          sa.workunits, sb.workunits,
          [&](id_type id, const workunit_rec* x, const workunit_rec* y) {
            auto name = x ? x->name : y->name;
            auto what = presence("workunit " + std::to_string(id) + " (" + name + ")", x, y);
            return x && y ? what + " differs "
                              + json_difference(net::to_json(net::view_of(sa, *x)),
                                                net::to_json(net::view_of(sb, *y)))
                          : what;
          }))
      return where + *d;
    if (sa.next_user != sb.next_user || sa.next_host != sb.next_host || sa.next_wu != sb.next_wu)
      return where + "the next ids differ (user/host/workunit: replayed "
             + std::to_string(sa.next_user) + "/" + std::to_string(sa.next_host) + "/"
             + std::to_string(sa.next_wu) + ", snapshot " + std::to_string(sb.next_user) + "/"
             + std::to_string(sb.next_host) + "/" + std::to_string(sb.next_wu) + ")";
    if (!(sa.counters == sb.counters))
      return where + "counters differ "
             + json_difference(net::to_json(cobble::summarize(sa)).at("counters"),
                               net::to_json(cobble::summarize(sb)).at("counters"));
    if (auto d = first_map_difference(
          pa.hosts, pb.hosts, [&](id_type id, const host_state* x, const host_state* y) {
            auto what = presence("host " + std::to_string(id) + " (state)", x, y);
            return x && y ? what + " differs " + json_difference(net::to_json(*x), net::to_json(*y))
                          : what;
          }))
      return where + *d;
    if (auto d = first_map_difference(
          pa.app_versions, pb.app_versions,
          [&](std::uint32_t id, const app_version_state* x, const app_version_state* y) {
            auto what = presence("app version " + std::to_string(id), x, y);
            return x && y ? what + " differs " + json_difference(net::to_json(*x), net::to_json(*y))
                          : what;
          }))
      return where + *d;
    if (auto d = first_map_difference(
          pa.sequences, pb.sequences,
          [&](id_type id, const sequence_state* x, const sequence_state* y) {
            auto what = presence("sequence " + std::to_string(id), x, y);
            auto app = [&](const sequence_state& st) {
              auto found = sa.app(st.app);
              return found ? found->name : std::string{"?"};
            };
            return x && y ? what + " differs "
                              + json_difference(net::to_json(sequence_view{*x, app(*x)}),
                                                net::to_json(sequence_view{*y, app(*y)}))
                          : what;
          }))
      return where + *d;
    if (sa.sequences != sb.sequences || sa.next_seq != sb.next_seq)
      return where + "the sequence directory differs";
    return where + "differs in a way this tool cannot name";
  }
  return std::nullopt;
}

int log_verify(const global_options& g) {
  auto st = open_log(g);
  auto last = st->last_seq();
  auto snaps = st->list_snapshots();
  if (!snaps)
    throw failure("cannot list snapshots: " + describe(snaps.error()));
  std::uint64_t checked_to = 0;
  std::optional<std::uint64_t> snap_seq;
  if (!snaps->empty()) {
    snap_seq = snaps->back().seq;
    const auto& replayed = replay(*st, *snap_seq);
    auto blob = st->read_snapshot(*snap_seq);
    if (!blob)
      throw failure("cannot read snapshot " + std::to_string(*snap_seq) + ": "
                    + describe(blob.error()));
    const auto& snapshot = keep_until_exit(decode_snapshot(*blob));
    if (!snapshot)
      throw failure("snapshot " + std::to_string(*snap_seq) + " does not decode");
    if (auto d = first_difference(replayed, *snapshot)) {
      std::cout << "MISMATCH: state rebuilt from the events up to seq " << *snap_seq
                << " differs from snapshot " << *snap_seq << ": " << *d << '\n';
      return exit_failure;
    }
    checked_to = *snap_seq;
  }
  // The rest of the log (or all of it, without a snapshot) must decode.
  if (checked_to < last) {
    std::string decode_error;
    auto err = st->scan(checked_to + 1, last, [&](const storage::event_record& r) {
      if (!from_record(r)) {
        decode_error = "event " + std::to_string(r.seq) + " (kind " + std::to_string(r.kind)
                       + ") does not decode";
        return false;
      }
      return true;
    });
    if (err)
      throw failure("verify failed: " + describe(err));
    if (!decode_error.empty())
      throw failure("verify failed: " + decode_error);
  }
  if (snap_seq)
    std::cout << "verified " << last << " events; state at seq " << *snap_seq << " equals snapshot "
              << *snap_seq << '\n';
  else
    std::cout << "verified " << last << " events (every one decodes); no snapshot to compare\n";
  return exit_ok;
}

// -- the command line ------------------------------------------------------------------

/// Options of `work create`.
struct create_options {
  work_spec spec;
  int count = 0;
  double fpops_est = 0, fpops_bound = 0, delay_bound = 0, predicted_app_units = 1;
  int min_quorum = 0, target_nresults = 0;
  std::string submitter;
  std::vector<std::string> inputs; ///< PATH or PATH:OPEN_NAME
};

/// Reads a whole file; throws with the path in the message.
std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw std::runtime_error("cannot read input file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(int argc, char** argv) {
  CLI::App app{"cobble: the operator's command line of a Cobble server"};
  app.fallthrough();
  app.require_subcommand(1);
  global_options g;
  app.add_option("--server", g.server, "Base URL of the server's admin API")
    ->envname("COBBLE_SERVER")
    ->capture_default_str();
  app.add_option("--token", g.token, "Admin API token")->envname("COBBLE_ADMIN_TOKEN");
  app.add_option("--data-dir", g.data_dir,
                 "Server data directory: the token is read from DIR/admin_token; the log "
                 "commands read DIR/log");
  app.add_option("--project", g.project, "Project name (default: the server's first project)");
  app.add_flag("--json", g.json, "Print raw JSON");
  app.add_option("--timeout", g.timeout, "Seconds to wait for each HTTP answer")
    ->capture_default_str()
    ->check(CLI::PositiveNumber);

  std::function<int()> action;
  online on{g};

  auto status = app.add_subcommand("status", "Show the project's status");
  status->callback([&] {
    action = [&] {
      auto s = on.api().get(on.project_path());
      g.json ? print_json(s) : print_summary(std::cout, s);
      return exit_ok;
    };
  });

  // work
  auto work = app.add_subcommand("work", "Create and inspect workunits");
  work->require_subcommand(1);
  create_options co;
  auto create = work->add_subcommand("create", "Create workunits; prints their names");
  create->add_option("--app", co.spec.app, "App name")->required();
  create->add_option("--name", co.spec.name, "Workunit name (default: generated)");
  auto count_opt = create->add_option("--count", co.count, "Create N workunits (generated names)")
                     ->check(CLI::Range(1, 100000))
                     ->excludes("--name");
  create->add_option("--command-line", co.spec.command_line, "Command-line arguments of the app");
  auto fe = create->add_option("--fpops-est", co.fpops_est, "Estimated FLOPs")
              ->check(CLI::PositiveNumber);
  auto fb = create->add_option("--fpops-bound", co.fpops_bound, "FLOPs after which a job aborts")
              ->check(CLI::PositiveNumber);
  auto pau = create
               ->add_option("--predicted-app-units", co.predicted_app_units,
                            "AutoFlops: predicted app units of each job (default 1); "
                            "rsc_fpops_est/bound then follow from the app's statistics "
                            "(docs/autoflops.md)")
               ->check(CLI::Validator(
                 [](std::string& text) -> std::string {
                   char* end = nullptr;
                   double v = std::strtod(text.c_str(), &end);
                   if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || !(v > 0))
                     return "predicted app units must be a positive number, got '" + text + "'";
                   return {};
                 },
                 "POSITIVE", "positive"));
  auto db = create->add_option("--delay-bound", co.delay_bound, "Deadline, seconds after sending")
              ->check(CLI::PositiveNumber);
  auto mq = create->add_option("--min-quorum", co.min_quorum, "Agreeing results needed")
              ->check(CLI::PositiveNumber);
  auto tn = create->add_option("--target-nresults", co.target_nresults, "Replicas created at once")
              ->check(CLI::PositiveNumber);
  create->add_option("--submitter", co.submitter, "Who creates the work (default: cobble-cli)");
  create->add_option("--input", co.inputs,
                     "Input file PATH[:OPEN_NAME] (repeatable): copied into the server's data "
                     "directory (identical content is stored once); the app opens it as "
                     "OPEN_NAME (default: the file's name)");
  create->callback([&] {
    action = [&] {
      if (fe->count())
        co.spec.rsc_fpops_est = co.fpops_est;
      if (fb->count())
        co.spec.rsc_fpops_bound = co.fpops_bound;
      if (db->count())
        co.spec.delay_bound = co.delay_bound;
      if (pau->count())
        co.spec.predicted_app_units = co.predicted_app_units;
      if (mq->count())
        co.spec.min_quorum = co.min_quorum;
      if (tn->count())
        co.spec.target_nresults = co.target_nresults;
      for (const auto& in : co.inputs) {
        auto colon = in.rfind(':');
        auto path = colon == std::string::npos ? in : in.substr(0, colon);
        auto open = colon == std::string::npos ? fs::path{in}.filename().string()
                                               : in.substr(colon + 1);
        auto staged = on.api().post_bytes(on.project_path() + "/files", slurp(path));
        co.spec.inputs.push_back(input_spec{staged.at("stored_name").get<std::string>(), open,
                                            staged.at("nbytes").get<double>(),
                                            staged.at("md5").get<std::string>()});
      }
      auto item = net::to_json(co.spec);
      if (count_opt->count())
        item["count"] = co.count;
      json body = {{"items", json::array({item})},
                   {"submitter", co.submitter.empty() ? "cobble-cli" : co.submitter}};
      auto res = on.api().post(on.project_path() + "/workunits", body);
      if (g.json)
        print_json(res);
      else
        for (const auto& n : res.at("names"))
          std::cout << n.get<std::string>() << '\n';
      return exit_ok;
    };
  });

  std::string wu_name;
  auto wshow = work->add_subcommand("show", "Show a workunit and its results");
  wshow->add_option("name", wu_name, "Workunit name or id")->required();
  wshow->callback([&] {
    action = [&] {
      auto w = on.api().get(on.project_path() + "/workunits/" + path_escape(wu_name));
      g.json ? print_json(w) : print_workunit(std::cout, w);
      return exit_ok;
    };
  });

  std::uint64_t offset = 0, limit = 100;
  auto wlist = work->add_subcommand("list", "List workunits by id");
  wlist->add_option("--offset", offset, "Skip this many")->capture_default_str();
  wlist->add_option("--limit", limit, "At most this many")
    ->capture_default_str()
    ->check(CLI::Range(1, 10000));
  wlist->callback([&] {
    action = [&] {
      auto res = on.api().get(on.project_path() + "/workunits?offset=" + std::to_string(offset)
                              + "&limit=" + std::to_string(limit));
      if (g.json) {
        print_json(res);
        return exit_ok;
      }
      table t{{"ID", "NAME", "APP", "STATE", "RESULTS", "UNSENT", "IN PROGRESS", "OVER",
               "CANONICAL", "CREATED"}};
      for (const auto& w : res.at("items")) {
        const auto& c = w.at("result_counts");
        t.add({field(w, "id"), field(w, "name"), field(w, "app"), field(w, "state"),
               field(c, "total"), field(c, "unsent"), field(c, "in_progress"), field(c, "over"),
               field(w, "canonical_result"), time_field(w, "created")});
      }
      t.print(std::cout);
      return exit_ok;
    };
  });

  // host
  auto host = app.add_subcommand("host", "Inspect hosts");
  host->require_subcommand(1);
  std::uint64_t host_id = 0;
  auto hshow = host->add_subcommand("show", "Show a host with its state");
  hshow->add_option("id", host_id, "Host id")->required();
  hshow->callback([&] {
    action = [&] {
      auto h = on.api().get(on.project_path() + "/hosts/" + std::to_string(host_id));
      g.json ? print_json(h) : print_host(std::cout, h);
      return exit_ok;
    };
  });
  auto hlist = host->add_subcommand("list", "List hosts by id");
  hlist->add_option("--offset", offset, "Skip this many")->capture_default_str();
  hlist->add_option("--limit", limit, "At most this many")
    ->capture_default_str()
    ->check(CLI::Range(1, 10000));
  hlist->callback([&] {
    action = [&] {
      auto res = on.api().get(on.project_path() + "/hosts?offset=" + std::to_string(offset)
                              + "&limit=" + std::to_string(limit));
      if (g.json) {
        print_json(res);
        return exit_ok;
      }
      table t{{"ID", "USER", "REGISTERED"}};
      for (const auto& h : res.at("items"))
        t.add({field(h, "id"), field(h, "user"), time_field(h, "created")});
      t.print(std::cout);
      return exit_ok;
    };
  });

  // seq
  auto seq = app.add_subcommand("seq", "Create, inspect and steer work sequences "
                                       "(docs/sequences.md)");
  seq->require_subcommand(1);
  sequence_spec ss;
  double s_fpops_est = 0, s_delay_bound = 0;
  int s_replicas = 1;
  std::string seq_by;
  std::vector<std::string> s_inputs;
  auto screate = seq->add_subcommand(
    "create", "Create a sequence of N elements (one workunit each) kept on one host");
  screate->add_option("name", ss.name, "Sequence name (letters, digits, _ - .)")->required();
  screate->add_option("--app", ss.app, "App name")->required();
  screate->add_option("--count", ss.count, "Elements created now")
    ->required()
    ->check(CLI::Range(1, 100000));
  screate->add_option("--state-every", ss.state_every,
                      "Positions that are multiples of K upload full state files; the others "
                      "are heartbeats without output files (default 0: none)");
  screate->add_flag("--final-state", ss.final_state, "The last element uploads full state");
  screate
    ->add_option("--max-result-time", ss.max_result_time,
                 "Seconds a host may need for one element; slower hosts are not given "
                 "the sequence (default: the deadline)")
    ->check(CLI::PositiveNumber);
  screate
    ->add_option("--replicas", s_replicas,
                 "2: run the sequence on two hosts and compare element by element")
    ->check(CLI::Range(1, 2));
  screate->add_option("--command-line", ss.command_line, "Command-line arguments of the app");
  auto sfe = screate->add_option("--fpops-est", s_fpops_est, "Estimated FLOPs of one element")
               ->check(CLI::PositiveNumber);
  auto sdb = screate
               ->add_option("--delay-bound", s_delay_bound,
                            "Deadline of an element, seconds after sending")
               ->check(CLI::PositiveNumber);
  screate->add_option("--input", s_inputs,
                      "Input file PATH[:OPEN_NAME] of every element (repeatable), e.g. the "
                      "initial state; staged like `work create --input`");
  auto by_help = "Who does it, recorded in the event (default: your login name)";
  screate->add_option("--by", seq_by, by_help);
  screate->callback([&] {
    action = [&] {
      if (sfe->count())
        ss.rsc_fpops_est = s_fpops_est;
      if (sdb->count())
        ss.delay_bound = s_delay_bound;
      ss.replicas = static_cast<std::uint8_t>(s_replicas);
      ss.by = operator_name(seq_by);
      for (const auto& in : s_inputs) {
        auto colon = in.rfind(':');
        auto path = colon == std::string::npos ? in : in.substr(0, colon);
        auto open = colon == std::string::npos ? fs::path{in}.filename().string()
                                               : in.substr(colon + 1);
        auto staged = on.api().post_bytes(on.project_path() + "/files", slurp(path));
        ss.inputs.push_back(input_spec{staged.at("stored_name").get<std::string>(), open,
                                       staged.at("nbytes").get<double>(),
                                       staged.at("md5").get<std::string>()});
      }
      auto res = on.api().post(on.project_path() + "/sequences", net::to_json(ss));
      g.json ? print_json(res) : print_sequence(std::cout, res);
      return exit_ok;
    };
  });
  std::string seq_key;
  auto sshow = seq->add_subcommand(
    "show", "Show a sequence: its chain(s) element by element, assignment, dead branches");
  sshow->add_option("seq", seq_key, "Sequence name or id")->required();
  sshow->callback([&] {
    action = [&] {
      auto s = on.api().get(on.project_path() + "/sequences/" + path_escape(seq_key));
      g.json ? print_json(s) : print_sequence(std::cout, s);
      return exit_ok;
    };
  });
  auto slist = seq->add_subcommand("list", "List sequences by id");
  slist->add_option("--offset", offset, "Skip this many")->capture_default_str();
  slist->add_option("--limit", limit, "At most this many")
    ->capture_default_str()
    ->check(CLI::Range(1, 10000));
  slist->callback([&] {
    action = [&] {
      auto res = on.api().get(on.project_path() + "/sequences?offset=" + std::to_string(offset)
                              + "&limit=" + std::to_string(limit));
      if (g.json) {
        print_json(res);
        return exit_ok;
      }
      table t{{"ID", "NAME", "APP", "LENGTH", "CHAIN", "HOST", "VALIDATED", "UNDISPATCHED",
               "DEAD BRANCHES", "STATE"}};
      for (const auto& s : res.at("items"))
        for (const auto& c : s.at("chains"))
          t.add({field(s, "id"), field(s, "name"), field(s, "app"), field(s, "length"),
                 field(c, "replica"), field(c, "host"), field(c, "validated"),
                 field(c, "first_undispatched"), field(s, "dead_branches"),
                 s.at("ended").get<bool>() ? "ended" : "running"});
      t.print(std::cout);
      return exit_ok;
    };
  });
  auto post_command = [&](const std::string& verb, json body) {
    body["by"] = operator_name(seq_by);
    auto res = on.api().post(on.project_path() + "/sequences/" + path_escape(seq_key) + "/" + verb,
                             body);
    g.json ? print_json(res) : print_sequence(std::cout, res);
    return exit_ok;
  };
  std::uint64_t to_host = 0;
  int replica = 0;
  bool unassign = false;
  auto sreassign = seq->add_subcommand(
    "reassign", "Take a sequence's chain from its host (its work after the last full state "
                "upload becomes a dead branch) and give it to another host, or to none");
  sreassign->add_option("seq", seq_key, "Sequence name or id")->required();
  auto seq_to_opt = sreassign->add_option("--to", to_host, "Host id to give the chain to");
  auto seq_un_opt = sreassign->add_flag("--unassign", unassign,
                                        "Leave the chain unassigned: the next fast enough host "
                                        "that asks for work takes it");
  seq_to_opt->excludes(seq_un_opt);
  sreassign->add_option("--replica", replica, "Which chain of a replicated sequence (0 or 1)")
    ->check(CLI::Range(0, 1));
  sreassign->add_option("--by", seq_by, by_help);
  sreassign->callback([&] {
    action = [&] {
      if (!seq_to_opt->count() && !unassign)
        throw usage_error("seq reassign needs --to HOST or --unassign");
      json body = {{"replica", replica}};
      if (unassign)
        body["unassign"] = true;
      else
        body["to"] = to_host;
      return post_command("reassign", body);
    };
  });
  std::string end_reason;
  auto send = seq->add_subcommand(
    "end", "End a sequence: no more elements; unreported ones are cancelled and hosts told");
  send->add_option("seq", seq_key, "Sequence name or id")->required();
  send->add_option("--reason", end_reason, "Why (recorded)");
  send->add_option("--by", seq_by, by_help);
  send->callback([&] {
    action = [&] {
      json body = json::object();
      if (!end_reason.empty())
        body["reason"] = end_reason;
      return post_command("end", body);
    };
  });
  std::uint32_t ext_count = 0, ext_every = 0;
  bool ext_final = false;
  auto sextend = seq->add_subcommand("extend", "Add elements at the end of a sequence");
  sextend->add_option("seq", seq_key, "Sequence name or id")->required();
  sextend->add_option("--count", ext_count, "Elements to add")
    ->required()
    ->check(CLI::Range(1, 100000));
  sextend->add_option("--state-every", ext_every,
                      "New positions that are multiples of K upload full state");
  sextend->add_flag("--final-state", ext_final, "The last new element uploads full state");
  sextend->add_option("--by", seq_by, by_help);
  sextend->callback([&] {
    action = [&] {
      json body = {{"count", ext_count}};
      if (ext_every)
        body["state_every"] = ext_every;
      if (ext_final)
        body["final_state"] = true;
      return post_command("extend", body);
    };
  });

  // user
  auto user = app.add_subcommand("user", "Create and list user accounts");
  user->require_subcommand(1);
  std::string user_name, email;
  auto ucreate = user->add_subcommand("create", "Create an account; prints its authenticator");
  ucreate->add_option("name", user_name, "User name")->required();
  ucreate->add_option("--email", email, "E-mail address");
  ucreate->callback([&] {
    action = [&] {
      auto res = on.api().post(on.project_path() + "/users",
                               json{{"name", user_name}, {"email", email}});
      if (g.json)
        print_json(res);
      else
        std::cout << "user " << field(res, "id") << " " << user_name << "\nauthenticator "
                  << field(res, "authenticator") << '\n';
      return exit_ok;
    };
  });
  auto ulist = user->add_subcommand("list", "List user accounts");
  ulist->callback([&] {
    action = [&] {
      auto res = on.api().get(on.project_path() + "/users");
      if (g.json) {
        print_json(res);
        return exit_ok;
      }
      table t{{"ID", "NAME", "EMAIL", "AUTHENTICATOR", "CREATED"}};
      for (const auto& u : res)
        t.add({field(u, "id"), field(u, "name"), field(u, "email"), field(u, "authenticator"),
               time_field(u, "created")});
      t.print(std::cout);
      return exit_ok;
    };
  });

  // log (offline)
  auto log = app.add_subcommand("log", "Read the event log of a data directory (offline; safe "
                                       "while cobbled runs)");
  log->require_subcommand(1);
  tail_options to;
  auto tail = log->add_subcommand("tail", "Print the newest events, one per line");
  auto from_opt = tail->add_option("--from", to.from, "Start at this seq (default: the last N)");
  auto n_opt = tail->add_option("-n", to.n, "Number of events")->capture_default_str();
  tail->add_flag("--follow,-f", to.follow, "Keep printing new events until interrupted");
  tail->callback([&] {
    action = [&] {
      to.from_given = from_opt->count() > 0;
      to.n_given = n_opt->count() > 0;
      return log_tail(g, to);
    };
  });
  replay_options ro;
  auto rp = log->add_subcommand("replay", "Rebuild the state up to a seq and print an entity's "
                                          "history and state");
  auto to_opt = rp->add_option("--to", ro.to, "Last event to apply (default: the end)");
  rp->add_option("--entity", ro.entity,
                 "host:ID, wu:ID, wu:NAME, user:ID, project:NAME, seq:ID or seq:NAME "
                 "(default: every project's summary)");
  rp->callback([&] {
    action = [&] {
      ro.to_given = to_opt->count() > 0;
      return log_replay(g, ro);
    };
  });
  auto verify = log->add_subcommand("verify", "Fold every event and compare with the newest "
                                              "snapshot; check the whole log decodes");
  verify->callback([&] { action = [&] { return log_verify(g); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    auto code = app.exit(e);
    return code == 0 ? exit_ok : exit_usage;
  }
  if (!action)
    return exit_usage;
  try {
    return action();
  } catch (const usage_error& e) {
    std::cerr << "cobble: " << e.what() << '\n';
    return exit_usage;
  } catch (const failure& e) {
    std::cerr << "cobble: " << e.what() << '\n';
    return exit_failure;
  } catch (const json::exception& e) {
    std::cerr << "cobble: unexpected answer from the server: " << e.what() << '\n';
    return exit_failure;
  } catch (const std::exception& e) {
    std::cerr << "cobble: " << e.what() << '\n';
    return exit_failure;
  }
}

int program_main(int argc, char** argv) {
  cobble::heap::use_huge_pages();
  cobble::heap::reserve_arena();
  return run(argc, argv);
}

} // namespace

int main(int argc, char** argv) {
  try {
    return program_main(argc, argv);
  } catch (const std::exception& e) {
    // Nothing is expected to escape; if something does, say what instead of aborting.
    std::cerr << "cobble: internal error: " << e.what() << '\n';
    return 70;
  }
}
