/// Tests of AutoFlops (actors/autoflops, and its parts in project_logic, state and events):
/// the statistics, completion time estimates and bounds and their translation for BOINC
/// clients, est_flops_per_au (percentile, averaging, CPU/GPU minimum, reference job), the
/// cherry-picking countermeasures, work creation and the event formats.

#include "actors/autoflops.hpp"
#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/host_logic.hpp"
#include "actors/project_logic.hpp"
#include "actors/state.hpp"
#include "net/boinc_xml.hpp"
#include "storage/codec.hpp"
#include "tests/support/demo_config.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

using namespace cobble;

namespace {

constexpr time_us t0 = 1'700'000'000LL * us_per_second;

event make(payload p, time_us t = t0) {
  event e;
  e.time = t;
  e.data = std::move(p);
  return e;
}

/// A project with one app "af" that has a CPU and a GPU version (replication 1).
config::project_config
af_project(config::credit_policy_kind policy = config::credit_policy_kind::pfc) {
  auto p = cobble::test::demo_config().projects.at(0);
  p.apps.clear();
  config::app_config a;
  a.name = "af";
  a.min_quorum = a.target_nresults = 1;
  a.max_jobs_per_rpc = 1;
  a.credit_policy = policy;
  a.autoflops.estimates = config::estimate_clients::all; // BOINC clients too
  a.autoflops.min_samples = 5;
  a.autoflops.flops_samples = 4;
  config::app_version_config cpu;
  cpu.platform = "x86_64-pc-linux-gnu";
  cpu.version_num = 100;
  a.versions.push_back(cpu);
  auto gpu = cpu;
  gpu.plan_class = "cuda";
  gpu.avg_ncpus = 0.1;
  gpu.coproc_type = "NVIDIA";
  gpu.coproc_count = 1;
  a.versions.push_back(gpu);
  p.apps.push_back(a);
  return p;
}

struct af_fixture {
  project_logic logic;
  time_us now = t0;
  id_type user = 0;

  explicit af_fixture(const config::project_config& cfg = af_project()) {
    logic.configure(cfg, now);
    user = logic.state.users.begin()->first;
  }

  const app_rec& app() const { return logic.state.apps.at(0); }

  /// A new user account (the configured one is `user`).
  id_type new_user(const std::string& name) {
    auto created = logic.create_user(name, name + "@example.org", name + "-key", now);
    REQUIRE(created);
    return std::get<ev::user_created>(created->data).id;
  }

  /// A new host of `owner` (0: of `user`).
  id_type new_host(id_type owner = 0) {
    host_info_rec info;
    info.p_ncpus = 1;
    info.p_fpops = 2e9;
    info.coprocs.emplace_back(static_cast<std::uint8_t>(resource_type::nvidia), 1);
    info.coproc_peak_flops.push_back(5e10);
    auto e = logic.register_host(owner == 0 ? user : owner, info, now);
    return std::get<ev::host_registered>(e.data).id;
  }

  id_type create(double predicted, std::string name = {}) {
    work_batch b;
    b.submitter = "test";
    work_spec w;
    w.app = "af";
    w.name = std::move(name);
    w.predicted_app_units = predicted;
    b.items.push_back(w);
    work_created out;
    auto events = logic.create_work(b, now, out);
    REQUIRE(static_cast<bool>(events));
    return out.ids.at(0);
  }

  /// A request of a client that runs the project's versions (CPU or GPU), reporting
  /// seconds_per_app_unit `spau` for that version (0: none).
  job_request request(id_type host, bool gpu, double spau = 0) {
    job_request r;
    r.host = host;
    r.info.p_ncpus = 1;
    r.info.p_fpops = 2e9;
    r.info.coprocs.emplace_back(static_cast<std::uint8_t>(resource_type::nvidia), 1);
    r.info.coproc_peak_flops.push_back(5e10);
    r.requests.resize(n_resource_types);
    r.requests[gpu ? 1 : 0] = resource_request{1, 1, 0};
    r.platform = "x86_64-pc-linux-gnu";
    if (spau > 0)
      r.unit_versions.push_back(app_unit_version{"af", 100, gpu ? "cuda" : "", spau, 0});
    return r;
  }

  std::vector<granted_job> select(const job_request& r) {
    std::vector<event> ev;
    return logic.select_jobs(r, now, ev);
  }

  /// Uploads the result's output as a client does before it reports: the validator compares
  /// the server's digests of received outputs, and a success without them is invalid.
  file_rec upload(result_ref r, id_type host) {
    file_rec file{logic.state.result_name(r) + "_0", 64, "m"};
    auto up = logic.output_received(file.name, host, 64, file.md5, now);
    REQUIRE(static_cast<bool>(up));
    return file;
  }

  /// A successful report of `units` app units in `elapsed` seconds, then the transitioner.
  std::vector<event>
  report(result_ref r, id_type host, double elapsed, double units, int state = 5) {
    report_rec rep;
    rep.success = state == 5;
    rep.client_state = state;
    rep.elapsed = elapsed;
    rep.cpu = elapsed;
    rep.app_units = units;
    if (rep.success)
      rep.outputs.push_back(upload(r, host));
    event e = make(ev::result_reported{r, host, rep});
    logic.apply_delivered(e);
    return logic.transition(r.wu, now);
  }

  const app_units_stats& stats() { return logic.state.autoflops.at(app().id); }
};

template <class T>
std::vector<T> of_kind(const std::vector<event>& events) {
  std::vector<T> out;
  for (const auto& e : events)
    if (auto x = std::get_if<T>(&e.data))
      out.push_back(*x);
  return out;
}

} // namespace

// -- statistics ------------------------------------------------------------------

