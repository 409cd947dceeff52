#include "tools/sim/autoflops_lab.hpp"

#include "actors/event_codec.hpp"
#include "actors/events.hpp"
#include "actors/state.hpp"
#include "tools/client/app_units.hpp"
#include "tools/sim/lab.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace cobble::sim {

// -- scenario files -----------------------------------------------------------------

namespace {

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
  auto root = parse_lab_yaml(yaml, source);
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
    m.read("time_noise", s.time_noise, probability, "in [0, 1]");
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
  read_lab_list(top, "populations", "population",
                {"name", "count", "device", "cpu_flops_min", "cpu_flops_max", "gpu_factor_min",
                 "gpu_factor_max", "efficiency_min", "efficiency_max"},
                [&](const checked_map& m, const YAML::Node& n, const std::string& path,
                    std::size_t i) {
                  af_population p;
                  m.read("name", p.name);
                  if (p.name.empty())
                    p.name = "pop" + std::to_string(i);
                  read_host_population(m, n, path, p, [&] {
                    m.choice("device", p.device, {"cpu", "gpu"});
                    if (p.device == "gpu" && !s.gpu_version)
                      m.fail(n, m.child("device"), "the app has no gpu version");
                    if (p.device == "cpu" && !s.cpu_version)
                      m.fail(n, m.child("device"), "the app has no cpu version");
                  });
                  s.populations.push_back(std::move(p));
                });
  return s;
}

af_scenario load_af_scenario(const std::filesystem::path& file) {
  return parse_af_scenario(read_lab_file(file), file.string());
}

// -- the run ------------------------------------------------------------------------

namespace {

constexpr const char* app_name = "afapp";
/// BOINC's ERR_RSC_LIMIT_EXCEEDED: the client aborted the job at its elapsed-time limit.
constexpr int err_rsc_limit_exceeded = -177;

/// A job's truth, known to the lab only.
struct af_truth {
  double predicted = 0;
  double actual = 0;
};

/// What a host is running.
struct af_job {
  std::string name;
  id_type wu = 0;
  double elapsed = 0;
  bool killed = false; ///< Ran past the bound: aborted by the client's time limit.
};

/// A host that keeps its seconds per app unit, as Cobble's client library does.
struct af_host : emulated_host {
  std::optional<af_job> job;
  client::seconds_per_app_unit spau;
};

/// A run of the AutoFlops lab: one project, one app, and the completion-time figures.
struct af_run : lab_run {
  const af_scenario& s;
  std::vector<af_host> hosts;
  std::string auth;
  job_book<af_truth> book;
  std::uint64_t created = 0, dispatched = 0;
  std::map<std::string, af_version_figure> figures; ///< "CPU", "GPU"

  static harness_options options(const af_scenario& s, const std::filesystem::path& dir) {
    auto o = lab_harness_options(s.file, dir);
    auto& a = add_lab_project(o.config, "af", "AutoFlops lab", app_name, 1, s.delay_bound,
                              s.cpu_version, s.gpu_version);
    a.rsc_fpops_est = s.flops_per_au * s.predicted_min;
    a.rsc_fpops_bound = a.rsc_fpops_est * 1e6;
    a.credit_policy = s.credit_policy == "app_units" ? config::credit_policy_kind::app_units
                                                     : config::credit_policy_kind::pfc;
    a.autoflops = s.autoflops;
    return o;
  }

  af_run(const af_scenario& sc, const std::filesystem::path& dir)
    : lab_run(sc.seed, options(sc, dir)), s(sc), auth(lab_account("af")) {
    for (const auto& pop : s.populations)
      for (int i = 0; i < pop.count; ++i) {
        af_host x;
        static_cast<emulated_host&>(x) = draw_host(pop);
        hosts.push_back(std::move(x));
      }
  }

  /// Keeps enough unsent work for the hosts.
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
    created += book.create(h, "af", std::move(b), made);
  }

  std::string version_key(const af_host& x) const {
    return std::string{app_name} + "/" + (x.gpu ? "cuda" : "");
  }

