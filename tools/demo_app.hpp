#pragma once

/// The embedded demo distributes its app as a real project does (docs/apps.md): at every start
/// of the demo, cobbled makes sure the project has a code-signing key (a pair kept in
/// <data_dir>/keys/demo/, made at the first start) and a signed version of `testapp` made from
/// the program given with --demo-app, so that a stock BOINC client attaches with the printed
/// account key and installs nothing by hand. Each step is idempotent (a key or version the
/// project holds is not added again, staging a file twice stores it once), so a crash between
/// two steps is finished by the next start. Blocking: for cobbled's main thread at start.

#include "actors/actors.hpp"

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include <filesystem>
#include <string>
#include <string_view>

namespace cobble::storage {
class file_store;
}

namespace cobble::tools {

struct demo_app_options {
  std::string project = "demo";
  std::string app = "testapp";
  std::filesystem::path key_dir; ///< Holds code_sign_private (0600) and code_sign_public.
  std::filesystem::path program; ///< The app's executable, opened by clients as its file name.
};

/// BOINC's platform name of the machine cobbled was built for ("x86_64-pc-linux-gnu").
std::string_view native_platform();

/// Makes `project` distribute `o.program` as a signed version of `o.app` on native_platform()
/// (version 100, or one above the platform's last when the program changed); what it did, in a
/// line for the console. Nothing is done, and the line says why, when the project's current
/// key is not the demo's (an operator replaced it: `cobble app add-version` is then theirs to
/// run). An error names the file or the refusal.
caf::expected<std::string>
distribute_demo_app(caf::actor_system& sys, const project_actor& project,
                    storage::file_store& files, const demo_app_options& o);

} // namespace cobble::tools
