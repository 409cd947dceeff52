#include "load.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <regex>
#include <stdexcept>
#include <thread>

namespace cobble::bench {

extern const char* const request_fixture;

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

// -- replies ----------------------------------------------------------------------------

namespace {

/// The text between <tag> and </tag> at or after `from` within [from, end), or nullopt.
std::optional<std::string_view>
element(std::string_view xml, std::string_view tag, std::size_t from, std::size_t end,
        std::size_t* after = nullptr) {
  std::string open = "<" + std::string{tag} + ">";
  std::string close = "</" + std::string{tag} + ">";
  auto b = xml.find(open, from);
  if (b == std::string_view::npos || b >= end)
    return std::nullopt;
  b += open.size();
  auto e = xml.find(close, b);
  if (e == std::string_view::npos || e > end)
    return std::nullopt;
  if (after)
    *after = e + close.size();
  auto text = xml.substr(b, e - b);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n'))
    text.remove_suffix(1);
  return text;
}

} // namespace

reply_summary scan_reply(std::string_view xml) {
  reply_summary out;
  auto end = xml.size();
  // <hostid> appears only at the top level of a reply.
  if (auto h = element(xml, "hostid", 0, end))
    out.hostid = std::stoull(std::string{*h});
  out.message = xml.find("<message") != std::string_view::npos;
  std::size_t pos = 0;
  while ((pos = xml.find("<result_ack>", pos)) != std::string_view::npos) {
    std::size_t after = pos;
    auto block_end = xml.find("</result_ack>", pos);
    if (auto n = element(xml, "name", pos, block_end, &after))
      out.acks.emplace_back(*n);
    pos = block_end == std::string_view::npos ? end : block_end;
  }
  pos = 0;
  while ((pos = xml.find("<result>", pos)) != std::string_view::npos) {
    auto block_end = xml.find("</result>", pos);
    if (block_end == std::string_view::npos)
      break;
    reply_summary::job j;
    if (auto n = element(xml, "name", pos, block_end))
      j.name = *n;
    std::size_t at = pos;
    while (auto f = element(xml, "file_name", at, block_end, &at))
      j.outputs.emplace_back(*f);
    out.jobs.push_back(std::move(j));
    pos = block_end;
  }
  return out;
}

// -- requests ---------------------------------------------------------------------------

namespace {

/// The fixture cut into constant text and the places a host's values go.
struct request_template {
  enum slot { auth, hostid, seqno, secs, instances, cpid, domain, results };
  std::vector<std::string> text; ///< text[i] precedes slots[i]; one more text at the end.
  std::vector<slot> slots;

