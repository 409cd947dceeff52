#pragma once

/// The in-process node: a whole node — log, project, host and app-version actors, and the
/// assimilator when asked for — on CAF's deterministic test coordinator, with a manual
/// (virtual) clock and an event store in its own data directory. Every call processes all the
/// messages it causes before it returns, so a run is a pure function of its inputs and a year
/// of virtual time costs only the work done in it.
///
/// The one deterministic node of the project: `cobble-sim` (the emulator and the labs) runs
/// its server on it, and the deterministic actor tests drive it through
/// tests/support/node_fixture.hpp, which adds Catch2's assertions and, at the end of every
/// test, the check that the live states equal a replay of the log.

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "actors/log.hpp"
#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "actors/rpc_port.hpp"
#include "config/config.hpp"
#include "storage/event_store.hpp"
#include "storage/file_store.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace cobble::sim {

/// The limits for a lab of honest hosts that share one account and ask at the lab's own
/// pace: the defences against hostile clients (docs/security.md) are off, so that they do
/// not distort what the lab measures.
inline config::limits_config lab_limits() {
  config::limits_config l;
  l.min_sendwork_interval = 0;
  l.max_new_hosts_per_day = 0;
  l.max_jobs_in_progress = 0;
  l.max_gpu_jobs_in_progress = 0;
  return l;
}

/// How to start a harness.
struct harness_options {
  config::cobble_config config = config::demo();
  /// The data directory; empty: a fresh temporary directory, removed when the harness ends.
  std::filesystem::path data_dir;
  /// Virtual time at the start.
  time_us start = 1'700'000'000LL * us_per_second;
  /// `sync` makes every append wait for fsync, as in `cobbled`; the emulator does not need it.
  storage::durability durability = storage::durability::async;
  /// The data directory's files (a storage::file_store there, as `cobbled` keeps it) and the
  /// assimilator that deletes them; off: neither, and no file is ever written.
  bool files = false;
  /// Reads the world now and then at snapshots (actors/log.hpp); none by default.
  periodic_reader reader;
};

/// A running in-process node driven in virtual time.
class harness {
public:
  /// Starts the node; throws std::runtime_error with the reason when it cannot (bad
  /// configuration, corrupt log, unusable directory).
  explicit harness(harness_options opts = {});
  ~harness(); ///< Orderly shutdown (projects, final snapshot, log); removes a temporary dir.
  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;

  /// Virtual now.
  time_us now() const { return clock_->now(); }
  /// Moves virtual time forward, fires the timers due (deadline sweeps, grace periods) and
  /// processes every message they cause.
  void advance(time_us delta);
  /// Processes every pending message.
  void run() { sched_->run(); }

  const config::cobble_config& config() const { return config_; }
  /// The configuration, to change while the node is stopped: start() starts it with this.
  config::cobble_config& config() { return config_; }
  const std::filesystem::path& data_dir() const { return dir_; }
  storage::event_store& store() { return *store_; }
  /// The data directory's files; null unless harness_options::files.
  const std::shared_ptr<storage::file_store>& files() const { return files_; }
  /// Where the log hands the scheduler replies once durable (the edge's port in `cobbled`).
  parked_rpcs& port() { return *port_; }
  /// The running node's actors; empty once stopped.
  const node_handles& handles() const { return node_; }
  bool running() const { return static_cast<bool>(node_.node); }
  /// The project actor by name; throws std::out_of_range naming the project when unknown.
  project_actor project(const std::string& name) const;

