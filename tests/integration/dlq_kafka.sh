#!/usr/bin/env bash
# `qrel dlq` on Kafka dead-letter topics (librdkafka's mock cluster, tests/peers/kafka_mock) with
# work tables in a real PostgreSQL. The dead letters are made as a consumer's dead-letter handling
# makes them (tests/peers/kafka_dlq_peer: Spring Kafka's headers, the record's key, value and
# headers kept). orders.dlq (2 partitions) classifies by a JSON key against a claim table,
# invoices.dlq by a header against a dedup table, and money.dlq is shared by payments and refunds,
# so the topic a record goes back to comes from its kafka_dlt-original-topic header. Shown:
# inspect's counts exact; inspect and a dry run change no topic and no offset of the replay
# group; replay moves exactly the not-done dead letters with key, value and headers intact; a
# second replay moves nothing; a replay SIGKILLed part way and run again leaves every not-done
# dead letter replayed and none lost; a shared topic's record without an origin header is refused
# by name while the others move; the replay stamp: a replayed record carries qrel-replayed 1, and
# dead-lettered again and read shows replays 1; after another round, poison (2).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

PEER=$QREL_BUILD_DIR/tests/kafka_dlq_peer
[ -x "$PEER" ] || { echo "kafka_dlq_peer not built (QREL_WITH_KAFKA=OFF?)" >&2; exit 1; }

t0=$(now_ms)
start_postgres PGP
start_kafka_mock BOOT -t orders:2 -t orders.dlq:2 -t invoices:2 -t invoices.dlq:2 \
  -t payments:1 -t refunds:1 -t money.dlq:1 -t gifts.dlq:1 -t stamps:1 -t stamps.dlq:1
peer() { "$PEER" "$1" "$BOOT" "${@:2}"; }

psql_do <<'SQL'
CREATE TABLE confirmation_claims (order_id bigint PRIMARY KEY,
  claimed_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz);
INSERT INTO confirmation_claims (order_id, sent_at) VALUES (1, now()), (2, now()), (3, now()), (4, NULL);
CREATE TABLE processed_invoices (invoice_id text PRIMARY KEY);
INSERT INTO processed_invoices SELECT 'inv-' || i FROM generate_series(1, 10) i;
CREATE TABLE processed_payments (payment_id text PRIMARY KEY);
INSERT INTO processed_payments VALUES ('p-1');
SQL

# orders: done 1-3 (sent), not done 4 (claimed, not sent) and 5-10 (no claim; 8 has no key),
# unknown: a value without the key and one that is not JSON.
{
  for i in $(seq 1 10); do
    key=cust-$i; [ "$i" = 8 ] && key=-
    printf '%d\t%s\t{"order": {"id": %d}}\ttrace=t-%d\tcontent-type=application/json\n' $((i % 2)) "$key" "$i" "$i"
  done
  printf '0\tcust-x\t{"order": {}}\ttrace=t-x\n1\tcust-y\tnot json\n'
} | peer produce orders
# invoices: inv-1..inv-40 by header, done 1-10 (dedup table), the last of each partition not done.
for i in $(seq 1 40); do
  printf '%d\tinv-%d\t{"amount": %d}\tinvoice-id=inv-%d\n' $((i % 2)) "$i" "$i" "$i"
done | peer produce invoices
printf '0\tpk-%d\tpay %d\tpayment-id=p-%d\n' 1 1 1 2 2 2 3 3 3 | peer produce payments
printf '0\trk-%d\trefund %d\tpayment-id=p-%d\n' 1 1 1 5 5 5 | peer produce refunds
for t in orders invoices payments refunds; do
  peer dead-letter "$t" "$( [ "${t:0:1}" = p ] || [ "${t:0:1}" = r ] && echo money.dlq || echo "$t.dlq")"
done
# A dead letter of payments written by hand, without the origin header.
printf '0\tpk-9\tpay 9\tpayment-id=p-9\n' | peer produce money.dlq
# A dead letter of gifts, a topic that does not exist (deleted, or never made).
printf '0\tg-1\tgift 1\tgift-id=g-1\n' | peer produce gifts.dlq

