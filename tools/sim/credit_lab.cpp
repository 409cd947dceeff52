#include "tools/sim/credit_lab.hpp"

#include "actors/event_codec.hpp"
#include "actors/events.hpp"
#include "tools/sim/lab.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

namespace cobble::sim {

// -- scenario files -----------------------------------------------------------------

namespace {

const char* const adversary_kinds[] = {"inflate_elapsed", "inflate_benchmark", "huge_pfc",
                                       "cherry_picker", "slow_multithread"};

void parse_credit(const checked_map& parent, const YAML::Node& n, const std::string& path,
                  config::credit_config& c) {
  checked_map m(n, parent.source(), path,
                {"normalization_interval", "version_average_samples", "host_average_samples",
                 "version_alpha", "host_alpha", "version_sample_threshold", "host_sample_threshold",
                 "sample_cap", "host_scale_cap", "cheat_factor", "flops_per_cobblestone",
                 "credit_half_life", "error_rate_initial", "error_rate_alpha", "version_pfc"});
  m.read("normalization_interval", c.normalization_interval, positive, "positive (seconds)");
  m.read("version_average_samples", c.version_average_samples, at_least_one, "at least 1");
  m.read("host_average_samples", c.host_average_samples, at_least_one, "at least 1");
  m.read("version_alpha", c.version_alpha, fraction, "in (0, 1]");
  m.read("host_alpha", c.host_alpha, fraction, "in (0, 1]");
  m.read("version_sample_threshold", c.version_sample_threshold);
  m.read("host_sample_threshold", c.host_sample_threshold);
  m.read("sample_cap", c.sample_cap, at_least_one, "at least 1");
  m.read("host_scale_cap", c.host_scale_cap, at_least_one, "at least 1");
  m.read(
    "cheat_factor", c.cheat_factor, [](double x) { return x > 1; }, "above 1");
  m.read("flops_per_cobblestone", c.flops_per_cobblestone, positive, "positive");
  m.read("credit_half_life", c.credit_half_life, positive, "positive (seconds)");
  m.read("error_rate_initial", c.error_rate_initial, probability, "in [0, 1]");
  m.read("error_rate_alpha", c.error_rate_alpha, fraction, "in (0, 1]");
  std::string est;
  m.read("version_pfc", est);
  if (est == "median")
    c.version_pfc = config::version_pfc_estimator::median;
  else if (est == "mean")
    c.version_pfc = config::version_pfc_estimator::mean;
  else if (!est.empty())
    m.fail(n["version_pfc"], m.child("version_pfc"), "must be mean or median");
}

} // namespace

lab_scenario parse_lab_scenario(const std::string& yaml, const std::string& source) {
  auto root = parse_lab_yaml(yaml, source);
  lab_scenario s;
  s.file = source;
  if (!root.IsDefined() || root.IsNull())
    throw scenario_error(source + ":1: the scenario is empty");
  checked_map top(root, source, "",
                  {"seed", "jobs_per_host", "skip_jobs", "max_days", "projects", "populations"});
  top.read("seed", s.seed);
  top.read("jobs_per_host", s.jobs_per_host, at_least_one, "at least 1");
  top.read(
    "skip_jobs", s.skip_jobs, [](int x) { return x >= 0; }, "0 or more");
  top.read("max_days", s.max_days, positive, "positive");
  if (s.skip_jobs >= s.jobs_per_host)
    top.fail(root["skip_jobs"], "skip_jobs", "must be below jobs_per_host");
  std::set<std::string> names;
  read_lab_list(top, "projects", "project",
                {"name", "replication", "host_scale_check", "versions", "job_min", "job_max",
                 "size_noise", "bound_factor", "delay_bound", "credit"},
                [&](const checked_map& m, const YAML::Node& n, const std::string&, std::size_t) {
                  lab_project p;
                  m.read("name", p.name);
                  if (p.name.empty()
                      || p.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-")
                           != std::string::npos)
                    m.fail(n, m.child("name"), "every project needs a name of [a-z0-9_-]");
                  if (!names.insert(p.name).second)
                    m.fail(n["name"], m.child("name"), "duplicate project name '" + p.name + "'");
                  m.read(
                    "replication", p.replication, [](int x) { return x >= 1 && x <= 5; }, "1 to 5");
                  m.read("host_scale_check", p.host_scale_check);
                  if (auto v = m.get("versions"); v.IsDefined()) {
                    if (!v.IsSequence() || v.size() == 0)
                      m.fail(v, m.child("versions"), "expected a list of cpu and/or gpu");
                    p.cpu_version = p.gpu_version = false;
                    for (const auto& x : v) {
                      auto name = x.as<std::string>();
                      if (name == "cpu")
                        p.cpu_version = true;
                      else if (name == "gpu")
                        p.gpu_version = true;
                      else
                        m.fail(x, m.child("versions"),
                               "unknown version '" + name + "' (cpu or gpu)");
                    }
                  }
                  m.read("job_min", p.job_min, positive, "positive");
                  m.read("job_max", p.job_max, positive, "positive");
                  if (p.job_max < p.job_min)
                    m.fail(n["job_max"], m.child("job_max"), "must be at least job_min");
                  m.read("size_noise", p.size_noise, at_least_one, "at least 1");
                  m.read("bound_factor", p.bound_factor, at_least_one, "at least 1");
                  m.read("delay_bound", p.delay_bound, positive, "positive (seconds)");
                  if (auto c = m.get("credit"); c.IsDefined() && !c.IsNull())
                    parse_credit(m, c, m.child("credit"), p.credit);
                  s.projects.push_back(std::move(p));
                });
  read_lab_list(
    top, "populations", "population",
    {"name", "project", "count", "device", "cpu_flops_min", "cpu_flops_max", "gpu_factor_min",
     "gpu_factor_max", "efficiency_min", "efficiency_max", "adversary", "factor", "cheat_at",
     "jobs"},
    [&](const checked_map& m, const YAML::Node& n, const std::string& path, std::size_t i) {
      lab_population p;
      m.read("name", p.name);
      m.read("project", p.project);
      if (p.project.empty() && s.projects.size() == 1)
        p.project = s.projects[0].name;
      auto proj = std::find_if(s.projects.begin(), s.projects.end(),
                               [&](auto& x) { return x.name == p.project; });
      if (proj == s.projects.end())
        m.fail(n["project"].IsDefined() ? n["project"] : n, m.child("project"),
               "no project named '" + p.project + "'");
      if (p.name.empty())
        p.name = p.project + "-" + std::to_string(i);
      read_host_population(m, n, path, p, [&] {
        m.read("device", p.device);
        if (p.device != "cpu" && p.device != "gpu")
          m.fail(n["device"], m.child("device"), "must be cpu or gpu");
        if (p.device == "gpu" && !proj->gpu_version)
          m.fail(n["device"], m.child("device"), "project '" + proj->name + "' has no gpu version");
        if (p.device == "cpu" && !proj->cpu_version)
          m.fail(n, m.child("device"), "project '" + proj->name + "' has no cpu version");
      });
      m.read("adversary", p.adversary);
      if (!p.adversary.empty()
          && std::find(std::begin(adversary_kinds), std::end(adversary_kinds), p.adversary)
               == std::end(adversary_kinds))
        m.fail(n["adversary"], m.child("adversary"),
               "unknown adversary '" + p.adversary
                 + "' (inflate_elapsed, inflate_benchmark, huge_pfc, cherry_picker, "
                   "slow_multithread)");
      m.read("factor", p.factor, at_least_one, "at least 1");
      m.read("cheat_at", p.cheat_at, at_least_one, "at least 1");
      p.jobs = s.jobs_per_host;
      m.read(
        "jobs", p.jobs, [&](int x) { return x > s.skip_jobs; }, "above skip_jobs");
      s.populations.push_back(std::move(p));
    });
  return s;
}

lab_scenario load_lab_scenario(const std::filesystem::path& file) {
  return parse_lab_scenario(read_lab_file(file), file.string());
}

// -- the run ------------------------------------------------------------------------

namespace {

/// A job's truth, known to the lab only.
struct job_truth {
  double est = 0;    ///< E(J)
  double factor = 1; ///< true size / E(J)
};

/// What a host is running.
struct running_job {
  std::string name;
  id_type wu = 0;
  double elapsed = 0; ///< Reported elapsed time.
  double cpu = 0;
  double busy = 0; ///< True seconds the device was busy.
  bool abort = false;
};

/// A host of a population, honest or not.
struct credit_host : emulated_host {
  const lab_population* pop = nullptr;
  std::size_t project = 0;
  int completed = 0; ///< Jobs reported (successes and aborts).
  int successes = 0;
  std::optional<running_job> job;
  bool describe_cheat = false;       ///< The next request claims a huge benchmark.
  std::map<id_type, double> busy_of; ///< wu -> true busy seconds, for successes.
};

/// A run of the credit lab: the hosts of every project and the jobs made for them.
struct credit_run : lab_run {
  const lab_scenario& s;
  std::vector<credit_host> hosts;
  std::vector<std::string> auth;
  std::vector<job_book<job_truth>> books; ///< By project.
  std::vector<std::uint64_t> created_results, dispatched;
  std::vector<int> hosts_of_project;

