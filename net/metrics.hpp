#pragma once

/// Counters of the edge, rendered with the log's counters as Prometheus text on /metrics.

#include "actors/messages.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cobble::net {

struct server_stats;

/// A latency histogram with fixed buckets (seconds), lock-free.
class latency_histogram {
public:
  /// Upper bounds of the buckets, in seconds; a last +Inf bucket follows.
  static constexpr std::array<double, 12> bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                    0.05,   0.1,   0.25,   0.5,   1,    5};
  void observe(std::chrono::steady_clock::duration d);
  /// Appends the histogram in Prometheus text format.
  void render(std::string& out, const char* name, const char* help) const;

private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> counts_{};
  std::atomic<std::uint64_t> sum_us_{0};
  std::atomic<std::uint64_t> count_{0};
};

/// Events per second over the past minute, lock-free: a counter for each second of a ring.
/// Two threads starting the same second at once may lose a count: a figure to show, not to
/// account with.
class rate_meter {
public:
  /// One event in Unix second `second`.
  void add(std::int64_t second);
  /// Events per second over the `window` whole seconds before `now_second` (at most 60).
  double per_second(std::int64_t now_second, int window = 60) const;

private:
  static constexpr std::size_t slots = 64;
  std::array<std::atomic<std::int64_t>, slots> second_{};
  std::array<std::atomic<std::uint64_t>, slots> count_{};
};

/// What the edge counts.
struct edge_metrics {
  /// One scheduler RPC answered (counted and timed for the rate).
  void rpc_answered();

  std::atomic<std::uint64_t> rpcs{0};        ///< Scheduler RPCs answered.
  rate_meter rpc_rate;                       ///< Their rate over the past minute.
  std::atomic<std::uint64_t> rpc_refused{0}; ///< Answered with an error message.
  std::atomic<std::uint64_t> jobs_sent{0};
  std::atomic<std::uint64_t> results_reported{0};
  latency_histogram rpc_latency;
};

/// What /metrics reads from the actors and the RPC port at one scrape.
struct actor_readings {
  log_status log;
  std::vector<project_gauges> projects;
  std::size_t rpcs_waiting = 0; ///< Scheduler RPCs parked for their reply.
};

/// Renders every counter and gauge as Prometheus text: `http` is the public listener's,
/// `admin` (when not null) the admin API listener's.
std::string render_metrics(const edge_metrics& m, const server_stats& http, const actor_readings& r,
                           const server_stats* admin = nullptr);

} // namespace cobble::net
