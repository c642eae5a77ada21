#!/usr/bin/env bash
# Fails when C sources use functions the house style bans: they either cannot bound their output
# (sprintf, strcpy, strcat, gets) or cannot report a parse error (atoi, atol). Also fails when
# program code moves the clock: deadline_advance_for_tests is the unit tests' seam (core/deadline.c)
# and nothing outside tests/ may call it.
# One grep over all the files for each rule (a grep per file cost 5 s of the lint stage).
set -u
status=0
[ $# -gt 0 ] || exit 0
if grep -nHE '\b(sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|atoll)\s*\(' "$@" \
    | grep -vE '\b(snprintf|vsnprintf)\s*\('; then
  echo "  banned function above (use snprintf, memcpy, strtol with checks)" >&2
  status=1
fi
programs=()
for f in "$@"; do
  case "$f" in
    tests/* | core/deadline.[ch]) ;;
    *) programs+=("$f") ;;
  esac
done
if [ ${#programs[@]} -gt 0 ] && grep -nH '\bdeadline_advance_for_tests\s*(' "${programs[@]}"; then
  echo "  deadline_advance_for_tests above is for unit tests only" >&2
  status=1
fi
exit $status
