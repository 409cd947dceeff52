#include "actors/snapshot_load.hpp"

#include "actors/error.hpp"
#include "storage/codec.hpp"
#include "storage/event_store.hpp"
#include "storage/snapshot_stream.hpp"

#include <string>

namespace cobble {

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
