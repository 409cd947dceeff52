#include "tools/cobble/state_diff.hpp"

#include "actors/messages.hpp"
#include "net/admin_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <type_traits>

namespace cobble::cli {

namespace {

using nlohmann::json;

/// "at /results/0/state: replayed "over", snapshot "in_progress"" from two JSON views.
std::string json_difference(const json& replayed, const json& snapshot) {
  auto patch = json::diff(replayed, snapshot);
  if (patch.empty())
    return "(a difference not visible in its JSON view)";
  const auto& op = patch[0];
  auto path = op.at("path").get<std::string>();
  json::json_pointer ptr{path};
  auto show = [&](const json& doc) {
    return doc.contains(ptr) ? doc.at(ptr).dump() : std::string{"(absent)"};
  };
  return "at " + (path.empty() ? std::string{"/"} : path) + ": replayed " + show(replayed)
         + ", snapshot " + show(snapshot);
}

/// The first key, in order, whose entries differ or exist on one side only, as `describe`
/// says it (given null for the side without it); nullopt when the maps are equal.
template <class Map, class Describe>
std::optional<std::string> first_map_difference(const Map& a, const Map& b, Describe describe) {
  std::set<std::remove_cvref_t<decltype(a.begin()->first)>> keys;
  for (const auto& [k, v] : a)
    keys.insert(k);
  for (const auto& [k, v] : b)
    keys.insert(k);
  for (const auto& k : keys) {
    auto ia = a.find(k);
    auto ib = b.find(k);
    if (ia == a.end())
      return describe(k, nullptr, &ib->second);
    if (ib == b.end())
      return describe(k, &ia->second, nullptr);
    if (!(ia->second == ib->second))
      return describe(k, &ia->second, &ib->second);
  }
  return std::nullopt;
}

/// `what`, and which side it exists on when only one has it.
template <class T>
std::string presence(const std::string& what, const T* a, const T* b) {
  if (a == nullptr)
    return what + " exists only in the snapshot";
  if (b == nullptr)
    return what + " exists only in the replayed state";
  return what;
}

/// Describes one entry by its JSON view: where the views differ when both sides have it.
template <class T>
std::string entry_difference(const std::string& what, const T* x, const T* y) {
  auto said = presence(what, x, y);
  return x && y ? said + " differs " + json_difference(net::to_json(*x), net::to_json(*y)) : said;
}

std::optional<std::string> app_difference(const project_state& sa, const project_state& sb) {
  if (sa.apps == sb.apps)
    return std::nullopt;
  for (std::size_t k = 0; k < std::max(sa.apps.size(), sb.apps.size()); ++k)
    if (k >= sa.apps.size() || k >= sb.apps.size() || !(sa.apps[k] == sb.apps[k]))
      return "app #" + std::to_string(k + 1) + " ("
             + (k < sa.apps.size() ? sa.apps[k].name : sb.apps[k].name) + ") differs";
  return std::nullopt;
}

std::optional<std::string> workunit_difference(const project_state& sa, const project_state& sb) {
  return first_map_difference(
    sa.workunits, sb.workunits, [&](id_type id, const workunit_rec* x, const workunit_rec* y) {
      auto name = x ? x->name : y->name;
      auto what = presence("workunit " + std::to_string(id) + " (" + name + ")", x, y);
      return x && y ? what + " differs "
                        + json_difference(net::to_json(net::view_of(sa, *x)),
                                          net::to_json(net::view_of(sb, *y)))
                    : what;
    });
}

/// The project's own state (the project actor's): apps, users, hosts' registrations,
/// workunits, id counters, counters.
std::optional<std::string> registry_difference(const project_state& sa, const project_state& sb) {
  if (sa.name != sb.name || sa.long_name != sb.long_name || sa.index != sb.index)
    return "name or index differs (replayed '" + sa.name + "', snapshot '" + sb.name + "')";
  if (auto d = app_difference(sa, sb))
    return d;
  if (auto d = first_map_difference(sa.users, sb.users,
                                    [&](id_type id, const user_rec* x, const user_rec* y) {
                                      return entry_difference("user " + std::to_string(id), x, y);
                                    }))
    return d;
  if (auto d = first_map_difference(
        sa.hosts, sb.hosts, [&](id_type id, const host_reg* x, const host_reg* y) {
          return presence("host " + std::to_string(id) + " (registration)", x, y)
                 + (x && y ? " differs" : "");
        }))
    return d;
  if (auto d = workunit_difference(sa, sb))
    return d;
  if (sa.next_user != sb.next_user || sa.next_host != sb.next_host || sa.next_wu != sb.next_wu)
    return "the next ids differ (user/host/workunit: replayed " + std::to_string(sa.next_user) + "/"
           + std::to_string(sa.next_host) + "/" + std::to_string(sa.next_wu) + ", snapshot "
           + std::to_string(sb.next_user) + "/" + std::to_string(sb.next_host) + "/"
           + std::to_string(sb.next_wu) + ")";
  if (!(sa.counters == sb.counters))
    return "counters differ "
           + json_difference(net::to_json(cobble::summarize(sa)).at("counters"),
                             net::to_json(cobble::summarize(sb)).at("counters"));
  return std::nullopt;
}

/// The states of the project's other actors: hosts, app versions, sequences.
std::optional<std::string> actor_difference(const project_world& pa, const project_world& pb) {
  if (auto d = first_map_difference(
        pa.hosts, pb.hosts, [&](id_type id, const host_state* x, const host_state* y) {
          return entry_difference("host " + std::to_string(id) + " (state)", x, y);
        }))
    return d;
  if (auto d = first_map_difference(pa.app_versions, pb.app_versions,
                                    [&](std::uint32_t id, const app_version_state* x,
                                        const app_version_state* y) {
                                      return entry_difference("app version " + std::to_string(id),
                                                              x, y);
                                    }))
    return d;
  return first_map_difference(
    pa.sequences, pb.sequences, [&](id_type id, const sequence_state* x, const sequence_state* y) {
      auto what = presence("sequence " + std::to_string(id), x, y);
      auto app = [&](const sequence_state& st) {
        auto found = pa.project.app(st.app);
        return found ? found->name : std::string{"?"};
      };
      return x && y ? what + " differs "
                        + json_difference(net::to_json(sequence_view{*x, app(*x)}),
                                          net::to_json(sequence_view{*y, app(*y)}))
                    : what;
    });
}

/// The first difference within one project, without the "project NAME: " in front.
std::string project_difference(const project_world& pa, const project_world& pb) {
  if (auto d = registry_difference(pa.project, pb.project))
    return *d;
  if (auto d = actor_difference(pa, pb))
    return *d;
  const auto& sa = pa.project;
  const auto& sb = pb.project;
  if (sa.sequences != sb.sequences || sa.next_seq != sb.next_seq)
    return "the sequence directory differs";
  return "differs in a way this tool cannot name";
}

} // namespace

std::optional<std::string> first_difference(const world& a, const world& b) {
  if (a.seq != b.seq)
    return "the replayed state is at seq " + std::to_string(a.seq) + ", the snapshot at "
           + std::to_string(b.seq);
  if (a.projects.size() != b.projects.size())
    return "the replayed state has " + std::to_string(a.projects.size())
           + " projects, the snapshot " + std::to_string(b.projects.size());
  for (std::size_t i = 0; i < a.projects.size(); ++i) {
    const auto& pa = a.projects[i];
    const auto& pb = b.projects[i];
    if (pa == pb)
      continue;
    const auto& name = pa.project.name;
    return "project " + (name.empty() ? "#" + std::to_string(i) : name) + ": "
           + project_difference(pa, pb);
  }
  return std::nullopt;
}

} // namespace cobble::cli
