#pragma once

/// The in-process harness of `cobble-sim` (the emulator and the credit lab): a whole node —
/// log, project, host, app-version and assimilator-free — on CAF's deterministic test
/// coordinator, with a manual (virtual) clock and an event store in its own data directory.
/// Every call processes all the messages it causes before it returns, so a run is a pure
/// function of its inputs and a year of virtual time costs only the work done in it.

#include "actors/actors.hpp"
#include "actors/clock.hpp"
#include "actors/messages.hpp"
#include "actors/node.hpp"
#include "actors/rpc_port.hpp"
#include "config/config.hpp"
#include "storage/event_store.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/expected.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace cobble::sim {

/// How to start a harness.
struct harness_options {
  config::cobble_config config = config::demo();
  /// The data directory; empty: a fresh temporary directory, removed when the harness ends.
  std::filesystem::path data_dir;
  /// Virtual time at the start.
  time_us start = 1'700'000'000LL * us_per_second;
  /// `sync` makes every append wait for fsync, as in `cobbled`; the emulator does not need it.
  storage::durability durability = storage::durability::async;
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
  const std::filesystem::path& data_dir() const { return dir_; }
  storage::event_store& store() { return *store_; }
  /// The project actor by name; throws std::out_of_range naming the project when unknown.
  project_actor project(const std::string& name) const;

  /// A scheduler RPC on the server's path: parked in the RPC port, sent to the project with
  /// its token, answered by the log once durable. Yields the reply, or ec::unspecified when
  /// none came once every actor was idle.
  caf::expected<sched_reply_ptr> rpc(const std::string& project, sched_request req);
  /// Creates workunits (the admin API's path).
  caf::expected<work_created_ptr> create_work(const std::string& project, work_batch batch);
  caf::expected<project_summary_ptr> status(const std::string& project);
  caf::expected<workunit_view_ptr> workunit(const std::string& project, const std::string& name);
  caf::expected<host_view_ptr> host(const std::string& project, id_type id);
  /// The account key of a configured user, by name.
  caf::expected<std::string> authenticator(const std::string& project, const std::string& user);

  /// Sends a request, processes everything it causes, and returns the answer (or the error;
  /// a request that got no answer at all yields ec::unspecified naming it).
  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& dest, Ts&&... xs) {
    auto rh = (*self_)->request(dest, caf::infinite, std::forward<Ts>(xs)...);
    sched_->run();
    if ((*self_)->mailbox().empty())
      return no_answer();
    std::optional<T> out;
    caf::error err;
    rh.receive([&](T& x) { out = std::move(x); }, [&](caf::error& e) { err = std::move(e); });
    if (out)
      return std::move(*out);
    return err;
  }

  /// Stops the node in order (as `cobbled` does on SIGTERM); answers the final snapshot's seq.
  /// Called by the destructor when not called before.
  std::uint64_t stop();

private:
  static caf::error no_answer();

  config::cobble_config config_;
  std::filesystem::path dir_;
  bool owns_dir_ = false;
  std::shared_ptr<storage::event_store> store_;
  std::shared_ptr<manual_clock> clock_;
  std::shared_ptr<parked_rpcs> port_ = std::make_shared<parked_rpcs>();
  caf::actor_system_config sys_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  std::unique_ptr<caf::scoped_actor> self_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  node_handles node_;
};

} // namespace cobble::sim
