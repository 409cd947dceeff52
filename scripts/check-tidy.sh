#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over Cobble's own sources, from the compile commands that
# CMake exports into a build directory; fails on any finding.
#   scripts/check-tidy.sh [BUILD_DIR] [FILE_REGEX]
# BUILD_DIR defaults to ./build-asan, the test suite's (configure one first: scripts/test.sh
# or scripts/build.sh); FILE_REGEX picks the files (default: every .cpp of actors/, storage/,
# net/, config/ and tools/, with the headers they include). The tests are left out by
# default, as in CI: they are 40 % of what the compiler parses, and without them the check
# still took 18 minutes on two cores; give the regex '^.*/tests/.*\.cpp$' to check them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build_dir="${1:-build-asan}"
files="${2:-^$root/(actors|storage|net|config|tools)/.*\.cpp$}"
if [ ! -f "$build_dir/compile_commands.json" ]; then
  echo "check-tidy: $build_dir/compile_commands.json is missing; run scripts/test.sh (or scripts/build.sh) first" >&2
  exit 2
fi
run_clang_tidy="$(command -v run-clang-tidy || command -v run-clang-tidy-14)"
# -quiet: only findings. Findings are errors (.clang-tidy: WarningsAsErrors), so the run fails.
set +e
"$run_clang_tidy" -quiet -j "${COBBLE_JOBS:-2}" -p "$build_dir" "$files" 2>&1 \
  | grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^clang-tidy-14 '
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ]; then
  echo "tidy: failed" >&2
  exit 1
fi
echo "tidy: ok"