  request_template() {
    std::string t = request_fixture;
    auto head = t.substr(0, t.find("    <result>"));
    auto tail = t.substr(t.find("<app_versions>"));
    auto put = [](std::string& s, const char* tag, const char* marker) {
      s = std::regex_replace(s, std::regex{std::string{"<"} + tag + ">[^<]*</" + tag + ">"},
                             std::string{"<"} + tag + ">" + marker + "</" + tag + ">");
    };
    put(head, "authenticator", "\x01");
    put(head, "hostid", "\x02");
    put(head, "rpc_seqno", "\x03");
    put(head, "work_req_seconds", "\x04");
    put(head, "cpu_req_secs", "\x04");
    put(head, "cpu_req_instances", "\x05");
    put(head, "host_cpid", "\x06");
    put(head, "domain_name", "\x07");
    // The hosts hold nothing beyond what they report.
    tail = std::regex_replace(tail, std::regex{"<other_results>[\\s\\S]*</other_results>"},
                              "<other_results>\n</other_results>");
    auto whole = head + "\x08" + tail;
    std::string cur;
    for (char c : whole) {
      if (c >= 1 && c <= 8) {
        text.push_back(std::move(cur));
        cur.clear();
        slots.push_back(static_cast<slot>(c - 1));
      } else {
        cur.push_back(c);
      }
    }
    text.push_back(std::move(cur));
    if (slots.size() != 9)
      throw std::logic_error("the request fixture lacks an element the generator fills in");
  }
};

const request_template& templ() {
  static const request_template t;
  return t;
}

void append_report(std::string& out, const reply_summary::job& j, double elapsed) {
  out += "    <result>\n        <name>";
  out += j.name;
  out += "</name>\n        <final_cpu_time>";
  out += std::to_string(elapsed * 0.98);
  out += "</final_cpu_time>\n        <final_elapsed_time>";
  out += std::to_string(elapsed);
  out += "</final_elapsed_time>\n"
         "        <exit_status>0</exit_status>\n"
         "        <state>5</state>\n"
         "        <platform>x86_64-pc-linux-gnu</platform>\n"
         "        <version_num>100</version_num>\n"
         "        <final_peak_working_set_size>3612672.000000</final_peak_working_set_size>\n"
         "        <final_peak_swap_size>9781248.000000</final_peak_swap_size>\n"
         "        <final_peak_disk_usage>4096.000000</final_peak_disk_usage>\n"
         "        <app_version_num>100</app_version_num>\n"
         "<stderr_out>\n<core_client_version>7.20.5</core_client_version>\n"
         "<![CDATA[\n<stderr_txt>\ndone\n</stderr_txt>\n]]>\n</stderr_out>\n";
  for (const auto& f : j.outputs) {
    out += "    <file_info>\n        <name>";
    out += f;
    // Every host computes the same output, so the bitwise validator agrees.
    out += "</name>\n        <nbytes>12.000000</nbytes>\n"
           "        <max_nbytes>65536.000000</max_nbytes>\n"
           "        <md5_cksum>6f5902ac237024bdd0c176cb93063dc4</md5_cksum>\n"
           "        <upload_url>http://127.0.0.1/upload</upload_url>\n    </file_info>\n";
  }
  out += "    </result>\n";
}

std::string hex32(std::uint64_t a, std::uint64_t b) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return buf;
}

} // namespace

std::string make_request(const std::string& authenticator, const sim_host& h, std::size_t index,
                         double req_secs, double req_instances, double job_seconds) {
  const auto& t = templ();
  std::string out;
  out.reserve(4096 + h.held.size() * 1024);
  for (std::size_t i = 0; i < t.slots.size(); ++i) {
    out += t.text[i];
    switch (t.slots[i]) {
      case request_template::auth:
        out += authenticator;
        break;
      case request_template::hostid:
        out += std::to_string(h.id);
        break;
      case request_template::seqno:
        out += std::to_string(h.seqno);
        break;
      case request_template::secs:
        out += std::to_string(req_secs);
        break;
      case request_template::instances:
        out += std::to_string(req_instances);
        break;
      case request_template::cpid:
        out += hex32(0xb0b0b0b0ULL, index);
        break;
      case request_template::domain:
        out += "bench-host-" + std::to_string(index);
        break;
      case request_template::results:
        for (const auto& j : h.held)
          append_report(out, j, job_seconds);
        break;
    }
  }
  out += t.text.back();
  return out;
}

// -- the generator ----------------------------------------------------------------------

namespace {

struct shared_window {
  steady::time_point warmup_until;
  double seconds = 0;
  std::atomic<std::size_t> unregistered{0};
  std::atomic<std::int64_t> start_ns{0}; ///< 0: not started.
  std::atomic<std::int64_t> end_ns{0};
  std::atomic<bool> over{false};

  std::int64_t ns(steady::time_point t) const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  }

  /// Opens the window once the warm-up is over and every host is registered.
  void maybe_open(steady::time_point now) {
    if (start_ns.load(std::memory_order_relaxed) != 0 || now < warmup_until
        || unregistered.load(std::memory_order_relaxed) != 0)
      return;
    std::int64_t zero = 0;
    auto s = ns(now);
    if (start_ns.compare_exchange_strong(zero, s))
      end_ns.store(seconds > 0 ? s + static_cast<std::int64_t>(seconds * 1e9) : INT64_MAX);
  }
  bool in_window(steady::time_point began, steady::time_point done) const {
    auto s = start_ns.load(std::memory_order_relaxed);
    return s != 0 && ns(began) >= s && ns(done) <= end_ns.load(std::memory_order_relaxed);
  }
  bool finished(steady::time_point now) const {
    auto e = end_ns.load(std::memory_order_relaxed);
    return over.load(std::memory_order_relaxed) || (e != 0 && ns(now) > e);
  }
};

