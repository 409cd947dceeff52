#include "actors/project_views.hpp"

#include <algorithm>
#include <cctype>

namespace cobble {

std::string app_name(const project_state& ps, std::uint32_t app) {
  auto a = ps.app(app);
  return a ? a->name : std::string{"?"};
}

workunit_view view_of(const project_state& ps, const workunit_rec& wu) {
  workunit_view v;
  v.wu = wu;
  v.app_name = app_name(ps, wu.app);
  for (std::uint32_t i = 0; i < wu.results.size(); ++i)
    v.result_names.push_back(ps.result_name({wu.id, i}));
  return v;
}

const workunit_rec* workunit_by_key(const project_state& ps, const std::string& key) {
  if (auto wu = ps.find_workunit(key))
    return wu;
  if (key.empty()
      || !std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isdigit(c); }))
    return nullptr;
  try {
    return ps.workunit(std::stoull(key));
  } catch (const std::out_of_range&) {
    return nullptr;
  }
}

std::vector<workunit_view> workunit_page(const project_state& ps, std::uint64_t offset,
                                         std::uint64_t limit, std::optional<wu_state> state) {
  std::vector<id_type> ids;
  ids.reserve(state ? 0 : ps.workunits.size());
  for (const auto& [id, wu] : ps.workunits)
    if (!state || wu.state == *state)
      ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<workunit_view> out;
  for (std::size_t i = offset; i < ids.size() && out.size() < limit; ++i)
    out.push_back(view_of(ps, ps.workunits.at(ids[i])));
  return out;
}

std::optional<host_view>
host_view_of(const project_state& ps, std::optional<host_state> state, id_type id) {
  auto reg = ps.hosts.find(id);
  if (reg == ps.hosts.end())
    return std::nullopt;
  return host_view{reg->second, std::move(state)};
}

std::vector<host_view>
host_page(const project_state& ps, std::uint64_t offset, std::uint64_t limit) {
  std::vector<host_view> out;
  std::uint64_t i = 0;
  for (const auto& [id, reg] : ps.hosts) {
    if (i++ < offset)
      continue;
    if (out.size() >= limit)
      break;
    out.push_back(host_view{reg, std::nullopt});
  }
  return out;
}

project_gauges gauges_of(const project_state& ps, const host_table& hosts, std::size_t sample) {
  project_gauges g;
  g.project = ps.name;
  auto t = hosts.gauges();
  g.hosts = std::max(hosts.size(), ps.hosts.size());
  g.hosts_live = t.live;
  g.hosts_passivated = t.passivated;
  g.passivated_bytes = t.passive_bytes;
  g.host_passivations = t.passivations;
  g.host_activations = t.activations;
  g.workunits = ps.workunits.size();
  g.active_workunits = ps.active_workunits;
  // Per live host besides its state: its table entries (host_table::live_entry_bytes). Per
  // host: its registration's std::map node (three pointers and the colour).
  constexpr std::size_t per_live = host_table::live_entry_bytes;
  constexpr std::size_t per_host = 4 * sizeof(void*) + sizeof(std::pair<const id_type, host_reg>);
  std::size_t measured = 0;
  hosts.sample_live(sample, [&](id_type, const host_state& s) {
    measured += memory_bytes(s);
    ++g.hosts_sampled;
  });
  auto mean = g.hosts_sampled > 0
                ? static_cast<double>(measured) / static_cast<double>(g.hosts_sampled)
                : static_cast<double>(sizeof(host_state));
  g.host_bytes = static_cast<std::size_t>(static_cast<double>(g.hosts_live) * (mean + per_live))
                 + g.passivated_bytes + g.hosts * per_host;
  return g;
}

std::vector<user_rec> users_of(const project_state& ps) {
  std::vector<user_rec> out;
  out.reserve(ps.users.size());
  for (const auto& [id, u] : ps.users)
    out.push_back(u);
  return out;
}

} // namespace cobble
