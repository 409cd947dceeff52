#!/usr/bin/env bash
# Speed benchmark of the emulator (not a test): runs the two benchmark scenarios of
# tools/sim/bench/ in-process and prints wall and CPU time. Targets (docs/emulator.md):
# 1 host x 365 virtual days at 60 s steps < 10 s; 1,000 hosts x 10 virtual days < 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."
sim=${COBBLE_SIM:-build/tools/sim/cobble-sim}
[ -x "$sim" ] || { echo "bench-sim: build cobble-sim first (ninja -C build cobble-sim)" >&2; exit 2; }
for s in one_host_year thousand_hosts; do
  start=$(date +%s.%N)
  out=$( { /usr/bin/time -f "cpu %U user + %S sys s" "$sim" run -q "tools/sim/bench/$s.yaml"; } 2>&1 )
  end=$(date +%s.%N)
  echo "== $s"
  echo "$out" | grep -E "host-steps|^cpu|^overall"
  awk -v a="$start" -v b="$end" 'BEGIN { printf "wall %.2f s (process)\n", b - a }'
done