TEST_CASE("running_stats keeps the mean and the sample variance", "[autoflops]") {
  running_stats s;
  CHECK(s.variance() == 0);
  for (double x : {2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0})
    s.add(x);
  s.add(std::numeric_limits<double>::quiet_NaN()); // ignored
  CHECK(s.n == 8);
  CHECK(s.mean == Approx(5));
  CHECK(s.variance() == Approx(32.0 / 7)); // sum of squares 32, n - 1 = 7
  CHECK(s.stdev() == Approx(std::sqrt(32.0 / 7)));
}

TEST_CASE("predictions are scaled by the ratio of the means, spread by X", "[autoflops]") {
  autoflops_settings s;
  s.min_samples = 4;
  s.warmup_bound_factor = 10;
  app_units_stats st;
  // No samples: the prediction as it is; the bound warms up.
  CHECK(prediction_factor(st, s, false) == 1);
  CHECK(prediction_factor(st, s, true) == 10);
  // Predictions three times too low, no spread.
  for (double p : {1.0, 10.0, 100.0})
    add_app_units(st, 3 * p, p);
  CHECK(st.actual.mean == Approx(111));
  CHECK(st.predicted.mean == Approx(37));
  CHECK(prediction_factor(st, s, false) == Approx(3)); // still warming up: ratio of means
  CHECK(prediction_factor(st, s, true) == Approx(30));
  add_app_units(st, 6, 2);
  CHECK(prediction_factor(st, s, false) == Approx(3));
  CHECK(prediction_factor(st, s, true) == Approx(3));
  // With spread: the design's formula on the ratio, or in log space.
  app_units_stats noisy;
  for (double r : {2.0, 4.0, 2.0, 4.0})
    add_app_units(noisy, r * 10, 10);
  CHECK(noisy.ratio.stdev() == Approx(std::sqrt(4.0 / 3)));
  s.log_ratio = false;
  CHECK(prediction_factor(noisy, s, false) == Approx(3 + 2 * std::sqrt(4.0 / 3)));
  CHECK(prediction_factor(noisy, s, true) == Approx(3 + 4 * std::sqrt(4.0 / 3)));
  s.log_ratio = true;
  double sd = noisy.log_ratio.stdev();
  CHECK(sd == Approx(std::log(2.0) / 2 * std::sqrt(4.0 / 3)));
  CHECK(prediction_factor(noisy, s, false) == Approx(3 * std::exp(2 * sd)));
  // Completion times: seconds_per_app_unit × predicted units × factor.
  auto ct = completion_times(0.5, 8, noisy, s);
  CHECK(ct.estimate == Approx(0.5 * 8 * 3 * std::exp(2 * sd)));
  CHECK(ct.bound == Approx(0.5 * 8 * 3 * std::exp(4 * sd)));
  // Unusable samples are not counted.
  add_app_units(noisy, 0, 5);
  add_app_units(noisy, 5, std::numeric_limits<double>::infinity());
  CHECK(noisy.ratio.n == 4);
}

TEST_CASE("est_flops_per_au: the 5th percentile of a full array, averaged exponentially",
          "[autoflops]") {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  CHECK(percentile(v, 0.05) == 5);
  CHECK(percentile(v, 1) == 100);
  CHECK(percentile({7}, 0.05) == 7);
  CHECK(percentile({}, 0.05) == 0);
  autoflops_settings s;
  s.flops_samples = 100;
  s.flops_alpha = 0.25;
  flops_array a;
  for (int i = 100; i >= 2; --i)
    add_flops_sample(a, i, s);
  CHECK(a.estimate == 0); // not full yet
  add_flops_sample(a, 1, s);
  CHECK(a.estimate == 5); // the first full array sets it
  CHECK(a.values.empty());
  for (int i = 1; i <= 100; ++i)
    add_flops_sample(a, 10.0 * i, s);
  CHECK(a.estimate == Approx(5 + 0.25 * (50 - 5)));
  CHECK(a.updates == 2);
  add_flops_sample(a, -1, s); // ignored
  add_flops_sample(a, std::numeric_limits<double>::infinity(), s);
  CHECK(a.values.empty());
}

TEST_CASE("raw_flops_per_au is elapsed × raw FLOPS / app units", "[autoflops]") {
  CHECK(*raw_flops_per_au(100, 2e9, 4) == Approx(5e10));
  CHECK_FALSE(raw_flops_per_au(100, 2e9, 0));
  CHECK_FALSE(raw_flops_per_au(0, 2e9, 1));
  CHECK_FALSE(raw_flops_per_au(std::numeric_limits<double>::quiet_NaN(), 2e9, 1));
}

TEST_CASE("GPU-only propagation averages the estimates of apps with both kinds", "[autoflops]") {
  CHECK_FALSE(propagated_flops_per_au({}));
  CHECK_FALSE(propagated_flops_per_au({0, -1}));
  CHECK(*propagated_flops_per_au({1e11, 3e11, 0}) == Approx(2e11));
}

TEST_CASE("unit_draw is deterministic and spread over 0 (included) to 1 (excluded)",
          "[autoflops]") {
  CHECK(unit_draw(5, 1) == unit_draw(5, 1));
  CHECK(unit_draw(5, 1) != unit_draw(6, 1));
  int below = 0;
  for (std::uint64_t i = 1; i <= 10000; ++i) {
    double d = unit_draw(i, 7);
    REQUIRE(d >= 0);
    REQUIRE(d < 1);
    below += d < 0.05;
  }
  CHECK(below > 400);
  CHECK(below < 600);
}

// -- the project -----------------------------------------------------------------------

