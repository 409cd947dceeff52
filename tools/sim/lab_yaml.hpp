#pragma once
// The YAML reading the credit and AutoFlops labs share: a mapping whose keys are checked,
// with errors that name the file, the line and the key path.

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace cobble::sim {

/// A lab scenario that cannot be used: what() reads "FILE:LINE: KEY: message".
class lab_scenario_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One YAML mapping with its known keys (an unknown key is an error listing them).
class checked_map {
public:
  checked_map(const YAML::Node& node, std::string source, std::string path,
              std::initializer_list<const char*> known);

  [[noreturn]] void
  fail(const YAML::Node& at, const std::string& key, const std::string& message) const;

  /// The path of a key of this mapping ("a.b.key").
  std::string child(const std::string& key) const;

  YAML::Node get(const char* key) const { return node_[key]; }
  const std::string& source() const { return source_; }
  const YAML::Node& node() const { return node_; }

  /// Reads `key` into `out` when it is given (absent or null: `out` keeps its value).
  template <class T>
  void read(const char* key, T& out) const {
    auto n = node_[key];
    if (!n.IsDefined() || n.IsNull())
      return;
    try {
      out = n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, child(key),
           "cannot read '" + (n.IsScalar() ? n.Scalar() : std::string{"?"}) + "' as " + kind<T>());
    }
  }

  /// A value that must satisfy `ok`; `rule` says how ("positive").
  template <class T, class Ok>
  void read(const char* key, T& out, Ok ok, const char* rule) const {
    read(key, out);
    auto n = node_[key];
    if (n.IsDefined() && !n.IsNull() && !ok(out))
      fail(n, child(key), std::string{"must be "} + rule);
  }

  /// A string that must be one of `allowed`.
  void choice(const char* key, std::string& out, std::initializer_list<const char*> allowed) const;

private:
  template <class T>
  static const char* kind() {
    if constexpr (std::is_same_v<T, bool>)
      return "true or false";
    else if constexpr (std::is_integral_v<T>)
      return "an integer";
    else if constexpr (std::is_floating_point_v<T>)
      return "a number";
    else
      return "a string";
  }

  YAML::Node node_;
  std::string source_;
  std::string path_;
};

} // namespace cobble::sim
