#include "tools/sim/lab.hpp"

#include "actors/event_codec.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <queue>
#include <sstream>

namespace cobble::sim {

// -- scenario files -----------------------------------------------------------------

YAML::Node parse_lab_yaml(const std::string& yaml, const std::string& source) {
  try {
    return YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw lab_scenario_error(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

std::string read_lab_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw lab_scenario_error(file.string() + ":0: cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void read_lab_list(const checked_map& top, const char* key, const char* what,
                   std::initializer_list<const char*> known,
                   const std::function<void(const checked_map&, const YAML::Node&,
                                            const std::string&, std::size_t)>& item) {
  auto list = top.get(key);
  if (!list.IsDefined() || !list.IsSequence() || list.size() == 0)
    top.fail(list.IsDefined() ? list : top.node(), key,
             std::string{"a list of at least one "} + what + " is required");
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto path = std::string{key} + "[" + std::to_string(i) + "]";
    checked_map m(list[i], top.source(), path, known);
    item(m, list[i], path, i);
  }
}

void read_host_population(const checked_map& m, const YAML::Node& n, const std::string& path,
                          host_population& p, const std::function<void()>& device) {
  m.read(
    "count", p.count, [](int x) { return x >= 1 && x <= 10000; }, "1 to 10000");
  device();
  m.read("cpu_flops_min", p.cpu_flops_min, positive, "positive");
  m.read("cpu_flops_max", p.cpu_flops_max, positive, "positive");
  m.read("gpu_factor_min", p.gpu_factor_min, positive, "positive");
  m.read("gpu_factor_max", p.gpu_factor_max, positive, "positive");
  m.read("efficiency_min", p.efficiency_min, fraction, "in (0, 1]");
  m.read("efficiency_max", p.efficiency_max, fraction, "in (0, 1]");
  if (p.cpu_flops_max < p.cpu_flops_min || p.gpu_factor_max < p.gpu_factor_min
      || p.efficiency_max < p.efficiency_min)
    m.fail(n, path, "a _max is below its _min");
}

// -- the run ------------------------------------------------------------------------

namespace {

constexpr const char* md5 = "00112233445566778899aabbccddeeff";

} // namespace

harness_options
lab_harness_options(const std::string& source, const std::filesystem::path& data_dir) {
  harness_options o;
  o.data_dir = data_dir;
  o.config = config::cobble_config{};
  o.config.source = source;
  return o;
}

config::app_config&
add_lab_project(config::cobble_config& cfg, const std::string& name, std::string long_name,
                std::string app, int quorum, double delay_bound, bool cpu, bool gpu) {
  auto& p = cfg.projects.emplace_back();
  p.name = name;
  p.long_name = std::move(long_name);
  p.deadline_check_interval = 3600;
  p.users.push_back({"lab", "lab@example.org", "lab-" + name});
  // The lab's hosts are honest, share one account and ask at the lab's own pace: the
  // limits against hostile clients (docs/security.md) would only distort the figures.
  p.limits = lab_limits();
  auto& a = p.apps.emplace_back();
  a.name = std::move(app);
  a.min_quorum = a.target_nresults = quorum;
  // Every lab host belongs to the one user; a replacement of a timed-out job goes to
  // another of its hosts.
  a.one_result_per_user_per_wu = false;
  a.max_jobs_per_rpc = 1;
  a.delay_bound = delay_bound;
  if (cpu) {
    auto& v = a.versions.emplace_back();
    v.platform = lab_platform;
    v.version_num = lab_version_num;
  }
  if (gpu) {
    auto& v = a.versions.emplace_back();
    v.platform = lab_platform;
    v.version_num = lab_version_num;
    v.plan_class = "cuda";
    v.avg_ncpus = 0.05;
    v.coproc_type = "NVIDIA";
    v.coproc_count = 1;
  }
  return a;
}

lab_run::lab_run(std::uint64_t seed, harness_options options) : rng(seed), h(std::move(options)) {}

double lab_run::uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, std::nextafter(hi, hi + 1))(rng);
}

double lab_run::log_uniform(double lo, double hi) {
  return std::exp(uniform(std::log(lo), std::log(hi)));
}

double lab_run::normal(double sigma) {
  return std::normal_distribution<double>(0, sigma)(rng);
}

emulated_host lab_run::draw_host(const host_population& p) {
  emulated_host x;
  x.gpu = p.device == "gpu";
  x.cpu_flops = uniform(p.cpu_flops_min, p.cpu_flops_max);
  x.gpu_flops = x.gpu ? x.cpu_flops * log_uniform(p.gpu_factor_min, p.gpu_factor_max) : 0;
  double lo = p.efficiency_min > 0 ? p.efficiency_min : (x.gpu ? 0.05 : 0.35);
  double hi = p.efficiency_max > 0 ? p.efficiency_max : (x.gpu ? 0.15 : 0.65);
  x.efficiency = uniform(lo, std::max(lo, hi));
  return x;
}

std::string lab_run::lab_account(const std::string& project) {
  auto a = h.authenticator(project, "lab");
  if (!a)
    throw std::runtime_error("lab: no account in project " + project);
  return *a;
}

sched_request lab_run::request(const emulated_host& x, const std::string& auth, std::string cpid,
                               bool want_work, double bench) const {
  sched_request r;
  r.authenticator = auth;
  r.hostid = x.id;
  r.rpc_seqno = static_cast<std::int64_t>(rpcs);
  r.core_client_major_version = 7;
  r.core_client_minor_version = 20;
  r.platform_name = lab_platform;
  r.host.host_cpid = std::move(cpid);
  r.host.p_ncpus = 1;
  r.host.p_fpops = x.cpu_flops * bench;
  r.host.os_name = "Linux";
  if (x.gpu) {
    coproc_description c;
    c.type = resource_type::nvidia;
    c.count = 1;
    c.peak_flops = x.gpu_flops * bench;
    if (want_work)
      c.request = resource_request{1, 1, 0};
    r.coprocs.push_back(c);
  } else if (want_work) {
    r.cpu = resource_request{1, 1, 0};
  }
  return r;
}

reported_result lab_run::report(const std::string& name, std::string plan_class, bool success) {
  reported_result rr;
  rr.name = name;
  rr.platform = lab_platform;
  rr.version_num = lab_version_num;
  rr.plan_class = std::move(plan_class);
  if (success) {
    rr.state = 5;
    rr.files.push_back(reported_file{name + "_0", 64, md5});
  }
  return rr;
}

sched_reply_ptr lab_run::rpc(const std::string& project, sched_request req, emulated_host& x) {
  h.upload_outputs(h.project(project), req); // before the report, as a client does
  auto reply = h.rpc(project, std::move(req));
  ++rpcs;
  if (!reply)
    throw std::runtime_error("lab: RPC failed: " + caf::to_string(reply.error()));
  if ((*reply)->hostid)
    x.id = *(*reply)->hostid;
  return *reply;
}

double lab_run::run_hosts(std::size_t hosts, double max_days,
                          const std::function<std::optional<time_us>(std::size_t)>& step) {
  using item = std::pair<time_us, std::size_t>;
  std::priority_queue<item, std::vector<item>, std::greater<>> queue;
  auto start = h.now();
  for (std::size_t i = 0; i < hosts; ++i)
    queue.push({start + static_cast<time_us>(i) * us_per_second, i});
  auto limit = start + seconds_to_us(max_days * 86400);
  while (!queue.empty()) {
    auto [t, i] = queue.top();
    queue.pop();
    if (t > limit)
      break;
    if (t > h.now())
      h.advance(t - h.now());
    if (auto next = step(i))
      queue.push({*next, i});
  }
  return us_to_seconds(h.now() - start) / 86400;
}

std::uint64_t
lab_run::scan_log(std::uint64_t from, const std::function<bool(const storage::event_record&)>& fn) {
  h.run();
  auto last = h.store().last_seq();
  if (from > last)
    return last;
  if (auto err = h.store().scan(from, last, fn))
    throw std::runtime_error("lab: reading the log failed: " + caf::to_string(err));
  return last;
}

// -- the command --------------------------------------------------------------------

void add_lab_command(CLI::App& app, const lab_command_text& text,
                     const std::function<void(CLI::App&)>& options, lab_loader load) {
  auto cmd = app.add_subcommand(text.name, text.description);
  auto file = std::make_shared<std::string>();
  auto seed = std::make_shared<std::optional<std::uint64_t>>();
  auto keep = std::make_shared<std::string>();
  cmd->add_option("SCENARIO", *file, text.scenario_help)->required();
  cmd->add_option_function<std::uint64_t>(
    "--seed", [seed](std::uint64_t x) { *seed = x; }, "Override the scenario's random seed");
  if (options)
    options(*cmd);
  cmd->add_option("--data-dir", *keep, text.data_dir_help);
  std::string prefix = std::string{"cobble-sim "} + text.name + ": ";
  cmd->callback([file, seed, keep, prefix, load = std::move(load)] {
    try {
      auto run = load(*file, *seed);
      if (!keep->empty() && std::filesystem::exists(*keep) && !std::filesystem::is_empty(*keep))
        throw std::runtime_error("--data-dir " + *keep + " exists and is not empty");
      std::cout << run(*keep);
    } catch (const lab_scenario_error& e) {
      std::cerr << prefix << e.what() << "\n";
      throw CLI::RuntimeError(2);
    } catch (const std::exception& e) {
      std::cerr << prefix << e.what() << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

} // namespace cobble::sim
