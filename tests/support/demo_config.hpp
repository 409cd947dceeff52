#pragma once

// Test support: the embedded demo configuration with a configured version of testapp, 1.00 on
// x86_64 Linux, as the tests' emulated hosts ask for it. The demo itself configures no version
// (cobbled adds a signed one at its first start, tools/demo_app.hpp); the tests judge version
// choice, replication and credit, not distribution, so they keep the configured one.

#include "config/config.hpp"

namespace cobble::test {

inline config::cobble_config demo_config() {
  auto cfg = config::demo();
  auto& version = cfg.projects.at(0).apps.at(0).versions.emplace_back();
  version.platform = "x86_64-pc-linux-gnu";
  version.version_num = 100;
  config::validate(cfg);
  return cfg;
}

} // namespace cobble::test
