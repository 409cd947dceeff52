#include "config/config.hpp"

#include "config/units.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

namespace cobble::config {

// -- config_error -------------------------------------------------------------

namespace {

std::string format_error(const std::string& file, int line, const std::string& key,
                         const std::string& message) {
  std::string out = file + ":" + std::to_string(line) + ": ";
  if (!key.empty())
    out += key + ": ";
  return out + message;
}

} // namespace

config_error::config_error(std::string file, int line, std::string key, std::string message)
  : std::runtime_error(format_error(file, line, key, message)), file_(std::move(file)), line_(line),
    key_(std::move(key)), message_(std::move(message)) {}

namespace {

// -- small helpers ------------------------------------------------------------

constexpr std::string_view coproc_types[] = {"NVIDIA", "ATI", "intel_gpu"};

int line_of(const YAML::Mark& mark) {
  return mark.is_null() ? 0 : mark.line + 1;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

/// A plan class name as an app version carries it: letters, digits, '_', '-' and '.', at
/// most 64.
bool valid_plan_class_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::string join(std::initializer_list<std::string_view> words) {
  std::string out;
  for (auto w : words) {
    if (!out.empty())
      out += ", ";
    out += w.empty() ? std::string("\"\"") : std::string(w);
  }
  return out;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    default:
      return "nothing";
  }
}

/// Removes the last component of a dotted path: "a[0].b" -> "a[0]" -> "a" -> "".
std::string parent_of(const std::string& path) {
  auto cut = path.find_last_of(".[");
  return cut == std::string::npos ? std::string{} : path.substr(0, cut);
}

// -- parsing ------------------------------------------------------------------

/// State of one load: where the text came from and on which line each key path sits, so that
/// the validation run after parsing can point at the offending line.
class parser {
public:
  explicit parser(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }

  std::map<std::string, int>& lines() { return lines_; }

  [[noreturn]] void fail(int line, const std::string& key, const std::string& message) const {
    throw config_error(source_, line, key, message);
  }

  [[noreturn]] void
  fail(const YAML::Node& node, const std::string& key, const std::string& message) const {
    fail(line_at(node, key), key, message);
  }

  void remember(const std::string& key, int line) { lines_.emplace(key, line); }

  /// The line of `node`, or of the key that names it when the node itself has no mark.
  int line_at(const YAML::Node& node, const std::string& key) const {
    if (node.IsDefined() && !node.IsNull()) {
      if (int line = line_of(node.Mark()); line > 0)
        return line;
    }
    for (auto k = key;; k = parent_of(k)) {
      if (auto i = lines_.find(k); i != lines_.end())
        return i->second;
      if (k.empty())
        return 1;
    }
  }

private:
  std::string source_;
  std::map<std::string, int> lines_;
};

/// A YAML mapping whose keys are checked against the known ones: unknown and repeated keys
/// are refused, so that typos never pass silently.
class mapping {
public:
  mapping(parser& p, const YAML::Node& node, std::string path,
          std::initializer_list<std::string_view> known)
    : p_(p), path_(std::move(path)) {
    if (!node.IsDefined() || node.IsNull())
      return;
    if (!node.IsMap())
      p_.fail(node, path_, "expected a mapping, got " + describe(node));
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const auto& key_node = kv.first;
      std::string key = key_node.IsScalar() ? key_node.Scalar() : describe(key_node);
      auto full = child(key);
      int line = line_of(key_node.Mark());
      if (std::find(known.begin(), known.end(), key) == known.end())
        p_.fail(line, full, "unknown key '" + key + "' (known keys: " + join(known) + ")");
      if (!seen.insert(key).second)
        p_.fail(line, full, "key given twice");
      p_.remember(full, line);
      if (!kv.second.IsNull())
        entries_.emplace(key, kv.second);
    }
  }

  /// The value under `key`; an undefined node when absent or null (null means "default").
  YAML::Node get(const std::string& key) const {
    auto i = entries_.find(key);
    return i == entries_.end() ? YAML::Node(YAML::NodeType::Undefined) : i->second;
  }

  bool has(const std::string& key) const { return entries_.count(key) > 0; }