  static harness_options options(const lab_scenario& s, const std::filesystem::path& dir) {
    auto o = lab_harness_options(s.file, dir);
    for (const auto& lp : s.projects) {
      auto& a = add_lab_project(o.config, lp.name, "credit lab " + lp.name, "labapp",
                                lp.replication, lp.delay_bound, lp.cpu_version, lp.gpu_version);
      o.config.projects.back().credit = lp.credit;
      a.host_scale_check = lp.host_scale_check;
      a.rsc_fpops_est = lp.job_min;
      a.rsc_fpops_bound = lp.job_min * lp.bound_factor;
    }
    return o;
  }

  credit_run(const lab_scenario& sc, const std::filesystem::path& dir)
    : lab_run(sc.seed, options(sc, dir)), s(sc) {
    books.resize(s.projects.size());
    created_results.assign(s.projects.size(), 0);
    dispatched.assign(s.projects.size(), 0);
    hosts_of_project.assign(s.projects.size(), 0);
    for (const auto& p : s.projects)
      auth.push_back(lab_account(p.name));
    for (const auto& pop : s.populations) {
      auto pi = static_cast<std::size_t>(
        std::find_if(s.projects.begin(), s.projects.end(),
                     [&](auto& p) { return p.name == pop.project; })
        - s.projects.begin());
      for (int i = 0; i < pop.count; ++i) {
        credit_host x;
        static_cast<emulated_host&>(x) = draw_host(pop);
        x.pop = &pop;
        x.project = pi;
        hosts.push_back(x);
        ++hosts_of_project[pi];
      }
    }
  }