TEST_CASE("validations feed the app's statistics: CPU and GPU arrays, the minimum wins",
          "[autoflops]") {
  af_fixture f;
  auto host = f.new_host();
  // CPU: peak 2e9; 10 s for 2 units = 1e10 raw FLOPs per unit. GPU: peak 5e10 (+0.1 CPU);
  // 10 s for 1 unit = 5.02e11 per unit.
  for (int i = 0; i < 4; ++i) {
    auto wu = f.create(1);
    auto jobs = f.select(f.request(host, false));
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].result.peak_flops_per_sec == 2e9);
    CHECK(jobs[0].result.predicted_app_units == 1);
    auto events = f.report(jobs[0].dispatched.result, host, 10, 2);
    auto samples = of_kind<ev::autoflops_sampled>(events);
    REQUIRE(samples.size() == 1);
    CHECK(samples[0].wu == wu);
    CHECK(samples[0].actual == 2);
    CHECK(samples[0].predicted == 1);
    REQUIRE(samples[0].samples.size() == 1);
    CHECK(samples[0].samples[0].value == Approx(1e10));
    CHECK_FALSE(samples[0].samples[0].gpu);
  }
  CHECK(f.stats().cpu.estimate == Approx(1e10)); // four samples fill the array of 4
  CHECK(f.stats().est_flops_per_au == Approx(1e10));
  CHECK(f.stats().actual.mean == 2);
  CHECK(f.stats().ratio.mean == 2);
  for (int i = 0; i < 4; ++i) {
    f.create(1);
    auto jobs = f.select(f.request(host, true));
    REQUIRE(jobs.size() == 1);
    f.report(jobs[0].dispatched.result, host, 10, 1);
  }
  CHECK(f.stats().gpu.estimate == Approx(10 * (5e10 + 0.1 * 2e9)));
  CHECK(f.stats().est_flops_per_au == Approx(1e10)); // the smaller one
  // The reply's app figures: the app has both kinds.
  auto infos = f.logic.app_units_infos({});
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].has_cpu_and_gpu);
  CHECK(infos[0].est_flops_per_au == Approx(1e10));
}

TEST_CASE("completion time estimate and bound reach BOINC clients as rsc_fpops_est/bound",
          "[autoflops]") {
  af_fixture f;
  auto host = f.new_host();
  // Five validated jobs: actual = 2 × predicted (statistics past min_samples 5, no spread).
  for (double p : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    f.create(p);
    auto jobs = f.select(f.request(host, false));
    REQUIRE(jobs.size() == 1);
    CHECK(jobs[0].result.est_seconds == 0); // no seconds_per_app_unit: no estimate
    f.report(jobs[0].dispatched.result, host, 10 * p, 2 * p);
  }
  f.create(3);
  auto jobs = f.select(f.request(host, false, 5)); // 5 s per app unit
  REQUIRE(jobs.size() == 1);
  const auto& j = jobs[0];
  CHECK(j.result.est_seconds == Approx(5 * 3 * 2));
  CHECK(j.result.bound_seconds == Approx(5 * 3 * 2));
  CHECK(j.runtime_estimate == Approx(30));
  // The client divides by its flops (p_fpops × avg_ncpus here): 30 s and a 30 s limit.
  CHECK(j.workunit.rsc_fpops_est / 2e9 == Approx(30));
  CHECK(j.workunit.rsc_fpops_bound / 2e9 == Approx(30));
  // In the reply XML.
  sched_reply reply;
  reply.workunits.push_back(j.workunit);
  reply.results.push_back(j.result);
  reply.app_units = f.logic.app_units_infos({f.app().id});
  auto xml = net::write_sched_reply(reply, net::reply_urls{"http://127.0.0.1:1", "p"});
  CHECK(xml.find("<rsc_fpops_bound>") != std::string::npos);
  CHECK(xml.find("<bound_seconds>") != std::string::npos);
  CHECK(xml.find("<peak_flops_per_sec>2e+09</peak_flops_per_sec>") != std::string::npos);
  CHECK(xml.find("<has_cpu_and_gpu/>") != std::string::npos);
  // What a client reads: BOINC's time limit is rsc_fpops_bound / flops = the bound.
  auto back = net::parse_sched_reply(xml);
  REQUIRE(back.ok());
  CHECK(back.value->workunits.at(0).rsc_fpops_bound / 2e9 == Approx(30));
  CHECK(back.value->workunits.at(0).rsc_fpops_est / 2e9 == Approx(30));
  CHECK(back.value->results.at(0).bound_seconds == Approx(30));
  CHECK(back.value->results.at(0).est_seconds == Approx(30));
  CHECK(back.value->results.at(0).predicted_app_units == 3);
  CHECK(back.value->app_units.at(0).app_name == "af");
}

TEST_CASE("one report of 1e6 app units does not starve clients that report seconds per unit",
          "[autoflops][limits]") {
  // What the attacker did on main: one validated report with app_units=1e6 moved the app's
  // running mean for good, and clients that report seconds_per_app_unit got 0 jobs after.
  auto jobs_after_attack = [](double app_units_factor) {
    af_fixture f;
    auto host = f.new_host();
    host_state hs; // the host's state, as the project actor keeps it
    hs.id = host;
    config::limits_config limits;
    limits.app_units_factor = app_units_factor;
    host_settings settings{0, f.logic.state.credit, autoflops_by_version(f.logic.state.apps),
                           resources_by_version(f.logic.state.apps), limits};
    // One job sent, run for 10 s and reported through host_logic with `units` app units.
    auto run = [&](double units) {
      f.create(1);
      std::vector<event> sent;
      auto jobs = f.logic.select_jobs(f.request(host, false), f.now, sent);
      REQUIRE(jobs.size() == 1);
      for (const auto& e : sent)
        if (auto d = std::get_if<ev::result_dispatched>(&e.data))
          apply(hs, e, f.logic.state.result_name(d->result), f.logic.state.credit);
      reported_result r;
      r.name = jobs[0].result.name;
      r.state = 5;
      r.final_elapsed_time = r.final_cpu_time = 10;
      r.app_units = units;
      f.upload(jobs[0].dispatched.result, host);
      r.files.push_back(reported_file{r.name + "_0", 64, "m"});
      sched_request q;
      q.results.push_back(r);
      host_logic hl{hs, settings};
      auto out = hl.report(q, f.now);
      REQUIRE(out.events.size() == 1);
      f.logic.apply_delivered(out.events[0]);
      f.logic.transition(jobs[0].dispatched.result.wu, f.now);
    };
    for (int i = 0; i < 5; ++i)
      run(1); // honest: as predicted
    run(1e6);
    f.create(1);
    return f.select(f.request(host, false, 5)).size(); // 5 s per app unit
  };
  CHECK(jobs_after_attack(100) == 1);  // the default factor: the report is kept out
  CHECK(jobs_after_attack(1e12) == 0); // no bound: the attack works as it did on main
}

