#!/usr/bin/env bash
# Builds CAF 0.17.6 (libcaf_core) with ThreadSanitizer into DIR, from the source of Debian's
# own package (apt-get source actor-framework, the version libcaf-dev is), unless DIR holds it
# already. ThreadSanitizer sees the happens-before edges of code it instrumented only:
# against Debian's uninstrumented libcaf_core every message between two actors (sent by one
# thread, read by another through CAF's mailbox) would be reported as a data race. Takes
# about two minutes on two cores.
#   scripts/lib/caf-tsan.sh DIR
set -euo pipefail
dir=$(realpath -m "$1")
if [ -f "$dir/lib/libcaf_core.so" ] && [ -f "$dir/include/caf/all.hpp" ]; then
  exit 0
fi
work="$dir.work"
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/sources.list.d"
# The machine's own Debian archive, as source entries (deb822 files and one-line lists).
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$work/apt/sources.list.d/$(basename "$f")"
done
if [ -f /etc/apt/sources.list ]; then
  sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$work/apt/sources.list"
else
  : >"$work/apt/sources.list"
fi
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/sources.list"
          -o "Dir::Etc::SourceParts=$work/apt/sources.list.d"
          -o "Dir::State::Lists=$work/apt/lists" -o "APT::Sandbox::User=root")
version=$(dpkg-query -W -f='${source:Version}' libcaf-dev)
echo "caf-tsan: fetching the source of actor-framework $version (Debian's libcaf-dev)"
apt-get "${apt_opts[@]}" -qq update
(cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only --tar-only \
  "actor-framework=$version")
tar -xzf "$work"/actor-framework_*.orig.tar.gz -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name 'actor-framework-*' | head -n 1)
echo "caf-tsan: building libcaf_core with -fsanitize=thread into $dir"
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  "-DCMAKE_CXX_FLAGS=-fsanitize=thread -g1" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1" \
  -DCMAKE_INSTALL_PREFIX="$dir" -DCMAKE_INSTALL_LIBDIR=lib \
  -DCAF_NO_IO=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_EXAMPLES=yes -DCAF_NO_TOOLS=yes \
  -DCAF_NO_PYTHON=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_OPENCL=yes -DCAF_NO_AUTO_LIBCPP=yes \
  -DCAF_NO_COMPILER_CHECK=yes -DCAF_NO_SUMMARY=yes >/dev/null
cmake --build "$work/build" -j "${COBBLE_JOBS:-2}"
cmake --install "$work/build" >/dev/null
rm -rf "$work"
echo "caf-tsan: done"
