#include "populate.hpp"

#include "actors/event_codec.hpp"
#include "actors/events.hpp"
#include "actors/messages.hpp"
#include "actors/project_logic.hpp"
#include "actors/records.hpp"
#include "config/config.hpp"
#include "storage/event_store.hpp"

#include <chrono>
#include <stdexcept>

#include <malloc.h>

namespace cobble::bench {

namespace fs = std::filesystem;

namespace {

std::uint64_t dir_bytes(const fs::path& dir) {
  std::uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec))
      n += e.file_size(ec);
  return n;
}

time_us now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

populate_result
populate(const populate_options& o, const std::function<void(const populate_result&)>& progress) {
  auto started = std::chrono::steady_clock::now();
  auto log_dir = o.data_dir / "log";
  if (fs::exists(log_dir))
    throw std::runtime_error(log_dir.string() + " exists: populate needs a fresh data directory");
  fs::create_directories(o.data_dir);
  storage::store_options so;
  so.mode = storage::durability::async; // one sync at the end: a crash here loses nothing of value
  auto opened = storage::event_store::open(log_dir, so);
  if (!opened)
    throw std::runtime_error("cannot open the log: " + caf::to_string(opened.error()));
  auto& store = **opened;

  auto cfg = config::demo();
  const auto& pcfg = cfg.projects.at(0);
  project_logic logic;
  logic.state.index = 0;
  populate_result r;
  std::vector<storage::event_record> pending;
  auto flush = [&] {
    if (pending.empty())
      return;
    if (auto err = store.append(pending))
      throw std::runtime_error("append failed: " + caf::to_string(err));
    r.events += pending.size();
    pending.clear();
    if (progress)
      progress(r);
  };
  auto add = [&](const event& e) {
    pending.push_back(to_record(e));
    if (pending.size() >= o.batch)
      flush();
  };
  for (const auto& e : logic.configure(pcfg, now_us()))
    add(e);
  flush();
  if (logic.state.users.empty() || logic.state.apps.empty())
    throw std::logic_error("the demo configuration has no user or no app");
  auto user = logic.state.users.begin()->first;
  const auto& app = logic.state.apps.front();
  auto replicas = static_cast<std::uint64_t>(std::max(1, app.target_nresults));

  host_info_rec info;
  info.p_ncpus = 4;
  info.p_vendor = "GenuineIntel";
  info.p_model = "Intel(R) Xeon(R) CPU @ 2.20GHz";
  info.p_fpops = 1e9;
  info.p_iops = 1e9;
  info.m_nbytes = 8e9;
  info.d_free = 5e10;
  info.os_name = "Linux Debian";
  info.os_version = "Debian GNU/Linux 12 (bookworm)";
  for (std::uint64_t i = 0; i < o.hosts; ++i) {
    info.host_cpid = "populated" + std::to_string(i);
    info.domain_name = "host-" + std::to_string(i);
    add(logic.register_host(user, info, now_us()));
    ++r.hosts;
  }
  flush();

  auto workunits = (o.jobs + replicas - 1) / replicas;
  work_spec spec;
  spec.app = app.name;
  spec.rsc_fpops_est = o.job_seconds * 1e9;
  spec.rsc_fpops_bound = spec.rsc_fpops_est.value() * 10;
  std::uint64_t made = 0;
  while (made < workunits) {
    work_batch batch;
    batch.submitter = "cobble-bench";
    auto n = std::min<std::uint64_t>(o.batch, workunits - made);
    batch.items.assign(n, spec);
    work_created created;
    auto events = logic.create_work(batch, now_us(), created);
    if (!events)
      throw std::runtime_error("create_work failed: " + caf::to_string(events.error()));
    for (const auto& e : *events)
      add(e);
    made += n;
    r.workunits = made;
  }
  flush();
  r.jobs = logic.state.counters.results_created;
  opened->reset(); // closes the store (and syncs the WAL)
  // The state is not needed any more; give its memory back, so that a server started next
  // (the scale benchmark) does not compete with this process's freed heap.
  logic.state = project_state{};
  malloc_trim(0);
  r.log_bytes = dir_bytes(log_dir);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

} // namespace cobble::bench
