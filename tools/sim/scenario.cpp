#include "tools/sim/scenario.hpp"

#include "actors/rpc.hpp"
#include "config/config.hpp"
#include "config/units.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace cobble::sim {

namespace {

/// One YAML mapping with its known keys; errors name the file, the line and the key path.
class node_reader {
public:
  node_reader(const std::string& src, const YAML::Node& n, std::string path,
              std::initializer_list<const char*> known)
    : src_(src), node_(n), path_(std::move(path)) {
    if (!n.IsDefined() || n.IsNull())
      return;
    if (!n.IsMap())
      fail(n, path_, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& kv : n) {
      auto key = kv.first.Scalar();
      bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
      if (!ok) {
        std::string message = "unknown key '" + key + "' (known keys: ";
        for (std::size_t i = 0; i < known.size(); ++i)
          message.append(i == 0 ? "" : ", ").append(known.begin()[i]);
        fail(kv.first, key_path(key), message + ")");
      }
      if (!seen.insert(key).second)
        fail(kv.first, key_path(key), "key given twice");
    }
  }

  std::string key_path(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  [[noreturn]] void
  fail(const YAML::Node& at, const std::string& key, const std::string& msg) const {
    throw config::config_error(src_, at.Mark().line >= 0 ? at.Mark().line + 1 : 0, key, msg);
  }

  YAML::Node get(const char* key) const {
    if (!node_.IsDefined() || node_.IsNull() || !node_[key] || node_[key].IsNull())
      return YAML::Node(YAML::NodeType::Undefined);
    return node_[key];
  }

  std::string scalar(const char* key, const YAML::Node& v) const {
    if (!v.IsScalar())
      fail(v, key_path(key), "expected a single value");
    return v.Scalar();
  }

  void number(const char* key, double& out, double min = -1e300, bool strict_min = false) const {
    auto v = get(key);
    if (!v.IsDefined())
      return;
    auto s = scalar(key, v);
    char* end = nullptr;
    double x = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(x))
      fail(v, key_path(key), "expected a number, got '" + s + "'");
    check_min(v, key, x, min, strict_min);
    out = x;
  }

  void duration(const char* key, double& out, double min = 0, bool strict_min = false) const {
    auto v = get(key);
    if (!v.IsDefined())
      return;
    auto s = scalar(key, v);
    auto x = config::parse_duration(s);
    if (!x)
      fail(v, key_path(key), "expected a duration (30, 30s, 5m, 2h, 7d), got '" + s + "'");
    check_min(v, key, *x, min, strict_min);
    out = *x;
  }

  void duration(const char* key, std::optional<double>& out) const {
    double x = 0;
    if (get(key).IsDefined()) {
      duration(key, x);
      out = x;
    }
  }

  void integer(const char* key, long& out, long min) const {
    auto v = get(key);
    if (!v.IsDefined())
      return;
    auto s = scalar(key, v);
    char* end = nullptr;
    long x = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0')
      fail(v, key_path(key), "expected an integer, got '" + s + "'");
    if (x < min)
      fail(v, key_path(key), "must be at least " + std::to_string(min));
    out = x;
  }

  void integer(const char* key, int& out, long min) const {
    long x = out;
    integer(key, x, min);
    out = static_cast<int>(x);
  }

  void string(const char* key, std::string& out) const {
    auto v = get(key);
    if (v.IsDefined())
      out = scalar(key, v);
  }

  void strings(const char* key, std::vector<std::string>& out) const {
    auto v = get(key);
    if (!v.IsDefined())
      return;
    if (!v.IsSequence())
      fail(v, key_path(key), "expected a list");
    out.clear();
    for (const auto& x : v) {
      if (!x.IsScalar())
        fail(x, key_path(key), "expected a list of names");
      out.push_back(x.Scalar());
    }
  }

  template <class F>
  void items(const char* key, F&& f) const {
    auto v = get(key);
    if (!v.IsDefined())
      return;
    if (!v.IsSequence())
      fail(v, key_path(key), "expected a list");
    for (std::size_t i = 0; i < v.size(); ++i)
      f(v[i], key_path(key) + "[" + std::to_string(i) + "]");
  }

  const std::string& src() const { return src_; }
  const YAML::Node& node() const { return node_; }

private:
  void check_min(const YAML::Node& v, const char* key, double x, double min, bool strict) const {
    if (strict ? !(x > min) : !(x >= min))
      fail(v, key_path(key),
           std::string("must be ") + (strict ? "greater than " : "at least ")
             + config::format_number(min));
  }

