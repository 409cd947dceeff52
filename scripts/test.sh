#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (unit, actor, HTTP, e2e).
# Arguments go to ctest (e.g. -L unit, -R 'event store'). The environment of
# scripts/build.sh applies: COBBLE_SANITIZE=address runs the suite under ASan+UBSan in
# ./build-asan, COBBLE_SANITIZE=thread under TSan in ./build-tsan.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-dir.sh
scripts/deps.sh --test
scripts/build.sh
cd "$build_dir"
ctest --output-on-failure -j "${COBBLE_JOBS:-2}" --timeout 600 "$@"
