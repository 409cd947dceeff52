#pragma once

/// Numbers as the site's pages write them for people: thousands grouped, credit with two
/// decimals when it is small. Shared by the pages (net/web_visit) and the credit plot.

#include <cstdint>
#include <string>

namespace cobble::net {

/// Digits with thousands grouped: 1234567 -> 1,234,567.
std::string grouped(const std::string& digits);

/// A credit figure as people read it: thousands grouped, two decimals below 100; a negative
/// or non-finite figure reads 0.00.
std::string credit_text(double credit);

/// A count with thousands grouped.
std::string count_text(std::uint64_t n);

} // namespace cobble::net
