/// cobble-sim: the client emulator and (separately) the credit lab. One subcommand per file;
/// this file only dispatches: each tool registers its subcommand here.

#include "tools/sim/autoflops_lab.hpp"
#include "tools/sim/credit_lab.hpp"
#include "tools/sim/run_command.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

namespace {

int program_main(int argc, char** argv) {
  CLI::App app{"cobble-sim: emulated BOINC hosts running Cobble's client policies against "
               "Cobble projects, in virtual time (in-process) or against a running cobbled; "
               "the credit lab and the AutoFlops lab (emulated hosts driving the real actors in "
               "virtual time)"};
  app.require_subcommand(1);
  int rc = 0;
  cobble::sim::add_run_command(app, rc);
  cobble::sim::add_credit_command(app);
  cobble::sim::add_autoflops_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help answers 0; every usage error 2, as docs/emulator.md says (CLI11's own codes
    // would be 105-109, one per kind of mistake).
    return app.exit(e) == 0 ? 0 : 2;
  }
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return program_main(argc, argv);
  } catch (const std::exception& e) {
    // Nothing is expected to escape; if something does, say what instead of aborting.
    std::cerr << "cobble-sim: internal error: " << e.what() << '\n';
    return 70;
  }
}
