#!/usr/bin/env bash
# The man pages qrel(1) and qrel_exporter(1) say what the programs' --help says, and no more
# flags: packaging/manpage.sh writes them from --help at build time, and this test renders each
# page with groff and finds every line of every --help (the program's and each command's) in it,
# and the same set of --flags both ways. groff must render them without a warning (lintian
# checks that too). A help line the page lacks is caught (checked with a made-up one).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

command -v groff >/dev/null || { echo "groff missing (Debian package groff-base)" >&2; exit 1; }

# all_help PROG NAME: the program's --help, then the --help of each command it lists that answers
# with its own usage line (as manpage.sh picks them).
all_help() {
  local prog=$1 name=$2 top cmd sub
  top=$("$prog" --help)
  printf '%s\n' "$top"
  for cmd in $(awk '/^Commands:$/ { on = 1; next } /^$/ || /^[^ ]/ { on = 0 } on && /^  [^ ]/ { print $1 }' <<<"$top"); do
    sub=$("$prog" "$cmd" --help 2>/dev/null) || continue
    case $(head -1 <<<"$sub") in "usage: $name $cmd"*) printf '%s\n' "$sub" ;; esac
  done
}

# missing HELP_FILE PAGE_TEXT: prints each piece of help text the rendered page lacks. Pieces:
# each line with its indentation and "usage: " dropped; an item line ("  tag  text") is two
# pieces. Section titles ("Flags:") are the page's headings, not text.
missing() {
  local help=$1 page=$2 line piece pieces
  while IFS= read -r line; do
    [[ -z "${line// /}" || "$line" =~ ^[^\ ].*:$ ]] && continue
    line=${line#usage: }
    if [[ "$line" =~ ^\ \ ([^ ].*[^ ])\ \ +(.*)$ ]]; then
      pieces=("${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")
    else
      pieces=("$line")
    fi
    for piece in "${pieces[@]}"; do
      piece=$(tr -s ' ' <<<"${piece#"${piece%%[! ]*}"}")
      grep -qF -- "$piece" "$page" || printf '%s\n' "$piece"
    done
  done <"$help"
}

flags_of() { grep -oE -- '--[a-z][a-z0-9.-]*[a-z0-9]' "$1" | sort -u; }

for name in qrel_exporter qrel; do
  page=$QREL_BUILD_DIR/man/$name.1
  expect_cmd "$name.1 was built" test -s "$page"
  expect_cmd "$name.1.gz was built" test -s "$page.gz"
  [ -s "$page" ] || continue
  all_help "$QREL_BUILD_DIR/$name" "$name" >"$T/$name.help"
  groff -man -Tascii -P-cbou -rLL=400n -ww "$page" 2>"$T/$name.groff.err" | tr -s ' \n' ' ' >"$T/$name.txt"
  expect_eq "groff renders $name.1 without warnings" "$(cat "$T/$name.groff.err")" ""
  expect_eq "every line of $name's --help is in $name.1" "$(missing "$T/$name.help" "$T/$name.txt")" ""
  expect_eq "$name.1 and --help list the same flags" "$(flags_of "$T/$name.txt" | tr '\n' ' ')" \
    "$(flags_of "$T/$name.help" | tr '\n' ' ')"
  expect_cmd "$name.1 has NAME, SYNOPSIS and the name" grep -qE "NAME $name - .*SYNOPSIS $name " "$T/$name.txt"
  expect_eq "the .gz is the page" "$(gzip -dc "$page.gz" | cmp - "$page" && echo same)" same
done
expect_cmd "qrel.1 has a section per command with flags" grep -qE 'QREL SCRAPE .*QREL CHECK ' "$T/qrel.txt"
expect_cmd "qrel_exporter.1 lists --config.file with its default" \
  grep -qF -- '--config.file=VALUE Configuration file (YAML). (default: qrel.yml)' "$T/qrel_exporter.txt"

# The comparison can fail: a help line that is not in the page is reported.
{ cat "$T/qrel_exporter.help"; printf '  --made.up=VALUE\n      A flag the page does not have.\n'; } >"$T/fake.help"
expect_eq "a help line missing from the page is caught" \
  "$(missing "$T/fake.help" "$T/qrel_exporter.txt" | tr '\n' '|')" \
  "--made.up=VALUE|A flag the page does not have.|"
finish
