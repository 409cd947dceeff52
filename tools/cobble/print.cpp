#include "tools/cobble/print.hpp"

#include <algorithm>
#include <ctime>
#include <iostream>
#include <sstream>

namespace cobble::cli {

using nlohmann::json;

void table::print(std::ostream& out, const std::string& indent) const {
  std::vector<std::size_t> width;
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i)
        width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  for (const auto& r : rows_) {
    std::string line = indent;
    for (std::size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size())
        line += std::string(width[i] - r[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
}

std::string text(const json& x) {
  if (x.is_null())
    return "-";
  if (x.is_string())
    return x.get<std::string>();
  if (x.is_number_float()) {
    std::ostringstream out;
    out << x.get<double>();
    return out.str();
  }
  if (x.is_boolean())
    return x.get<bool>() ? "yes" : "no";
  return x.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string field(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key))
    return "-";
  return text(obj.at(key));
}

std::string time_text(const json& x) {
  if (!x.is_number())
    return "-";
  auto t = static_cast<std::time_t>(x.get<double>());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string time_field(const json& obj, const char* key) {
  return obj.contains(key) ? time_text(obj.at(key)) : "-";
}

void print_json(const json& x) {
  // Invalid UTF-8 from a log written before the edge replaced it: replaced, not thrown.
  std::cout << x.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

void print_summary(std::ostream& out, const json& s) {
  out << "project " << field(s, "name") << " (" << field(s, "long_name") << ")\n";
  out << "  users " << field(s, "users") << ", hosts " << field(s, "hosts") << ", workunits "
      << field(s, "workunits") << " (" << field(s, "active_workunits") << " active), "
      << "results in progress " << field(s, "results_in_progress") << '\n';
  const auto& c = s.at("counters");
  out << "  counters:";
  for (const auto& [key, value] : c.items())
    out << ' ' << key << '=' << text(value);
  out << '\n';
  table t{{"APP", "VERSIONS", "UNSENT"}};
  for (const auto& a : s.at("apps"))
    t.add({field(a, "name"), field(a, "versions"), field(a, "unsent")});
  t.print(out, "  ");
}

} // namespace cobble::cli
