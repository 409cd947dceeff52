#include "tools/bench/site.hpp"

#include "actors/project_views.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <vector>

namespace cobble::bench {

namespace {

constexpr time_us now = 1'800'000'000LL * us_per_second;
constexpr time_us day = 86400 * us_per_second;

/// A state of `o`'s size with credit spread as volunteers' is: most small, a few large.
project_state make_state(const site_options& o) {
  project_state ps;
  ps.name = "bench";
  std::mt19937_64 rng{42};
  std::lognormal_distribution<double> credit{5, 2};
  std::uniform_int_distribution<time_us> when{now - 30 * day, now};
  for (std::size_t t = 1; t <= o.teams; ++t)
    ps.team_dir[t] = team_rec{t, "team " + std::to_string(t), 0, 0, "", "", "Norway"};
  for (id_type id = 1; id <= o.users; ++id) {
    user_rec u;
    u.id = id;
    u.name = "volunteer " + std::to_string(id);
    u.created = when(rng);
    u.credit = credit_totals{credit(rng), credit(rng) / 10, when(rng)};
    if (o.teams > 0 && id % 3 == 0)
      u.team = ps.team_dir.at(1 + id % o.teams).name;
    ps.users.emplace(id, std::move(u));
  }
  for (auto& [id, u] : ps.users)
    if (!u.team.empty())
      ps.teams[u.team].total += u.credit.total;
  for (id_type id = 1; id <= o.hosts; ++id)
    ps.hosts[id] = host_reg{id, 1 + id % std::max<std::size_t>(o.users, 1), when(rng),
                            credit_totals{credit(rng), credit(rng) / 10, when(rng)}};
  for (id_type id = 1; id <= o.workunits; ++id) {
    workunit_rec wu;
    wu.id = id;
    wu.name = "wu_" + std::to_string(id);
    wu.results.resize(2);
    wu.results[0].state = id % 4 == 0 ? result_state::unsent : result_state::in_progress;
    wu.results[1].state = result_state::unsent;
    ps.workunits[id] = std::move(wu);
  }
  // Every tenth account has a full history: 100 days of grants from two apps.
  for (auto& [id, u] : ps.users)
    if (id % 10 == 0) {
      u.credit_detail = user_credit{};
      for (int d = 0; d < 100; ++d)
        record_grant(*u.credit_detail, 1 + d % 2, credit(rng) / 100, u.created + d * day,
                     7 * 86400);
    }
  rebuild_indices(ps);
  return ps;
}

/// The median of `repeat` timings of `f`, in seconds.
double median_seconds(int repeat, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

} // namespace

void run_site_bench(const site_options& o, std::ostream& out) {
  auto t0 = std::chrono::steady_clock::now();
  auto ps = make_state(o);
  host_table hosts;
  out << fmt::format("site: {} users, {} hosts, {} teams, {} workunits built in {:.1f} s\n",
                     o.users, o.hosts, o.teams, o.workunits,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  auto line = [&out](const std::string& what, double s) {
    out << fmt::format("  {:<52} {:>10.3f} ms  {:>11.1f} calls/s\n", what, s * 1e3, 1 / s);
  };
  std::size_t sink = 0;
  for (auto [what, list] :
       {std::pair{"users", top_query::of::users}, std::pair{"hosts", top_query::of::hosts},
        std::pair{"teams", top_query::of::teams}}) {
    // One page ranked alone, and the first 10,000 ranks: what the site asks and keeps for
    // five minutes (net/web_site.cpp), serving every page from it.
    for (std::size_t limit : {std::size_t{20}, std::size_t{10000}}) {
      top_query q;
      q.what = list;
      q.recent = true;
      q.limit = limit;
      q.now = now;
      line(fmt::format("top {} by recent credit, ranks 1-{}", what, limit),
           median_seconds(o.repeat, [&] { sink += top_of(ps, q).rows.size(); }));
    }
  }
  line("account: with its hosts (index by user)",
       median_seconds(o.repeat, [&] { sink += account_of(ps, 1, &hosts)->hosts.size(); }));
  // Account 10 has a credit history of 100 days (made above), thinned to 64 points.
  line("account page: hosts, credit per app and history",
       median_seconds(o.repeat, [&] { sink += account_of(ps, 10, &hosts, true)->apps.size(); }));
  line("account: without hosts",
       median_seconds(o.repeat, [&] { sink += account_of(ps, 1)->hosts.size(); }));
  line("status page: one pass (kept a minute)", median_seconds(o.repeat, [&] {
         sink += server_status_of(ps, hosts, now).results_ready_to_send;
       }));
  out << fmt::format("  (checksum {})\n", sink);
}

} // namespace cobble::bench
