/// Each client policy of the designs (001, 003, 000's client side, 004's client side) alone.

#include "tools/client/client.hpp"

#include <catch2/catch.hpp>

using namespace cobble::client;

namespace {

project named(const std::string& n, double share = 100) {
  project p;
  p.name = n;
  p.share = share;
  return p;
}

job make_job(int p, int r, double secs, double deadline = 1e12, double received = 0) {
  job j;
  j.project = p;
  j.rsc = r;
  j.est_secs = secs;
  j.actual_secs = secs;
  j.deadline = deadline;
  j.received = received;
  j.state = job_state::queued;
  static std::uint64_t id = 1;
  j.id = id++;
  return j;
}

std::vector<resource> cpu_gpu(int ncpu = 1, int ngpu = 1, double gpu_speed = 2) {
  return {resource{"CPU", ncpu, 1e9}, resource{"NVIDIA", ngpu, gpu_speed * 1e9}};
}

} // namespace

TEST_CASE("per-resource backoff doubles up to a day and clears on a job", "[client]") {
  backoff b;
  CHECK_FALSE(b.backed_off(0));
  b.no_work(0, 60, 86400);
  CHECK(b.interval() == 60);
  CHECK(b.backed_off(59));
  CHECK_FALSE(b.backed_off(60));
  b.no_work(100, 60, 86400);
  CHECK(b.interval() == 120);
  CHECK(b.until() == 220);
  for (int i = 0; i < 20; ++i)
    b.no_work(1000, 60, 86400);
  CHECK(b.interval() == 86400);
  CHECK(b.at_max(86400));
  b.got_job();
  CHECK(b.interval() == 0);
  CHECK_FALSE(b.backed_off(1000));
  CHECK_FALSE(b.at_max(86400));
}

TEST_CASE("long-term debt: owed by share, paid by use, zero net change, max at zero", "[client]") {
  settings s;
  std::vector<resource> rs{resource{"CPU", 2, 1e9}};
  std::vector<project> ps{named("a"), named("b")};
  // Two CPUs for an hour: each is owed 3600 instance-seconds; A used 1000, B nothing.
  ps[0].rsc[0].secs_this_period = 1000;
  update_ltd(ps, 0, rs[0], 3600, 0, s);
  // +2600 and +3600; the zero-net offset (-3100) gives -500 and +500; the max-zero offset
  // shifts both by -500.
  CHECK(ps[0].rsc[0].ltd == Approx(-1000));
  CHECK(ps[1].rsc[0].ltd == Approx(0));
  CHECK(ps[0].rsc[0].secs_this_period == 0);

  SECTION("a project backed off at the maximum is not debt eligible (design rule)") {
    for (int i = 0; i < 20; ++i)
      ps[1].rsc[0].bo.no_work(0, 60, 86400);
    CHECK_FALSE(debt_eligible(ps[1], 0, 1e6, s));
    ps[0].rsc[0].secs_this_period = 7200;
    update_ltd(ps, 0, rs[0], 3600, 1e6, s);
    CHECK(ps[0].rsc[0].ltd == Approx(0)); // alone: owed what it used, then max is zero
    CHECK(ps[1].rsc[0].ltd == Approx(0)); // kept, capped at zero
    s.eligibility = debt_eligibility::attached;
    CHECK(debt_eligible(ps[1], 0, 1e6, s));
  }
  SECTION("a project backed off (not at the max) is not eligible either; suspended neither") {
    ps[1].rsc[0].bo.no_work(0, 60, 86400);
    CHECK_FALSE(debt_eligible(ps[1], 0, 30, s));
    CHECK(debt_eligible(ps[1], 0, 61, s));
    ps[1].suspended = true;
    CHECK_FALSE(debt_eligible(ps[1], 0, 61, s));
  }
  SECTION("a project attached later starts debt-free") {
    client c({resource{"CPU", 1, 1e9}}, s, 0);
    auto p = named("late");
    p.rsc[0].ltd = 5000;
    c.attach(p);
    CHECK(c.projects()[0].rsc[0].ltd == 0);
  }
}

