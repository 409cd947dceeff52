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
    clock_(std::make_shared<manual_clock>(opts.start)), reader_(std::move(opts.reader)) {
  config::validate(config_); // throws config::config_error, a std::runtime_error
  if (dir_.empty()) {
    dir_ = make_temp_dir();
    temp_.path = dir_;
  }
  storage::store_options so;
  so.mode = opts.durability;
  auto st = storage::event_store::open(dir_ / "log", so);
  if (!st)
    throw std::runtime_error("cannot open the event store in " + dir_.string() + ": "
                             + describe(st.error()));
  store_ = std::shared_ptr<storage::event_store>{std::move(*st)};
  if (opts.files)
    files_ = std::make_shared<storage::file_store>(dir_);
  sys_cfg_.set("scheduler.policy", caf::atom("testing"));
  register_types(sys_cfg_);
  sys_ = std::make_unique<caf::actor_system>(sys_cfg_);
  // Never wait for actors in the destructor: stop() has shut them down in order (and a test
  // that failed half-way may leave some running).
  sys_->await_actors_before_shutdown(false);
  self_ = std::make_unique<caf::scoped_actor>(*sys_, true);
  sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  start();
}

// The members go in reverse order: the scoped actor, the actor system, the store, and last
// a temporary directory.
harness::~harness() {
  try {
    stop();
  } catch (...) {
  }
}

harness::removed_dir::~removed_dir() {
  std::error_code ec;
  if (!path.empty())
    std::filesystem::remove_all(path, ec);
}

void harness::start() {
  if (running())
    throw std::logic_error("the harness's node is running already");
  config::validate(config_);
  node_options opts;
  opts.detached_log = false;
  opts.files = files_;
  opts.port = port_;
  opts.reader = reader_;
  auto n = start_node(*sys_, config_, store_, clock_, opts);
  if (!n)
    throw std::runtime_error("cannot start the node: " + describe(n.error()));
  node_ = std::move(*n);
  sched_->run();
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

harness::rpc_outcome harness::send_rpc(const project_actor& dest, sched_request_ptr req) {
  auto out = std::make_shared<rpc_outcome>();
  out->token = port_->park([out, st = store_](sched_reply_ptr reply) {
    out->reply = std::move(reply);
    out->durable_at = st->last_seq();
    ++out->calls;
  });
  caf::anon_send(dest, atom::rpc_v, std::move(req), out->token);
  sched_->run();
  return *out;
}

int harness::upload_outputs(const project_actor& dest, const sched_request& req) {
  int recorded = 0;
  for (const auto& r : req.results) {
    if (r.state != 5 || r.exit_status != 0)
      continue;
    for (const auto& f : r.files) {
      auto nbytes = f.nbytes > 0 ? static_cast<std::uint64_t>(f.nbytes) : std::uint64_t{0};
      auto got = try_ask<bool>(dest, atom::upload_v, f.name, static_cast<id_type>(req.hostid),
                               nbytes, f.md5_cksum);
      if (got && *got)
        ++recorded;
    }
  }
  return recorded;
}

caf::expected<sched_reply_ptr> harness::rpc(const std::string& p, sched_request req) {
  auto sent = send_rpc(project(p), std::make_shared<const sched_request>(std::move(req)));
  if (!sent.reply) {
    port_->cancel(sent.token); // nobody waits for it any more
    return no_answer();
  }
  return std::move(sent.reply);
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
  if (!running())
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
