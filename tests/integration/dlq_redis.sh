#!/usr/bin/env bash
# `qrel dlq` on a Redis stream, against a real redis-server and a real PostgreSQL, with dead
# letters made the way the incident demo makes them: two runs of the demo's mailer
# (qrel_demo_workload, one per stream: orders and invoices) with a provider slower than two
# leases, stopped while some emails are still being sent, so that each dead-letter stream holds
# orders whose email was sent (done) and orders whose claim is still open (not done).
#   inspect: counts per class exact against the claim table and against the dedup table (after a
#            retention purge of part of it), deliveries and dead_since as the entries carry them;
#   inspect and a dry run change nothing (both streams and both tables compared before/after);
#   replay --yes moves exactly the not-done entries, fields intact and in order, and leaves the
#            done ones; a second replay moves nothing;
#   a replay whose XADD fails removes nothing and exits 1 naming the ids;
#   a replay SIGKILLed after N entries reached the stream, run again, ends with every not-done
#            entry replayed and none lost; SIGTERM stops a replay before its next entry (exit 1).
# Redis users with the least permissions docs/dlq.md gives run inspect and replay.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

WORKLOAD=$QREL_BUILD_DIR/qrel_demo_workload
if [ ! -x "$WORKLOAD" ]; then
  not_ok "missing $WORKLOAD (it needs QREL_WITH_REDIS_STREAM and QREL_WITH_POSTGRES)"
  finish
fi
start_redis RP
start_postgres PGP
R() { redis-cli -p "$RP" "$@"; }
PG="host=127.0.0.1 port=$PGP user=postgres dbname=postgres"

# ---- dead letters, made by the demo's consumers ------------------------------------------------
# The provider answers in 1-4 s against a 300 ms lease: the third delivery (max 2) finds a young
# open claim and dead-letters the entry while the first attempt still waits for the provider.
R SET qrel-demo:phase incident >/dev/null
run_workload() { # STREAM
  "$WORKLOAD" --redis "127.0.0.1:$RP" --postgres "$PG" --stream "$1" --dead-letter-stream "$1.dlq" \
    --outbox-table "outbox_$1" --rate 4 --consumers 20 --lease 300ms --max-deliveries 2 \
    --in-flight-window 30s --poll 100ms --incident-latency 1s-4s --report-every 0 \
    > "$T/workload-$1.log" 2>&1 &
  PIDS+=("$!")
  WPIDS+=("$!")
}
WPIDS=()
run_workload orders
started() { grep -q 'phase=' "$T/workload-orders.log"; }
expect_cmd "the first workload starts (and creates the tables)" wait_for -i 0.2 10 "the workload" started
run_workload invoices
enough() {
  [ "$(R XLEN orders.dlq)" -ge 10 ] && [ "$(R XLEN invoices.dlq)" -ge 10 ] &&
    [ "$(psql_val "SELECT count(*) FROM confirmation_claims WHERE sent_at IS NOT NULL")" -ge 8 ]
}
expect_cmd "the consumers dead-letter 10 entries per stream, some emails sent (within 30 s)" \
  wait_for -i 0.2 30 "dead letters" enough
# Stopped as the demo is, with SIGTERM: a consumer waiting for the provider leaves its claim open.
kill -TERM "${WPIDS[@]}"
wait "${WPIDS[@]}" || true

# The least Redis permissions docs/dlq.md gives: reading the dead-letter streams for inspect (and
# dry runs), and adding to the streams and deleting from the dead-letter streams for replay.
echo 'dlq-pw-4417' > "$T/redis.pw"
R ACL SETUSER qrel-inspect on '>dlq-pw-4417' resetkeys '%R~orders.dlq' '%R~invoices.dlq' -@all +xlen +xrange >/dev/null
R ACL SETUSER qrel-replay on '>dlq-pw-4417' resetkeys '%R~orders.dlq' '%R~invoices.dlq' '%W~orders' \
  '%W~invoices' '~orders.dlq' '~invoices.dlq' -@all +xlen +xrange +xadd +xdel >/dev/null