TEST_CASE("overall debt weights each resource's debt by its speed", "[client]") {
  auto rs = cpu_gpu(1, 1, 2);
  std::vector<project> ps{named("a")};
  ps[0].rsc[0].ltd = -10;
  ps[0].rsc[1].ltd = -5;
  update_overall_debts(ps, rs);
  CHECK(ps[0].overall_debt == Approx(-20));
  CHECK(relative_speed(rs, 1) == Approx(2));
}

TEST_CASE("the round-robin simulation shares instances by resource share", "[client]") {
  settings s;
  s.connect_interval = 1000;
  s.additional_work = 2000;
  std::vector<resource> rs{resource{"CPU", 1, 1e9}};
  std::vector<project> ps{named("a"), named("b")};
  std::vector<job> jobs{make_job(0, 0, 1000, 1500), make_job(1, 0, 1000)};
  auto rr = rr_simulate(jobs, ps, rs, 0, s);
  // Both progress at half speed and end at 2000; then the CPU is idle.
  CHECK(rr.rsc[0].saturated == Approx(2000));
  CHECK(rr.rsc[0].shortfall_ci == Approx(0));
  CHECK(rr.rsc[0].shortfall == Approx(1000));
  CHECK(rr.rsc[0].idle_now == Approx(0));
  CHECK(jobs[0].deadline_trouble); // ends at 2000, deadline 1500
  CHECK_FALSE(jobs[1].deadline_trouble);
  CHECK(rr.has_runnable == std::vector<char>{1, 1});

  SECTION("a project that cannot use its part leaves it to the others") {
    std::vector<resource> two{resource{"CPU", 2, 1e9}};
    std::vector<project> sh{named("a", 300), named("b", 100)};
    // A has one job (uses one CPU, not its 1.5); B's two jobs get the other CPU.
    std::vector<job> js{make_job(0, 0, 1000), make_job(1, 0, 500), make_job(1, 0, 500)};
    auto r2 = rr_simulate(js, sh, two, 0, s);
    CHECK(r2.rsc[0].idle_now == Approx(0));
    CHECK(r2.rsc[0].saturated == Approx(1000)); // all end together at 1000
  }
  SECTION("no job: everything idle, at once") {
    std::vector<job> none;
    auto r3 = rr_simulate(none, ps, cpu_gpu(2, 1), 0, s);
    CHECK(r3.rsc[0].saturated == 0);
    CHECK(r3.rsc[0].idle_now == 2);
    CHECK(r3.rsc[0].shortfall == Approx(2 * 3000));
    CHECK(r3.rsc[1].shortfall_ci == Approx(1000));
    CHECK(r3.has_runnable == std::vector<char>{0, 0});
  }
}

TEST_CASE("work fetch: major shortfall, coprocessors first, only that resource", "[client]") {
  settings s;
  auto rs = cpu_gpu(2, 1);
  std::vector<project> ps{named("a"), named("b")};
  ps[0].overall_debt = -100000; // overworked, still chosen for a major shortfall
  ps[1].overall_debt = -200000;
  std::vector<job> none;
  auto rr = rr_simulate(none, ps, rs, 0, s);
  auto d = choose_fetch(ps, rs, rr, 0, s);
  REQUIRE(d);
  CHECK(d->reason == fetch_reason::major_shortfall);
  CHECK(d->rsc == 1); // the GPU before the CPU
  CHECK(d->project == 0);
  CHECK(d->request.wants(1));
  CHECK_FALSE(d->request.wants(0));
  CHECK(d->request.instances[1] == 1);
  CHECK(d->request.secs[1] == Approx(s.connect_interval + s.additional_work));
  CHECK(d->request.work_req_seconds() == d->request.secs[1]);

  SECTION("a project backed off for the GPU is skipped for it") {
    ps[0].rsc[1].bo.no_work(0, 60, 86400);
    auto d2 = choose_fetch(ps, rs, rr, 10, s);
    REQUIRE(d2);
    CHECK(d2->project == 1);
    CHECK(d2->rsc == 1);
    // ...and when every project is backed off for the GPU, the CPU's shortfall decides.
    ps[1].rsc[1].bo.no_work(0, 60, 86400);
    auto d3 = choose_fetch(ps, rs, rr, 10, s);
    REQUIRE(d3);
    CHECK(d3->rsc == 0);
    CHECK(d3->project == 0);
    CHECK(d3->request.instances[0] == 2);
  }
  SECTION("request_delay (min_rpc_time) keeps a project out") {
    ps[0].min_rpc_time = 100;
    auto d4 = choose_fetch(ps, rs, rr, 10, s);
    REQUIRE(d4);
    CHECK(d4->project == 1);
  }
}

