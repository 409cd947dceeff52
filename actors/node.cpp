#include "actors/node.hpp"

#include "actors/aggregator.hpp"
#include "actors/app_version.hpp"
#include "actors/assimilator.hpp"
#include "actors/error.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/project.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <malloc.h>

namespace cobble {

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::cobble>();
  cfg.add_error_category(caf::atom("cobble"), [](std::uint8_t code, caf::atom_value,
                                                 const caf::message& ctx) {
    return std::string{"cobble::"} + to_string(static_cast<ec>(code)) + " " + caf::to_string(ctx);
  });
}

namespace {

struct node_state {
  log_actor log;
  assimilator_actor assimilator;
  std::vector<project_actor> projects;
  std::vector<app_version_actor> versions;
  aggregator_actor aggregator;
};

} // namespace

caf::expected<node_handles> start_node(caf::actor_system& sys, const config::cobble_config& cfg,
                                       const std::shared_ptr<storage::event_store>& store,
                                       const clock_ptr& clk, const node_options& opts) {
  // A snapshot past the last event: the log lost its end (a damaged WAL salvaged).
  if (auto err = store->check_no_lost_tail())
    return err;
  std::vector<std::uint64_t> fallbacks;
  auto recovered = recover(*store, false, UINT64_MAX, {}, &fallbacks);
  if (!recovered)
    return recovered.error();
  auto& w = *recovered;
  if (opts.before_start)
    if (auto err = opts.before_start(w))
      return err;
  // The snapshotter keeps no copy of the world: it rebuilds each snapshot from the newest one
  // and the events after it. When recovery folded many events after the newest snapshot (or
  // there is none), write one now from the world at hand, so that the next snapshot (at the
  // latest, the one of a clean stop) does not have to fold them all again.
  {
    auto snaps = store->snapshots();
    std::uint64_t base = snaps.empty() ? 0 : snaps.back().seq;
    // After passing over a damaged snapshot, too: one that reads, so that neither the next
    // start nor the snapshotter (which rebuilds from the newest) meets the damage again.
    if ((w.seq > base
         && w.seq - base >= std::max<std::uint64_t>(cfg.server.snapshot_every_events, 1))
        || !fallbacks.empty()) {
      auto started = std::chrono::steady_clock::now();
      auto blob = encode_snapshot(w);
      if (auto err = store->write_snapshot(w.seq, blob))
        spdlog::warn("snapshot at seq {} after recovery failed: {}", w.seq, caf::to_string(err));
      else
        spdlog::info(
          "snapshot at seq {} after recovery ({} bytes, {:.2f} s)", w.seq, blob.size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
  }
  // Recovery's temporaries (decoded events, the snapshot blob) are freed; give that memory
  // back to the system instead of keeping it resident.
  malloc_trim(0);
  node_handles out;
  out.recovered_seq = w.seq;
  // Projects keep their index by name; new projects get the next free one.
  std::vector<std::uint16_t> indices;
  for (const auto& pc : cfg.projects) {
    std::optional<std::uint16_t> found;
    for (std::size_t i = 0; i < w.projects.size(); ++i)
      if (w.projects[i].project.name == pc.name)
        found = static_cast<std::uint16_t>(i);
    if (!found) {
      std::uint16_t next = static_cast<std::uint16_t>(w.projects.size());
      for (auto used : indices)
        next = std::max<std::uint16_t>(next, used + 1);
      found = next;
    }
    indices.push_back(*found);
  }
  log_options lo;
  lo.snapshot_every_events = cfg.server.snapshot_every_events;
  lo.snapshot_interval = cfg.server.snapshot_interval;
  lo.snapshot_time_share = cfg.server.snapshot_time_share;
  lo.snapshots_kept = cfg.server.snapshots_kept;
  lo.detached = opts.detached_log;
  lo.disk = opts.disk;
  lo.reader = opts.reader;
  auto log = spawn_log(sys, store, w.seq, lo, opts.port);
  out.log = log;
  auto st = std::make_shared<node_state>();
  st->log = log;
  if (opts.files)
    st->assimilator = spawn_assimilator(sys, opts.files, clk, opts.detached_log);
  for (std::size_t i = 0; i < cfg.projects.size(); ++i) {
    const auto& pc = cfg.projects[i];
    auto index = indices[i];
    project_init init;
    init.config = pc;
    init.index = index;
    init.log = log;
    init.clk = clk;
    init.assimilator = st->assimilator;
    auto credit = credit_settings_from(pc.credit);
    auto add_version = [&](app_version_state av) {
      auto id = av.id;
      auto a = spawn_app_version(sys, std::move(av), index, credit);
      st->versions.push_back(a);
      init.versions.emplace(id, a);
    };
    if (index < w.projects.size()) {
      auto& pw = w.projects[index];
      for (auto& [id, av] : pw.app_versions)
        add_version(av);
      init.state = std::move(pw.project);
      init.hosts = std::move(pw.hosts);
      init.sequences = std::move(pw.sequences);
    }
    init.state.index = index;
    // Versions first configured now get their actor too.
    std::set<std::uint32_t> have;
    if (index < w.projects.size())
      for (auto& [id, av] : w.projects[index].app_versions)
        have.insert(id);
    for (const auto& app : apps_from_config(pc, init.state.apps)) {
      for (const auto& v : app.versions)
        if (!have.count(v.id))
          add_version(app_version_state{v.id});
      // Anonymous-platform versions: one identity per app and resource type.
      for (std::uint8_t r = 0; r < n_resource_types; ++r) {
        auto id = anonymous_version_id(app.id, r);
        if (!have.count(id))
          add_version(app_version_state{id});
      }
    }
    auto p = spawn_project(sys, std::move(init));
    out.projects.emplace(pc.name, p);
    out.project_index.emplace(pc.name, index);
    st->projects.push_back(p);
  }
  double every = 600;
  for (std::size_t i = 0; i < cfg.projects.size(); ++i)
    every = i == 0 ? cfg.projects[i].credit.normalization_interval
                   : std::min(every, cfg.projects[i].credit.normalization_interval);
  st->aggregator = spawn_aggregator(sys, st->projects, clk, every);
  out.aggregator = st->aggregator;
  // The shared state is the spawn argument (CAF 0.17.6 unpacks the arguments of a function
  // spawned without any through a null pointer).
  out.node = sys.spawn(
    [](node_actor::pointer self,
       const std::shared_ptr<node_state>& shared) -> node_actor::behavior_type {
      // Every component the node spawned: any of them going down for another reason than
      // the orderly shutdown stops the process (fail-stop).
      for (auto& p : shared->projects)
        self->monitor(p);
      for (auto& v : shared->versions)
        self->monitor(v);
      if (shared->assimilator)
        self->monitor(shared->assimilator);
      self->monitor(shared->aggregator);
      self->monitor(shared->log);
      self->set_down_handler([](const caf::down_msg& m) {
        if (m.reason && m.reason != caf::exit_reason::user_shutdown) {
          spdlog::critical("actor {} failed ({}); stopping (fail-stop)", caf::to_string(m.source),
                           caf::to_string(m.reason));
          spdlog::shutdown();
          std::_Exit(70);
        }
      });
      return {
        [self, shared](atom::snapshot, atom::sync) -> caf::result<std::uint64_t> {
          auto rp = self->make_response_promise<std::uint64_t>();
          for (auto& p : shared->projects)
            self->demonitor(p.address());
          self->request(shared->log, caf::infinite, atom::sync_v)
            .then([self, shared, rp](std::uint64_t) mutable {
              self->request(shared->log, caf::infinite, atom::snapshot_v)
                .then([self, shared, rp](std::uint64_t seq) mutable {
                  self->demonitor(shared->log.address());
                  for (auto& p : shared->projects)
                    self->send_exit(p, caf::exit_reason::user_shutdown);
                  for (auto& v : shared->versions)
                    self->send_exit(v, caf::exit_reason::user_shutdown);
                  if (shared->assimilator)
                    self->send_exit(shared->assimilator, caf::exit_reason::user_shutdown);
                  self->send_exit(shared->aggregator, caf::exit_reason::user_shutdown);
                  self->send_exit(shared->log, caf::exit_reason::user_shutdown);
                  rp.deliver(seq);
                  self->quit();
                });
            });
          return rp;
        },
      };
    },
    st);
  return out;
}

} // namespace cobble