# config FILE REDIS_USER WORK_TABLE QUEUE...: a dead_letters entry per queue, each on WORK_TABLE,
# the Redis source logged in as REDIS_USER ("": the default user).
config() {
  local file=$1 user=$2 wt=$3 q
  shift 3
  cat > "$file" <<YML
sources:
$(redis_source shop-redis "$RP")
    ${user:+username: $user}
    ${user:+password_file: $T/redis.pw}
    streams:
      - name: orders
        dead_letter_stream: orders.dlq
      - name: invoices
        dead_letter_stream: "{stream}.dlq"
$(pg_source shop-db "$PGP")
    dedup_tables:
      - {table: handled_orders, id_column: order_id, handled_at_column: handled_at}
dead_letters:
YML
  for q; do
    printf '  - source: shop-redis\n    queue: %s\n    id_field: order\n    work_table: %s\n' "$q" "$wt" >> "$file"
  done
}
claims="{source: shop-db, table: confirmation_claims, id_column: order_id, done_column: sent_at}"
config "$T/claims.yml" qrel-replay "$claims" orders invoices
config "$T/inspect.yml" qrel-inspect "$claims" orders invoices
config "$T/dedup.yml" "" "{source: shop-db, table: handled_orders, id_column: order_id}" orders
# Every dead letter was delivered, so handled, once: a retention purge of every third order
# gives the dedup table some not-done ones.
psql_do "DELETE FROM handled_orders WHERE order_id % 3 = 0"

DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }
# entries STREAM: [[id, [field, value, ...]], ...]
entries() { R --json XRANGE "$1" - +; }
FIELD='def field(k): . as $f | [range(0; length; 2) | select($f[.] == k) | $f[. + 1]] | first;'
# expected_split DLQ DONE-SQL: "done not_done" of the stream's dead letters, each by its order
# field, as PostgreSQL says (done: a stamped claim, or a row of the dedup table).
expected_split() {
  local ids
  ids=$(entries "$1" | jq -r "$FIELD"' [.[] | .[1] | field("order")] | join(",")')
  psql_val "SELECT count(*) FILTER (WHERE $2), count(*) FILTER (WHERE NOT ($2))
            FROM unnest('{$ids}'::bigint[]) AS v(id)
            LEFT JOIN confirmation_claims c ON c.order_id = v.id
            LEFT JOIN handled_orders h ON h.order_id = v.id" | tr '|' ' '
}
# not_done_ids DLQ: the entry ids whose order has no stamped claim, sorted.
not_done_ids() {
  local values
  values=$(entries "$1" | jq -r "$FIELD"' [.[] | "('"'"'\(.[0])'"'"', \(.[1] | field("order")))"] | join(",")')
  [ -n "$values" ] || return 0
  psql_val "SELECT v.id FROM (VALUES $values) AS v(id, o)
            LEFT JOIN confirmation_claims c ON c.order_id = v.o WHERE c.sent_at IS NULL" | sort
}
snapshot() {
  for s in orders orders.dlq invoices invoices.dlq; do entries "$s"; done
  psql_val "SELECT json_agg(c ORDER BY order_id) FROM confirmation_claims c"
  psql_val "SELECT json_agg(h ORDER BY order_id) FROM handled_orders h"
}

# ---- inspect -----------------------------------------------------------------------------------
snapshot > "$T/before.txt"
for q in orders invoices; do
  read -r ndone nnot <<<"$(expected_split "$q.dlq" "c.sent_at IS NOT NULL")"
  n=$(R XLEN "$q.dlq")
  DLQ inspect --config.file="$T/inspect.yml" --source=shop-redis --queue="$q" --format=json > "$T/$q.json"
  echo "     $q.dlq: $n dead letters, $ndone done and $nnot not done by the claim table"
  expect_eq "$q: inspect's split against the claim table (done not_done unknown total read)" \
    "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/$q.json")" \
    "$ndone $nnot 0 $n $n"
  expect_cmd "$q: both classes present (done $ndone, not done $nnot)" test "$ndone" -gt 0 -a "$nnot" -gt 0
  expect_eq "$q: names" "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind) \(.read_effect)"' "$T/$q.json")" \
    "$q.dlq $q redis_stream null"
  # The mailer dead-letters at the delivery after max-deliveries (2): each entry says 3.
  expect_eq "$q: deliveries from the entries' field" \
    "$(jq -c '[.deliveries.min, .deliveries.max, .deliveries.unknown, .deliveries.histogram]' "$T/$q.json")" \
    "[3,3,0,[{\"from\":3,\"to\":3,\"messages\":$n}]]"
  expect_eq "$q: dead_since from the first and last entry ids (ms)" \
    "$(jq -r '"\(.dead_since.oldest * 1000 | round) \(.dead_since.newest * 1000 | round)"' "$T/$q.json")" \
    "$(entries "$q.dlq" | jq -r '"\(.[0][0] | split("-")[0]) \(.[-1][0] | split("-")[0])"')"