  std::string child(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  parser& p() const { return p_; }

private:
  parser& p_;
  std::string path_;
  std::map<std::string, YAML::Node> entries_;
};

// Readers for one scalar. Each leaves `out` alone when the key is absent.

const YAML::Node*
scalar(const mapping& m, const std::string& key, YAML::Node& holder, std::string_view expected) {
  holder = m.get(key);
  if (!holder.IsDefined())
    return nullptr;
  if (!holder.IsScalar())
    m.p().fail(holder, m.child(key),
               "expected " + std::string(expected) + ", got " + describe(holder));
  return &holder;
}

void read(const mapping& m, const std::string& key, std::string& out) {
  YAML::Node n;
  if (auto s = scalar(m, key, n, "a string"))
    out = s->Scalar();
}

void read(const mapping& m, const std::string& key, std::filesystem::path& out) {
  YAML::Node n;
  if (auto s = scalar(m, key, n, "a path"))
    out = s->Scalar();
}

template <class Int>
void read_integer(const mapping& m, const std::string& key, Int& out) {
  YAML::Node n;
  auto s = scalar(m, key, n, "an integer");
  if (!s)
    return;
  const auto& text = s->Scalar();
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
    m.p().fail(*s, m.child(key), "expected an integer, got '" + text + "'");
  if (ec == std::errc::result_out_of_range || value < std::numeric_limits<Int>::min()
      || (value > 0 && static_cast<unsigned long long>(value) > std::numeric_limits<Int>::max()))
    m.p().fail(*s, m.child(key), "value '" + text + "' is out of range");
  out = static_cast<Int>(value);
}

void read(const mapping& m, const std::string& key, int& out) {
  read_integer(m, key, out);
}

/// Unsigned counts: negative values are refused here, since they cannot be represented.
void read(const mapping& m, const std::string& key, std::uint64_t& out) {
  long long value = -1;
  read_integer(m, key, value);
  if (!m.has(key))
    return;
  if (value < 0)
    m.p().fail(m.get(key), m.child(key), "must not be negative, got " + std::to_string(value));
  out = static_cast<std::uint64_t>(value);
}

void read_number(const mapping& m, const std::string& key, double& out) {
  YAML::Node n;
  auto s = scalar(m, key, n, "a number");
  if (!s)
    return;
  const auto& text = s->Scalar();
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()
      || !std::isfinite(value))
    m.p().fail(*s, m.child(key), "expected a number, got '" + text + "'");
  out = value;
}

void read_size(const mapping& m, const std::string& key, double& out) {
  YAML::Node n;
  auto s = scalar(m, key, n, "a size");
  if (!s)
    return;
  auto value = parse_size(s->Scalar());
  if (!value)
    m.p().fail(*s, m.child(key),
               "expected a size (bytes, or a number with K/M/G/KiB/MiB/GiB), got '" + s->Scalar()
                 + "'");
  out = *value;
}

void read_size(const mapping& m, const std::string& key, std::size_t& out) {
  double value = 0;
  read_size(m, key, value);
  if (!m.has(key))
    return;
  auto key_path = m.child(key);
  if (value < 0)
    m.p().fail(m.get(key), key_path, "must not be negative, got '" + m.get(key).Scalar() + "'");
  if (value != std::floor(value)
      || value >= static_cast<double>(std::numeric_limits<std::size_t>::max()))
    m.p().fail(m.get(key), key_path,
               "expected a whole number of bytes, got '" + m.get(key).Scalar() + "'");
  out = static_cast<std::size_t>(value);
}

void read_duration(const mapping& m, const std::string& key, double& out) {
  YAML::Node n;
  auto s = scalar(m, key, n, "a duration");
  if (!s)
    return;
  auto value = parse_duration(s->Scalar());
  if (!value)
    m.p().fail(*s, m.child(key),
               "expected a duration (seconds, or a number with s/m/h/d), got '" + s->Scalar()
                 + "'");
  out = *value;
}

void read_duration(const mapping& m, const std::string& key, std::optional<double>& out) {
  double value = 0;
  read_duration(m, key, value);
  if (m.has(key))
    out = value;
}

void read_duration(const mapping& m, const std::string& key, std::chrono::seconds& out) {
  double value = 0;
  read_duration(m, key, value);
  if (!m.has(key))
    return;
  if (value != std::floor(value) || std::abs(value) > 1e15)
    m.p().fail(m.get(key), m.child(key),
               "expected a whole number of seconds, got '" + m.get(key).Scalar() + "'");
  out = std::chrono::seconds{static_cast<std::chrono::seconds::rep>(value)};
}

template <class Enum>
void read_enum(const mapping& m, const std::string& key, Enum& out,
               std::initializer_list<std::pair<std::string_view, Enum>> values) {
  YAML::Node n;
  auto s = scalar(m, key, n, "a string");
  if (!s)
    return;
  for (const auto& [name, value] : values)
    if (s->Scalar() == name) {
      out = value;
      return;
    }
  std::string allowed;
  for (const auto& [name, value] : values)
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  m.p().fail(*s, m.child(key), "unknown value '" + s->Scalar() + "' (allowed: " + allowed + ")");
}

/// Visits the items of the list under `key`, each with its path "key[i]".
template <class F>
void for_each_item(const mapping& m, const std::string& key, F&& f) {
  auto list = m.get(key);
  if (!list.IsDefined())
    return;
  auto path = m.child(key);
  if (!list.IsSequence())
    m.p().fail(list, path, "expected a list, got " + describe(list));
  std::size_t i = 0;
  for (const auto& item : list) {
    auto item_path = path + "[" + std::to_string(i++) + "]";
    int line = line_of(item.Mark());
    if (line > 0)
      m.p().remember(item_path, line);
    f(item, item_path);
  }
}

void read_strings(const mapping& m, const std::string& key, std::vector<std::string>& out) {
  if (!m.has(key))
    return;
  out.clear();
  for_each_item(m, key, [&](const YAML::Node& item, const std::string& path) {
    if (!item.IsScalar())
      m.p().fail(item, path, "expected a string, got " + describe(item));
    out.push_back(item.Scalar());
  });
}

// -- sections -----------------------------------------------------------------

void parse_listen(parser& p, const YAML::Node& node, const std::string& key, server_config& out) {
  const auto& text = node.Scalar();
  auto bad = [&](const std::string& why) {
    p.fail(node, key, "expected host:port, got '" + text + "' (" + why + ")");
  };
  auto colon = text.rfind(':');
  if (colon == std::string::npos)
    bad("no port");
  auto host = text.substr(0, colon);
  auto port = text.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']')
      bad("unbalanced brackets");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    bad("write IPv6 addresses in brackets, e.g. [::1]:8080");
  }
  if (host.empty())
    bad("empty host");
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec == std::errc::invalid_argument || end != port.data() + port.size())
    bad("port is not a number");
  if (ec == std::errc::result_out_of_range || value > 65535)
    p.fail(node, key, "port " + port + " is out of range (0-65535)");
  out.listen_address = host;
  out.port = static_cast<std::uint16_t>(value);
}

/// A TCP port (0-65535) at `key`, when given.
void read_port(parser& p, const mapping& m, const std::string& key, std::uint16_t& out) {
  if (!m.has(key))
    return;
  long long port = 0;
  read_integer(m, key, port);
  if (port < 0 || port > 65535)
    p.fail(m.get(key), m.child(key), "port " + std::to_string(port) + " is out of range (0-65535)");
  out = static_cast<std::uint16_t>(port);
}

void parse_server(parser& p, const YAML::Node& node, server_config& out) {
  mapping m(p, node, "server",
            {"listen",
             "listen_address",
             "port",
             "public_url",
             "admin_address",
             "admin_port",
             "data_dir",
             "durability",
             "worker_threads",
             "actor_threads",
             "actor_scheduler",
             "admin_token",
             "body_limit",
             "upload_limit",
             "read_timeout",
             "snapshot_every_events",
             "snapshot_interval",
             "snapshot_time_share",
             "snapshots_kept",
             "stats_export_interval",
             "max_connections",
             "min_free_disk",
             "max_batch_items"});
  if (m.has("listen")) {
    for (const char* other : {"listen_address", "port"})
      if (m.has(other))
        p.fail(p.line_at(m.get(other), m.child(other)), m.child(other),
               "give either listen or listen_address/port, not both");
    YAML::Node n;
    if (auto s = scalar(m, "listen", n, "host:port"))
      parse_listen(p, *s, m.child("listen"), out);
  }
  read(m, "listen_address", out.listen_address);
  read_port(p, m, "port", out.port);
  read(m, "public_url", out.public_url);
  read(m, "admin_address", out.admin_address);
  read_port(p, m, "admin_port", out.admin_port);
  read(m, "data_dir", out.data_dir);
  read_enum(m, "durability", out.mode, {{"sync", durability::sync}, {"async", durability::async}});
  read(m, "worker_threads", out.worker_threads);
  read(m, "actor_threads", out.actor_threads);
  read_enum(m, "actor_scheduler", out.scheduler,
            {{"sharing", actor_scheduler::sharing}, {"stealing", actor_scheduler::stealing}});
  read(m, "admin_token", out.admin_token);
  read_size(m, "body_limit", out.body_limit);
  read_size(m, "upload_limit", out.upload_limit);
  read_duration(m, "read_timeout", out.read_timeout);
  read(m, "snapshot_every_events", out.snapshot_every_events);
  read_duration(m, "snapshot_interval", out.snapshot_interval);
  read_duration(m, "stats_export_interval", out.stats_export_interval);
  read_size(m, "min_free_disk", out.min_free_disk);
  read_number(m, "snapshot_time_share", out.snapshot_time_share);
  std::uint64_t kept = out.snapshots_kept;
  read(m, "snapshots_kept", kept);
  out.snapshots_kept = static_cast<std::size_t>(kept);
  std::uint64_t connections = out.max_connections;
  read(m, "max_connections", connections);
  out.max_connections = static_cast<std::size_t>(connections);
  std::uint64_t batch_items = out.max_batch_items;
  read(m, "max_batch_items", batch_items);
  out.max_batch_items = static_cast<std::size_t>(batch_items);
}

void parse_version(parser& p, const YAML::Node& node, const std::string& path,
                   app_version_config& out) {
  mapping m(p, node, path,
            {"platform", "version_num", "plan_class", "avg_ncpus", "coproc_type", "coproc_count"});
  read(m, "platform", out.platform);
  read(m, "version_num", out.version_num);
  read(m, "plan_class", out.plan_class);
  read_number(m, "avg_ncpus", out.avg_ncpus);
  YAML::Node n;
  if (auto s = scalar(m, "coproc_type", n, "a string")) {
    auto wanted = lower(s->Scalar());
    out.coproc_type.clear();
    if (!wanted.empty()) {
      auto i = std::find_if(std::begin(coproc_types), std::end(coproc_types),
                            [&](std::string_view t) { return lower(t) == wanted; });
      if (i == std::end(coproc_types))
        p.fail(*s, m.child("coproc_type"),
               "unknown value '" + s->Scalar()
                 + "' (allowed: \"\", NVIDIA, ATI, intel_gpu; case does not matter)");
      out.coproc_type = std::string(*i);
    }
  }
  read_number(m, "coproc_count", out.coproc_count);
}

