#pragma once

/// `cobble-sim run SCENARIO.yaml`: the emulator's subcommand (tools/sim/main.cpp adds it).

#include <CLI/CLI.hpp>

namespace cobble::sim {

/// Adds `run` to `app`; when it runs, its exit code goes to `rc`.
void add_run_command(CLI::App& app, int& rc);

} // namespace cobble::sim