done
read -r ndone nnot <<<"$(expected_split orders.dlq "h.order_id IS NOT NULL")"
DLQ inspect --config.file="$T/dedup.yml" --source=shop-redis --queue=orders --format=json > "$T/dedup.json"
expect_eq "orders: inspect's split against the dedup table (done not_done unknown)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/dedup.json")" "$ndone $nnot 0"
expect_cmd "orders/dedup: both classes present (done $ndone, not done $nnot)" test "$ndone" -gt 0 -a "$nnot" -gt 0
DLQ inspect --config.file="$T/inspect.yml" --source=shop-redis --queue=orders --sample=2 > "$T/inspect.txt"
sed 's/^/     /' "$T/inspect.txt"
expect_cmd "text: the not_done line" grep -qE "^  not_done +$(jq .classes.not_done "$T/orders.json")  " "$T/inspect.txt"
expect_eq "text: --sample=2 ids of the done class" \
  "$(grep -oE '^sample done: [0-9]+-[0-9]+ \([0-9]+\), [0-9]+-[0-9]+ \([0-9]+\)(, … \([0-9]+ more\))?$' "$T/inspect.txt" | wc -l)" 1
rc=0
DLQ inspect --config.file="$T/claims.yml" --source=shop-redis --queue=refunds > /dev/null || rc=$?
expect_eq "an entry that does not exist: exit 2" "$rc" 2
expect_cmd "... and the error lists the entries there are" grep -qF \
  'no dead_letters entry for source "shop-redis" and queue "refunds" (entries: --source=shop-redis --queue=orders; --source=shop-redis --queue=invoices)' "$T/dlq.err"

# ---- dry run -----------------------------------------------------------------------------------
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=shop-redis --queue=orders --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run (as the read-only user): exit 0" "$rc" 0
expect_eq "dry run: would move exactly the not-done entries" \
  "$(jq -r '.replay.would_move[].message_id' "$T/dry.json" | sort)" "$(not_done_ids orders.dlq)"
expect_eq "dry run: moved nothing, skipped the done ones" \
  "$(jq -r '"\(.replay.dry_run) \(.replay.moved | length) \(.replay.skipped.done.count)"' "$T/dry.json")" \
  "true 0 $(jq .classes.done "$T/orders.json")"
DLQ replay --config.file="$T/inspect.yml" --source=shop-redis --queue=orders > "$T/dry.txt"
expect_cmd "dry run (text) says so" grep -qE "^dry run, nothing changed: would move $(jq .classes.not_done "$T/orders.json") to orders: " "$T/dry.txt"
# The read-only user cannot move anything: the first XADD is refused, nothing is removed.
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=shop-redis --queue=orders --yes > "$T/noperm.txt" || rc=$?
expect_eq "replay --yes as the read-only user: exit 1" "$rc" 1
expect_cmd "... refused with NOPERM" grep -qE '^  [0-9]+-[0-9]+ \([0-9]+\): not put back on orders, left dead: .*NOPERM' "$T/noperm.txt"
snapshot > "$T/after.txt"
expect_cmd "inspect, dry runs and the refused replay changed nothing (4 streams, 2 tables)" cmp -s "$T/before.txt" "$T/after.txt"