cat > "$T/qrel.yml" <<YML
sources:
  - name: bus
    kind: kafka
    bootstrap_servers: $BOOT
    groups:
      - {name: mailer, topics: [orders, invoices], dead_letter_topic: "{topic}.dlq"}
      - {name: billing, topics: [payments, refunds], dead_letter_topic: money.dlq}
      - {name: gifter, topics: [gifts], dead_letter_topic: gifts.dlq}
      - {name: stamper, topics: [stamps], dead_letter_topic: stamps.dlq}
$(pg_source shop "$PGP")
    claim_tables: [{table: confirmation_claims, id_column: order_id, claimed_at_column: claimed_at, done_at_column: sent_at, in_flight_window: 2m}]
dead_letters:
  - {source: bus, queue: orders, id_field: order.id,
     work_table: {source: shop, table: confirmation_claims, id_column: order_id, done_column: sent_at}}
  - {source: bus, queue: invoices, id_field: "header:invoice-id",
     work_table: {source: shop, table: processed_invoices, id_column: invoice_id}}
  - {source: bus, queue: payments, id_field: "header:payment-id",
     work_table: {source: shop, table: processed_payments, id_column: payment_id}}
  - {source: bus, queue: gifts, id_field: "header:gift-id",
     work_table: {source: shop, table: processed_payments, id_column: payment_id}}
  - {source: bus, queue: stamps, id_field: "header:payment-id",
     work_table: {source: shop, table: processed_payments, id_column: payment_id}}
YML
dlq() { "$QREL" dlq "$1" --config.file="$T/qrel.yml" --source=bus --format=json "${@:2}"; }
# Everything a replay could change: the topics' records and the replay groups' offsets.
snapshot() {
  local t
  for t in orders invoices payments refunds; do
    echo "== $t"; peer dump "$t" | sort
    echo "== $t dead letters, group qrel-dlq-replay.$t"
    peer state "$( [ "$t" = payments ] || [ "$t" = refunds ] && echo money.dlq || echo "$t.dlq")" "qrel-dlq-replay.$t"
  done
}
jget() { jq -r "$2" "$1"; }

# ---- inspect: exact counts, nothing changed ----
snapshot > "$T/before.txt"
dlq inspect --queue=orders > "$T/inspect-orders.json"
expect_eq "orders.dlq classes done/not_done/unknown" \
  "$(jget "$T/inspect-orders.json" '"\(.classes.done)/\(.classes.not_done)/\(.classes.unknown)"')" "3/7/2"
expect_eq "orders.dlq total, read, without_id" \
  "$(jget "$T/inspect-orders.json" '"\(.total) \(.read) \(.without_id)"')" "12 12 2"
expect_eq "orders.dlq deliveries from retry_topic-attempts (min max)" \
  "$(jget "$T/inspect-orders.json" '"\(.deliveries.min) \(.deliveries.max)"')" "3 3"
expect_eq "dead letters are named partition:offset" \
  "$(jget "$T/inspect-orders.json" '[.samples[][] | .message_id // .id] | map(test("^[01]:[0-5]$")) | all')" true
expect_eq "reading a Kafka dead-letter topic changes nothing (read_effect)" \
  "$(jget "$T/inspect-orders.json" '.read_effect')" null
dlq inspect --queue=invoices > "$T/inspect-invoices.json"
expect_eq "invoices.dlq (dedup table) done/not_done/unknown" \
  "$(jget "$T/inspect-invoices.json" '"\(.classes.done)/\(.classes.not_done)/\(.classes.unknown)"')" "10/30/0"
dlq inspect --queue=payments > "$T/inspect-payments.json"
expect_eq "money.dlq as payments' (refunds' records left out) done/not_done/unknown, total" \
  "$(jget "$T/inspect-payments.json" '"\(.classes.done)/\(.classes.not_done)/\(.classes.unknown) \(.total)"')" "1/3/0 4"

# ---- a dry run: says what it would move, changes nothing ----
dlq replay --queue=orders > "$T/dry.json"
snapshot > "$T/after-dry.txt"
expect_cmd "inspect and a dry run leave every topic and replay group as it was" \
  diff "$T/before.txt" "$T/after-dry.txt"
expect_eq "the dry run would move the 7 not-done dead letters, and moved none" \
  "$(jget "$T/dry.json" '"\(.replay.would_move | length) \(.replay.moved | length)"')" "7 0"

