/// The operator pages' listings of workunits and results (listing_of): filtered by state, app
/// and host, in id order, a page at a time. The workunit table is ordered by id, so a page
/// starts where the last one ended (no offset to count past) and looks at no more than the
/// query's budget of workunits: a filter few workunits match costs the project actor a
/// bounded pass per page, and the page says where the next one starts.

#include "actors/error.hpp"
#include "actors/project_views.hpp"

#include <caf/error.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <string_view>

namespace cobble {

namespace {

/// Every phrase result_words() has.
constexpr std::array<std::string_view, 10> result_phrases{
  "unsent",     "in progress", "waiting for validation", "valid",
  "invalid",    "aborted",     "client error",           "timed out",
  "not needed", "written off"};

result_listing_row row_of(const project_state& ps, const workunit_rec& wu, std::uint32_t i) {
  return {result_ref{wu.id, i}, ps.result_name({wu.id, i}), wu.name, app_name(ps, wu.app),
          wu.results[i]};
}

} // namespace

const std::vector<std::string_view>& result_states() {
  static const std::vector<std::string_view> all(result_phrases.begin(), result_phrases.end());
  return all;
}

std::optional<result_listing_row> result_row_of(const project_state& ps, result_ref r) {
  const auto* wu = ps.workunit(r.wu);
  if (wu == nullptr || r.index >= wu->results.size())
    return std::nullopt;
  return row_of(ps, *wu, r.index);
}

caf::expected<listing_page> listing_of(const project_state& ps, const listing_query& q) {
  using of = listing_query::of;
  const bool results = q.what == of::results;
  std::optional<wu_state> wu_wanted;
  if (!q.state.empty()) {
    if (results) {
      auto known = std::find(result_phrases.begin(), result_phrases.end(), q.state);
      if (known == result_phrases.end())
        return caf::make_error(ec::invalid_argument, "no result state '" + q.state + "'");
    } else if (wu_wanted = parse_wu_state(q.state); !wu_wanted) {
      return caf::make_error(ec::invalid_argument, "no workunit state '" + q.state + "'");
    }
  }
  std::uint32_t app = 0;
  if (!q.app.empty()) {
    const auto* a = ps.app(std::string_view{q.app});
    if (a == nullptr)
      return caf::make_error(ec::invalid_argument, "no app '" + q.app + "'");
    app = a->id;
  }
  listing_page page;
  for (const auto& a : ps.apps)
    page.apps.push_back(a.name);
  if (q.limit == 0)
    return page;
  id_type last = q.after.wu; // the last workunit looked at
  // A workunit whose results all lie at or before `after` (a page that ended on its budget)
  // is not looked at again.
  constexpr auto all_of_it = std::numeric_limits<std::uint32_t>::max();
  bool from_its_middle = results && q.after.index != all_of_it;
  auto it = ps.workunits.lower_bound(from_its_middle ? q.after.wu : q.after.wu + 1);
  for (; it != ps.workunits.end(); ++it) {
    if (page.looked_at == q.budget) {
      // Every result of the workunits looked at was: the next page starts after them.
      page.next = result_ref{last, all_of_it};
      page.budget_spent = true;
      return page;
    }
    ++page.looked_at;
    const auto& [id, wu] = *it;
    last = id;
    if (app != 0 && wu.app != app)
      continue;
    if (!results) {
      if (wu_wanted && wu.state != *wu_wanted)
        continue;
      page.workunits.push_back(view_of(ps, wu));
      if (page.workunits.size() == q.limit) {
        page.next = result_ref{id, 0};
        return page;
      }
      continue;
    }
    for (std::uint32_t i = 0; i < wu.results.size(); ++i) {
      const auto& r = wu.results[i];
      if (result_ref{id, i} <= q.after || (q.host != 0 && r.host != q.host)
          || (!q.state.empty() && q.state != result_words(r)))
        continue;
      page.results.push_back(row_of(ps, wu, i));
      if (page.results.size() == q.limit) {
        page.next = result_ref{id, i};
        return page;
      }
    }
  }
  return page;
}

} // namespace cobble