  const std::string& src_;
  YAML::Node node_;
  std::string path_;
};

bool valid_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

void parse_client(const node_reader& r, client::settings& s) {
  r.duration("sched_period", s.sched_period, 1);
  r.duration("connect_interval", s.connect_interval, 0);
  r.duration("additional_work", s.additional_work, 0);
  r.duration("backoff_min", s.backoff_min, 1);
  r.duration("backoff_max", s.backoff_max, 1);
  r.duration("overworked_debt", s.overworked_debt, 0);
  r.number("spau_weight", s.spau_weight, 0, true);
  r.duration("report_delay", s.report_delay, 0);
  r.duration("deadline_margin", s.deadline_margin, 0);
  auto v = r.get("debt_eligibility");
  if (v.IsDefined()) {
    auto x = r.scalar("debt_eligibility", v);
    if (x == "design")
      s.eligibility = client::debt_eligibility::design;
    else if (x == "attached")
      s.eligibility = client::debt_eligibility::attached;
    else
      r.fail(v, r.key_path("debt_eligibility"), "expected design or attached, got '" + x + "'");
  }
  if (s.spau_weight > 1)
    r.fail(r.get("spau_weight"), r.key_path("spau_weight"), "must be at most 1");
  if (s.backoff_max < s.backoff_min)
    r.fail(r.node(), r.key_path("backoff_max"), "must be at least backoff_min");
}

void parse_app(const node_reader& r, scenario_app& a) {
  r.string("name", a.name);
  if (!valid_name(a.name))
    r.fail(r.node(), r.key_path("name"), "an app name matching [a-z0-9_-]+ is required");
  r.strings("resources", a.resources);
  if (a.resources.empty())
    r.fail(r.node(), r.key_path("resources"), "at least one resource type is required");
  for (auto& x : a.resources) {
    int i = resource_index(x);
    if (i < 0)
      r.fail(r.get("resources"), r.key_path("resources"),
             "unknown resource type '" + x + "' (CPU, NVIDIA, ATI, intel_gpu)");
    x = resource_name(i);
  }
  r.number("flops", a.flops, 0, true);
  r.number("flops_spread", a.flops_spread, 0);
  r.duration("delay_bound", a.delay_bound, 0, true);
  r.duration("start", a.start, 0);
  r.duration("stop", a.stop);
  long count = -1;
  r.integer("count", count, 0);
  if (count >= 0)
    a.count = count;
  r.number("gpu_usage", a.gpu_usage, 0, true);
}

void parse_project(const node_reader& r, scenario_project& p) {
  r.string("name", p.name);
  if (!valid_name(p.name))
    r.fail(r.node(), r.key_path("name"), "a project name matching [a-z0-9_-]+ is required");
  r.number("share", p.share, 0, true);
  r.duration("attach_at", p.attach_at, 0);
  r.duration("request_delay", p.request_delay, 0);
  r.integer("replication", p.replication, 1);
  r.integer("max_jobs_per_rpc", p.max_jobs_per_rpc, 1);
  std::set<std::string> names;
  r.items("apps", [&](const YAML::Node& n, const std::string& path) {
    node_reader a(r.src(), n, path,
                  {"name", "resources", "flops", "flops_spread", "delay_bound", "start", "stop",
                   "count", "gpu_usage"});
    scenario_app app;
    parse_app(a, app);
    if (!names.insert(app.name).second)
      a.fail(n, a.key_path("name"), "app '" + app.name + "' given twice");
    p.apps.push_back(std::move(app));
  });
  if (p.apps.empty())
    r.fail(r.node(), r.key_path("apps"), "a project needs at least one app");
}

void parse_host(const node_reader& r, scenario_host& h) {
  r.string("name", h.name);
  r.integer("count", h.count, 1);
  r.integer("ncpus", h.ncpus, 0);
  r.number("cpu_flops", h.cpu_flops, 0, true);
  std::set<int> types;
  r.items("gpus", [&](const YAML::Node& n, const std::string& path) {
    node_reader g(r.src(), n, path, {"type", "count", "flops"});
    scenario_gpu gpu;
    g.string("type", gpu.type);
    int i = resource_index(gpu.type);
    if (i <= 0)
      g.fail(n, g.key_path("type"), "expected NVIDIA, ATI or intel_gpu, got '" + gpu.type + "'");
    if (!types.insert(i).second)
      g.fail(n, g.key_path("type"), "GPU type given twice");
    gpu.type = resource_name(i);
    g.integer("count", gpu.count, 1);
    g.number("flops", gpu.flops, 0, true);
    h.gpus.push_back(gpu);
  });
  auto eff = r.get("efficiency");
  if (eff.IsDefined()) {
    if (!eff.IsMap())
      r.fail(eff, r.key_path("efficiency"), "expected a mapping of app name to fraction");
    for (const auto& kv : eff) {
      auto key = r.key_path("efficiency") + "." + kv.first.Scalar();
      char* end = nullptr;
      auto s = kv.second.IsScalar() ? kv.second.Scalar() : std::string();
      double x = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !(x > 0) || x > 1)
        r.fail(kv.second, key, "expected a fraction in (0, 1], got '" + s + "'");
      h.efficiency[kv.first.Scalar()] = x;
    }
  }
  r.number("on_frac", h.on_frac, 0, true);
  r.number("active_frac", h.active_frac, 0, true);
  if (h.on_frac > 1)
    r.fail(r.get("on_frac"), r.key_path("on_frac"), "must be at most 1");
  if (h.active_frac > 1)
    r.fail(r.get("active_frac"), r.key_path("active_frac"), "must be at most 1");
  r.duration("availability_period", h.availability_period, 0, true);
  r.strings("projects", h.projects);
}

} // namespace

