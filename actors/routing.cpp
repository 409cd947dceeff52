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

const char* to_string(entity_kind x) {
  switch (x) {
    case entity_kind::project:
      return "project";
    case entity_kind::user:
      return "user";
    case entity_kind::host:
      return "host";
    case entity_kind::workunit:
      return "wu";
    case entity_kind::sequence:
      return "seq";
    case entity_kind::app:
      return "app";
    case entity_kind::team:
      return "team";
  }
  return "?";
}

std::pair<entity_kind, id_type> entity_of(const payload& p) {
  using ek = entity_kind;
  return std::visit(overload{
                      [](const ev::project_configured&) {
                        return std::pair{ek::project, id_type{0}};
                      },
                      [](const ev::user_created& x) {
                        return std::pair{ek::user, x.id};
                      },
                      [](const ev::host_registered& x) {
                        return std::pair{ek::host, x.id};
                      },
                      [](const ev::host_described& x) {
                        return std::pair{ek::host, x.id};
                      },
                      [](const ev::workunit_created& x) {
                        return std::pair{ek::workunit, x.id};
                      },
                      [](const ev::results_created& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                      [](const ev::result_dispatched& x) {
                        return std::pair{ek::workunit, x.result.wu};
                      },
                      [](const ev::result_reported& x) {
                        return std::pair{ek::workunit, x.result.wu};
                      },
                      [](const ev::result_timed_out& x) {
                        return std::pair{ek::workunit, x.result.wu};
                      },
                      [](const ev::workunit_validated& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                      [](const ev::workunit_assimilated& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                      [](const ev::workunit_failed& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                      [](const ev::workunit_files_deleted& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                      [](const ev::sequence_created& x) {
                        return std::pair{ek::sequence, x.id};
                      },
                      [](const ev::sequence_extended& x) {
                        return std::pair{ek::sequence, x.seq};
                      },
                      [](const ev::sequence_ended& x) {
                        return std::pair{ek::sequence, x.seq};
                      },
                      [](const ev::sequence_assigned& x) {
                        return std::pair{ek::sequence, x.seq};
                      },
                      [](const ev::sequence_deassigned& x) {
                        return std::pair{ek::sequence, x.seq};
                      },
                      [](const ev::sequence_element_checked& x) {
                        return std::pair{ek::sequence, x.seq};
                      },
                      [](const ev::sequence_restart_saved& x) {
                        return std::pair{ek::sequence, x.seq};
                      },
                      [](const ev::host_result_validated& x) {
                        return std::pair{ek::host, x.host};
                      },
                      [](const ev::credit_normalized&) {
                        return std::pair{ek::project, id_type{0}};
                      },
                      [](const ev::credit_imported&) {
                        return std::pair{ek::project, id_type{0}};
                      },
                      [](const ev::autoflops_sampled& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                      [](const ev::output_received& x) {
                        return std::pair{ek::workunit, x.result.wu};
                      },
                      [](const ev::app_added& x) {
                        return std::pair{ek::app, id_type{x.app.id}};
                      },
                      [](const ev::app_version_added& x) {
                        return std::pair{ek::app, id_type{x.app}};
                      },
                      [](const ev::app_version_deprecated& x) {
                        return std::pair{ek::app, id_type{x.app}};
                      },
                      [](const ev::code_sign_key_added&) {
                        return std::pair{ek::project, id_type{0}};
                      },
                      [](const ev::host_reattached& x) {
                        return std::pair{ek::host, x.host};
                      },
                      [](const ev::result_written_off& x) {
                        return std::pair{ek::workunit, x.result.wu};
                      },
                      [](const ev::result_resent& x) {
                        return std::pair{ek::workunit, x.result.wu};
                      },
                      [](const ev::user_changed& x) {
                        return std::pair{ek::user, x.id};
                      },
                      [](const ev::team_created& x) {
                        return std::pair{ek::team, x.id};
                      },
                      [](const ev::workunit_cancelled& x) {
                        return std::pair{ek::workunit, x.wu};
                      },
                    },
                    p);
}

std::vector<id_type> hosts_taken_from(const payload& p) {
  std::vector<id_type> out;
  auto add = [&](const std::vector<std::pair<id_type, std::string>>& aborted) {
    for (const auto& [h, name] : aborted)
      if (std::find(out.begin(), out.end(), h) == out.end())
        out.push_back(h);
  };
  if (auto a = std::get_if<ev::sequence_assigned>(&p))
    out.push_back(a->host);
  else if (auto d = std::get_if<ev::sequence_deassigned>(&p))
    out.push_back(d->host);
  else if (auto x = std::get_if<ev::sequence_ended>(&p))
    add(x->aborted);
  else if (auto c = std::get_if<ev::workunit_cancelled>(&p))
    add(c->aborted);
  return out;
}

std::optional<id_type> host_of(const payload& p) {
  if (auto x = std::get_if<ev::host_registered>(&p))
    return x->id;
  if (auto x = std::get_if<ev::host_described>(&p))
    return x->id;
  if (auto x = std::get_if<ev::result_dispatched>(&p))
    return x->host;
  if (auto x = std::get_if<ev::result_reported>(&p))
    return x->host;
  if (auto x = std::get_if<ev::result_timed_out>(&p))
    return x->host;
  if (auto x = std::get_if<ev::result_written_off>(&p))
    return x->host;
  if (auto x = std::get_if<ev::result_resent>(&p))
    return x->host;
  if (auto x = std::get_if<ev::host_reattached>(&p))
    return x->host;
  if (auto x = std::get_if<ev::host_result_validated>(&p))
    return x->host;
  return std::nullopt;
}

std::optional<result_ref> result_of(const payload& p) {
  if (auto x = std::get_if<ev::result_dispatched>(&p))
    return x->result;
  if (auto x = std::get_if<ev::result_reported>(&p))
    return x->result;
  if (auto x = std::get_if<ev::result_timed_out>(&p))
    return x->result;
  if (auto x = std::get_if<ev::result_written_off>(&p))
    return x->result;
  if (auto x = std::get_if<ev::result_resent>(&p))
    return x->result;
  if (auto x = std::get_if<ev::host_result_validated>(&p))
    return x->result;
  if (auto x = std::get_if<ev::output_received>(&p))
    return x->result;
  return std::nullopt;
}

bool touches(const event& e, entity_kind kind, id_type id) {
  auto [k, i] = entity_of(e.data);
  if (k == kind && i == id)
    return true;
  // A sequence's history includes everything that happened to its workunits.
  if (kind == entity_kind::sequence && k == entity_kind::workunit && sequence_of_wu(i) == id)
    return true;
  if (kind == entity_kind::host) {
    auto hs = hosts_taken_from(e.data);
    if (std::find(hs.begin(), hs.end(), id) != hs.end())
      return true;
  }
  if (kind == entity_kind::host) {
    auto h = host_of(e.data);
    if (h && *h == id)
      return true;
    if (auto x = std::get_if<ev::workunit_validated>(&e.data))
      for (const auto& v : x->verdicts)
        if (v.host == id)
          return true;
  }
  if (kind == entity_kind::workunit)
    if (auto r = result_of(e.data); r && r->wu == id)
      return true;
  if (kind == entity_kind::user) {
    if (auto x = std::get_if<ev::host_registered>(&e.data))
      return x->user == id;
    if (auto x = std::get_if<ev::host_reattached>(&e.data))
      return x->user == id;
    if (auto x = std::get_if<ev::team_created>(&e.data))
      return x->founder == id;
  }
  // An app's history includes the configurations that set its policy and versions.
  if (kind == entity_kind::app)
    if (auto x = std::get_if<ev::project_configured>(&e.data))
      return std::any_of(x->apps.begin(), x->apps.end(),
                         [&](const app_rec& a) { return a.id == id; });
  return false;
}

event_owners owners_of(const payload& p) {
  event_owners o;
  if (auto h = host_of(p))
    add_host(o, *h);
  for (auto h : hosts_taken_from(p))
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
  if (auto x = std::get_if<ev::app_version_added>(&p))
    add_version(o, x->version.id);
  return o;
}

} // namespace cobble