TEST_CASE("work fetch: minor shortfall skips overworked projects and asks every type", "[client]") {
  settings s;
  s.connect_interval = 1000;
  s.additional_work = 10000;
  auto rs = cpu_gpu(1, 1);
  std::vector<project> ps{named("a"), named("b")};
  ps[0].overall_debt = -100000; // overworked
  ps[1].overall_debt = -2000;
  // Work until 5000 on both: no idle instance before CI, idle ones before CI + AW.
  std::vector<job> jobs{make_job(0, 0, 5000), make_job(0, 1, 5000)};
  auto rr = rr_simulate(jobs, ps, rs, 0, s);
  auto d = choose_fetch(ps, rs, rr, 0, s);
  REQUIRE(d);
  CHECK(d->reason == fetch_reason::minor_shortfall);
  CHECK(d->project == 1);
  CHECK(d->rsc == 1);
  CHECK(d->request.secs[0] == Approx(6000));
  CHECK(d->request.secs[1] == Approx(6000));
  CHECK(d->request.instances[0] == 0);
}

TEST_CASE("work fetch: a starved project is asked when no resource is short", "[client]") {
  settings s;
  s.connect_interval = 1000;
  s.additional_work = 1000;
  std::vector<resource> rs{resource{"CPU", 1, 1e9}};
  std::vector<project> ps{named("a"), named("b"), named("c")};
  ps[1].overall_debt = -10;
  ps[2].overall_debt = -5;
  std::vector<job> jobs{make_job(0, 0, 100000)};
  auto rr = rr_simulate(jobs, ps, rs, 0, s);
  auto d = choose_fetch(ps, rs, rr, 0, s);
  REQUIRE(d);
  CHECK(d->reason == fetch_reason::starved);
  CHECK(d->project == 2); // greatest debt among those without runnable jobs
  CHECK(d->request.secs[0] >= 1);
  ps[2].rsc[0].bo.no_work(0, 60, 86400);
  ps[1].no_more_tasks = true;
  CHECK_FALSE(choose_fetch(ps, rs, rr, 0, s));
}

TEST_CASE("a reply clears the backoff of types that got jobs and backs off the others",
          "[client]") {
  settings s;
  project p = named("a");
  work_request asked;
  asked.secs[0] = 100;
  asked.secs[1] = 100;
  p.rsc[1].bo.no_work(0, 60, 86400);
  handle_fetch_reply(p, asked, {0, 2, 0, 0}, 10, s);
  CHECK(p.rsc[0].bo.interval() == 60);
  CHECK(p.rsc[0].bo.backed_off(20));
  CHECK(p.rsc[1].bo.interval() == 0);
  handle_fetch_reply(p, asked, {0, 2, 0, 0}, 100, s);
  CHECK(p.rsc[0].bo.interval() == 120);
}

