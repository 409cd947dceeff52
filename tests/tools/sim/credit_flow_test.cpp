/// The credit system in the actors, driven deterministically through the in-process harness
/// (CAF's test coordinator, virtual time): granted credit reaches the workunit, the user and
/// host totals and the scheduler reply; app versions learn PFCmean(V); the normalization timer
/// runs on virtual time; the daily quota and the runtime estimate act on dispatch; recovery
/// rebuilds every number, and each test's node ends with its live states equal to a replay of
/// its log.

#include "../../support/replay_check.hpp"
#include "../../support/temp_dir.hpp"
#include "actors/log.hpp"
#include "actors/state.hpp"
#include "net/admin_json.hpp"
#include "tools/sim/harness.hpp"

#include <catch2/catch.hpp>

using namespace cobble;

namespace {

constexpr double est = 1e12;

config::cobble_config lab_config(int quorum, int jobs_per_day = 200) {
  config::cobble_config cfg;
  auto& p = cfg.projects.emplace_back();
  p.name = "p";
  p.credit.version_sample_threshold = 2;
  p.credit.host_sample_threshold = 2;
  p.users.push_back({"u", "u@example.org", "key-u", "crunchers"});
  p.limits = sim::lab_limits(); // RPCs in a loop: the quotas, not the limits, are tested
  auto& a = p.apps.emplace_back();
  a.name = "labapp";
  a.min_quorum = a.target_nresults = quorum;
  a.one_result_per_user_per_wu = false; // the one user's hosts make up the quorum
  a.max_jobs_per_rpc = 1;
  a.max_jobs_per_day = jobs_per_day;
  a.rsc_fpops_est = est;
  a.rsc_fpops_bound = 1000 * est;
  a.versions.emplace_back();
  return cfg;
}

sched_request
request(id_type hostid, double fpops, bool want, std::vector<reported_result> results = {}) {
  sched_request r;
  r.authenticator = "key-u";
  r.hostid = hostid;
  r.platform_name = "x86_64-pc-linux-gnu";
  r.host.p_ncpus = 1;
  r.host.p_fpops = fpops;
  r.host.host_cpid = "h" + std::to_string(static_cast<long long>(fpops));
  if (want)
    r.cpu = resource_request{1, 1, 0};
  r.results = std::move(results);
  return r;
}

reported_result success(const std::string& name, double elapsed) {
  reported_result r;
  r.name = name;
  r.state = 5;
  r.final_elapsed_time = elapsed;
  r.final_cpu_time = elapsed;
  r.files.push_back(reported_file{name + "_0", 64, "00112233445566778899aabbccddeeff"});
  return r;
}

/// A client's turn that reports results: it uploads their outputs first, as BOINC's does.
caf::expected<sched_reply_ptr> report(sim::harness& h, sched_request r) {
  h.upload_outputs(h.project("p"), r);
  return h.rpc("p", std::move(r));
}

work_batch jobs(int n, int from = 0) {
  work_batch b;
  b.submitter = "test";
  for (int i = 0; i < n; ++i) {
    work_spec w;
    w.app = "labapp";
    w.name = "w" + std::to_string(from + i);
    b.items.push_back(std::move(w));
  }
  return b;
}

} // namespace

