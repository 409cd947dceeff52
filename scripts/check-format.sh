#!/usr/bin/env bash
# Checks that every tracked C++ file is formatted as .clang-format says (Debian 12's
# clang-format 14). Prints FILE:LINE of every line that differs and fails if there is one.
# To fix: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format="${CLANG_FORMAT:-clang-format}"
git ls-files -z '*.cpp' '*.hpp' | xargs -0 "$clang_format" --dry-run -Werror
echo "format: ok"
