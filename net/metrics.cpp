#include "net/metrics.hpp"

#include "net/http_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace cobble::net {

void rate_meter::add(std::int64_t second) {
  auto i = static_cast<std::size_t>(second) % slots;
  if (second_[i].load(std::memory_order_relaxed) != second
      && second_[i].exchange(second, std::memory_order_relaxed) != second)
    count_[i].store(0, std::memory_order_relaxed); // the slot held an older second
  count_[i].fetch_add(1, std::memory_order_relaxed);
}

double rate_meter::per_second(std::int64_t now_second, int window) const {
  window = std::clamp(window, 1, 60);
  std::uint64_t n = 0;
  for (std::int64_t s = now_second - window; s < now_second; ++s) {
    auto i = static_cast<std::size_t>(s) % slots;
    if (second_[i].load(std::memory_order_relaxed) == s)
      n += count_[i].load(std::memory_order_relaxed);
  }
  return static_cast<double>(n) / window;
}

void edge_metrics::rpc_answered() {
  rpcs++;
  rpc_rate.add(std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count());
}

void latency_histogram::observe(std::chrono::steady_clock::duration d) {
  auto secs = std::chrono::duration<double>(d).count();
  std::size_t i = 0;
  while (i < bounds.size() && secs > bounds[i])
    ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(static_cast<std::uint64_t>(secs * 1e6), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void latency_histogram::render(std::string& out, const char* name, const char* help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds[i], cumulative);
  }
  cumulative += counts_[bounds.size()].load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, static_cast<double>(sum_us_.load()) / 1e6,
                     name, count_.load());
}

namespace {

void counter(std::string& out, const char* name, const char* help, std::uint64_t v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
}

void gauge(std::string& out, const char* name, const char* help, std::uint64_t v) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, v);
}

void project_gauges_text(std::string& out, const std::vector<project_gauges>& projects) {
  struct column {
    const char* name;
    const char* type;
    const char* help;
    std::size_t project_gauges::*field;
  };
  static constexpr std::array<column, 9> columns{{
    {"cobble_hosts_in_memory", "gauge", "Hosts whose state the project holds, live or passivated.",
     &project_gauges::hosts},
    {"cobble_hosts_live", "gauge",
     "Hosts whose state is decoded (used within passivate_hosts_after, at most max_live_hosts).",
     &project_gauges::hosts_live},
    {"cobble_hosts_passivated", "gauge", "Hosts whose state is kept encoded until next used.",
     &project_gauges::hosts_passivated},
    {"cobble_host_state_bytes", "gauge",
     "Estimated bytes of the hosts' states and registrations (live states measured on up to "
     "1024).",
     &project_gauges::host_bytes},
    {"cobble_host_passivated_bytes", "gauge", "Bytes of the passivated hosts' encoded states.",
     &project_gauges::passivated_bytes},
    {"cobble_host_passivations_total", "counter", "Hosts passivated since start.",
     &project_gauges::host_passivations},
    {"cobble_host_activations_total", "counter", "Passivated hosts decoded again since start.",
     &project_gauges::host_activations},
    {"cobble_workunits_in_memory", "gauge", "Workunits the project holds in memory.",
     &project_gauges::workunits},
    {"cobble_workunits_active", "gauge", "Workunits neither assimilated, failed nor cancelled.",
     &project_gauges::active_workunits},
  }};
  for (const auto& c : columns) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", c.name, c.help, c.name, c.type);
    for (const auto& p : projects)
      out += fmt::format("{}{{project=\"{}\"}} {}\n", c.name, p.project, p.*c.field);
  }
}

} // namespace

std::string render_metrics(const edge_metrics& m, const server_stats& http, const actor_readings& r,
                           const server_stats* admin) {
  const auto& log = r.log;
  std::string out;
  counter(out, "cobble_scheduler_rpcs_total", "Scheduler RPCs answered.", m.rpcs.load());
  counter(out, "cobble_scheduler_rpcs_refused_total",
          "Scheduler RPCs answered with an error message (bad XML, unknown account, low disk).",
          m.rpc_refused.load());
  counter(out, "cobble_jobs_sent_total", "Jobs sent to hosts.", m.jobs_sent.load());
  counter(out, "cobble_results_reported_total", "Results reported by hosts (acknowledged).",
          m.results_reported.load());
  m.rpc_latency.render(out, "cobble_scheduler_rpc_seconds", "Scheduler RPC latency.");
  gauge(out, "cobble_scheduler_rpcs_waiting",
        "Scheduler RPCs decided or being decided whose reply waits (for the log to commit).",
        r.rpcs_waiting);
  project_gauges_text(out, r.projects);
  counter(out, "cobble_http_connections_total", "HTTP connections accepted.",
          http.connections.load());
  counter(out, "cobble_http_requests_total", "HTTP requests read.", http.requests.load());
  counter(out, "cobble_http_too_large_total", "Requests refused with 413.",
          http.rejected_too_large.load());
  counter(out, "cobble_http_timeouts_total", "Connections closed by the read timeout.",
          http.timeouts.load());
  counter(out, "cobble_http_refused_busy_total",
          "Connections refused with 503 at server.max_connections.", http.refused_busy.load());
  counter(out, "cobble_http_refused_early_total",
          "Requests refused by their header, before their body was read.",
          http.refused_early.load());
  if (admin) {
    counter(out, "cobble_admin_http_requests_total",
            "HTTP requests read by the admin API's listener.", admin->requests.load());
    counter(out, "cobble_admin_http_refused_early_total",
            "Admin API requests refused by their header (no or a wrong token).",
            admin->refused_early.load());
  }
  gauge(out, "cobble_log_last_seq", "Sequence number of the newest durable event.", log.last_seq);
  counter(out, "cobble_log_events_total", "Events appended.", log.events);
  counter(out, "cobble_log_commits_total", "Group commits (one WriteBatch each).", log.batches);
  counter(out, "cobble_log_syncs_total", "Commits written with fsync.", log.syncs);
  counter(out, "cobble_log_bytes_total", "Bytes of events appended.", log.bytes);
  counter(out, "cobble_log_snapshots_total", "Snapshots written.", log.snapshots);
  gauge(out, "cobble_log_last_snapshot_seq", "Seq of the newest snapshot.", log.last_snapshot_seq);
  out += "# HELP cobble_log_commit_batch_events Events per group commit.\n"
         "# TYPE cobble_log_commit_batch_events histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < log.batch_size_buckets.size(); ++i) {
    cumulative += log.batch_size_buckets[i];
    out += fmt::format("cobble_log_commit_batch_events_bucket{{le=\"{}\"}} {}\n",
                       std::uint64_t{1} << i, cumulative);
  }
  out += fmt::format("cobble_log_commit_batch_events_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("cobble_log_commit_batch_events_count {}\n", cumulative);
  out += fmt::format("cobble_log_commit_batch_events_sum {}\n", log.events);
  return out;
}

} // namespace cobble::net