  /// Keeps enough unsent work in a project for its hosts.
  void feed(std::size_t p, bool force = false) {
    const auto& lp = s.projects[p];
    auto want = 2 * static_cast<std::uint64_t>(hosts_of_project[p]) + 8;
    if (!force && created_results[p] - dispatched[p] >= want)
      return;
    work_batch b;
    b.submitter = "credit-lab";
    std::vector<job_truth> made;
    for (int i = 0; i < std::max(50, hosts_of_project[p]); ++i) {
      job_truth t;
      t.est = log_uniform(lp.job_min, lp.job_max);
      t.factor = lp.size_noise > 1 ? log_uniform(1 / lp.size_noise, lp.size_noise) : 1;
      work_spec w;
      w.app = "labapp";
      w.name = "lab" + std::to_string(next_wu++);
      w.rsc_fpops_est = t.est;
      w.rsc_fpops_bound = t.est * lp.bound_factor;
      b.items.push_back(std::move(w));
      made.push_back(t);
    }
    created_results[p] += books[p].create(h, lp.name, std::move(b), made)
                          * static_cast<std::uint64_t>(lp.replication);
  }

  bool is(const credit_host& x, const char* kind) const { return x.pop->adversary == kind; }

  sched_request request(credit_host& x, bool want_work) {
    double bench = is(x, "inflate_benchmark") ? x.pop->factor : 1;
    auto r = lab_run::request(x, auth[x.project], "lab" + std::to_string(&x - hosts.data()),
                              want_work, bench);
    if (x.describe_cheat)
      r.host.p_fpops = 1e300;
    if (x.job) {
      auto rr = report(x.job->name, "", !x.job->abort);
      if (x.job->abort) {
        rr.state = client_state_aborted;
        rr.exit_status = -221;
      } else {
        rr.final_elapsed_time = x.job->elapsed;
        rr.final_cpu_time = x.job->cpu;
      }
      r.results.push_back(std::move(rr));
    }
    return r;
  }

