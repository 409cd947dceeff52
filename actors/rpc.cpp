#include "actors/rpc.hpp"

#include <algorithm>
#include <cctype>

namespace cobble {

const char* to_string(resource_type x) {
  switch (x) {
    case resource_type::cpu:
      return "CPU";
    case resource_type::nvidia:
      return "NVIDIA";
    case resource_type::ati:
      return "ATI";
    case resource_type::intel_gpu:
      return "intel_gpu";
  }
  return "?";
}

std::optional<resource_type> parse_resource_type(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.empty() || lower == "cpu")
    return resource_type::cpu;
  if (lower == "nvidia" || lower == "cuda")
    return resource_type::nvidia;
  if (lower == "ati" || lower == "amd")
    return resource_type::ati;
  if (lower == "intel_gpu" || lower == "intel")
    return resource_type::intel_gpu;
  return std::nullopt;
}

resource_request sched_request::request_for(resource_type t) const {
  if (t == resource_type::cpu) {
    auto r = cpu;
    // Clients older than the per-resource protocol send only work_req_seconds.
    if (!r.wants_work() && work_req_seconds > 0 && coprocs.empty())
      r.req_secs = work_req_seconds;
    return r;
  }
  for (const auto& c : coprocs)
    if (c.type == t)
      return c.request;
  return {};
}

sched_reply sched_reply::error(std::string text, double delay) {
  sched_reply r;
  r.messages.push_back({std::move(text), false});
  r.request_delay = delay;
  return r;
}

} // namespace cobble
