#include "tools/sim/harness.hpp"

#include "actors/error.hpp"
#include "actors/state.hpp"

#include <caf/all.hpp>

#include <cstdlib>
#include <stdexcept>
#include <system_error>

namespace cobble::sim {

namespace {

std::filesystem::path make_temp_dir() {
  auto pattern = (std::filesystem::temp_directory_path() / "cobble-sim-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("cannot create a temporary directory from " + pattern);
  return pattern;
}

} // namespace

harness::harness(harness_options opts)
  : config_(std::move(opts.config)), dir_(std::move(opts.data_dir)),
    clock_(std::make_shared<manual_clock>(opts.start)) {
  config::validate(config_); // throws config::config_error, a std::runtime_error
  if (dir_.empty()) {
    dir_ = make_temp_dir();
    owns_dir_ = true;
  }
  storage::store_options so;
  so.mode = opts.durability;
  auto st = storage::event_store::open(dir_ / "log", so);
  if (!st)
    throw std::runtime_error("cannot open the event store in " + dir_.string() + ": "
                             + describe(st.error()));
  store_ = std::shared_ptr<storage::event_store>{std::move(*st)};
  sys_cfg_.set("scheduler.policy", caf::atom("testing"));
  register_types(sys_cfg_);
  sys_ = std::make_unique<caf::actor_system>(sys_cfg_);
  // Never wait for actors in the destructor: stop() has shut them down in order.
  sys_->await_actors_before_shutdown(false);
  self_ = std::make_unique<caf::scoped_actor>(*sys_, true);
  sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  auto n = start_node(*sys_, config_, store_, clock_, node_options{false, nullptr, port_});
  if (!n)
    throw std::runtime_error("cannot start the node: " + describe(n.error()));
  node_ = std::move(*n);
  sched_->run();
}

harness::~harness() {
  try {
    stop();
  } catch (...) {
  }
  self_.reset();
  sys_.reset();
  store_.reset();
  if (owns_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void harness::advance(time_us delta) {
  clock_->advance(delta);
  sched_->run();
}

project_actor harness::project(const std::string& name) const {
  auto i = node_.projects.find(name);
  if (i == node_.projects.end())
    throw std::out_of_range("no project named '" + name + "' in the harness");
  return i->second;
}

caf::expected<sched_reply_ptr> harness::rpc(const std::string& p, sched_request req) {
  auto dest = project(p);
  auto reply = std::make_shared<sched_reply_ptr>();
  auto token = port_->park([reply](sched_reply_ptr r) { *reply = std::move(r); });
  caf::anon_send(dest, atom::rpc_v,
                 sched_request_ptr{std::make_shared<sched_request>(std::move(req))}, token);
  sched_->run();
  if (!*reply) {
    port_->cancel(token);
    return no_answer();
  }
  return std::move(*reply);
}

caf::expected<work_created_ptr> harness::create_work(const std::string& p, work_batch batch) {
  return ask<work_created_ptr>(project(p), atom::create_v,
                               work_batch_ptr{std::make_shared<work_batch>(std::move(batch))});
}

caf::expected<project_summary_ptr> harness::status(const std::string& p) {
  return ask<project_summary_ptr>(project(p), atom::status_v);
}

caf::expected<workunit_view_ptr> harness::workunit(const std::string& p, const std::string& name) {
  return ask<workunit_view_ptr>(project(p), atom::workunit_v, name);
}

caf::expected<host_view_ptr> harness::host(const std::string& p, id_type id) {
  return ask<host_view_ptr>(project(p), atom::host_v, id);
}

caf::expected<std::string> harness::authenticator(const std::string& p, const std::string& user) {
  auto users = ask<user_list_ptr>(project(p), atom::list_v, atom::user_v);
  if (!users)
    return users.error();
  for (const auto& u : **users)
    if (u.name == user)
      return u.authenticator;
  return caf::make_error(ec::unknown_account, "no user named '" + user + "' in project " + p);
}

std::uint64_t harness::stop() {
  if (!node_.node)
    return 0;
  auto seq = ask<std::uint64_t>(node_.node, atom::snapshot_v, atom::sync_v);
  sched_->run();
  node_ = node_handles{};
  return seq ? *seq : 0;
}

caf::error harness::no_answer() {
  return caf::make_error(ec::unspecified, "the request got no answer once every actor was idle");
}

} // namespace cobble::sim
