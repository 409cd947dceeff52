#pragma once

/// JSON views of Cobble's state for the admin API and the `cobble` CLI (see docs/admin-api.md).
///
/// One place turns states and admin views into JSON and admin request bodies into plain
/// structs, so that the server's answers and the CLI's offline output (`cobble log replay`)
/// look the same. Times are Unix seconds (double); a time that was never set is null.

#include "actors/messages.hpp"
#include "actors/state.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cobble::net {

/// A time in Unix seconds, or null when `t` is 0 (never happened).
nlohmann::json time_json(time_us t);

/// The status of one project: counts, counters, apps with their unsent results.
nlohmann::json to_json(const project_summary& s);

/// One result of a workunit (`index` is its replica number; `canonical` marks the canonical
/// one): state, outcome, validation, host, times, the report and its outputs.
nlohmann::json result_json(const workunit_rec& wu, std::uint32_t index, const std::string& name);

/// A workunit with every result (`GET /api/projects/P/workunits/W`).
nlohmann::json to_json(const workunit_view& v);

/// A workunit as one row of a list: its parameters and per-state result counts, no results.
nlohmann::json to_json_brief(const workunit_view& v);

/// The workunit view of one workunit of a project's state (names as the actor gives them).
workunit_view view_of(const project_state& s, const workunit_rec& wu);

/// What a host told the server about itself.
nlohmann::json to_json(const host_info_rec& info);

/// A host actor's state: description, results in progress, host_app_version statistics.
nlohmann::json to_json(const host_state& s);

/// A host: registration, plus its state when the view has one.
nlohmann::json to_json(const host_view& v);

/// A user account, authenticator included (the admin API is for operators only).
nlohmann::json to_json(const user_rec& u);
nlohmann::json to_json(const team_rec& t);

/// An app with its replication settings and versions (anonymous ids shown as -2, -3, ...).
nlohmann::json to_json(const app_rec& a);

/// The project's `n`-th code-signing key (from 1): its text, the signature that vouches for
/// it (empty for the first key) and when it was added.
nlohmann::json to_json(const code_sign_key_rec& k, std::size_t n);

/// An app version with its files (and their code signatures with `signatures`).
nlohmann::json to_json(const app_version_rec& v, bool signatures);

/// Statistics of an app version.
nlohmann::json to_json(const app_version_state& s);

/// Either a value or a message for a 400 answer.
template <class T>
struct parsed {
  std::optional<T> value;
  std::string error; ///< Set when `value` is empty, e.g. "unknown field 'colour' in item 0".
};

/// Parses an admin request body as JSON. Every failure of the JSON parser is an error
/// "the body is not valid JSON: ...": malformed text, and numbers beyond a double such as
/// `1e400` (which nlohmann reports as out_of_range, not as a parse_error). The message is
/// UTF-8 (nlohmann quotes the bytes it last read; invalid ones are replaced) and at most
/// 512 bytes long.
parsed<nlohmann::json> parse_json_body(std::string_view body);

/// A project's credit export (GET /api/projects/{p}/credit): its app versions' app, platform,
/// plan class, resource, recent average credit and Scale(V), what it imported, min_avg_pfc.
nlohmann::json to_json(const credit_export& x);

/// The aggregator's per-plan-class factors (GET /api/credit).
nlohmann::json to_json(const plan_class_scales& x);

/// Parses `POST .../credit/import`: `{"source": NAME, "versions": [record...]}`, where the
/// records are those of another server's GET .../credit (unknown fields refused).
parsed<ev::credit_imported> parse_credit_import(const nlohmann::json& body);

/// Parses the body of `POST .../workunits`: one work spec object, or
/// `{"items": [spec...], "submitter": "..."}`. Rejects unknown fields, wrong types and a `count`
/// together with a `name`; expands `count` into that many specs with generated names.
/// `default_submitter` is used when the body names none.
parsed<work_batch>
parse_work_batch(const nlohmann::json& body, const std::string& default_submitter = "admin");

/// How many workunits the body of `POST .../workunits` asks for (its specs, with their
/// `count`s), read without expanding anything: checked against server.max_batch_items before
/// the body is parsed. Specs the parser would refuse count as it reads them (a bad `count` as 1).
std::uint64_t work_count(const nlohmann::json& body);

/// Parses the body of `POST .../users`: `{"name": "...", "email": "..."}` (email optional).
parsed<std::pair<std::string, std::string>> parse_new_user(const nlohmann::json& body);

/// The work spec as JSON (what the CLI sends; inverse of one item of parse_work_batch).
nlohmann::json to_json(const work_spec& w);

// -- work sequences --

/// A work sequence (`GET .../sequences/S`): its chains with every element, the dead
/// branches, the element parameters.
nlohmann::json to_json(const sequence_view& v);

/// A sequence as one row of a list: its chains' assignments and links, no elements.
nlohmann::json to_json_brief(const sequence_view& v);

/// Parses the body of `POST .../sequences`; `by` defaults to `default_by`.
parsed<sequence_spec>
parse_sequence_spec(const nlohmann::json& body, const std::string& default_by = "admin");

/// Parses the body of `POST .../sequences/S/{extend,end,reassign}` (`what` from the path;
/// reassign with `"unassign": true` becomes unassign). A null body is an empty object.
parsed<seq_command> parse_seq_command(const nlohmann::json& body, seq_command::op what,
                                      const std::string& default_by = "admin");

/// The body of `POST .../workunits/W/cancel`.
struct work_cancel {
  std::string reason; ///< Empty: "by the operator".
  std::string by;
};

/// Parses the body of `POST .../workunits/W/cancel`: {"reason", "by"}, both optional; a null
/// body is an empty object.
parsed<work_cancel>
parse_work_cancel(const nlohmann::json& body, const std::string& default_by = "admin");

/// The sequence spec as JSON (what the CLI sends).
nlohmann::json to_json(const sequence_spec& s);

} // namespace cobble::net
