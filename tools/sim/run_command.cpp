#include "tools/sim/run_command.hpp"

#include "config/config.hpp"
#include "tools/sim/emulator.hpp"
#include "tools/sim/report.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

namespace cobble::sim {

void add_run_command(CLI::App& app, int& rc) {
  struct opts {
    std::string scenario;
    std::string report;
    std::string server;
    bool quiet = false;
  };
  auto o = std::make_shared<opts>();
  auto* cmd = app.add_subcommand(
      "run", "Run a scenario (docs/emulator.md): emulated hosts attached to the scenario's "
             "projects, in virtual time on an in-process node, then print the figures");
  cmd->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  cmd->add_option("--report", o->report, "Also write a self-contained HTML report here");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress output on stderr");
  cmd->callback([o, &rc] {
    scenario sc;
    try {
      sc = load_scenario(o->scenario);
    } catch (const config::config_error& e) {
      std::cerr << "cobble-sim: " << e.what() << "\n";
      rc = 2;
      return;
    }
    spdlog::set_level(spdlog::level::warn); // the node's own log lines are not the output
    run_options ro;
    if (!o->quiet)
      ro.progress = [](double done, double total) {
        std::fprintf(stderr, "cobble-sim: %.1f of %.1f virtual days (%.0f%%)\n", done / 86400,
                     total / 86400, 100 * done / total);
      };
    run_result res;
    try {
      auto link = in_process_link(sc);
      res = run_scenario(sc, *link, ro);
    } catch (const std::exception& e) {
      std::cerr << "cobble-sim: " << e.what() << "\n";
      rc = 1;
      return;
    }
    std::cout << figures_table(res);
    std::fprintf(stdout, "\n%ld host-steps in %.2f s of wall time\n", res.host_steps,
                 res.wall_seconds);
    if (!o->report.empty()) {
      std::ofstream out(o->report);
      out << html_report(res, o->scenario);
      if (!out) {
        std::cerr << "cobble-sim: cannot write " << o->report << "\n";
        rc = 1;
        return;
      }
      std::fprintf(stdout, "report: %s\n", o->report.c_str());
    }
    rc = 0;
  });
}

} // namespace cobble::sim
