#include "actors/events.hpp"

#include "storage/codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace cobble {

namespace {

// Decodes the alternative whose kind matches, by walking the variant's alternatives.
template <std::size_t I = 0>
bool decode_payload(std::uint16_t kind, storage::decoder& dec, payload& out) {
  if constexpr (I < std::variant_size_v<payload>) {
    using T = std::variant_alternative_t<I, payload>;
    if (T::kind == kind) {
      if (dec.version == 0 || dec.version > payload_version_of<T>())
        return false;
      T x{};
      dec.get(x);
      out = std::move(x);
      return true;
    }
    return decode_payload<I + 1>(kind, dec, out);
  } else {
    return false;
  }
}

template <std::size_t I = 0>
const char* name_of_kind(std::uint16_t kind) {
  static constexpr const char* names[]
    = {"project_configured",       "user_created",           "host_registered",
       "host_described",           "workunit_created",       "results_created",
       "result_dispatched",        "result_reported",        "result_timed_out",
       "workunit_validated",       "workunit_assimilated",   "workunit_failed",
       "workunit_files_deleted",   "sequence_created",       "sequence_extended",
       "sequence_ended",           "sequence_assigned",      "sequence_deassigned",
       "sequence_element_checked", "sequence_restart_saved", "host_result_validated",
       "credit_normalized",        "credit_imported",        "autoflops_sampled"};
  static_assert(std::size(names) == std::variant_size_v<payload>);
  if (kind >= 1 && kind <= std::size(names))
    return names[kind - 1];
  return "unknown";
}

// Kinds are the variant's order + 1; this keeps them from drifting apart.
template <std::size_t... Is>
constexpr bool kinds_match(std::index_sequence<Is...>) {
  return ((std::variant_alternative_t<Is, payload>::kind == Is + 1) && ...);
}
static_assert(kinds_match(std::make_index_sequence<std::variant_size_v<payload>>{}),
              "event kinds must equal their position in the payload variant + 1");

} // namespace

time_us seconds_to_us(double s) {
  if (!(s == s))
    return 0;
  double us = s * 1e6;
  if (us >= static_cast<double>(std::numeric_limits<time_us>::max()))
    return std::numeric_limits<time_us>::max();
  if (us <= static_cast<double>(std::numeric_limits<time_us>::min()))
    return std::numeric_limits<time_us>::min();
  return static_cast<time_us>(us);
}

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
  }
  return "?";
}

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

std::uint16_t kind_of(const payload& p) {
  return std::visit([](const auto& x) { return std::decay_t<decltype(x)>::kind; }, p);
}

namespace {

template <std::size_t I = 0>
std::uint8_t version_of_kind(std::uint16_t kind) {
  if constexpr (I < std::variant_size_v<payload>) {
    using T = std::variant_alternative_t<I, payload>;
    if (T::kind == kind)
      return payload_version_of<T>();
    return version_of_kind<I + 1>(kind);
  } else {
    return 0;
  }
}

} // namespace

std::uint8_t payload_version(std::uint16_t kind) {
  return version_of_kind(kind);
}

const char* kind_name(std::uint16_t kind) {
  return name_of_kind(kind);
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
                    },
                    p);
}

std::vector<id_type> hosts_of_sequence_event(const payload& p) {
  std::vector<id_type> out;
  if (auto a = std::get_if<ev::sequence_assigned>(&p))
    out.push_back(a->host);
  else if (auto d = std::get_if<ev::sequence_deassigned>(&p))
    out.push_back(d->host);
  else if (auto x = std::get_if<ev::sequence_ended>(&p))
    for (const auto& [h, name] : x->aborted)
      if (std::find(out.begin(), out.end(), h) == out.end())
        out.push_back(h);
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
  if (auto x = std::get_if<ev::host_result_validated>(&p))
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
    auto hs = hosts_of_sequence_event(e.data);
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
  if (kind == entity_kind::user)
    if (auto x = std::get_if<ev::host_registered>(&e.data))
      return x->user == id;
  return false;
}

storage::event_record to_record(const event& e) {
  storage::event_record r;
  r.seq = e.seq;
  r.time_us = e.time;
  r.kind = kind_of(e.data);
  auto [k, id] = entity_of(e.data);
  r.entity_kind = static_cast<std::uint8_t>(k);
  r.entity_id = id;
  r.project = e.project;
  storage::writer w{r.payload};
  std::visit(
    [&](const auto& x) {
      auto version = payload_version_of<std::decay_t<decltype(x)>>();
      w.put_u8(version);
      storage::encoder enc{w, version};
      enc.put(x);
    },
    e.data);
  return r;
}

std::optional<event> from_record(const storage::event_record& r) {
  storage::reader rd{r.payload};
  auto version = rd.get_u8();
  if (rd.failed() || version == 0)
    return std::nullopt;
  event e;
  e.seq = r.seq;
  e.time = r.time_us;
  e.project = r.project;
  storage::decoder dec{rd};
  dec.version = version;
  if (!decode_payload(r.kind, dec, e.data) || rd.failed() || !rd.at_end())
    return std::nullopt;
  return e;
}

