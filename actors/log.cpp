#include "actors/log.hpp"

#include "actors/error.hpp"
#include "actors/event_codec.hpp"
#include "actors/messages.hpp"
#include "actors/snapshot_load.hpp"

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include <malloc.h>

namespace cobble {

namespace {

using snapshotter_actor = caf::typed_actor<caf::reacts_to<atom::deliver, event_batch_ptr>,
                                           caf::replies_to<atom::snapshot>::with<std::uint64_t>,
                                           caf::reacts_to<atom::tick>>;

/// The snapshotter keeps no state of its own: it only counts the durable events delivered to
/// it. To take a snapshot at the last delivered seq it rebuilds that world from the store (the
/// newest snapshot plus the events after it, as recovery does), encodes it, writes it and
/// frees it again. So cobbled holds one copy of the world (the actors'), not two; a snapshot
/// costs a decode and a short replay more than before, on the snapshotter's own thread, and
/// the memory of a second copy only while it is written.
struct snapshotter_state {
  std::shared_ptr<storage::event_store> store;
  std::uint64_t seq = 0; ///< Of the last durable event delivered (or recovered at start).
  log_options opts;
  std::uint64_t events_since = 0;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration last_took{}; ///< How long the previous snapshot took.
  static inline const char* name = "snapshotter";

  /// Whether the periodic reader is due now.
  bool reader_due() const {
    return opts.reader.read && std::chrono::steady_clock::now() >= opts.reader.due;
  }

  /// Hands `w` to the reader and schedules its next turn. The reader's failures are its own:
  /// they are logged, never fatal to the snapshotter.
  void read(const world& w) {
    opts.reader.due = std::chrono::steady_clock::now() + opts.reader.every;
    try {
      opts.reader.read(w);
    } catch (const std::exception& e) {
      spdlog::error("reading the world at seq {} failed: {}", w.seq, e.what());
    }
  }

  /// Rebuilds the world at the last durable seq for the reader alone (no snapshot was due).
  void read_only() {
    auto w = recover(*store, false, seq);
    if (!w) {
      spdlog::error("rebuilding the state at seq {} for the periodic reader failed: {}", seq,
                    describe(w.error()));
      opts.reader.due = std::chrono::steady_clock::now() + opts.reader.every;
      return;
    }
    read(*w);
    *w = world{};
    malloc_trim(0);
  }

