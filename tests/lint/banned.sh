#!/usr/bin/env bash
# Fails when C sources use functions the house style bans: they either cannot bound their output
# (sprintf, strcpy, strcat, gets) or cannot report a parse error (atoi, atol). Also fails when
# program code moves the clock: deadline_advance_for_tests is the unit tests' seam (core/deadline.c)
# and nothing outside tests/ may call it.
set -u
status=0
for f in "$@"; do
  if grep -nE '\b(sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|atoll)\s*\(' "$f" \
      | grep -vE '\b(snprintf|vsnprintf)\s*\('; then
    echo "  in $f: banned function (use snprintf, memcpy, strtol with checks)" >&2
    status=1
  fi
  case "$f" in
    tests/* | core/deadline.[ch]) ;;
    *)
      if grep -n '\bdeadline_advance_for_tests\s*(' "$f"; then
        echo "  in $f: deadline_advance_for_tests is for unit tests only" >&2
        status=1
      fi
      ;;
  esac
done
exit $status
