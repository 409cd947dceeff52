#include "config/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace cobble::config {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i]))
        != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

/// Splits "12.5 MiB" into 12.5 and "MiB". nullopt when no finite number leads the text.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  text = trim(text);
  if (text.empty())
    return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || !std::isfinite(value))
    return std::nullopt;
  auto rest = trim(text.substr(static_cast<std::size_t>(end - text.data())));
  return std::pair{value, rest};
}

struct unit {
  std::string_view name;
  double factor;
};

constexpr std::array size_units{
  unit{"", 1},
  unit{"b", 1},
  unit{"k", 1e3},
  unit{"kb", 1e3},
  unit{"kib", 1024.0},
  unit{"m", 1e6},
  unit{"mb", 1e6},
  unit{"mib", 1024.0 * 1024},
  unit{"g", 1e9},
  unit{"gb", 1e9},
  unit{"gib", 1024.0 * 1024 * 1024},
  unit{"t", 1e12},
  unit{"tb", 1e12},
  unit{"tib", 1024.0 * 1024 * 1024 * 1024},
};

constexpr std::array duration_units{
  unit{"", 1}, unit{"s", 1}, unit{"m", 60}, unit{"h", 3600}, unit{"d", 86400},
};

} // namespace

std::optional<double> parse_size(std::string_view text) {
  auto split = split_number(text);
  if (!split)
    return std::nullopt;
  for (const auto& u : size_units)
    if (iequals(split->second, u.name))
      return split->first * u.factor;
  return std::nullopt;
}

std::optional<double> parse_duration(std::string_view text) {
  auto split = split_number(text);
  if (!split)
    return std::nullopt;
  for (const auto& u : duration_units)
    if (split->second == u.name)
      return split->first * u.factor;
  return std::nullopt;
}

std::string format_number(double value) {
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  if (ec != std::errc{})
    return "nan";
  return std::string(buf.data(), end);
}

std::string format_size(double bytes) {
  // The largest unit, binary or decimal, that divides the count exactly: 64e6 -> "64M",
  // 4194304 -> "4MiB".
  constexpr std::array units{unit{"TiB", 1024.0 * 1024 * 1024 * 1024},
                             unit{"T", 1e12},
                             unit{"GiB", 1024.0 * 1024 * 1024},
                             unit{"G", 1e9},
                             unit{"MiB", 1024.0 * 1024},
                             unit{"M", 1e6},
                             unit{"KiB", 1024.0},
                             unit{"K", 1e3}};
  if (bytes > 0 && std::isfinite(bytes))
    for (const auto& u : units)
      if (bytes >= u.factor && std::fmod(bytes, u.factor) == 0)
        return format_number(bytes / u.factor) + std::string(u.name);
  return format_number(bytes);
}

std::string format_duration(double seconds) {
  constexpr std::array units{unit{"d", 86400}, unit{"h", 3600}, unit{"m", 60}};
  if (seconds > 0 && std::isfinite(seconds))
    for (const auto& u : units)
      if (seconds >= u.factor && std::fmod(seconds, u.factor) == 0)
        return format_number(seconds / u.factor) + std::string(u.name);
  return format_number(seconds) + "s";
}

} // namespace cobble::config
