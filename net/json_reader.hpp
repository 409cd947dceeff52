#pragma once

/// Reading admin request bodies: one JSON object's members into a struct, with the first
/// error kept as a message for a 400 answer (net/admin_json.cpp, net/app_json.cpp).

#include "net/xml_text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>

namespace cobble::net {

/// A name the client chose, for an error message: its first 64 bytes (cut on a UTF-8
/// boundary), "..." when there were more, so that a huge key makes no huge answer.
inline std::string shown(std::string s) {
  if (s.size() > 64) {
    xml::cap_utf8(s, 64);
    s += "...";
  }
  return s;
}

/// Reads the members of one JSON object into a struct, collecting the first error.
class reader {
public:
  reader(const nlohmann::json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  /// The first error, or empty.
  const std::string& error() const { return error_; }

  bool ok() const { return error_.empty(); }

  void fail(const std::string& what) {
    if (error_.empty())
      error_ = what + where_;
  }

  /// Fails on any member not in `known`.
  void only(std::initializer_list<const char*> known) {
    for (const auto& item : obj_.items()) {
      const auto& key = item.key();
      bool found = std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
      if (!found)
        fail("unknown field '" + shown(key) + "'");
    }
  }

  bool has(const char* key) const { return obj_.contains(key) && !obj_.at(key).is_null(); }

  void string(const char* key, std::string& out, bool required = false) {
    if (!has(key)) {
      if (required)
        fail("missing field '" + std::string{key} + "'");
      return;
    }
    const auto& v = obj_.at(key);
    if (!v.is_string())
      return fail("field '" + std::string{key} + "' must be a string");
    out = v.get<std::string>();
  }

  void number(const char* key, std::optional<double>& out) {
    if (!has(key))
      return;
    const auto& v = obj_.at(key);
    if (!v.is_number())
      return fail("field '" + std::string{key} + "' must be a number");
    out = v.get<double>();
  }

  void number(const char* key, double& out) {
    std::optional<double> x;
    number(key, x);
    if (x)
      out = *x;
  }

  void integer(const char* key, std::optional<int>& out) {
    if (!has(key))
      return;
    const auto& v = obj_.at(key);
    if (!v.is_number_integer())
      return fail("field '" + std::string{key} + "' must be an integer");
    auto x = v.get<std::int64_t>();
    if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
      return fail("field '" + std::string{key} + "' is out of range");
    out = static_cast<int>(x);
  }

  void boolean(const char* key, bool& out) {
    if (!has(key))
      return;
    const auto& v = obj_.at(key);
    if (!v.is_boolean())
      return fail("field '" + std::string{key} + "' must be true or false");
    out = v.get<bool>();
  }

  void unsigned_int(const char* key, std::uint64_t& out, std::uint64_t max) {
    if (!has(key))
      return;
    const auto& v = obj_.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
      return fail("field '" + std::string{key} + "' must be a non-negative integer");
    auto x = v.get<std::uint64_t>();
    if (x > max)
      return fail("field '" + std::string{key} + "' must be at most " + std::to_string(max));
    out = x;
  }

private:
  const nlohmann::json& obj_;
  std::string where_;
  std::string error_;
};

} // namespace cobble::net