void parse_autoflops(parser& p, const YAML::Node& node, const std::string& path,
                     autoflops_config& out) {
  mapping m(p, node, path,
            {"estimates", "est_x", "bound_x", "min_samples", "warmup_bound_factor", "log_ratio",
             "flops_samples", "flops_percentile", "flops_alpha", "reference_job",
             "abort_quota_factor", "resend_probability", "suspicion_error_rate",
             "host_min_spread"});
  read_enum(m, "estimates", out.estimates,
            {{"off", estimate_clients::off},
             {"client", estimate_clients::client},
             {"all", estimate_clients::all}});
  read_number(m, "est_x", out.est_x);
  read_number(m, "bound_x", out.bound_x);
  read(m, "min_samples", out.min_samples);
  read_number(m, "warmup_bound_factor", out.warmup_bound_factor);
  read_enum(m, "log_ratio", out.log_ratio, {{"true", true}, {"false", false}});
  read(m, "flops_samples", out.flops_samples);
  read_number(m, "flops_percentile", out.flops_percentile);
  read_number(m, "flops_alpha", out.flops_alpha);
  read(m, "reference_job", out.reference_job);
  read_number(m, "abort_quota_factor", out.abort_quota_factor);
  read_number(m, "resend_probability", out.resend_probability);
  read_number(m, "suspicion_error_rate", out.suspicion_error_rate);
  read_number(m, "host_min_spread", out.host_min_spread);
}

void parse_app(parser& p, const YAML::Node& node, const std::string& path, app_config& out) {
  mapping m(p, node, path,
            {"name",
             "user_friendly_name",
             "min_quorum",
             "target_nresults",
             "max_error_results",
             "max_total_results",
             "max_success_results",
             "delay_bound",
             "max_jobs_per_rpc",
             "validator",
             "rsc_fpops_est",
             "rsc_fpops_bound",
             "rsc_memory_bound",
             "rsc_disk_bound",
             "max_output_nbytes",
             "output_names",
             "host_scale_check",
             "max_jobs_per_day",
             "one_result_per_user_per_wu",
             "credit_policy",
             "autoflops",
             "versions"});
  if (!m.has("name"))
    p.fail(node, path + ".name", "every app needs a name");
  read(m, "name", out.name);
  read(m, "user_friendly_name", out.user_friendly_name);
  read(m, "min_quorum", out.min_quorum);
  read(m, "target_nresults", out.target_nresults);
  read(m, "max_error_results", out.max_error_results);
  read(m, "max_total_results", out.max_total_results);
  read(m, "max_success_results", out.max_success_results);
  read_duration(m, "delay_bound", out.delay_bound);
  read(m, "max_jobs_per_rpc", out.max_jobs_per_rpc);
  read_enum(m, "validator", out.validator,
            {{"bitwise", validator_kind::bitwise}, {"accept_all", validator_kind::accept_all}});
  read_number(m, "rsc_fpops_est", out.rsc_fpops_est);
  read_number(m, "rsc_fpops_bound", out.rsc_fpops_bound);
  read_size(m, "rsc_memory_bound", out.rsc_memory_bound);
  read_size(m, "rsc_disk_bound", out.rsc_disk_bound);
  read_size(m, "max_output_nbytes", out.max_output_nbytes);
  read_strings(m, "output_names", out.output_names);
  read_enum(m, "host_scale_check", out.host_scale_check, {{"true", true}, {"false", false}});
  read(m, "max_jobs_per_day", out.max_jobs_per_day);
  read_enum(m, "one_result_per_user_per_wu", out.one_result_per_user_per_wu,
            {{"true", true}, {"false", false}});
  read_enum(m, "credit_policy", out.credit_policy,
            {{"pfc", credit_policy_kind::pfc}, {"app_units", credit_policy_kind::app_units}});
  if (m.has("autoflops"))
    parse_autoflops(p, m.get("autoflops"), m.child("autoflops"), out.autoflops);
  for_each_item(m, "versions", [&](const YAML::Node& item, const std::string& item_path) {
    parse_version(p, item, item_path, out.versions.emplace_back());
  });
}

void parse_user(parser& p, const YAML::Node& node, const std::string& path, user_config& out) {
  mapping m(p, node, path, {"name", "email", "authenticator", "team"});
  read(m, "name", out.name);
  read(m, "email", out.email);
  read(m, "authenticator", out.authenticator);
  read(m, "team", out.team);
}

void parse_credit(parser& p, const YAML::Node& node, const std::string& path, credit_config& out) {
  mapping m(p, node, path,
            {"normalization_interval", "version_average_samples", "host_average_samples",
             "version_alpha", "host_alpha", "version_sample_threshold", "host_sample_threshold",
             "sample_cap", "host_scale_cap", "cheat_factor", "flops_per_cobblestone",
             "credit_half_life", "error_rate_initial", "error_rate_alpha", "version_pfc"});
  read_duration(m, "normalization_interval", out.normalization_interval);
  read(m, "version_average_samples", out.version_average_samples);
  read(m, "host_average_samples", out.host_average_samples);
  read_number(m, "version_alpha", out.version_alpha);
  read_number(m, "host_alpha", out.host_alpha);
  read(m, "version_sample_threshold", out.version_sample_threshold);
  read(m, "host_sample_threshold", out.host_sample_threshold);
  read_number(m, "sample_cap", out.sample_cap);
  read_number(m, "host_scale_cap", out.host_scale_cap);
  read_number(m, "cheat_factor", out.cheat_factor);
  read_number(m, "flops_per_cobblestone", out.flops_per_cobblestone);
  read_duration(m, "credit_half_life", out.credit_half_life);
  read_number(m, "error_rate_initial", out.error_rate_initial);
  read_number(m, "error_rate_alpha", out.error_rate_alpha);
  read_enum(m, "version_pfc", out.version_pfc,
            {{"mean", version_pfc_estimator::mean}, {"median", version_pfc_estimator::median}});
}

void parse_accounts(parser& p, const YAML::Node& node, const std::string& path,
                    accounts_config& out) {
  mapping m(p, node, path, {"creation", "invitation_codes", "min_password_length", "terms_of_use"});
  read_enum(m, "creation", out.creation,
            {{"open", account_creation::open},
             {"closed", account_creation::closed},
             {"invitation", account_creation::invitation}});
  read_strings(m, "invitation_codes", out.invitation_codes);
  read_integer(m, "min_password_length", out.min_password_length);
  read(m, "terms_of_use", out.terms_of_use);
}

void parse_limits(parser& p, const YAML::Node& node, const std::string& path, limits_config& out) {
  mapping m(p, node, path,
            {"min_sendwork_interval", "max_ncpus", "max_ngpus", "max_jobs_in_progress",
             "max_gpu_jobs_in_progress", "max_new_hosts_per_day", "app_units_factor"});
  read_duration(m, "min_sendwork_interval", out.min_sendwork_interval);
  read_integer(m, "max_ncpus", out.max_ncpus);
  read_integer(m, "max_ngpus", out.max_ngpus);
  read_integer(m, "max_jobs_in_progress", out.max_jobs_in_progress);
  read_integer(m, "max_gpu_jobs_in_progress", out.max_gpu_jobs_in_progress);
  read_integer(m, "max_new_hosts_per_day", out.max_new_hosts_per_day);
  read_number(m, "app_units_factor", out.app_units_factor);
}

