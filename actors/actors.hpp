#pragma once

/// Every typed actor interface of Cobble, one alias per component, each signature commented.

#include "actors/atoms.hpp"

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>

namespace cobble {

/// Receives events decided elsewhere that change its state (routed by owners_of).
using subscriber_actor = caf::typed_actor<
  // A batch of events in seq order.
  caf::reacts_to<atom::deliver, event_batch_ptr>>;

/// The event log: group commit into RocksDB, answers once durable, snapshots.
using log_actor = caf::typed_actor<
  // Appends events (seq 0) decided and already applied by the sender; fire and forget.
  // A failed append stops the process (fail-stop).
  caf::reacts_to<atom::append, event_batch_ptr>,
  // Appends the events (possibly none) of a scheduler RPC and hands its answer to the RPC
  // port (actors/rpc_port.hpp) once they and every event appended before are durable.
  caf::reacts_to<atom::append, event_batch_ptr, rpc_answer_ptr>,
  // Answers with the last seq once every event appended before this message is durable.
  caf::replies_to<atom::sync>::with<std::uint64_t>,
  // Takes a snapshot now; answers with its seq.
  caf::replies_to<atom::snapshot>::with<std::uint64_t>,
  // Counters for /metrics.
  caf::replies_to<atom::status>::with<log_status_ptr>,
  // Internal: commits what is pending (the log sends it to itself; appends that arrive
  // meanwhile join the next commit).
  caf::reacts_to<atom::flush>>;

/// One work sequence: its replica chains, their assignments and links, its dead branches.
using work_sequence_actor = caf::typed_actor<
  // The events of the sequence's workunits (dispatches, reports, timeouts, validations) as
  // the project applied them.
  caf::reacts_to<atom::deliver, event_batch_ptr>,
  // A host's scheduler RPC: whether the host holds the sequence (assigning it when asked
  // and the host is fast enough) and which elements to send it. The answer carries the
  // events the sequence decided (already appended), for the project to apply.
  caf::replies_to<atom::rpc, seq_query_ptr>::with<seq_answer_ptr>,
  // An operator's or the result handler's command (extend, end, reassign, unassign); the
  // answer carries the events and the state after them.
  caf::replies_to<atom::command, seq_command_ptr>::with<seq_answer_ptr>,
  // A copy of the state.
  caf::replies_to<atom::state>::with<sequence_state_ptr>,
  // Relocation check: sent by the project every sequence_check_interval, after the deadline
  // sweep it appended and delivered (so the sequence has seen the log's timeouts).
  caf::reacts_to<atom::tick>>;

/// One project: accounts, apps, hosts, workunits and results, job cache, validation,
/// assimilation. It holds every host's state and decides for its hosts too (host_logic).
using project_actor = subscriber_actor::extend<
  // A scheduler RPC from the edge: authenticates, registers or finds the host, handles its
  // reports and work request, and appends the RPC's events with its answer to the log, which
  // hands the answer to the RPC port once they are durable (the only path of an RPC).
  caf::reacts_to<atom::rpc, sched_request_ptr, rpc_token>,
  // Creates a batch of workunits (admin API); answers when durable.
  caf::replies_to<atom::create, work_batch_ptr>::with<work_created_ptr>,
  // Creates a user account (admin API); answers with its id and authenticator when durable.
  caf::replies_to<atom::create, std::string, std::string>::with<id_type, std::string>,
  // The project's status.
  caf::replies_to<atom::status>::with<project_summary_ptr>,
  // What it holds in memory (/metrics): hosts and their estimated bytes, workunits.
  caf::replies_to<atom::status, atom::host>::with<project_gauges_ptr>,
  // One workunit by name or numeric id.
  caf::replies_to<atom::workunit, std::string>::with<workunit_view_ptr>,
  // The names of results ("wu_a_1"), in the order asked (the operator pages' stories).
  caf::replies_to<atom::workunit, result_refs_ptr>::with<names_ptr>,
  // Workunits by id, from offset, at most limit.
  caf::replies_to<atom::list, atom::workunit, std::uint64_t, std::uint64_t>::with<workunit_list_ptr>,
  // The same, only workunits in the state named (to_string(wu_state)); an invalid_argument
  // error for another name.
  caf::replies_to<atom::list, atom::workunit, std::string, std::uint64_t,
                  std::uint64_t>::with<workunit_list_ptr>,
  // An operator cancels a workunit (by name or id), with a reason and who did it; answers
  // the workunit as it is then, once the cancellation is durable.
  caf::replies_to<atom::cancel, std::string, std::string, std::string>::with<workunit_view_ptr>,
  // One host with its state.
  caf::replies_to<atom::host, id_type>::with<host_view_ptr>,
  // Hosts by id, from offset, at most limit.
  caf::replies_to<atom::list, atom::host, std::uint64_t, std::uint64_t>::with<host_list_ptr>,
  // May `host` (0: any host) upload output file `name`? Answers the file's max_nbytes, or an
  // error when the file is no output of a result in progress on that host.
  caf::replies_to<atom::upload, std::string, id_type>::with<double>,
  // Output file `name` of a result in progress on `host` is stored whole, with this size and
  // the MD5 the server computed as it wrote it: records it (output_received) and answers true
  // once durable; an error when the file is no output of a result in progress on that host.
  caf::replies_to<atom::upload, std::string, id_type, std::uint64_t, std::string>::with<bool>,
  // The assimilator deleted the files of a finished workunit (and these inputs).
  caf::reacts_to<atom::cleanup, id_type, std::vector<std::string>>,
  // Internal (a timer on the project's clock): the grace period of a sequence element's
  // released state files is over; hand its files to the assimilator for deletion.
  caf::reacts_to<atom::cleanup, id_type>,
  // The apps with their replication settings and versions.
  caf::replies_to<atom::list, atom::app>::with<app_list_ptr>,
  // The project's code-signing public keys, oldest first (the last is the current one).
  caf::replies_to<atom::list, atom::key>::with<key_list_ptr>,
  // Every user account (admin API; includes authenticators).
  caf::replies_to<atom::list, atom::user>::with<user_list_ptr>,
  // One account by e-mail, account key or id, with its team and hosts (web RPCs, the site);
  // an unknown_account error when there is none.
  caf::replies_to<atom::user, account_query_ptr>::with<account_view_ptr>,
  // A volunteer makes an account (create_account.php, the site); answers it when durable. A
  // duplicate error when the e-mail address is taken.
  caf::replies_to<atom::create, account_spec_ptr>::with<account_view_ptr>,
  // A volunteer changes their account (am_set_info.php, the site); answers it when durable.
  caf::replies_to<atom::user, account_update_ptr>::with<account_view_ptr>,
  // A volunteer makes a team and joins it; answers it when durable. A duplicate error when
  // the name is taken (any case).
  caf::replies_to<atom::create, team_spec_ptr>::with<team_list_ptr>,
  // Teams by id or name (team_lookup.php, the site).
  caf::replies_to<atom::team, team_query_ptr>::with<team_list_ptr>,
  // A page of the top users, hosts or teams by credit (the site's top lists).
  caf::replies_to<atom::list, top_query_ptr>::with<top_page_ptr>,
  // A page of workunits or results, filtered, in id order (the operator pages); an
  // invalid_argument error for a state or app that does not exist.
  caf::replies_to<atom::list, listing_query_ptr>::with<listing_page_ptr>,
  // The figures of the project's status page (BOINC's server_status.php): a pass over every
  // workunit, user and host, so callers cache the answer.
  caf::replies_to<atom::status, atom::workunit>::with<server_status_ptr>,
  // Creates a work sequence (admin API); answers with it when durable.
  caf::replies_to<atom::create, sequence_spec_ptr>::with<sequence_view_ptr>,
  // One work sequence by name or numeric id.
  caf::replies_to<atom::sequence, std::string>::with<sequence_view_ptr>,
  // Work sequences by id, from offset, at most limit.
  caf::replies_to<atom::list, atom::sequence, std::uint64_t, std::uint64_t>::with<sequence_list_ptr>,
  // Extends, ends, reassigns or unassigns a sequence (by name or id); answers with it when
  // the events are durable.
  caf::replies_to<atom::command, std::string, seq_command_ptr>::with<sequence_view_ptr>,
  // Periodic deadline sweep.
  caf::reacts_to<atom::tick>,
  // Periodic cross-version normalization (Scale(V), min_avg_pfc(A)); also on demand.
  caf::reacts_to<atom::normalize>,
  // The project's credit data for export (admin API) and the aggregator.
  caf::replies_to<atom::credit>::with<credit_export_ptr>,
  // The aggregator's per-plan-class factors for GPU-only apps.
  caf::reacts_to<atom::credit, plan_class_scales_ptr>,
  // Imports another server's exported credit data; answers the record count when durable.
  caf::replies_to<atom::credit, credit_import_ptr>::with<std::uint64_t>,
  // Adds an app, a version with its signed files, or a code-signing key, or (un)deprecates
  // a version; answers the id and whether anything changed, when durable.
  caf::replies_to<atom::app, app_change_ptr>::with<std::uint32_t, bool>,
  // Every state of the project as the live actors hold it (the project, its hosts, its
  // sequences and app versions): tests compare it with a replay of the log.
  caf::replies_to<atom::state>::with<project_world_ptr>>;

/// The assimilation hook and file janitor (actors/assimilator.hpp).
using assimilator_actor = caf::typed_actor<
  // A workunit finished: copy the canonical outputs now (if assimilated) and stage a
  // sequence element's state files as inputs; unless told to keep them, delete its files
  // after the grace period, then tell the sender (its project).
  caf::reacts_to<atom::assimilate, wu_files_ptr>,
  // Internal: the grace period of a workunit's files is over.
  caf::reacts_to<atom::cleanup, wu_files_ptr, project_actor>>;

/// One app version: statistics over its validated results (PFCmean(V), Scale(V), credit).
using app_version_actor = subscriber_actor::extend<
  // A copy of the statistics.
  caf::replies_to<atom::state>::with<app_version_state_ptr>>;

/// The cross-project aggregator: collects every local project's credit export (with what
/// they imported) and hands per-plan-class scale factors back to them.
using aggregator_actor = caf::typed_actor<
  // Collects now and answers the table (admin API); also sent to every project.
  caf::replies_to<atom::credit>::with<plan_class_scales_ptr>,
  // Internal: periodic collection.
  caf::reacts_to<atom::tick>>;

} // namespace cobble
