#!/usr/bin/env bash
# The bash completion (config/install/cobble-completion.bash) against the built programs:
# commands and options at each level, file names after an option that takes a value.
#   completion_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source "$2/config/install/cobble-completion.bash"
fail() {
  echo "completion_test: $*" >&2
  exit 1
}
# complete WORD... : the completions of the last word, one per line.
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _cobble_complete
  printf '%s\n' "${COMPREPLY[@]}"
}
cobble=$build/tools/cobble
top=$(complete_words "$cobble" "")
for w in status work backup --data-dir --json; do
  grep -qx -- "$w" <<<"$top" || fail "'cobble ' does not offer $w: $top"
done
[ "$(complete_words "$cobble" "wo")" = "work" ] || fail "'cobble wo' is not 'work'"
work=$(complete_words "$cobble" work c)
[ "$work" = $'create\ncancel' ] || fail "'cobble work c' offers: $work"
create=$(complete_words "$cobble" --data-dir /tmp work create --max-)
grep -qx -- "--max-error-results" <<<"$create" || fail "'work create --max-' offers: $create"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
touch "$dir/cobble.yaml"
files=$(complete_words "$build/tools/cobbled" --config "$dir/cob")
[ "$files" = "$dir/cobble.yaml" ] || fail "'cobbled --config DIR/cob' offers: $files"
[ "$(complete_words "$build/tools/cobbled" --check-c)" = "--check-config" ] ||
  fail "'cobbled --check-c' is not --check-config"
sim=$(complete_words "$build/tools/sim/cobble-sim" "")
grep -qx run <<<"$sim" || fail "'cobble-sim ' does not offer run: $sim"
echo "completion_test: ok"