void parse_plan_class(parser& p, const YAML::Node& node, const std::string& path,
                      plan_class_config& out) {
  mapping m(p, node, path,
            {"name", "min_core_client_version", "projected_flops_scale", "min_ncpus", "max_threads",
             "nthreads_cmdline", "avg_ncpus", "gpu_type", "cuda", "opencl", "ngpus", "cpu_frac",
             "min_gpu_ram_mb", "gpu_ram_used_mb", "min_driver_version", "min_cuda_version"});
  if (!m.has("name"))
    p.fail(node, path + ".name", "every plan class needs a name");
  read(m, "name", out.name);
  read_integer(m, "min_core_client_version", out.min_core_client_version);
  read_number(m, "projected_flops_scale", out.projected_flops_scale);
  read_integer(m, "min_ncpus", out.min_ncpus);
  read_integer(m, "max_threads", out.max_threads);
  read_enum(m, "nthreads_cmdline", out.nthreads_cmdline, {{"true", true}, {"false", false}});
  read_number(m, "avg_ncpus", out.avg_ncpus);
  read(m, "gpu_type", out.gpu_type);
  read_enum(m, "cuda", out.cuda, {{"true", true}, {"false", false}});
  read_enum(m, "opencl", out.opencl, {{"true", true}, {"false", false}});
  read_number(m, "ngpus", out.ngpus);
  read_number(m, "cpu_frac", out.cpu_frac);
  read_number(m, "min_gpu_ram_mb", out.min_gpu_ram_mb);
  read_number(m, "gpu_ram_used_mb", out.gpu_ram_used_mb);
  read_integer(m, "min_driver_version", out.min_driver_version);
  read_integer(m, "min_cuda_version", out.min_cuda_version);
}

void parse_project(parser& p, const YAML::Node& node, const std::string& path,
                   project_config& out) {
  mapping m(p, node, path,
            {"name",
             "long_name",
             "description",
             "request_delay",
             "next_rpc_delay",
             "deadline_check_interval",
             "file_grace_period",
             "sequence_high_water",
             "sequences_per_host",
             "sequence_check_interval",
             "sequence_slow_replica_lag",
             "passivate_hosts_after",
             "max_live_hosts",
             "resend_lost_results",
             "accounts",
             "credit",
             "limits",
             "users",
             "apps",
             "plan_classes"});
  if (!m.has("name"))
    p.fail(node, path + ".name", "every project needs a name");
  read(m, "name", out.name);
  read(m, "long_name", out.long_name);
  read(m, "description", out.description);
  read_duration(m, "request_delay", out.request_delay);
  read_duration(m, "next_rpc_delay", out.next_rpc_delay);
  read_duration(m, "deadline_check_interval", out.deadline_check_interval);
  read_duration(m, "file_grace_period", out.file_grace_period);
  read_integer(m, "sequence_high_water", out.sequence_high_water);
  read_integer(m, "sequences_per_host", out.sequences_per_host);
  read_duration(m, "sequence_check_interval", out.sequence_check_interval);
  read_integer(m, "sequence_slow_replica_lag", out.sequence_slow_replica_lag);
  read_duration(m, "passivate_hosts_after", out.passivate_hosts_after);
  read_integer(m, "max_live_hosts", out.max_live_hosts);
  read_enum(m, "resend_lost_results", out.resend_lost_results, {{"true", true}, {"false", false}});
  if (m.has("accounts"))
    parse_accounts(p, m.get("accounts"), m.child("accounts"), out.accounts);
  if (m.has("credit"))
    parse_credit(p, m.get("credit"), m.child("credit"), out.credit);
  if (m.has("limits"))
    parse_limits(p, m.get("limits"), m.child("limits"), out.limits);
  for_each_item(m, "users", [&](const YAML::Node& item, const std::string& item_path) {
    parse_user(p, item, item_path, out.users.emplace_back());
  });
  for_each_item(m, "apps", [&](const YAML::Node& item, const std::string& item_path) {
    parse_app(p, item, item_path, out.apps.emplace_back());
  });
  for_each_item(m, "plan_classes", [&](const YAML::Node& item, const std::string& item_path) {
    parse_plan_class(p, item, item_path, out.plan_classes.emplace_back());
  });
}

// -- validation ---------------------------------------------------------------

/// Cross-field and range rules, shared by validate() (configurations built in code) and the
/// loaders (which know the line of each key).
class checker {
public:
  checker(const cobble_config& cfg, const std::map<std::string, int>* lines)
    : cfg_(cfg), lines_(lines) {}

  void run() {
    check_server(cfg_.server);
    if (cfg_.projects.empty())
      fail("projects", "at least one project is required");
    std::set<std::string> names;
    for (std::size_t i = 0; i < cfg_.projects.size(); ++i) {
      auto path = "projects[" + std::to_string(i) + "]";
      const auto& project = cfg_.projects[i];
      check_project(project, path);
      if (!names.insert(project.name).second)
        fail(path + ".name", "duplicate project name '" + project.name + "'");
    }
  }

  /// Checks one app's name and policy alone (app_policy_problem()).
  void run_app_policy(const app_config& a) const { check_app_policy(a, "app"); }

private:
  /// Fails at `key`; when `key` was not written in the file but `alt` was, at `alt` instead.
  [[noreturn]] void
  fail(const std::string& key, const std::string& message, const std::string& alt = {}) const {
    if (!lines_)
      throw config_error(cfg_.source, 0, key, message);
    auto chosen = key;
    if (!lines_->count(key) && !alt.empty() && lines_->count(alt))
      chosen = alt;
    for (auto k = chosen;; k = parent_of(k)) {
      if (auto i = lines_->find(k); i != lines_->end())
        throw config_error(cfg_.source, i->second, chosen, message);
      if (k.empty())
        throw config_error(cfg_.source, 1, chosen, message);
    }
  }

  template <class T>
  void positive(const std::string& key, T value) const {
    if (!(value > 0) || !std::isfinite(static_cast<double>(value)))
      fail(key, "must be positive, got " + format_number(static_cast<double>(value)));
  }

  template <class T>
  void not_negative(const std::string& key, T value) const {
    if (!(value >= 0) || !std::isfinite(static_cast<double>(value)))
      fail(key, "must not be negative, got " + format_number(static_cast<double>(value)));
  }

