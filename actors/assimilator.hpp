#pragma once

/// The assimilation hook and the file janitor of one data directory, as a detached actor (it
/// does blocking file I/O). For an assimilated workunit it copies the canonical result's
/// outputs to projects/<p>/results/<wu>/<open name> at once; for every finished workunit it
/// deletes the uploaded outputs, and the inputs no other workunit uses, after the project's
/// grace period, then tells the project, which records `workunit_files_deleted`.

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "actors/types.hpp"
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
  std::vector<std::string> outputs; ///< Every result's outputs.
  std::vector<std::string> inputs;  ///< Inputs no other unfinished workunit uses.
  /// A sequence element's state files: staged at once from these canonical outputs as
  /// content-addressed inputs "in_<md5>" (uploaded output, staged file with md5 and size).
  std::vector<std::pair<std::string, file_rec>> state_files;
  /// Staged state files to delete with the workunit (released and used by nothing else).
  std::vector<std::string> staged;
  bool keep = false;                   ///< Delete nothing yet (a kept restart point).
  double delete_after_seconds = 86400; ///< From now.
  double input_quiet_seconds = 86400;  ///< Inputs staged again within this are kept.
};

/// Spawns the assimilator (detached) over the data directory's files; grace periods run on
/// `clk`.
assimilator_actor
spawn_assimilator(caf::actor_system& sys, std::shared_ptr<storage::file_store> files, clock_ptr clk,
                  bool detached = true);

} // namespace cobble
