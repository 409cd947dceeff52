#include "tools/sim/autoflops_lab.hpp"

#include "actors/event_codec.hpp"
#include "actors/events.hpp"
#include "actors/messages.hpp"
#include "actors/state.hpp"
#include "tools/client/app_units.hpp"
#include "tools/sim/harness.hpp"
#include "tools/sim/lab_yaml.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <sstream>

namespace cobble::sim {

// -- scenario files -----------------------------------------------------------------

namespace {

auto positive = [](auto x) { return x > 0 && std::isfinite(static_cast<double>(x)); };
auto fraction = [](double x) { return x > 0 && x <= 1; };
auto probability = [](double x) { return x >= 0 && x <= 1; };

void parse_autoflops(const checked_map& parent, const YAML::Node& n, const std::string& path,
                     config::autoflops_config& c) {
  checked_map m(n, parent.source(), path,
                {"estimates", "est_x", "bound_x", "min_samples", "warmup_bound_factor", "log_ratio",
                 "flops_samples", "flops_percentile", "flops_alpha", "reference_job",
                 "abort_quota_factor", "resend_probability", "suspicion_error_rate",
                 "host_min_spread"});
  std::string est = c.estimates == config::estimate_clients::off      ? "off"
                    : c.estimates == config::estimate_clients::client ? "client"
                                                                      : "all";
  m.choice("estimates", est, {"off", "client", "all"});
  c.estimates = est == "off"      ? config::estimate_clients::off
                : est == "client" ? config::estimate_clients::client
                                  : config::estimate_clients::all;
  auto x_ok = [](double x) { return x >= 0 && x <= 100; };
  m.read("est_x", c.est_x, x_ok, "in [0, 100]");
  m.read("bound_x", c.bound_x, x_ok, "in [0, 100]");
  if (c.bound_x < c.est_x)
    m.fail(n, m.child("bound_x"), "must be at least est_x");
  m.read(
    "min_samples", c.min_samples, [](std::uint64_t x) { return x >= 2; }, "at least 2");
  m.read(
    "warmup_bound_factor", c.warmup_bound_factor, [](double x) { return x >= 1; }, "at least 1");
  m.read("log_ratio", c.log_ratio);
  m.read(
    "flops_samples", c.flops_samples, [](std::uint64_t x) { return x >= 1 && x <= 100000; },
    "1 to 100000");
  m.read("flops_percentile", c.flops_percentile, fraction, "in (0, 1]");
  m.read("flops_alpha", c.flops_alpha, fraction, "in (0, 1]");
  m.read("reference_job", c.reference_job);
  m.read("abort_quota_factor", c.abort_quota_factor, fraction, "in (0, 1]");
  m.read("resend_probability", c.resend_probability, probability, "in [0, 1]");
  m.read("suspicion_error_rate", c.suspicion_error_rate, probability, "in [0, 1]");
  m.read(
    "host_min_spread", c.host_min_spread, [](double x) { return x >= 0 && x <= 10; }, "in [0, 10]");
}

} // namespace

af_scenario parse_af_scenario(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw af_scenario_error(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  af_scenario s;
  s.file = source;
  checked_map top(root, source, "", {"seed", "jobs", "max_days", "app", "populations"});
  top.read("seed", s.seed);
  top.read(
    "jobs", s.jobs, [](int x) { return x >= 1 && x <= 10000000; }, "1 to 10000000");
  top.read("max_days", s.max_days, positive, "positive");
  if (auto a = root["app"]; a.IsDefined() && !a.IsNull()) {
    checked_map m(a, source, "app",
                  {"predicted_min", "predicted_max", "units_per_predicted", "noise", "noise_kind",
                   "time_noise", "flops_per_au", "cpu_version", "gpu_version", "delay_bound",
                   "credit_policy", "autoflops"});
    m.read("predicted_min", s.predicted_min, positive, "positive");
    m.read("predicted_max", s.predicted_max, positive, "positive");
    if (s.predicted_max < s.predicted_min)
      m.fail(a, "app.predicted_max", "must be at least predicted_min");
    m.read("units_per_predicted", s.units_per_predicted, positive, "positive");
    m.read(
      "noise", s.noise, [](double x) { return x >= 0 && x <= 3; }, "in [0, 3]");
    m.choice("noise_kind", s.noise_kind, {"lognormal", "normal"});
    m.read(
      "time_noise", s.time_noise, [](double x) { return x >= 0 && x <= 1; }, "in [0, 1]");
    m.read("flops_per_au", s.flops_per_au, positive, "positive");
    m.read("cpu_version", s.cpu_version);
    m.read("gpu_version", s.gpu_version);
    if (!s.cpu_version && !s.gpu_version)
      m.fail(a, "app", "needs a cpu or a gpu version");
    m.read("delay_bound", s.delay_bound, positive, "positive (seconds)");
    m.choice("credit_policy", s.credit_policy, {"pfc", "app_units"});
    if (auto f = a["autoflops"]; f.IsDefined() && !f.IsNull())
      parse_autoflops(m, f, "app.autoflops", s.autoflops);
  }
  auto pops = root["populations"];
  if (!pops.IsDefined() || !pops.IsSequence() || pops.size() == 0)
    top.fail(pops.IsDefined() ? pops : root, "populations",
             "a list of at least one population is required");
  for (std::size_t i = 0; i < pops.size(); ++i) {
    auto path = "populations[" + std::to_string(i) + "]";
    checked_map m(pops[i], source, path,
                  {"name", "count", "device", "cpu_flops_min", "cpu_flops_max", "gpu_factor_min",
                   "gpu_factor_max", "efficiency_min", "efficiency_max"});
    af_population p;
    m.read("name", p.name);
    if (p.name.empty())
      p.name = "pop" + std::to_string(i);
    m.read(
      "count", p.count, [](int x) { return x >= 1 && x <= 10000; }, "1 to 10000");
    m.choice("device", p.device, {"cpu", "gpu"});
    if (p.device == "gpu" && !s.gpu_version)
      m.fail(pops[i], m.child("device"), "the app has no gpu version");
    if (p.device == "cpu" && !s.cpu_version)
      m.fail(pops[i], m.child("device"), "the app has no cpu version");
    m.read("cpu_flops_min", p.cpu_flops_min, positive, "positive");
    m.read("cpu_flops_max", p.cpu_flops_max, positive, "positive");
    m.read("gpu_factor_min", p.gpu_factor_min, positive, "positive");
    m.read("gpu_factor_max", p.gpu_factor_max, positive, "positive");
    m.read("efficiency_min", p.efficiency_min, fraction, "in (0, 1]");
    m.read("efficiency_max", p.efficiency_max, fraction, "in (0, 1]");
    if (p.cpu_flops_max < p.cpu_flops_min || p.gpu_factor_max < p.gpu_factor_min
        || p.efficiency_max < p.efficiency_min)
      m.fail(pops[i], path, "a _max is below its _min");
    s.populations.push_back(std::move(p));
  }
  return s;
}

af_scenario load_af_scenario(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw af_scenario_error(file.string() + ":0: cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_af_scenario(ss.str(), file.string());
}

// -- the run ------------------------------------------------------------------------

namespace {

constexpr const char* platform = "x86_64-pc-linux-gnu";
constexpr const char* app_name = "afapp";
constexpr const char* md5 = "00112233445566778899aabbccddeeff";
constexpr int version_num = 100;
/// BOINC's ERR_RSC_LIMIT_EXCEEDED: the client aborted the job at its elapsed-time limit.
constexpr int err_rsc_limit_exceeded = -177;

struct af_truth {
  double predicted = 0;
  double actual = 0;
};

struct af_job {
  std::string name;
  id_type wu = 0;
  double elapsed = 0;
  bool killed = false; ///< Ran past the bound: aborted by the client's time limit.
};

struct af_host {
  const af_population* pop = nullptr;
  bool gpu = false;
  double cpu_flops = 0;
  double gpu_flops = 0;
  double efficiency = 0;
  id_type id = 0;
  std::optional<af_job> job;
  client::seconds_per_app_unit spau;
};

struct af_run {
  const af_scenario& s;
  std::mt19937_64 rng;
  harness h;
  std::vector<af_host> hosts;
  std::string auth;
  std::map<id_type, af_truth> truth;
  std::map<std::string, id_type> wu_ids;
  std::uint64_t created = 0, dispatched = 0, rpcs = 0, next_wu = 1;
  std::map<std::string, af_version_figure> figures; ///< "CPU", "GPU"

  static harness_options options(const af_scenario& s, const std::filesystem::path& dir) {
    harness_options o;
    o.data_dir = dir;
    config::cobble_config cfg;
    cfg.source = s.file;
    auto& p = cfg.projects.emplace_back();
    p.name = "af";
    p.long_name = "AutoFlops lab";
    p.deadline_check_interval = 3600;
    p.users.push_back({"lab", "lab@example.org", "lab-af"});
    // Honest hosts of one account at the lab's own pace (see credit_lab.cpp).
    p.limits = lab_limits();
    auto& a = p.apps.emplace_back();
    a.name = app_name;
    a.min_quorum = a.target_nresults = 1;
    // A replacement of a timed-out job goes to another of the account's hosts.
    a.one_result_per_user_per_wu = false;
    a.max_jobs_per_rpc = 1;
    a.delay_bound = s.delay_bound;
    a.rsc_fpops_est = s.flops_per_au * s.predicted_min;
    a.rsc_fpops_bound = a.rsc_fpops_est * 1e6;
    a.credit_policy = s.credit_policy == "app_units" ? config::credit_policy_kind::app_units
                                                     : config::credit_policy_kind::pfc;
    a.autoflops = s.autoflops;
    if (s.cpu_version) {
      auto& v = a.versions.emplace_back();
      v.platform = platform;
      v.version_num = version_num;
    }
    if (s.gpu_version) {
      auto& v = a.versions.emplace_back();
      v.platform = platform;
      v.version_num = version_num;
      v.plan_class = "cuda";
      v.avg_ncpus = 0.05;
      v.coproc_type = "NVIDIA";
      v.coproc_count = 1;
    }
    o.config = std::move(cfg);
    return o;
  }

  af_run(const af_scenario& sc, const std::filesystem::path& dir)
    : s(sc), rng(sc.seed), h(options(sc, dir)) {
    auto a = h.authenticator("af", "lab");
    if (!a)
      throw std::runtime_error("lab: no account");
    auth = *a;
    for (const auto& pop : s.populations)
      for (int i = 0; i < pop.count; ++i) {
        af_host x;
        x.pop = &pop;
        x.gpu = pop.device == "gpu";
        x.cpu_flops = uniform(pop.cpu_flops_min, pop.cpu_flops_max);
        x.gpu_flops = x.gpu ? x.cpu_flops * log_uniform(pop.gpu_factor_min, pop.gpu_factor_max) : 0;
        double lo = pop.efficiency_min > 0 ? pop.efficiency_min : (x.gpu ? 0.05 : 0.35);
        double hi = pop.efficiency_max > 0 ? pop.efficiency_max : (x.gpu ? 0.15 : 0.65);
        x.efficiency = uniform(lo, std::max(lo, hi));
        hosts.push_back(std::move(x));
      }
  }

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, std::nextafter(hi, hi + 1))(rng);
  }
  double log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }
  double normal(double sigma) { return std::normal_distribution<double>(0, sigma)(rng); }

  void feed(bool force = false) {
    auto want = static_cast<std::uint64_t>(2 * hosts.size() + 8);
    if (!force && created - dispatched >= want)
      return;
    work_batch b;
    b.submitter = "autoflops-lab";
    std::vector<af_truth> made;
    for (std::size_t i = 0; i < std::max<std::size_t>(50, hosts.size()); ++i) {
      af_truth t;
      t.predicted = log_uniform(s.predicted_min, s.predicted_max);
      double r = s.noise_kind == "normal" ? std::max(0.05, 1 + normal(s.noise))
                                          : std::exp(normal(s.noise));
      t.actual = s.units_per_predicted * t.predicted * r;
      work_spec w;
      w.app = app_name;
      w.name = "af" + std::to_string(next_wu++);
      w.predicted_app_units = t.predicted;
      b.items.push_back(std::move(w));
      made.push_back(t);
    }
    auto out = h.create_work("af", std::move(b));
    if (!out)
      throw std::runtime_error("lab: creating work failed: " + caf::to_string(out.error()));
    for (std::size_t i = 0; i < (*out)->ids.size(); ++i) {
      truth[(*out)->ids[i]] = made[i];
      wu_ids[(*out)->names[i]] = (*out)->ids[i];
    }
    created += (*out)->ids.size();
  }

  std::string version_key(const af_host& x) const {
    return std::string{app_name} + "/" + (x.gpu ? "cuda" : "");
  }

  sched_request request(af_host& x, bool want_work) {
    sched_request r;
    r.authenticator = auth;
    r.hostid = x.id;
    r.rpc_seqno = static_cast<std::int64_t>(rpcs);
    r.core_client_major_version = 7;
    r.core_client_minor_version = 20;
    r.platform_name = platform;
    r.host.host_cpid = "af" + std::to_string(&x - hosts.data());
    r.host.p_ncpus = 1;
    r.host.p_fpops = x.cpu_flops;
    r.host.os_name = "Linux";
    if (x.gpu) {
      coproc_description c;
      c.type = resource_type::nvidia;
      c.count = 1;
      c.peak_flops = x.gpu_flops;
      if (want_work)
        c.request = resource_request{1, 1, 0};
      r.coprocs.push_back(c);
    } else if (want_work) {
      r.cpu = resource_request{1, 1, 0};
    }
    if (auto spau = x.spau.get(version_key(x)))
      r.app_unit_versions.push_back(
        app_unit_version{app_name, version_num, x.gpu ? "cuda" : "", *spau, 0});
    if (x.job) {
      reported_result rr;
      rr.name = x.job->name;
      rr.platform = platform;
      rr.version_num = version_num;
      rr.plan_class = x.gpu ? "cuda" : "";
      rr.final_elapsed_time = x.job->elapsed;
      rr.final_cpu_time = x.job->elapsed;
      if (x.job->killed) {
        rr.state = 3; // compute error
        rr.exit_status = err_rsc_limit_exceeded;
      } else {
        rr.state = 5;
        rr.app_units = truth.at(x.job->wu).actual;
        rr.files.push_back(reported_file{x.job->name + "_0", 64, md5});
      }
      r.results.push_back(std::move(rr));
    }
    return r;
  }

  std::optional<time_us> step(std::size_t i) {
    auto& x = hosts[i];
    bool want = dispatched < static_cast<std::uint64_t>(s.jobs);
    if (want)
      feed();
    auto req = request(x, want);
    h.upload_outputs(h.project("af"), req); // before the report, as a client does
    auto reply = h.rpc("af", std::move(req));
    ++rpcs;
    if (!reply)
      throw std::runtime_error("lab: RPC failed: " + caf::to_string(reply.error()));
    const auto& rep = **reply;
    if (rep.hostid)
      x.id = *rep.hostid;
    if (x.job) {
      if (!x.job->killed)
        x.spau.add(version_key(x), x.job->elapsed, truth.at(x.job->wu).actual, 0.1);
      x.job.reset();
    }
    if (rep.results.empty()) {
      if (!want)
        return std::nullopt;
      feed(true);
      return h.now() + 600 * us_per_second;
    }
    ++dispatched;
    const auto& res = rep.results[0];
    auto split = split_indexed_name(res.name);
    auto wu = wu_ids.at(std::string{split->first});
    const auto& t = truth.at(wu);
    double peak = x.gpu ? x.gpu_flops : x.cpu_flops;
    double busy = t.actual * s.flops_per_au / (peak * x.efficiency)
                  * std::exp(normal(std::max(s.time_noise, 1e-9)));
    af_job j;
    j.name = res.name;
    j.wu = wu;
    auto& fig = figures[x.gpu ? "GPU" : "CPU"];
    ++fig.jobs;
    if (res.est_seconds > 0 && res.bound_seconds > 0) {
      ++fig.estimated;
      bool in_est = busy <= res.est_seconds, in_bound = busy <= res.bound_seconds;
      fig.within_estimate += in_est;
      fig.within_bound += in_bound;
      // After the warm-up: the app has min_samples app-unit samples.
      if (warm) {
        ++fig.warm;
        fig.warm_within_estimate += in_est;
        fig.warm_within_bound += in_bound;
      }
      if (!in_bound) {
        j.killed = true;
        busy = res.bound_seconds;
      }
    }
    j.elapsed = busy;
    x.job = j;
    return h.now() + seconds_to_us(busy);
  }

  bool warm = false; ///< Set by the driver once the app has min_samples samples.
};

} // namespace