TEST_CASE("estimates: all gives BOINC clients the server's seconds_per_app_unit", "[autoflops]") {
  auto cfg = af_project();
  CHECK(config::app_config{}.autoflops.estimates == config::estimate_clients::client); // default
  cfg.apps[0].rsc_fpops_est = 1e10;
  cfg.apps[0].rsc_fpops_bound = 1e11; // 50 s at 2e9 FLOPS
  af_fixture f{cfg};
  auto host = f.new_host();
  f.create(1);
  auto r = f.request(host, false);
  r.hints[f.app().versions[0].id].spau = average_var{3, 7};
  auto jobs = f.select(r);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].result.est_seconds == Approx(7));
  // Warm-up: the bound is the estimate × warmup_bound_factor (10)...
  CHECK(jobs[0].result.bound_seconds == Approx(70));
  CHECK(jobs[0].workunit.rsc_fpops_bound / 2e9 == Approx(70));
  // ...but never below the job's own rsc_fpops_bound while the host's record warms up.
  af_fixture d; // the default bound, 3.6e13: 18000 s
  auto hd = d.new_host();
  d.create(1);
  auto rd = d.request(hd, false);
  rd.hints[d.app().versions[0].id].spau = average_var{3, 7};
  auto loose = d.select(rd);
  REQUIRE(loose.size() == 1);
  CHECK(loose[0].result.est_seconds == Approx(7));
  CHECK(loose[0].result.bound_seconds == Approx(18000));
  CHECK(loose[0].workunit.rsc_fpops_bound == Approx(3.6e13));
  // Client only: a client that reports no seconds_per_app_unit gets no AutoFlops estimate.
  cfg.apps[0].autoflops.estimates = config::estimate_clients::client;
  af_fixture c{cfg};
  auto hc = c.new_host();
  c.create(1);
  auto rc = c.request(hc, false);
  rc.hints[c.app().versions[0].id].spau = average_var{3, 7};
  auto jobs_c = c.select(rc);
  REQUIRE(jobs_c.size() == 1);
  CHECK(jobs_c[0].result.est_seconds == 0);
  // Off: the job's own rsc_fpops figures.
  cfg.apps[0].autoflops.estimates = config::estimate_clients::off;
  af_fixture g{cfg};
  auto h2 = g.new_host();
  g.create(1);
  auto r2 = g.request(h2, false, 5);
  auto jobs2 = g.select(r2);
  REQUIRE(jobs2.size() == 1);
  CHECK(jobs2[0].result.est_seconds == 0);
  CHECK(jobs2[0].workunit.rsc_fpops_est == g.app().rsc_fpops_est);
}

TEST_CASE("a reference job runs on every host and alone feeds est_flops_per_au", "[autoflops]") {
  auto cfg = af_project();
  cfg.apps[0].autoflops.reference_job = "ref";
  cfg.apps[0].autoflops.flops_samples = 2;
  af_fixture f{cfg};
  auto ref = f.create(1, "ref");
  f.create(1);
  f.create(1);
  auto h1 = f.new_host(), h2 = f.new_host();
  // Each host gets the reference job first.
  auto j1 = f.select(f.request(h1, false));
  REQUIRE(j1.size() == 1);
  CHECK(j1[0].dispatched.result.wu == ref);
  auto e1 = f.report(j1[0].dispatched.result, h1, 10, 1);
  auto j2 = f.select(f.request(h2, false));
  REQUIRE(j2.size() == 1);
  CHECK(j2[0].dispatched.result.wu == ref);
  CHECK(j2[0].dispatched.result.index == 1); // a new replica for the second host
  // h1 then gets ordinary work; its sample does not count.
  auto j3 = f.select(f.request(h1, false));
  REQUIRE(j3.size() == 1);
  CHECK(j3[0].dispatched.result.wu != ref);
  auto e3 = f.report(j3[0].dispatched.result, h1, 1000, 1);
  auto s3 = of_kind<ev::autoflops_sampled>(e3);
  REQUIRE(s3.size() == 1);
  CHECK(s3[0].samples.empty());
  CHECK(s3[0].predicted == 1);
  auto e2 = f.report(j2[0].dispatched.result, h2, 20, 1);
  auto s2 = of_kind<ev::autoflops_sampled>(e2);
  REQUIRE(s2.size() == 1);
  CHECK(s2[0].samples.size() == 1);
  CHECK(f.stats().cpu.estimate == Approx(10 * 2e9)); // the 5th percentile of {2e10, 4e10}
}

// -- cherry picking --------------------------------------------------------------------

