#include "actors/records.hpp"

#include <string>

namespace cobble {

const char* to_string(seq_element_kind x) {
  return x == seq_element_kind::state ? "state" : "heartbeat";
}

std::string sequence_element_name(const std::string& seq, std::uint32_t position,
                                  std::uint8_t replica, std::uint32_t branch) {
  auto out = seq + "@" + std::to_string(position);
  if (replica > 0)
    out += "r" + std::to_string(replica);
  if (branch > 0)
    out += "b" + std::to_string(branch);
  return out;
}

std::uint32_t anonymous_version_id(std::uint32_t app, std::uint8_t resource) {
  return 0x80000000u | (app << 4) | static_cast<std::uint32_t>(2 + resource);
}

std::string version_label(std::uint32_t id) {
  if (!is_anonymous_version(id))
    return std::to_string(id);
  return "app " + std::to_string((id & 0x7fffffffu) >> 4) + " anonymous -"
         + std::to_string(id & 0xfu);
}

} // namespace cobble
