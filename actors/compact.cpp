#include "actors/compact.hpp"

#include <mutex>
#include <unordered_map>

namespace cobble {

namespace {

/// Distinct values the pool keeps at most (platforms and plan classes are a few dozen).
constexpr std::size_t max_pooled = 4096;

struct string_pool {
  std::mutex m;
  std::unordered_map<std::string_view, std::shared_ptr<const std::string>> values;
};

string_pool& pool() {
  static auto* p = new string_pool; // never destroyed: records may outlive static destruction
  return *p;
}

} // namespace

std::shared_ptr<const std::string> shared_str::intern(std::string_view s) {
  if (s.empty())
    return nullptr;
  auto& p = pool();
  std::lock_guard<std::mutex> guard{p.m};
  if (auto i = p.values.find(s); i != p.values.end())
    return i->second;
  auto v = std::make_shared<const std::string>(s);
  if (p.values.size() < max_pooled)
    p.values.emplace(std::string_view{*v}, v);
  return v;
}

const std::string& shared_str::empty_string() {
  static const std::string e;
  return e;
}

} // namespace cobble