  std::uint64_t take() {
    if (events_since == 0 && !store->snapshots().empty())
      return seq;
    if (opts.disk && opts.disk->low()) {
      // A snapshot is as large as the state: it would eat the space left for the log.
      spdlog::warn("snapshot at seq {} skipped: {}", seq, opts.disk->describe());
      auto snaps = store->snapshots();
      return snaps.empty() ? 0 : snaps.back().seq;
    }
    auto started = std::chrono::steady_clock::now();
    std::uint64_t at = 0;
    std::size_t bytes = 0;
    {
      auto w = recover(*store, false, seq);
      if (!w) {
        spdlog::critical("snapshot at seq {}: rebuilding the state failed: {}", seq,
                         describe(w.error()));
        std::_Exit(70);
      }
      at = w->seq;
      if (reader_due())
        read(*w); // first: what it makes is freed before the snapshot's bytes are
      auto blob = encode_snapshot(*w);
      *w = world{}; // free the rebuilt state before writing
      bytes = blob.size();
      if (auto err = store->write_snapshot(at, blob)) {
        spdlog::critical("snapshot at seq {} failed: {}", at, describe(err));
        std::_Exit(70);
      }
    }
    // Give the rebuilt copy's memory back to the system, so it is not kept resident.
    malloc_trim(0);
    if (auto err = store->prune_snapshots(opts.snapshots_kept))
      spdlog::warn("pruning snapshots failed: {}", describe(err));
    spdlog::info("snapshot at seq {} ({} bytes, {:.2f} s)", at, bytes,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    events_since = 0;
    last = std::chrono::steady_clock::now();
    last_took = last - started;
    return at;
  }

  /// Reads the free space (statvfs, on this detached thread), telling when it crosses the
  /// watermark.
  void watch_disk() {
    auto& disk = opts.disk;
    if (!disk)
      return;
    bool was_low = disk->low();
    if (auto err = disk->check()) {
      spdlog::warn("reading the free disk space failed: {}", describe(err));
      return;
    }
    if (disk->low() && !was_low)
      spdlog::critical("low disk space: {}; accepting no changes until space is freed",
                       disk->describe());
    else if (!disk->low() && was_low)
      spdlog::warn("disk space recovered: {}; accepting changes again", disk->describe());
  }

  void maybe_take() {
    if (snapshot_due(opts, events_since, std::chrono::steady_clock::now() - last, last_took))
      take();
    else if (reader_due() && !(opts.disk && opts.disk->low()))
      read_only();
  }
};

} // namespace

bool snapshot_due(const log_options& opts, std::uint64_t events_since,
                  std::chrono::steady_clock::duration since_last,
                  std::chrono::steady_clock::duration last_took) {
  if (events_since == 0)
    return false;
  if (events_since < opts.snapshot_every_events && since_last < opts.snapshot_interval)
    return false;
  double share = std::clamp(opts.snapshot_time_share, 1e-6, 1.0);
  auto gap = std::chrono::duration<double>(last_took) * (1 / share - 1);
  return since_last >= gap;
}

namespace {

snapshotter_actor::behavior_type
snapshotter(snapshotter_actor::stateful_pointer<snapshotter_state> self,
            std::shared_ptr<storage::event_store> store, std::uint64_t recovered_seq,
            log_options opts) {
  self->state.store = std::move(store);
  self->state.seq = recovered_seq;
  self->state.opts = std::move(opts);
  self->delayed_send(self, std::chrono::seconds(1), atom::tick_v);
  return {
    [self](atom::deliver, const event_batch_ptr& batch) {
      for (const auto& e : *batch)
        self->state.seq = std::max(self->state.seq, e.seq);
      self->state.events_since += batch->size();
      self->state.maybe_take();
    },
    [self](atom::snapshot) -> std::uint64_t { return self->state.take(); },
    [self](atom::tick) {
      self->state.watch_disk();
      self->state.maybe_take();
      self->delayed_send(self, std::chrono::seconds(1), atom::tick_v);
    },
  };
}

struct log_state {
  std::shared_ptr<storage::event_store> store;
  std::shared_ptr<rpc_port> port;
  snapshotter_actor snap;
  std::vector<event> pending;
  std::vector<caf::typed_response_promise<std::uint64_t>> waiting;
  /// Scheduler RPC answers waiting for the events appended before them.
  std::vector<rpc_answer_ptr> answers;
  bool flush_scheduled = false;
  std::vector<std::uint64_t> buckets = std::vector<std::uint64_t>(16, 0);
  static inline const char* name = "log";

