#pragma once

/// Which of a project's app versions a host runs, per resource type (BOINC's plan classes
/// and its choice of the version with the highest projected FLOPS; docs/apps.md, "Which
/// version a host gets"). Pure functions of the project's records and the host's request.

#include "actors/messages.hpp"
#include "actors/records.hpp"
#include "config/config.hpp"

#include <optional>
#include <string>
#include <vector>

namespace cobble {

/// An app version fitted to one host: what it uses there and how fast it runs.
struct version_pick {
  const app_version_rec* version = nullptr;
  double avg_ncpus = 1;    ///< CPUs one job uses on this host.
  double coproc_count = 0; ///< GPUs one job uses (0 for CPU versions).
  double gpu_ram = 0;      ///< Bytes of GPU memory one job uses; 0: not said.
  double flops = 0;        ///< Projected FLOPS of one job; 0: the client's own estimate.
  std::string cmdline;     ///< E.g. `--nthreads 4` of a multi-threaded class.
};

/// The plan class of that name, or null when the project defines none of that name.
const config::plan_class_config*
find_plan_class(const std::vector<config::plan_class_config>& classes, const std::string& name);

/// The resource a plan class is for (its gpu_type; cpu when it has none).
resource_type plan_class_resource(const config::plan_class_config& pc);

/// Why the requesting host cannot run versions of plan class `pc` of resource `t` (e.g. "needs
/// an NVIDIA driver of version 53523 or later, this computer has 47011"); empty when it can.
std::string
plan_class_refusal(const config::plan_class_config& pc, const job_request& req, resource_type t);

/// Version `v` fitted to the requesting host, or nullopt when its plan class refuses the host.
/// A version whose plan class is not defined asks nothing beyond its resource type.
std::optional<version_pick> fit_version(const app_version_rec& v, const job_request& req,
                                        const std::vector<config::plan_class_config>& classes);

/// The version of `app` for resource `t` that the (non-anonymous) host runs: among the newest
/// non-deprecated version per (platform, plan class) on its platform and alternate platforms,
/// those it can run, the one with the highest projected FLOPS; ties go to the earlier
/// platform, then to the higher version number. Nullopt when it can run none.
std::optional<version_pick>
choose_app_version(const app_rec& app, const job_request& req, resource_type t,
                   const std::vector<config::plan_class_config>& classes);

/// Why the host gets no version of `app` for resource `t`: the plan classes' refusals or the
/// lack of a version for its platforms, as a scheduler message (empty: it has one).
std::string no_version_message(const app_rec& app, const job_request& req, resource_type t,
                               const std::vector<config::plan_class_config>& classes);

} // namespace cobble
