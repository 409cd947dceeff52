#include "net/request_target.hpp"

#include <cctype>

namespace cobble::net {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

std::optional<std::string> percent_decode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size())
      return std::nullopt;
    int hi = hex_value(in[i + 1]);
    int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::optional<request_target> split_target(std::string_view target) {
  request_target out;
  auto q = target.find('?');
  auto path = target.substr(0, q);
  std::size_t pos = 0;
  while (pos < path.size()) {
    auto next = path.find('/', pos);
    if (next == std::string_view::npos)
      next = path.size();
    if (next > pos) {
      auto seg = percent_decode(path.substr(pos, next - pos));
      if (!seg)
        return std::nullopt;
      out.path.push_back(std::move(*seg));
    }
    pos = next + 1;
  }
  if (q != std::string_view::npos) {
    auto query = target.substr(q + 1);
    pos = 0;
    while (pos <= query.size()) {
      auto next = query.find('&', pos);
      if (next == std::string_view::npos)
        next = query.size();
      auto pair = query.substr(pos, next - pos);
      if (!pair.empty()) {
        auto eq = pair.find('=');
        auto key = percent_decode(pair.substr(0, eq));
        auto value = percent_decode(eq == std::string_view::npos ? std::string_view{}
                                                                 : pair.substr(eq + 1));
        if (!key || !value)
          return std::nullopt;
        out.query[*key] = *value;
      }
      pos = next + 1;
    }
  }
  return out;
}

bool valid_host(std::string_view host) {
  if (host.empty() || host.size() > 255)
    return false;
  std::string_view name = host;
  std::string_view port;
  if (host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos || close < 3)
      return false;
    for (char c : host.substr(1, close - 1))
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'))
        return false;
    name = {};
    auto rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':')
        return false;
      port = rest.substr(1);
      if (port.empty())
        return false;
    }
  } else {
    auto colon = host.find(':');
    if (colon != std::string_view::npos) {
      name = host.substr(0, colon);
      port = host.substr(colon + 1);
      if (port.empty())
        return false;
    }
    if (name.empty())
      return false;
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'))
        return false;
  }
  if (port.size() > 5)
    return false;
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value <= 65535;
}

} // namespace cobble::net
