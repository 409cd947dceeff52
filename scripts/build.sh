#!/usr/bin/env bash
# Configures and builds Cobble (Ninja, ccache when present, -j2 by default).
#
#   scripts/build.sh [TARGET...]       builds everything (or the targets) into ./build
#
# Environment:
#   COBBLE_JOBS=N           parallel jobs (default 2)
#   COBBLE_BUILD_TYPE=T     CMake build type of the plain build (default RelWithDebInfo;
#                           Check: -O0 without debug information, the quickest to compile)
#   COBBLE_WERROR=ON        warnings are errors (CI)
#   COBBLE_SANITIZE=none    the plain build (the default here; empty is the same)
#   COBBLE_SANITIZE=address AddressSanitizer + UBSan, in ./build-asan
#   COBBLE_SANITIZE=thread  ThreadSanitizer, in ./build-tsan
#   COBBLE_SANITIZE_OPT=-O1 optimization of a sanitized build (default -O0: compiles 2-3x faster)
#   COBBLE_BUILD_DIR=DIR    another build directory
#   COBBLE_E2E_TESTS=OFF    leave out the tests labelled e2e and fuzz (CI's TSan stage)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-dir.sh
jobs="${COBBLE_JOBS:-2}"
args=(-DCOBBLE_WERROR="${COBBLE_WERROR:-OFF}" -DCOBBLE_SANITIZE="$sanitize"
      -DCOBBLE_E2E_TESTS="${COBBLE_E2E_TESTS:-ON}")
if [ -n "$sanitize" ]; then
  # Clang: with ASan+UBSan it compiles in half the time GCC takes (project.cpp: 61 s
  # against 117 s). -O0: the sanitizers' instrumentation makes the optimizer the larger
  # part of a compile (tests/net/admin_api_test.cpp under ASan+UBSan: 111 s at -O1, 41 s at
  # -O0; http_session.cpp under TSan: 51 s against 22 s), while the suite runs mostly in
  # libraries built optimized (CAF, RocksDB, Boost's compiled parts). -g1 gives the reports
  # their file:line; asserts stay on. COBBLE_SANITIZE_OPT=-O1 for faster sanitized programs.
  args+=(-DCMAKE_CXX_COMPILER="${COBBLE_SANITIZE_CXX:-clang++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
         "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=${COBBLE_SANITIZE_OPT:--O0} -g1")
else
  args+=(-DCMAKE_BUILD_TYPE="${COBBLE_BUILD_TYPE:-RelWithDebInfo}")
fi
if [ "$sanitize" = thread ]; then
  # CAF itself instrumented, or every message between actors would be reported as a race.
  scripts/lib/caf-tsan.sh "$build_dir/caf-tsan"
  args+=(-DCAF_INCLUDE_DIR="$PWD/$build_dir/caf-tsan/include"
         -DCAF_CORE_LIBRARY="$PWD/$build_dir/caf-tsan/lib/libcaf_core.so")
fi
# Configured again only when the settings changed (Ninja re-runs CMake itself when a
# CMakeLists.txt does): with nothing changed the build below has no work to do.
stamp="$build_dir/.cobble-cmake-args"
if [ ! -f "$build_dir/build.ninja" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${args[*]}" ]; then
  cmake -S . -B "$build_dir" -G Ninja "${args[@]}" >/dev/null
  printf '%s' "${args[*]}" >"$stamp"
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
