#!/usr/bin/env bash
# Checks that every folder includes only what it may (the layering of docs/architecture.md):
#
#   folder    may include our headers from      protocol libraries (XML, JSON, HTTP)
#   storage/  storage/                          no
#   config/   config/                           no
#   actors/   actors/ storage/ config/          no
#   net/      net/ actors/ storage/ config/     yes
#   tools/, tests/: anything
#
# Prints every offending include as FILE:LINE: what, and fails if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
  [storage]="storage"
  [config]="config"
  [actors]="actors storage config"
  [net]="net actors storage config"
)
# The libraries that carry protocol types; they stay in net/ (and tools/, tests/).
protocol='^(boost/beast|boost/asio|pugixml|nlohmann/)'
bad=0
for folder in storage config actors net; do
  while IFS= read -r file; do
    while IFS=: read -r line text; do
      target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1/' <<<"$text")
      top=${target%%/*}
      if [[ "$text" =~ \" && "$target" == */* ]]; then
        ok=0
        for a in ${allowed[$folder]}; do [ "$top" = "$a" ] && ok=1; done
        if [ "$ok" = 0 ]; then
          echo "$file:$line: $folder/ may not include \"$target\" (it may include ${allowed[$folder]// /\/, }/)"
          bad=1
        fi
      elif [[ "$folder" != net && "$target" =~ $protocol ]]; then
        echo "$file:$line: $folder/ may not include <$target>: protocol types (XML, JSON, HTTP) stay in net/"
        bad=1
      fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$file" || true)
  done < <(git ls-files "$folder/*.cpp" "$folder/*.hpp")
done
if [ "$bad" != 0 ]; then
  echo "layering: failed (the layers: README.md, \"Development\")" >&2
  exit 1
fi
echo "layering: ok"
