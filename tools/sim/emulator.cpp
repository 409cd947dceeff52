#include "tools/sim/emulator.hpp"

#include "actors/error.hpp"
#include "storage/file_store.hpp"
#include "tools/sim/harness.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <unordered_map>

namespace cobble::sim {

namespace {

constexpr int R = client::max_resources;

std::string plan_class_of(int r) {
  if (r == 0)
    return "";
  std::string s = resource_name(r);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

int rsc_of_plan_class(const std::string& pc) {
  for (int r = 1; r < R; ++r)
    if (pc == plan_class_of(r))
      return r;
  return 0;
}

/// What every replica's output of a workunit contains (so that honest replicas agree).
std::string output_content(const std::string& wu) {
  return "output of " + wu + "\n";
}

/// What the emulator remembers of a job it received.
struct dispatch {
  std::string result;
  std::string wu;
  std::string platform;
  int version_num = 0;
  std::string plan_class;
  std::vector<std::string> outputs;
  std::vector<std::string> signatures; ///< Parallel to outputs (empty in-process).
};

/// One attachment of a host to a project.
struct attachment {
  int sp = 0;  ///< Scenario project index.
  int cp = -1; ///< Client project index (-1 until attached).
  std::uint64_t hostid = 0;
  std::int64_t seqno = 0;
};

struct host {
  const scenario_host* spec = nullptr;
  std::unique_ptr<client::client> c;
  std::vector<attachment> att;
  std::vector<int> sp_of_cp; ///< Client project index -> scenario project index.
  std::unordered_map<std::uint64_t, dispatch> jobs;
  std::mt19937_64 rng;
  bool on = true, active = true;
  double next_on_toggle = 0, next_active_toggle = 0;
  std::vector<double> flops_used; ///< Per scenario project, within the figures window.
  std::vector<double> last_ran;   ///< Per scenario project, any resource.
  std::vector<std::array<double, R>> last_ran_r;
  double monotony_sum = 0;
  std::array<double, R> monotony_r_sum{};
  long monotony_n = 0;
  std::array<long, R> monotony_r_n{};
};

struct app_supply {
  long created = 0;
  long unsent = 0;
};

double exp_draw(std::mt19937_64& rng, double mean) {
  if (mean <= 0)
    return 0;
  std::exponential_distribution<double> d(1.0 / mean);
  return d(rng);
}

class emulator {
public:
  emulator(const scenario& sc, server_link& link, const run_options& opts)
    : sc_(sc), link_(link), opts_(opts), rng_(sc.seed) {}

  run_result run();

private:
  void setup();
  void availability(host& h, double now);
  void attach_due(host& h, double now);
  void supply(int sp, double now);
  void do_rpc(host& h, const client::rpc_plan& plan, double now);
  void account(host& h, std::size_t hi, double now, double dt, bool computing);
  void timeline(host& h, double now, bool computing);
  void finish();

  const scenario& sc_;
  server_link& link_;
  run_options opts_;
  std::mt19937_64 rng_;
  double t0_ = 0;
  std::vector<std::string> auth_;
  std::vector<std::vector<app_supply>> supply_;
  std::vector<std::unordered_map<std::string, double>> actual_flops_; // per project: wu -> FLOPs
  std::vector<std::unordered_map<std::string, int>> app_of_wu_;
  std::vector<host> hosts_;
  run_result out_;
  // figures accumulators (window: from warmup on)
  std::array<double, R> cap_{}, used_{}, wasted_{};
  std::array<long, R> rpcs_r_{}, jobs_r_{};
  long rpcs_ = 0, jobs_ = 0;
  std::vector<long> met_, missed_;
  std::vector<double> proj_flops_;
  // host 0 timeline: per rsc per slot the open segment
  std::array<std::vector<int>, R> open_project_{};
  std::array<std::vector<double>, R> open_start_{};
};

void emulator::setup() {
  t0_ = link_.now();
  auto np = sc_.projects.size();
  out_.duration = sc_.duration;
  out_.warmup = sc_.warmup;
  out_.sample_interval = sc_.sample_interval;
  for (auto& hs : out_.has_app)
    hs.assign(np, 0);
  for (std::size_t p = 0; p < np; ++p) {
    out_.projects.push_back(sc_.projects[p].name);
    out_.shares.push_back(sc_.projects[p].share);
    for (const auto& a : sc_.projects[p].apps)
      for (const auto& rn : a.resources)
        out_.has_app[static_cast<std::size_t>(resource_index(rn))][p] = 1;
    auth_.push_back(link_.authenticator(sc_.projects[p].name));
  }
  supply_.resize(np);
  actual_flops_.resize(np);
  app_of_wu_.resize(np);
  for (std::size_t p = 0; p < np; ++p)
    supply_[p].resize(sc_.projects[p].apps.size());
  met_.assign(np, 0);
  missed_.assign(np, 0);
  proj_flops_.assign(np, 0);
  auto buckets = static_cast<std::size_t>(std::ceil(sc_.duration / sc_.sample_interval));
  out_.usage.assign(buckets, std::vector<std::array<double, R>>(np, std::array<double, R>{}));
  out_.debts.assign(buckets, std::vector<double>(np, 0.0));

  std::uint64_t seed = sc_.seed;
  for (const auto& spec : sc_.hosts)
    for (int i = 0; i < spec.count; ++i) {
      host h;
      h.spec = &spec;
      h.rng.seed(seed++ * 0x9E3779B97F4A7C15ULL + 17);
      std::vector<client::resource> rs(R);
      rs[0] = client::resource{"CPU", spec.ncpus, spec.cpu_flops};
      for (int r = 1; r < R; ++r)
        rs[static_cast<std::size_t>(r)] = client::resource{resource_name(r), 0, 0};
      for (const auto& g : spec.gpus)
        rs[static_cast<std::size_t>(resource_index(g.type))] = client::resource{g.type, g.count,
                                                                                g.flops};
      if (hosts_.empty())
        for (int r = 0; r < R; ++r) {
          out_.host0_instances[static_cast<std::size_t>(r)]
            = rs[static_cast<std::size_t>(r)].ninstances;
          out_.speeds[static_cast<std::size_t>(r)] = rs[static_cast<std::size_t>(r)].peak_flops;
        }
      h.c = std::make_unique<client::client>(std::move(rs), sc_.client, 0.0);
      for (std::size_t p = 0; p < np; ++p) {
        bool wanted = spec.projects.empty()
                      || std::find(spec.projects.begin(), spec.projects.end(), sc_.projects[p].name)
                           != spec.projects.end();
        if (wanted)
          h.att.push_back(attachment{static_cast<int>(p), -1, 0, 0});
      }
      h.flops_used.assign(np, 0);
      h.last_ran.assign(np, 0);
      h.last_ran_r.assign(np, std::array<double, R>{});
      if (spec.on_frac < 1)
        h.next_on_toggle = exp_draw(h.rng, spec.on_frac * spec.availability_period);
      if (spec.active_frac < 1)
        h.next_active_toggle = exp_draw(h.rng, spec.active_frac * spec.availability_period);
      hosts_.push_back(std::move(h));
    }
  for (int r = 0; r < R; ++r) {
    open_project_[static_cast<std::size_t>(r)].assign(
      static_cast<std::size_t>(out_.host0_instances[static_cast<std::size_t>(r)]), -1);
    open_start_[static_cast<std::size_t>(r)].assign(
      static_cast<std::size_t>(out_.host0_instances[static_cast<std::size_t>(r)]), 0);
  }
}

void emulator::availability(host& h, double now) {
  const auto& s = *h.spec;
  if (s.on_frac < 1)
    while (now >= h.next_on_toggle) {
      h.on = !h.on;
      double mean = (h.on ? s.on_frac : 1 - s.on_frac) * s.availability_period;
      h.next_on_toggle += std::max(exp_draw(h.rng, mean), 1.0);
      h.c->touch();
    }
  if (s.active_frac < 1)
    while (now >= h.next_active_toggle) {
      h.active = !h.active;
      double mean = (h.active ? s.active_frac : 1 - s.active_frac) * s.availability_period;
      h.next_active_toggle += std::max(exp_draw(h.rng, mean), 1.0);
    }
}

void emulator::attach_due(host& h, double now) {
  for (auto& a : h.att)
    if (a.cp < 0 && now >= sc_.projects[static_cast<std::size_t>(a.sp)].attach_at) {
      client::project p;
      p.name = sc_.projects[static_cast<std::size_t>(a.sp)].name;
      p.share = sc_.projects[static_cast<std::size_t>(a.sp)].share;
      a.cp = h.c->attach(p);
      h.sp_of_cp.push_back(a.sp);
      h.last_ran[static_cast<std::size_t>(a.sp)] = now;
      h.last_ran_r[static_cast<std::size_t>(a.sp)].fill(now);
    }
}

void emulator::supply(int sp, double now) {
  const auto& proj = sc_.projects[static_cast<std::size_t>(sp)];
  work_batch batch;
  batch.submitter = "cobble-sim";
  std::vector<std::pair<std::string, int>> made;
  for (std::size_t a = 0; a < proj.apps.size(); ++a) {
    const auto& app = proj.apps[a];
    auto& sup = supply_[static_cast<std::size_t>(sp)][a];
    if (now < app.start || (app.stop && now >= *app.stop))
      continue;
    long low = static_cast<long>(proj.max_jobs_per_rpc) * static_cast<long>(app.resources.size())
               * proj.replication;
    if (sup.unsent >= low)
      continue;
    long n = 4L * proj.max_jobs_per_rpc * static_cast<long>(app.resources.size());
    if (app.count)
      n = std::min(n, *app.count - sup.created);
    for (long i = 0; i < n; ++i) {
      work_spec w;
      w.app = app.name;
      w.name = app.name + "_" + std::to_string(sup.created + i + 1);
      w.rsc_fpops_est = app.flops;
      w.rsc_fpops_bound = app.flops * 100;
      w.delay_bound = app.delay_bound;
      double f = app.flops;
      if (app.flops_spread > 0) {
        std::normal_distribution<double> nd(1.0, app.flops_spread);
        f = app.flops * std::max(0.05, nd(rng_));
      }
      auto server_name = link_.work_name(w.name);
      actual_flops_[static_cast<std::size_t>(sp)][server_name] = f;
      app_of_wu_[static_cast<std::size_t>(sp)][server_name] = static_cast<int>(a);
      batch.items.push_back(std::move(w));
    }
    if (n > 0) {
      sup.created += n;
      sup.unsent += n * proj.replication;
    }
  }
  if (batch.items.empty())
    return;
  std::string err;
  if (!link_.create_work(proj.name, batch, err))
    std::fprintf(stderr, "cobble-sim: creating work for %s failed: %s\n", proj.name.c_str(),
                 err.c_str());
}

void emulator::do_rpc(host& h, const client::rpc_plan& plan, double now) {
  int sp = h.sp_of_cp[static_cast<std::size_t>(plan.project)];
  auto spi = static_cast<std::size_t>(sp);
  const auto& proj = sc_.projects[spi];
  auto& att = *std::find_if(h.att.begin(), h.att.end(), [&](auto& a) { return a.sp == sp; });
  if (plan.request.any())
    supply(sp, now);
  auto& c = *h.c;
  const auto& rs = c.resources();
  sched_request req;
  req.authenticator = auth_[spi];
  req.hostid = att.hostid;
  req.rpc_seqno = ++att.seqno;
  req.core_client_major_version = 7;
  req.core_client_minor_version = 20;
  req.platform_name = "x86_64-pc-linux-gnu";
  req.work_req_seconds = plan.request.work_req_seconds();
  req.cpu.req_secs = plan.request.secs[0];
  req.cpu.req_instances = plan.request.instances[0];
  for (int r = 1; r < R; ++r) {
    const auto& res = rs[static_cast<std::size_t>(r)];
    if (res.ninstances <= 0)
      continue;
    coproc_description cd;
    cd.type = static_cast<resource_type>(r);
    cd.count = res.ninstances;
    cd.peak_flops = res.peak_flops;
    cd.request.req_secs = plan.request.secs[static_cast<std::size_t>(r)];
    cd.request.req_instances = plan.request.instances[static_cast<std::size_t>(r)];
    req.coprocs.push_back(cd);
  }
  req.host.host_cpid = "sim" + std::to_string(&h - hosts_.data());
  req.host.domain_name = h.spec->name;
  req.host.p_ncpus = rs[0].ninstances;
  req.host.p_fpops = rs[0].peak_flops;
  req.host.os_name = "Linux";
  req.host.on_frac = h.spec->on_frac;
  req.host.active_frac = h.spec->active_frac;
  req.host.gpu_active_frac = h.spec->active_frac;
  // The sequences this host believes it holds for the project (work sequences design).
  req.sequences_held = c.sequences(plan.project).names();
  // AutoFlops: the client's seconds_per_app_unit of this project's app versions (keys are
  // "app/plan_class"; every emulated version has the configuration's default version_num).
  for (const auto& [key, secs] : c.spau().all()) {
    auto slash = key.find('/');
    if (slash == std::string::npos)
      continue;
    auto app_name = key.substr(0, slash);
    if (std::none_of(proj.apps.begin(), proj.apps.end(),
                     [&](const auto& a) { return a.name == app_name; }))
      continue;
    req.app_unit_versions.push_back(app_unit_version{app_name,
                                                     config::app_version_config{}.version_num,
                                                     key.substr(slash + 1), secs, 0});
  }
  auto done = c.take_reports(plan.project);
  for (const auto& j : done) {
    auto it = h.jobs.find(j.id);
    if (it == h.jobs.end())
      continue;
    const auto& d = it->second;
    reported_result rr;
    rr.name = d.result;
    rr.state = 5;
    rr.final_cpu_time = j.elapsed;
    rr.final_elapsed_time = j.elapsed;
    rr.platform = d.platform;
    rr.version_num = d.version_num;
    rr.plan_class = d.plan_class;
    rr.app_units = j.app_units;
    // The outputs are uploaded before the report, as a BOINC client does; one the server
    // refuses is still reported (its result is then invalid).
    auto content = output_content(d.wu);
    auto md5 = storage::md5_hex(content);
    for (std::size_t k = 0; k < d.outputs.size(); ++k) {
      std::string upload_error; // refused for a result timed out meanwhile: nothing to do
      link_.upload(proj.name, att.hostid, d.outputs[k],
                   k < d.signatures.size() ? d.signatures[k] : std::string{}, content,
                   upload_error);
      rr.files.push_back(reported_file{d.outputs[k], static_cast<double>(content.size()), md5});
    }
    req.results.push_back(std::move(rr));
    // Figures: deadlines and waste, for reports in the window.
    if (now >= sc_.warmup) {
      auto ri = static_cast<std::size_t>(j.rsc);
      double flops = j.elapsed * j.instances * rs[ri].peak_flops;
      ++jobs_r_[ri];
      ++jobs_;
      if (now > j.deadline) {
        ++missed_[spi];
        wasted_[ri] += flops;
      } else {
        ++met_[spi];
      }
    }
    h.jobs.erase(it);
  }
  if (now >= sc_.warmup) {
    ++rpcs_;
    for (int r = 0; r < R; ++r)
      if (plan.request.wants(r))
        ++rpcs_r_[static_cast<std::size_t>(r)];
  }
  std::string err;
  auto reply = link_.rpc(proj.name, req, err);
  std::array<int, R> got{};
  if (!reply) {
    ++out_.fig.rpc_errors;
    c.after_rpc(plan, got, now, 600);
    for (auto& j : done) // report again next time
      c.jobs().push_back(j);
    c.touch();
    return;
  }
  if (reply->hostid)
    att.hostid = *reply->hostid;
  c.sequences(plan.project).revoke_all(reply->sequences_revoked);
  for (const auto& r : reply->results) {
    const workunit_description* wu = nullptr;
    for (const auto& w : reply->workunits)
      if (w.name == r.wu_name)
        wu = &w;
    int rsc = rsc_of_plan_class(r.plan_class);
    auto& af = actual_flops_[spi];
    double est = wu ? wu->rsc_fpops_est : 0;
    auto fit = af.find(r.wu_name);
    double actual = fit != af.end() ? fit->second : est;
    auto ait = app_of_wu_[spi].find(r.wu_name);
    int ai = ait != app_of_wu_[spi].end() ? ait->second : -1;
    std::string app_name = wu ? wu->app_name : std::string();
    double usage = rsc == 0 ? 1.0
                            : (ai >= 0 ? proj.apps[static_cast<std::size_t>(ai)].gpu_usage : 1.0);
    if (ai >= 0) {
      auto& sup = supply_[spi][static_cast<std::size_t>(ai)];
      sup.unsent = std::max(0L, sup.unsent - 1);
    }
    double eff = 1;
    if (auto e = h.spec->efficiency.find(app_name); e != h.spec->efficiency.end())
      eff = e->second;
    // Elements of a work sequence are named SEQ@POSITION...: the host now holds SEQ.
    if (auto at = r.wu_name.find('@'); at != std::string::npos)
      c.sequences(plan.project).add(r.wu_name.substr(0, at));
    client::job j;
    j.name = r.name;
    j.project = plan.project;
    j.rsc = rsc;
    j.instances = usage;
    j.deadline = r.report_deadline - t0_;
    j.received = now;
    j.app_version = app_name + "/" + r.plan_class;
    j.app_units = r.predicted_app_units > 0 ? r.predicted_app_units : 1;
    double peak = rs[static_cast<std::size_t>(rsc)].peak_flops;
    j.actual_secs = actual / std::max(peak * eff * usage, 1.0);
    c.add_job(std::move(j), est);
    dispatch d{r.name, r.wu_name, r.platform, r.version_num, r.plan_class, {}, {}};
    for (const auto& o : r.outputs) {
      d.outputs.push_back(o.file_name);
      std::string sig;
      for (const auto& f : reply->files)
        if (f.name == o.file_name)
          sig = f.xml_signature;
      d.signatures.push_back(std::move(sig));
    }
    h.jobs.emplace(c.jobs().back().id, std::move(d));
    ++got[static_cast<std::size_t>(rsc)];
  }
  for (const auto& name : reply->result_aborts)
    if (auto id = c.abort(name))
      h.jobs.erase(id);
  c.after_rpc(plan, got, now, reply->request_delay);
}

void emulator::account(host& h, std::size_t hi, double now, double dt, bool computing) {
  auto& c = *h.c;
  const auto& rs = c.resources();
  const auto& usage = c.last_usage();
  auto bucket = static_cast<std::size_t>(now / sc_.sample_interval);
  bool window = now >= sc_.warmup;
  std::array<double, R> used_now{};
  for (std::size_t cp = 0; cp < usage.size(); ++cp) {
    auto sp = static_cast<std::size_t>(h.sp_of_cp[cp]);
    for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
      double u = usage[cp][r];
      if (u <= 0)
        continue;
      used_now[r] += u;
      if (bucket < out_.usage.size())
        out_.usage[bucket][sp][r] += u;
      h.last_ran[sp] = now + dt;
      h.last_ran_r[sp][r] = now + dt;
      if (window) {
        double f = u * rs[r].peak_flops;
        h.flops_used[sp] += f;
        proj_flops_[sp] += f;
      }
    }
  }
  if (hi == 0 && bucket < out_.debts.size())
    for (std::size_t cp = 0; cp < c.projects().size(); ++cp)
      out_.debts[bucket][static_cast<std::size_t>(h.sp_of_cp[cp])] = c.projects()[cp].overall_debt;
  if (!window)
    return;
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
    if (rs[r].ninstances <= 0)
      continue;
    if (computing)
      cap_[r] += rs[r].ninstances * dt * rs[r].peak_flops;
    used_[r] += used_now[r] * rs[r].peak_flops;
  }
  // Monotony: how long each attached project has gone without running, over the window.
  double sum = 0;
  int n = 0;
  std::array<double, R> sum_r{};
  std::array<int, R> n_r{};
  for (const auto& a : h.att) {
    if (a.cp < 0)
      continue;
    auto sp = static_cast<std::size_t>(a.sp);
    double x = std::min(1.0, (now + dt - h.last_ran[sp]) / sc_.monotony_window);
    sum += x * x;
    ++n;
    for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r)
      if (rs[r].ninstances > 0 && out_.has_app[r][sp]) {
        double y = std::min(1.0, (now + dt - h.last_ran_r[sp][r]) / sc_.monotony_window);
        sum_r[r] += y * y;
        ++n_r[r];
      }
  }
  if (n > 1) {
    h.monotony_sum += std::sqrt(sum / n);
    ++h.monotony_n;
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r)
    if (n_r[r] > 1) {
      h.monotony_r_sum[r] += std::sqrt(sum_r[r] / n_r[r]);
      ++h.monotony_r_n[r];
    }
}

