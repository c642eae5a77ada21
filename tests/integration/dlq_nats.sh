#!/usr/bin/env bash
# `qrel dlq` on JetStream (nats-server 2.9) with work tables in a real PostgreSQL. Messages are
# dead-lettered by JetStream itself: a durable pull consumer at max_deliver 2 whose worker (the
# stdlib client tests/peers/nats/jsctl.py) naks every delivery, and a dead-letter stream keeping
# the MAX_DELIVERIES advisories; the messages stay in their work-queue stream. inspect runs as a
# NATS user holding exactly the permissions docs/dlq.md lists for it, replays as the replay user.
# Shown: inspect's counts equal SQL over the work table (and the exporter's classification);
# inspect and a dry run leave both streams' state and the consumer as they were; a message gone
# from its stream is reported lost, not skipped; replay moves exactly the not-done ones, body
# and headers intact (the producer's Nats-Msg-Id replaced), stamped qrel-replayed 1, and the
# worker receives them; a second replay moves nothing; a replay SIGKILLed after N messages, run
# again, leaves each not-done message back exactly once (the Nats-Msg-Id of stream and
# sequence); a message replayed, dead again, replayed, dead again is listed as poison.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

t0=$(now_ms)
JSCTL="$QREL_PYTHON $QREL_SOURCE_DIR/tests/peers/nats/jsctl.py"
insp_pass='insp-8bd1-secret'
repl_pass='repl-27c4-secret'
printf '%s\n' "$insp_pass" > "$T/insp.pass"
printf '%s\n' "$repl_pass" > "$T/repl.pass"
chmod 600 "$T/insp.pass" "$T/repl.pass"
# The users: the workload's admin, and qrel's two with the permissions of docs/dlq.md (for the
# streams ORDERS and INVOICES; the JetStream API answers on _INBOX, as every request does).
inspect_pub='"$JS.API.STREAM.INFO.ORDERS_DLQ", "$JS.API.STREAM.MSG.GET.ORDERS_DLQ", "$JS.API.STREAM.MSG.GET.ORDERS",
 "$JS.API.STREAM.INFO.ORDERS", "$JS.API.STREAM.INFO.INVOICES_DLQ", "$JS.API.STREAM.MSG.GET.INVOICES_DLQ",
 "$JS.API.STREAM.MSG.GET.INVOICES", "$JS.API.STREAM.INFO.INVOICES"'
cat > "$T/auth.conf" <<CONF
authorization {
  users = [
    {user: admin, password: admin}
    {user: qrel-inspect, password: "$insp_pass", permissions: {
      publish: [$inspect_pub], subscribe: ["_INBOX.>"]}}
    {user: qrel-replay, password: "$repl_pass", permissions: {
      publish: [$inspect_pub,
        "\$JS.API.STREAM.MSG.DELETE.ORDERS", "\$JS.API.STREAM.MSG.DELETE.ORDERS_DLQ", "orders.>",
        "\$JS.API.STREAM.MSG.DELETE.INVOICES", "\$JS.API.STREAM.MSG.DELETE.INVOICES_DLQ", "invoices.>"],
      subscribe: ["_INBOX.>"]}}
  ]
}
CONF
start_postgres PGP
start_nats NP NM -c "$T/auth.conf"
export NATS_USER=admin NATS_PASS=admin
J() { $JSCTL "$NP" "$@"; }
req() { J req "$@" >/dev/null; }
for s in ORDERS INVOICES; do
  l=$(echo "$s" | tr '[:upper:]' '[:lower:]')
  printf '$JS.API.STREAM.CREATE.%s_DLQ\t{"name":"%s_DLQ","storage":"file","subjects":["$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.*"]}\n' "$s" "$s" "$s"
  printf '$JS.API.STREAM.CREATE.%s\t{"name":"%s","subjects":["%s.>"],"storage":"file","retention":"workqueue"}\n' "$s" "$s" "$l"
  printf '$JS.API.CONSUMER.DURABLE.CREATE.%s.worker\t{"stream_name":"%s","config":{"durable_name":"worker","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":2}}\n' "$s" "$s"