  /// One RPC of host i at the current virtual time; returns when it wants to come back.
  std::optional<time_us> step(std::size_t i) {
    auto& x = hosts[i];
    bool want = x.successes + (x.job && !x.job->abort ? 1 : 0) < x.pop->jobs;
    if (want)
      feed(x.project);
    auto reply = rpc(s.projects[x.project].name, request(x, want), x);
    const auto& rep = *reply;
    x.describe_cheat = false;
    if (x.job) {
      ++x.completed;
      if (!x.job->abort) {
        ++x.successes;
        x.busy_of[x.job->wu] = x.job->busy;
      }
      x.job.reset();
    }
    if (rep.results.empty()) {
      if (!want)
        return std::nullopt;
      // What is left may be replicas of work this host already did: make more.
      feed(x.project, true);
      return h.now() + 600 * us_per_second;
    }
    ++dispatched[x.project];
    const auto& res = rep.results[0];
    auto [wu, t] = books[x.project].of_result(res.name);
    running_job j;
    j.name = res.name;
    j.wu = wu;
    double eff = x.efficiency;
    if (is(x, "slow_multithread"))
      eff /= x.pop->factor; // its threads mostly wait
    j.busy = t.est * t.factor / (x.peak() * eff);
    j.elapsed = j.busy * (is(x, "inflate_elapsed") ? x.pop->factor : 1);
    j.cpu = is(x, "slow_multithread") ? j.elapsed / x.pop->factor : j.elapsed;
    if (is(x, "cherry_picker")) {
      // Keeps the jobs that are short for their estimate (or small, when E(J) is exact).
      const auto& lp = s.projects[x.project];
      bool big = lp.size_noise > 1 ? t.factor > 1 : t.est > std::sqrt(lp.job_min * lp.job_max);
      if (big) {
        j.abort = true;
        j.busy = 60;
      }
    }
    if (is(x, "huge_pfc") && x.successes + 1 == x.pop->cheat_at)
      x.describe_cheat = true; // the next request (reporting this job) describes a huge CPU
    x.job = j;
    return h.now() + seconds_to_us(j.busy);
  }
};

/// A validated job of a host, in log order.
struct credited_job {
  double granted = 0;
  double work = 0; ///< True FLOPs.
  double busy = 0; ///< True seconds.
  double scale_h = 1;
};

} // namespace

lab_result run_credit_lab(const lab_scenario& s, const std::filesystem::path& data_dir) {
  auto wall0 = std::chrono::steady_clock::now();
  credit_run run{s, data_dir};
  lab_result r;
  r.virtual_days = run.run_hosts(run.hosts.size(), s.max_days,
                                 [&](std::size_t i) { return run.step(i); });
  r.scenario = s.file;
  r.seed = s.seed;
  r.hosts = static_cast<int>(run.hosts.size());
  r.rpcs = run.rpcs;

  // Every figure comes from the validations in the log.
  std::map<std::pair<std::size_t, id_type>, std::size_t> host_index;
  for (std::size_t i = 0; i < run.hosts.size(); ++i)
    host_index[{run.hosts[i].project, run.hosts[i].id}] = i;
  std::vector<std::vector<credited_job>> jobs(run.hosts.size());
  run.scan_log(1, [&](const storage::event_record& rec) {
    if (rec.kind != ev::workunit_validated::kind)
      return true;
    auto e = from_record(rec);
    if (!e)
      return true;
    const auto& v = std::get<ev::workunit_validated>(e->data);
    const auto& truth = run.books.at(e->project).truth;
    auto t = truth.find(v.wu);
    for (std::size_t k = 0; k < v.verdicts.size() && k < v.credit.size(); ++k) {
      const auto& d = v.verdicts[k];
      auto hi = host_index.find({e->project, d.host});
      if (!d.valid || hi == host_index.end() || t == truth.end())
        continue;
      auto& x = run.hosts[hi->second];
      credited_job j;
      j.granted = v.credit[k].granted;
      j.work = t->second.est * t->second.factor;
      j.busy = x.busy_of.count(v.wu) ? x.busy_of.at(v.wu) : 0;
      j.scale_h = v.credit[k].scale_h;
      jobs[hi->second].push_back(j);
      ++r.validated;
    }
    return true;
  });

  auto skip = static_cast<std::size_t>(s.skip_jobs);
  for (std::size_t p = 0; p < s.projects.size(); ++p) {
    const auto& lp = s.projects[p];
    project_figure pf;
    pf.name = lp.name;
    pf.protection = lp.host_scale_check;
    double credit_all = 0, busy_all = 0;
    std::map<std::string, std::pair<double, double>> by_device; // credit, work after skip
    std::map<std::string, std::pair<int, std::uint64_t>> device_counts;
    std::vector<double> settle;
    for (std::size_t i = 0; i < run.hosts.size(); ++i) {
      const auto& x = run.hosts[i];
      if (x.project != p || !x.pop->adversary.empty())
        continue;
      const auto& list = jobs[i];
      auto& dev = by_device[x.gpu ? "GPU" : "CPU"];
      auto& cnt = device_counts[x.gpu ? "GPU" : "CPU"];
      ++cnt.first;
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (!x.gpu) {
          credit_all += list[k].granted;
          busy_all += list[k].busy;
        }
        if (k >= skip) {
          dev.first += list[k].granted;
          dev.second += list[k].work;
          ++cnt.second;
        }
      }
      pf.jobs += list.size();
      if (!list.empty()) {
        double last = list.back().scale_h;
        std::size_t n = list.size();
        while (n > 0 && std::abs(list[n - 1].scale_h / last - 1) <= 0.05)
          --n;
        settle.push_back(static_cast<double>(n));
      }
    }
    pf.credit_per_host_hour = busy_all > 0 ? credit_all / (busy_all / 3600) : 0;
    for (const auto& [name, cw] : by_device) {
      device_figure d;
      d.project = lp.name;
      d.device = name;
      d.hosts = device_counts[name].first;
      d.jobs = device_counts[name].second;
      d.credit_per_tflop = credit_per_tflop(cw.first, cw.second);
      r.devices.push_back(d);
    }
    if (by_device.count("CPU") && by_device.count("GPU") && by_device["CPU"].second > 0
        && by_device["GPU"].second > 0 && by_device["CPU"].first > 0)
      pf.gpu_cpu_ratio = (by_device["GPU"].first / by_device["GPU"].second)
                         / (by_device["CPU"].first / by_device["CPU"].second);
    if (!settle.empty()) {
      std::sort(settle.begin(), settle.end());
      pf.settle_median = settle[settle.size() / 2];
      pf.settle_max = settle.back();
    }
    // Deserved credit: what honest hosts of the project get per unit of true work.
    double honest_credit = 0, honest_work = 0;
    for (const auto& [name, cw] : by_device) {
      honest_credit += cw.first;
      honest_work += cw.second;
    }
    double per_work = honest_work > 0 ? honest_credit / honest_work : 0;
    for (std::size_t i = 0; i < run.hosts.size(); ++i) {
      const auto& x = run.hosts[i];
      if (x.project != p || !x.pop->adversary.empty() || jobs[i].size() <= skip || per_work <= 0)
        continue;
      double g = 0, w = 0;
      for (std::size_t k = skip; k < jobs[i].size(); ++k) {
        g += jobs[i][k].granted;
        w += jobs[i][k].work;
      }
      double ratio = g / w / per_work;
      pf.honest_min = pf.honest_min == 0 ? ratio : std::min(pf.honest_min, ratio);
      pf.honest_max = std::max(pf.honest_max, ratio);
    }
    for (const auto& pop : s.populations) {
      if (pop.project != lp.name || pop.adversary.empty())
        continue;
      adversary_figure a;
      a.project = lp.name;
      a.name = pop.name;
      a.kind = pop.adversary;
      a.protection = lp.host_scale_check;
      double granted = 0, work = 0;
      for (std::size_t i = 0; i < run.hosts.size(); ++i) {
        if (run.hosts[i].pop != &pop)
          continue;
        const auto& list = jobs[i];
        for (std::size_t k = skip; k < list.size(); ++k) {
          granted += list[k].granted;
          work += list[k].work;
          ++a.jobs;
        }
      }
      a.ratio = work > 0 && per_work > 0 ? granted / work / per_work : 0;
      r.adversaries.push_back(a);
    }
    r.projects.push_back(pf);
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return r;
}

std::string format_table(const lab_result& r) {
  std::string out;
  out += fmt::format("credit lab: {} (seed {}): {} hosts, {} RPCs, {} validated results, "
                     "{:.1f} virtual days, {:.1f} s\n\n",
                     r.scenario, r.seed, r.hosts, r.rpcs, r.validated, r.virtual_days,
                     r.wall_seconds);
  out += "Device neutrality: granted credit per unit of true work (honest hosts, after the "
         "skipped jobs)\n\n";
  out += "| project | device | hosts | jobs | credit per 1e12 FLOPs |\n|---|---|---|---|---|\n";
  for (const auto& d : r.devices)
    out += fmt::format("| {} | {} | {} | {} | {:.4f} |\n", d.project, d.device, d.hosts, d.jobs,
                       d.credit_per_tflop);
  out += "\nProjects\n\n";
  out
    += "| project | protection | honest jobs | GPU/CPU credit per work | credit per CPU host-hour "
       "| honest hosts' granted/deserved (min - max) "
       "| jobs until Scale(H) within 5% (median / max) |\n|---|---|---|---|---|---|---|\n";
  double lo = 0, hi = 0;
  for (const auto& p : r.projects) {
    out += fmt::format("| {} | {} | {} | {} | {:.3f} | {:.3f} - {:.3f} | {:.0f} / {:.0f} |\n",
                       p.name, p.protection ? "on" : "off", p.jobs,
                       p.gpu_cpu_ratio > 0 ? fmt::format("{:.3f}", p.gpu_cpu_ratio)
                                           : std::string{"-"},
                       p.credit_per_host_hour, p.honest_min, p.honest_max, p.settle_median,
                       p.settle_max);
    if (p.credit_per_host_hour > 0) {
      lo = lo == 0 ? p.credit_per_host_hour : std::min(lo, p.credit_per_host_hour);
      hi = std::max(hi, p.credit_per_host_hour);
    }
  }
  if (r.projects.size() > 1 && lo > 0)
    out += fmt::format("\nProject neutrality: credit per CPU host-hour, highest / lowest project: "
                       "{:.3f}\n",
                       hi / lo);
  if (!r.adversaries.empty()) {
    out += "\nAdversaries: granted / deserved credit after their first jobs (the design's "
           "bound: 1.1)\n\n";
    out += "| project | adversary | kind | protection | jobs | granted/deserved |\n"
           "|---|---|---|---|---|---|\n";
    for (const auto& a : r.adversaries)
      out += fmt::format("| {} | {} | {} | {} | {} | {:.3f}{} |\n", a.project, a.name, a.kind,
                         a.protection ? "on" : "off", a.jobs, a.ratio,
                         a.ratio > 1.1 ? " (over)" : "");
  }
  return out;
}

void add_credit_command(CLI::App& app) {
  lab_command_text text{
    "credit",
    "Run a credit-lab scenario: emulated hosts (honest CPU and GPU hosts, adversaries) "
    "through the real project, host and app-version actors in virtual time; prints device "
    "neutrality, project neutrality, adversaries' granted/deserved credit and how fast host "
    "scales settle (see docs/credit.md)",
    "Scenario YAML file (tools/sim/scenarios/credit-*.yaml)",
    "Run in this (new) data directory and keep it, so that `cobble log tail` and "
    "`cobble log replay` can show every credit decision"};
  add_lab_command(app, text, {}, [](const std::string& file, std::optional<std::uint64_t> seed) {
    auto s = load_lab_scenario(file);
    if (seed)
      s.seed = *seed;
    return lab_runner{
      [s](const std::filesystem::path& dir) { return format_table(run_credit_lab(s, dir)); }};
  });
}

} // namespace cobble::sim
