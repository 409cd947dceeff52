#!/usr/bin/env bash
# The GCC check. The test suite runs under the sanitizers, built with clang (scripts/test.sh);
# this builds the programs with GCC, the compiler of the README's first command, with
# warnings as errors, and runs the tests that exist only in a plain build (mimalloc as the
# programs' malloc and the prefaulter on its arenas: tests/tools/heap_test, prefault_test).
#   scripts/check-gcc.sh      into ./build-gcc, build type Check (-O0, no debug information)
# COBBLE_BUILD_DIR and COBBLE_BUILD_TYPE choose another directory or build type.
set -euo pipefail
cd "$(dirname "$0")/.."
export COBBLE_SANITIZE=none COBBLE_WERROR=ON
export COBBLE_BUILD_TYPE="${COBBLE_BUILD_TYPE:-Check}" COBBLE_BUILD_DIR="${COBBLE_BUILD_DIR:-build-gcc}"
scripts/deps.sh
scripts/build.sh cobbled cobble cobble-sim cobble-bench testapp heap_test prefault_test
for t in heap_test prefault_test; do
  "$COBBLE_BUILD_DIR/tests/tools/$t"
done
echo "gcc: ok"