done | J reqs
# A stream's state and its worker's, from the monitoring port (/jsz).
jsz() { curl -fsS "http://127.0.0.1:$NM/jsz?streams=true&consumers=true" | jq -r "$1"; }
jq_state() { jsz ".account_details[].stream_detail[] | select(.name == \"$1\") | .state | \"\(.messages) \(.first_seq) \(.last_seq) \(.num_deleted // 0)\""; }
dlq_msgs() { jq_state "$1" | cut -d' ' -f1; }
# The worker fails every delivery: two rounds of naks use max_deliver up, and the next pull
# finds them over the limit, when the server gives them up and publishes the advisories.
fail_all() { # STREAM N: dead-letters the N messages waiting on STREAM's worker
  local want
  want=$(( $(dlq_msgs "${1}_DLQ") + $2 ))
  expect_eq "$1: $2 dead-lettered by JetStream (advisories)" "$(J fail "$1" worker "$2" "${1}_DLQ" 2)" "$want"
}

psql_do <<'SQL'
CREATE TABLE processed_orders (order_id bigint PRIMARY KEY, handled_at timestamptz NOT NULL DEFAULT now());
INSERT INTO processed_orders (order_id) VALUES (1), (2), (3), (4), (99);
CREATE TABLE processed_invoices (invoice_id text PRIMARY KEY);
INSERT INTO processed_invoices SELECT 'inv-' || i FROM generate_series(1, 5) i;
SQL
# orders 1-12: the producer's own Nats-Msg-Id and a trace header; 12 is no JSON (no id).
{
  for i in $(seq 1 11); do
    printf 'orders.created\t{"order": {"id": %d}}\tNats-Msg-Id=src-%d\ttrace=t-%d\tContent-Type=application/json\n' "$i" "$i" "$i"
  done
  printf 'orders.created\tnot json\ttrace=t-12\n'
} | J hpubs
fail_all ORDERS 12
# Order 11's message leaves its stream (as max_age or a purge would take it): its advisory stays.
req '$JS.API.STREAM.MSG.DELETE.ORDERS' '{"seq": 11}'
for i in $(seq 1 20); do printf 'invoices.created\tinvoice %d\tinvoice-id=inv-%d\n' "$i" "$i"; done | J hpubs
fail_all INVOICES 20

cat > "$T/qrel.yml" <<YML
sources:
$(nats_source bus-ro "http://127.0.0.1:$NM")
    nats_url: nats://127.0.0.1:$NP
    nats_username: qrel-inspect
    nats_password_file: $T/insp.pass
    streams: [{name: ORDERS, dead_letter_stream: ORDERS_DLQ}, {name: INVOICES, dead_letter_stream: INVOICES_DLQ}]
$(nats_source bus "http://127.0.0.1:$NM")
    nats_url: nats://127.0.0.1:$NP
    nats_username: qrel-replay
    nats_password_file: $T/repl.pass
    streams: [{name: ORDERS, dead_letter_stream: ORDERS_DLQ}, {name: INVOICES, dead_letter_stream: INVOICES_DLQ}]
$(pg_source shop "$PGP")
    dedup_tables: [{table: processed_orders, id_column: order_id, handled_at_column: handled_at}]
dead_letters:
  - {source: bus-ro, queue: ORDERS, id_field: order.id, work_table: {source: shop, table: processed_orders, id_column: order_id}}
  - {source: bus, queue: ORDERS, id_field: order.id, work_table: {source: shop, table: processed_orders, id_column: order_id}}
  - {source: bus, queue: INVOICES, id_field: "header:invoice-id", work_table: {source: shop, table: processed_invoices, id_column: invoice_id}}
YML
dlq() { "$QREL" dlq "$1" --config.file="$T/qrel.yml" --source="$2" --queue="$3" --format=json "${@:4}"; }
snapshot() {
  for s in ORDERS ORDERS_DLQ; do echo "$s $(jq_state "$s")"; done
  jsz '.account_details[].stream_detail[] | select(.name == "ORDERS") | .consumer_detail[] | {delivered, ack_floor, num_ack_pending, num_redelivered, num_pending} | tojson'
}

