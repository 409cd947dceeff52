/// Tests of actors/project_views: the gauges /metrics shows (hosts in memory and their bytes).

#include "actors/project_views.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace cobble;

namespace {

host_state host_with(id_type id, std::size_t results, std::size_t name_length) {
  host_state h;
  h.id = id;
  h.info.domain_name = std::string(name_length, 'd');
  for (std::size_t i = 0; i < results; ++i)
    h.in_progress["wu_with_a_long_name_" + std::to_string(i) + "_0"] = held_result{};
  return h;
}

} // namespace

TEST_CASE("memory_bytes grows with a host's results and long strings", "[project_views]") {
  auto bare = memory_bytes(host_with(1, 0, 4));
  CHECK(bare >= sizeof(host_state));
  // A short domain name lives in the string object; a long one on the heap.
  CHECK(memory_bytes(host_with(1, 0, 200)) >= bare + 200);
  auto two = memory_bytes(host_with(1, 2, 4));
  CHECK(two >= bare + 2 * (sizeof(held_result) + 20));
  CHECK(memory_bytes(host_with(1, 4, 4)) - two == two - bare);
}

TEST_CASE("gauges_of counts hosts and scales a sample's bytes to all", "[project_views]") {
  project_state ps;
  ps.name = "demo";
  std::unordered_map<id_type, host_state> states;
  for (id_type id = 1; id <= 10; ++id) {
    states[id] = host_with(id, 1, 4);
    ps.hosts[id] = host_reg{id, 1, 0, {}};
  }
  auto one = memory_bytes(states[1]);
  host_table hosts{states};
  auto all = gauges_of(ps, hosts);
  CHECK(all.project == "demo");
  CHECK(all.hosts == 10);
  CHECK(all.hosts_live == 10);
  CHECK(all.hosts_passivated == 0);
  CHECK(all.hosts_sampled == 10);
  CHECK(all.host_bytes > 10 * one); // plus the map nodes and the registrations
  CHECK(all.host_bytes < 20 * one); // but not a second copy of the state

  // The same hosts measured on a sample of 3 give the same estimate (identical hosts).
  auto sampled = gauges_of(ps, hosts, 3);
  CHECK(sampled.hosts_sampled == 3);
  CHECK(sampled.host_bytes == all.host_bytes);

  CHECK(gauges_of(project_state{}, host_table{}).host_bytes == 0);
}

TEST_CASE("passivated hosts count their exact bytes, far fewer than live ones", "[project_views]") {
  project_state ps;
  ps.name = "demo";
  std::unordered_map<id_type, host_state> states;
  for (id_type id = 1; id <= 10; ++id) {
    states[id] = host_with(id, 1, 40);
    states[id].last_rpc = static_cast<time_us>(id);
    ps.hosts[id] = host_reg{id, 1, 0, {}};
  }
  host_table hosts{states};
  auto live = gauges_of(ps, hosts);
  // Hosts 1..4 were last used before 5: idle for 5 us at 9, they go.
  CHECK(hosts.passivate(9, passivation_policy{5, 0}) == 4);
  auto half = gauges_of(ps, hosts);
  CHECK(half.hosts == 10);
  CHECK(half.hosts_live == 6);
  CHECK(half.hosts_passivated == 4);
  CHECK(half.host_passivations == 4);
  CHECK(half.passivated_bytes > 4 * encode_passivated(states[1]).size());
  CHECK(half.passivated_bytes < 4 * memory_bytes(states[1]));
  CHECK(half.host_bytes < live.host_bytes);
}

TEST_CASE("an account shows its computers by index and what they finished, newest first",
          "[project_views]") {
  constexpr time_us t0 = 1'700'000'000LL * us_per_second;
  constexpr time_us minute = 60 * us_per_second;
  project_state ps;
  app_rec app;
  app.id = 1;
  app.name = "testapp";
  app.user_friendly_name = "Test app";
  ps.apps.push_back(app);
  auto at = [](payload p, time_us t) {
    event e;
    e.time = t;
    e.data = std::move(p);
    return e;
  };
  apply(ps, at(ev::user_created{1, "ann", "ann@example.org", "k1"}, t0));
  apply(ps, at(ev::user_created{2, "bob", "bob@example.org", "k2"}, t0));
  apply(ps, at(ev::host_registered{1, 1, {}}, t0));
  apply(ps, at(ev::host_registered{2, 2, {}}, t0));
  apply(ps, at(ev::host_registered{3, 1, {}}, t0));
  apply(ps, at(ev::workunit_created{1, "wu_a", 1, {}, 2, "admin"}, t0));
  apply(ps, at(ev::result_dispatched{{1, 0}, 1, t0 + 60 * minute, {}}, t0));
  apply(ps, at(ev::result_dispatched{{1, 1}, 3, t0 + 60 * minute, {}}, t0));
  report_rec ok;
  ok.success = true;
  apply(ps, at(ev::result_reported{{1, 1}, 3, ok}, t0 + 5 * minute));
  apply(ps, at(ev::result_reported{{1, 0}, 1, ok}, t0 + 9 * minute));
  ev::workunit_validated v;
  v.wu = 1;
  v.verdicts = {verdict{0, true, 1}, verdict{1, false, 3}};
  v.credit.resize(2);
  v.credit[0].granted = 12.5;
  v.canonical = 0;
  apply(ps, at(v, t0 + 10 * minute));

  std::unordered_map<id_type, host_state> states;
  for (id_type id : {1, 3}) {
    auto& h = states[id];
    h.id = id;
    h.user = 1;
    h.last_rpc = t0 + static_cast<time_us>(id) * minute;
  }
  states[1].finished = {{1, 0}};
  states[3].finished = {{1, 1}};
  host_table table{states};

  auto a = account_of(ps, 1, &table, true);
  REQUIRE(a);
  REQUIRE(a->hosts.size() == 2);
  CHECK(a->hosts[0].id == 3); // newest first
  CHECK(a->hosts[1].id == 1);
  CHECK(a->contact == std::vector<time_us>{t0 + 3 * minute, t0 + minute});
  REQUIRE(a->apps.size() == 1);
  CHECK(a->apps[0].app == "Test app");
  CHECK(a->apps[0].jobs == 1);
  CHECK(a->apps[0].credit.total == 12.5);
  REQUIRE(a->recent.size() == 2);
  CHECK(a->recent[0].name == "wu_a_0"); // reported last
  CHECK(a->recent[0].state == "valid");
  CHECK(a->recent[0].granted == 12.5);
  CHECK(a->recent[0].at == t0 + 9 * minute);
  CHECK(a->recent[1].name == "wu_a_1");
  CHECK(a->recent[1].state == "invalid");
  CHECK(a->recent[1].host == 3);

  // Without the detail, or without hosts, less is asked and less is answered.
  CHECK(account_of(ps, 1, &table)->recent.empty());
  CHECK(account_of(ps, 1)->hosts.empty());
  CHECK(account_of(ps, 2, &table)->hosts.at(0).id == 2);
  CHECK(account_of(ps, 2, &table)->contact.at(0) == 0); // the table does not hold it

  // The index is derived: rebuilt after a snapshot, it lists the same hosts.
  auto copy = ps;
  copy.newest_host_of_user.clear();
  copy.older_host_of_user.clear();
  rebuild_indices(copy);
  CHECK(copy.hosts_of(1, 10) == std::vector<id_type>{3, 1});
  CHECK(copy.hosts_of(1, 1) == std::vector<id_type>{3});
  CHECK(copy.hosts_of(9, 10).empty());
}
