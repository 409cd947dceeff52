#pragma once

/// Identifiers and small value types shared by events, state and actors.

#include <cstdint>
#include <string>
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
inline double us_to_seconds(time_us t) { return static_cast<double>(t) / 1e6; }

/// A result is the index-th replica of a workunit; its name is "<wu name>_<index>".
struct result_ref {
  id_type wu = 0;
  std::uint32_t index = 0;
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

} // namespace cobble
