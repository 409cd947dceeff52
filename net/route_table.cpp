#include "net/route_table.hpp"

#include <stdexcept>

namespace cobble::net {

route_pattern::route_pattern(std::string_view text) : text_(text) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("route pattern '" + text_ + "': " + why);
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto next = text.find('/', pos);
    if (next == std::string_view::npos)
      next = text.size();
    auto seg = text.substr(pos, next - pos);
    pos = next + 1;
    if (seg.empty())
      continue;
    segment s;
    if (seg.front() == '{' && seg.back() == '}' && seg.size() >= 2) {
      s.text = seg.substr(1, seg.size() - 2);
      s.binds = true;
      if (s.text.empty())
        fail("an empty {name}");
      for (const auto& other : segments_)
        if (other.binds && other.text == s.text)
          fail("{" + s.text + "} twice");
    } else {
      s.text = seg;
    }
    if (s.text.find_first_of("{}") != std::string::npos)
      fail("a brace inside the segment '" + std::string{seg} + "'");
    segments_.push_back(std::move(s));
  }
}

std::optional<route_params> route_pattern::match_prefix(std::span<const std::string> path) const {
  if (path.size() < segments_.size())
    return std::nullopt;
  route_params out;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const auto& s = segments_[i];
    if (s.binds)
      out.emplace(s.text, path[i]);
    else if (s.text != path[i])
      return std::nullopt;
  }
  return out;
}

std::optional<route_params> route_pattern::match(std::span<const std::string> path) const {
  if (path.size() != segments_.size())
    return std::nullopt;
  return match_prefix(path);
}

std::string allow_header(std::span<const http::verb> methods) {
  std::string out;
  for (auto v : methods) {
    if (!out.empty())
      out += ", ";
    out += http::to_string(v);
  }
  return out;
}

} // namespace cobble::net
