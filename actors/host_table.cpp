#include "actors/host_table.hpp"

#include "storage/codec.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cobble {

namespace {

/// Bytes a passivated host costs besides its encoding's characters: the hash-map node (next
/// pointer, key, the string object) and a bucket pointer.
constexpr std::size_t passive_entry_bytes = sizeof(void*)
                                            + sizeof(std::pair<const id_type, std::string>)
                                            + sizeof(time_us) + sizeof(void*);

std::size_t passive_cost(const std::string& blob) {
  // libstdc++ keeps up to 15 characters in the string object itself.
  return passive_entry_bytes + (blob.capacity() > 15 ? blob.capacity() + 1 : 0);
}

} // namespace

std::string encode_passivated(const host_state& s) {
  auto blob = storage::encode(s);
  blob.shrink_to_fit();
  return blob;
}

std::optional<host_state> decode_passivated(std::string_view blob) {
  host_state s;
  if (!storage::decode(blob, s))
    return std::nullopt;
  return s;
}

host_table::host_table(std::unordered_map<id_type, host_state> states) : live_(std::move(states)) {}

time_us host_table::used(id_type id, const host_state& s) const {
  auto u = used_.find(id);
  return u != used_.end() ? u->second : s.last_rpc;
}

host_state* host_table::find(id_type id, time_us now) {
  if (auto i = live_.find(id); i != live_.end()) {
    auto& u = used_[id];
    u = std::max(u, now);
    return &i->second;
  }
  auto p = passive_.find(id);
  if (p == passive_.end())
    return nullptr;
  auto s = decode_passivated(p->second.blob);
  // The table wrote the encoding itself, in this process: a failure is a bug, not bad input.
  if (!s)
    throw std::logic_error("passivated state of host " + std::to_string(id) + " does not decode");
  passive_bytes_ -= passive_cost(p->second.blob);
  passive_.erase(p);
  ++activations_;
  used_[id] = now;
  return &live_.emplace(id, std::move(*s)).first->second;
}

host_state& host_table::add(id_type id, time_us now) {
  if (auto* s = find(id, now))
    return *s;
  used_[id] = now;
  return live_.emplace(id, host_state{}).first->second;
}

std::optional<host_state> host_table::copy_of(id_type id) const {
  if (auto i = live_.find(id); i != live_.end())
    return i->second;
  if (auto p = passive_.find(id); p != passive_.end())
    return decode_passivated(p->second.blob);
  return std::nullopt;
}

std::unordered_map<id_type, host_state> host_table::all() const {
  std::unordered_map<id_type, host_state> out;
  out.reserve(size());
  for (const auto& [id, s] : live_)
    out.emplace(id, s);
  for (const auto& [id, p] : passive_)
    if (auto s = decode_passivated(p.blob))
      out.emplace(id, std::move(*s));
  return out;
}

void host_table::passivate_one(std::unordered_map<id_type, host_state>::iterator it) {
  auto blob = encode_passivated(it->second);
  passive_bytes_ += passive_cost(blob);
  passive_.insert_or_assign(it->first, passive_host{std::move(blob), it->second.last_rpc});
  used_.erase(it->first);
  live_.erase(it);
  ++passivations_;
}

std::size_t host_table::passivate(time_us now, const passivation_policy& policy) {
  auto budget = policy.max_per_call > 0 ? policy.max_per_call
                                        : std::numeric_limits<std::size_t>::max();
  std::size_t n = 0;
  if (policy.idle_after > 0) {
    auto cutoff = now - policy.idle_after;
    for (auto i = live_.begin(); i != live_.end() && n < budget;) {
      auto next = std::next(i);
      if (used(i->first, i->second) <= cutoff) {
        passivate_one(i);
        ++n;
      }
      i = next;
    }
  }
  if (policy.max_live > 0 && live_.size() > policy.max_live && n < budget) {
    // The least recently used go first; ties by id, so the choice does not depend on the
    // hash map's order.
    std::vector<std::pair<time_us, id_type>> by_use;
    by_use.reserve(live_.size());
    for (const auto& [id, s] : live_)
      by_use.emplace_back(used(id, s), id);
    auto excess = std::min(live_.size() - policy.max_live, budget - n);
    std::nth_element(by_use.begin(), by_use.begin() + static_cast<std::ptrdiff_t>(excess - 1),
                     by_use.end());
    for (std::size_t k = 0; k < excess; ++k) {
      passivate_one(live_.find(by_use[k].second));
      ++n;
    }
  }
  return n;
}

std::size_t host_table::contacted_since(time_us since) const {
  std::size_t n = 0;
  for (const auto& [id, s] : live_)
    n += s.last_rpc >= since ? 1 : 0;
  for (const auto& [id, p] : passive_)
    n += p.last_rpc >= since ? 1 : 0;
  return n;
}

time_us host_table::last_contact(id_type id) const {
  if (auto i = live_.find(id); i != live_.end())
    return i->second.last_rpc;
  if (auto p = passive_.find(id); p != passive_.end())
    return p->second.last_rpc;
  return 0;
}

host_table_gauges host_table::gauges() const {
  return host_table_gauges{live_.size(), passive_.size(), passive_bytes_, passivations_,
                           activations_};
}

} // namespace cobble