# ---- replay ------------------------------------------------------------------------------------
want_moved=$(not_done_ids orders.dlq)
want_left=$(entries orders.dlq | jq -r '.[][0]' | sort | comm -23 - <(echo "$want_moved"))
mark=$(R --json XREVRANGE orders + - COUNT 1 | jq -r '.[0][0]')
# The fields of the not-done dead letters, in dead-letter order: what must reach orders.
entries orders.dlq | jq -c --arg ids "$want_moved" '[.[] | select(.[0] as $i | $ids | split("\n") | index($i)) | .[1]]' > "$T/want-fields.json"
rc=0
DLQ replay --config.file="$T/claims.yml" --source=shop-redis --queue=orders --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes: exit 0" "$rc" 0
expect_eq "replay moved exactly the not-done entries" "$(jq -r '.replay.moved[].message_id' "$T/replay.json" | sort)" "$want_moved"
expect_eq "... and they are on orders, after the mark, with their fields in order" \
  "$(R --json XRANGE orders "($mark" + | jq -c '[.[][1]]')" "$(cat "$T/want-fields.json")"
expect_eq "orders.dlq keeps exactly the done entries" "$(entries orders.dlq | jq -r '.[][0]' | sort)" "$want_left"
len=$(R XLEN orders)
rc=0
DLQ replay --config.file="$T/claims.yml" --source=shop-redis --queue=orders --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing" "$rc $(jq '.replay.moved | length' "$T/again.json")" "0 0"
expect_eq "... and orders did not grow" "$(R XLEN orders)" "$len"

# ---- a failing XADD removes nothing ------------------------------------------------------------
before=$(entries invoices.dlq)
R RENAME invoices invoices.saved >/dev/null
R SET invoices not-a-stream >/dev/null
rc=0
DLQ replay --config.file="$T/claims.yml" --source=shop-redis --queue=invoices --yes > "$T/fail.txt" || rc=$?
sed 's/^/     /' "$T/fail.txt"
expect_eq "replay onto a key that is no stream: exit 1" "$rc" 1
expect_eq "... failed ids, one a line with the reason" \
  "$(grep -A3 '^failed 3:$' "$T/fail.txt" | grep -cE '^  [0-9]+-[0-9]+ \([0-9]+\): not put back on invoices, left dead: .*WRONGTYPE')" 3
expect_cmd "... stops after 3 failures in a row" grep -qE '^not reached [0-9]+ \(stopped after failures in a row\)' "$T/fail.txt"
expect_eq "... and invoices.dlq is untouched" "$(entries invoices.dlq)" "$before"
R DEL invoices >/dev/null
R RENAME invoices.saved invoices >/dev/null

# ---- SIGKILL half-way, then again --------------------------------------------------------------
want=$(not_done_ids invoices.dlq)
nwant=$(grep -c . <<<"$want")
expect_cmd "invoices: at least 4 not-done dead letters to replay ($nwant)" test "$nwant" -ge 4
entries invoices.dlq | jq -c --arg ids "$want" '[.[] | select(.[0] as $i | $ids | split("\n") | index($i)) | .[1]] | sort' > "$T/want-inv.json"
mark=$(R --json XREVRANGE invoices + - COUNT 1 | jq -r '.[0][0]')
moved_since_mark() { R --json XRANGE invoices "($mark" + | jq length; }
base=$(R XLEN invoices)
"$QREL" dlq replay --config.file="$T/claims.yml" --source=shop-redis --queue=invoices --yes --rate=2/s \
  > "$T/killed.txt" 2>&1 &
KPID=$!
PIDS+=("$KPID")
two_in() { [ "$(R XLEN invoices)" -ge $((base + 2)) ]; }
expect_cmd "the paced replay puts 2 entries back" wait_for -i 0.02 10 "2 entries on invoices" two_in
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
got=$(moved_since_mark)
expect_cmd "killed half-way: $got of $nwant back on invoices" test "$got" -lt "$nwant"
rc=0
DLQ replay --config.file="$T/claims.yml" --source=shop-redis --queue=invoices --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0" "$rc" 0
# At most the one entry in flight at the kill is there twice (put back, not yet removed).
total=$(moved_since_mark)
expect_cmd "invoices got every not-done entry, at most one twice ($total for $nwant)" \
  test "$total" -ge "$nwant" -a "$total" -le $((nwant + 1))
expect_eq "every not-done entry's fields are on invoices" \
  "$(R --json XRANGE invoices "($mark" + | jq -c '[.[][1]] | unique')" "$(jq -c unique "$T/want-inv.json")"
expect_eq "invoices.dlq holds no not-done entry any more" "$(not_done_ids invoices.dlq)" ""
rc=0
DLQ replay --config.file="$T/claims.yml" --source=shop-redis --queue=invoices --yes --format=json > "$T/third.json" || rc=$?
expect_eq "a third run moves nothing" "$rc $(jq '.replay.moved | length' "$T/third.json")" "0 0"

# SIGTERM stops a replay before its next entry: what was moved is listed, the rest not reached.
left=$(R XLEN invoices.dlq)
base=$(R XLEN invoices)
"$QREL" dlq replay --config.file="$T/claims.yml" --source=shop-redis --queue=invoices --yes \
  --only=all --rate=1/s > "$T/term.txt" 2>&1 &
TPID=$!
PIDS+=("$TPID")
one_in() { [ "$(R XLEN invoices)" -ge $((base + 1)) ]; }
expect_cmd "the --only=all replay moves one" wait_for -i 0.02 10 "1 entry on invoices" one_in
kill -TERM "$TPID"
rc=0
wait "$TPID" || rc=$?
sed 's/^/     /' "$T/term.txt"
expect_eq "SIGTERM: exit 1" "$rc" 1
expect_cmd "... moved 1 listed" grep -qE '^moved 1 to invoices: [0-9]+-[0-9]+ \([0-9]+\)$' "$T/term.txt"
expect_cmd "... the rest not reached (interrupted)" grep -qE "^not reached $((left - 1)) \(interrupted\): " "$T/term.txt"
expect_eq "... and exactly that one left invoices.dlq" "$(R XLEN invoices.dlq) $(R XLEN invoices)" "$((left - 1)) $((base + 1))"

finish