  void check_server(const server_config& s) const {
    if (s.listen_address.empty())
      fail("server.listen_address", "must not be empty", "server.listen");
    const auto& url = s.public_url;
    if (!url.empty() && url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      fail("server.public_url", "must start with http:// or https://, got '" + url + "'");
    if (s.admin_address.empty())
      fail("server.admin_address", "must not be empty");
    if (s.admin_port != 0 && s.admin_port == s.port)
      fail("server.admin_port",
           "must differ from server.port (both are " + std::to_string(s.port)
             + "): the admin API has its own listener; give another port, or 0 for a free one",
           "server.port");
    if (s.data_dir.empty())
      fail("server.data_dir", "must not be empty");
    positive("server.worker_threads", s.worker_threads);
    if (s.actor_threads < 0)
      fail("server.actor_threads",
           "must be 0 (one per core) or more, got " + std::to_string(s.actor_threads));
    positive("server.body_limit", s.body_limit);
    positive("server.upload_limit", s.upload_limit);
    positive("server.read_timeout", s.read_timeout.count());
    positive("server.snapshot_every_events", s.snapshot_every_events);
    positive("server.snapshot_interval", s.snapshot_interval.count());
    if (!std::isfinite(s.snapshot_time_share) || !(s.snapshot_time_share > 0)
        || s.snapshot_time_share > 1)
      fail("server.snapshot_time_share",
           "must be in (0, 1], got " + format_number(s.snapshot_time_share));
    positive("server.snapshots_kept", s.snapshots_kept);
    if (s.stats_export_interval.count() < 0
        || s.stats_export_interval > std::chrono::hours(24 * 3650))
      fail("server.stats_export_interval", "must be 0 (no export) to 3650d");
    positive("server.max_connections", s.max_connections);
    positive("server.max_batch_items", s.max_batch_items);
  }

  void check_accounts(const accounts_config& a, const std::string& path) const {
    if (a.min_password_length < 1 || a.min_password_length > 128)
      fail(path + ".min_password_length", "must be between 1 and 128");
    if (a.creation == account_creation::invitation && a.invitation_codes.empty())
      fail(path + ".invitation_codes",
           "creation: invitation needs at least one code (or use creation: closed)");
    for (const auto& code : a.invitation_codes)
      if (code.empty() || code.size() > 254)
        fail(path + ".invitation_codes", "each code must have 1 to 254 characters");
  }

  void check_project(const project_config& p, const std::string& path) const {
    if (!valid_name(p.name))
      fail(path + ".name",
           "invalid name '" + p.name + "': use lower-case letters, digits, '_' and '-' only");
    not_negative(path + ".request_delay", p.request_delay);
    if (p.next_rpc_delay)
      not_negative(path + ".next_rpc_delay", *p.next_rpc_delay);
    positive(path + ".deadline_check_interval", p.deadline_check_interval);
    not_negative(path + ".file_grace_period", p.file_grace_period);
    positive(path + ".sequence_high_water", p.sequence_high_water);
    positive(path + ".sequences_per_host", p.sequences_per_host);
    positive(path + ".sequence_check_interval", p.sequence_check_interval);
    not_negative(path + ".sequence_slow_replica_lag", p.sequence_slow_replica_lag);
    not_negative(path + ".passivate_hosts_after", p.passivate_hosts_after);
    not_negative(path + ".max_live_hosts", p.max_live_hosts);
    check_accounts(p.accounts, path + ".accounts");
    check_credit(p.credit, path + ".credit");
    check_limits(p.limits, path + ".limits");
    check_plan_classes(p, path);
    std::set<std::string> users;
    for (std::size_t i = 0; i < p.users.size(); ++i) {
      auto user_path = path + ".users[" + std::to_string(i) + "]";
      if (p.users[i].name.empty())
        fail(user_path + ".name", "every user needs a name");
      if (!users.insert(p.users[i].name).second)
        fail(user_path + ".name", "duplicate user name '" + p.users[i].name + "'");
    }
    std::set<std::string> apps;
    for (std::size_t i = 0; i < p.apps.size(); ++i) {
      auto app_path = path + ".apps[" + std::to_string(i) + "]";
      check_app(p.apps[i], app_path);
      if (!apps.insert(p.apps[i].name).second)
        fail(app_path + ".name", "duplicate app name '" + p.apps[i].name + "'");
    }
  }

  void check_limits(const limits_config& l, const std::string& path) const {
    auto key = [&](const char* field) { return path + "." + field; };
    if (l.min_sendwork_interval)
      not_negative(key("min_sendwork_interval"), *l.min_sendwork_interval);
    positive(key("max_ncpus"), l.max_ncpus);
    positive(key("max_ngpus"), l.max_ngpus);
    not_negative(key("max_jobs_in_progress"), l.max_jobs_in_progress);
    not_negative(key("max_gpu_jobs_in_progress"), l.max_gpu_jobs_in_progress);
    not_negative(key("max_new_hosts_per_day"), l.max_new_hosts_per_day);
    if (!std::isfinite(l.app_units_factor) || !(l.app_units_factor > 1))
      fail(key("app_units_factor"), "must be over 1, got " + format_number(l.app_units_factor));
  }

  void check_credit(const credit_config& c, const std::string& path) const {
    auto key = [&](const char* field) { return path + "." + field; };
    positive(key("normalization_interval"), c.normalization_interval);
    positive(key("version_average_samples"), c.version_average_samples);
    positive(key("host_average_samples"), c.host_average_samples);
    for (auto [name, value] :
         {std::pair{"version_alpha", c.version_alpha}, std::pair{"host_alpha", c.host_alpha},
          std::pair{"error_rate_alpha", c.error_rate_alpha}})
      if (!(value > 0 && value <= 1))
        fail(key(name), "must be in (0, 1], got " + format_number(value));
    if (!(c.error_rate_initial >= 0 && c.error_rate_initial <= 1))
      fail(key("error_rate_initial"),
           "must be in [0, 1], got " + format_number(c.error_rate_initial));
    if (!(c.sample_cap >= 1) || !std::isfinite(c.sample_cap))
      fail(key("sample_cap"), "must be at least 1, got " + format_number(c.sample_cap));
    if (!(c.host_scale_cap >= 1) || !std::isfinite(c.host_scale_cap))
      fail(key("host_scale_cap"), "must be at least 1, got " + format_number(c.host_scale_cap));
    if (!(c.cheat_factor > 1) || !std::isfinite(c.cheat_factor))
      fail(key("cheat_factor"), "must be above 1, got " + format_number(c.cheat_factor));
    positive(key("flops_per_cobblestone"), c.flops_per_cobblestone);
    positive(key("credit_half_life"), c.credit_half_life);
  }

  void check_autoflops(const autoflops_config& c, const std::string& path) const {
    auto key = [&](const char* field) { return path + "." + field; };
    auto in = [&](const char* name, double v, double lo, double hi, bool lo_open,
                  const char* rule) {
      if (!std::isfinite(v) || v > hi || v < lo || (lo_open && v == lo))
        fail(key(name), std::string{"must be "} + rule + ", got " + format_number(v));
    };
    in("est_x", c.est_x, 0, 100, false, "in [0, 100]");
    in("bound_x", c.bound_x, c.est_x, 100, false, "in [est_x, 100]");
    if (c.min_samples < 2)
      fail(key("min_samples"), "must be at least 2, got " + std::to_string(c.min_samples));
    in("warmup_bound_factor", c.warmup_bound_factor, 1, 1e6, false, "in [1, 1e6]");
    if (c.flops_samples < 1 || c.flops_samples > 100000)
      fail(key("flops_samples"),
           "must be from 1 to 100000, got " + std::to_string(c.flops_samples));
    in("flops_percentile", c.flops_percentile, 0, 1, true, "in (0, 1]");
    in("flops_alpha", c.flops_alpha, 0, 1, true, "in (0, 1]");
    in("abort_quota_factor", c.abort_quota_factor, 0, 1, true, "in (0, 1]");
    in("resend_probability", c.resend_probability, 0, 1, false, "in [0, 1]");
    in("suspicion_error_rate", c.suspicion_error_rate, 0, 1, false, "in [0, 1]");
    in("host_min_spread", c.host_min_spread, 0, 10, false, "in [0, 10]");
  }

  void check_app(const app_config& a, const std::string& path) const {
    // No version in the configuration is fine: versions with files are added while the
    // server runs (`cobble app add-version`, docs/apps.md), as the demo's are.
    check_app_policy(a, path);
    std::set<std::tuple<std::string, std::string, int>> versions;
    for (std::size_t i = 0; i < a.versions.size(); ++i) {
      const auto& v = a.versions[i];
      auto v_path = path + ".versions[" + std::to_string(i) + "]";
      check_version(v, v_path);
      if (!versions.emplace(v.platform, v.plan_class, v.version_num).second)
        fail(v_path, "duplicate app version (same platform, plan_class and version_num)");
    }
  }

  /// An app's name and policy, its versions aside (an app added while the server runs has
  /// none yet).
  void check_app_policy(const app_config& a, const std::string& path) const {
    auto key = [&](const char* field) { return path + "." + field; };
    if (!valid_name(a.name))
      fail(key("name"),
           "invalid name '" + a.name + "': use lower-case letters, digits, '_' and '-' only");
    if (a.min_quorum < 1)
      fail(key("min_quorum"), "must be at least 1, got " + std::to_string(a.min_quorum));
    if (a.min_quorum > a.target_nresults)
      fail(key("min_quorum"),
           "min_quorum (" + std::to_string(a.min_quorum) + ") exceeds target_nresults ("
             + std::to_string(a.target_nresults) + ")",
           key("target_nresults"));
    if (a.target_nresults > a.max_total_results)
      fail(key("target_nresults"),
           "target_nresults (" + std::to_string(a.target_nresults) + ") exceeds max_total_results ("
             + std::to_string(a.max_total_results) + ")",
           key("max_total_results"));
    not_negative(key("max_error_results"), a.max_error_results);
    if (a.max_success_results < a.min_quorum)
      fail(key("max_success_results"),
           "max_success_results (" + std::to_string(a.max_success_results)
             + ") is below min_quorum (" + std::to_string(a.min_quorum)
             + "): no quorum could ever form",
           key("min_quorum"));
    positive(key("delay_bound"), a.delay_bound);
    if (a.delay_bound > max_delay_bound)
      fail(key("delay_bound"),
           "must be at most ten years (3650d), got " + format_number(a.delay_bound) + " s");
    positive(key("max_jobs_per_rpc"), a.max_jobs_per_rpc);
    positive(key("max_jobs_per_day"), a.max_jobs_per_day);
    check_autoflops(a.autoflops, key("autoflops"));
    positive(key("rsc_fpops_est"), a.rsc_fpops_est);
    positive(key("rsc_fpops_bound"), a.rsc_fpops_bound);
    if (a.rsc_fpops_bound < a.rsc_fpops_est)
      fail(key("rsc_fpops_bound"), "rsc_fpops_bound is below rsc_fpops_est", key("rsc_fpops_est"));
    positive(key("rsc_memory_bound"), a.rsc_memory_bound);
    positive(key("rsc_disk_bound"), a.rsc_disk_bound);
    positive(key("max_output_nbytes"), a.max_output_nbytes);
    if (a.output_names.empty())
      fail(key("output_names"), "at least one output file name is required");
    std::set<std::string> outputs;
    for (std::size_t i = 0; i < a.output_names.size(); ++i) {
      const auto& name = a.output_names[i];
      auto out_path = path + ".output_names[" + std::to_string(i) + "]";
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
        fail(out_path, "invalid output file name '" + name + "'");
      if (!outputs.insert(name).second)
        fail(out_path, "duplicate output file name '" + name + "'");
    }
  }

  /// Plan classes: names unique and named as BOINC clients expect (a GPU class names its
  /// vendor, an OpenCL class says so), figures in range, and every YAML version of a defined
  /// class on the resource the class is for.
  void check_plan_classes(const project_config& p, const std::string& path) const {
    std::map<std::string, const plan_class_config*> by_name;
    for (std::size_t i = 0; i < p.plan_classes.size(); ++i) {
      const auto& c = p.plan_classes[i];
      auto c_path = path + ".plan_classes[" + std::to_string(i) + "]";
      auto key = [&](const char* field) { return c_path + "." + field; };
      if (!valid_plan_class_name(c.name))
        fail(key("name"), "invalid name '" + c.name
                            + "': use letters, digits, '_', '-' and '.' only (at most 64)");
      if (!by_name.emplace(c.name, &c).second)
        fail(key("name"), "duplicate plan class '" + c.name + "'");
      static const std::map<std::string, std::vector<std::string>> tags
        = {{"", {}},
           {"nvidia", {"nvidia", "cuda"}},
           {"amd", {"amd", "ati"}},
           {"intel_gpu", {"intel_gpu"}}};
      auto tag = tags.find(c.gpu_type);
      if (tag == tags.end())
        fail(key("gpu_type"),
             "unknown value '" + c.gpu_type + "' (allowed: \"\", nvidia, amd, intel_gpu)");
      auto has = [&](const std::string& part) { return c.name.find(part) != std::string::npos; };
      if (!tag->second.empty() && std::none_of(tag->second.begin(), tag->second.end(), has))
        fail(key("name"),
             "a plan class for gpu_type " + c.gpu_type + " must have '" + tag->second.front() + "'"
               + (tag->second.size() > 1 ? " or '" + tag->second.back() + "'" : "")
               + " in its name: BOINC clients tell a version's GPU by it",
             key("gpu_type"));
      if (c.opencl && !has("opencl"))
        fail(key("name"),
             "an OpenCL plan class must have 'opencl' in its name: BOINC "
             "clients check OpenCL support by it",
             key("opencl"));
      if (c.cuda && c.gpu_type != "nvidia")
        fail(key("cuda"), "cuda needs gpu_type nvidia", key("gpu_type"));
      if (c.gpu_type.empty()
          && (c.cuda || c.opencl || c.min_gpu_ram_mb > 0 || c.gpu_ram_used_mb > 0
              || c.min_driver_version > 0 || c.min_cuda_version > 0))
        fail(key("gpu_type"), "GPU requirements are set but gpu_type is empty");
      if (!c.gpu_type.empty() && (c.max_threads > 0 || c.min_ncpus > 0 || c.nthreads_cmdline))
        fail(key("max_threads"), "CPU threads (min_ncpus, max_threads, nthreads_cmdline) are "
                                 "for CPU plan classes, not gpu_type "
                                   + c.gpu_type);
      not_negative(key("min_core_client_version"), c.min_core_client_version);
      positive(key("projected_flops_scale"), c.projected_flops_scale);
      not_negative(key("min_ncpus"), c.min_ncpus);
      not_negative(key("max_threads"), c.max_threads);
      if (c.nthreads_cmdline && c.max_threads <= 0 && !(c.avg_ncpus > 0))
        fail(key("nthreads_cmdline"), "needs max_threads (or avg_ncpus) to say how many threads");
      not_negative(key("avg_ncpus"), c.avg_ncpus);
      positive(key("ngpus"), c.ngpus);
      not_negative(key("cpu_frac"), c.cpu_frac);
      not_negative(key("min_gpu_ram_mb"), c.min_gpu_ram_mb);
      not_negative(key("gpu_ram_used_mb"), c.gpu_ram_used_mb);
      not_negative(key("min_driver_version"), c.min_driver_version);
      not_negative(key("min_cuda_version"), c.min_cuda_version);
    }
    static const std::map<std::string, std::string> coproc_of
      = {{"", ""}, {"nvidia", "NVIDIA"}, {"amd", "ATI"}, {"intel_gpu", "intel_gpu"}};
    for (std::size_t a = 0; a < p.apps.size(); ++a)
      for (std::size_t i = 0; i < p.apps[a].versions.size(); ++i) {
        const auto& v = p.apps[a].versions[i];
        auto c = by_name.find(v.plan_class);
        if (c == by_name.end())
          continue;
        auto want = coproc_of.find(c->second->gpu_type);
        if (want != coproc_of.end() && want->second != v.coproc_type)
          fail(path + ".apps[" + std::to_string(a) + "].versions[" + std::to_string(i)
                 + "].coproc_type",
               "plan class " + v.plan_class + " is for "
                 + (want->second.empty() ? std::string{"CPUs"} : want->second)
                 + " but the version's coproc_type is '" + v.coproc_type + "'");
      }
  }

  void check_version(const app_version_config& v, const std::string& path) const {
    if (v.platform.empty())
      fail(path + ".platform", "must not be empty");
    not_negative(path + ".version_num", v.version_num);
    positive(path + ".avg_ncpus", v.avg_ncpus);
    not_negative(path + ".coproc_count", v.coproc_count);
    if (!v.coproc_type.empty()
        && std::find(std::begin(coproc_types), std::end(coproc_types), v.coproc_type)
             == std::end(coproc_types))
      fail(path + ".coproc_type",
           "unknown value '" + v.coproc_type + "' (allowed: \"\", NVIDIA, ATI, intel_gpu)");
    if (v.coproc_count > 0 && v.coproc_type.empty())
      fail(path + ".coproc_count", "coproc_count is set but coproc_type is empty");
    if (!v.coproc_type.empty() && !(v.coproc_count > 0))
      fail(path + ".coproc_count", "coproc_type " + v.coproc_type + " needs coproc_count > 0",
           path + ".coproc_type");
  }

  const cobble_config& cfg_;
  const std::map<std::string, int>* lines_;
};

// -- demo ---------------------------------------------------------------------

constexpr std::string_view demo_text =
  R"(# Cobble's embedded demo configuration: one project, one app, one user.
server:
  listen: 127.0.0.1:8080
  data_dir: cobble-data
projects:
  - name: demo
    long_name: Cobble demo project
    users:
      - {name: demo, email: demo@example.org}
    apps:
      - name: testapp
        user_friendly_name: Cobble test app
        min_quorum: 2
        target_nresults: 2
        validator: bitwise
        # Its one user runs both replicas of a workunit; a public project keeps the default
        # (true) so that no volunteer can make up a quorum alone.
        one_result_per_user_per_wu: false
        # No versions here: cobbled adds a signed version of the testapp program at its first
        # start (--demo-app), so that stock BOINC clients download it (docs/apps.md).
)";

} // namespace