TEST_CASE("preempt_apps follows expected future debt: running, then preempted, then new",
          "[client]") {
  settings s;
  std::vector<resource> rs{resource{"CPU", 2, 1e9}};
  std::vector<project> ps{named("a", 75), named("b", 25)};
  std::vector<job> jobs{make_job(0, 0, 1e6, 1e12, 1), make_job(0, 0, 1e6, 1e12, 2),
                        make_job(1, 0, 1e6, 1e12, 3), make_job(1, 0, 1e6, 1e12, 4)};
  jobs[3].state = job_state::preempted;
  ps[0].overall_debt = 0;
  ps[1].overall_debt = -1000;
  preempt_apps(ps, jobs, rs, 0, s);
  // A (debt 0) gets a CPU; its debt drops by a period (3600) below B's; B gets the other and
  // resumes its preempted job rather than starting a new one.
  CHECK(jobs[0].state == job_state::running);
  CHECK(jobs[1].state == job_state::queued);
  CHECK(jobs[2].state == job_state::queued);
  CHECK(jobs[3].state == job_state::running);
  CHECK(jobs[0].slot != jobs[3].slot);
  CHECK(ps[0].expected_future_debt == Approx(-3600));
  CHECK(ps[1].expected_future_debt == Approx(-4600));
  // Next period A is ahead again: its running job stays, B's is preempted, A runs two.
  ps[0].overall_debt = 0;
  ps[1].overall_debt = -8000;
  int slot0 = jobs[0].slot;
  preempt_apps(ps, jobs, rs, 0, s);
  CHECK(jobs[0].state == job_state::running);
  CHECK(jobs[0].slot == slot0);
  CHECK(jobs[1].state == job_state::running);
  CHECK(jobs[3].state == job_state::preempted);
  CHECK(jobs[3].expected_pay_off == 0);

  SECTION("a job in deadline trouble runs first, earliest deadline first") {
    jobs[2].deadline_trouble = true;
    jobs[2].deadline = 50;
    preempt_apps(ps, jobs, rs, 0, s);
    CHECK(jobs[2].state == job_state::running);
    CHECK(jobs[0].state == job_state::running);
    CHECK(jobs[1].state == job_state::preempted);
  }
  SECTION("start_apps fills a freed CPU, counting the work done this period") {
    jobs[1].work_done_this_period = 1800;
    handle_finished_app(ps, jobs[1], rs);
    CHECK(jobs[1].state == job_state::done);
    CHECK(ps[0].done_this_period[0] == Approx(1800));
    CHECK(instances_used(jobs, 0) == 1);
    // A: 0 - 1800 - 3600 (its running job) = -5400 is ahead of B (-8000) but has no job
    // left, so B gets the CPU and resumes its preempted job rather than starting a new one;
    // its pay-off is half a period.
    start_apps(ps, jobs, rs, 0, 0.5, s);
    CHECK(instances_used(jobs, 0) == 2);
    CHECK(jobs[3].state == job_state::running);
    CHECK(jobs[2].state == job_state::queued);
    CHECK(ps[0].expected_future_debt == Approx(-5400));
    CHECK(ps[1].expected_future_debt == Approx(-8000 - 1800));
  }
}

TEST_CASE("need_to_get_work packs jobs into CPU bins and caps each project", "[client]") {
  std::vector<project> ps{named("a", 50), named("b", 50)};
  // min_work_buf_secs 1000, 2 CPUs: A's 3000 s fill one bin (and more), B has nothing.
  std::vector<job> jobs{make_job(0, 0, 3000)};
  auto n = need_to_get_work(jobs, ps, 2, 1000);
  CHECK(n.num_cpus_busy == 1);
  CHECK(n.avail_work_secs[0] == Approx(3000));
  CHECK(n.total_work_secs == Approx(1000)); // capped at 0.5 * 1000 * 2
  CHECK(n.need);
  jobs.push_back(make_job(1, 0, 1500));
  n = need_to_get_work(jobs, ps, 2, 1000);
  CHECK(n.num_cpus_busy == 2);
  CHECK(n.total_work_secs == Approx(2000));
  CHECK_FALSE(n.need);
}

