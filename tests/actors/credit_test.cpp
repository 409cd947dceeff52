/// Tests of the credit system's pure logic (actors/credit) and of the state it keeps per
/// (host, app version) and per app version (actors/state): the numbers the design promises.

#include "actors/credit.hpp"
#include "actors/event_codec.hpp"
#include "actors/project_logic.hpp"
#include "actors/state.hpp"
#include "storage/codec.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <utility>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second;
constexpr time_us hour = 3600 * us_per_second;
constexpr time_us day = 24 * hour;

constexpr time_us cobble_t0() {
  return t0;
}

average_var avg_of(double value, std::uint64_t n) {
  average_var a;
  a.n = n;
  a.avg = value;
  return a;
}

event make(payload p, time_us t) {
  event e;
  e.time = t;
  e.data = std::move(p);
  return e;
}

report_rec report(bool success, int client_state = 5, double elapsed = 100) {
  report_rec r;
  r.success = success;
  r.client_state = client_state;
  r.elapsed = elapsed;
  r.cpu = elapsed;
  return r;
}

} // namespace

// -- averages -------------------------------------------------------------------

TEST_CASE("averages are a straight mean for the first N samples, then exponential", "[credit]") {
  average_var a;
  for (double x : {1.0, 2.0, 3.0, 4.0})
    a.update(x, 4, 0.5, 10);
  CHECK(a.n == 4);
  CHECK(a.avg == Approx(2.5));
  // The fifth sample moves the average by alpha of the difference.
  a.update(4.5, 4, 0.5, 10);
  CHECK(a.avg == Approx(3.5));
  CHECK(a.n == 5);
}

TEST_CASE("a non-first sample is capped at the cap times the current average", "[credit]") {
  average_var a;
  a.update(1e304, 100, 0.01, 10); // the first sample is taken as it is
  CHECK(a.avg == 1e304);
  average_var b;
  b.update(2, 100, 0.01, 10);
  b.update(1e304, 100, 0.01, 10); // counts as 20
  CHECK(b.avg == Approx(11));
  average_var c;
  c.update(std::numeric_limits<double>::infinity(), 100, 0.01, 10);
  c.update(-1, 100, 0.01, 10);
  CHECK(c.n == 0);
}

TEST_CASE("recent average credit decays with its half-life", "[credit]") {
  credit_settings s;
  credit_totals t;
  t.add(100, t0, s.credit_half_life);
  CHECK(t.total == 100);
  double first = t.expavg;
  CHECK(first > 0);
  CHECK(t.expavg_at(t0 + seconds_to_us(s.credit_half_life), s.credit_half_life)
        == Approx(first / 2));
  t.add(0, t0 + day, s.credit_half_life); // nothing granted changes nothing
  CHECK(t.total == 100);
  // A steady 100 credits per day converges to an average of 100 per day.
  credit_totals steady;
  for (int d = 0; d < 200; ++d)
    steady.add(100, t0 + d * day, s.credit_half_life);
  // (Right after a grant it is above, just before the next one below.)
  double mid = steady.expavg_at(t0 + 199 * day + day / 2, s.credit_half_life);
  CHECK(mid == Approx(100).epsilon(0.05));
}

// -- peak FLOP count and claimed credit -----------------------------------------

TEST_CASE("peak_flops(J) counts the CPUs and GPUs the version uses", "[credit]") {
  CHECK(job_peak_flops(2e9, 1, 0, 0) == 2e9);
  CHECK(job_peak_flops(2e9, 4, 0, 0) == 8e9);
  CHECK(job_peak_flops(2e9, 0.5, 1e12, 1) == 1e9 + 1e12);
}

TEST_CASE("claimed credit is PFC x Scale(V) x Scale(H) in Cobblestones", "[credit]") {
  credit_settings s;
  replica_credit_input in;
  in.elapsed = 1000;
  in.peak_flops = 1e9;
  // No statistics yet: the claim is the plain PFC.
  auto c = claim_credit(in, 5e11, 1e13, std::nullopt, s);
  CHECK(c.pfc == 1e12);
  CHECK(c.pfc_sample == Approx(2));
  CHECK(c.claimed == Approx(1e12 * 100 / 86400e9));
  CHECK(c.flags == 0);
  // With Scale(V) = 0.5 and a host twice as wasteful as the version's average: 0.5 x 0.5.
  in.version_pfc = avg_of(2, 100);
  in.version_scale = 0.5;
  in.host_pfc = avg_of(4, 10);
  c = claim_credit(in, 5e11, 1e13, std::nullopt, s);
  CHECK(c.scale_v == 0.5);
  CHECK(c.scale_h == Approx(0.5));
  CHECK(c.claimed == Approx(0.25e12 / 864e9));
  // The flops per Cobblestone is a setting.
  s.flops_per_cobblestone = 1e12;
  CHECK(claim_credit(in, 5e11, 1e13, std::nullopt, s).claimed == Approx(0.25));
}

