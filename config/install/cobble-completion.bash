# Bash completion of cobble, cobbled and cobble-sim (docs/cli.md), read from the programs' own
# --help, so it always matches the version installed: subcommands and options at each level,
# file names after an option that takes a value. `cmake --install` puts it in
# share/bash-completion/completions/ under each program's name; or source it from ~/.bashrc.

_cobble_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local prev=""
  ((COMP_CWORD > 1)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  local help
  # After an option whose help line (at the level before it) names a type (TEXT, INT,
  # FLOAT...): its value, a file name. (Asking with the option itself in the words would make
  # --help its value.)
  if [[ $prev == -* ]]; then
    help=$("${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:COMP_CWORD-2}" --help 2>/dev/null)
  fi
  if [[ $prev == -* ]] && awk -v want="$prev" '
      /^Options:/ { on = 1; next }
      /^[^ ]/ { on = 0 }
      on && /^  -/ {
        n = split($1, names, ",")
        for (i = 1; i <= n; i++)
          if (names[i] == want && $2 ~ /^[A-Z]/) found = 1
      }
      END { exit !found }' <<<"$help"; then
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return
  fi
  help=$("${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:COMP_CWORD-1}" --help 2>/dev/null)
  local words
  words=$(awk '
    /^Options:/ { part = "options"; next }
    /^Subcommands:/ { part = "commands"; next }
    /^[^ ]/ { part = "" }
    part == "commands" && /^  [a-z]/ { print $1 }
    part == "options" && /^  -/ {
      n = split($1, names, ",")
      for (i = 1; i <= n; i++) print names[i]
    }' <<<"$help")
  mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
}
complete -o default -F _cobble_complete cobble cobbled cobble-sim
