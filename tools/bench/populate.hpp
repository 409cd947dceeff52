#pragma once

/// cobble-bench's scale generator: fills a data directory with registered hosts and queued
/// work through the real event path. The project's own decision code (project_logic:
/// configure, register_host, create_work) makes and applies the events, the event codec
/// encodes them, and the event store appends them in group commits of `batch` events, as the
/// log actor does. The log is the demo project's, so `cobbled --data-dir DIR` serves it.

#include <cstdint>
#include <filesystem>
#include <functional>

namespace cobble::bench {

struct populate_options {
  std::filesystem::path data_dir;
  std::uint64_t hosts = 1'000'000;
  std::uint64_t jobs = 10'000'000; ///< Queued results (replicas); workunits = jobs / replicas.
  std::uint64_t batch = 10'000;    ///< Events per append.
  double job_seconds = 3600;       ///< rsc_fpops_est = job_seconds × 1e9.
};

struct populate_result {
  std::uint64_t events = 0, hosts = 0, workunits = 0, jobs = 0;
  double seconds = 0;
  std::uint64_t log_bytes = 0; ///< Size of <data_dir>/log afterwards.
};

/// Fails (std::runtime_error) when the data directory already holds a log.
populate_result populate(const populate_options& opts,
                         const std::function<void(const populate_result&)>& progress = {});

} // namespace cobble::bench
