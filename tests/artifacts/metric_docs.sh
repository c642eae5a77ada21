#!/usr/bin/env bash
# The metric catalogue and the configuration keys are the public API: every family `qrel metrics`
# lists must be documented in docs/metrics.md with its type, and the docs must not describe a
# family the exporter lacks; every key the configuration reads (each kind's, each nested entry's,
# the top level's) must be documented where a user looks for it.
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

# Configuration keys: the exporter names the keys a mapping reads when it refuses an unknown one
# ("unknown key ... (known keys: a, b, c)"), so the lists below come from the code, not from a
# copy. A key is documented when a doc has it in backticks, alone or as a part of a path
# (`dlq_visibility_timeout`, `audit.queue_series`, `sources[].name`, `work_table.source`).
# keys_of WHAT YAML: the keys the mapping holding qrel_no_such_key reads (YAML: printf %b text).
keys_of() {
  printf '%b' "$2" > "$T/keys.yml"
  { "$EXPORTER" --config.file="$T/keys.yml" --config.check 2>&1 || true; } |
    sed -n 's/.*unknown key "qrel_no_such_key" in .* (known keys: \(.*\))$/\1/p' | tr -d ,
}
# expect_keys_documented WHAT YAML DOC...: every key of that mapping is in one of the docs.
expect_keys_documented() {
  local what=$1 yaml=$2 keys key
  shift 2
  keys=$(keys_of "$what" "$yaml")
  expect_cmd "$what: the exporter lists the keys it reads ($(wc -w <<<"$keys"))" test -n "$keys"
  for key in $keys; do
    if grep -qE "\`([a-z_]+(\[\])?\.)*$key(\[\])?(\.[a-z_.]+)?\`" "$@"; then ok "$what: $key is documented"
    else not_ok "$what: key $key is in none of: ${*#"$QREL_SOURCE_DIR"/}"; fi
  done
}
d=$QREL_SOURCE_DIR/docs
ops=$QREL_SOURCE_DIR/docs/operations.md # its configuration table: the top level and every source's keys
printf 'sources:\n  - {name: s, kind: qrel_no_such_kind}\n' > "$T/kinds.yml"
kinds=$({ "$EXPORTER" --config.file="$T/kinds.yml" --config.check 2>&1 || true; } | sed -n 's/.*kind: want one of \(.*\), got .*/\1/p' | tr -d ,)
expect_cmd "the exporter lists its kinds ($(wc -w <<<"$kinds"))" test "$(wc -w <<<"$kinds")" -ge 12
# What a kind needs before it reads a nested mapping.
declare -A parent=([postgres]="host: x, " [redis_stream]="address: 'x:1', " [nats]="url: 'http://x:1', "
  [kafka]="bootstrap_servers: 'x:1', " [pubsub]="project: p, ")
for kind in $kinds; do
  src="sources:\n  - {name: s, kind: $kind, ${parent[$kind]:-}"
  expect_keys_documented "kind $kind" "${src}qrel_no_such_key: 1}\n" "$d/kinds/${kind%%_*}"*.md "$ops"
  if [[ " $(keys_of "$kind" "${src}qrel_no_such_key: 1}\n") " == *" tls_config "* ]]; then
    expect_keys_documented "kind $kind tls_config" "${src}tls_config: {qrel_no_such_key: 1}}\n" "$d/kinds/${kind%%_*}"*.md
  fi
done
# The nested mappings, each inside the least its parent needs to reach it.
pg="sources:\n  - {name: s, kind: postgres, ${parent[postgres]}"
for list in claim_tables dedup_tables outboxes queues queries; do
  expect_keys_documented "postgres $list" "$pg$list: [{qrel_no_such_key: 1}]}\n" "$d/kinds/postgres"*.md
done
expect_keys_documented "postgres queries[].metrics" \
  "${pg}queries: [{name: q, sql: 'select 1', metrics: [{qrel_no_such_key: 1}]}]}\n" "$d/kinds/postgres-sql.md"
for nested in redis_stream:streams nats:streams kafka:groups; do
  kind=${nested%%:*} list=${nested#*:}
  expect_keys_documented "$kind $list" "sources:\n  - {name: s, kind: $kind, ${parent[$kind]}$list: [{qrel_no_such_key: 1}]}\n" \
    "$d/kinds/$kind.md"
done
expect_keys_documented "the top level" 'qrel_no_such_key: 1\n' "$ops"
expect_keys_documented "global" 'global: {qrel_no_such_key: 1}\n' "$ops"
expect_keys_documented "audit" 'audit: {qrel_no_such_key: 1}\n' "$d/check.md"
expect_keys_documented "dead_letters" 'dead_letters: [{qrel_no_such_key: 1}]\n' "$d/dead-letters.md"
expect_keys_documented "dead_letters work_table" \
  "${pg}claim_tables: [{table: t, id_column: i, claimed_at_column: c, done_at_column: d, in_flight_window: 1m}]}
  - {name: r, kind: redis_stream, address: 'x:1', streams: [{name: o, groups: [g], dead_letter_stream: x}]}
dead_letters: [{source: r, queue: o, id_field: f, work_table: {source: s, qrel_no_such_key: 1}}]\n" "$d/dead-letters.md"
# And the check can fail: a key no doc names is caught.
grep -qE '`([a-z_]+(\[\])?\.)*qrel_no_such_key(\[\])?(\.[a-z_.]+)?`' "$d"/*.md "$ops" &&
  not_ok "a doc names qrel_no_such_key" || ok "no doc names qrel_no_such_key"
finish
