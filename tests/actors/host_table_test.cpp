/// Tests of actors/host_table: live and passivated host states.

#include "actors/host_table.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <limits>
#include <string>

using namespace cobble;

namespace {

/// A host with something in every part of its state, numbers that do not round-trip through
/// text, and a string beyond the small-string buffer.
host_state busy_host(id_type id, time_us last_rpc) {
  host_state h;
  h.id = id;
  h.user = 7;
  h.created = 1000;
  h.last_rpc = last_rpc;
  h.info.host_cpid = "0123456789abcdef0123456789abcdef";
  h.info.domain_name = "volunteer-" + std::to_string(id);
  h.info.p_ncpus = 16;
  h.info.p_vendor = "GenuineIntel";
  h.info.p_model = "Intel(R) Core(TM) i7-10700 CPU @ 2.90GHz [Family 6 Model 165 Stepping 5]";
  h.info.p_fpops = 4.123456789e9;
  h.info.p_iops = 1.0 / 3.0;
  h.info.m_nbytes = 3.3e10;
  h.info.d_free = 1.5e11;
  h.info.os_name = "Linux Debian";
  h.info.os_version = "Debian GNU/Linux 12 (bookworm) [6.1.0-18-amd64]";
  h.info.coprocs = {{1, 2}};
  h.info.coproc_peak_flops = {1.7e13};
  h.in_progress["job_17_0"] = held_result{result_ref{17, 0}, 99999999, 2147483666, 5000, 2.5};
  h.in_progress["job_18_1"] = held_result{result_ref{18, 1}, 99999998, 1, 5001, 1};
  auto& hav = h.app_versions[1];
  hav.n_sent = 12;
  hav.n_success = 10;
  hav.elapsed_sum = 1234.5678;
  hav.elapsed_n = 10;
  hav.host_scale_time = -5;
  hav.scale_probation = false;
  hav.error_rate = std::numeric_limits<double>::denorm_min();
  h.results_reported = 10;
  return h;
}

} // namespace

TEST_CASE("a passivated host comes back with an identical state", "[host_table]") {
  auto h = busy_host(3, 100);
  auto blob = encode_passivated(h);
  CHECK(blob.size() < memory_bytes(h));
  auto back = decode_passivated(blob);
  REQUIRE(back);
  CHECK(*back == h);
  CHECK_FALSE(decode_passivated(blob.substr(0, blob.size() - 1)));
  CHECK_FALSE(decode_passivated(blob + "x"));

  host_table t{{{3, h}}};
  CHECK(t.passivate(200, passivation_policy{50, 0}) == 1);
  CHECK(t.gauges().live == 0);
  CHECK(t.gauges().passivated == 1);
  // A view reads it without activating it.
  REQUIRE(t.copy_of(3));
  CHECK(*t.copy_of(3) == h);
  CHECK(t.gauges().activations == 0);
  // Its next use decodes it.
  auto* s = t.find(3, 300);
  REQUIRE(s != nullptr);
  CHECK(*s == h);
  auto g = t.gauges();
  CHECK(g.live == 1);
  CHECK(g.passivated == 0);
  CHECK(g.passive_bytes == 0);
  CHECK(g.activations == 1);
  CHECK(g.passivations == 1);
  CHECK(t.find(4, 300) == nullptr);
}

TEST_CASE("hosts used lately stay live, idle ones are passivated", "[host_table]") {
  host_table t{{{1, busy_host(1, 100)}, {2, busy_host(2, 100)}, {3, busy_host(3, 100)}}};
  t.find(2, 500);
  t.add(4, 500).id = 4;
  // Idle 300 at 600: last used 100 (hosts 1 and 3) goes, 500 stays.
  CHECK(t.passivate(600, passivation_policy{300, 0}) == 2);
  CHECK(t.gauges().live == 2);
  CHECK(t.size() == 4);
  // Nothing idle: nothing passivated.
  CHECK(t.passivate(700, passivation_policy{300, 0}) == 0);
  // idle_after 0 passivates nothing for its age.
  CHECK(t.passivate(1'000'000, passivation_policy{0, 0}) == 0);
  // add() of a passivated host activates it rather than replacing it.
  CHECK(t.add(1, 800) == busy_host(1, 100));
  auto all = t.all();
  REQUIRE(all.size() == 4);
  CHECK(all.at(3) == busy_host(3, 100));
  CHECK(all.at(4).id == 4);
}