TEST_CASE("the sanity check gives the default PFC and no sample", "[credit]") {
  credit_settings s;
  replica_credit_input in;
  in.elapsed = 1e6;
  in.peak_flops = 1e9; // PFC 1e15, over the bound
  auto c = claim_credit(in, 1e12, 1e13, std::nullopt, s);
  CHECK((c.flags & credit_default_pfc) != 0);
  CHECK(c.pfc == 1e12); // rsc_fpops_est
  CHECK(c.pfc_sample == 0);
  // With min_avg_pfc(A) known: min_avg_pfc x E(J).
  c = claim_credit(in, 1e12, 1e13, 3.0, s);
  CHECK(c.pfc == 3e12);
  // Infinite, NaN or implausible elapsed times too.
  in.elapsed = std::numeric_limits<double>::infinity();
  CHECK((claim_credit(in, 1e12, 1e13, 3.0, s).flags & credit_default_pfc) != 0);
  in.elapsed = 100;
  in.elapsed_plausible = false;
  CHECK((claim_credit(in, 1e12, 1e13, 3.0, s).flags & credit_default_pfc) != 0);
}

TEST_CASE("a PFC over 20 x PFCmean(V) is a one-time cheat", "[credit]") {
  credit_settings s;
  replica_credit_input in;
  in.peak_flops = 1e9;
  in.version_pfc = avg_of(2, 100);
  in.elapsed = 1000 * 2 * 19; // 19 x the average: allowed
  auto ok = claim_credit(in, 1e12, 1e20, std::nullopt, s);
  CHECK((ok.flags & credit_one_time_cheat) == 0);
  in.elapsed = 1000 * 2 * 21;
  auto cheat = claim_credit(in, 1e12, 1e20, 2.0, s);
  CHECK((cheat.flags & credit_one_time_cheat) != 0);
  CHECK(cheat.pfc == 2e12); // the default PFC
  CHECK(cheat.pfc_sample == 0);
  // Claiming PFC 1e304 is caught by both checks.
  in.elapsed = 1e4;
  in.peak_flops = 1e300;
  auto huge = claim_credit(in, 1e12, 1e13, 2.0, s);
  CHECK((huge.flags & (credit_one_time_cheat | credit_default_pfc))
        == (credit_one_time_cheat | credit_default_pfc));
  CHECK(huge.claimed == Approx(2e12 / 864e9));
}

TEST_CASE("anonymous-platform jobs claim min_avg_pfc(A) x E(J)", "[credit]") {
  credit_settings s;
  replica_credit_input in;
  in.anonymous = true;
  in.elapsed = 1e9; // ignored
  in.peak_flops = 1e9;
  auto c = claim_credit(in, 1e12, 1e13, 2.5, s);
  CHECK((c.flags & credit_anonymous) != 0);
  CHECK(c.pfc == 2.5e12);
  CHECK(c.pfc_sample == 0);
  CHECK(claim_credit(in, 1e12, 1e13, std::nullopt, s).pfc == 1e12);
}

// -- host normalization --------------------------------------------------------------

TEST_CASE("Scale(H) is PFCmean(V)/PFCmean(H,V), capped, and at most 1 on probation", "[credit]") {
  credit_settings s;
  CHECK(host_scale(avg_of(2, 100), avg_of(4, 10), false, s) == Approx(0.5));
  CHECK(host_scale(avg_of(2, 100), avg_of(0.1, 10), false, s) == 10); // cap
  s.host_scale_cap = 5;
  CHECK(host_scale(avg_of(2, 100), avg_of(0.1, 10), false, s) == 5);
  // Too few samples on either side: no host scaling.
  CHECK(host_scale(avg_of(2, 99), avg_of(4, 10), false, s) == 1);
  CHECK(host_scale(avg_of(2, 100), avg_of(4, 9), false, s) == 1);
  // On probation a host is never scaled up (cherry picking), but still scaled down.
  CHECK(host_scale(avg_of(2, 100), avg_of(1, 10), true, s) == 1);
  CHECK(host_scale(avg_of(2, 100), avg_of(4, 10), true, s) == Approx(0.5));
}

// -- cross-version normalization ------------------------------------------------------

