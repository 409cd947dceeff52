#include "tools/sim/lab_yaml.hpp"

#include <algorithm>

namespace cobble::sim {

namespace {

std::string joined(std::initializer_list<const char*> words) {
  std::string list;
  for (auto w : words)
    list += (list.empty() ? "" : ", ") + std::string{w};
  return list;
}

} // namespace

checked_map::checked_map(const YAML::Node& node, std::string source, std::string path,
                         std::initializer_list<const char*> known)
  : node_(node), source_(std::move(source)), path_(std::move(path)) {
  if (!node.IsMap())
    fail(node, path_, "expected a mapping");
  for (const auto& kv : node) {
    auto key = kv.first.as<std::string>();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; }))
      fail(kv.first, child(key), "unknown key '" + key + "' (known keys: " + joined(known) + ")");
  }
}

void checked_map::fail(const YAML::Node& at, const std::string& key,
                       const std::string& message) const {
  int line = at.Mark().is_null() ? 0 : at.Mark().line + 1;
  throw lab_scenario_error(source_ + ":" + std::to_string(line) + ": " + key + ": " + message);
}

std::string checked_map::child(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void checked_map::choice(const char* key, std::string& out,
                         std::initializer_list<const char*> allowed) const {
  read(key, out);
  if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return out == a; })) {
    auto n = node_[key];
    fail(n.IsDefined() ? n : node_, child(key), "must be one of " + joined(allowed));
  }
}

} // namespace cobble::sim
