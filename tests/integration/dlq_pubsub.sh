#!/usr/bin/env bash
# `qrel dlq` on Pub/Sub, against Google's Pub/Sub emulator (skipped, loudly, where it is not
# installed) and a real PostgreSQL, with dead letters made by the emulator itself: two
# subscriptions with a deadLetterPolicy (5 attempts, the least Pub/Sub allows) are pulled and
# every message handed back at once (modifyAckDeadline 0), so each is delivered 5 times in ~7 s
# instead of waiting out 5 ack deadlines, then forwarded to the dead-letter topic.
#   inspect: counts per class exact against a claim table (id_field a JSON key of the data) and a
#            dedup table (id_field an attribute), deliveries from the attribute the broker adds,
#            dead_since the publishTime on the dead-letter topic;
#   inspect and a dry run change nothing (every message of the dead-letter subscriptions, data and
#            attributes, compared before and after: released at once, none lost or acked);
#   a dead-letter topic with two subscriptions needs dead_letter_subscriptions, and says so;
#   --config.check fails with qrel dlq's message on that and on a dead-letter subscription that
#            does not exist, and passes (pulling nothing) once the subscription is named;
#   replay --yes moves exactly the not-done messages to the origin topic, data, attributes (less
#            the CloudPubSubDeadLetter* ones) and orderingKey intact; a second replay moves nothing;
#   the replay stamp: replayed messages carry qrel-replayed 1; dead again by the emulator and read,
#            replays 1; one replayed again (2, one attribute) and dead again: poison;
#   a replay SIGKILLed after N messages, run again once its lease ran out, ends with every
#            not-done message replayed and none lost.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

if ! pubsub_emulator_installed; then
  echo "SKIPPED: no Pub/Sub emulator ($PUBSUB_EMULATOR) or no java; CI must have google-cloud-cli-pubsub-emulator" >&2
  finish
  exit
fi
shared_pubsub_emulator EP
start_postgres PGP
# project dlq-shop: the emulator may be shared with pubsub.sh, which keeps to project shop
API=http://127.0.0.1:$EP/v1/projects/dlq-shop
PS() { "$QREL_PYTHON" "$QREL_SOURCE_DIR/tests/peers/pubsub/dead_letter.py" "$API" "$@"; }
put() { curl -fsS -X PUT -H 'Content-Type: application/json' -d "$2" "$API/$1" >/dev/null; }
publish() { curl -fsS -X POST -H 'Content-Type: application/json' -d "$2" "$API/topics/$1:publish" >/dev/null; }
b64() { printf '%s' "$1" | base64 -w0; }

# ---- topology and messages ---------------------------------------------------------------------
for t in orders orders-dlq invoices invoices-dlq; do put "topics/$t" '{}'; done
for q in orders invoices; do
  put "subscriptions/$q-mailer" "{\"topic\":\"projects/dlq-shop/topics/$q\",\"ackDeadlineSeconds\":10,
    \"deadLetterPolicy\":{\"deadLetterTopic\":\"projects/dlq-shop/topics/$q-dlq\",\"maxDeliveryAttempts\":5}}"
  put "subscriptions/$q-dead" "{\"topic\":\"projects/dlq-shop/topics/$q-dlq\",\"ackDeadlineSeconds\":10}"
done
# A second reader of invoices' dead letters: which one qrel pulls from must then be configured.
put subscriptions/invoices-dead-audit '{"topic":"projects/dlq-shop/topics/invoices-dlq","ackDeadlineSeconds":10}'
# Orders 1-12 carry their id in the data and in an attribute; 8 and 9 have an ordering key; one
# message carries no id at all (unknown).
msgs=()
for i in $(seq 1 12); do
  m="{\"data\":\"$(b64 "{\"order_id\":$i,\"email\":\"c$i@example.com\"}")\",\"attributes\":{\"order\":\"$i\",\"origin\":\"shop\"}"
  [ "$i" = 8 ] || [ "$i" = 9 ] && m="$m,\"orderingKey\":\"customer-7\""
  msgs+=("$m}")
done
msgs+=("{\"data\":\"$(b64 '{"note":"no id"}')\",\"attributes\":{\"origin\":\"shop\"}}")
publish orders "{\"messages\":[$(IFS=,; echo "${msgs[*]}")]}"
inv=()
for i in $(seq 101 108); do
  inv+=("{\"data\":\"$(b64 "{\"order_id\":$i}")\",\"attributes\":{\"order\":\"$i\"}}")
done
publish invoices "{\"messages\":[$(IFS=,; echo "${inv[*]}")]}"

