#include "actors/routing.hpp"

#include "actors/rpc.hpp"

#include <algorithm>

namespace cobble {

namespace {

void add_host(event_owners& o, id_type h) {
  if (std::find(o.hosts.begin(), o.hosts.end(), h) == o.hosts.end())
    o.hosts.push_back(h);
}

void add_version(event_owners& o, std::uint32_t v) {
  if (std::find(o.app_versions.begin(), o.app_versions.end(), v) == o.app_versions.end())
    o.app_versions.push_back(v);
}

} // namespace

event_owners owners_of(const payload& p) {
  event_owners o;
  if (auto h = host_of(p))
    add_host(o, *h);
  for (auto h : hosts_of_sequence_event(p))
    add_host(o, h);
  auto [kind, id] = entity_of(p);
  if (kind == entity_kind::sequence)
    o.sequence = id;
  else if (kind == entity_kind::workunit)
    o.sequence = sequence_of_wu(id);
  if (auto x = std::get_if<ev::workunit_validated>(&p))
    for (const auto& v : x->verdicts)
      add_version(o, v.app_version_id);
  if (auto x = std::get_if<ev::credit_normalized>(&p))
    for (const auto& v : x->versions)
      add_version(o, v.id);
  if (auto x = std::get_if<ev::project_configured>(&p))
    for (const auto& a : x->apps)
      for (const auto& v : a.versions)
        add_version(o, v.id);
  return o;
}

} // namespace cobble