# ---- inspect, as the inspect user: counts as SQL says, nothing changed ----
snapshot > "$T/before.txt"
dlq inspect bus-ro ORDERS > "$T/inspect.json" 2> "$T/inspect.log"
# Orders 1-10 are in the stream with an id (11 is lost, 12 has none): SQL splits them.
done_sql=$(psql_val "SELECT count(*) FROM generate_series(1, 10) i WHERE i IN (SELECT order_id FROM processed_orders)")
not_done_sql=$(psql_val "SELECT count(*) FROM generate_series(1, 10) i WHERE i NOT IN (SELECT order_id FROM processed_orders)")
expect_eq "classes done/not_done/unknown as SQL over the work table counts them (and 2 without id)" \
  "$(jq -r '"\(.classes.done)/\(.classes.not_done)/\(.classes.unknown)"' "$T/inspect.json")" "$done_sql/$not_done_sql/2"
expect_eq "total, read, deliveries min-max, stamps never" \
  "$(jq -r '"\(.total) \(.read) \(.deliveries.min)-\(.deliveries.max) \(.replays.never)"' "$T/inspect.json")" "12 12 2-2 11"
expect_eq "message ids are stream sequences (not-done sample)" \
  "$(jq -r '[.samples.not_done[].message_id] | join(",")' "$T/inspect.json")" "5,6,7,8,9,10"
expect_cmd "the message gone from its stream is reported lost, by its sequence" \
  grep -q 'dead letters lost.*stream=ORDERS lost=1 stream_seq=11' "$T/inspect.log"
dlq replay bus-ro ORDERS > "$T/dry.json"
snapshot > "$T/after-dry.txt"
expect_cmd "inspect and a dry run leave ORDERS, ORDERS_DLQ and the consumer as they were" \
  diff "$T/before.txt" "$T/after-dry.txt"
expect_eq "the dry run would move the 6 not-done, moved none" \
  "$(jq -r '"\(.replay.would_move | length) \(.replay.moved | length)"' "$T/dry.json")" "6 0"
rc=0; dlq replay bus-ro ORDERS --yes --limit=1 --timeout=1s > "$T/ro.json" 2>&1 || rc=$?
expect_eq "the inspect user cannot replay (exit 1)" "$rc" 1
expect_cmd "... the server refused it, by subject" grep -q 'Permissions Violation' "$T/ro.json"
expect_cmd "... and nothing changed" diff "$T/before.txt" <(snapshot)
# The exporter classifies the same dead letters (its read changes nothing either).
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt"
expect_eq "the scrape's qrel_dead_letter_classified_messages equal inspect's" \
  "$(for w in "done" not_done unknown; do mval "$T/m.txt" qrel_dead_letter_classified_messages 'source="bus-ro"' \
    'dead_letter_queue="ORDERS_DLQ"' "work=\"$w\""; done | paste -sd' ')" \
  "$done_sql $not_done_sql 2"

# ---- replay, as the replay user: exactly the not-done, intact, stamped ----
last0=$(jq_state ORDERS | cut -d' ' -f3)
rc=0; dlq replay bus ORDERS --yes > "$T/replay1.json" || rc=$?
expect_eq "replay exit status, moved" "$rc $(jq -r '[.replay.moved[].message_id] | join(",")' "$T/replay1.json")" "0 5,6,7,8,9,10"
expect_eq "ORDERS: 6 new messages (after $last0), the 6 originals deleted: messages first last deleted" \
  "$(jq_state ORDERS)" "11 1 $((last0 + 6)) 7"
# Each new message as stored: subject, body, headers (sorted).
J gets ORDERS $((last0 + 1)) $((last0 + 6)) |
  jq -r '.message | "\(.subject) \(.data | @base64d) | \(.hdrs | @base64d | split("\r\n") | map(select(test(": "))) | sort | join("; "))"' \
  > "$T/moved.txt"
for i in $(seq 5 10); do
  printf 'orders.created {"order": {"id": %d}} | Content-Type: application/json; Nats-Msg-Id: qrel-replay:ORDERS:%d; qrel-replayed: 1; trace: t-%d\n' "$i" "$i" "$i"
