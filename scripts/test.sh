#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit, actor, HTTP, e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
cd build
ctest --output-on-failure -j "${COBBLE_JOBS:-2}" --timeout 600 "$@"