TEST_CASE("app_units policy: lone results get a check replica at random or under suspicion",
          "[autoflops]") {
  auto cfg = af_project(config::credit_policy_kind::app_units);
  cfg.apps[0].autoflops.resend_probability = 1;
  af_fixture f{cfg};
  // The check goes to another volunteer: one result of a workunit per user (the default).
  auto host = f.new_host(), twin = f.new_host(), other = f.new_host(f.new_user("other"));
  auto wu = f.create(1);
  auto jobs = f.select(f.request(host, false));
  auto events = f.report(jobs.at(0).dispatched.result, host, 10, 1);
  auto created = of_kind<ev::results_created>(events);
  REQUIRE(created.size() == 1);
  CHECK(created[0].check);
  CHECK(of_kind<ev::workunit_validated>(events).empty());
  CHECK(f.logic.state.workunit(wu)->params->min_quorum == 2);
  // The check goes to another user's host; agreement validates both.
  CHECK(f.select(f.request(host, false)).empty());
  CHECK(f.select(f.request(twin, false)).empty());
  auto check = f.select(f.request(other, false));
  REQUIRE(check.size() == 1);
  auto done = f.report(check[0].dispatched.result, other, 10, 1);
  REQUIRE(of_kind<ev::workunit_validated>(done).size() == 1);
  CHECK(of_kind<ev::workunit_validated>(done)[0].verdicts.size() == 2);

  // Probability 0: only a suspect host's result is checked.
  cfg.apps[0].autoflops.resend_probability = 0;
  af_fixture g{cfg};
  auto h = g.new_host();
  g.create(1);
  auto j = g.select(g.request(h, false));
  auto plain = g.report(j.at(0).dispatched.result, h, 10, 1);
  CHECK(of_kind<ev::results_created>(plain).empty());
  CHECK(of_kind<ev::workunit_validated>(plain).size() == 1);
  g.create(1);
  auto j2 = g.select(g.request(h, false));
  report_rec rep;
  rep.success = true;
  rep.client_state = 5;
  rep.elapsed = 10;
  rep.flags = flag_suspect;
  rep.outputs.push_back(g.upload(j2.at(0).dispatched.result, h));
  g.logic.apply_delivered(make(ev::result_reported{j2.at(0).dispatched.result, h, rep}));
  auto suspect = g.logic.transition(j2.at(0).dispatched.result.wu, g.now);
  REQUIRE(of_kind<ev::results_created>(suspect).size() == 1);
  CHECK(of_kind<ev::results_created>(suspect)[0].reason.find("suspicion") != std::string::npos);
}

TEST_CASE("app_units policy: an abort or timeout cuts the daily quota by the factor",
          "[autoflops]") {
  host_state h;
  credit_settings cs;
  apply(h, make(ev::host_registered{1, 1, {}}), {});
  auto dispatch = [&](std::uint32_t index, const std::string& name) {
    apply(h,
          make(ev::result_dispatched{result_ref{1, index}, 1, t0 + 86400 * us_per_second,
                                     version_echo{1, "p", 1, ""}, 1e9, 40}),
          name, cs);
  };
  dispatch(0, "a_0");
  dispatch(1, "a_1");
  dispatch(2, "a_2");
  REQUIRE(h.app_versions.at(1).max_jobs_per_day == 40);
  report_rec aborted;
  aborted.client_state = client_state_aborted;
  auto r = ev::result_reported{result_ref{1, 0}, 1, aborted};
  r.quota_factor = 0.5;
  apply(h, make(r), "a_0", cs);
  CHECK(h.app_versions.at(1).max_jobs_per_day == 20);
  // Under the pfc policy (factor 1) an abort costs nothing.
  r.result = result_ref{1, 1};
  r.quota_factor = 1;
  apply(h, make(r), "a_1", cs);
  CHECK(h.app_versions.at(1).max_jobs_per_day == 20);
  apply(h, make(ev::result_timed_out{result_ref{1, 2}, 1, 0.25}), "a_2", cs);
  CHECK(h.app_versions.at(1).max_jobs_per_day == 5);
  // The host actor's settings: the app's, for every version and the anonymous identities.
  auto apps = std::vector<app_rec>{};
  apps.emplace_back();
  apps[0].id = 2;
  apps[0].versions.emplace_back();
  apps[0].versions.back().id = 7;
  apps[0].autoflops.policy = credit_policy::app_units;
  auto by = autoflops_by_version(apps);
  CHECK(by.at(7).policy == credit_policy::app_units);
  CHECK(by.at(anonymous_version_id(2, 1)).policy == credit_policy::app_units);
}

namespace {

/// A BOINC client's host next to the project logic: it reports no app units and no
/// seconds_per_app_unit; its host_state is what its host actor keeps, and its requests carry
/// the hints the host actor builds from it.
struct boinc_host {
  af_fixture& f;
  id_type id;
  host_state h;
  credit_settings cs;

  explicit boinc_host(af_fixture& fx) : f(fx), id(fx.new_host()) {
    apply(h, make(ev::host_registered{id, f.user, {}}), {}, cs);
  }

  job_request request() {
    auto r = f.request(id, false);
    for (const auto& [vid, hav] : h.app_versions)
      r.hints[vid] = version_hint{hav.jobs_left(f.now), hav.et, hav.spau, hav.spau_var};
    return r;
  }

  /// Creates a job of `predicted` app units and takes it.
  granted_job take(double predicted) {
    f.create(predicted);
    auto jobs = f.select(request());
    REQUIRE(jobs.size() == 1);
    apply(h, make(jobs[0].dispatched, f.now), f.logic.state.result_name(jobs[0].dispatched.result),
          cs);
    return jobs[0];
  }

  /// Reports it done in `elapsed` seconds, without app units.
  void finish(const granted_job& j, double elapsed) {
    auto r = j.dispatched.result;
    auto name = f.logic.state.result_name(r);
    f.report(r, id, elapsed, 0);
    report_rec rep;
    rep.success = true;
    rep.client_state = 5;
    rep.elapsed = elapsed;
    apply(h, make(ev::result_reported{r, id, rep}, f.now), name, cs);
  }

