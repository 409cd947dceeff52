#include "storage/backup.hpp"

#include "storage/error.hpp"
#include "storage/posix_file.hpp"

#include <algorithm>
#include <system_error>
#include <vector>

namespace cobble::storage {

namespace fs = std::filesystem;

namespace {

/// The top-level entries of a data directory a backup leaves out or makes otherwise.
bool left_out(const std::string& name) {
  return name == "log" || name == "stats" || name == "admin_url";
}

/// True when `inner` is `outer` or lies under it (both absolute and normal).
bool inside(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

/// Copies the tree `from` into `to` (which exists): inputs are hard-linked where possible.
caf::error copy_tree(const fs::path& from, const fs::path& to, backup_summary& summary) {
  std::error_code err;
  for (fs::recursive_directory_iterator it{from, err}, end; !err && it != end; it.increment(err)) {
    auto relative = it->path().lexically_relative(from);
    auto dest = to / relative;
    auto status = it->symlink_status(err);
    if (err)
      break;
    if (fs::is_directory(status)) {
      fs::create_directory(dest, err);
      if (err)
        return posix_error("create directory", dest, err);
      continue;
    }
    if (!fs::is_regular_file(status))
      continue; // sockets, links: nothing the server keeps
    auto size = fs::file_size(it->path(), err);
    if (err)
      return posix_error("size of", it->path(), err);
    bool input = it->path().parent_path().filename() == "download";
    if (input) {
      fs::create_hard_link(it->path(), dest, err);
      if (!err) {
        ++summary.files;
        ++summary.linked;
        summary.bytes += size;
        continue;
      }
      err.clear();
    }
    fs::copy_file(it->path(), dest, err);
    if (err)
      return posix_error("copy " + it->path().string() + " to", dest, err);
    if (auto e = sync_file(dest))
      return e;
    ++summary.files;
    summary.bytes += size;
  }
  if (err)
    return posix_error("read directory", from, err);
  return {};
}

/// Syncs every directory of the tree `dir`, deepest first, so that the entries survive a crash.
caf::error sync_tree(const fs::path& dir) {
  std::error_code err;
  std::vector<fs::path> dirs{dir};
  for (fs::recursive_directory_iterator it{dir, err}, end; !err && it != end; it.increment(err))
    if (it->is_directory(err))
      dirs.push_back(it->path());
  if (err)
    return posix_error("read directory", dir, err);
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d)
    if (auto e = sync_dir(*d))
      return e;
  return {};
}

} // namespace

caf::expected<backup_summary>
back_up(const event_store& store, const fs::path& data_dir, const fs::path& target) {
  std::error_code err;
  auto data = fs::weakly_canonical(fs::absolute(data_dir), err);
  auto dest = err ? fs::path{} : fs::weakly_canonical(fs::absolute(target), err);
  if (err)
    return posix_error("resolve", target, err);
  if (inside(dest, data))
    return make_error(ec::invalid_argument, "backup into " + dest.string()
                                              + ": it lies inside the data directory "
                                              + data.string() + "; choose a directory outside it");
  if (fs::exists(dest, err) || err)
    return make_error(ec::invalid_argument,
                      "backup into " + dest.string()
                        + ": it exists already; a backup goes into a new directory");
  if (!fs::is_directory(dest.parent_path(), err))
    return make_error(ec::invalid_argument, "backup into " + dest.string() + ": "
                                              + dest.parent_path().string() + " is no directory");
  auto partial = dest;
  partial += ".partial";
  fs::remove_all(partial, err); // what a backup that crashed left
  auto failed = [&partial](caf::error e) {
    std::error_code ignored;
    fs::remove_all(partial, ignored);
    return e;
  };
  fs::create_directory(partial, err);
  if (err)
    return failed(posix_error("create directory", partial, err));

  backup_summary summary;
  if (auto e = store.checkpoint(partial / "log"))
    return failed(e);
  {
    // The copy opens as cobbled will open it; its newest event is the backup's.
    store_options options;
    options.create_if_missing = false;
    auto copy = event_store::open(partial / "log", options);
    if (!copy)
      return failed(copy.error());
    summary.last_seq = (*copy)->last_seq();
    if (auto e = (*copy)->check_no_lost_tail())
      return failed(e);
  }
  for (const auto& entry : fs::directory_iterator{data, err}) {
    auto name = entry.path().filename().string();
    if (left_out(name))
      continue;
    if (entry.is_directory(err)) {
      fs::create_directory(partial / name, err);
      if (err)
        return failed(posix_error("create directory", partial / name, err));
      if (auto e = copy_tree(entry.path(), partial / name, summary))
        return failed(e);
    } else if (entry.is_regular_file(err)) {
      fs::copy_file(entry.path(), partial / name, err);
      if (err)
        return failed(posix_error("copy " + entry.path().string() + " to", partial / name, err));
      if (auto e = sync_file(partial / name))
        return failed(e);
      ++summary.files;
      summary.bytes += entry.file_size(err);
    }
  }
  if (err)
    return failed(posix_error("read directory", data, err));
  if (auto e = sync_tree(partial))
    return failed(e);
  fs::rename(partial, dest, err);
  if (err)
    return failed(posix_error("rename " + partial.string() + " to", dest, err));
  if (auto e = sync_dir(dest.parent_path()))
    return e;
  return summary;
}

} // namespace cobble::storage