af_result run_autoflops_lab(const af_scenario& s, const std::filesystem::path& data_dir) {
  af_run run{s, data_dir};
  using item = std::pair<time_us, std::size_t>;
  std::priority_queue<item, std::vector<item>, std::greater<>> queue;
  auto start = run.h.now();
  for (std::size_t i = 0; i < run.hosts.size(); ++i)
    queue.push({start + static_cast<time_us>(i) * us_per_second, i});
  auto limit = start + seconds_to_us(s.max_days * 86400);
  std::uint64_t seen_seq = 0, samples = 0;
  while (!queue.empty()) {
    auto [t, i] = queue.top();
    queue.pop();
    if (t > limit)
      break;
    if (t > run.h.now())
      run.h.advance(t - run.h.now());
    // Warm-up: count the app-unit samples logged so far.
    if (!run.warm) {
      run.h.run();
      auto last = run.h.store().last_seq();
      if (last > seen_seq) {
        (void)run.h.store().scan(seen_seq + 1, last, [&](const storage::event_record& rec) {
          if (rec.kind == ev::autoflops_sampled::kind)
            if (auto e = from_record(rec))
              if (std::get<ev::autoflops_sampled>(e->data).predicted > 0)
                ++samples;
          return true;
        });
        seen_seq = last;
      }
      run.warm = samples >= s.autoflops.min_samples;
    }
    if (auto next = run.step(i))
      queue.push({*next, i});
  }
  af_result r;
  r.scenario = s.file;
  r.seed = s.seed;
  r.hosts = static_cast<int>(run.hosts.size());
  r.rpcs = run.rpcs;
  r.virtual_days = us_to_seconds(run.h.now() - start) / 86400;
  r.true_flops_per_au = s.flops_per_au;
  r.credit_policy = s.credit_policy;
  af_version_figure all;
  all.version = "all";
  for (auto& [name, f] : run.figures) {
    f.version = name;
    r.versions.push_back(f);
    all.jobs += f.jobs;
    all.estimated += f.estimated;
    all.within_estimate += f.within_estimate;
    all.within_bound += f.within_bound;
    all.warm += f.warm;
    all.warm_within_estimate += f.warm_within_estimate;
    all.warm_within_bound += f.warm_within_bound;
  }
  r.versions.push_back(all);

  // est_flops_per_au after each validated job, and credit per true work, from the log.
  run.h.run();
  world w;
  std::vector<double> est;
  std::map<std::string, std::pair<double, double>> credit; // device -> credit, true FLOPs
  std::map<std::string, std::uint64_t> credit_jobs;
  std::map<std::uint32_t, bool> gpu_of_version;
  auto err = run.h.store().scan(1, run.h.store().last_seq(), [&](const storage::event_record& rec) {
    auto e = from_record(rec);
    if (!e)
      return true;
    apply(w, *e);
    if (auto c = std::get_if<ev::project_configured>(&e->data))
      for (const auto& a : c->apps)
        for (const auto& v : a.versions)
          gpu_of_version[v.id] = v.resource != 0;
    if (auto x = std::get_if<ev::results_created>(&e->data); x && x->check)
      r.checks += x->count;
    if (auto x = std::get_if<ev::autoflops_sampled>(&e->data); x && x->predicted > 0) {
      const auto& st = w.projects.at(0).project.autoflops.at(x->app);
      est.push_back(st.est_flops_per_au);
      if (r.array_full_at == 0 && st.est_flops_per_au > 0)
        r.array_full_at = est.size();
    }
    if (auto v = std::get_if<ev::workunit_validated>(&e->data)) {
      auto t = run.truth.find(v->wu);
      for (std::size_t k = 0; k < v->verdicts.size() && k < v->credit.size(); ++k) {
        const auto& d = v->verdicts[k];
        if (!d.valid || t == run.truth.end())
          continue;
        auto dev = gpu_of_version[d.app_version_id] ? "GPU" : "CPU";
        credit[dev].first += v->credit[k].granted;
        credit[dev].second += t->second.actual * s.flops_per_au;
        ++credit_jobs[dev];
        ++r.validated;
      }
    }
    return true;
  });
  if (err)
    throw std::runtime_error("lab: reading the log failed: " + caf::to_string(err));
  if (!est.empty() && est.back() > 0) {
    r.est_flops_per_au = est.back();
    std::size_t k = est.size();
    while (k > 0 && est[k - 1] > 0 && std::abs(est[k - 1] / est.back() - 1) <= 0.05)
      --k;
    r.settled_at = k + 1;
  }
  for (const auto& [dev, cw] : credit)
    r.credit.push_back(
      af_credit_figure{dev, credit_jobs[dev], cw.second > 0 ? cw.first / cw.second * 1e12 : 0});
  return r;
}