TEST_CASE("seconds_per_app_unit is an exponential average per app version", "[client]") {
  seconds_per_app_unit a;
  CHECK_FALSE(a.get("v"));
  a.add("v", 100, 2, 0.1);
  CHECK(*a.get("v") == Approx(50));
  a.add("v", 300, 2, 0.1); // sample 150
  CHECK(*a.get("v") == Approx(60));
  a.add("v", -1, 2, 0.1);
  a.add("v", 10, 0, 0.1);
  CHECK(*a.get("v") == Approx(60));
  CHECK(a.all().size() == 1);
  // The client estimates new jobs of a version from it.
  client c({resource{"CPU", 1, 1e9}}, settings{}, 0);
  c.attach(named("a"));
  c.spau().add("app/", 100, 1, 0.1);
  job j = make_job(0, 0, 0);
  j.app_version = "app/";
  j.app_units = 3;
  c.add_job(j, 1e12);
  job k = make_job(0, 0, 0);
  k.app_version = "other/";
  c.add_job(k, 5e11);
  CHECK(c.jobs()[0].est_secs == Approx(300));
  CHECK(c.jobs()[1].est_secs == Approx(500));
}

TEST_CASE("a job the server aborts is dropped and frees its instance", "[client]") {
  client c({resource{"CPU", 1, 1e9}}, settings{}, 0);
  c.attach(named("a"));
  job j = make_job(0, 0, 1000);
  j.name = "doomed";
  c.add_job(j, 1e12);
  job k = make_job(0, 0, 1000);
  k.name = "next";
  c.add_job(k, 1e12);
  c.schedule(0);
  REQUIRE(c.jobs()[0].state == job_state::running);
  CHECK(c.abort("doomed") != 0);
  CHECK(c.abort("doomed") == 0);
  REQUIRE(c.jobs().size() == 1);
  c.schedule(60);
  CHECK(c.jobs()[0].name == "next");
  CHECK(c.jobs()[0].state == job_state::running);
}

TEST_CASE("the list of sequences a host holds: add, no duplicates, revoke", "[client]") {
  sequence_list l;
  l.add("s1");
  l.add("s2");
  l.add("s1");
  l.add("");
  CHECK(l.names() == std::vector<std::string>{"s1", "s2"});
  CHECK(l.holds("s2"));
  CHECK(l.revoke("s1"));
  CHECK_FALSE(l.revoke("s1"));
  l.add("s3");
  l.revoke_all({"s2", "nope"});
  CHECK(l.names() == std::vector<std::string>{"s3"});
}

TEST_CASE("two CPUs, shares 75/25: one CPU always on A, the other alternating", "[client]") {
  // 003's example with the client alone (the emulator's scenario repeats it with a server).
  settings s;
  client c({resource{"CPU", 2, 1e9}}, s, 0);
  c.attach(named("a", 75));
  c.attach(named("b", 25));
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < 4; ++i)
      c.add_job(make_job(p, 0, 1e9), 1e18);
  double a_secs = 0, b_secs = 0, a_always = 0, steps = 0;
  for (double t = 0; t < 10 * 86400; t += 60) {
    c.run(t, 60, true);
    if (t > 86400) {
      a_secs += c.last_usage()[0][0];
      b_secs += c.last_usage()[1][0];
      steps += 1;
      int a_running = 0;
      for (const auto& j : c.jobs())
        a_running += j.state == job_state::running && j.project == 0;
      a_always += a_running >= 1;
    }
    c.schedule(t + 60);
  }
  CHECK(a_secs / (a_secs + b_secs) == Approx(0.75).margin(0.02));
  CHECK(a_always / steps == Approx(1.0));
  // A's work is done by at most two jobs, B's by one at a time.
  int a_started = 0, b_started = 0;
  for (const auto& j : c.jobs()) {
    a_started += j.project == 0 && j.elapsed > 0;
    b_started += j.project == 1 && j.elapsed > 0;
  }
  CHECK(a_started <= 2);
  CHECK(b_started == 1);
}
