/// The credit system in the actors, driven deterministically through the in-process harness
/// (CAF's test coordinator, virtual time): granted credit reaches the workunit, the user and
/// host totals and the scheduler reply; app versions learn PFCmean(V); the normalization timer
/// runs on virtual time; the daily quota and the runtime estimate act on dispatch; recovery
/// rebuilds every number.

#include "tools/sim/harness.hpp"

#include "actors/log.hpp"
#include "actors/state.hpp"
#include "../../support/temp_dir.hpp"

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
  auto& a = p.apps.emplace_back();
  a.name = "labapp";
  a.min_quorum = a.target_nresults = quorum;
  a.max_jobs_per_rpc = 1;
  a.max_jobs_per_day = jobs_per_day;
  a.rsc_fpops_est = est;
  a.rsc_fpops_bound = 1000 * est;
  a.versions.emplace_back();
  return cfg;
}

sched_request request(id_type hostid, double fpops, bool want,
                      std::vector<reported_result> results = {}) {
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
  sim::harness h{o};
  REQUIRE(h.create_work("p", jobs(1)));
  auto a = h.rpc("p", request(0, 1e9, true));
  auto b = h.rpc("p", request(0, 2e9, true));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE((*a)->results.size() == 1);
  REQUIRE((*b)->results.size() == 1);
  auto ha = *(*a)->hostid, hb = *(*b)->hostid;
  h.advance(1000 * us_per_second);
  REQUIRE(h.rpc("p", request(ha, 1e9, false, {success((*a)->results[0].name, 1000)})));
  REQUIRE(h.rpc("p", request(hb, 2e9, false, {success((*b)->results[0].name, 1000)})));
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
  sim::harness h{o};
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
    auto r = h.rpc("p", request(id, 1e9, true, {success(name, 3000)}));
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
  auto later = h.rpc("p", request(id, 1e9, true, {success(name, 3000)}));
  REQUIRE(later);
  CHECK((*later)->results.size() == 1);
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
    sim::harness h{o};
    REQUIRE(h.create_work("p", jobs(5)));
    auto r = h.rpc("p", request(0, 1e9, true));
    REQUIRE(r);
    id = *(*r)->hostid;
    for (int i = 0; i < 4; ++i) {
      h.advance(2000 * us_per_second);
      r = h.rpc("p", request(id, 1e9, true, {success((*r)->results.at(0).name, 2000)}));
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
  sim::harness again{o};
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