  sched_request request(af_host& x, bool want_work) {
    auto r = lab_run::request(x, auth, "af" + std::to_string(&x - hosts.data()), want_work);
    if (auto spau = x.spau.get(version_key(x)))
      r.app_unit_versions.push_back(
        app_unit_version{app_name, lab_version_num, x.gpu ? "cuda" : "", *spau, 0});
    if (x.job) {
      auto rr = report(x.job->name, x.gpu ? "cuda" : "", !x.job->killed);
      rr.final_elapsed_time = x.job->elapsed;
      rr.final_cpu_time = x.job->elapsed;
      if (x.job->killed) {
        rr.state = 3; // compute error
        rr.exit_status = err_rsc_limit_exceeded;
      } else {
        rr.app_units = book.truth.at(x.job->wu).actual;
      }
      r.results.push_back(std::move(rr));
    }
    return r;
  }

  /// One RPC of host i at the current virtual time; returns when it wants to come back.
  std::optional<time_us> step(std::size_t i) {
    auto& x = hosts[i];
    bool want = dispatched < static_cast<std::uint64_t>(s.jobs);
    if (want)
      feed();
    auto reply = rpc("af", request(x, want), x);
    const auto& rep = *reply;
    if (x.job) {
      if (!x.job->killed)
        x.spau.add(version_key(x), x.job->elapsed, book.truth.at(x.job->wu).actual, 0.1);
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
    auto [wu, t] = book.of_result(res.name);
    double busy = t.actual * s.flops_per_au / (x.peak() * x.efficiency)
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
  std::uint64_t seen_seq = 0, samples = 0;
  af_result r;
  r.virtual_days = run.run_hosts(run.hosts.size(), s.max_days, [&](std::size_t i) {
    // Warm-up: count the app-unit samples logged so far.
    if (!run.warm) {
      seen_seq = run.scan_log(seen_seq + 1, [&](const storage::event_record& rec) {
        if (rec.kind == ev::autoflops_sampled::kind)
          if (auto e = from_record(rec))
            if (std::get<ev::autoflops_sampled>(e->data).predicted > 0)
              ++samples;
        return true;
      });
      run.warm = samples >= s.autoflops.min_samples;
    }
    return run.step(i);
  });
  r.scenario = s.file;
  r.seed = s.seed;
  r.hosts = static_cast<int>(run.hosts.size());
  r.rpcs = run.rpcs;
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
  world w;
  std::vector<double> est;
  std::map<std::string, std::pair<double, double>> credit; // device -> credit, true FLOPs
  std::map<std::string, std::uint64_t> credit_jobs;
  std::map<std::uint32_t, bool> gpu_of_version;
  run.scan_log(1, [&](const storage::event_record& rec) {
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
      auto t = run.book.truth.find(v->wu);
      for (std::size_t k = 0; k < v->verdicts.size() && k < v->credit.size(); ++k) {
        const auto& d = v->verdicts[k];
        if (!d.valid || t == run.book.truth.end())
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
  if (!est.empty() && est.back() > 0) {
    r.est_flops_per_au = est.back();
    std::size_t k = est.size();
    while (k > 0 && est[k - 1] > 0 && std::abs(est[k - 1] / est.back() - 1) <= 0.05)
      --k;
    r.settled_at = k + 1;
  }
  for (const auto& [dev, cw] : credit)
    r.credit.push_back(
      af_credit_figure{dev, credit_jobs[dev], credit_per_tflop(cw.first, cw.second)});
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
  lab_command_text text{
    "autoflops",
    "Run an AutoFlops scenario: emulated CPU and GPU hosts of mixed speed and efficiency run "
    "jobs with noisy predicted app units through the real actors in virtual time; prints the "
    "fractions of jobs within the completion time estimate and bound, how fast "
    "est_flops_per_au settles and credit per unit of true work (see docs/autoflops.md)",
    "Scenario YAML file (tools/sim/scenarios/autoflops*.yaml)",
    "Run in this (new) data directory and keep it (for `cobble log tail`)"};
  auto jobs = std::make_shared<std::optional<int>>();
  auto options = [jobs](CLI::App& cmd) {
    cmd
      .add_option_function<int>(
        "--jobs", [jobs](int x) { *jobs = x; }, "Override the scenario's number of jobs")
      ->check(CLI::Range(1, 10000000));
  };
  add_lab_command(app, text, options,
                  [jobs](const std::string& file, std::optional<std::uint64_t> seed) {
                    auto s = load_af_scenario(file);
                    if (seed)
                      s.seed = *seed;
                    if (*jobs)
                      s.jobs = **jobs;
                    return lab_runner{[s](const std::filesystem::path& dir) {
                      return format_af_table(run_autoflops_lab(s, dir));
                    }};
                  });
}

} // namespace cobble::sim
