#include "actors/error.hpp"
#include "actors/routing.hpp"
#include "actors/snapshot_load.hpp"
#include "actors/state.hpp"
#include "storage/codec.hpp"
#include "storage/event_store.hpp"
#include "storage/snapshot_stream.hpp"

#include <string>

namespace cobble {

// The world: replay routes each event to its owners (owners_of), and the whole snapshot
// codec (encode; decode from memory or from a stream being read; load from the store).

void apply(world& w, const event& e) {
  if (e.project >= w.projects.size())
    w.projects.resize(e.project + 1);
  auto& pw = w.projects[e.project];
  pw.project.index = e.project;
  // The project first: a host applies a result event under the result's name, which the
  // project knows.
  apply(pw.project, e);
  auto owners = owners_of(e.data);
  for (auto h : owners.hosts) {
    auto i = pw.hosts.find(h);
    if (i == pw.hosts.end()) {
      if (!std::holds_alternative<ev::host_registered>(e.data))
        continue;
      i = pw.hosts.emplace(h, host_state{}).first;
    }
    std::string name;
    if (auto r = result_of(e.data))
      name = pw.project.result_name(*r);
    apply(i->second, e, name, pw.project.credit);
  }
  if (owners.sequence != 0
      && (pw.sequences.count(owners.sequence)
          || std::holds_alternative<ev::sequence_created>(e.data)))
    apply(pw.sequences[owners.sequence], e);
  for (auto id : owners.app_versions) {
    auto& av = pw.app_versions[id];
    av.id = id;
    apply(av, e, pw.project.credit);
  }
  if (e.seq != 0)
    w.seq = e.seq;
}

std::string encode_snapshot(const world& w) {
  std::string out;
  storage::writer wr{out};
  wr.put_u8(snapshot_version);
  storage::encoder enc{wr};
  enc.put(w);
  return out;
}

std::uint8_t snapshot_format(std::string_view blob) {
  return blob.empty() ? 0 : static_cast<std::uint8_t>(blob.front());
}

std::optional<world> decode_snapshot(std::string_view blob) {
  storage::reader r{blob};
  return decode_snapshot(r);
}

std::optional<world> decode_snapshot(storage::reader& r) {
  if (r.get_u8() != snapshot_version || r.failed())
    return std::nullopt;
  world w;
  storage::decoder dec{r};
  dec.get(w);
  if (r.failed() || !r.at_end())
    return std::nullopt;
  for (auto& pw : w.projects)
    rebuild_indices(pw.project);
  return w;
}

caf::expected<std::optional<world>>
load_snapshot(const storage::event_store& store, std::uint64_t seq) {
  auto stream = store.stream_snapshot(seq);
  if (!stream)
    return std::move(stream.error());
  auto& st = **stream;
  // The format byte first: a snapshot of an older format (written before an upgrade) is not
  // decoded at all. (Checked for corruption all the same, as reading it used to.)
  if (st.wait_for(1) >= 1) {
    auto format = static_cast<std::uint8_t>(*st.make_reader().get_raw(1).data());
    if (format != 0 && format < snapshot_version) {
      if (auto err = st.finish())
        return err;
      return std::optional<world>{};
    }
  }
  auto r = st.make_reader();
  auto decoded = decode_snapshot(r);
  // Whatever was decoded counts only once every chunk passed its checks.
  if (auto err = st.finish())
    return err;
  if (!decoded)
    return caf::make_error(ec::corrupt_log,
                           "snapshot at seq " + std::to_string(seq) + " does not decode");
  return std::optional<world>{std::move(*decoded)};
}

} // namespace cobble
