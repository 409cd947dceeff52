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