TEST_CASE("cross-version normalization follows the design's rules", "[credit]") {
  credit_settings s;
  auto cpu = [](std::uint32_t id, double pfc, std::uint64_t n) {
    return version_credit_input{id, false, avg_of(pfc, n)};
  };
  auto gpu = [](std::uint32_t id, double pfc, std::uint64_t n) {
    return version_credit_input{id, true, avg_of(pfc, n)};
  };
  SECTION("one version above the threshold is not enough") {
    auto n = normalize_versions({cpu(1, 2, 500), cpu(2, 3, 50)}, s);
    CHECK_FALSE(n.min_avg_pfc);
    CHECK(n.scales.empty());
  }
  SECTION("only CPU versions: X is their sample-weighted mean") {
    auto n = normalize_versions({cpu(1, 2, 100), cpu(2, 4, 300)}, s);
    REQUIRE(n.min_avg_pfc);
    CHECK(*n.min_avg_pfc == Approx(3.5));
    CHECK(n.scales.at(1) == Approx(1.75));
    CHECK(n.scales.at(2) == Approx(0.875));
  }
  SECTION("CPU and GPU: X is the smaller class mean; each needs one version over") {
    auto n = normalize_versions({cpu(1, 2, 100), gpu(2, 10, 100), gpu(3, 20, 5)}, s);
    REQUIRE(n.min_avg_pfc);
    CHECK(*n.min_avg_pfc == Approx(2));
    CHECK(n.scales.at(1) == Approx(1));
    CHECK(n.scales.at(2) == Approx(0.2));
    CHECK(n.scales.count(3) == 0); // below the threshold: keeps its scale
  }
  SECTION("the threshold is a setting") {
    s.version_sample_threshold = 5;
    auto n = normalize_versions({cpu(1, 2, 100), gpu(3, 20, 5)}, s);
    CHECK(n.scales.at(3) == Approx(0.1));
  }
  SECTION("a GPU-only app takes the cross-project factor") {
    auto n = normalize_versions({gpu(7, 10, 100), gpu(8, 20, 100)}, s, {{7, 0.3}, {8, 0.3}});
    CHECK(n.scales.at(7) == 0.3);
    CHECK(n.scales.at(8) == 0.3);
    REQUIRE(n.min_avg_pfc);
    CHECK(*n.min_avg_pfc == Approx(4.5));
  }
}

TEST_CASE("PFCmean(V) is by default the median of the hosts' means, the mean of the samples "
          "until three hosts qualify",
          "[credit]") {
  credit_settings s;
  CHECK(s.version_pfc_median);
  config::credit_config c;
  CHECK(c.version_pfc == config::version_pfc_estimator::median);
  CHECK(credit_settings_from(c).version_pfc_median);
  app_version_state av{1};
  av.pfc = avg_of(5, 40); // the mean of all samples, raised by a cheater's
  av.host_pfc[1] = avg_of(1, 10);
  av.host_pfc[2] = avg_of(2, 10);
  // Two hosts with host_sample_threshold samples: too few for a median, the mean stands.
  CHECK(version_pfc(av, s) == avg_of(5, 40));
  av.host_pfc[3] = avg_of(30, 10); // the cheater
  av.host_pfc[4] = avg_of(3, 9);   // below the threshold: not counted
  // Three: the median, which the cheater does not move; n stays the version's sample count.
  CHECK(version_pfc(av, s) == avg_of(2, 40));
  av.host_pfc[4] = avg_of(3, 10);
  CHECK(version_pfc(av, s).avg == Approx(2.5)); // an even count: the mean of the middle two
  // `version_pfc: mean` selects the mean of all samples.
  s.version_pfc_median = false;
  CHECK(version_pfc(av, s) == avg_of(5, 40));
  c.version_pfc = config::version_pfc_estimator::mean;
  CHECK_FALSE(credit_settings_from(c).version_pfc_median);
}

// -- granted credit -------------------------------------------------------------------

TEST_CASE("granted credit averages the trusted replicas, else falls back", "[credit]") {
  credit_settings s;
  auto rec = [](double claimed, std::uint8_t flags = 0) {
    credit_rec r;
    r.claimed = claimed;
    r.flags = flags;
    return r;
  };
  std::vector<credit_rec> single{rec(7)};
  grant_credit(single, 1e12, std::nullopt, s);
  CHECK(single[0].granted == 7);
  std::vector<credit_rec> two{rec(10), rec(20)};
  grant_credit(two, 1e12, std::nullopt, s);
  CHECK(two[0].granted == 15);
  CHECK(two[1].granted == 15);
  std::vector<credit_rec> mixed{rec(10), rec(1000, credit_anonymous), rec(500, credit_probation)};
  grant_credit(mixed, 1e12, std::nullopt, s);
  CHECK(mixed[1].granted == 10);
  // Nobody trusted: min_avg_pfc(A) x E(J) when known, else the lowest claim.
  std::vector<credit_rec> none{rec(30, credit_probation), rec(40, credit_anonymous)};
  grant_credit(none, 864e9, 2.0, s);
  CHECK(none[0].granted == Approx(2));
  CHECK((none[0].flags & credit_fallback) != 0);
  std::vector<credit_rec> none2{rec(30, credit_probation), rec(40, credit_anonymous)};
  grant_credit(none2, 864e9, std::nullopt, s);
  CHECK(none2[1].granted == 30);
}

