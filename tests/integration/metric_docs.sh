#!/usr/bin/env bash
# The metric catalogue is the public API: every family `qrel metrics` lists must be documented in
# docs/metrics.md with its type, and the docs must not describe a family the exporter lacks.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

docs=$QREL_SOURCE_DIR/docs/metrics.md
"$QREL" metrics > "$T/catalogue.tsv"
expect_cmd "qrel metrics lists families" test "$(wc -l < "$T/catalogue.tsv")" -ge 25
while IFS=$'\t' read -r name type help; do
  if grep -q "\`$name\`" "$docs"; then ok "$name is documented"; else not_ok "$name is missing from docs/metrics.md"; fi
  # The row's Meaning column is the HELP text, word for word (| `name` | type | labels | meaning | ...)
  meaning=$(NAME=$name awk -F' [|] ' 'index($0, "| `" ENVIRON["NAME"] "` |") == 1 { print $4; exit }' "$docs")
  expect_eq "docs/metrics.md row of $name says its HELP" "$meaning" "$help"
  case $name in
    *_total) [ "$type" = counter ] && ok "$name is a counter" || not_ok "$name ends in _total but is a $type" ;;
    *_seconds) case $type in gauge|summary) ok "$name is a $type" ;; *) not_ok "$name is a $type without _total" ;; esac ;;
    *) [ "$type" = gauge ] && ok "$name is a gauge" || not_ok "$name is a $type without _total" ;;
  esac
done < "$T/catalogue.tsv"
# Families the docs name in backticks that the exporter does not have.
while read -r name; do
  if cut -f1 "$T/catalogue.tsv" | grep -qx "$name"; then :; else not_ok "docs/metrics.md names $name, which the exporter does not export"; fi
done < <(grep -oE '`qrel_[a-z0-9_]+`' "$docs" | tr -d '`' | sort -u)
finish
