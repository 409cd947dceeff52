#include "actors/assimilator.hpp"
#include "actors/project_logic_detail.hpp"

#include <algorithm>

namespace cobble {

using namespace detail;

std::size_t detail::declared_outputs(const workunit_rec& wu, const app_rec* app) {
  if (app == nullptr || (wu.sequence && wu.sequence->kind == seq_element_kind::heartbeat))
    return 0; // heartbeats upload nothing
  return app->output_names.size();
}

std::optional<project_logic::output_ref>
project_logic::output_of(std::string_view name, id_type host) const {
  // Output names are "<result name>_<i>".
  auto split = split_indexed_name(name);
  if (!split)
    return std::nullopt;
  auto [result_name, index] = *split;
  auto ref = state.parse_result_name(result_name);
  if (!ref)
    return std::nullopt;
  auto r = state.result(*ref);
  auto wu = state.workunit(ref->wu);
  auto app = wu ? state.app(wu->app) : nullptr;
  // Also a result over as timed out or written off, while its workunit can still use a late
  // report of it (late_reports): a client uploads before it reports.
  bool late = r != nullptr && r->state == result_state::over
              && (r->outcome == result_outcome::no_reply
                  || r->outcome == result_outcome::client_detached)
              && !ended_unfinished(wu->state) && !wu->files_deleted && !wu->sequence;
  if (r == nullptr || app == nullptr || (r->state != result_state::in_progress && !late)
      || (host != 0 && r->host != host) || index >= declared_outputs(*wu, app))
    return std::nullopt;
  return output_ref{*ref, static_cast<std::uint32_t>(index), r->host, app->max_output_nbytes};
}

std::optional<double> project_logic::upload_limit(std::string_view name, id_type host) const {
  if (auto out = output_of(name, host))
    return out->max_nbytes;
  return std::nullopt;
}

caf::expected<std::vector<event>>
project_logic::output_received(const std::string& name, id_type host, std::uint64_t nbytes,
                               const std::string& md5, time_us now) {
  auto out = output_of(name, host);
  if (!out)
    return caf::make_error(ec::unknown_workunit,
                           "'" + name + "' is no output of a result in progress on host "
                             + std::to_string(host));
  if (static_cast<double>(nbytes) > out->max_nbytes)
    return caf::make_error(ec::invalid_argument, name + " is over its limit of "
                                                   + std::to_string(out->max_nbytes) + " bytes");
  file_rec file{name, static_cast<double>(nbytes), md5};
  std::vector<event> events;
  const auto& arrived = *state.result(out->result)->arrived;
  if (out->index < arrived.size() && arrived[out->index] == file)
    return events; // the same content again: already recorded
  emit(events, ev::output_received{out->result, out->host, out->index, std::move(file)}, now);
  return events;
}

wu_files
project_logic::files_of(id_type wu_id, double delete_after_seconds, double quiet_seconds) const {
  wu_files out;
  out.project = state.name;
  out.wu = wu_id;
  out.delete_after_seconds = delete_after_seconds;
  out.input_quiet_seconds = quiet_seconds;
  auto wu = state.workunit(wu_id);
  if (wu == nullptr)
    return out;
  out.wu_name = wu->name;
  out.assimilated = wu->state == wu_state::assimilated;
  auto app = state.app(wu->app);
  auto n_out = app ? app->output_names.size() : 0;
  if (wu->sequence && wu->sequence->kind == seq_element_kind::heartbeat)
    n_out = 0;
  for (std::uint32_t i = 0; i < wu->results.size(); ++i) {
    auto rname = state.result_name({wu_id, i});
    for (std::size_t k = 0; k < n_out; ++k) {
      auto file = rname + "_" + std::to_string(k);
      out.outputs.push_back(file);
      if (out.assimilated && wu->canonical && *wu->canonical == i)
        out.canonical_outputs.emplace_back(file, app->output_names[k]);
    }
  }
  const seq_entry* seq = nullptr;
  if (wu->sequence)
    if (auto i = state.sequences.find(wu->sequence->seq); i != state.sequences.end())
      seq = &i->second;
  for (const auto& in : wu->params->inputs)
    if (auto r = state.input_refs.find(in.name); r != state.input_refs.end() && r->second <= 1) {
      // A restart point's state file (not one of the sequence's own inputs) is staged by the
      // assimilator only: no quiet period.
      bool restart_input = seq != nullptr
                           && std::none_of(seq->params.inputs.begin(), seq->params.inputs.end(),
                                           [&](const file_rec& f) { return f.name == in.name; });
      (restart_input ? out.staged : out.inputs).push_back(in.name);
    }
  if (wu->sequence && !wu->sequence->staged.empty()) {
    // A full state upload of a sequence: staged as inputs and kept while it may be the
    // restart point; once released, deleted unless something else uses the same content.
    out.keep = wu->sequence->released == 0;
    if (out.keep && out.assimilated && wu->canonical && app && *wu->canonical < wu->results.size())
      for (auto& f : state_files_of(wu->results[*wu->canonical].report->outputs,
                                    *wu->results[*wu->canonical].arrived,
                                    state.result_name({wu_id, *wu->canonical}), app->output_names))
        out.state_files.emplace_back(f.output, f.staged);
    if (!out.keep)
      for (const auto& name : wu->sequence->staged)
        if (!state.state_file_in_use(*wu, name)
            && std::find(out.inputs.begin(), out.inputs.end(), name) == out.inputs.end()
            && std::find(out.staged.begin(), out.staged.end(), name) == out.staged.end())
          out.staged.push_back(name);
  }
  return out;
}

std::vector<id_type> project_logic::released_by(const event& e) const {
  std::vector<id_type> out;
  id_type seq = 0;
  if (auto saved = std::get_if<ev::sequence_restart_saved>(&e.data))
    seq = saved->seq;
  else if (auto gone = std::get_if<ev::sequence_deassigned>(&e.data))
    seq = gone->seq;
  else if (auto ended = std::get_if<ev::sequence_ended>(&e.data))
    seq = ended->seq;
  if (seq == 0)
    return out;
  for (std::uint32_t n = 0; n < max_sequence_wus; ++n) {
    auto wu = state.workunit(sequence_wu_id(seq, n));
    if (wu == nullptr)
      break;
    if (wu->sequence && !wu->sequence->staged.empty() && !wu->files_deleted
        && wu->sequence->released == std::max<time_us>(e.time, 1))
      out.push_back(wu->id);
  }
  return out;
}

std::vector<event>
project_logic::files_deleted(id_type wu, std::vector<std::string> inputs, time_us now) {
  std::vector<event> out;
  auto w = state.workunit(wu);
  if (w == nullptr || w->files_deleted)
    return out;
  emit(out, ev::workunit_files_deleted{wu, std::move(inputs)}, now);
  return out;
}

} // namespace cobble