// -- host_app_version ------------------------------------------------------------------

namespace {

struct hav_fixture {
  host_state h;
  credit_settings s;
  std::uint32_t version = 1;
  int next = 0;

  hav_fixture() { apply(h, make(ev::host_registered{1, 1, {}}, t0), {}, s); }

  std::string dispatch(time_us t, int quota = 4) {
    auto name = "wu_" + std::to_string(next) + "_0";
    ev::result_dispatched d{{static_cast<id_type>(next), 0},   1,   t + 7 * day,
                            version_echo{version, "p", 1, ""}, 1e9, quota};
    ++next;
    apply(h, make(d, t), name, s);
    return name;
  }

  void report(const std::string& name, report_rec rep, time_us t) {
    auto held = h.in_progress.at(name);
    apply(h, make(ev::result_reported{held.result, 1, std::move(rep), {}, true, 0}, t), name, s);
  }

  void
  validated(const std::string& name, bool valid, double pfc, double et, bool cheat, time_us t) {
    ev::host_result_validated v{1, {0, 0}, version, valid, pfc, et, cheat, 1};
    apply(h, make(v, t), name, s);
  }

  const host_app_version_rec& hav() const { return h.app_versions.at(version); }
};

} // namespace

TEST_CASE("max_jobs_per_day: -1 per crash, not per abort, doubled per success", "[credit]") {
  const time_us start = (cobble_t0() / day) * day + hour; // 01:00 UTC: the day lasts
  hav_fixture f;
  auto a = f.dispatch(start);
  CHECK(f.hav().max_jobs_per_day == 4);
  CHECK(f.hav().n_jobs_today == 1);
  CHECK(f.hav().jobs_left(start) == 3);
  CHECK(f.hav().error_rate == Approx(f.s.error_rate_initial));
  f.report(a, report(false, 3), start + hour); // a crash
  CHECK(f.hav().max_jobs_per_day == 3);
  // An error raises the pair's error rate: 0.1 x 0.95 + 0.05.
  CHECK(f.hav().error_rate == Approx(0.145));
  auto b = f.dispatch(start + hour);
  f.report(b, report(false, client_state_aborted), start + 2 * hour); // an abort
  CHECK(f.hav().max_jobs_per_day == 3);
  auto c = f.dispatch(start + 2 * hour);
  CHECK(f.hav().jobs_left(start + 2 * hour) == 0); // 3 sent today
  f.report(c, report(true), start + 3 * hour);
  CHECK(f.hav().max_jobs_per_day == 4); // doubled, capped at the initial value
  CHECK(f.hav().jobs_left(start + 3 * hour) == 1);
  // A new UTC day starts a new count.
  CHECK(f.hav().jobs_left(start + day) == 4);
  f.dispatch(start + day);
  CHECK(f.hav().n_jobs_today == 1);
  // Crashes never take the quota below 1.
  hav_fixture g;
  for (int i = 0; i < 10; ++i)
    g.report(g.dispatch(start), report(false, 3), start + 1);
  CHECK(g.hav().max_jobs_per_day == 1);
}

TEST_CASE("turnaround, ETmean(H,V) and PFCmean(H,V) are per (host, app version)", "[credit]") {
  hav_fixture f;
  auto a = f.dispatch(t0);
  f.report(a, report(true), t0 + 2 * hour);
  CHECK(f.hav().turnaround.avg == Approx(7200));
  f.validated(a, true, 2.5, 1e-7, false, t0 + 3 * hour);
  CHECK(f.hav().pfc.avg == 2.5);
  CHECK(f.hav().et.avg == 1e-7);
  f.validated(a, false, 0, 0, false, t0 + 3 * hour); // invalid: no samples
  CHECK(f.hav().pfc.n == 1);
  CHECK(f.hav().et.n == 1);
  f.version = 2;
  f.dispatch(t0);
  CHECK(f.h.app_versions.at(2).pfc.n == 0);
}