void emulator::timeline(host& h, double now, bool computing) {
  constexpr std::size_t max_segments = 200000;
  std::array<std::vector<int>, R> cur;
  for (int r = 0; r < R; ++r)
    cur[static_cast<std::size_t>(r)].assign(open_project_[static_cast<std::size_t>(r)].size(), -1);
  if (computing)
    for (const auto& j : h.c->jobs())
      if (j.state == client::job_state::running && j.slot >= 0) {
        auto& v = cur[static_cast<std::size_t>(j.rsc)];
        if (static_cast<std::size_t>(j.slot) < v.size())
          v[static_cast<std::size_t>(j.slot)] = h.sp_of_cp[static_cast<std::size_t>(j.project)];
      }
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r)
    for (std::size_t s = 0; s < cur[r].size(); ++s) {
      int& open = open_project_[r][s];
      if (cur[r][s] == open)
        continue;
      if (open >= 0 && out_.timeline.size() < max_segments)
        out_.timeline.push_back(
          timeline_segment{static_cast<int>(r), static_cast<int>(s), open, open_start_[r][s], now});
      open = cur[r][s];
      open_start_[r][s] = now;
    }
}

void emulator::finish() {
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r)
    for (std::size_t s = 0; s < open_project_[r].size(); ++s)
      if (open_project_[r][s] >= 0)
        out_.timeline.push_back(timeline_segment{static_cast<int>(r), static_cast<int>(s),
                                                 open_project_[r][s], open_start_[r][s],
                                                 sc_.duration});
  auto np = sc_.projects.size();
  auto& fig = out_.fig;
  double total_share = 0;
  for (const auto& p : sc_.projects)
    total_share += p.share;
  double all_flops = 0;
  for (double f : proj_flops_)
    all_flops += f;
  for (std::size_t p = 0; p < np; ++p) {
    project_figures pf;
    pf.name = sc_.projects[p].name;
    pf.target_share = sc_.projects[p].share / total_share;
    pf.flops_share = all_flops > 0 ? proj_flops_[p] / all_flops : 0;
    pf.deadlines_met = met_[p];
    pf.deadlines_missed = missed_[p];
    fig.projects.push_back(pf);
  }
  // Share violation per host: RMS over its projects of (FLOPs fraction - share fraction);
  // per resource the same among the projects with an app for it, from the usage of that
  // resource. Averaged over hosts.
  double sv = 0;
  std::array<double, R> sv_r{};
  std::array<int, R> sv_rn{};
  double mono = 0, mono_n = 0;
  std::array<double, R> mono_r{}, mono_rn{};
  for (auto& h : hosts_) {
    double used = 0, shares = 0;
    for (const auto& a : h.att) {
      used += h.flops_used[static_cast<std::size_t>(a.sp)];
      shares += sc_.projects[static_cast<std::size_t>(a.sp)].share;
    }
    double s2 = 0;
    for (const auto& a : h.att) {
      auto sp = static_cast<std::size_t>(a.sp);
      double x = (used > 0 ? h.flops_used[sp] / used : 0) - sc_.projects[sp].share / shares;
      s2 += x * x;
    }
    if (!h.att.empty())
      sv += std::sqrt(s2 / static_cast<double>(h.att.size()));
    if (h.monotony_n > 0) {
      mono += h.monotony_sum / static_cast<double>(h.monotony_n);
      mono_n += 1;
    }
    for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r)
      if (h.monotony_r_n[r] > 0) {
        mono_r[r] += h.monotony_r_sum[r] / static_cast<double>(h.monotony_r_n[r]);
        mono_rn[r] += 1;
      }
  }
  // Per-resource share violation from the aggregated usage after warm-up.
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
    double used = 0, shares = 0;
    int n = 0;
    for (std::size_t p = 0; p < np; ++p)
      if (out_.has_app[r][p]) {
        shares += sc_.projects[p].share;
        ++n;
      }
    if (n == 0)
      continue;
    std::vector<double> u(np, 0.0);
    for (std::size_t b = 0; b < out_.usage.size(); ++b)
      if (static_cast<double>(b) * sc_.sample_interval >= sc_.warmup)
        for (std::size_t p = 0; p < np; ++p)
          u[p] += out_.usage[b][p][r];
    for (double x : u)
      used += x;
    double s2 = 0;
    for (std::size_t p = 0; p < np; ++p)
      if (out_.has_app[r][p]) {
        double x = (used > 0 ? u[p] / used : 0) - sc_.projects[p].share / shares;
        s2 += x * x;
      }
    sv_r[r] = std::sqrt(s2 / n);
    sv_rn[r] = n;
  }
  auto hn = static_cast<double>(hosts_.size());
  fig.overall.present = true;
  double cap = 0, used = 0, wasted = 0;
  long jobs = 0;
  for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
    auto& f = fig.rsc[r];
    f.present = cap_[r] > 0 || out_.host0_instances[r] > 0;
    f.capacity = cap_[r];
    f.used = used_[r];
    f.wasted = wasted_[r];
    f.idle_fraction = cap_[r] > 0 ? std::max(0.0, 1 - used_[r] / cap_[r]) : 0;
    f.wasted_fraction = used_[r] > 0 ? wasted_[r] / used_[r] : 0;
    f.share_violation = sv_r[r];
    f.monotony = mono_rn[r] > 0 ? mono_r[r] / mono_rn[r] : 0;
    f.rpcs = rpcs_r_[r];
    f.jobs = jobs_r_[r];
    f.rpcs_per_job = f.jobs > 0 ? static_cast<double>(f.rpcs) / static_cast<double>(f.jobs) : 0;
    cap += cap_[r];
    used += used_[r];
    wasted += wasted_[r];
    jobs += jobs_r_[r];
  }
  auto& o = fig.overall;
  o.capacity = cap;
  o.used = used;
  o.wasted = wasted;
  o.idle_fraction = cap > 0 ? std::max(0.0, 1 - used / cap) : 0;
  o.wasted_fraction = used > 0 ? wasted / used : 0;
  o.share_violation = hn > 0 ? sv / hn : 0;
  o.monotony = mono_n > 0 ? mono / mono_n : 0;
  o.rpcs = rpcs_;
  o.jobs = jobs;
  o.rpcs_per_job = jobs > 0 ? static_cast<double>(rpcs_) / static_cast<double>(jobs) : 0;
}

