#pragma once

/// The read views of a project for the admin API and the CLI: pure functions over the
/// project's state (and its hosts' states), with the names an operator reads.

#include "actors/host_table.hpp"
#include "actors/messages.hpp"
#include "actors/state.hpp"

#include <caf/expected.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cobble {

/// A workunit with its app's name and its results' names.
workunit_view view_of(const project_state& ps, const workunit_rec& wu);

/// The workunit with this name, or with this numeric id; null if none.
const workunit_rec* workunit_by_key(const project_state& ps, const std::string& key);

/// Workunits by id, from `offset`, at most `limit`; with `state`, only those in it (the
/// offset counts those only).
std::vector<workunit_view>
workunit_page(const project_state& ps, std::uint64_t offset, std::uint64_t limit,
              std::optional<wu_state> state = std::nullopt);

/// One host with its state (`state`, when the project holds one); nullopt when no such host
/// is registered.
std::optional<host_view>
host_view_of(const project_state& ps, std::optional<host_state> state, id_type id);

/// Hosts by id (their registrations), from `offset`, at most `limit`.
std::vector<host_view>
host_page(const project_state& ps, std::uint64_t offset, std::uint64_t limit);

/// Hosts and workunits held in memory. The bytes of the live hosts are measured on at most
/// `sample` of them and scaled to all, so that a scrape stays short with a million hosts;
/// the passivated hosts' bytes are the table's exact count.
project_gauges
gauges_of(const project_state& ps, const host_table& hosts, std::size_t sample = 1024);

/// Every user account (with authenticators).
std::vector<user_rec> users_of(const project_state& ps);

/// The account `id` with its team id (actors/accounts.cpp); nullopt when unknown. With `hosts`
/// (the project's host states) also its hosts, newest first (by the project's index of hosts
/// by user), and their last contact; with `detail` as well, its credit per app and the newest
/// max_account_results results its hosts finished.
std::optional<account_view> account_of(const project_state& ps, id_type id,
                                       const host_table* hosts = nullptr, bool detail = false);

/// The account a query names (e-mail in any case, account key or id), or 0.
id_type account_id(const project_state& ps, const account_query& q);

/// The teams a query asks for, by id, with their member counts and credit.
std::vector<team_view> find_teams(const project_state& ps, const team_query& q);

/// A page of the top users, hosts or teams by total or recent credit (actors/top_lists.cpp).
/// Ties go to the lower id. Costs one pass over the rows and a partial sort of the first
/// offset + limit.
top_page top_of(const project_state& ps, const top_query& q);

/// The figures of the project's status page at `now` (actors/server_status.cpp): one pass
/// over the workunits, the users and the hosts.
server_status_view server_status_of(const project_state& ps, const host_table& hosts, time_us now);

/// A page of workunits or results as the query asks (actors/listings.cpp); an
/// invalid_argument error for a state or app that does not exist.
caf::expected<listing_page> listing_of(const project_state& ps, const listing_query& q);

/// Every state a result's words can name (result_words()), for the listing's filter.
const std::vector<std::string_view>& result_states();

/// One result as the listings show it; nullopt when there is no such result.
std::optional<result_listing_row> result_row_of(const project_state& ps, result_ref r);

/// The name of an app, "?" when unknown.
std::string app_name(const project_state& ps, std::uint32_t app);

} // namespace cobble