# ---- replay: exactly the not-done, intact ----
# The record as the dump shows it, without its position: key, value and headers.
body() { sed -E 's/^[0-9]+:[0-9]+ //' | sort; }
peer dump orders | body > "$T/orders0.txt"
peer dump orders.dlq > "$T/orders-dlq.txt"
rc=0; dlq replay --queue=orders --yes > "$T/replay1.json" || rc=$?
expect_eq "replay exit status" "$rc" 0
peer dump orders | body > "$T/orders1.txt"
comm -13 "$T/orders0.txt" "$T/orders1.txt" > "$T/moved.txt"
# ... each with the replay stamp appended, its last header: replayed once.
grep -E 'value=\{"order":\\x20\{"id":\\x20([4-9]|10)\}\}' "$T/orders-dlq.txt" | body | sed 's/$/ qrel-replayed=1/' > "$T/want-moved.txt"
expect_eq "dead letters of not-done orders in orders.dlq" "$(wc -l < "$T/want-moved.txt")" 7
expect_eq "records added to orders" "$(( $(wc -l < "$T/orders1.txt") - $(wc -l < "$T/orders0.txt") ))" 7
expect_cmd "they are the not-done dead letters, key, value and headers byte for byte, stamped qrel-replayed 1" \
  diff "$T/want-moved.txt" "$T/moved.txt"
expect_cmd "the keyless one stays keyless" grep -q '^key=(null) value={"order":\\x20{"id":\\x208}}' "$T/moved.txt"
# 4 (the first not done) is at 0:2; the last not-done ones of each partition are 10 (0:5) and 9 (1:4).
expect_eq "replay group offsets (partition low high committed)" \
  "$(peer state orders.dlq qrel-dlq-replay.orders)" "$(printf "0 0 6 5\n1 0 6 5")"

rc=0; dlq replay --queue=orders --yes > "$T/replay2.json" || rc=$?
expect_eq "second replay exit status" "$rc" 0
expect_eq "a second replay moves nothing" "$(jget "$T/replay2.json" '.replay.moved | length')" 0
expect_eq "a second replay adds nothing to orders" "$(peer dump orders | wc -l)" 19
expect_eq "and reads only what lies past the group (x and y, unknown)" \
  "$(jget "$T/replay2.json" ".read")" 2

# ---- a replay killed part way, then run again: every not-done invoice replayed, none lost ----
# 30 not done at 10 a second; SIGKILL once 8 have reached invoices (40 records before).
added() { peer state invoices none | awk '{n += $3} END {print n - 40}'; }
# (qrel itself, not a subshell running it, so that $! is the process the signal must hit)
"$QREL" dlq replay --config.file="$T/qrel.yml" --source=bus --queue=invoices --yes --rate=10/s \
  > "$T/killed.json" 2> "$T/killed.log" &
pid=$!
replayed_at_least() { [ "$(added)" -ge "$1" ]; }
wait_for -i 0.05 20 "8 invoices replayed" replayed_at_least 8 || true
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
at_kill=$(added)
expect_between "invoices replayed when SIGKILL came" "$at_kill" 8 29
rc=0; dlq replay --queue=invoices --yes > "$T/rerun.json" || rc=$?
expect_eq "the rerun's exit status" "$rc" 0
# The invoice ids of the records added to invoices, once each: exactly the 30 not done.
peer dump invoices | sed -n 's/.* invoice-id=\(inv-[0-9]*\).*/\1/p' | sort > "$T/ids.txt"
sort -u "$T/ids.txt" | comm -23 - <(printf 'inv-%d\n' $(seq 1 40) | sort) > "$T/strange.txt"
expect_eq "ids in invoices that were never sent" "$(wc -l < "$T/strange.txt")" 0
expect_eq "not-done invoices replayed (each at least once)" \
  "$(sort "$T/ids.txt" | uniq -c | awk '$1 >= 2' | wc -l)" 30