run_result emulator::run() {
  auto wall0 = std::chrono::steady_clock::now();
  auto last_progress = wall0;
  setup();
  const double step = sc_.step;
  const auto steps = static_cast<long>(std::ceil(sc_.duration / step - 1e-9));
  for (auto& h : hosts_)
    attach_due(h, 0);
  for (long k = 0; k < steps; ++k) {
    double now = static_cast<double>(k) * step;
    double dt = std::min(step, sc_.duration - now);
    for (std::size_t hi = 0; hi < hosts_.size(); ++hi) {
      auto& h = hosts_[hi];
      availability(h, now);
      bool computing = h.on && h.active;
      h.c->run(now, dt, computing);
      account(h, hi, now, dt, computing);
      if (hi == 0)
        timeline(h, now, computing);
    }
    link_.advance(dt);
    double next = now + dt;
    for (auto& h : hosts_) {
      attach_due(h, next);
      h.c->schedule(next);
      if (!h.on)
        continue;
      // A few RPCs in a row when each one leaves work to ask for (another project).
      for (int i = 0; i < 4; ++i) {
        auto plan = h.c->plan_rpc(next);
        if (!plan)
          break;
        do_rpc(h, *plan, next);
        h.c->schedule(next);
      }
    }
    out_.host_steps += static_cast<long>(hosts_.size());
    if (opts_.progress) {
      auto t = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(t - last_progress).count() >= opts_.progress_every) {
        opts_.progress(next, sc_.duration);
        last_progress = t;
      }
    }
  }
  finish();
  out_.wall_seconds
    = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return std::move(out_);
}