TEST_CASE("granted credit reaches the workunit, the totals and the scheduler reply",
          "[sim][credit]") {
  sim::harness_options o;
  o.config = lab_config(2);
  test::checked_harness h{o};
  REQUIRE(h.create_work("p", jobs(1)));
  auto a = h.rpc("p", request(0, 1e9, true));
  auto b = h.rpc("p", request(0, 2e9, true));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE((*a)->results.size() == 1);
  REQUIRE((*b)->results.size() == 1);
  auto ha = *(*a)->hostid, hb = *(*b)->hostid;
  h.advance(1000 * us_per_second);
  REQUIRE(report(h, request(ha, 1e9, false, {success((*a)->results[0].name, 1000)})));
  REQUIRE(report(h, request(hb, 2e9, false, {success((*b)->results[0].name, 1000)})));
  // PFC 1e12 and 2e12 FLOPs: claims of 1e12 and 2e12 / 8.64e11 Cobblestones; the quorum's
  // grant is their mean.
  auto w = h.workunit("p", "w0");
  REQUIRE(w);
  REQUIRE((*w)->wu.state == wu_state::assimilated);
  const auto& r0 = (*w)->wu.results[0];
  const auto& r1 = (*w)->wu.results[1];
  CHECK(r0.peak_flops + r1.peak_flops == 3e9);
  CHECK(r0.credit->claimed + r1.credit->claimed == Approx(3e12 / 864e9));
  double granted = 1.5e12 / 864e9;
  CHECK(r0.credit->granted == Approx(granted));
  CHECK(r1.credit->granted == Approx(granted));
  // Totals: each host's, and the user's (both hosts are hers); the reply tells the client.
  auto next = h.rpc("p", request(ha, 1e9, false));
  REQUIRE(next);
  CHECK((*next)->host_total_credit == Approx(granted));
  CHECK((*next)->user_total_credit == Approx(2 * granted));
  CHECK((*next)->host_expavg_credit > 0);
  CHECK((*next)->user_expavg_credit > (*next)->host_expavg_credit);
  auto hv = h.host("p", ha);
  REQUIRE(hv);
  CHECK((*hv)->reg.credit.total == Approx(granted));
  // The user's team adds up its members' credit.
  auto status = h.status("p");
  REQUIRE(status);
  REQUIRE((*status)->teams.count("crunchers") == 1);
  CHECK((*status)->teams.at("crunchers").total == Approx(2 * granted));
  // The hosts learned PFC/E and elapsed/E for their (host, app version) records.
  const auto& hav = (*hv)->state->app_versions.at(1);
  CHECK(hav.pfc.n == 1);
  CHECK(hav.et.avg == Approx(1000 / est));
  CHECK(hav.turnaround.avg == Approx(1000));
  // The app version learned PFCmean(V); the normalization timer (10 min of virtual time)
  // records it for the validator.
  auto before = h.ask<credit_export_ptr>(h.project("p"), atom::credit_v);
  REQUIRE(before);
  h.advance(600 * us_per_second);
  auto after = h.ask<credit_export_ptr>(h.project("p"), atom::credit_v);
  REQUIRE(after);
  REQUIRE((*after)->versions.size() == 1);
  CHECK((*after)->versions[0].expavg_credit > 0);
  CHECK((*after)->versions[0].scale == 1); // one version: X is undefined, Scale(V) stays 1
}

TEST_CASE("the daily quota and R(J,H) act on dispatch", "[sim][credit]") {
  sim::harness_options o;
  o.config = lab_config(1, 4);
  o.start = (o.start / (86400 * us_per_second)) * 86400 * us_per_second + 3600 * us_per_second;
  test::checked_harness h{o};
  REQUIRE(h.create_work("p", jobs(10)));
  auto first = h.rpc("p", request(0, 1e9, true));
  REQUIRE(first);
  auto id = *(*first)->hostid;
  CHECK((*first)->workunits.at(0).rsc_fpops_est == est); // no statistics yet: E(J)
  auto name = (*first)->results.at(0).name;
  int sent = 1;
  // Each job takes 3000 s on a 1e9 host that the client thinks does one job in 1000 s.
  for (int i = 0; i < 5; ++i) {
    h.advance(3000 * us_per_second);
    auto r = report(h, request(id, 1e9, true, {success(name, 3000)}));
    REQUIRE(r);
    if ((*r)->results.empty())
      break;
    ++sent;
    name = (*r)->results.at(0).name;
    if (sent == 4) {
      // The host knows two validated jobs (the third is validated after this request):
      // ETmean(H,V) = 3e-9 s/FLOP, so R(J,H) = 3000 s, and the client, which divides by its
      // 1e9 FLOPS, is told 3e12.
      CHECK((*r)->workunits.at(0).rsc_fpops_est == Approx(3 * est));
      CHECK((*r)->workunits.at(0).rsc_fpops_bound == Approx(3000 * est));
    }
  }
  // The quota (4 per CPU per day; the host has one CPU) stops the fifth job of the day.
  CHECK(sent == 4);
  auto hv = h.host("p", id);
  REQUIRE(hv);
  CHECK((*hv)->state->app_versions.at(1).n_jobs_today == 4);
  // The next UTC day brings new jobs.
  h.advance(86400 * us_per_second);
  auto later = report(h, request(id, 1e9, true, {success(name, 3000)}));
  REQUIRE(later);
  CHECK((*later)->results.size() == 1);
}