struct worker {
  const load_options* opts = nullptr;
  shared_window* window = nullptr;
  std::vector<sim_host>* hosts = nullptr;
  std::deque<std::size_t> ready; ///< Indices into hosts of hosts without an RPC in flight.
  ledger acked;
  std::vector<std::uint32_t> latency_us;
  load_result r;
  std::size_t alive = 0;
  std::size_t next_page = 0; ///< Where the next connection starts in load_options::pages.
  asio::io_context ioc{1};
};

void complete(worker& w, sim_host& h, const reply_summary& rep, bool counted) {
  auto& wnd = *w.window;
  if (rep.hostid && h.id == 0) {
    h.id = *rep.hostid;
    w.acked.record_host(h.id);
    wnd.unregistered.fetch_sub(1, std::memory_order_relaxed);
  }
  // Every result the host reported and the server acknowledged is done.
  std::size_t reported = 0;
  for (const auto& a : rep.acks) {
    auto it = std::find_if(h.held.begin(), h.held.end(),
                           [&](const reply_summary::job& j) { return j.name == a; });
    if (it != h.held.end()) {
      w.acked.record_report(a, h.id);
      h.held.erase(it);
      ++reported;
    }
  }
  for (const auto& j : rep.jobs) {
    w.acked.record_dispatch(j.name, h.id);
    h.held.push_back(j);
  }
  if (counted) {
    ++w.r.rpcs;
    w.r.jobs += rep.jobs.size();
    w.r.reports += reported;
    w.r.no_work += rep.jobs.empty() ? 1 : 0;
    w.r.messages += rep.message ? 1 : 0;
  }
}

asio::awaitable<void> connection(worker& w) {
  const auto& o = *w.opts;
  auto& wnd = *w.window;
  auto ex = co_await asio::this_coro::executor;
  tcp::endpoint ep{asio::ip::make_address(o.address), o.port};
  const bool gets = o.healthz || !o.pages.empty();
  const std::string target = o.healthz ? "/healthz" : "/" + o.project + "/cgi";
  std::size_t next_page = w.next_page++;
  // Paced pages: this connection's share of pages_per_second, its first slot spread.
  const auto pace = !o.pages.empty() && o.pages_per_second > 0
                      ? std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(
                        static_cast<double>(o.connections) / o.pages_per_second))
                      : steady::duration::zero();
  auto slot = steady::now()
              + pace * static_cast<long>(next_page % o.connections)
                  / static_cast<long>(std::max<std::size_t>(o.connections, 1));
  asio::steady_timer timer{ex};
  const std::string host_header = o.address + ":" + std::to_string(o.port);
  const double secs = o.job_seconds * o.jobs_per_rpc - 1;
  while (!wnd.finished(steady::now()) && !(o.stop && o.stop->load())) {
    beast::tcp_stream stream{ex};
    std::optional<std::size_t> current; // the host whose RPC is in flight
    try {
      co_await stream.async_connect(ep, asio::use_awaitable);
      stream.socket().set_option(tcp::no_delay{true});
      beast::flat_buffer buf;
      while (!wnd.finished(steady::now()) && !(o.stop && o.stop->load())) {
        http::request<http::string_body> req;
        if (!o.pages.empty()) {
          if (pace > steady::duration::zero()) {
            timer.expires_at(slot);
            co_await timer.async_wait(asio::use_awaitable);
            slot = std::max(slot + pace, steady::now() - pace);
          }
          req = {http::verb::get, o.pages[next_page++ % o.pages.size()], 11};
          if (!o.cookie.empty())
            req.set(http::field::cookie, o.cookie);
        } else if (o.healthz) {
          req = {http::verb::get, target, 11};
        } else {
          if (w.ready.empty())
            throw std::logic_error("more connections than hosts");
          current = w.ready.front();
          w.ready.pop_front();
          auto& h = (*w.hosts)[*current];
          ++h.seqno;
          req = {http::verb::post, target, 11};
          req.set(http::field::content_type, "application/x-www-form-urlencoded");
          const auto& key = o.account_keys.empty()
                              ? o.account_key
                              : o.account_keys[*current % o.account_keys.size()];
          req.body() = make_request(key, h, *current, secs, o.jobs_per_rpc, o.job_seconds);
          req.prepare_payload();
        }
        req.set(http::field::host, host_header);
        req.set(http::field::user_agent, "BOINC client (x86_64-pc-linux-gnu 7.20.5)");
        req.keep_alive(true);
        auto began = steady::now();
        co_await http::async_write(stream, req, asio::use_awaitable);
        http::response<http::string_body> res;
        co_await http::async_read(stream, buf, res, asio::use_awaitable);
        auto done = steady::now();
        ++w.r.all_rpcs;
        if (res.result() != http::status::ok)
          throw std::runtime_error("HTTP " + std::to_string(res.result_int()));
        bool counted = wnd.in_window(began, done);
        if (gets) {
          if (counted)
            ++w.r.rpcs;
        } else {
          auto rep = scan_reply(res.body());
          complete(w, (*w.hosts)[*current], rep, counted);
          w.ready.push_back(*current);
          current.reset();
        }
        if (counted)
          w.latency_us.push_back(static_cast<std::uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(done - began).count()));
        wnd.maybe_open(done);
        if (!res.keep_alive())
          break;
      }
    } catch (const std::exception&) {
      ++w.r.errors;
    }
    // A host whose RPC failed keeps its results and reports them at its next RPC.
    if (current)
      w.ready.push_back(*current);
    if (o.end_on_error)
      break;
  }
  --w.alive;
}