/// The in-process server: a harness node configured from the scenario.
class harness_link final : public server_link {
public:
  explicit harness_link(const scenario& sc) : h_(options(sc)) {}

  double now() const override { return us_to_seconds(h_.now()); }
  void advance(double dt) override { h_.advance(seconds_to_us(dt)); }
  std::string authenticator(const std::string& project) override {
    auto a = h_.authenticator(project, "sim");
    if (!a)
      throw std::runtime_error("no account key for user sim of project " + project);
    return *a;
  }
  std::optional<sched_reply>
  rpc(const std::string& project, const sched_request& req, std::string& error) override {
    auto r = h_.rpc(project, req);
    if (!r) {
      error = describe(r.error());
      return std::nullopt;
    }
    return **r;
  }
  bool upload(const std::string& project, std::uint64_t hostid, const std::string& file,
              const std::string&, const std::string& content, std::string& error) override {
    // The upload handler's message once the file is stored whole (net/files.cpp).
    auto r = h_.ask<bool>(h_.project(project), atom::upload_v, file, static_cast<id_type>(hostid),
                          static_cast<std::uint64_t>(content.size()), storage::md5_hex(content));
    if (!r) {
      error = describe(r.error());
      return false;
    }
    return true;
  }
  bool
  create_work(const std::string& project, const work_batch& batch, std::string& error) override {
    auto r = h_.create_work(project, batch);
    if (!r) {
      error = describe(r.error());
      return false;
    }
    return true;
  }

private:
  static harness_options options(const scenario& sc) {
    harness_options o;
    o.config = make_config(sc);
    // The in-process node needs no periodic snapshots (a final one is written at the end).
    o.config.server.snapshot_every_events = 1ULL << 40;
    o.config.server.snapshot_interval = std::chrono::seconds(1LL << 30);
    return o;
  }
  harness h_;
};

} // namespace

