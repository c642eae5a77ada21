#!/usr/bin/env bash
# Fails when a C file of the program (core/, exporter/, cli/, collectors/) is over 900 lines and
# its opening comment does not say why it is one file: a long file usually holds several jobs,
# and splitting it along its seams is cheaper while it is young (issue 22). A file that must stay
# long says so in its opening paragraph with the words "one file because".
set -u
limit=900
status=0
for f in "$@"; do
  case "$f" in core/*.c | exporter/*.c | cli/*.c | collectors/*.c) ;; *) continue ;; esac
  lines=$(wc -l < "$f")
  [ "$lines" -le "$limit" ] && continue
  # The opening comment: from the first line to the first line that closes a comment.
  if sed -n '1,/\*\//p' "$f" | grep -q 'one file because'; then
    continue
  fi
  echo "  $f: $lines lines (over $limit): split it along its seams, or say in its opening paragraph why it is one file (\"one file because …\")" >&2
  status=1
done
exit $status