TEST_CASE("scale probation: armed at the first job, lifted by a validation after it, reset "
          "by errors, timeouts and cheats",
          "[credit]") {
  hav_fixture f;
  auto a = f.dispatch(t0);
  CHECK(f.hav().scale_probation);
  CHECK(f.hav().host_scale_time == t0 + 7 * day);
  f.dispatch(t0 + day); // later jobs do not push it further
  CHECK(f.hav().host_scale_time == t0 + 7 * day);
  f.validated(a, true, 2, 1e-7, false, t0 + 2 * day);
  CHECK(f.hav().scale_probation); // too early
  f.validated(a, true, 2, 1e-7, false, t0 + 8 * day);
  CHECK_FALSE(f.hav().scale_probation);
  // An error puts the pair back on probation for a delay bound.
  auto b = f.dispatch(t0 + 9 * day);
  f.report(b, report(false, client_state_aborted), t0 + 10 * day);
  CHECK(f.hav().scale_probation);
  CHECK(f.hav().host_scale_time == t0 + 17 * day);
  // A timeout too.
  hav_fixture g;
  auto c = g.dispatch(t0);
  g.validated(c, true, 2, 1e-7, false, t0 + 8 * day);
  REQUIRE_FALSE(g.hav().scale_probation);
  auto d = g.dispatch(t0 + 8 * day);
  apply(g.h, make(ev::result_timed_out{g.h.in_progress.at(d).result, 1}, t0 + 15 * day), d, g.s);
  CHECK(g.hav().scale_probation);
  CHECK(g.hav().n_timeout == 1);
  // A one-time cheat: probation and the initial error rate.
  hav_fixture k;
  auto e = k.dispatch(t0);
  for (int i = 0; i < 50; ++i)
    k.validated(e, true, 2, 1e-7, false, t0 + 8 * day);
  CHECK(k.hav().error_rate < k.s.error_rate_initial / 5);
  CHECK_FALSE(k.hav().scale_probation);
  k.validated(e, true, 0, 1e-7, true, t0 + 9 * day);
  CHECK(k.hav().error_rate == k.s.error_rate_initial);
  CHECK(k.hav().scale_probation);
}

TEST_CASE("app versions average PFC/E and add up granted credit", "[credit]") {
  credit_settings s;
  app_version_state av{3};
  ev::workunit_validated v{1, 0u, {}, {}};
  v.verdicts.push_back(verdict{0, true, 1, 3, 100, 90});
  v.verdicts.push_back(verdict{1, true, 2, 4, 100, 90});
  v.verdicts.push_back(verdict{2, false, 3, 3, 100, 90});
  credit_rec c;
  c.pfc_sample = 2;
  c.granted = 5;
  v.credit = {c, c, credit_rec{}};
  apply(av, make(v, t0), s);
  CHECK(av.n_valid == 1);
  CHECK(av.n_invalid == 1);
  CHECK(av.pfc.n == 1);
  CHECK(av.pfc.avg == 2);
  CHECK(av.credit.total == 5);
  ev::credit_normalized n{1, 2, {version_scale{3, avg_of(2, 1), 0.4}, version_scale{4, {}, 1}}};
  apply(av, make(n, t0), s);
  CHECK(av.pfc_scale == 0.4);
}

TEST_CASE("payloads written before the credit system still decode", "[credit][events]") {
  // A version-1 result_reported (no host scale statistics) and workunit_validated (no credit).
  ev::result_reported old{{4, 1}, 9, report(true), avg_of(5, 5), false, 77};
  storage::event_record r;
  r.seq = 3;
  r.kind = ev::result_reported::kind;
  storage::writer w{r.payload};
  w.put_u8(1);
  storage::encoder enc{w, 1};
  enc.put(old);
  auto e = from_record(r);
  REQUIRE(e);
  auto& x = std::get<ev::result_reported>(e->data);
  CHECK(x.result == result_ref{4, 1});
  CHECK(x.report == report(true));
  CHECK(x.host_pfc.n == 0); // defaults
  CHECK(x.probation);
  // Today's version round-trips every field.
  event now;
  now.data = old;
  auto back = from_record(to_record(now));
  REQUIRE(back);
  CHECK(std::get<ev::result_reported>(back->data).host_pfc == avg_of(5, 5));
  CHECK(std::get<ev::result_reported>(back->data).scale_time == 77);
  CHECK(payload_version(ev::result_reported::kind) == 4);
  CHECK(payload_version(ev::workunit_assimilated::kind) == 1);
  // A version newer than today's is refused.
  auto future = to_record(now);
  future.payload[0] = static_cast<char>(payload_version(ev::result_reported::kind) + 1);
  CHECK_FALSE(from_record(future));
}