config::cobble_config make_config(const scenario& sc) {
  config::cobble_config cfg;
  cfg.source = sc.source;
  for (const auto& sp : sc.projects) {
    config::project_config p;
    p.name = sp.name;
    p.long_name = "cobble-sim project " + sp.name;
    p.request_delay = sp.request_delay;
    p.deadline_check_interval = std::max(3600.0, sc.step);
    p.file_grace_period = 3600;
    p.users.push_back(config::user_config{"sim", "sim@example.org", ""});
    // Every simulated host is an honest volunteer of the one "sim" account; its client
    // honours request_delay, so the minimum interval stays on, but the caps on new hosts
    // and on jobs in progress would model a policy the scenario did not ask for.
    p.limits.max_new_hosts_per_day = 0;
    p.limits.max_jobs_in_progress = 0;
    p.limits.max_gpu_jobs_in_progress = 0;
    for (const auto& sa : sp.apps) {
      config::app_config a;
      a.name = sa.name;
      a.min_quorum = sp.replication;
      a.target_nresults = sp.replication;
      a.one_result_per_user_per_wu = false; // every emulated host belongs to the one user
      a.max_total_results = std::max(10, sp.replication * 3);
      a.max_success_results = std::max(6, sp.replication * 2);
      a.delay_bound = sa.delay_bound;
      a.max_jobs_per_rpc = sp.max_jobs_per_rpc;
      a.rsc_fpops_est = sa.flops;
      a.rsc_fpops_bound = sa.flops * 100;
      for (const auto& rn : sa.resources) {
        int r = resource_index(rn);
        config::app_version_config v;
        v.plan_class = plan_class_of(r);
        if (r > 0) {
          v.avg_ncpus = 0.01;
          v.coproc_type = resource_name(r);
          v.coproc_count = sa.gpu_usage;
        }
        a.versions.push_back(v);
      }
      p.apps.push_back(std::move(a));
    }
    cfg.projects.push_back(std::move(p));
  }
  return cfg;
}