t0=$(now_ms)
expect_cmd "the emulator delivers every message 5 times" PS nack orders-mailer invoices-mailer --attempts 5
dead_count() { [ "$(PS peek "$1" | jq length)" = "$2" ]; }
expect_cmd "... and forwards all 13 + 8 to the dead-letter topics" \
  wait_for -i 0.3 60 "dead letters" eval 'dead_count orders-dead 13 && dead_count invoices-dead 8'
echo "     dead-lettering took $(($(now_ms) - t0)) ms"

psql_do <<'SQL'
CREATE TABLE confirmation_claims (order_id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz);
CREATE TABLE handled_orders (order_id bigint PRIMARY KEY, handled_at timestamptz NOT NULL DEFAULT now());
-- orders: 1-5 sent, 6-7 claimed and never sent, 8-12 never claimed; invoices: 101-102 sent
INSERT INTO confirmation_claims (order_id, sent_at) SELECT g, now() FROM generate_series(1, 5) g;
INSERT INTO confirmation_claims (order_id) VALUES (6), (7);
INSERT INTO confirmation_claims (order_id, sent_at) VALUES (101, now()), (102, now());
INSERT INTO handled_orders (order_id) VALUES (1), (2), (3), (8);
SQL

# config FILE ORDERS_WORK_TABLE ORDERS_ID_FIELD [EXTRA SOURCE KEYS]
config() {
  cat > "$1" <<YML
sources:
  - name: gcp
    kind: pubsub
    project: dlq-shop
    endpoint: http://127.0.0.1:$EP
    subscriptions: [orders-mailer, invoices-mailer]
$4
  - {name: shop-db, kind: postgres, host: 127.0.0.1, port: $PGP, user: postgres, dbname: postgres,
     dedup_tables: [{table: handled_orders, id_column: order_id, handled_at_column: handled_at}]}
dead_letters:
  - source: gcp
    queue: orders-mailer
    id_field: "$3"
    work_table: $2
  - source: gcp
    queue: invoices-mailer
    id_field: "attribute:order"
    work_table: {source: shop-db, table: confirmation_claims, id_column: order_id, done_column: sent_at}
YML
}
CLAIMS="{source: shop-db, table: confirmation_claims, id_column: order_id, done_column: sent_at}"
PICK="    dead_letter_subscriptions: {invoices-mailer: invoices-dead}"
config "$T/claims.yml" "$CLAIMS" order_id "$PICK"
config "$T/dedup.yml" "{source: shop-db, table: handled_orders, id_column: order_id}" "attribute:order" "$PICK"
config "$T/nopick.yml" "$CLAIMS" order_id ""
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }
ORD=(--config.file="$T/claims.yml" --source=gcp --queue=orders-mailer)

# expected_split FILE DONE-SQL: "done not_done unknown" of the messages in FILE (a peek) by their
# order attribute, as PostgreSQL says.
expected_split() {
  local msgs ids
  msgs=$(cat "$1")
  ids=$(jq -r '[.[] | .attributes.order // empty] | join(",")' <<<"$msgs")
  echo "$(psql_val "SELECT count(*) FILTER (WHERE $2) || ' ' || count(*) FILTER (WHERE NOT ($2))
            FROM unnest('{$ids}'::bigint[]) AS v(id)
            LEFT JOIN confirmation_claims c ON c.order_id = v.id
            LEFT JOIN handled_orders h ON h.order_id = v.id") $(jq '[.[] | select(.attributes.order == null)] | length' <<<"$msgs")"
}
# not_done FILE: the messageIds whose order has no stamped claim, sorted.
not_done() {
  local pairs orders
  pairs=$(jq -c '[.[] | select(.attributes.order) | {id: .messageId, order: .attributes.order}]' "$1")
  orders=$(psql_val "SELECT coalesce(string_agg(v::text, ','), '') FROM unnest('{$(jq -r 'map(.order) | join(",")' <<<"$pairs")}'::bigint[]) v
                     WHERE NOT EXISTS (SELECT 1 FROM confirmation_claims WHERE order_id = v AND sent_at IS NOT NULL)")
  jq -r --arg o "$orders" '($o | split(",")) as $n | .[] | select(.order as $x | $n | index($x)) | .id' <<<"$pairs" | sort
}
# snapshot NAME: every message of the three dead-letter subscriptions (handed back at once), one
# file each ($T/NAME-SUB.json), and all of them on stdout.
snapshot() {
  for s in orders-dead invoices-dead invoices-dead-audit; do PS peek "$s" | tee "$T/$1-$s.json"; done
}

# ---- inspect -----------------------------------------------------------------------------------
snapshot before > "$T/before.json"
DEAD=$T/before-orders-dead.json
read -r ndone nnot nunk <<<"$(expected_split "$DEAD" "c.sent_at IS NOT NULL")"
DLQ inspect "${ORD[@]}" --format=json > "$T/orders.json"
expect_eq "orders: inspect's split against the claim table (done not_done unknown total read)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/orders.json")" \
  "$ndone $nnot $nunk 13 13"