// -- public API ---------------------------------------------------------------

cobble_config load_string(std::string_view yaml, std::string_view source) {
  parser p{std::string(source)};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    throw config_error(p.source(), std::max(1, line_of(e.mark)), "", "YAML syntax error: " + e.msg);
  }
  cobble_config cfg;
  cfg.source = p.source();
  p.remember("", std::max(1, root.IsDefined() ? line_of(root.Mark()) : 1));
  try {
    mapping top(p, root, "", {"server", "projects"});
    parse_server(p, top.get("server"), cfg.server);
    for_each_item(top, "projects", [&](const YAML::Node& item, const std::string& path) {
      parse_project(p, item, path, cfg.projects.emplace_back());
    });
  } catch (const YAML::Exception& e) {
    // Should not happen (every access is checked), but never let yaml-cpp's exceptions leak.
    throw config_error(p.source(), std::max(1, line_of(e.mark)), "", e.msg);
  }
  checker(cfg, &p.lines()).run();
  return cfg;
}

cobble_config load_file(const std::filesystem::path& file) {
  auto name = file.string();
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw config_error(name, 0, "", "cannot read: is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw config_error(name, 0, "", "cannot read: " + std::generic_category().message(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw config_error(name, 0, "", "cannot read: I/O error");
  return load_string(text.str(), name);
}

void validate(const cobble_config& cfg) {
  checker(cfg, nullptr).run();
}

std::string app_policy_problem(const app_config& app) {
  cobble_config none;
  try {
    checker(none, nullptr).run_app_policy(app);
  } catch (const config_error& e) {
    return e.key() + ": " + e.message();
  }
  return {};
}

std::string_view demo_yaml() {
  return demo_text;
}

cobble_config demo() {
  cobble_config cfg;
  cfg.server.listen_address = "127.0.0.1";
  cfg.server.port = 8080;
  cfg.server.data_dir = "cobble-data";
  auto& project = cfg.projects.emplace_back();
  project.name = "demo";
  project.long_name = "Cobble demo project";
  project.users.push_back({"demo", "demo@example.org", ""});
  auto& app = project.apps.emplace_back();
  app.name = "testapp";
  app.user_friendly_name = "Cobble test app";
  app.min_quorum = 2;
  app.target_nresults = 2;
  app.validator = validator_kind::bitwise;
  app.one_result_per_user_per_wu = false; // one user runs both replicas of a workunit
  validate(cfg);
  return cfg;
}

std::string to_yaml(const cobble_config& cfg) {
  YAML::Emitter out;
  auto str = [&](const char* key, const std::string& value) {
    out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  };
  auto raw = [&](const char* key, const std::string& value) {
    out << YAML::Key << key << YAML::Value << value;
  };
  const auto& s = cfg.server;
  out << YAML::BeginMap << YAML::Key << "server" << YAML::Value << YAML::BeginMap;
  auto host = s.listen_address.find(':') == std::string::npos ? s.listen_address
                                                              : "[" + s.listen_address + "]";
  str("listen", host + ":" + std::to_string(s.port));
  str("public_url", s.public_url);
  str("admin_address", s.admin_address);
  raw("admin_port", std::to_string(s.admin_port));
  str("data_dir", s.data_dir.string());
  raw("durability", s.mode == durability::sync ? "sync" : "async");
  raw("worker_threads", std::to_string(s.worker_threads));
  raw("actor_threads", std::to_string(s.actor_threads));
  raw("actor_scheduler", s.scheduler == actor_scheduler::sharing ? "sharing" : "stealing");
  str("admin_token", s.admin_token);
  raw("body_limit", format_size(static_cast<double>(s.body_limit)));
  raw("upload_limit", format_size(static_cast<double>(s.upload_limit)));
  raw("read_timeout", format_duration(static_cast<double>(s.read_timeout.count())));
  raw("snapshot_every_events", std::to_string(s.snapshot_every_events));
  raw("snapshot_interval", format_duration(static_cast<double>(s.snapshot_interval.count())));
  raw("snapshot_time_share", format_number(s.snapshot_time_share));
  raw("min_free_disk", format_size(static_cast<double>(s.min_free_disk)));
  raw("snapshots_kept", std::to_string(s.snapshots_kept));
  raw("stats_export_interval",
      format_duration(static_cast<double>(s.stats_export_interval.count())));
  raw("max_connections", std::to_string(s.max_connections));
  raw("max_batch_items", std::to_string(s.max_batch_items));
  out << YAML::EndMap;
  out << YAML::Key << "projects" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : cfg.projects) {
    out << YAML::BeginMap;
    str("name", p.name);
    str("long_name", p.long_name);
    if (!p.description.empty())
      str("description", p.description);
    raw("request_delay", format_duration(p.request_delay));
    if (p.next_rpc_delay)
      raw("next_rpc_delay", format_duration(*p.next_rpc_delay));
    raw("deadline_check_interval", format_duration(p.deadline_check_interval));
    raw("file_grace_period", format_duration(p.file_grace_period));
    raw("sequence_high_water", std::to_string(p.sequence_high_water));
    raw("sequences_per_host", std::to_string(p.sequences_per_host));
    raw("sequence_check_interval", format_duration(p.sequence_check_interval));
    raw("sequence_slow_replica_lag", std::to_string(p.sequence_slow_replica_lag));
    raw("passivate_hosts_after", format_duration(p.passivate_hosts_after));
    raw("max_live_hosts", std::to_string(p.max_live_hosts));
    raw("resend_lost_results", p.resend_lost_results ? "true" : "false");
    const auto& acc = p.accounts;
    out << YAML::Key << "accounts" << YAML::Value << YAML::BeginMap;
    raw("creation", acc.creation == account_creation::open     ? "open"
                    : acc.creation == account_creation::closed ? "closed"
                                                               : "invitation");
    if (!acc.invitation_codes.empty()) {
      out << YAML::Key << "invitation_codes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& code : acc.invitation_codes)
        out << YAML::DoubleQuoted << code;
      out << YAML::EndSeq;
    }
    raw("min_password_length", std::to_string(acc.min_password_length));
    str("terms_of_use", acc.terms_of_use);
    out << YAML::EndMap;
    const auto& c = p.credit;
    out << YAML::Key << "credit" << YAML::Value << YAML::BeginMap;
    raw("normalization_interval", format_duration(c.normalization_interval));
    raw("version_average_samples", std::to_string(c.version_average_samples));
    raw("host_average_samples", std::to_string(c.host_average_samples));
    raw("version_alpha", format_number(c.version_alpha));
    raw("host_alpha", format_number(c.host_alpha));
    raw("version_sample_threshold", std::to_string(c.version_sample_threshold));
    raw("host_sample_threshold", std::to_string(c.host_sample_threshold));
    raw("sample_cap", format_number(c.sample_cap));
    raw("host_scale_cap", format_number(c.host_scale_cap));
    raw("cheat_factor", format_number(c.cheat_factor));
    raw("flops_per_cobblestone", format_number(c.flops_per_cobblestone));
    raw("credit_half_life", format_duration(c.credit_half_life));
    raw("error_rate_initial", format_number(c.error_rate_initial));
    raw("error_rate_alpha", format_number(c.error_rate_alpha));
    raw("version_pfc", c.version_pfc == version_pfc_estimator::mean ? "mean" : "median");
    out << YAML::EndMap;
    const auto& l = p.limits;
    out << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
    if (l.min_sendwork_interval)
      raw("min_sendwork_interval", format_duration(*l.min_sendwork_interval));
    raw("max_ncpus", std::to_string(l.max_ncpus));
    raw("max_ngpus", std::to_string(l.max_ngpus));
    raw("max_jobs_in_progress", std::to_string(l.max_jobs_in_progress));
    raw("max_gpu_jobs_in_progress", std::to_string(l.max_gpu_jobs_in_progress));
    raw("max_new_hosts_per_day", std::to_string(l.max_new_hosts_per_day));
    raw("app_units_factor", format_number(l.app_units_factor));
    out << YAML::EndMap;
    out << YAML::Key << "users" << YAML::Value << YAML::BeginSeq;
    for (const auto& u : p.users) {
      out << YAML::Flow << YAML::BeginMap;
      str("name", u.name);
      str("email", u.email);
      str("authenticator", u.authenticator);
      str("team", u.team);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    out << YAML::Key << "plan_classes" << YAML::Value << YAML::BeginSeq;
    for (const auto& pc : p.plan_classes) {
      out << YAML::BeginMap;
      str("name", pc.name);
      raw("min_core_client_version", std::to_string(pc.min_core_client_version));
      raw("projected_flops_scale", format_number(pc.projected_flops_scale));
      raw("min_ncpus", std::to_string(pc.min_ncpus));
      raw("max_threads", std::to_string(pc.max_threads));
      raw("nthreads_cmdline", pc.nthreads_cmdline ? "true" : "false");
      raw("avg_ncpus", format_number(pc.avg_ncpus));
      str("gpu_type", pc.gpu_type);
      raw("cuda", pc.cuda ? "true" : "false");
      raw("opencl", pc.opencl ? "true" : "false");
      raw("ngpus", format_number(pc.ngpus));
      raw("cpu_frac", format_number(pc.cpu_frac));
      raw("min_gpu_ram_mb", format_number(pc.min_gpu_ram_mb));
      raw("gpu_ram_used_mb", format_number(pc.gpu_ram_used_mb));
      raw("min_driver_version", std::to_string(pc.min_driver_version));
      raw("min_cuda_version", std::to_string(pc.min_cuda_version));
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    out << YAML::Key << "apps" << YAML::Value << YAML::BeginSeq;
    for (const auto& a : p.apps) {
      out << YAML::BeginMap;
      str("name", a.name);
      str("user_friendly_name", a.user_friendly_name);
      raw("min_quorum", std::to_string(a.min_quorum));
      raw("target_nresults", std::to_string(a.target_nresults));
      raw("max_error_results", std::to_string(a.max_error_results));
      raw("max_total_results", std::to_string(a.max_total_results));
      raw("max_success_results", std::to_string(a.max_success_results));
      raw("delay_bound", format_duration(a.delay_bound));
      raw("max_jobs_per_rpc", std::to_string(a.max_jobs_per_rpc));
      raw("validator", a.validator == validator_kind::bitwise ? "bitwise" : "accept_all");
      raw("rsc_fpops_est", format_number(a.rsc_fpops_est));
      raw("rsc_fpops_bound", format_number(a.rsc_fpops_bound));
      raw("rsc_memory_bound", format_size(a.rsc_memory_bound));
      raw("rsc_disk_bound", format_size(a.rsc_disk_bound));
      raw("max_output_nbytes", format_size(a.max_output_nbytes));
      out << YAML::Key << "output_names" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& name : a.output_names)
        out << YAML::DoubleQuoted << name;
      out << YAML::EndSeq;
      raw("host_scale_check", a.host_scale_check ? "true" : "false");
      raw("max_jobs_per_day", std::to_string(a.max_jobs_per_day));
      raw("one_result_per_user_per_wu", a.one_result_per_user_per_wu ? "true" : "false");
      raw("credit_policy", a.credit_policy == credit_policy_kind::pfc ? "pfc" : "app_units");
      {
        const auto& f = a.autoflops;
        out << YAML::Key << "autoflops" << YAML::Value << YAML::BeginMap;
        raw("estimates", f.estimates == estimate_clients::off      ? "off"
                         : f.estimates == estimate_clients::client ? "client"
                                                                   : "all");
        raw("est_x", format_number(f.est_x));
        raw("bound_x", format_number(f.bound_x));
        raw("min_samples", std::to_string(f.min_samples));
        raw("warmup_bound_factor", format_number(f.warmup_bound_factor));
        raw("log_ratio", f.log_ratio ? "true" : "false");
        raw("flops_samples", std::to_string(f.flops_samples));
        raw("flops_percentile", format_number(f.flops_percentile));
        raw("flops_alpha", format_number(f.flops_alpha));
        str("reference_job", f.reference_job);
        raw("abort_quota_factor", format_number(f.abort_quota_factor));
        raw("resend_probability", format_number(f.resend_probability));
        raw("suspicion_error_rate", format_number(f.suspicion_error_rate));
        raw("host_min_spread", format_number(f.host_min_spread));
        out << YAML::EndMap;
      }
      out << YAML::Key << "versions" << YAML::Value << YAML::BeginSeq;
      for (const auto& v : a.versions) {
        out << YAML::Flow << YAML::BeginMap;
        str("platform", v.platform);
        raw("version_num", std::to_string(v.version_num));
        str("plan_class", v.plan_class);
        raw("avg_ncpus", format_number(v.avg_ncpus));
        str("coproc_type", v.coproc_type);
        raw("coproc_count", format_number(v.coproc_count));
        out << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

} // namespace cobble::config
