#include "actors/assimilator.hpp"

#include "actors/error.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace cobble {

namespace {

struct assimilator_state {
  std::shared_ptr<storage::file_store> files;
  clock_ptr clk;
  static inline const char* name = "assimilator";
};

/// Copies the canonical outputs to results/<wu>/ (idempotent: a copy that exists stays).
void keep_canonical(storage::file_store& files, const wu_files& w) {
  auto dir = files.results_dir(w.project) / w.wu_name;
  std::error_code ec;
  for (const auto& [stored, open] : w.canonical_outputs) {
    auto from = files.output_path(w.project, stored);
    auto to = dir / (storage::safe_file_name(open) ? open : stored);
    if (fs::exists(to, ec))
      continue;
    if (!fs::exists(from, ec)) {
      spdlog::warn("assimilation of {}: output {} was never uploaded", w.wu_name, stored);
      continue;
    }
    // Only when there is something to keep: a mkdir per workunit was 10 % of a busy
    // server's CPU (docs/performance.md).
    fs::create_directories(dir, ec);
    fs::copy_file(from, to, ec);
    if (ec)
      spdlog::error("assimilation of {}: cannot copy {} to {}: {}", w.wu_name, from.string(),
                    to.string(), ec.message());
  }
}

/// Stages the state files of a sequence element as content-addressed inputs (idempotent).
void stage_state(storage::file_store& files, const wu_files& w) {
  for (const auto& [stored, staged] : w.state_files) {
    std::string why;
    try {
      auto done = files.stage_file(w.project, files.output_path(w.project, stored), staged.md5);
      if (!done)
        why = describe(done.error());
    } catch (const std::exception& e) { // bad_alloc, or no MD5 in OpenSSL
      why = e.what();
    }
    if (!why.empty())
      spdlog::error("state files of {}: cannot stage {} as {}: {}", w.wu_name, stored, staged.name,
                    why);
  }
}

/// Deletes the workunit's files; returns the inputs it deleted.
std::vector<std::string> delete_files(storage::file_store& files, const wu_files& w) {
  for (const auto& out : w.outputs)
    files.remove_output(w.project, out);
  std::vector<std::string> deleted;
  auto now = fs::file_time_type::clock::now();
  for (const auto& in : w.inputs) {
    std::error_code ec;
    auto path = files.download_dir(w.project) / in;
    auto mtime = fs::last_write_time(path, ec);
    if (ec)
      continue;
    // Staging touches an input; one staged again recently is about to be used again.
    if (now - mtime < std::chrono::duration<double>(w.input_quiet_seconds))
      continue;
    if (files.remove_input(w.project, in))
      deleted.push_back(in);
  }
  // Released state files: nothing stages them but the assimilator, no quiet period.
  for (const auto& in : w.staged)
    if (files.remove_input(w.project, in))
      deleted.push_back(in);
  return deleted;
}

} // namespace

assimilator_actor
spawn_assimilator(caf::actor_system& sys, std::shared_ptr<storage::file_store> files, clock_ptr clk,
                  bool detached) {
  auto fn = [](assimilator_actor::stateful_pointer<assimilator_state> self,
               std::shared_ptr<storage::file_store> fs_,
               clock_ptr c) -> assimilator_actor::behavior_type {
    self->state.files = std::move(fs_);
    self->state.clk = std::move(c);
    return {
      [self](atom::assimilate, const wu_files_ptr& w) {
        if (w->assimilated)
          keep_canonical(*self->state.files, *w);
        if (w->keep) {
          stage_state(*self->state.files, *w);
          return;
        }
        auto project = caf::actor_cast<project_actor>(self->current_sender());
        if (w->delete_after_seconds <= 0) {
          // No grace period left: delete now.
          auto inputs = delete_files(*self->state.files, *w);
          if (project)
            self->send(project, atom::cleanup_v, w->wu, std::move(inputs));
          return;
        }
        auto addr = self->address();
        self->state.clk->schedule(seconds_to_us(std::max(w->delete_after_seconds, 0.0)),
                                  [addr, w, project] {
                                    if (auto h = caf::actor_cast<caf::actor>(addr))
                                      caf::anon_send(h, atom::cleanup_v, w, project);
                                  });
      },
      [self](atom::cleanup, const wu_files_ptr& w, const project_actor& project) {
        auto inputs = delete_files(*self->state.files, *w);
        if (project)
          self->send(project, atom::cleanup_v, w->wu, std::move(inputs));
      },
    };
  };
  if (detached)
    return sys.spawn<caf::detached>(fn, std::move(files), std::move(clk));
  return sys.spawn(fn, std::move(files), std::move(clk));
}

} // namespace cobble