TEST_CASE("the daily quota is scaled by the host's CPUs", "[sim][credit]") {
  sim::harness_options o;
  o.config = lab_config(1, 2);
  o.start = (o.start / (86400 * us_per_second)) * 86400 * us_per_second + 3600 * us_per_second;
  test::checked_harness h{o};
  REQUIRE(h.create_work("p", jobs(10)));
  id_type id = 0;
  int sent = 0;
  for (int i = 0; i < 10; ++i) {
    auto r = request(id, 1e9, true);
    r.host.p_ncpus = 3;
    auto reply = h.rpc("p", r);
    REQUIRE(reply);
    if ((*reply)->hostid)
      id = *(*reply)->hostid;
    sent += static_cast<int>((*reply)->results.size());
  }
  // 2 per CPU, 3 CPUs: 6 jobs today.
  CHECK(sent == 6);
  auto hv = h.host("p", id);
  REQUIRE(hv);
  CHECK((*hv)->state->app_versions.at(1).max_jobs_per_day == 6);
  CHECK((*hv)->state->app_versions.at(1).n_jobs_today == 6);
}

TEST_CASE("a job the host cannot finish by its deadline by R(J,H) is not sent", "[sim][credit]") {
  sim::harness_options o;
  o.config = lab_config(1);
  o.config.projects[0].apps[0].delay_bound = 10000;
  test::checked_harness h{o};
  REQUIRE(h.create_work("p", jobs(4)));
  // Two jobs of 3000 s each on a host the client thinks does one in 1000 s: R(J,H) = 3000 s.
  auto r = h.rpc("p", request(0, 1e9, true));
  REQUIRE(r);
  auto id = *(*r)->hostid;
  for (int i = 0; i < 2; ++i) {
    h.advance(3000 * us_per_second);
    r = report(h, request(id, 1e9, i == 0, {success((*r)->results.at(0).name, 3000)}));
    REQUIRE(r);
  }
  auto asking = [&](double delay) {
    auto q = request(id, 1e9, true);
    q.cpu.estimated_delay = delay;
    auto reply = h.rpc("p", q);
    REQUIRE(reply);
    return (*reply)->results.size();
  };
  // Busy for 8000 s more: 8000 + 3000 > the 10000 s delay bound. (By E(J) alone, 1000 s, it
  // would have fitted.)
  CHECK(asking(8000) == 0);
  // Busy for 5000 s: it fits.
  CHECK(asking(5000) == 1);
}

TEST_CASE("recovery rebuilds every credit number", "[sim][credit]") {
  test::temp_dir dir{"credit"};
  sim::harness_options o;
  o.config = lab_config(1);
  o.data_dir = dir.path();
  host_state before;
  user_rec user_before;
  id_type id = 0;
  {
    test::checked_harness h{o};
    REQUIRE(h.create_work("p", jobs(5)));
    auto r = h.rpc("p", request(0, 1e9, true));
    REQUIRE(r);
    id = *(*r)->hostid;
    for (int i = 0; i < 4; ++i) {
      h.advance(2000 * us_per_second);
      r = report(h, request(id, 1e9, true, {success((*r)->results.at(0).name, 2000)}));
      REQUIRE(r);
    }
    h.advance(600 * us_per_second);
    auto hv = h.host("p", id);
    REQUIRE(hv);
    before = *(*hv)->state;
    auto users = h.ask<user_list_ptr>(h.project("p"), atom::list_v, atom::user_v);
    REQUIRE(users);
    user_before = (*users)->at(0);
    CHECK(user_before.credit.total > 0);
    CHECK(before.app_versions.at(1).pfc.n == 4);
  }
  test::checked_harness again{o};
  auto hv = again.host("p", id);
  REQUIRE(hv);
  CHECK(*(*hv)->state == before);
  auto users = again.ask<user_list_ptr>(again.project("p"), atom::list_v, atom::user_v);
  REQUIRE(users);
  CHECK((*users)->at(0) == user_before);
  // Replaying the whole log gives the same world as the snapshot the shutdown wrote.
  auto scratch = recover(again.store(), true);
  auto snap = recover(again.store(), false);
  REQUIRE(scratch);
  REQUIRE(snap);
  CHECK(*scratch == *snap);
}

// -- cross-project normalization (item 7) ---------------------------------------------

