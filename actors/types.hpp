#pragma once

/// Identifiers and small value types shared by events, state and actors.

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cobble {

/// Ids of users, hosts and workunits; per project, from 1.
using id_type = std::uint64_t;

/// Microseconds since the Unix epoch. Every time in state and events is one of these.
using time_us = std::int64_t;

inline constexpr time_us us_per_second = 1'000'000;

/// Seconds (double) to microseconds, saturating.
time_us seconds_to_us(double s);

/// Microseconds to seconds.
inline double us_to_seconds(time_us t) {
  return static_cast<double>(t) / 1e6;
}

/// Combines lambdas into one visitor (for std::visit over event payloads).
template <class... Ts>
struct overload : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overload(Ts...) -> overload<Ts...>;

/// Splits "<base>_<index>" (result names "<wu>_<i>", output names "<result>_<i>") at the last
/// '_'; nullopt when there is no index after it.
inline std::optional<std::pair<std::string_view, std::uint32_t>>
split_indexed_name(std::string_view name) {
  auto us = name.rfind('_');
  if (us == std::string_view::npos || us + 1 >= name.size())
    return std::nullopt;
  std::uint32_t index = 0;
  auto digits = name.substr(us + 1);
  auto [ptr, err] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (err != std::errc{} || ptr != digits.data() + digits.size())
    return std::nullopt;
  return std::pair{name.substr(0, us), index};
}

/// A result is the index-th replica of a workunit; its name is "<wu name>_<index>".
struct result_ref {
  id_type wu = 0;
  std::uint32_t index = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>.
  friend auto operator<=>(const result_ref&, const result_ref&) = default;
};

template <class F>
void inspect_fields(F& f, result_ref& x) {
  f(x.wu, x.index);
}

/// An input or output file of a job.
struct file_rec {
  std::string name;
  double nbytes = 0;
  std::string md5;
  friend bool operator==(const file_rec&, const file_rec&) = default;
};

template <class F>
void inspect_fields(F& f, file_rec& x) {
  f(x.name, x.nbytes, x.md5);
}

/// The bitwise validator's rule: what the outputs of two successful results (or sequence
/// elements) must share to agree: the md5 and size of every file, in any order.
inline std::string bitwise_signature(const std::vector<file_rec>& outputs) {
  std::vector<std::string> parts;
  parts.reserve(outputs.size());
  for (const auto& f : outputs)
    parts.push_back(f.md5 + ":" + std::to_string(static_cast<long long>(f.nbytes)));
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (auto& p : parts)
    out += p + ";";
  return out;
}

/// Records the server's digest of output `index` in a result's received outputs (by index;
/// entries of outputs not arrived yet have an empty name).
inline void set_received(std::vector<file_rec>& received, std::uint32_t index, file_rec file) {
  if (received.size() <= index)
    received.resize(static_cast<std::size_t>(index) + 1);
  received[index] = std::move(file);
}

/// The bitwise signature of what the server received of a result's `declared` outputs, when
/// every one of them arrived; nullopt when one is missing (such a result cannot be valid, as
/// BOINC's validators mark a result whose output file is missing invalid).
inline std::optional<std::string>
received_signature(const std::vector<file_rec>& received, std::size_t declared) {
  if (received.size() < declared)
    return std::nullopt;
  std::vector<file_rec> files(received.begin(),
                              received.begin() + static_cast<std::ptrdiff_t>(declared));
  for (const auto& f : files)
    if (f.name.empty())
      return std::nullopt;
  return bitwise_signature(files);
}

} // namespace cobble
