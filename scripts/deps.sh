#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever Cobble needs that this machine lacks.
#   scripts/deps.sh          what building and running the server needs
#   scripts/deps.sh --test   and what the tests and the house checks need (real BOINC
#                            client, Chromium, clang-format, clang-tidy, the sanitizers)
# Safe to run again: packages already present are left alone.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev librocksdb-dev libboost1.81-dev libyaml-cpp-dev catch2 libpugixml-dev
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libssl-dev libisal-dev libmimalloc-dev libsodium-dev zlib1g-dev
  libkainjow-mustache-dev
)
test_packages=(
  boinc-client curl procps time chromium
  clang clang-format clang-tidy libclang-rt-14-dev
)
case "${1:-}" in
  "") ;;
  --test) packages+=("${test_packages[@]}") ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac
missing=()
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Installing the boinc-client package starts a system client on port 31416, which the tests'
# own clients would meet. Stopped only when this script just installed it: a BOINC client the
# machine already ran (a volunteer's) is left alone.
if [[ " ${missing[*]:-} " == *" boinc-client "* ]] && command -v systemctl >/dev/null 2>&1 \
  && systemctl is-active --quiet boinc-client 2>/dev/null; then
  echo "deps: stopping the system BOINC client the boinc-client package just started"
  $sudo systemctl stop boinc-client 2>/dev/null || true
fi