  /// Hands an answer to the RPC port (none in some tests: the answer is dropped then).
  void answer(const rpc_answer_ptr& a) const {
    if (port && a)
      port->answer(a->token, a->reply);
  }
};

void flush(log_actor::stateful_pointer<log_state> self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  if (!st.pending.empty()) {
    std::vector<storage::event_record> records;
    records.reserve(st.pending.size());
    for (const auto& e : st.pending)
      records.push_back(to_record(e));
    if (auto err = st.store->append(records)) {
      spdlog::critical("event log append failed, stopping (fail-stop): {}", describe(err));
      spdlog::shutdown();
      std::_Exit(70);
    }
    for (std::size_t i = 0; i < records.size(); ++i)
      st.pending[i].seq = records[i].seq;
    auto bucket = std::min<std::size_t>(std::bit_width(records.size() - 1), st.buckets.size() - 1);
    ++st.buckets[records.size() <= 1 ? 0 : bucket];
    auto all = std::make_shared<std::vector<event>>(std::move(st.pending));
    st.pending.clear();
    self->send(st.snap, atom::deliver_v, event_batch_ptr{std::move(all)});
  }
  auto last = st.store->last_seq();
  for (auto& rp : st.waiting)
    rp.deliver(last);
  st.waiting.clear();
  // Straight from the commit to the connection: no message back to the project.
  auto answers = std::move(st.answers);
  st.answers.clear();
  for (const auto& a : answers)
    st.answer(a);
}

void schedule_flush(log_actor::stateful_pointer<log_state> self) {
  if (!self->state.flush_scheduled) {
    self->state.flush_scheduled = true;
    self->send(self, atom::flush_v);
  }
}

log_actor::behavior_type
log_impl(log_actor::stateful_pointer<log_state> self, std::shared_ptr<storage::event_store> store,
         std::uint64_t recovered_seq, const log_options& opts, std::shared_ptr<rpc_port> port) {
  self->state.store = store;
  self->state.port = std::move(port);
  auto snap_opts = opts;
  if (opts.detached)
    self->state.snap = self->system().spawn<caf::detached>(snapshotter, store, recovered_seq,
                                                           snap_opts);
  else
    self->state.snap = self->system().spawn(snapshotter, store, recovered_seq, snap_opts);
  self->link_to(self->state.snap);
  return {
    [self](atom::append, const event_batch_ptr& batch) {
      auto& pending = self->state.pending;
      pending.insert(pending.end(), batch->begin(), batch->end());
      schedule_flush(self);
    },
    [self](atom::append, const event_batch_ptr& batch, const rpc_answer_ptr& answer) {
      auto& st = self->state;
      st.pending.insert(st.pending.end(), batch->begin(), batch->end());
      if (st.pending.empty()) {
        // Nothing waits to be durable: answer at once (a refusal, a report-free poll).
        st.answer(answer);
        return;
      }
      st.answers.push_back(answer);
      schedule_flush(self);
    },
    [self](atom::sync) -> caf::result<std::uint64_t> {
      if (self->state.pending.empty())
        return self->state.store->last_seq();
      auto rp = self->make_response_promise<std::uint64_t>();
      self->state.waiting.push_back(rp);
      schedule_flush(self);
      return rp;
    },
    [self](atom::flush) { flush(self); },
    [self](atom::snapshot) -> caf::result<std::uint64_t> {
      flush(self);
      return self->delegate(self->state.snap, atom::snapshot_v);
    },
    [self](atom::status) -> log_status_ptr {
      auto s = self->state.store->stats();
      auto out = std::make_shared<log_status>();
      out->last_seq = self->state.store->last_seq();
      out->events = s.events_appended;
      out->batches = s.batches;
      out->syncs = s.syncs;
      out->bytes = s.bytes_appended;
      out->snapshots = s.snapshots_written;
      auto snaps = self->state.store->snapshots();
      out->last_snapshot_seq = snaps.empty() ? 0 : snaps.back().seq;
      out->batch_size_buckets = self->state.buckets;
      return out;
    },
  };
}

} // namespace

log_actor spawn_log(caf::actor_system& sys, std::shared_ptr<storage::event_store> store,
                    std::uint64_t recovered_seq, log_options opts, std::shared_ptr<rpc_port> port) {
  auto fn = [](log_actor::stateful_pointer<log_state> self,
               std::shared_ptr<storage::event_store> st, std::uint64_t seq, const log_options& o,
               std::shared_ptr<rpc_port> p) -> log_actor::behavior_type {
    return log_impl(self, std::move(st), seq, o, std::move(p));
  };
  if (opts.detached)
    return sys.spawn<caf::detached>(fn, std::move(store), recovered_seq, opts, std::move(port));
  return sys.spawn(fn, std::move(store), recovered_seq, opts, std::move(port));
}

caf::expected<world>
recover(const storage::event_store& store, bool from_scratch, std::uint64_t up_to,
        const std::function<void(std::uint64_t)>& progress, std::vector<std::uint64_t>* fallbacks) {
  world w;
  if (!from_scratch) {
    // The newest snapshot at or below up_to.
    auto infos = store.snapshots();
    for (auto it = infos.rbegin(); it != infos.rend(); ++it) {
      if (it->seq > up_to)
        continue;
      // Read and decoded at once, on two cores (actors/snapshot_load.hpp).
      auto loaded = load_snapshot(store, it->seq);
      if (!loaded) {
        // A damaged snapshot costs time, not state: the events it was taken from are all in
        // the log, so an older snapshot (or the first event) and a longer replay rebuild it.
        auto older = std::next(it) == infos.rend()
                       ? std::string{"the first event"}
                       : "snapshot " + std::to_string(std::next(it)->seq);
        spdlog::warn("snapshot {} ({} in {}) cannot be used: {}; recovering from {} instead",
                     it->seq, it->where, store.path().string(), describe(loaded.error()), older);
        if (fallbacks)
          fallbacks->push_back(it->seq);
        continue;
      }
      // A snapshot of an older format (written before an upgrade) is passed over: the state is
      // rebuilt from an older snapshot or from the first event, which every version decodes.
      if (!*loaded)
        continue;
      w = std::move(**loaded);
      break;
    }
  }
  caf::error failure;
  auto last = std::min(up_to, store.last_seq());
  if (w.seq >= last)
    return w;
  auto err = store.scan(w.seq + 1, last, [&](const storage::event_record& r) {
    auto e = from_record(r);
    if (!e) {
      failure = caf::make_error(ec::corrupt_log, "event " + std::to_string(r.seq) + " (kind "
                                                   + std::to_string(r.kind) + ") does not decode");
      return false;
    }
    apply(w, *e);
    if (progress && r.seq % 1'000'000 == 0)
      progress(r.seq);
    return true;
  });
  if (err)
    return err;
  if (failure)
    return failure;
  return w;
}

} // namespace cobble
