#pragma once

/// cobble-bench's attackers (docs/security.md, "The hostile-load benchmark"): the hostile
/// clients of issue 19 run against a cobbled while the honest load generator measures it.
/// Each kind runs on its own thread with one blocking connection at a time and a pause
/// between requests, so that the attack is a steady stream, not whatever the generator's
/// 2 cores could push:
///   - registrar: one account registers a new host with every RPC (capped per day);
///   - hoarder: one host claiming 1,024 CPUs asks for a year of work with every RPC;
///   - uploader: uploads that announce 200 MiB under a forged signature (refused from the
///     header, before the body);
///   - poisoner: scheduler requests with NaN speeds and invalid UTF-8 in host strings;
///   - idle: connections that send half a request header and stall (the slow-loris attack),
///     reopened when the server closes them.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace cobble::bench {

struct attack_options {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;
  std::string project = "demo";
  std::string account_key; ///< The attackers' account (not the honest hosts').
  double pause_ms = 2;     ///< Between two requests of one attacker.
  int idle_connections = 200;
};

/// What the attackers did and what they got back.
struct attack_counts {
  std::uint64_t registrations = 0, hosts_registered = 0;
  std::uint64_t hoard_rpcs = 0, jobs_hoarded = 0;
  std::uint64_t uploads = 0, uploads_refused = 0;
  std::uint64_t poisoned = 0, poisoned_refused = 0;
  std::uint64_t idle_opened = 0;
  std::uint64_t errors = 0; ///< Connections that failed (the server closed, reset, timed out).
  std::uint64_t requests() const { return registrations + hoard_rpcs + uploads + poisoned; }
};

/// The attackers, running from start() until stop().
class attack {
public:
  explicit attack(attack_options opts);
  ~attack();
  attack(const attack&) = delete;
  attack& operator=(const attack&) = delete;

  void start();
  /// Stops every attacker and returns the counts.
  attack_counts stop();

private:
  struct counters {
    std::atomic<std::uint64_t> registrations{0}, hosts_registered{0}, hoard_rpcs{0},
      jobs_hoarded{0}, uploads{0}, uploads_refused{0}, poisoned{0}, poisoned_refused{0},
      idle_opened{0}, errors{0};
  };
  void registrar();
  void hoarder();
  void uploader();
  void poisoner();
  void idler();
  void pause() const;

  attack_options opts_;
  counters n_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

} // namespace cobble::bench
