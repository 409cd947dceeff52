#include "ledger.hpp"

#include "actors/event_codec.hpp"
#include "actors/events.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace cobble::bench {

void ledger::record_dispatch(const std::string& result, id_type host) {
  if (!dispatched.emplace(result, host).second)
    repeated_dispatches.push_back(result);
}

void ledger::merge(const ledger& other) {
  hosts.insert(other.hosts.begin(), other.hosts.end());
  for (const auto& [name, host] : other.dispatched)
    record_dispatch(name, host);
  reported.insert(other.reported.begin(), other.reported.end());
  repeated_dispatches.insert(repeated_dispatches.end(), other.repeated_dispatches.begin(),
                             other.repeated_dispatches.end());
}

log_facts collect(const storage::event_store& store, std::uint16_t project) {
  log_facts f;
  std::string failure;
  auto err = store.scan(1, store.last_seq(), [&](const storage::event_record& r) {
    ++f.events;
    auto e = from_record(r);
    if (!e) {
      failure = "event " + std::to_string(r.seq) + " does not decode";
      return false;
    }
    if (e->project != project)
      return true;
    std::visit(overload{
                 [&](const ev::host_registered& x) { f.hosts.insert(x.id); },
                 [&](const ev::workunit_created& x) { f.wu_by_name.emplace(x.name, x.id); },
                 [&](const ev::result_dispatched& x) { f.dispatches[x.result].push_back(x.host); },
                 [&](const ev::result_reported& x) { f.reports[x.result].push_back(x.host); },
                 [](const auto&) {},
               },
               e->data);
    return true;
  });
  if (err)
    throw std::runtime_error("reading the log failed: " + caf::to_string(err));
  if (!failure.empty())
    throw std::runtime_error(failure);
  return f;
}

namespace {

std::optional<result_ref> resolve(const log_facts& f, const std::string& name) {
  auto split = split_indexed_name(name);
  if (!split)
    return std::nullopt;
  auto it = f.wu_by_name.find(std::string{split->first});
  if (it == f.wu_by_name.end())
    return std::nullopt;
  return result_ref{it->second, split->second};
}

bool has_host(const std::map<result_ref, std::vector<id_type>>& m, std::optional<result_ref> r,
              id_type host) {
  if (!r)
    return false;
  auto it = m.find(*r);
  return it != m.end() && std::find(it->second.begin(), it->second.end(), host) != it->second.end();
}

void note(check_result& out, std::string what) {
  if (out.problems.size() < 10)
    out.problems.push_back(std::move(what));
}

} // namespace

check_result check(const ledger& l, const log_facts& f) {
  check_result out;
  out.events = f.events;
  for (auto id : l.hosts) {
    ++out.hosts_checked;
    if (!f.hosts.count(id)) {
      ++out.hosts_missing;
      note(out,
           "host " + std::to_string(id) + " was acknowledged but is not registered in the log");
    }
  }
  for (const auto& [name, host] : l.dispatched) {
    ++out.dispatches_checked;
    if (!has_host(f.dispatches, resolve(f, name), host)) {
      ++out.dispatches_missing;
      note(out, "result " + name + " was acknowledged as sent to host " + std::to_string(host)
                  + " but the log has no such dispatch");
    }
  }
  for (const auto& [name, host] : l.reported) {
    ++out.reports_checked;
    if (!has_host(f.reports, resolve(f, name), host)) {
      ++out.reports_missing;
      note(out, "result " + name + " was acknowledged as reported by host " + std::to_string(host)
                  + " but the log has no such report");
    }
  }
  for (const auto& [ref, hosts] : f.dispatches) {
    out.log_dispatches += hosts.size();
    if (hosts.size() > 1) {
      ++out.double_dispatches;
      note(out, "workunit " + std::to_string(ref.wu) + " result " + std::to_string(ref.index)
                  + " was dispatched " + std::to_string(hosts.size()) + " times");
    }
  }
  out.repeated_dispatches = l.repeated_dispatches.size();
  for (const auto& name : l.repeated_dispatches)
    note(out, "result " + name + " came in a reply twice");
  return out;
}

} // namespace cobble::bench