int resource_index(std::string_view type) {
  auto t = parse_resource_type(type);
  if (!t || type.empty())
    return -1;
  return static_cast<int>(*t);
}

const char* resource_name(int r) {
  return to_string(static_cast<resource_type>(r));
}

scenario parse_scenario(std::string_view yaml, std::string_view source) {
  std::string src(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw config::config_error(src, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", e.msg);
  }
  scenario sc;
  sc.source = src;
  node_reader r(src, root, "",
                {"duration", "step", "warmup", "sample_interval", "monotony_window", "seed",
                 "client", "projects", "hosts"});
  r.duration("duration", sc.duration, 0, true);
  r.duration("step", sc.step, 0, true);
  r.duration("warmup", sc.warmup, 0);
  r.duration("sample_interval", sc.sample_interval, 0, true);
  r.duration("monotony_window", sc.monotony_window, 0, true);
  long seed = 1;
  r.integer("seed", seed, 0);
  sc.seed = static_cast<std::uint64_t>(seed);
  node_reader c(src, r.get("client"), "client",
                {"sched_period", "connect_interval", "additional_work", "backoff_min",
                 "backoff_max", "debt_eligibility", "overworked_debt", "spau_weight",
                 "report_delay", "deadline_margin"});
  parse_client(c, sc.client);
  std::set<std::string> names;
  r.items("projects", [&](const YAML::Node& n, const std::string& path) {
    node_reader p(src, n, path,
                  {"name", "share", "attach_at", "request_delay", "replication", "max_jobs_per_rpc",
                   "apps"});
    scenario_project proj;
    parse_project(p, proj);
    if (!names.insert(proj.name).second)
      p.fail(n, p.key_path("name"), "project '" + proj.name + "' given twice");
    sc.projects.push_back(std::move(proj));
  });
  if (sc.projects.empty())
    r.fail(root, "projects", "at least one project is required");
  r.items("hosts", [&](const YAML::Node& n, const std::string& path) {
    node_reader h(src, n, path,
                  {"name", "count", "ncpus", "cpu_flops", "gpus", "efficiency", "on_frac",
                   "active_frac", "availability_period", "projects"});
    scenario_host host;
    parse_host(h, host);
    for (const auto& pn : host.projects)
      if (!names.count(pn))
        h.fail(h.get("projects"), h.key_path("projects"), "no project named '" + pn + "'");
    sc.hosts.push_back(std::move(host));
  });
  if (sc.hosts.empty())
    r.fail(root, "hosts", "at least one host is required");
  if (sc.step > sc.duration)
    r.fail(r.get("step"), "step", "must not exceed duration");
  return sc;
}

scenario load_scenario(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in)
    throw config::config_error(file.string(), 0, "", "cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario(ss.str(), file.string());
}

} // namespace cobble::sim