namespace {

constexpr double gpu_peak = 1e11;

/// A version for NVIDIA GPUs in plan class "cuda" (0.05 CPU besides the GPU, as BOINC's).
config::app_version_config cuda_version() {
  config::app_version_config v;
  v.plan_class = "cuda";
  v.avg_ncpus = 0.05;
  v.coproc_type = "NVIDIA";
  v.coproc_count = 1;
  return v;
}

/// A project with an app "both" (a CPU and a cuda version) when `with_both`, and an app
/// "gpuonly" that has only a cuda version; one replica per job.
config::cobble_config gpu_config(bool with_both) {
  auto cfg = lab_config(1);
  auto& p = cfg.projects[0];
  p.credit.version_sample_threshold = 3;
  p.credit.host_sample_threshold = 3;
  auto proto = p.apps[0];
  p.apps.clear();
  if (with_both) {
    auto& both = p.apps.emplace_back(proto);
    both.name = "both";
    both.versions.push_back(cuda_version());
  }
  auto& only = p.apps.emplace_back(proto);
  only.name = "gpuonly";
  only.versions = {cuda_version()};
  return cfg;
}

/// A request of a host with one CPU (1e9 FLOPS) and, when `gpu`, one NVIDIA GPU (1e11).
sched_request
device_request(id_type hostid, bool gpu, bool want, std::vector<reported_result> results = {}) {
  auto r = request(hostid, 1e9, false, std::move(results));
  r.host.host_cpid = gpu ? "gpu-host" : "cpu-host";
  if (gpu) {
    coproc_description c;
    c.type = resource_type::nvidia;
    c.count = 1;
    c.peak_flops = gpu_peak;
    if (want)
      c.request = resource_request{1, 1, 0};
    r.coprocs.push_back(c);
  } else if (want) {
    r.cpu = resource_request{1, 1, 0};
  }
  return r;
}

work_batch app_jobs(const std::string& app, int n, const std::string& prefix) {
  work_batch b;
  b.submitter = "test";
  for (int i = 0; i < n; ++i) {
    work_spec w;
    w.app = app;
    w.name = prefix + std::to_string(i);
    b.items.push_back(std::move(w));
  }
  return b;
}

/// One job on a host: asks for work, computes for `elapsed` virtual seconds, reports it.
/// Answers the workunit's name and the host's total credit the report's reply tells.
std::pair<std::string, double> run_job(sim::harness& h, id_type& host, bool gpu, double elapsed) {
  auto got = h.rpc("p", device_request(host, gpu, true));
  REQUIRE(got);
  REQUIRE((*got)->results.size() == 1);
  if ((*got)->hostid) // only a new host is told its id
    host = *(*got)->hostid;
  auto result = (*got)->results[0].name;
  auto wu = (*got)->results[0].wu_name;
  h.advance(seconds_to_us(elapsed));
  auto done = report(h, device_request(host, gpu, false, {success(result, elapsed)}));
  REQUIRE(done);
  // The validator ran while the report was handled; the next reply carries the totals.
  auto next = h.rpc("p", device_request(host, gpu, false));
  REQUIRE(next);
  return {wu, (*next)->host_total_credit};
}

/// Lets `n` normalization intervals (10 min) of virtual time pass, one at a time: a timer
/// fires once per advance, however long, and re-arms from the new now.
void intervals(sim::harness& h, int n) {
  for (int i = 0; i < n; ++i)
    h.advance(600 * us_per_second);
}

credit_rec credit_of(sim::harness& h, const std::string& wu) {
  auto w = h.workunit("p", wu);
  REQUIRE(w);
  REQUIRE((*w)->wu.state == wu_state::assimilated);
  return *(*w)->wu.results.at(0).credit;
}

/// Scale(V) of the app's version for a resource, as the project exports it.
double exported_scale(sim::harness& h, const std::string& app, resource_type res) {
  auto x = h.ask<credit_export_ptr>(h.project("p"), atom::credit_v);
  REQUIRE(x);
  for (const auto& v : (*x)->versions)
    if (v.app == app && v.resource == static_cast<std::uint8_t>(res))
      return v.scale;
  FAIL("no exported version of " << app);
  return 0;
}

} // namespace

