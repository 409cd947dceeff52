#!/usr/bin/env bash
# Installs what is missing, builds, and starts cobbled on 127.0.0.1:8080 (its admin API on
# 127.0.0.1:8081) with the embedded demo project. Extra arguments go to cobbled (try --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
exec build/tools/cobbled --data-dir "${COBBLE_DATA_DIR:-$PWD/demo-data}" "$@"