  const host_app_version_rec& hav() const { return h.app_versions.at(f.app().versions[0].id); }
};

/// Runs `n` jobs of one predicted app unit that take 10 s × exp(sigma × z), z standard normal
/// (a fixed seed).
void run_unit_jobs(boinc_host& b, int n, double sigma, unsigned seed) {
  std::mt19937 rng{seed};
  std::normal_distribution<double> z;
  for (int i = 0; i < n; ++i) {
    auto j = b.take(1);
    b.finish(j, 10 * std::exp(sigma * z(rng)));
  }
}

} // namespace

TEST_CASE("a BOINC client's time limit follows the bound: per predicted app unit, its own spread",
          "[autoflops]") {
  af_fixture f; // estimates: all, min_samples 5, log_ratio
  boinc_host noisy{f};
  // Jobs of one predicted unit, 10 s each with multiplicative noise (σ 0.25 in log).
  run_unit_jobs(noisy, 40, 0.25, 7);
  const auto& hav = noisy.hav();
  CHECK(hav.spau_var.with_units == 0);
  CHECK(hav.spau_var.log.n == 40);
  double mean = hav.spau.avg;
  double sd = hav.spau_var.log.stdev();
  CHECK(mean == Approx(10).epsilon(0.3));
  CHECK(sd > 0.12);
  CHECK(sd < 0.5);
  // Reports without app units are no actual samples of the app's statistics.
  auto st = f.logic.state.autoflops.find(f.app().id);
  CHECK((st == f.logic.state.autoflops.end() || st->second.actual.n == 0));
  // A job predicted at 50 units: BOINC's time limit (rsc_fpops_bound / flops, flops = 2e9
  // here) is 50 × the host's time per unit × exp(4σ); the estimate × exp(2σ).
  auto big = noisy.take(50);
  double limit = big.workunit.rsc_fpops_bound / 2e9;
  CHECK(limit == Approx(50 * mean * std::exp(4 * sd)));
  CHECK(big.workunit.rsc_fpops_est / 2e9 == Approx(50 * mean * std::exp(2 * sd)));
  CHECK(big.result.bound_seconds == Approx(limit));
  CHECK(limit > 50 * mean * 1.5); // well above the mean time
  CHECK(limit < 50 * mean * 10);  // and not a blanket factor
  // Its report, without app units, is a sample of 500 / 50 = 10 s per unit (not 500 per job).
  noisy.finish(big, 500);
  CHECK(noisy.hav().spau.avg == Approx(mean + 0.1 * (10 - mean)));

  // A steady host gets a narrower bound, but never the bare mean (host_min_spread 0.1).
  boinc_host steady{f};
  run_unit_jobs(steady, 40, 0.01, 7);
  double steady_mean = steady.hav().spau.avg;
  CHECK(steady.hav().spau_var.log.stdev() < 0.05);
  auto s50 = steady.take(50);
  double steady_limit = s50.workunit.rsc_fpops_bound / 2e9;
  CHECK(steady_limit == Approx(50 * steady_mean * std::exp(4 * 0.1)));
  CHECK(steady_limit / (50 * steady_mean) < limit / (50 * mean));
  CHECK(steady_limit > 50 * steady_mean * 1.4);
}

TEST_CASE("host_completion_times: warm-up, log and linear spread, the floor", "[autoflops]") {
  autoflops_settings s;
  s.min_samples = 4;
  spau_spread h;
  for (double x : {8.0, 12.0, 8.0})
    h.add(x, false, 10, 0.1);
  // Warm-up: the mean time, the bound × warmup_bound_factor.
  auto w = host_completion_times(10, 5, h, s);
  CHECK(w.estimate == Approx(50));
  CHECK(w.bound == Approx(500));
  h.add(12, false, 10, 0.1);
  CHECK(h.value.mean == Approx(10));
  CHECK(h.value.variance() == Approx(16.0 / 3)); // Welford while straight
  double sd = h.log.stdev();
  CHECK(sd == Approx(std::log(1.5) / 2 * std::sqrt(4.0 / 3)));
  auto t = host_completion_times(10, 5, h, s);
  CHECK(t.estimate == Approx(50 * std::exp(2 * sd)));
  CHECK(t.bound == Approx(50 * std::exp(4 * sd)));
  s.log_ratio = false;
  double cv = std::sqrt(16.0 / 3) / 10;
  auto l = host_completion_times(10, 5, h, s);
  CHECK(l.estimate == Approx(50 * (1 + 2 * cv)));
  CHECK(l.bound == Approx(50 * (1 + 4 * cv)));
  s.host_min_spread = 1;
  CHECK(host_completion_times(10, 5, h, s).bound == Approx(50 * 5));
  // After the straight samples the spread is averaged exponentially.
  spread_stats e;
  for (int i = 0; i < 200; ++i)
    e.add(i % 2 ? 1.0 : -1.0, 10, 0.1);
  CHECK(e.mean == Approx(0).margin(0.1));
  CHECK(e.variance() == Approx(1).epsilon(0.15));
  // Reports with app units are counted apart; unusable samples are ignored.
  spau_spread m;
  m.add(3, true, 10, 0.1);
  m.add(0, false, 10, 0.1);
  m.add(std::numeric_limits<double>::infinity(), false, 10, 0.1);
  CHECK(m.with_units == 1);
  CHECK(m.value.n == 1);
}

