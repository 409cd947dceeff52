#pragma once

/// The assimilation hook and the file janitor of one data directory, as a detached actor (it
/// does blocking file I/O). For an assimilated workunit it copies the canonical result's
/// outputs to projects/<p>/results/<wu>/<open name> at once; for every finished workunit it
/// deletes the uploaded outputs, and the inputs no other workunit uses, after the project's
/// grace period, then tells the project, which records `workunit_files_deleted`.

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "storage/file_store.hpp"

#include <caf/actor_system.hpp>

#include <memory>
#include <string>
#include <vector>

namespace cobble {

/// The files of one finished workunit.
struct wu_files {
  std::string project;
  id_type wu = 0;
  std::string wu_name;
  bool assimilated = false;
  /// (stored output name, open name) of the canonical result.
  std::vector<std::pair<std::string, std::string>> canonical_outputs;
  std::vector<std::string> outputs;          ///< Every result's outputs.
  std::vector<std::string> inputs;           ///< Inputs no other unfinished workunit uses.
  double delete_after_seconds = 86400;       ///< From now.
  double input_quiet_seconds = 86400;        ///< Inputs staged again within this are kept.
};

/// Spawns the assimilator (detached) over the data directory's files.
/// Spawns the assimilator (detached) over the data directory's files; grace periods run on
/// `clk`.
assimilator_actor spawn_assimilator(caf::actor_system& sys,
                                    std::shared_ptr<storage::file_store> files, clock_ptr clk,
                                    bool detached = true);

} // namespace cobble