std::string describe(const event& e) {
  auto [k, id] = entity_of(e.data);
  std::string head = fmt::format("#{} {:.3f} p{} {} {}:{}", e.seq, us_to_seconds(e.time), e.project,
                                 kind_name(kind_of(e.data)), to_string(k), id);
  std::string detail = std::visit(
    overload{
      [](const ev::project_configured& x) {
        return fmt::format("name={} apps={}", x.name, x.apps.size());
      },
      [](const ev::user_created& x) { return fmt::format("name={}", x.name); },
      [](const ev::host_registered& x) {
        return fmt::format("user={} ncpus={} fpops={:g}", x.user, x.info.p_ncpus, x.info.p_fpops);
      },
      [](const ev::host_described& x) {
        return fmt::format("ncpus={} fpops={:g}", x.info.p_ncpus, x.info.p_fpops);
      },
      [](const ev::workunit_created& x) {
        return fmt::format("name={} app={} results={} by={}", x.name, x.app, x.n_results,
                           x.submitter);
      },
      [](const ev::results_created& x) {
        return fmt::format("count={} reason={}{}", x.count, x.reason, x.check ? " CHECK" : "");
      },
      [](const ev::result_dispatched& x) {
        return fmt::format("result={} host={} deadline={:.0f} version={}", x.result.index, x.host,
                           us_to_seconds(x.deadline), x.version.app_version_id);
      },
      [](const ev::result_reported& x) {
        return fmt::format("result={} host={} success={} exit={} elapsed={:g} aus={:g}{}{}",
                           x.result.index, x.host, x.report.success, x.report.exit_status,
                           x.report.elapsed, reported_app_units(x.report),
                           (x.report.flags & (flag_bad_elapsed | flag_bad_cpu)) ? " FLAGGED" : "",
                           (x.report.flags & flag_suspect) ? " SUSPECT" : "");
      },
      [](const ev::result_timed_out& x) {
        return fmt::format("result={} host={}", x.result.index, x.host);
      },
      [](const ev::workunit_validated& x) {
        std::string v;
        for (const auto& d : x.verdicts)
          v += fmt::format(" {}:{}", d.index, d.valid ? "valid" : "invalid");
        double granted = 0;
        for (const auto& c : x.credit)
          granted = std::max(granted, c.granted);
        return fmt::format("canonical={}{}{}",
                           x.canonical ? std::to_string(*x.canonical) : std::string{"-"}, v,
                           x.credit.empty() ? std::string{}
                                            : fmt::format(" granted={:g}", granted));
      },
      [](const ev::workunit_assimilated& x) { return fmt::format("canonical={}", x.canonical); },
      [](const ev::workunit_failed& x) { return fmt::format("reason={}", x.reason); },
      [](const ev::workunit_files_deleted& x) {
        return fmt::format("inputs_deleted={}", x.inputs.size());
      },
      [](const ev::sequence_created& x) {
        return fmt::format("name={} app={} elements={} replicas={} max_result_time={:g} by={}",
                           x.name, x.app, x.elements.size(), x.replicas, x.max_result_time, x.by);
      },
      [](const ev::sequence_extended& x) {
        return fmt::format("elements={} by={}", x.elements.size(), x.by);
      },
      [](const ev::sequence_ended& x) {
        return fmt::format("cancelled={} reason={} by={}", x.cancelled.size(), x.reason, x.by);
      },
      [](const ev::sequence_assigned& x) {
        return fmt::format("replica={} host={} by={}", x.replica, x.host, x.by);
      },
      [](const ev::sequence_deassigned& x) {
        return fmt::format("replica={} host={} restart={} dead={} state_files={} reason={} by={}",
                           x.replica, x.host, x.restart, x.dead.size(), x.restart_inputs.size(),
                           x.reason, x.by);
      },
      [](const ev::sequence_restart_saved& x) {
        std::string files;
        for (std::size_t i = 0; i < x.files.size(); ++i)
          files += fmt::format("{}{}={}", i ? "," : "",
                               i < x.open_names.size() ? x.open_names[i] : "?", x.files[i].name);
        return fmt::format("replica={} position={} wu={} files={}", x.replica, x.position, x.wu,
                           files);
      },
      [](const ev::sequence_element_checked& x) {
        return fmt::format("position={} {}", x.position, x.agree ? "agree" : "DISAGREE");
      },
      [](const ev::host_result_validated& x) {
        return fmt::format("result={}_{} version={} valid={} pfc/E={:g} et/E={:g}{} granted={:g}",
                           x.result.wu, x.result.index, version_label(x.app_version_id), x.valid,
                           x.pfc_sample, x.et_sample, x.cheat ? " CHEAT" : "", x.granted);
      },
      [](const ev::credit_normalized& x) {
        std::string v;
        for (const auto& s : x.versions)
          v += fmt::format(" v{}:pfc={:g}/n={}/scale={:g}", s.id, s.pfc.avg, s.pfc.n, s.scale);
        return fmt::format("app={} min_avg_pfc={:g}{}", x.app, x.min_avg_pfc, v);
      },
      [](const ev::credit_imported& x) {
        return fmt::format("source={} records={}", x.source, x.records.size());
      },
      [](const ev::autoflops_sampled& x) {
        std::string v;
        for (const auto& s : x.samples)
          v += fmt::format(" {}:{:g}", s.gpu ? "gpu" : "cpu", s.value);
        return fmt::format("app={} predicted={:g} actual={:g} raw_flops_per_au:{}", x.app,
                           x.predicted, x.actual, v.empty() ? std::string{" -"} : v);
      },
    },
    e.data);
  return head + " " + detail;
}

} // namespace cobble