  /// What the port was handed for one scheduler RPC.
  struct rpc_outcome {
    sched_reply_ptr reply;        ///< Null when none came once every actor was idle.
    int calls = 0;                ///< How often the port was called for it.
    std::uint64_t durable_at = 0; ///< The store's last seq when it was.
    rpc_token token = 0;          ///< The RPC's token in the port.
  };
  /// A scheduler RPC on the server's path: parked in the RPC port, sent to `dest` with its
  /// token, answered by the log once durable, with every message it causes processed. An RPC
  /// that got no reply stays parked (port().waiting() counts it).
  rpc_outcome send_rpc(const project_actor& dest, sched_request_ptr req);
  /// Uploads the outputs of the successful results `req` reports, as a BOINC client does
  /// before it reports them: the upload handler's message once a file is stored (its size and
  /// the MD5 the server computed; here the reported ones stand for what was stored). Returns
  /// how many the project recorded; refused ones are left out, as a client's would fail.
  int upload_outputs(const project_actor& dest, const sched_request& req);
  /// send_rpc() to a project by name. Yields the reply, or ec::unspecified when none came
  /// once every actor was idle.
  caf::expected<sched_reply_ptr> rpc(const std::string& project, sched_request req);
  /// Creates workunits (the admin API's path).
  caf::expected<work_created_ptr> create_work(const std::string& project, work_batch batch);
  caf::expected<project_summary_ptr> status(const std::string& project);
  caf::expected<workunit_view_ptr> workunit(const std::string& project, const std::string& name);
  caf::expected<host_view_ptr> host(const std::string& project, id_type id);
  /// The account key of a configured user, by name.
  caf::expected<std::string> authenticator(const std::string& project, const std::string& user);

  /// Sends a request and processes everything it causes. Yields the answer or the error, or
  /// nothing when no answer came once every actor was idle.
  template <class T, class Handle, class... Ts>
  std::optional<caf::expected<T>> try_ask(const Handle& dest, Ts&&... xs) {
    auto rh = (*self_)->request(dest, caf::infinite, std::forward<Ts>(xs)...);
    sched_->run();
    if ((*self_)->mailbox().empty())
      return std::nullopt; // else receive() would block forever
    std::optional<caf::expected<T>> out;
    rh.receive([&](T& x) { out.emplace(std::move(x)); },
               [&](caf::error& e) { out.emplace(std::move(e)); });
    return out;
  }

  /// try_ask() for an answer of several values (`Rs...`), as a tuple.
  template <class... Rs, class Handle, class... Ts>
  std::optional<caf::expected<std::tuple<Rs...>>> try_ask_tuple(const Handle& dest, Ts&&... xs) {
    auto rh = (*self_)->request(dest, caf::infinite, std::forward<Ts>(xs)...);
    sched_->run();
    if ((*self_)->mailbox().empty())
      return std::nullopt;
    std::optional<caf::expected<std::tuple<Rs...>>> out;
    rh.receive([&](Rs&... x) { out.emplace(std::make_tuple(std::move(x)...)); },
               [&](caf::error& e) { out.emplace(std::move(e)); });
    return out;
  }

  /// Like try_ask(); a request that got no answer at all yields ec::unspecified naming it.
  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& dest, Ts&&... xs) {
    auto out = try_ask<T>(dest, std::forward<Ts>(xs)...);
    if (!out)
      return no_answer();
    return std::move(*out);
  }

  /// Starts the node again after stop(), from the log and config(): a restart in place, as
  /// `cobbled` restarted on the same data directory. Throws std::runtime_error when it cannot
  /// (bad configuration, corrupt log), std::logic_error when the node runs.
  void start();
  /// Stops the node in order (as `cobbled` does on SIGTERM); answers the final snapshot's seq.
  /// Called by the destructor when not called before.
  std::uint64_t stop();

private:
  static caf::error no_answer();

  /// A directory removed when the harness ends, also when its start failed.
  struct removed_dir {
    std::filesystem::path path; ///< Empty: none.
    removed_dir() = default;
    removed_dir(const removed_dir&) = delete;
    removed_dir& operator=(const removed_dir&) = delete;
    ~removed_dir();
  };

  config::cobble_config config_;
  std::filesystem::path dir_;
  removed_dir temp_; ///< dir_ when the harness made it (gone after the store closed).
  std::shared_ptr<storage::event_store> store_;
  std::shared_ptr<storage::file_store> files_;
  std::shared_ptr<manual_clock> clock_;
  periodic_reader reader_;
  std::shared_ptr<parked_rpcs> port_ = std::make_shared<parked_rpcs>();
  caf::actor_system_config sys_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::unique_ptr<caf::scoped_actor> self_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  node_handles node_;
};

} // namespace cobble::sim
