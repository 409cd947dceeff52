/// cobble-sim: the emulator's command line. Each tool registers its subcommand here.

#include "tools/sim/credit_lab.hpp"

#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app{"cobble-sim: Cobble's emulator: emulated hosts driving the real actors "
               "in virtual time"};
  app.require_subcommand(1);
  cobble::sim::add_credit_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