expect_eq "done invoices replayed" "$(sort "$T/ids.txt" | uniq -c | awk '$1 >= 2 && $2 ~ /^inv-([1-9]|10)$/' | wc -l)" 0
total=$(added)
expect_between "records added in all: 30, and at most the one in flight at the kill again" "$total" 30 31
expect_eq "the rerun moved the rest (and the one in flight, if any)" \
  "$(jget "$T/rerun.json" '.replay.moved | length')" "$((30 - at_kill + total - 30))"
dlq replay --queue=invoices --yes > "$T/rerun2.json"
expect_eq "a third run moves nothing" "$(jget "$T/rerun2.json" '.replay.moved | length') $(added)" "0 $total"

# ---- a dead-letter topic shared by payments and refunds: origins from the header ----
rc=0; dlq replay --queue=payments --yes > "$T/payments.json" 2> "$T/payments.log" || rc=$?
expect_eq "replay of payments: exit status 1 (one record has no origin header)" "$rc" 1
expect_eq "payments: moved, failed" \
  "$(jget "$T/payments.json" '"\([.replay.moved[].work_id] | join(",")) \([.replay.failed[].work_id] | join(","))"')" "p-2,p-3 p-9"
expect_cmd "the failure says why" grep -q 'shared by several topics and this record has no header naming its topic' "$T/payments.json"
expect_eq "payments now: the 3 sent and the 2 replayed" \
  "$(peer dump payments | sed -n 's/.* payment-id=\(p-[0-9]*\).*/\1/p' | sort | tr '\n' ' ')" "p-1 p-2 p-2 p-3 p-3 "
expect_eq "refunds' dead letters stayed where they are" "$(peer dump refunds | wc -l)" 2

# ---- the replay stamp (issue 24): one record of stamps, dead-lettered by the peer (which keeps
# every header, the stamp too) after each replay. The peer dead-letters every record of stamps
# each time, so the older ones die again beside it, and inspect reads stamps.dlq from the start.
printf '0\ts-1\tstamp 1\tpayment-id=s-1\n' | peer produce stamps
peer dead-letter stamps stamps.dlq
dlq replay --queue=stamps --yes > /dev/null
expect_eq "a replayed record carries the header qrel-replayed 1 (stamps' records' stamps)" \
  "$(peer dump stamps | sed -E 's/.*qrel-replayed=([0-9]+).*/\1/; t; s/.*/-/' | tr '\n' ' ')" "- 1 "
peer dead-letter stamps stamps.dlq
dlq inspect --queue=stamps > "$T/stamps1.json"
expect_eq "dead again and read: the replayed one once, the others never (never once poison unknown)" \
  "$(jget "$T/stamps1.json" '[.replays.never, .replays.once, .replays.poison, .replays.unknown] | join(" ")')" "2 1 0 0"
dlq replay --queue=stamps --yes > /dev/null
expect_eq "replayed again: stamps 1 and 2, one header each (replaced, not added)" \
  "$(peer dump stamps | sed -E 's/.*qrel-replayed=([0-9]+).*/\1/; t; s/.*/-/' | tr '\n' ' ') $(peer dump stamps | grep -c 'qrel-replayed=.*qrel-replayed=')" "- 1 1 2  0"
peer dead-letter stamps stamps.dlq
dlq inspect --queue=stamps > "$T/stamps2.json"
expect_eq "dead again: one poison record, replays 2 (never once poison; poison's replays)" \
  "$(jget "$T/stamps2.json" '[.replays.never, .replays.once, .replays.poison, (.samples.poison[].replays)] | join(" ")')" "3 3 1 2"

echo "# $(( $(now_ms) - t0 )) ms in all"
# A replay to a topic that does not exist is refused before anything moves (a producer would
# create it where the brokers create topics on first use, with no group reading it).
rc=0
"$QREL" dlq replay --config.file="$T/qrel.yml" --source=bus --queue=gifts --only=all --yes \
  > "$T/gifts.txt" 2> "$T/gifts.err" || rc=$?
expect_eq "a replay to a topic that does not exist: exit 1" "$rc" 1
expect_cmd "... refused, saying so" grep -qF 'refused, every dead letter left dead: topic "gifts" does not exist' "$T/gifts.err"
expect_eq "... and the dead letter is still unreplayed (no commit in the replay group)" \
  "$(peer state gifts.dlq qrel-dlq-replay.gifts)" "0 0 1 -1"

finish
