#pragma once

/// The one type-ID block of Cobble: every atom, and the in-process message types.
///
/// Message payloads that are large or only live inside one process travel as shared pointers
/// to const (no copies, no serialization). Scaling out across nodes (planned, see
/// ARCHITECTURE.md) will give them inspect() overloads and register them here.

#include "actors/events.hpp"
#include "actors/rpc.hpp"
#include "actors/rpc_port.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace cobble {

/// Events in seq order (a durable batch, or events to append).
using event_batch_ptr = std::shared_ptr<const std::vector<event>>;
using sched_request_ptr = std::shared_ptr<const sched_request>;
using sched_reply_ptr = std::shared_ptr<const sched_reply>;

struct work_batch;
struct work_created;
struct project_summary;
struct project_gauges;
struct workunit_view;
struct host_view;
struct log_status;
struct app_version_state;
struct plan_class_scales;
struct credit_export;
struct account_query;
struct account_view;
struct account_spec;
struct account_update;
struct team_spec;
struct team_query;
struct team_view;

using work_batch_ptr = std::shared_ptr<const work_batch>;
using work_created_ptr = std::shared_ptr<const work_created>;
using project_summary_ptr = std::shared_ptr<const project_summary>;
using project_gauges_ptr = std::shared_ptr<const project_gauges>;
using workunit_view_ptr = std::shared_ptr<const workunit_view>;
using workunit_list_ptr = std::shared_ptr<const std::vector<workunit_view>>;
using host_view_ptr = std::shared_ptr<const host_view>;
using host_list_ptr = std::shared_ptr<const std::vector<host_view>>;
using log_status_ptr = std::shared_ptr<const log_status>;
struct user_rec;
struct wu_files;
using wu_files_ptr = std::shared_ptr<const wu_files>;
struct app_rec;
struct sequence_state;
struct sequence_spec;
struct seq_query;
struct seq_answer;
struct seq_command;
struct app_change;
struct code_sign_key_rec;
struct sequence_view;
using sequence_state_ptr = std::shared_ptr<const sequence_state>;
using sequence_spec_ptr = std::shared_ptr<const sequence_spec>;
using seq_query_ptr = std::shared_ptr<const seq_query>;
using seq_answer_ptr = std::shared_ptr<const seq_answer>;
using seq_command_ptr = std::shared_ptr<const seq_command>;
using sequence_view_ptr = std::shared_ptr<const sequence_view>;
using sequence_list_ptr = std::shared_ptr<const std::vector<sequence_view>>;
using app_list_ptr = std::shared_ptr<const std::vector<app_rec>>;
using key_list_ptr = std::shared_ptr<const std::vector<code_sign_key_rec>>;
using user_list_ptr = std::shared_ptr<const std::vector<user_rec>>;
using account_query_ptr = std::shared_ptr<const account_query>;
using account_view_ptr = std::shared_ptr<const account_view>;
using account_spec_ptr = std::shared_ptr<const account_spec>;
using account_update_ptr = std::shared_ptr<const account_update>;
using team_spec_ptr = std::shared_ptr<const team_spec>;
using team_query_ptr = std::shared_ptr<const team_query>;
using team_list_ptr = std::shared_ptr<const std::vector<team_view>>;
struct top_query;
struct server_status_view;
using server_status_ptr = std::shared_ptr<const server_status_view>;
struct top_page;
using top_query_ptr = std::shared_ptr<const top_query>;
using top_page_ptr = std::shared_ptr<const top_page>;
struct listing_query;
struct listing_page;
using listing_query_ptr = std::shared_ptr<const listing_query>;
using listing_page_ptr = std::shared_ptr<const listing_page>;
using result_refs_ptr = std::shared_ptr<const std::vector<result_ref>>;
using names_ptr = std::shared_ptr<const std::vector<std::string>>;
using app_version_state_ptr = std::shared_ptr<const app_version_state>;
using plan_class_scales_ptr = std::shared_ptr<const plan_class_scales>;
using credit_export_ptr = std::shared_ptr<const credit_export>;
using credit_import_ptr = std::shared_ptr<const ev::credit_imported>;
using app_change_ptr = std::shared_ptr<const app_change>;
/// A scheduler RPC's answer, handed to the RPC port once durable (actors/rpc_port.hpp).
using rpc_answer_ptr = std::shared_ptr<const rpc_answer>;
struct project_world;
using project_world_ptr = std::shared_ptr<const project_world>;

} // namespace cobble

CAF_BEGIN_TYPE_ID_BLOCK(cobble, caf::first_custom_type_id)
  CAF_ADD_ATOM(cobble, cobble::atom, append, "append")
  CAF_ADD_ATOM(cobble, cobble::atom, sync, "sync")
  CAF_ADD_ATOM(cobble, cobble::atom, deliver, "deliver")
  CAF_ADD_ATOM(cobble, cobble::atom, flush, "flush")
  CAF_ADD_ATOM(cobble, cobble::atom, snapshot, "snapshot")
  CAF_ADD_ATOM(cobble, cobble::atom, status, "status")
  CAF_ADD_ATOM(cobble, cobble::atom, rpc, "rpc")
  CAF_ADD_ATOM(cobble, cobble::atom, create, "create")
  CAF_ADD_ATOM(cobble, cobble::atom, workunit, "workunit")
  CAF_ADD_ATOM(cobble, cobble::atom, list, "list")
  CAF_ADD_ATOM(cobble, cobble::atom, host, "host")
  CAF_ADD_ATOM(cobble, cobble::atom, tick, "tick")
  CAF_ADD_ATOM(cobble, cobble::atom, state, "state")
  CAF_ADD_ATOM(cobble, cobble::atom, start, "start")
  CAF_ADD_ATOM(cobble, cobble::atom, user, "user")
  CAF_ADD_ATOM(cobble, cobble::atom, upload, "upload")
  CAF_ADD_ATOM(cobble, cobble::atom, assimilate, "assimilate")
  CAF_ADD_ATOM(cobble, cobble::atom, cleanup, "cleanup")
  CAF_ADD_ATOM(cobble, cobble::atom, app, "app")
  CAF_ADD_ATOM(cobble, cobble::atom, sequence, "sequence")
  CAF_ADD_ATOM(cobble, cobble::atom, command, "command")
  CAF_ADD_ATOM(cobble, cobble::atom, normalize, "normalize")
  CAF_ADD_ATOM(cobble, cobble::atom, credit, "credit")
  CAF_ADD_ATOM(cobble, cobble::atom, key, "key")
  CAF_ADD_ATOM(cobble, cobble::atom, team, "team")
  CAF_ADD_ATOM(cobble, cobble::atom, cancel, "cancel")
CAF_END_TYPE_ID_BLOCK(cobble)

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::event_batch_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::sched_request_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::sched_reply_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::work_batch_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::work_created_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::project_summary_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::project_gauges_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::workunit_view_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::workunit_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::host_view_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::host_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::log_status_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::user_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::account_query_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::account_view_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::account_spec_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::account_update_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::team_spec_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::team_query_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::team_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::top_query_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::server_status_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::top_page_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::listing_query_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::listing_page_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::result_refs_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::names_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::wu_files_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::app_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::key_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::sequence_state_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::sequence_spec_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::seq_query_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::seq_answer_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::seq_command_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::sequence_view_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::sequence_list_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::app_version_state_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::plan_class_scales_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::credit_export_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::credit_import_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::app_change_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::rpc_answer_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cobble::project_world_ptr)
