#!/usr/bin/env bash
# Configures and builds Cobble into ./build (Ninja, ccache when present, -j2 by default).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${COBBLE_JOBS:-2}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${COBBLE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build build -j "$jobs"