std::string format_af_table(const af_result& r) {
  std::string out = fmt::format(
    "AutoFlops lab: {} (seed {}): {} hosts, {} RPCs, {} validated results, {} check replicas, "
    "{:.1f} virtual days\n\n",
    r.scenario, r.seed, r.hosts, r.rpcs, r.validated, r.checks, r.virtual_days);
  out += "Completion times: jobs sent with an AutoFlops estimate and bound that finished within "
         "them (the design: about 95% and 99.99%)\n\n";
  out += "| version | jobs | with estimate | within estimate | within bound | after warm-up | "
         "within estimate | within bound |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& v : r.versions)
    out += fmt::format("| {} | {} | {} | {:.4f} | {:.5f} | {} | {:.4f} | {:.5f} |\n", v.version,
                       v.jobs, v.estimated, v.fraction_estimate(), v.fraction_bound(), v.warm,
                       v.warm ? double(v.warm_within_estimate) / v.warm : 0.0,
                       v.warm ? double(v.warm_within_bound) / v.warm : 0.0);
  out += fmt::format(
    "\nest_flops_per_au: {:.4g} (true FLOPs per app unit {:.4g}, ratio {:.3f}); first "
    "estimate after {} validated jobs, within 5% of the final value from job {} on\n",
    r.est_flops_per_au, r.true_flops_per_au,
    r.true_flops_per_au > 0 ? r.est_flops_per_au / r.true_flops_per_au : 0.0, r.array_full_at,
    r.settled_at);
  out += fmt::format("\nCredit per unit of true work (credit policy {})\n\n", r.credit_policy);
  out += "| device | jobs | credit per 1e12 FLOPs |\n|---|---|---|\n";
  double cpu = 0, gpu = 0;
  for (const auto& c : r.credit) {
    out += fmt::format("| {} | {} | {:.4f} |\n", c.device, c.jobs, c.credit_per_tflop);
    (c.device == "GPU" ? gpu : cpu) = c.credit_per_tflop;
  }
  if (cpu > 0 && gpu > 0)
    out += fmt::format("\nGPU/CPU credit per unit of true work: {:.3f}\n", gpu / cpu);
  return out;
}

