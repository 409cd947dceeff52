/// Tests of actors/top_lists: the site's top users, hosts and teams by total and recent
/// credit, a page at a time.

#include "actors/project_views.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace cobble;

namespace {

constexpr time_us day = 86400 * us_per_second;

/// Credit `total` with a recent average `avg` last updated at `at`.
credit_totals credit(double total, double avg, time_us at) {
  return credit_totals{total, avg, at};
}

/// 45 users: user i has total credit 10 * i, and its recent average ranks the other way.
project_state project_with_users() {
  project_state ps;
  ps.credit.credit_half_life = 86400; // a day
  for (id_type id = 1; id <= 45; ++id) {
    user_rec u;
    u.id = id;
    u.name = "user " + std::to_string(id);
    u.team = id % 2 ? "Odd" : "";
    u.credit = credit(10.0 * static_cast<double>(id), 100.0 - static_cast<double>(id), day);
    ps.users[id] = u;
  }
  return ps;
}

std::vector<id_type> ids(const top_page& p) {
  std::vector<id_type> out;
  for (const auto& r : p.rows)
    out.push_back(r.id);
  return out;
}

} // namespace

TEST_CASE("top users by total credit come a page at a time", "[top_lists]") {
  auto ps = project_with_users();
  top_query q;
  q.limit = 20;
  auto first = top_of(ps, q);
  CHECK(first.total == 45);
  REQUIRE(first.rows.size() == 20);
  CHECK(first.rows[0].rank == 1);
  CHECK(first.rows[0].id == 45);
  CHECK(first.rows[0].name == "user 45");
  CHECK(first.rows[0].detail == "Odd");
  CHECK(first.rows[1].detail.empty());
  CHECK(first.rows[19].id == 26);

  q.offset = 40;
  auto last = top_of(ps, q);
  CHECK(last.total == 45);
  CHECK(ids(last) == std::vector<id_type>{5, 4, 3, 2, 1});
  CHECK(last.rows[0].rank == 41);

  q.offset = 45;
  CHECK(top_of(ps, q).rows.empty());
  q.offset = 1000;
  CHECK(top_of(ps, q).rows.empty());
}

TEST_CASE("top lists by recent credit decay each row to now", "[top_lists]") {
  auto ps = project_with_users();
  top_query q;
  q.recent = true;
  q.limit = 3;
  q.now = day;
  CHECK(ids(top_of(ps, q)) == std::vector<id_type>{1, 2, 3});

  // User 44 earned lately: its average, two days older for the others, now leads. Two days
  // of a one-day half-life leave a quarter of the old averages.
  q.now = 3 * day;
  ps.users[44].credit = credit(440, 50, 3 * day);
  auto p = top_of(ps, q);
  CHECK(ids(p) == std::vector<id_type>{44, 1, 2});
  CHECK(p.rows[0].recent == Approx(50));
  CHECK(p.rows[1].recent == Approx(99.0 / 4));
}

TEST_CASE("ties rank the older row first", "[top_lists]") {
  project_state ps;
  for (id_type id : {7, 3, 5}) {
    ps.users[id].id = id;
    ps.hosts[id] = host_reg{id, id, 0, credit(1, 1, 0)};
  }
  top_query q;
  q.what = top_query::of::hosts;
  CHECK(ids(top_of(ps, q)) == std::vector<id_type>{3, 5, 7});
}

TEST_CASE("top hosts name their owner and top teams their country", "[top_lists]") {
  project_state ps;
  ps.users[1].id = 1;
  ps.users[1].name = "Ann";
  ps.hosts[10] = host_reg{10, 1, 0, credit(5, 0, 0)};
  ps.hosts[11] = host_reg{11, 99, 0, credit(7, 0, 0)}; // owner unknown
  top_query q;
  q.what = top_query::of::hosts;
  auto hosts = top_of(ps, q);
  REQUIRE(hosts.rows.size() == 2);
  CHECK(hosts.rows[0].id == 11);
  CHECK(hosts.rows[0].name.empty());
  CHECK(hosts.rows[1].name == "Ann");

  ps.team_dir[1] = team_rec{1, "Gauss", 0, 0, "", "", "Norway"};
  ps.team_dir[2] = team_rec{2, "Euler", 0, 0, "", "", ""};
  ps.teams["Euler"] = credit(30, 0, 0); // Gauss has earned nothing yet
  q.what = top_query::of::teams;
  auto teams = top_of(ps, q);
  REQUIRE(teams.rows.size() == 2);
  CHECK(teams.rows[0].name == "Euler");
  CHECK(teams.rows[0].credit.total == 30);
  CHECK(teams.rows[1].name == "Gauss");
  CHECK(teams.rows[1].detail == "Norway");
  CHECK(teams.rows[1].credit.total == 0);
}