TEST_CASE("the server's seconds_per_app_unit follows reported app units", "[autoflops]") {
  host_state h;
  credit_settings cs;
  apply(h, make(ev::host_registered{1, 1, {}}), {});
  apply(h,
        make(ev::result_dispatched{result_ref{1, 0}, 1, t0 + 86400 * us_per_second,
                                   version_echo{1, "p", 1, ""}, 1e9, 0}),
        "a_0", cs);
  report_rec rep;
  rep.success = true;
  rep.client_state = 5;
  rep.elapsed = 100;
  rep.app_units = 4;
  apply(h, make(ev::result_reported{result_ref{1, 0}, 1, rep}), "a_0", cs);
  CHECK(h.app_versions.at(1).spau.avg == Approx(25));
  CHECK(h.app_versions.at(1).spau_var.with_units == 1);
  // A report without app units counts the job's predicted ones (from the dispatch).
  ev::result_dispatched d{
    result_ref{1, 1}, 1, t0 + 86400 * us_per_second, version_echo{1, "p", 1, ""}, 1e9, 0, 8};
  apply(h, make(d), "a_1", cs);
  CHECK(h.in_progress.at("a_1").predicted_app_units == 8);
  rep.app_units = 0;
  rep.elapsed = 200;
  apply(h, make(ev::result_reported{result_ref{1, 1}, 1, rep}), "a_1", cs);
  CHECK(h.app_versions.at(1).spau.avg == Approx(25)); // 200 / 8
  CHECK(h.app_versions.at(1).spau_var.value.n == 2);
}

// -- work creation and formats --------------------------------------------------------------

TEST_CASE("create_work takes predicted_app_units and rejects bad ones", "[autoflops]") {
  af_fixture f;
  auto id = f.create(12.5);
  CHECK(f.logic.state.workunit(id)->params->predicted_app_units == 12.5);
  work_batch plain;
  plain.items.push_back(work_spec{});
  plain.items[0].app = "af";
  work_created out;
  REQUIRE(f.logic.create_work(plain, f.now, out));
  CHECK(f.logic.state.workunit(out.ids.at(0))->params->predicted_app_units == 1);
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    work_batch b;
    b.items.push_back(work_spec{});
    b.items[0].app = "af";
    b.items[0].predicted_app_units = bad;
    work_created o;
    auto before = f.logic.state.workunits.size();
    auto r = f.logic.create_work(b, f.now, o);
    REQUIRE_FALSE(r);
    CHECK(describe(r.error()).find("predicted_app_units must be a positive number")
          != std::string::npos);
    CHECK(f.logic.state.workunits.size() == before);
  }
}

TEST_CASE("older payload versions decode with AutoFlops defaults", "[autoflops][events]") {
  // workunit_created v1: no predicted_app_units.
  wu_params p;
  p.predicted_app_units = 7;
  event wc = make(ev::workunit_created{3, "w", 1, p, 1, "x"});
  auto rec = to_record(wc);
  CHECK(static_cast<std::uint8_t>(rec.payload[0]) == 3); // 3: batch keys (2: predicted units)
  REQUIRE(from_record(rec));
  CHECK(std::get<ev::workunit_created>(from_record(rec)->data).params.predicted_app_units == 7);
  rec.payload.clear();
  {
    storage::writer w{rec.payload};
    w.put_u8(1);
    storage::encoder enc{w, 1};
    enc.put(std::get<ev::workunit_created>(wc.data));
  }
  auto old = from_record(rec);
  REQUIRE(old);
  CHECK(std::get<ev::workunit_created>(old->data).params.predicted_app_units == 1);
  // result_reported v2: no app units, no quota factor.
  report_rec rep;
  rep.app_units = 9;
  rep.raw_flops_per_au = 3e9;
  ev::result_reported rr{result_ref{3, 0}, 4, rep};
  rr.quota_factor = 0.5;
  auto r2 = to_record(make(rr));
  CHECK(std::get<ev::result_reported>(from_record(r2)->data).report.app_units == 9);
  CHECK(std::get<ev::result_reported>(from_record(r2)->data).quota_factor == 0.5);
  r2.payload.clear();
  {
    storage::writer w{r2.payload};
    w.put_u8(2);
    storage::encoder enc{w, 2};
    enc.put(rr);
  }
  auto o2 = from_record(r2);
  REQUIRE(o2);
  CHECK(std::get<ev::result_reported>(o2->data).report.app_units == 0);
  CHECK(reported_app_units(std::get<ev::result_reported>(o2->data).report) == 1);
  CHECK(std::get<ev::result_reported>(o2->data).quota_factor == 1);
  // project_configured v2: default AutoFlops settings.
  app_rec a;
  a.name = "x";
  a.autoflops.est_x = 3;
  ev::project_configured pc{"p", "P", {a}, {}};
  auto r3 = to_record(make(pc));
  CHECK(std::get<ev::project_configured>(from_record(r3)->data).apps.at(0).autoflops.est_x == 3);
  r3.payload.clear();
  {
    storage::writer w{r3.payload};
    w.put_u8(2);
    storage::encoder enc{w, 2};
    enc.put(pc);
  }
  CHECK(std::get<ev::project_configured>(from_record(r3)->data).apps.at(0).autoflops.est_x == 2);
  // project_configured v3: host_min_spread takes its default.
  a.autoflops.host_min_spread = 0.3;
  ev::project_configured pc3{"p", "P", {a}, {}};
  auto r4 = to_record(make(pc3));
  CHECK(static_cast<std::uint8_t>(r4.payload[0]) == 6); // host_min_spread since 4
  CHECK(std::get<ev::project_configured>(from_record(r4)->data).apps.at(0).autoflops.host_min_spread
        == 0.3);
  r4.payload.clear();
  {
    storage::writer w{r4.payload};
    w.put_u8(3);
    storage::encoder enc{w, 3};
    enc.put(pc3);
  }
  REQUIRE(from_record(r4));
  CHECK(std::get<ev::project_configured>(from_record(r4)->data).apps.at(0).autoflops.host_min_spread
        == 0.1);
  CHECK(std::get<ev::project_configured>(from_record(r4)->data).apps.at(0).autoflops.est_x == 3);
  // result_dispatched v2: no predicted app units (decodes as 1); v3 keeps them.
  ev::result_dispatched rd{result_ref{3, 1}, 4, t0, version_echo{1, "p", 1, ""}, 2e9, 40, 50};
  auto r5 = to_record(make(rd));
  CHECK(static_cast<std::uint8_t>(r5.payload[0]) == 3);
  CHECK(std::get<ev::result_dispatched>(from_record(r5)->data).predicted_app_units == 50);
  r5.payload.clear();
  {
    storage::writer w{r5.payload};
    w.put_u8(2);
    storage::encoder enc{w, 2};
    enc.put(rd);
  }
  auto o5 = from_record(r5);
  REQUIRE(o5);
  const auto& old_d = std::get<ev::result_dispatched>(o5->data);
  CHECK(old_d.predicted_app_units == 1);
  CHECK(old_d.peak_flops == 2e9);
  CHECK(old_d.jobs_per_day == 40);
  host_state h;
  apply(h, *o5, "w_1");
  CHECK(h.in_progress.at("w_1").predicted_app_units == 1);
}

