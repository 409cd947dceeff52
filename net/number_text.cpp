#include "net/number_text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace cobble::net {

std::string grouped(const std::string& digits) {
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::string credit_text(double credit) {
  if (!std::isfinite(credit) || credit < 0)
    credit = 0;
  if (credit < 100)
    return fmt::format("{:.2f}", credit);
  return grouped(fmt::format("{:.0f}", credit));
}

std::string count_text(std::uint64_t n) {
  return grouped(std::to_string(n));
}

} // namespace cobble::net
