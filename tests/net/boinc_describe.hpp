#pragma once

/// Every field of the structs net/boinc_xml parses, as text: one `path = value` line per
/// field, lists with their size, strings quoted with control characters spelled out, numbers
/// in the shortest form that reads back exactly (so "nan", "-0" and "inf" stay visible). The
/// golden test compares these texts with pinned fixtures, so a parser that fills any field
/// differently, even one no other test looks at, fails.

#include "net/boinc_xml.hpp"

#include <string>

namespace cobble::net::testing {

std::string describe(const sched_request& q);
std::string describe(const sched_reply& r);
std::string describe(const upload_header& h);

/// The value's description, or "error: TEXT" on a line of its own.
template <class T>
std::string describe(const parse_result<T>& r) {
  return r.ok() ? describe(*r.value) : "error: " + r.error + "\n";
}

} // namespace cobble::net::testing
