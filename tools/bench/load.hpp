#pragma once

/// cobble-bench's load generator: many keep-alive HTTP connections (Boost.Beast on Asio)
/// that play a fleet of simulated BOINC 7.20 hosts against a running cobbled. A host's first
/// RPC registers it (hostid 0); every later RPC reports the results it was sent last time,
/// as succeeded with their output files' size and md5 (the way a client reports after the
/// uploads), and asks for more work. The same connections can instead GET /healthz, which
/// measures what this machine's HTTP path can do at all (the ceiling), or the volunteer
/// site's pages.

#include "ledger.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::bench {

/// What the generator reads from a scheduler reply.
struct reply_summary {
  std::optional<id_type> hostid;
  std::vector<std::string> acks;
  struct job {
    std::string name;
    std::vector<std::string> outputs; ///< Output file names (the result's file_refs).
  };
  std::vector<job> jobs;
  bool message = false; ///< The reply carries a <message> (an error or a notice).
};

/// A fast scan of a scheduler reply (the generator's own, not the server's parser).
reply_summary scan_reply(std::string_view xml);

/// A fleet of simulated hosts, kept across runs (and server restarts).
struct sim_host {
  id_type id = 0; ///< 0 until the server handed out an id.
  unsigned seqno = 0;
  std::vector<reply_summary::job> held; ///< Sent to this host; reported at its next RPC.
};

struct load_options {
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;
  std::string project = "demo";
  std::string account_key;
  /// When set, host i belongs to account_keys[i % size] (a fleet spread over accounts, as
  /// the per-account cap on new hosts a day asks); else every host to `account_key`.
  std::vector<std::string> account_keys;
  std::size_t connections = 64;
  unsigned threads = 1;
  double warmup_seconds = 2; ///< At least this long, and until every host is registered.
  double seconds = 10;       ///< The measured window; 0: until `stop` or every connection failed.
  bool healthz = false;      ///< GET /healthz instead of scheduler RPCs.
  /// When set, GET these targets (each connection cycles through them from its own start)
  /// with `cookie` instead of scheduler RPCs: the volunteer site's pages.
  std::vector<std::string> pages{};
  std::string cookie{}; ///< The Cookie header of page requests.
  /// Page requests per second over all connections (each connection paced at its share);
  /// 0: as fast as the answers come.
  double pages_per_second = 0;
  int jobs_per_rpc = 1;      ///< CPU instances asked for per RPC.
  double job_seconds = 3600; ///< Estimated runtime of one job (rsc_fpops_est / 1e9 FLOPS).
  /// A connection that fails ends instead of reconnecting (the crash benchmark: the server
  /// was killed).
  bool end_on_error = false;
  std::atomic<bool>* stop = nullptr;
};

struct load_result {
  double seconds = 0; ///< Length of the measured window.
  std::uint64_t rpcs = 0, jobs = 0, reports = 0;
  std::uint64_t no_work = 0;  ///< Replies without a job (the queue ran dry?).
  std::uint64_t messages = 0; ///< Replies with a <message>.
  std::uint64_t errors = 0;   ///< Failed connections or non-200 answers (whole run).
  std::uint64_t all_rpcs = 0; ///< Whole run, warm-up included.
  double p50_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0;
  double rate() const { return seconds > 0 ? static_cast<double>(rpcs) / seconds : 0; }
};

class generator {
public:
  explicit generator(std::size_t hosts);
  /// Runs one load phase; the fleet and the ledger carry over to the next call.
  load_result run(const load_options& opts);
  const ledger& acknowledged() const { return ledger_; }
  const std::vector<sim_host>& fleet() const { return hosts_; }

private:
  std::vector<sim_host> hosts_;
  ledger ledger_;
};

/// The scheduler request of a 7.20.5 client (the test fixture's shape) for one host. Each
/// held job is reported as run for `job_seconds` (the estimate it was sent with), so the
/// server's runtime estimates (ETmean(H,V)) stay put and a steady-state host keeps asking
/// for, and getting, the same number of jobs per RPC.
std::string make_request(const std::string& authenticator, const sim_host& h, std::size_t index,
                         double req_secs, double req_instances, double job_seconds);

} // namespace cobble::bench
