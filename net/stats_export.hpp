#pragma once
/// The statistics export for stats sites (BOINCstats, Free-DC and the like), in the format and
/// file layout of BOINC's db_dump: `tables.xml`, `user.gz`, `team.gz`, `host.gz` and the
/// id-sorted `user_id.gz`, `team_id.gz`, `host_id.gz`. Made from a world as a snapshot and the
/// events after it rebuild it (`cobble stats export`), never from the live actors. E-mail
/// addresses, account keys and passwords are never written; users and hosts carry BOINC's
/// public cross-project ids, so stats sites can add a volunteer's credit up across projects.
/// docs/web.md, "Statistics export", lists every field.
#include "actors/log.hpp"
#include "actors/state.hpp"

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cobble::net {

/// One file of the export: its name and its XML (gzipped when written, if `gzip`).
struct stats_file {
  std::string name;
  std::string xml;
  bool gzip = true;
};

/// What the export holds of a project, counted.
struct stats_counts {
  std::size_t users = 0; ///< With credit.
  std::size_t teams = 0;
  std::size_t hosts = 0;
  double total_credit = 0;
};

/// The files of one project's export at `now`: users, teams and hosts with credit, by id.
std::vector<stats_file>
stats_files(const project_world& pw, time_us now, stats_counts* counts = nullptr);

/// A host's exported CPID: md5(the client's host CPID + the owner's e-mail), as BOINC's
/// scheduler stores it; empty when the client gave none.
std::string public_host_cpid(const std::string& host_cpid, const std::string& owner_email);

/// Writes `files` into `dir` as a whole: into a sibling directory first, synced, which then
/// takes the place of `dir` (the previous export is removed), so a stats site never downloads
/// a half-written export. Writers take turns (a lock file beside `dir`): with `wait` a second
/// writer waits for the first, without it it fails at once (cobbled's periodic export, which
/// runs on the snapshotter's thread). Throws std::runtime_error naming the file on failure.
void write_stats(const std::filesystem::path& dir, const std::vector<stats_file>& files,
                 bool wait = true);

/// One project's export as written.
struct project_export {
  std::string project;
  std::filesystem::path dir;
  stats_counts counts;
};

/// Writes the export of every named project of `w` (only `only`, when given) into
/// `out`/<project>/ with write_stats (`wait` as there), at `now`. Throws std::runtime_error
/// naming what failed.
std::vector<project_export>
export_world(const world& w, const std::filesystem::path& out, time_us now,
             const std::string& only = {}, bool wait = true);

/// When the oldest of the projects' exports under `out` was written (its tables.xml); none
/// when a project of `projects` has no export yet.
std::optional<std::filesystem::file_time_type>
oldest_export(const std::filesystem::path& out, const std::vector<std::string>& projects);

/// cobbled's periodic export (docs/web.md): a reader for the snapshotter (actors/log.hpp) that
/// writes every project's export into `out`/<project>/ every `every`, from the world a
/// snapshot is made from. Its first turn keeps the previous exports' schedule: at once when
/// one of `projects` has none yet, else `every` after the oldest, so a restart neither repeats
/// nor skips one. `every` of 0: no reader.
periodic_reader
periodic_export(const std::filesystem::path& out, const std::vector<std::string>& projects,
                std::chrono::seconds every);

} // namespace cobble::net