void add_autoflops_command(CLI::App& app) {
  auto cmd = app.add_subcommand(
    "autoflops",
    "Run an AutoFlops scenario: emulated CPU and GPU hosts of mixed speed and efficiency run "
    "jobs with noisy predicted app units through the real actors in virtual time; prints the "
    "fractions of jobs within the completion time estimate and bound, how fast "
    "est_flops_per_au settles and credit per unit of true work (see docs/autoflops.md)");
  auto file = std::make_shared<std::string>();
  auto seed = std::make_shared<std::optional<std::uint64_t>>();
  auto jobs = std::make_shared<std::optional<int>>();
  auto keep = std::make_shared<std::string>();
  cmd->add_option("SCENARIO", *file, "Scenario YAML file (tools/sim/scenarios/autoflops*.yaml)")
    ->required();
  cmd->add_option_function<std::uint64_t>(
    "--seed", [seed](std::uint64_t x) { *seed = x; }, "Override the scenario's random seed");
  cmd
    ->add_option_function<int>(
      "--jobs", [jobs](int x) { *jobs = x; }, "Override the scenario's number of jobs")
    ->check(CLI::Range(1, 10000000));
  cmd->add_option("--data-dir", *keep,
                  "Run in this (new) data directory and keep it (for `cobble log tail`)");
  cmd->callback([file, seed, jobs, keep] {
    try {
      auto s = load_af_scenario(*file);
      if (*seed)
        s.seed = **seed;
      if (*jobs)
        s.jobs = **jobs;
      if (!keep->empty() && std::filesystem::exists(*keep) && !std::filesystem::is_empty(*keep))
        throw std::runtime_error("--data-dir " + *keep + " exists and is not empty");
      std::cout << format_af_table(run_autoflops_lab(s, *keep));
    } catch (const af_scenario_error& e) {
      std::cerr << "cobble-sim autoflops: " << e.what() << "\n";
      throw CLI::RuntimeError(2);
    } catch (const std::exception& e) {
      std::cerr << "cobble-sim autoflops: " << e.what() << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

} // namespace cobble::sim
