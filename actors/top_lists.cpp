/// The top lists of a project's users, hosts and teams by credit (top_of), for the site's
/// top pages. Rows are ranked on the fly: one pass to score every row, then a partial sort of
/// the rows up to the page's end, so a page deep in the list costs more than the first but
/// never a full sort.

#include "actors/project_views.hpp"

#include <algorithm>

namespace cobble {

namespace {

/// A row's score and where to find it.
struct scored {
  double score = 0;
  id_type id = 0;
  const credit_totals* credit = nullptr;
  const std::string* name = nullptr; ///< Teams are kept by name.
};

/// Ranks `rows` and keeps the page [offset, offset + limit).
std::vector<scored> page_of(std::vector<scored> rows, const top_query& q) {
  auto end = std::min(rows.size(), q.offset + q.limit);
  if (q.offset >= end)
    return {};
  auto higher = [](const scored& a, const scored& b) {
    return a.score != b.score ? a.score > b.score : a.id < b.id;
  };
  std::partial_sort(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(end), rows.end(),
                    higher);
  return {rows.begin() + static_cast<std::ptrdiff_t>(q.offset),
          rows.begin() + static_cast<std::ptrdiff_t>(end)};
}

} // namespace

top_page top_of(const project_state& ps, const top_query& q) {
  const double half_life = ps.credit.credit_half_life;
  auto score = [&](const credit_totals& c) {
    return q.recent ? c.expavg_at(q.now, half_life) : c.total;
  };
  std::vector<scored> rows;
  switch (q.what) {
    case top_query::of::users:
      rows.reserve(ps.users.size());
      for (const auto& [id, u] : ps.users)
        rows.push_back({score(u.credit), id, &u.credit, nullptr});
      break;
    case top_query::of::hosts:
      rows.reserve(ps.hosts.size());
      for (const auto& [id, h] : ps.hosts)
        rows.push_back({score(h.credit), id, &h.credit, nullptr});
      break;
    case top_query::of::teams:
      rows.reserve(ps.team_dir.size());
      for (const auto& [id, t] : ps.team_dir) {
        static const credit_totals none{};
        auto c = ps.teams.find(t.name);
        const auto& credit = c == ps.teams.end() ? none : c->second;
        rows.push_back({score(credit), id, &credit, &t.name});
      }
      break;
  }
  top_page out;
  out.total = rows.size();
  auto rank = q.offset;
  for (const auto& r : page_of(std::move(rows), q)) {
    top_row row{++rank, r.id, {}, {}, *r.credit, r.credit->expavg_at(q.now, half_life)};
    switch (q.what) {
      case top_query::of::users: {
        const auto& u = ps.users.at(r.id);
        row.name = u.name;
        row.detail = u.team;
        break;
      }
      case top_query::of::hosts:
        if (auto u = ps.users.find(ps.hosts.at(r.id).user); u != ps.users.end())
          row.name = u->second.name;
        break;
      case top_query::of::teams:
        row.name = *r.name;
        row.detail = ps.team_dir.at(r.id).country;
        break;
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

} // namespace cobble
