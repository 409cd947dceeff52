#pragma once

/// cobble-bench: what the load generator saw acknowledged (host registrations, dispatched
/// jobs, reported results), and the crash check: every acknowledged change is in the event
/// log, and no result was dispatched twice.

#include "actors/types.hpp"
#include "storage/event_store.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cobble::bench {

/// The changes the server acknowledged to the generator (a reply arrived: per the protocol,
/// everything in it is durable).
struct ledger {
  std::unordered_set<id_type> hosts;                   ///< Host ids handed out.
  std::unordered_map<std::string, id_type> dispatched; ///< Result name -> host it was sent to.
  std::unordered_map<std::string, id_type> reported;   ///< Result name -> host that reported it.
  /// Result names that came in a reply a second time (to the same or another host).
  std::vector<std::string> repeated_dispatches;

  void record_host(id_type id) { hosts.insert(id); }
  void record_dispatch(const std::string& result, id_type host);
  void record_report(const std::string& result, id_type host) { reported.emplace(result, host); }
  /// Adds another ledger (of another generator thread or run).
  void merge(const ledger& other);
};

/// What the log holds about one project, for the check.
struct log_facts {
  std::uint64_t events = 0;
  std::unordered_set<id_type> hosts;
  std::unordered_map<std::string, id_type> wu_by_name;
  /// Every host a result was dispatched to, in log order (more than one: a double dispatch).
  std::map<result_ref, std::vector<id_type>> dispatches;
  std::map<result_ref, std::vector<id_type>> reports;
};

/// Reads the whole log (every event of project `project`). Throws std::runtime_error on an
/// event that does not decode.
log_facts collect(const storage::event_store& store, std::uint16_t project = 0);

/// The outcome of one check.
struct check_result {
  std::uint64_t events = 0;
  std::uint64_t hosts_checked = 0, hosts_missing = 0;
  std::uint64_t dispatches_checked = 0, dispatches_missing = 0;
  std::uint64_t reports_checked = 0, reports_missing = 0;
  std::uint64_t log_dispatches = 0;      ///< result_dispatched events in the log.
  std::uint64_t double_dispatches = 0;   ///< Results with more than one dispatch in the log.
  std::uint64_t repeated_dispatches = 0; ///< Result names acknowledged twice to the generator.
  std::vector<std::string> problems;     ///< The first few, in words.
  bool ok() const {
    return hosts_missing == 0 && dispatches_missing == 0 && reports_missing == 0
           && double_dispatches == 0 && repeated_dispatches == 0;
  }
};

/// Checks the ledger against the log's facts.
check_result check(const ledger& l, const log_facts& facts);

} // namespace cobble::bench
