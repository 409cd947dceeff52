#pragma once

/// The state a work_sequence actor owns, and its pure `apply` function (see docs/sequences.md).
///
/// A sequence is one or two replica chains of workunits, one result each, kept on one host
/// per chain. The state follows the sequence's own events and the events of its workunits
/// (dispatch, report, timeout, validation) that the project forwards; `apply` reads nothing
/// but its arguments.

#include "actors/events.hpp"
#include "actors/records.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cobble {

/// Where the one result of a sequence element stands.
enum class seq_element_status : std::uint8_t {
  unsent = 0,
  in_progress = 1,
  success = 2,
  error = 3,     ///< The host reported a failure.
  timed_out = 4, ///< The deadline passed without a report.
  cancelled = 5, ///< The sequence ended or the element fell into a dead branch first.
};

const char* to_string(seq_element_status x);

/// One workunit of a chain (or of a dead branch).
struct seq_element_state {
  id_type wu = 0;
  std::string name;
  std::uint32_t position = 0;
  seq_element_kind kind = seq_element_kind::heartbeat;
  seq_element_status status = seq_element_status::unsent;
  id_type host = 0; ///< Where its result was sent.
  time_us sent = 0;
  time_us deadline = 0;
  time_us received = 0;
  double elapsed = 0;
  std::vector<file_rec> outputs; ///< As reported by the client (not trusted).
  bool valid = false;            ///< The project validated its workunit (canonical result).
  /// The server's digests of the outputs that finished uploading, by output index (empty
  /// name: not arrived); compared across replicas.
  std::vector<file_rec> arrived{};
  friend bool operator==(const seq_element_state&, const seq_element_state&) = default;
};

template <class F>
void inspect_fields(F& f, seq_element_state& x) {
  f(x.wu, x.name, x.position, x.kind, x.status, x.host, x.sent, x.deadline, x.received, x.elapsed,
    x.outputs, x.valid, x.arrived);
}

/// One replica chain: its assignment, its live elements and the two links of the design.
struct seq_replica {
  id_type host = 0;                     ///< Assigned host; 0: unassigned.
  time_us assigned = 0;                 ///< When it was assigned.
  std::vector<seq_element_state> chain; ///< chain[p - 1] is position p.
  std::uint32_t first_unvalidated = 1;  ///< First position without a validated result.
  std::uint32_t first_undispatched = 1; ///< First position not yet sent to the host.
  std::uint32_t saved = 0; ///< Position of the restart point whose state files are kept.
  friend bool operator==(const seq_replica&, const seq_replica&) = default;
};

template <class F>
void inspect_fields(F& f, seq_replica& x) {
  f(x.host, x.assigned, x.chain, x.first_unvalidated, x.first_undispatched, x.saved);
}

/// Elements abandoned by a relocation or a reassignment; they stay for the record.
struct seq_branch {
  std::uint32_t number = 0; ///< 1, 2, ... in the order they were made.
  std::uint8_t replica = 0;
  id_type host = 0; ///< The host the chain was taken from.
  time_us time = 0;
  std::string reason;
  std::string by;
  std::uint32_t restart = 0; ///< The chain continued after this position (0: from the start).
  std::vector<seq_element_state> elements;
  friend bool operator==(const seq_branch&, const seq_branch&) = default;
};

template <class F>
void inspect_fields(F& f, seq_branch& x) {
  f(x.number, x.replica, x.host, x.time, x.reason, x.by, x.restart, x.elements);
}

/// Comparison of corresponding elements of a replicated sequence.
enum class seq_check : std::uint8_t { pending = 0, agree = 1, disagree = 2 };

const char* to_string(seq_check x);

/// Everything a work_sequence actor owns. The head workunit of the design is the first
/// element of replica 0; it carries max_result_time and the links.
struct sequence_state {
  id_type id = 0;
  std::string name;
  std::uint32_t app = 0;
  double max_result_time = 0;
  bool accept_all = false;
  wu_params params;
  std::string created_by;
  time_us created = 0;
  bool ended = false;
  time_us ended_at = 0;
  std::string end_reason;
  std::string ended_by;
  std::vector<seq_replica> replicas;
  std::vector<seq_branch> dead_branches;
  std::vector<seq_check> checks; ///< Replicated sequences: per position (index p - 1).
  std::uint32_t wus_made = 0;    ///< Workunits created so far (ids and names are unique).
  friend bool operator==(const sequence_state&, const sequence_state&) = default;

  /// Number of positions (the same on every replica).
  std::uint32_t length() const;
  /// The element of a workunit in a chain or a dead branch, or null.
  const seq_element_state* element(id_type wu) const;
  seq_element_state* element(id_type wu);
  /// The replica assigned to `host`, or -1.
  int replica_of(id_type host) const;
};

template <class F>
void inspect_fields(F& f, sequence_state& x) {
  f(x.id, x.name, x.app, x.max_result_time, x.accept_all, x.params, x.created_by, x.created,
    x.ended, x.ended_at, x.end_reason, x.ended_by, x.replicas, x.dead_branches, x.checks,
    x.wus_made);
}

/// Advances a sequence by one event: its own events, and the dispatches, reports, timeouts
/// and validations of its workunits. Other events leave it unchanged.
void apply(sequence_state& s, const event& e);

/// The last position p of a replica chain such that p uploaded full state that was validated
/// and positions 1..p all succeeded: where the chain continues after a relocation (0: from
/// the start).
std::uint32_t restart_position(const seq_replica& r);

/// One state file of a full state upload, as a relocated chain downloads it.
struct staged_state_file {
  std::string output;    ///< The uploaded output ("<result>_<i>").
  file_rec staged;       ///< In the download area: name "in_<md5>", its md5 and size.
  std::string open_name; ///< The app's open name of output i.
};

/// The state files of a result: every output "<result>_<i>" with a well-formed md5 and an open
/// name in `output_names`, as the server received them (`arrived`, its own digests), or as
/// the client reported them (`reported`) for a result of a log from before the server kept
/// digests (nothing arrived). The same rule for the sequence (which hands them to a relocated
/// chain) and the project (which keeps and deletes them).
std::vector<staged_state_file>
state_files_of(const std::vector<file_rec>& reported, const std::vector<file_rec>& arrived,
               const std::string& result_name, const std::vector<std::string>& output_names);

} // namespace cobble