double run_result::share(int p, int r, double from, double to) const {
  double mine = 0, all = 0;
  for (std::size_t b = 0; b < usage.size(); ++b) {
    double t = static_cast<double>(b) * sample_interval;
    if (t < from || t >= to)
      continue;
    for (std::size_t q = 0; q < usage[b].size(); ++q) {
      double u = usage[b][q][static_cast<std::size_t>(r)];
      all += u;
      if (static_cast<int>(q) == p)
        mine += u;
    }
  }
  return all > 0 ? mine / all : 0;
}

double run_result::flops_share(int p, double from, double to) const {
  double mine = 0, all = 0;
  for (std::size_t b = 0; b < usage.size(); ++b) {
    double t = static_cast<double>(b) * sample_interval;
    if (t < from || t >= to)
      continue;
    for (std::size_t q = 0; q < usage[b].size(); ++q)
      for (std::size_t r = 0; r < static_cast<std::size_t>(R); ++r) {
        double u = usage[b][q][r] * speeds[r];
        all += u;
        if (static_cast<int>(q) == p)
          mine += u;
      }
  }
  return all > 0 ? mine / all : 0;
}

run_result run_scenario(const scenario& sc, server_link& link, const run_options& opts) {
  emulator e(sc, link, opts);
  return e.run();
}

std::unique_ptr<server_link> in_process_link(const scenario& sc) {
  return std::make_unique<harness_link>(sc);
}

} // namespace cobble::sim
