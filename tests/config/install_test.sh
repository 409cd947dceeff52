#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, as docs/operations.md describes it: the programs,
# the demo's app, the configuration to start from, the systemd unit and the docs land where
# they should; the installed cobbled accepts the installed configuration, and the installed
# demo finds its app; the unit runs what was installed and stays down after a fail-stop.
#   install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -rf "$prefix"
}
trap cleanup EXIT
fail() {
  echo "install_test: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$prefix/install.log" || fail "cmake --install failed"
for f in bin/cobbled bin/cobble bin/cobble-sim libexec/cobble/testapp etc/cobble/cobble.yaml \
  lib/systemd/system/cobbled.service share/doc/cobble/README.md \
  share/doc/cobble/operations.md share/doc/cobble/configuration.md \
  share/bash-completion/completions/cobble share/bash-completion/completions/cobbled; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done

unit=$prefix/lib/systemd/system/cobbled.service
config=$prefix/etc/cobble/cobble.yaml
grep -qx "ExecStart=$prefix/bin/cobbled --config $config --data-dir /var/lib/cobble" "$unit" ||
  fail "the unit does not start the installed cobbled with the installed configuration"
grep -qx "RestartPreventExitStatus=1 2 70" "$unit" || fail "the unit would restart after a fail-stop"
grep -qx "User=cobble" "$unit" || fail "the unit runs as no dedicated user"
if grep -q "@" "$unit"; then fail "the unit has an unconfigured @VARIABLE@"; fi

out=$("$prefix/bin/cobbled" --check-config --config "$config" --data-dir "$prefix/data") ||
  fail "the installed configuration does not pass --check-config: $out"
grep -q "project myproject: apps myapp" <<<"$out" || fail "--check-config said: $out"
[ ! -e "$prefix/data" ] || fail "--check-config made the data directory"

# Installing again (an upgrade) keeps the operator's configuration.
echo "# the operator's" >>"$config"
cmake --install "$build" --prefix "$prefix" >"$prefix/install.log" || fail "the second install failed"
grep -qx "# the operator's" "$config" || fail "installing again replaced the configuration"

# The installed demo finds its app in libexec/cobble. Read its output as it comes (a FIFO, each
# line within 60 s) up to the admin API's line, the last of the start.
mkfifo "$prefix/out"
"$prefix/bin/cobbled" --data-dir "$prefix/demo" --port 0 --admin-port 0 >"$prefix/out" 2>&1 &
pid=$!
exec 3<"$prefix/out"
app_line=""
while IFS= read -r -t 60 line <&3; do
  case $line in
    *"demo app:"*) app_line=$line ;;
    *"admin API:"*) break ;;
  esac
done
kill "$pid" 2>/dev/null || fail "the installed demo stopped early: '$app_line'"
wait "$pid" || true
pid=""
exec 3<&-
[[ $app_line == *"added from $prefix/libexec/cobble/testapp"* ]] ||
  fail "the installed demo did not find its app: '$app_line'"
echo "install_test: installed into $prefix and checked"
