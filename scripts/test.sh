#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit, actor, HTTP, e2e)
# under AddressSanitizer and UndefinedBehaviorSanitizer, in ./build-asan (clang, -O0).
# Arguments go to ctest (e.g. -L unit, -R 'event store'). The environment of
# scripts/build.sh applies: COBBLE_SANITIZE=thread runs the suite under TSan in
# ./build-tsan, COBBLE_SANITIZE=none on the plain build in ./build (GCC, RelWithDebInfo,
# mimalloc as malloc: only there do tests/tools/heap_test and prefault_test exist).
set -euo pipefail
cd "$(dirname "$0")/.."
export COBBLE_SANITIZE="${COBBLE_SANITIZE-address}"
source scripts/lib/build-dir.sh
scripts/deps.sh --test
scripts/build.sh
cd "$build_dir"
ctest --output-on-failure -j "${COBBLE_JOBS:-2}" --timeout 600 "$@"