expect_eq "... which is 5 done, 7 not done, 1 unknown" "$ndone $nnot $nunk" "5 7 1"
expect_eq "orders: names" "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind)"' "$T/orders.json")" \
  "orders-dlq projects/dlq-shop/topics/orders pubsub"
expect_cmd "orders: the read effect is reported" grep -q 'modifyAckDeadline 0' <(jq -r .read_effect "$T/orders.json")
expect_eq "orders: deliveries from CloudPubSubDeadLetterSourceDeliveryCount" \
  "$(jq -c '[.deliveries.min, .deliveries.max, .deliveries.unknown]' "$T/orders.json")" "[5,5,0]"
expect_eq "orders: dead_since from the publishTime on the dead-letter topic (ms)" \
  "$(jq -r '"\(.dead_since.oldest * 1000 | round) \(.dead_since.newest * 1000 | round)"' "$T/orders.json")" \
  "$(jq -r '[.[].publishTime | capture("^(?<s>.*?)(\\.(?<f>[0-9]*))?Z$") |
       ((.s + "Z" | fromdateiso8601) * 1000 + (((.f // "") + "000")[0:3] | tonumber))] | "\(min) \(max)"' "$DEAD")"
read -r ndone nnot nunk <<<"$(expected_split "$DEAD" "h.order_id IS NOT NULL")"
DLQ inspect --config.file="$T/dedup.yml" --source=gcp --queue=orders-mailer --format=json > "$T/dedup.json"
expect_eq "orders: inspect's split against the dedup table, id from an attribute (done not_done unknown)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/dedup.json")" "$ndone $nnot $nunk"
expect_eq "... which is 4 done, 8 not done, 1 unknown" "$ndone $nnot $nunk" "4 8 1"
DLQ inspect "${ORD[@]}" > "$T/inspect.txt"
sed 's/^/     /' "$T/inspect.txt"
expect_cmd "text: the read effect is said" grep -q 'modifyAckDeadline 0' "$T/inspect.txt"
rc=0
DLQ inspect --config.file="$T/nopick.yml" --source=gcp --queue=invoices-mailer > /dev/null || rc=$?
expect_cmd "two subscriptions on the dead-letter topic and none configured: fails (rc $rc)" test "$rc" -ne 0
expect_cmd "... naming the key to set" grep -qF \
  'dead-letter topic "projects/dlq-shop/topics/invoices-dlq" of "invoices-mailer" has 2 subscriptions: name the one to read in the source'"'"'s dead_letter_subscriptions (invoices-mailer: SUBSCRIPTION)' "$T/dlq.err"
DLQ inspect --config.file="$T/claims.yml" --source=gcp --queue=invoices-mailer --format=json > "$T/invoices.json"
expect_eq "invoices (dead_letter_subscriptions): done not_done unknown" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/invoices.json")" "2 6 0"


# ---- --config.check fails on what `qrel dlq` would fail on, and says the same (it pulls nothing:
# the snapshot after the dry run below covers it too)
check() { expect_exit "--config.check $1: exit status" "$2" "$T/check.out" "$EXPORTER" --config.file="$1" --config.check; }
check "$T/claims.yml" 0
expect_eq "--config.check with the dead-letter subscription named" "$(cat "$T/check.out")" "$T/claims.yml: OK, 2 sources"
check "$T/nopick.yml" 1
expect_eq "--config.check: a dead-letter topic with two subscriptions, none named" "$(cat "$T/check.out")" \
  "$T/nopick.yml: source \"gcp\": dead_letters: queue \"invoices-mailer\": dead-letter topic \"projects/dlq-shop/topics/invoices-dlq\" of \"invoices-mailer\" has 2 subscriptions: name the one to read in the source's dead_letter_subscriptions (invoices-mailer: SUBSCRIPTION)"
config "$T/gone.yml" "$CLAIMS" order_id "    dead_letter_subscriptions: {invoices-mailer: no-such-dead}"
check "$T/gone.yml" 1
expect_eq "--config.check: dead_letter_subscriptions names a subscription that does not exist" "$(cat "$T/check.out")" \
  "$T/gone.yml: source \"gcp\": dead_letters: queue \"invoices-mailer\": dead_letter_subscriptions: subscription \"projects/dlq-shop/subscriptions/no-such-dead\" does not exist"

echo "     phase: inspect done at $(($(now_ms) - t0)) ms"
# ---- dry run -----------------------------------------------------------------------------------
rc=0
DLQ replay "${ORD[@]}" --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run: exit 0" "$rc" 0
expect_eq "dry run: would move exactly the not-done messages" \
  "$(jq -r '.replay.would_move[].message_id' "$T/dry.json" | sort)" "$(not_done "$DEAD")"
expect_eq "dry run: moved nothing" "$(jq -r '"\(.replay.dry_run) \(.replay.moved | length)"' "$T/dry.json")" "true 0"
snapshot after > "$T/after.json"
expect_cmd "inspect and the dry run changed nothing (3 dead-letter subscriptions: ids, data, attributes)" \
  cmp -s "$T/before.json" "$T/after.json"

echo "     phase: dry run done at $(($(now_ms) - t0)) ms"
# ---- replay ------------------------------------------------------------------------------------
put subscriptions/orders-check '{"topic":"projects/dlq-shop/topics/orders"}'
want_moved=$(not_done "$DEAD")
# What must reach orders: each not-done message's data, its attributes without the broker's
# CloudPubSubDeadLetter* ones, its orderingKey.
ORIG='[.[] | {data, attributes: (.attributes | with_entries(select(.key | startswith("CloudPubSubDeadLetter") | not))), orderingKey}] | sort_by(.data)'
# ... and the replay stamp, qrel-replayed 1 (issue 24).
jq -c --arg ids "$want_moved" '[.[] | select(.messageId as $i | $ids | split("\n") | index($i))] | '"$ORIG"' | map(.attributes["qrel-replayed"] = "1")' "$DEAD" > "$T/want.json"
want_left=$(jq -r '.[].messageId' "$DEAD" | sort | comm -23 - <(echo "$want_moved"))
rc=0
DLQ replay "${ORD[@]}" --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes: exit 0" "$rc" 0
expect_eq "replay moved exactly the not-done messages" "$(jq -r '.replay.moved[].message_id' "$T/replay.json" | sort)" "$want_moved"
PS take orders-check > "$T/moved.json"
expect_eq "... and they are on orders, data, attributes and ordering key intact, stamped qrel-replayed 1" \
  "$(jq -c "$ORIG" "$T/moved.json")" "$(cat "$T/want.json")"
expect_cmd "... two of them with their ordering key" test "$(jq '[.[] | select(.orderingKey == "customer-7")] | length' "$T/want.json")" = 2
expect_eq "orders-dead keeps exactly the done and unknown messages" "$(PS peek orders-dead | jq -r '.[].messageId' | sort)" "$want_left"
rc=0
DLQ replay "${ORD[@]}" --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing" "$rc $(jq '.replay.moved | length' "$T/again.json")" "0 0"
expect_eq "... and nothing more reached orders" "$(PS take orders-check | jq length)" 0

# ---- the replay stamp: dead again by the emulator's own deadLetterPolicy, then poison (issue 24)
# The mailer fails the replayed messages again (5 deliveries each): Pub/Sub forwards them with
# their attributes, the stamp among them.
nreplayed=$(grep -c . <<<"$want_moved")
expect_cmd "the replayed messages die again (5 more deliveries)" PS nack orders-mailer --attempts 5
expect_cmd "... and reach orders-dead" wait_for -i 0.3 60 "dead again" dead_count orders-dead "$(($(wc -l <<<"$want_left") + nreplayed))"
DLQ inspect "${ORD[@]}" --format=json > "$T/once.json"
expect_eq "read: the $nreplayed replayed once, the rest never (never once poison unknown)" \
  "$(jq -c '[.replays.never, .replays.once, .replays.poison, .replays.unknown]' "$T/once.json")" "[$(wc -l <<<"$want_left"),$nreplayed,0,0]"
# One of them replayed again (--limit=1), and dead again: a poison message.
DLQ replay "${ORD[@]}" --yes --limit=1 --format=json > "$T/again1.json"
expect_eq "replayed again: one moved, stamped 2 on orders (replaced, not added)" \
  "$(PS take orders-check | jq -c '[.[] | select(.attributes["qrel-replayed"] == "2") | .attributes | to_entries | map(select(.key == "qrel-replayed")) | length]')" "[1]"
expect_cmd "it dies again" PS nack orders-mailer --attempts 5
expect_cmd "... and reaches orders-dead" wait_for -i 0.3 60 "dead again" dead_count orders-dead "$(($(wc -l <<<"$want_left") + nreplayed))"
DLQ inspect "${ORD[@]}" --format=json > "$T/poison.json"
expect_eq "read: one poison message, replays 2, the one moved (poison, its replays, its id)" \
  "$(jq -c '[.replays.poison, .samples.poison[0].replays, .samples.poison[0].work_id]' "$T/poison.json")" \
  "[1,2,$(jq '.replay.moved[0].work_id' "$T/again1.json")]"

echo "     phase: replay done at $(($(now_ms) - t0)) ms"
# ---- SIGKILL half-way, then again --------------------------------------------------------------
put subscriptions/invoices-check '{"topic":"projects/dlq-shop/topics/invoices"}'
INV=(--config.file="$T/claims.yml" --source=gcp --queue=invoices-mailer)
want=$(jq -r '.[] | select(.attributes.order | tonumber > 102) | .attributes.order' "$T/before-invoices-dead.json" | sort)
nwant=$(grep -c . <<<"$want")
expect_eq "invoices: 6 not-done dead letters to replay" "$nwant" 6
: > "$T/inv-moved.txt"
moved_orders() { PS take invoices-check | jq -r '.[].attributes.order' >> "$T/inv-moved.txt"; grep -c . "$T/inv-moved.txt" || true; }
"$QREL" dlq replay "${INV[@]}" --yes --rate=1/s > "$T/killed.txt" 2>&1 &
KPID=$!
PIDS+=("$KPID")
two_in() { [ "$(moved_orders)" -ge 2 ]; }
# (About 2 s on a quiet machine: the replay's start, its pull, one message a second.)
expect_cmd "the paced replay puts 2 messages back" wait_for -i 0.1 30 "2 messages on invoices" two_in
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
# The killed run pulled before it moved anything, so before now: its lease ends 10 s from now at
# the latest (timed from its start instead, a slow start on a loaded machine ate into the wait).
killed_at=$(now_ms)
got=$(moved_orders)
expect_cmd "killed half-way: $got of $nwant back on invoices" test "$got" -lt "$nwant"
# The killed run's pull leased every dead letter for the subscription's ack deadline (10 s) and
# nobody handed them back: the rerun sees them once that lease has run out, and then the two done
# ones and at least one not-done one can be pulled again.
wait_lease() { [ $(($(now_ms) - killed_at)) -ge 11000 ]; }
wait_for -i 0.2 15 "the killed run's lease to run out" wait_lease
released() { [ "$(PS peek invoices-dead | jq length)" -ge 3 ]; }
wait_for -i 0.5 30 "the killed run's dead letters to be pullable again" released || true
echo "     phase: killed run's lease over at $(($(now_ms) - t0)) ms"
rc=0
DLQ replay "${INV[@]}" --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0" "$rc" 0
total=$(moved_orders)
expect_cmd "invoices got every not-done message, at most one twice ($total for $nwant)" \
  test "$total" -ge "$nwant" -a "$total" -le $((nwant + 1))
expect_eq "every not-done order is on invoices" "$(sort -u "$T/inv-moved.txt")" "$want"
PS peek invoices-dead > "$T/inv-end.json"
expect_eq "invoices-dead holds no not-done message any more" "$(not_done "$T/inv-end.json")" ""
expect_eq "... and still the 2 done ones" "$(jq length "$T/inv-end.json")" 2
rc=0
DLQ replay "${INV[@]}" --yes --format=json > "$T/third.json" || rc=$?
expect_eq "a third run moves nothing" "$rc $(jq '.replay.moved | length' "$T/third.json")" "0 0"
echo "     the test took $(($(now_ms) - t0)) ms from the first nack"

# A replay to a topic that was deleted moves nothing: the subscription then reads
# "_deleted-topic_" and the read refuses. (A topic left with no subscription, which a replay also
# refuses, takes a detached subscription: the emulator does not implement detaching.)
curl -fsS -X DELETE "$API/topics/invoices" >/dev/null
rc=0
"$QREL" dlq replay "${INV[@]}" --only=all --yes > "$T/gone.txt" 2> "$T/gone.err" || rc=$?
expect_eq "a replay to a deleted topic: exit 1" "$rc" 1
expect_cmd "... refused, saying why" grep -qF 'has no topic to replay to (got "_deleted-topic_")' "$T/gone.err"
expect_eq "... and invoices-dead still holds its 2" "$(PS peek invoices-dead | jq length)" 2

finish
