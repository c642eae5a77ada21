#!/usr/bin/env bash
# Fails when C sources use functions the house style bans: they either cannot bound their output
# (sprintf, strcpy, strcat, gets) or cannot report a parse error (atoi, atol).
set -u
status=0
for f in "$@"; do
  if grep -nE '\b(sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|atoll)\s*\(' "$f" \
      | grep -vE '\b(snprintf|vsnprintf)\s*\('; then
    echo "  in $f: banned function (use snprintf, memcpy, strtol with checks)" >&2
    status=1
  fi
done
exit $status
