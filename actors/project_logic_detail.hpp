#pragma once

/// Internal to the project's decisions (project_logic, split by topic over project_logic.cpp,
/// project_config.cpp, job_selection.cpp, project_sequences.cpp, validation.cpp,
/// project_credit.cpp and project_files.cpp): the helpers more than one of those files use.
/// Not for other components.

#include "actors/autoflops.hpp"
#include "actors/credit.hpp"
#include "actors/error.hpp"
#include "actors/project_logic.hpp"
#include "storage/file_store.hpp"

#include <caf/error.hpp>

#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace cobble::detail {

/// A version of an app the requesting host can run, and what the client assumes of it.
struct version_choice {
  const app_version_rec* version = nullptr;
  version_echo echo;
  double flops = 0;       // the speed the client assumes (runtime = rsc_fpops_est / flops)
  double peak_flops = 0;  // peak_flops(J)
  double instances = 1;   // CPUs or GPUs one job uses
  double avg_ncpus = 1;   // CPUs one job uses on this host (a project's version)
  int devices = 1;        // CPUs or GPUs of this type the host has (for the daily quota)
  double client_spau = 0; // seconds_per_app_unit the client reported for it (0: none)
};

/// Whether a workunit or sequence name is acceptable (letters, digits, _ - ., no "..").
inline bool valid_wu_name(const std::string& name) {
  if (name.empty() || name.size() > 200)
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return false;
  return name.find("..") == std::string::npos;
}

/// Why an input of new work is refused; empty when it is acceptable. Both names are plain
/// file names (storage::safe_file_name: no '/', no "..", no leading '.', no control
/// characters), so that neither the download URL nor the file a client writes for it leaves
/// its directory; the stored one is no app version's file (`app_...`).
inline std::string input_problem(const input_spec& in) {
  if (in.stored_name.empty() || in.open_name.empty())
    return "input without a name";
  if (!storage::safe_file_name(in.stored_name))
    return "input stored_name '" + in.stored_name + "' is not a plain file name";
  if (!storage::safe_file_name(in.open_name))
    return "input open_name '" + in.open_name + "' is not a plain file name";
  // A finished workunit's inputs are deleted; an app version's file must outlive it.
  if (in.stored_name.rfind("app_", 0) == 0)
    return "input stored_name '" + in.stored_name
           + "' is an app version's file: stage inputs with POST .../files (in_<md5>)";
  return {};
}

template <class T>
caf::error positive(const char* what, const std::optional<T>& x) {
  if (x && !(*x > 0))
    return caf::make_error(ec::invalid_argument, std::string{what} + " must be positive");
  return {};
}

/// An error unless an optional delay bound is positive and at most config::max_delay_bound
/// (ten years: a deadline in microseconds must not overflow).
inline caf::error check_delay_bound(const std::optional<double>& x) {
  if (auto err = positive("delay_bound", x))
    return err;
  if (x && !(*x <= config::max_delay_bound))
    return caf::make_error(ec::invalid_argument,
                           "delay_bound must be at most ten years (315360000 s)");
  return {};
}

/// The version of `app` the host runs for resource `t`, if any (job_selection.cpp), under the
/// project's plan classes.
std::optional<version_choice>
choose_version(const app_rec& app, const job_request& req, resource_type t,
               const std::vector<config::plan_class_config>& plan_classes);

/// The AutoFlops completion time estimate and bound of a job on the requesting host, when the
/// app gives them to this client and its seconds_per_app_unit(V) is known (job_selection.cpp).
std::optional<completion_time>
autoflops_estimate(const project_state& st, const app_rec& app, const wu_params& p,
                   const version_choice& c, const version_hint& hint);

/// The credit figures and runtime of a job sent to the requesting host (by job selection, as a
/// sequence element, or as a lost result sent again): R(J,H) from AutoFlops when it applies, else
/// E(J) × ETmean(H,V) once the pair has enough samples, else E(J) / flops (job_selection.cpp).
/// `quota`: the pair's initial daily quota.
project_logic::dispatch_credit
job_dispatch_credit(const project_state& st, const app_rec& app, const wu_params& p,
                    const version_choice& c, const version_hint& hint, int quota);

/// True when some version of the app has validated samples (job_selection.cpp).
bool in_use(const std::vector<version_credit_input>& inputs);

/// How many output files a workunit's results are sent to produce: the app's outputs, none
/// for a heartbeat element of a sequence (project_files.cpp).
std::size_t declared_outputs(const workunit_rec& wu, const app_rec* app);

/// min_avg_pfc(A) of an app, once known (validation.cpp).
std::optional<double> min_avg_pfc_of(const project_state& st, std::uint32_t app);

} // namespace cobble::detail