done > "$T/want.txt"
expect_cmd "body and headers intact, Nats-Msg-Id of stream and sequence, qrel-replayed 1" diff "$T/want.txt" "$T/moved.txt"
expect_eq "ORDERS_DLQ keeps the advisories of the done (4), the lost and the one without id" \
  "$(dlq_msgs ORDERS_DLQ)" 6
expect_eq "the worker receives the six (payload:delivery)" \
  "$(J fetch ORDERS worker 10 ack 2 | sed -E 's/.*"id": ([0-9]+).*:([0-9]+)$/\1:\2/' | tr '\n' ' ')" "5:1 6:1 7:1 8:1 9:1 10:1 "
rc=0; dlq replay bus ORDERS --yes > "$T/replay2.json" || rc=$?
expect_eq "a second replay moves nothing (status, moved, ORDERS)" \
  "$rc $(jq -r '.replay.moved | length' "$T/replay2.json") $(jq_state ORDERS | cut -d' ' -f3)" "0 0 $((last0 + 6))"

# ---- a replay killed after 5 moves, then run again: each not-done invoice back once ----
ilast=$(jq_state INVOICES | cut -d' ' -f3)
added() { echo $(( $(jq_state INVOICES | cut -d' ' -f3) - ilast )); }
"$QREL" dlq replay --config.file="$T/qrel.yml" --source=bus --queue=INVOICES --yes --rate=10/s \
  > "$T/killed.json" 2> "$T/killed.log" &
pid=$!
at_least() { [ "$(added)" -ge "$1" ]; }
wait_for -i 0.05 20 "5 invoices replayed" at_least 5 || true
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
expect_between "invoices replayed when SIGKILL came" "$(added)" 5 14
rc=0; dlq replay bus INVOICES --yes > "$T/rerun.json" 2> "$T/rerun.log" || rc=$?
expect_eq "the rerun's exit status" "$rc" 0
J fetch INVOICES worker 40 ack 2 | sort -V > "$T/inv.txt"
expect_eq "the worker gets each not-done invoice exactly once (none lost, none twice)" \
  "$(tr '\n' ' ' < "$T/inv.txt")" "$(for i in $(seq 6 20); do printf 'invoice %d:1 ' "$i"; done)"
dlq inspect bus INVOICES > "$T/inv-after.json" 2>/dev/null
# The kill may fall between a move's two deletes: that advisory stays, its message reported lost.
expect_eq "INVOICES_DLQ: the 5 done (and a lost one only if the kill fell between the deletes)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown <= 1)"' "$T/inv-after.json")" "5 0 true"

# ---- a poison message: replayed, dead again, replayed, dead again ----
J hpub orders.created '{"order": {"id": 50}}' "trace=t-50"
fail_all ORDERS 1
dlq replay bus ORDERS --yes > /dev/null
fail_all ORDERS 1
dlq inspect bus ORDERS > "$T/poison1.json"
expect_eq "dead again after one replay: replays once (never once poison)" \
  "$(jq -r '"\(.replays.never) \(.replays.once) \(.replays.poison)"' "$T/poison1.json")" "5 1 0"
dlq replay bus ORDERS --yes > /dev/null
fail_all ORDERS 1
dlq inspect bus ORDERS > "$T/poison2.json"
expect_eq "dead after two replays: a poison message, replays 2" \
  "$(jq -r '"\(.replays.poison) \(.samples.poison[0].replays) \(.samples.poison[0].work_id)"' "$T/poison2.json")" "1 2 50"
dlq replay bus ORDERS --yes > "$T/poison-replay.json"
expect_eq "a replay without --include-poison leaves it dead" \
  "$(jq -r '"\(.replay.moved | length) \(.replay.skipped.poison.count)"' "$T/poison-replay.json")" "0 1"

if grep -rqF -e "$insp_pass" -e "$repl_pass" "$T"/*.json "$T"/*.log "$T/m.txt"; then
  not_ok "a NATS password appears in an output or a log"
else
  ok "the NATS passwords appear nowhere"
fi
echo "# $(( $(now_ms) - t0 )) ms in all"
finish