TEST_CASE("hosts contacted lately are counted whether live or passivated", "[host_table]") {
  host_table t{{{1, busy_host(1, 100)}, {2, busy_host(2, 400)}, {3, busy_host(3, 900)}}};
  CHECK(t.contacted_since(400) == 2);
  // Hosts 1 and 2 are passivated; their last RPCs still count, without decoding them.
  REQUIRE(t.passivate(1000, passivation_policy{500, 0}) == 2);
  CHECK(t.gauges().passivated == 2);
  CHECK(t.contacted_since(400) == 2);
  CHECK(t.contacted_since(0) == 3);
  CHECK(t.contacted_since(901) == 0);
  CHECK(t.gauges().activations == 0);
  // A view (copy_of) leaves its last RPC as it was.
  CHECK(t.copy_of(1)->last_rpc == 100);
  CHECK(t.contacted_since(101) == 2);
}

TEST_CASE("beyond max_live the least recently used hosts are passivated", "[host_table]") {
  host_table t;
  for (id_type id = 1; id <= 6; ++id)
    t.add(id, static_cast<time_us>(10 * id)).id = id;
  t.find(1, 100); // host 1 is now the most recent
  CHECK(t.passivate(100, passivation_policy{0, 3}) == 3);
  CHECK(t.gauges().live == 3);
  // Hosts 2, 3 and 4 went: using them activates them, using 1, 5 or 6 does not.
  auto before = t.gauges().activations;
  for (id_type id : {1, 5, 6})
    t.find(id, 200);
  CHECK(t.gauges().activations == before);
  for (id_type id : {2, 3, 4})
    t.find(id, 200);
  CHECK(t.gauges().activations == before + 3);
}

TEST_CASE("one call passivates at most max_per_call hosts, the next takes the rest",
          "[host_table]") {
  host_table t;
  for (id_type id = 1; id <= 10; ++id)
    t.add(id, 0).id = id;
  CHECK(t.passivate(100, passivation_policy{50, 0, 4}) == 4);
  CHECK(t.passivate(100, passivation_policy{50, 0, 4}) == 4);
  CHECK(t.passivate(100, passivation_policy{50, 0, 4}) == 2);
  CHECK(t.gauges().live == 0);
  // The cap also holds for the least recently used beyond max_live.
  for (id_type id = 1; id <= 10; ++id)
    t.find(id, 200);
  CHECK(t.passivate(200, passivation_policy{0, 2, 3}) == 3);
  CHECK(t.gauges().live == 7);
}

TEST_CASE("how long one sweep's 20,000 passivations and their activations take", "[host_table]") {
  // A printed figure, not a limit (machines are shared): the sweep's cap in
  // actors/project_flow.cpp is chosen from it.
  constexpr id_type n = 20'000;
  host_table t;
  for (id_type id = 1; id <= n; ++id)
    t.add(id, 0) = busy_host(id, 0);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(t.passivate(100, passivation_policy{50, 0, 0}) == n);
  auto t1 = std::chrono::steady_clock::now();
  std::size_t found = 0;
  for (id_type id = 1; id <= n; ++id)
    found += t.find(id, 200) != nullptr ? 1 : 0;
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("host_table: %llu hosts passivated in %.1f ms, activated in %.1f ms; %zu bytes "
              "passivated each\n",
              static_cast<unsigned long long>(n), ms(t1 - t0), ms(t2 - t1),
              encode_passivated(busy_host(1, 0)).size());
  CHECK(found == n);
  CHECK(t.gauges().live == n);
}