TEST_CASE("a GPU-only app takes the plan class's scale from another app of the server",
          "[sim][credit]") {
  sim::harness_options o;
  o.config = gpu_config(true);
  test::checked_harness h{o};
  id_type cpu = 0, gpu = 0;
  // The GPU-only app's first job, before anything is normalized: the plain PFC
  // (100 s x (0.05 x 1e9 + 1e11) FLOPS).
  REQUIRE(h.create_work("p", app_jobs("gpuonly", 1, "g")));
  auto [first, total1] = run_job(h, gpu, true, 100);
  auto before = credit_of(h, first);
  double pfc = 100 * (0.05e9 + gpu_peak);
  CHECK(before.claimed == Approx(pfc / 864e9));
  CHECK(before.granted == Approx(before.claimed));
  CHECK(total1 == Approx(before.granted));
  // The app with both versions: the CPU version does PFC/E = 2 (2000 s at 1e9 on 1e12
  // FLOPs), the GPU version PFC/E = 10.005; X = 2 and the GPU version's Scale(V) = 2/10.005.
  REQUIRE(h.create_work("p", app_jobs("both", 6, "b")));
  double gpu_total = 0;
  for (int i = 0; i < 3; ++i) {
    run_job(h, cpu, false, 2000);
    gpu_total = run_job(h, gpu, true, 100).second;
  }
  intervals(h, 3); // normalization, aggregation, normalization
  double factor = 2 / (pfc / est);
  CHECK(exported_scale(h, "both", resource_type::cpu) == Approx(1));
  CHECK(exported_scale(h, "both", resource_type::nvidia) == Approx(factor));
  // The aggregator handed the "cuda" factor to the project; the GPU-only app took it at its
  // next normalization, and its next job, the same as the first, is scaled by it.
  CHECK(exported_scale(h, "gpuonly", resource_type::nvidia) == Approx(factor));
  REQUIRE(h.create_work("p", app_jobs("gpuonly", 1, "g2-")));
  auto [second, total2] = run_job(h, gpu, true, 100);
  auto after = credit_of(h, second);
  CHECK(after.scale_v == Approx(factor));
  CHECK(after.claimed == Approx(before.claimed * factor));
  CHECK(after.granted == Approx(after.claimed));
  CHECK(total2 == Approx(gpu_total + after.granted));
}

TEST_CASE("a GPU-only app takes the plan class's scale imported from another server",
          "[sim][credit]") {
  sim::harness_options o;
  o.config = gpu_config(false);
  test::checked_harness h{o};
  id_type gpu = 0;
  REQUIRE(h.create_work("p", app_jobs("gpuonly", 2, "g")));
  auto [first, total1] = run_job(h, gpu, true, 100);
  auto before = credit_of(h, first);
  CHECK(before.scale_v == 1);
  CHECK(before.claimed == Approx(100 * (0.05e9 + gpu_peak) / 864e9));
  // Nothing on this server has CPU and GPU versions: normalization leaves Scale(V) at 1.
  intervals(h, 2);
  CHECK(exported_scale(h, "gpuonly", resource_type::nvidia) == 1);
  // Another server's export, as POST /api/projects/p/credit/import takes it: two apps with
  // both kinds of versions in plan class "cuda"; weighted by recent average credit, 0.25.
  auto body = nlohmann::json::parse(R"({"source": "other.example", "versions": [
    {"project": "sci", "app": "fold", "platform": "x86_64-pc-linux-gnu", "plan_class": "cuda",
     "resource": "nvidia", "app_has_cpu_and_gpu": true, "expavg_credit": 300, "scale": 0.2},
    {"project": "sci", "app": "dock", "platform": "x86_64-pc-linux-gnu", "plan_class": "cuda",
     "resource": "nvidia", "app_has_cpu_and_gpu": true, "expavg_credit": 100, "scale": 0.4}]})");
  auto parsed = net::parse_credit_import(body);
  REQUIRE(parsed.value);
  auto n = h.ask<std::uint64_t>(h.project("p"), atom::credit_v,
                                credit_import_ptr{
                                  std::make_shared<ev::credit_imported>(*parsed.value)});
  REQUIRE(n);
  CHECK(*n == 2);
  // The next aggregation takes the import; the next normalization applies it.
  intervals(h, 2);
  CHECK(exported_scale(h, "gpuonly", resource_type::nvidia) == Approx(0.25));
  auto [second, total2] = run_job(h, gpu, true, 100);
  auto after = credit_of(h, second);
  CHECK(after.scale_v == Approx(0.25));
  CHECK(after.claimed == Approx(before.claimed * 0.25));
  CHECK(after.granted == Approx(after.claimed));
  CHECK(total2 == Approx(total1 + after.granted));
}
