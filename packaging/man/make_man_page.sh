#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Writes PROGRAM's man page, gzipped as Debian wants it, from the program's own --help and
# --version (help2man), so the page never disagrees with the program:
#
#   make_man_page.sh PROGRAM NAME-LINE OUT.1.gz [INCLUDE.h2m]
#
# For nnstudio-cli, each command's `--help` becomes a subsection of COMMANDS, its options a
# tagged list. INCLUDE adds hand-written sections (SEE ALSO, FILES, ...).
set -euo pipefail
program=$1 name=$2 out=$3 include=${4:-}
export LC_ALL=C.UTF-8
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

roff_escape() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^[.']/\\\\\\&&/"; }

extra=$work/extra.h2m
: >"$extra"
[[ -n $include ]] && cat "$include" >>"$extra"

# The commands, when the program has any ("Commands:" in its help).
commands=$("$program" --help | awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }')
if [[ -n $commands ]]; then
  {
    echo "[COMMANDS]"
    for c in $commands; do
      "$program" "$c" --help | roff_escape | awk '
        NR == 1 { sub(/^Usage: /, ""); printf ".SS \"%s\"\n", $0; next }
        /^$/ { section = ""; next }
        /^[A-Z][a-z]+:$/ { section = $0; next }
        section == "" { print; next }
        /^  [^ ]/ {
          # "  --epochs N            passes over ...": the option (and its value), then the text.
          line = substr($0, 3)
          split(line, parts, /  +/)
          head = parts[1]
          text = substr(line, length(head) + 1)
          sub(/^ +/, "", text)
          n = split(head, words, / /)
          if (words[1] ~ /,$/) { printf ".TP\n\\fB%s\\fR\n%s\n", head, text; next }  # "-h, --help"
          printf ".TP\n\\fB%s\\fR", words[1]
          for (i = 2; i <= n; ++i) printf " \\fI%s\\fR", words[i]
          printf "\n%s\n", text
          next
        }
        { sub(/^ +/, ""); print }'
    done
  } >>"$extra"
fi

help2man --no-info --section=1 --name="$name" --include="$extra" --output="$work/page.1" "$program"
gzip -9n -c "$work/page.1" >"$out.tmp"
mv "$out.tmp" "$out"