TEST_CASE("snapshots keep the AutoFlops statistics", "[autoflops][snapshot]") {
  af_fixture f;
  auto host = f.new_host();
  world w;
  for (int i = 0; i < 5; ++i) {
    f.create(1);
    auto jobs = f.select(f.request(host, false));
    f.report(jobs.at(0).dispatched.result, host, 10, 3);
  }
  // A BOINC client's host: a held job's predicted units and the spread of its samples.
  boinc_host b{f};
  run_unit_jobs(b, 3, 0.2, 1);
  b.take(12);
  w.projects.push_back(
    project_world{f.logic.state, {}, {}, {}}); // project_state copies, never assigns
  w.projects[0].hosts[b.id] = b.h;
  auto blob = encode_snapshot(w);
  // The current format (AutoFlops statistics since 5, held units and spread since 6).
  CHECK(snapshot_format(blob) == snapshot_version);
  static_assert(snapshot_version >= 6);
  auto back = decode_snapshot(blob);
  REQUIRE(back);
  CHECK(back->projects[0].project.autoflops == f.logic.state.autoflops);
  CHECK(back->projects[0].project.autoflops.at(1).actual.n == 5);
  const auto& hb = back->projects[0].hosts.at(b.id);
  CHECK(hb == b.h);
  REQUIRE(hb.in_progress.size() == 1);
  CHECK(hb.in_progress.begin()->second.predicted_app_units == 12);
  CHECK(hb.app_versions.begin()->second.spau_var.log.n == 3);
}

TEST_CASE("the request's AutoFlops fields parse, and BOINC requests have none", "[autoflops]") {
  sched_request req;
  req.authenticator = "k";
  reported_result r;
  r.name = "wu_0";
  r.app_units = 12;
  r.raw_flops_per_au = 4e9;
  req.results.push_back(r);
  req.app_unit_versions.push_back(app_unit_version{"af", 100, "cuda", 2.5, 1e10});
  auto xml = net::write_sched_request(req);
  auto back = net::parse_sched_request(xml);
  REQUIRE(back.ok());
  CHECK(back.value->results.at(0).app_units == 12);
  CHECK(back.value->results.at(0).raw_flops_per_au == 4e9);
  REQUIRE(back.value->app_unit_versions.size() == 1);
  CHECK(back.value->app_unit_versions[0].plan_class == "cuda");
  CHECK(back.value->app_unit_versions[0].seconds_per_app_unit == 2.5);
  CHECK(back.value->app_unit_versions[0].raw_flops_per_sec == 1e10);
  auto plain = net::parse_sched_request(
    "<scheduler_request><authenticator>k</authenticator><result><name>a_0</name>"
    "<state>5</state></result></scheduler_request>");
  REQUIRE(plain.ok());
  CHECK(plain.value->results.at(0).app_units == 0);
  CHECK(plain.value->app_unit_versions.empty());
}

// -- credit policy ---------------------------------------------------------------------------

TEST_CASE("app_units credit policy: mean app units × est_flops_per_au for every job",
          "[autoflops][credit]") {
  auto cfg = af_project(config::credit_policy_kind::app_units);
  cfg.apps[0].autoflops.resend_probability = 0;
  af_fixture f{cfg};
  auto host = f.new_host();
  std::vector<double> granted;
  // CPU jobs at 1e10 raw FLOPs per unit: the array (N = 4) fills with the fourth, whose own
  // credit is decided before its sample counts.
  for (double units : {1.0, 2.0, 3.0, 6.0, 10.0, 1.0}) {
    f.create(1);
    auto jobs = f.select(f.request(host, false));
    REQUIRE(jobs.size() == 1);
    auto events = f.report(jobs[0].dispatched.result, host, 5 * units, units);
    auto v = of_kind<ev::workunit_validated>(events);
    REQUIRE(v.size() == 1);
    granted.push_back(v[0].credit.at(0).granted);
    if (granted.size() <= 4)
      CHECK((v[0].credit.at(0).flags & credit_app_units) == 0); // PFC until the estimate
    else
      CHECK((v[0].credit.at(0).flags & credit_app_units) != 0);
  }
  // PFC while there is no estimate: elapsed × peak.
  CHECK(granted[0] == Approx(cobblestones(5 * 2e9, f.logic.state.credit)));
  CHECK(granted[3] == Approx(cobblestones(30 * 2e9, f.logic.state.credit)));
  // Then the same for a job whatever its size: mean units (1+2+3+6)/4 = 3 × 1e10 for the
  // 10-unit job, (1+2+3+6+10)/5 = 4.4 × 1e10 for the 1-unit job after it.
  CHECK(granted[4] == Approx(cobblestones(3 * 1e10, f.logic.state.credit)));
  CHECK(granted[5] == Approx(cobblestones(4.4 * 1e10, f.logic.state.credit)));
}