double percentile(std::vector<std::uint32_t>& v, double q) {
  if (v.empty())
    return 0;
  auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k] / 1000.0;
}

} // namespace

generator::generator(std::size_t hosts) : hosts_(hosts) {}

load_result generator::run(const load_options& o) {
  bool gets = o.healthz || !o.pages.empty();
  if (!gets && o.connections > hosts_.size())
    throw std::invalid_argument("--connections must not exceed --hosts");
  shared_window wnd;
  wnd.warmup_until = steady::now()
                     + std::chrono::duration_cast<steady::duration>(
                       std::chrono::duration<double>(o.warmup_seconds));
  wnd.seconds = o.seconds;
  std::size_t unregistered = 0;
  for (const auto& h : hosts_)
    unregistered += (h.id == 0 && !gets) ? 1 : 0;
  wnd.unregistered = unregistered;
  auto threads = std::max(1u, o.threads);
  std::vector<std::unique_ptr<worker>> workers;
  for (unsigned t = 0; t < threads; ++t) {
    auto w = std::make_unique<worker>();
    w->opts = &o;
    w->window = &wnd;
    w->hosts = &hosts_;
    for (std::size_t i = t; i < hosts_.size(); i += threads)
      w->ready.push_back(i);
    auto conns = o.connections / threads + (t < o.connections % threads ? 1 : 0);
    w->alive = conns;
    for (std::size_t c = 0; c < conns; ++c)
      asio::co_spawn(w->ioc, connection(*w), asio::detached);
    workers.push_back(std::move(w));
  }
  std::vector<std::thread> pool;
  pool.reserve(workers.size());
  for (auto& w : workers)
    pool.emplace_back([&w] { w->ioc.run(); });
  for (auto& t : pool)
    t.join();
  load_result r;
  std::vector<std::uint32_t> lat;
  for (auto& w : workers) {
    r.rpcs += w->r.rpcs;
    r.jobs += w->r.jobs;
    r.reports += w->r.reports;
    r.no_work += w->r.no_work;
    r.messages += w->r.messages;
    r.errors += w->r.errors;
    r.all_rpcs += w->r.all_rpcs;
    lat.insert(lat.end(), w->latency_us.begin(), w->latency_us.end());
    ledger_.merge(w->acked);
  }
  auto s = wnd.start_ns.load();
  if (s != 0) {
    auto e = std::min(wnd.end_ns.load(), wnd.ns(steady::now()));
    r.seconds = static_cast<double>(e - s) / 1e9;
  }
  r.p50_ms = percentile(lat, 0.5);
  r.p99_ms = percentile(lat, 0.99);
  r.p999_ms = percentile(lat, 0.999);
  r.max_ms = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end()) / 1000.0;
  return r;
}

} // namespace cobble::bench
