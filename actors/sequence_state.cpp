#include "actors/sequence_state.hpp"

#include <algorithm>

namespace cobble {

const char* to_string(seq_element_status x) {
  switch (x) {
    case seq_element_status::unsent:
      return "unsent";
    case seq_element_status::in_progress:
      return "in_progress";
    case seq_element_status::success:
      return "success";
    case seq_element_status::error:
      return "error";
    case seq_element_status::timed_out:
      return "timed_out";
    case seq_element_status::cancelled:
      return "cancelled";
  }
  return "?";
}

const char* to_string(seq_check x) {
  switch (x) {
    case seq_check::pending:
      return "pending";
    case seq_check::agree:
      return "agree";
    case seq_check::disagree:
      return "disagree";
  }
  return "?";
}

std::uint32_t sequence_state::length() const {
  return replicas.empty() ? 0 : static_cast<std::uint32_t>(replicas.front().chain.size());
}

const seq_element_state* sequence_state::element(id_type wu) const {
  return const_cast<sequence_state*>(this)->element(wu);
}

seq_element_state* sequence_state::element(id_type wu) {
  for (auto& r : replicas)
    for (auto& el : r.chain)
      if (el.wu == wu)
        return &el;
  for (auto& b : dead_branches)
    for (auto& el : b.elements)
      if (el.wu == wu)
        return &el;
  return nullptr;
}

int sequence_state::replica_of(id_type host) const {
  if (host == 0)
    return -1;
  for (std::size_t i = 0; i < replicas.size(); ++i)
    if (replicas[i].host == host)
      return static_cast<int>(i);
  return -1;
}

std::uint32_t restart_position(const seq_replica& r) {
  std::uint32_t restart = 0;
  for (const auto& el : r.chain) {
    if (el.status != seq_element_status::success)
      break;
    if (el.kind == seq_element_kind::state && el.valid)
      restart = el.position;
  }
  return restart;
}

std::vector<staged_state_file>
state_files_of(const std::vector<file_rec>& reported, const std::vector<file_rec>& arrived,
               const std::string& result_name, const std::vector<std::string>& output_names) {
  const bool digests = std::any_of(arrived.begin(), arrived.end(),
                                   [](const file_rec& f) { return !f.name.empty(); });
  const auto& outputs = digests ? arrived : reported;
  std::vector<staged_state_file> out;
  auto prefix = result_name + "_";
  for (const auto& f : outputs) {
    if (f.name.size() <= prefix.size() || f.name.compare(0, prefix.size(), prefix) != 0)
      continue;
    auto index = f.name.substr(prefix.size());
    if (index.empty() || index.size() > 4
        || !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    auto i = static_cast<std::size_t>(std::stoul(index));
    bool md5_ok = f.md5.size() == 32 && std::all_of(f.md5.begin(), f.md5.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                  });
    if (i >= output_names.size() || !md5_ok || !(f.nbytes >= 0))
      continue;
    out.push_back(
      staged_state_file{f.name, file_rec{"in_" + f.md5, f.nbytes, f.md5}, output_names[i]});
  }
  return out;
}

namespace {

seq_element_state from_rec(const seq_element_rec& x) {
  seq_element_state el;
  el.wu = x.wu;
  el.name = x.name;
  el.position = x.position;
  el.kind = x.kind;
  return el;
}

void update_links(seq_replica& r) {
  auto n = static_cast<std::uint32_t>(r.chain.size());
  r.first_unvalidated = n + 1;
  for (const auto& el : r.chain)
    if (!el.valid) {
      r.first_unvalidated = el.position;
      break;
    }
  r.first_undispatched = n + 1;
  for (const auto& el : r.chain)
    if (el.status == seq_element_status::unsent) {
      r.first_undispatched = el.position;
      break;
    }
}

void add_elements(sequence_state& s, const std::vector<seq_element_rec>& xs) {
  for (const auto& x : xs) {
    if (x.replica >= s.replicas.size() || x.position == 0)
      continue;
    auto& chain = s.replicas[x.replica].chain;
    if (x.position == chain.size() + 1)
      chain.push_back(from_rec(x));
    else if (x.position <= chain.size())
      chain[x.position - 1] = from_rec(x);
    ++s.wus_made;
  }
  if (s.replicas.size() > 1)
    s.checks.resize(s.length(), seq_check::pending);
  for (auto& r : s.replicas)
    update_links(r);
}

} // namespace

void apply(sequence_state& s, const event& e) {
  auto relink = [&](id_type wu) {
    for (auto& r : s.replicas)
      for (const auto& el : r.chain)
        if (el.wu == wu) {
          update_links(r);
          return;
        }
  };
  std::visit(
    overload{
      [&](const ev::sequence_created& x) {
        s = sequence_state{};
        s.id = x.id;
        s.name = x.name;
        s.app = x.app;
        s.max_result_time = x.max_result_time;
        s.accept_all = x.accept_all;
        s.params = x.params;
        s.created_by = x.by;
        s.created = e.time;
        s.replicas.resize(std::max<std::uint8_t>(x.replicas, 1));
        add_elements(s, x.elements);
      },
      [&](const ev::sequence_extended& x) { add_elements(s, x.elements); },
      [&](const ev::sequence_ended& x) {
        s.ended = true;
        s.ended_at = e.time;
        s.end_reason = x.reason;
        s.ended_by = x.by;
        for (auto& r : s.replicas)
          r.host = 0;
        for (auto wu : x.cancelled)
          if (auto el = s.element(wu); el
                                       && (el->status == seq_element_status::unsent
                                           || el->status == seq_element_status::in_progress))
            el->status = seq_element_status::cancelled;
        for (auto& r : s.replicas)
          update_links(r);
      },
      [&](const ev::sequence_assigned& x) {
        if (x.replica < s.replicas.size()) {
          s.replicas[x.replica].host = x.host;
          s.replicas[x.replica].assigned = e.time;
        }
      },
      [&](const ev::sequence_deassigned& x) {
        if (x.replica >= s.replicas.size())
          return;
        auto& r = s.replicas[x.replica];
        if (r.host == x.host)
          r.host = 0;
        seq_branch b;
        b.number = static_cast<std::uint32_t>(s.dead_branches.size() + 1);
        b.replica = x.replica;
        b.host = x.host;
        b.time = e.time;
        b.reason = x.reason;
        b.by = x.by;
        b.restart = x.restart;
        for (auto wu : x.dead) {
          auto it = std::find_if(r.chain.begin(), r.chain.end(),
                                 [&](const seq_element_state& el) { return el.wu == wu; });
          if (it == r.chain.end())
            continue;
          auto dead = *it;
          if (dead.status == seq_element_status::unsent
              || dead.status == seq_element_status::in_progress)
            dead.status = seq_element_status::cancelled;
          if (dead.position >= 1 && dead.position <= s.checks.size())
            s.checks[dead.position - 1] = seq_check::pending;
          b.elements.push_back(std::move(dead));
        }
        if (!b.elements.empty())
          s.dead_branches.push_back(std::move(b));
        add_elements(s, x.replacements);
      },
      [&](const ev::sequence_element_checked& x) {
        if (x.position >= 1 && x.position <= s.checks.size())
          s.checks[x.position - 1] = x.agree ? seq_check::agree : seq_check::disagree;
      },
      [&](const ev::sequence_restart_saved& x) {
        if (x.replica < s.replicas.size())
          s.replicas[x.replica].saved = std::max(s.replicas[x.replica].saved, x.position);
      },
      [&](const ev::result_dispatched& x) {
        if (auto el = s.element(x.result.wu); el && el->status == seq_element_status::unsent) {
          el->status = seq_element_status::in_progress;
          el->host = x.host;
          el->sent = e.time;
          el->deadline = x.deadline;
          relink(x.result.wu);
        }
      },
      [&](const ev::result_reported& x) {
        if (auto el = s.element(x.result.wu);
            el && el->status == seq_element_status::in_progress && el->host == x.host) {
          el->status = x.report.success ? seq_element_status::success : seq_element_status::error;
          el->received = e.time;
          el->elapsed = x.report.elapsed;
          el->outputs = x.report.outputs;
        }
      },
      [&](const ev::result_timed_out& x) {
        if (auto el = s.element(x.result.wu); el && el->status == seq_element_status::in_progress)
          el->status = seq_element_status::timed_out;
      },
      [&](const ev::output_received& x) {
        if (auto el = s.element(x.result.wu); el && el->host == x.host)
          set_received(el->arrived, x.index, x.file);
      },
      [&](const ev::workunit_validated& x) {
        auto el = s.element(x.wu);
        if (el == nullptr || !x.canonical)
          return;
        el->valid = true;
        relink(x.wu);
      },
      [](const auto&) {},
    },
    e.data);
}

} // namespace cobble
