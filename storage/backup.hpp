#pragma once

/// A backup of a live data directory (`cobble backup DIR`, POST /api/backup): the event log
/// as one consistent checkpoint (event_store::checkpoint) and the data directory's other
/// files (secrets, code-signing keys, the projects' input and output files) beside it, in a
/// new directory that `cobbled --data-dir` starts from as it is. Blocking file I/O: callers
/// run it on a thread of their own, never an Asio thread or an actor.

#include "storage/event_store.hpp"

#include <caf/expected.hpp>

#include <cstdint>
#include <filesystem>

namespace cobble::storage {

/// What a backup holds.
struct backup_summary {
  std::uint64_t last_seq = 0; ///< The newest event in the backup.
  std::uint64_t files = 0;    ///< Files besides the event log, copied or linked.
  std::uint64_t bytes = 0;    ///< Their bytes.
  std::uint64_t linked = 0;   ///< Of them, hard-linked (immutable inputs on the same disk).
};

/// Backs up `data_dir`, whose event log `store` is, into `target`, which must not exist
/// (ec::invalid_argument; also when it lies inside `data_dir`). Built in a sibling directory
/// `<target>.partial` and renamed into place when whole: a failed backup leaves nothing
/// under `target` (and removes its partial copy). The event log is copied first, at one
/// moment; the files after it: an input or output that arrives meanwhile is copied too (and
/// unused by the backup's log), one that the assimilator deletes meanwhile is missing from
/// it. Left out: `stats/` (written again within the export period) and `admin_url` (written
/// at every start). Inputs in `projects/*/download/` are hard-linked when on the same file
/// system (they never change once stored); everything else is copied and synced.
caf::expected<backup_summary>
back_up(const event_store& store, const std::filesystem::path& data_dir,
        const std::filesystem::path& target);

} // namespace cobble::storage
