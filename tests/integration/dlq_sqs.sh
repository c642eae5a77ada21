#!/usr/bin/env bash
# `qrel dlq` on SQS: the fauxqs emulator and a PostgreSQL work table. Messages are dead-lettered by
# the broker itself (a consumer receives them maxReceiveCount times without deleting them), then:
# inspect's counts are exact against a claim table (id in the JSON body) and a dedup table (id in
# a message attribute); inspect and a dry run change nothing but the receive count (attributes of
# both queues, bodies and message attributes of the dead letters compared before and after, the
# receive count raised by exactly one per read as the report says); replay moves exactly the
# not_done messages with bodies and attributes intact; a second replay moves nothing; a replay
# SIGKILLed after a few messages and run again ends with every message moved and none lost; the
# source queue's own messages are never received (their receive count is still 0 at the end);
# a FIFO queue's dead letters go back each to its group; the replay stamp: a replayed message
# carries the attribute qrel-replayed 1 (one with SQS's 10 attributes goes back unstamped, said on
# stderr), dead-lettered again by SQS and read shows replays 1, and after another round, poison;
# a queue without a RedrivePolicy is a
# clear error, and so is it to --config.check, as is a dead-letter queue deleted since.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/sqs.sh
. "$QREL_SOURCE_DIR/tests/lib/sqs.sh"

shared_fauxqs FQ
start_postgres PGP
t0=$(date +%s)

psql_do <<SQL
CREATE TABLE claims (order_id text PRIMARY KEY, claimed_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz);
INSERT INTO claims (order_id, sent_at) VALUES ('o-1', now()), ('o-2', now()), ('o-3', now()),
  ('o-4', now()), ('o-5', NULL), ('o-6', NULL);
CREATE TABLE handled (order_id text PRIMARY KEY);
INSERT INTO handled SELECT 'o-' || i FROM generate_series(1, 6) i;
SQL

# ---- the queues: maxReceiveCount 2
orders_dlq=$(create orders-dlq '{}')
orders=$(create orders "{\"VisibilityTimeout\":\"1\",\"RedrivePolicy\":$(policy orders-dlq '"2"')}")
pay_dlq=$(create payments-dlq '{}')
pay=$(create payments "{\"VisibilityTimeout\":\"1\",\"RedrivePolicy\":$(policy payments-dlq 2)}")
ev_dlq=$(create events-dlq.fifo '{"FifoQueue":"true"}')
ev=$(create events.fifo "{\"FifoQueue\":\"true\",\"ContentBasedDeduplication\":\"true\",\"VisibilityTimeout\":\"1\",\"RedrivePolicy\":$(policy events-dlq.fifo 2)}")
create plain '{}' >/dev/null
# the replay stamp's queues: maxReceiveCount 1, so that a consumer's two receives dead-letter
st_dlq=$(create stamps-dlq '{}')
st=$(create stamps "{\"RedrivePolicy\":$(policy stamps-dlq '"1"')}")

# send_batch URL PREFIX N [EXTRA]: messages PREFIX-1..PREFIX-N with the id in the JSON body and
# in the String attribute order_id (plus a Number and a Binary one), and EXTRA (a JSON list of
# entries) after them, ten to a SendMessageBatch
send_batch() {
  jq -cn --arg q "$1" --arg p "$2" --argjson n "$3" --argjson extra "${4:-[]}" '
    [range(1; $n + 1) | {Id: "m\(.)", MessageBody: ({order: {id: "\($p)-\(.)"}, note: "caf\u00e9 \(.)"} | tojson),
      MessageAttributes: {order_id: {DataType: "String", StringValue: "\($p)-\(.)"},
        seq: {DataType: "Number", StringValue: "\(.)"}, blob: {DataType: "Binary", BinaryValue: "AAECAw=="}}}]
    + $extra | _nwise(10) | {QueueUrl: $q, Entries: .}' | while read -r batch; do
    [ "$(sqs SendMessageBatch "$batch" | jq '.Failed | length')" -eq 0 ] || echo "SendMessageBatch failed" >&2
  done
}
# two without the id: none in the body, none in the attributes
send_batch "$orders" o 12 '[{"Id": "u1", "MessageBody": "{\"note\":\"no id 1\"}"},
  {"Id": "u2", "MessageBody": "{\"order\":{\"ref\":2}}",
   "MessageAttributes": {"seq": {"DataType": "Number", "StringValue": "13"}}}]'
send_batch "$pay" p 10
for i in 1 2 3; do # FIFO: a group each, since SQS hands out one group's messages in order
  sqs SendMessage "$(jq -cn --arg q "$ev" --arg i "$i" '{QueueUrl: $q, MessageGroupId: "g\($i)",
    MessageBody: ({order: {id: "e-\($i)"}} | tojson),
    MessageAttributes: {order_id: {DataType: "String", StringValue: "e-\($i)"}}}')" >/dev/null
done

drain() { # drain URL: receives until nothing comes back, each kept for 2 s (however slow this
  # machine is, none comes back within the drain); prints how many were received
  local n=0 got
  while got=$(receive "$1" '"VisibilityTimeout":2') && [ "$got" -gt 0 ]; do n=$((n + got)); done
  echo "$n"
}
# A consumer that fails: two deliveries each, then the receive that finds them over
# maxReceiveCount moves them to the dead-letter queues (as SQS does).
expect_eq "1st delivery of the orders" "$(drain "$orders")" 14
expect_eq "1st delivery of the payments" "$(drain "$pay")" 10
expect_eq "1st delivery of the FIFO events" "$(drain "$ev")" 3
sleep 2.1
expect_eq "2nd delivery of the orders" "$(drain "$orders")" 14
expect_eq "2nd delivery of the payments" "$(drain "$pay")" 10
expect_eq "2nd delivery of the FIFO events" "$(drain "$ev")" 3
sleep 2.1
expect_eq "3rd receive of the orders: dead-lettered instead" "$(drain "$orders")" 0
expect_eq "3rd receive of the payments: dead-lettered instead" "$(drain "$pay")" 0
expect_eq "3rd receive of the FIFO events: dead-lettered instead" "$(drain "$ev")" 0
expect_eq "orders-dlq holds them" "$(depth "$orders_dlq" ApproximateNumberOfMessages)" 14
expect_eq "payments-dlq holds them" "$(depth "$pay_dlq" ApproximateNumberOfMessages)" 10
# The source queue's own messages, sent after the storm: qrel must never receive them.
send_batch "$orders" live 3

# ---- snapshots: queue attributes, and every dead letter's id, body, attributes and sent time
# (received with a long visibility, then made visible again at once; that raises each one's
# receive count by one, which is kept apart from the rest)
queue_attrs() { # queue_attrs URL: every attribute, sorted
  sqs GetQueueAttributes "{\"QueueUrl\":\"$1\",\"AttributeNames\":[\"All\"]}" | jq -S .Attributes
}
contents() { # contents URL OUT: OUT.json (sorted messages without receive counts), OUT.count
  local url=$1 out=$2 page
  : > "$out.raw"
  while page=$(sqs ReceiveMessage "{\"QueueUrl\":\"$url\",\"MaxNumberOfMessages\":10,\"VisibilityTimeout\":30,\"AttributeNames\":[\"All\"],\"MessageAttributeNames\":[\"All\"]}") \
    && [ "$(jq '.Messages | length' <<<"$page")" -gt 0 ]; do
    jq -c '.Messages[]' <<<"$page" >> "$out.raw"
  done
  jq -s -c --arg q "$url" '[_nwise(10)] | .[] | {QueueUrl: $q,
    Entries: [to_entries[] | {Id: "e\(.key)", ReceiptHandle: .value.ReceiptHandle, VisibilityTimeout: 0}]}' \
    "$out.raw" | while read -r batch; do
    [ "$(sqs ChangeMessageVisibilityBatch "$batch" | jq '.Failed | length')" -eq 0 ] || echo "release failed" >&2
  done
  jq -s -S 'map({MessageId, Body, MessageAttributes, sent: .Attributes.SentTimestamp}) | sort_by(.MessageId)' \
    "$out.raw" > "$out.json"
  jq -s -S 'map({key: .MessageId, value: (.Attributes.ApproximateReceiveCount | tonumber)}) | from_entries' \
    "$out.raw" > "$out.count"
}
snapshot() { # snapshot NAME: $T/NAME.{attrs,json,count}
  { queue_attrs "$orders"; queue_attrs "$orders_dlq"; queue_attrs "$pay"; queue_attrs "$pay_dlq"; } > "$T/$1.attrs"
  contents "$orders_dlq" "$T/$1"
}
# unchanged BEFORE AFTER READS: attributes and contents equal, each receive count raised by
# READS (qrel's reads) + 1 (the snapshot's own receive)
unchanged() {
  expect_cmd "$2: attributes of both queue pairs as in $1" cmp -s "$T/$1.attrs" "$T/$2.attrs"
  expect_cmd "$2: dead letters (ids, bodies, attributes, sent times) as in $1" cmp -s "$T/$1.json" "$T/$2.json"
  expect_eq "$2: receive counts raised by $3 read(s) + the snapshot's" \
    "$(jq -n --slurpfile a "$T/$1.count" --slurpfile b "$T/$2.count" --argjson k "$(($3 + 1))" \
      '[$a[0] | to_entries[] | $b[0][.key] - .value == $k] | all and ($a[0] | length) == 14')" true
}

# claims_join QUEUE: the dead_letters entry classifying the dead letters of QUEUE (source aws) by
# their order.id against shop's claims.
claims_join() {
  printf '  - source: aws\n    queue: %s\n    id_field: order.id\n' "$1"
  printf '    work_table: {source: shop, table: claims, id_column: order_id, done_column: sent_at}\n'
}

cat > "$T/qrel.yml" <<YML
sources:
  - name: aws
    kind: sqs
    region: us-east-1
    endpoint: http://127.0.0.1:$FQ/
    access_key_id: AKIDQRELDLQTEST1
    secret_access_key_env: QREL_TEST_SQS_SECRET
    queues: [orders, payments, events.fifo, plain, stamps]
    dlq_visibility_timeout: 2s
  - name: aws-attr
    kind: sqs
    region: us-east-1
    endpoint: http://127.0.0.1:$FQ/
    access_key_id: AKIDQRELDLQTEST1
    secret_access_key_env: QREL_TEST_SQS_SECRET
    queue_name_prefix: ord
  - name: shop
    kind: postgres
    dsn_env: QREL_TEST_PG_DSN
    claim_tables:
      - {table: claims, id_column: order_id, claimed_at_column: claimed_at, done_at_column: sent_at,
         in_flight_window: 1m}
dead_letters:
$(for q in orders payments events.fifo plain stamps; do claims_join "$q"; done)
  - source: aws-attr
    queue: orders
    id_field: "attribute:order_id"
    work_table: {source: shop, table: handled, id_column: order_id}
YML
export QREL_TEST_SQS_SECRET=not-checked-by-fauxqs-1
export QREL_TEST_PG_DSN=postgresql://postgres@127.0.0.1:$PGP/postgres
dlq() { # dlq COMMAND SOURCE QUEUE [flags...] > JSON
  local cmd=$1 source=$2 queue=$3
  shift 3
  "$QREL" dlq "$cmd" --config.file="$T/qrel.yml" --source="$source" --queue="$queue" --format=json "$@"
}

snapshot before
expect_eq "no dead letter in flight before" "$(depth "$orders_dlq" ApproximateNumberOfMessagesNotVisible)" 0

# ---- inspect, against the claim table (id in the body) and the dedup table (id in an attribute)
dlq inspect aws orders > "$T/inspect.json" 2> "$T/inspect.err"
expect_eq "inspect (claims): dead-letter queue and origin" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin)"' "$T/inspect.json")" "orders-dlq orders"
expect_eq "inspect (claims): total, read" "$(jq -r '"\(.total) \(.read)"' "$T/inspect.json")" "14 14"
expect_eq "inspect (claims): done, not_done, unknown" \
  "$(jq -r '.classes | "\(.done) \(.not_done) \(.unknown)"' "$T/inspect.json")" "4 8 2"
expect_eq "inspect (claims): the done sample" \
  "$(jq -r '[.samples.done[].work_id] | sort | join(",")' "$T/inspect.json")" "o-1,o-2,o-3,o-4"
expect_eq "inspect (claims): the not_done sample" \
  "$(jq -r '[.samples.not_done[].work_id] | sort | join(",")' "$T/inspect.json")" \
  "o-10,o-11,o-12,o-5,o-6,o-7,o-8,o-9"
# deliveries: ApproximateReceiveCount before this read, the same for all (the snapshot saw it)
c=$(jq '[.[]] | max' "$T/before.count")
expect_eq "inspect: deliveries min and max = the receive count before the read" \
  "$(jq -r '.deliveries | "\(.min) \(.max) \(.unknown)"' "$T/inspect.json")" "$c $c 0"
expect_between "inspect: oldest dead_since (SentTimestamp)" "$(jq '.dead_since.oldest' "$T/inspect.json")" "$t0" "$(date +%s)"
expect_between "inspect: newest dead_since" "$(jq '.dead_since.newest' "$T/inspect.json")" "$t0" "$(date +%s)"
expect_eq "inspect: says what reading changed" \
  "$(jq '.read_effect | test("ApproximateReceiveCount by one")' "$T/inspect.json")" true
dlq inspect aws-attr orders > "$T/inspect-attr.json"
expect_eq "inspect (dedup, attribute:order_id): done, not_done, unknown" \
  "$(jq -r '.classes | "\(.done) \(.not_done) \(.unknown)"' "$T/inspect-attr.json")" "6 6 2"
snapshot after-inspect
unchanged before after-inspect 2

# ---- a dry run changes nothing either
dlq replay aws orders > "$T/dry.json"
expect_eq "dry run: would move the 8 not_done" \
  "$(jq -r '[.replay.would_move[].work_id] | sort | join(",")' "$T/dry.json")" "o-10,o-11,o-12,o-5,o-6,o-7,o-8,o-9"
expect_eq "dry run: moved nothing" "$(jq '.replay.moved | length' "$T/dry.json")" 0
snapshot after-dry
unchanged after-inspect after-dry 1
expect_eq "source queue after the dry run: its 3 own messages" "$(depth "$orders" ApproximateNumberOfMessages)" 3

# ---- replay --yes: exactly the not_done, bodies and attributes intact
dlq replay aws orders --yes > "$T/replay.json" 2> "$T/replay.err" || not_ok "replay exited $?"
expect_eq "replay: moved the 8 not_done" \
  "$(jq -r '[.replay.moved[].work_id] | sort | join(",")' "$T/replay.json")" "o-10,o-11,o-12,o-5,o-6,o-7,o-8,o-9"
expect_eq "replay: failed" "$(jq '.replay.failed | length' "$T/replay.json")" 0
expect_eq "orders-dlq after replay" "$(depth "$orders_dlq" ApproximateNumberOfMessages) $(depth "$orders_dlq" ApproximateNumberOfMessagesNotVisible)" "6 0"
expect_eq "orders after replay: 3 own + 8 replayed" "$(depth "$orders" ApproximateNumberOfMessages)" 11
# ---- a second replay moves nothing
dlq replay aws orders --yes > "$T/replay2.json" || not_ok "second replay exited $?"
expect_eq "second replay: chosen, moved" \
  "$(jq -r '.replay | "\(.chosen) \(.moved | length)"' "$T/replay2.json")" "0 0"
expect_eq "orders after the second replay" "$(depth "$orders" ApproximateNumberOfMessages)" 11
expect_eq "orders-dlq after the second replay" "$(depth "$orders_dlq" ApproximateNumberOfMessages)" 6

# What is on the source queue now: the replayed messages exactly as they were dead-lettered
# (body and message attributes), and its own three never received before (receive count 1 now).
: > "$T/orders.raw"
while page=$(sqs ReceiveMessage "{\"QueueUrl\":\"$orders\",\"MaxNumberOfMessages\":10,\"VisibilityTimeout\":30,\"AttributeNames\":[\"All\"],\"MessageAttributeNames\":[\"All\"]}") \
  && [ "$(jq '.Messages | length' <<<"$page")" -gt 0 ]; do
  jq -c '.Messages[]' <<<"$page" >> "$T/orders.raw"
done
jq -s -S 'map(select(.Body | test("live") | not) | {Body, MessageAttributes}) | sort_by(.Body)' \
  "$T/orders.raw" > "$T/replayed.json"
jq -S 'map(select(.Body | test("\"o-([5-9]|1[0-2])\"")) | {Body, MessageAttributes}
  | .MessageAttributes["qrel-replayed"] = {DataType: "Number", StringValue: "1"}) | sort_by(.Body)' \
  "$T/before.json" > "$T/not_done.json"
expect_eq "replayed: 8 messages" "$(jq length "$T/replayed.json")" 8
expect_cmd "replayed bodies and attributes = those of the not_done dead letters, stamped qrel-replayed 1" \
  cmp -s "$T/replayed.json" "$T/not_done.json"
expect_eq "the source queue's own messages: untouched until now" \
  "$(jq -s -r 'map(select(.Body | test("live"))) | map("\(.MessageAttributes.order_id.StringValue):\(.Attributes.ApproximateReceiveCount)") | sort | join(",")' "$T/orders.raw")" \
  "live-1:1,live-2:1,live-3:1"

# ---- a replay killed after a few messages, then run again: every message moved, none lost
# qrel itself in the background (not a function's subshell), so that the kill reaches it
"$QREL" dlq replay --config.file="$T/qrel.yml" --source=aws --queue=payments --yes --rate=4/s \
  > /dev/null 2>&1 &
pid=$!
PIDS+=("$pid")
moved_some() { [ "$(depth "$pay" ApproximateNumberOfMessages)" -ge 3 ]; }
wait_for -i 0.02 20 "the paced replay to move 3 payments" moved_some
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
killed_at=$(depth "$pay" ApproximateNumberOfMessages)
expect_between "payments moved before the kill" "$killed_at" 3 9
# what the killed run held turns visible when dlq_visibility_timeout (2 s) ends
visible_again() { [ "$(depth "$pay_dlq" ApproximateNumberOfMessagesNotVisible)" -eq 0 ]; }
wait_for 10 "the killed replay's dead letters to turn visible" visible_again
left=$(depth "$pay_dlq" ApproximateNumberOfMessages)
expect_between "payments-dlq after the kill: the rest (one more when killed between send and delete)" \
  "$left" $((10 - killed_at)) $((11 - killed_at))
dlq replay aws payments --yes > "$T/rerun.json" || not_ok "replay after the kill exited $?"
expect_eq "rerun: moved what the killed run left" "$(jq '.replay.moved | length' "$T/rerun.json")" "$left"
expect_eq "payments-dlq after the rerun: empty" \
  "$(depth "$pay_dlq" ApproximateNumberOfMessages) $(depth "$pay_dlq" ApproximateNumberOfMessagesNotVisible)" "0 0"
pay_ids=$( : > "$T/pay.raw"
  while page=$(sqs ReceiveMessage "{\"QueueUrl\":\"$pay\",\"MaxNumberOfMessages\":10,\"VisibilityTimeout\":30,\"MessageAttributeNames\":[\"All\"]}") \
    && [ "$(jq '.Messages | length' <<<"$page")" -gt 0 ]; do jq -c '.Messages[]' <<<"$page" >> "$T/pay.raw"; done
  jq -s -r 'map(.MessageAttributes.order_id.StringValue) | unique | join(",")' "$T/pay.raw")
expect_eq "payments after kill and rerun: every one of the 10 (none lost)" "$pay_ids" \
  "p-1,p-10,p-2,p-3,p-4,p-5,p-6,p-7,p-8,p-9"
expect_between "payments after kill and rerun: at most one duplicate (moved, killed before its delete)" \
  "$(jq -s 'length' "$T/pay.raw")" 10 11

# ---- FIFO: each message back on its group, with a fresh deduplication id (content-based
# deduplication would otherwise see the same body within 5 minutes as a duplicate of the original)
dlq replay aws events.fifo --yes > "$T/fifo.json" || not_ok "FIFO replay exited $?"
expect_eq "FIFO replay: moved" "$(jq -r '[.replay.moved[].work_id] | sort | join(",")' "$T/fifo.json")" "e-1,e-2,e-3"
expect_eq "events-dlq.fifo after the replay" "$(depth "$ev_dlq" ApproximateNumberOfMessages)" 0
expect_eq "events.fifo: each body back in its own group" \
  "$(sqs ReceiveMessage "{\"QueueUrl\":\"$ev\",\"MaxNumberOfMessages\":10,\"AttributeNames\":[\"All\"],\"MessageAttributeNames\":[\"All\"]}" |
    jq -r '[.Messages[] | "\(.Attributes.MessageGroupId):\(.Body | fromjson | .order.id):\(.MessageAttributes.order_id.StringValue)"] | sort | join(",")')" \
  "g1:e-1:e-1,g2:e-2:e-2,g3:e-3:e-3"

# ---- the replay stamp (issue 24): s-1, and s-10 with SQS's most message attributes (10)
send "$st" '{\"order\":{\"id\":\"s-1\"}}'
send "$st" '{\"order\":{\"id\":\"s-10\"}}' "$(jq -cn '{MessageAttributes: ([range(10)
  | {key: "a\(.)", value: {DataType: "String", StringValue: "v"}}] | from_entries)}' | sed 's/^{//; s/}$//')"
# A consumer that fails: it receives what there is and hands it back at once (visibility 0); the
# next receive finds each over maxReceiveCount 1 and SQS moves it to stamps-dlq.
dies() { # dies WHAT
  expect_eq "$1: the consumer receives both" "$(receive "$st" '"VisibilityTimeout":0,"MessageAttributeNames":["All"]')" 2
  expect_eq "$1: the next receive dead-letters them instead" "$(receive "$st")" 0
  expect_eq "$1: stamps-dlq holds both" "$(depth "$st_dlq" ApproximateNumberOfMessages)" 2
}
dies "first failure"
dlq replay aws stamps --yes > "$T/st1.json" 2> "$T/st1.err" || not_ok "stamp replay exited $?"
expect_eq "stamps: moved both" "$(jq '.replay.moved | length' "$T/st1.json")" 2
expect_cmd "... and said that s-10 (10 attributes) went back unstamped" \
  grep -q 'replayed without the replay stamp: the message has 10 message attributes' "$T/st1.err"
stamped() { # the attributes of what is on stamps, by order id: "s-1:1 s-10:-" (- no stamp), and
  # how many attributes s-10 kept; the receive hands them back at once (visibility 0)
  sqs ReceiveMessage "{\"QueueUrl\":\"$st\",\"MaxNumberOfMessages\":10,\"VisibilityTimeout\":0,\"MessageAttributeNames\":[\"All\"]}" |
    jq -r '[.Messages[] | "\(.Body | fromjson | .order.id):\(.MessageAttributes["qrel-replayed"].StringValue // "-"):\(.MessageAttributes | length)"] | sort | join(" ")'
}
expect_eq "the replayed s-1 carries qrel-replayed 1; s-10 kept its 10 attributes, unstamped" "$(stamped)" "s-10:-:10 s-1:1:1"
expect_eq "second failure: the next receive dead-letters them" "$(receive "$st")" 0
dlq inspect aws stamps > "$T/st-once.json"
expect_eq "dead again and read: never 1 (s-10), once 1 (s-1)" \
  "$(jq -c '[.replays.never, .replays.once, .replays.poison, .replays.unknown]' "$T/st-once.json")" '[1,1,0,0]'
dlq replay aws stamps --yes > "$T/st2.json" 2> /dev/null
expect_eq "replayed again: s-1 carries one stamp, 2" "$(stamped)" "s-10:-:10 s-1:2:1"
expect_eq "third failure: dead-lettered again" "$(receive "$st")" 0
dlq inspect aws stamps > "$T/st-poison.json"
expect_eq "read: s-1 is poison (replays 2)" \
  "$(jq -c '[.replays.poison, [.samples.poison[] | "\(.work_id):\(.replays)"]]' "$T/st-poison.json")" '[1,["s-1:2"]]'

# ---- a queue without a RedrivePolicy: a clear error, exit 1
dlq inspect aws plain > /dev/null 2> "$T/plain.err" && not_ok "inspect of a queue without a RedrivePolicy succeeded"
expect_eq "inspect of a queue without a RedrivePolicy says why" "$(cat "$T/plain.err")" \
  'qrel dlq: queue "plain": source "aws": no RedrivePolicy, so no dead-letter queue to read'

# ---- --config.check fails on what `qrel dlq` would fail on, and says the same
check() { expect_exit "--config.check $1: exit status" "$2" "$T/check.out" "$EXPORTER" --config.file="$1" --config.check; }
check "$T/qrel.yml" 1
expect_eq "--config.check: a dead_letters queue without a RedrivePolicy" "$(cat "$T/check.out")" \
  "$T/qrel.yml: source \"aws\": dead_letters: queue \"plain\": no RedrivePolicy, so no dead-letter queue to read"
# what a scrape fails on: an endpoint nobody listens on
sed "s|endpoint: http://127.0.0.1:$FQ/|endpoint: http://127.0.0.1:$(free_port)/|" "$T/qrel.yml" > "$T/down.yml"
check "$T/down.yml" 1
expect_line "--config.check: the source's endpoint is down" \
  "^$T/down.yml: source \"aws\": AmazonSQS.GetQueueUrl \"orders\": POST /: .*connect" "$T/check.out"
# a RedrivePolicy whose dead-letter queue was deleted since
create gone-dlq '{}' >/dev/null
create orphan "{\"RedrivePolicy\":$(policy gone-dlq 2)}" >/dev/null
sqs DeleteQueue "{\"QueueUrl\":\"$(sqs GetQueueUrl '{"QueueName":"gone-dlq"}' | jq -r .QueueUrl)\"}" >/dev/null
sed 's/\bplain\b/orphan/' "$T/qrel.yml" > "$T/orphan.yml"
check "$T/orphan.yml" 1
expect_eq "--config.check: a dead_letters queue whose dead-letter queue is gone" "$(cat "$T/check.out")" \
  "$T/orphan.yml: source \"aws\": dead_letters: queue \"orphan\": its dead-letter queue \"gone-dlq\" does not exist"
# once plain has one, the file passes, having received nothing (none of orders-dlq is hidden)
sqs SetQueueAttributes "{\"QueueUrl\":\"$(sqs GetQueueUrl '{"QueueName":"plain"}' | jq -r .QueueUrl)\",
  \"Attributes\":{\"RedrivePolicy\":$(policy orders-dlq 2)}}" >/dev/null
check "$T/qrel.yml" 0
expect_eq "--config.check once plain has a RedrivePolicy" "$(cat "$T/check.out")" "$T/qrel.yml: OK, 3 sources"
expect_eq "orders-dlq after the checks: its 6, none received" \
  "$(depth "$orders_dlq" ApproximateNumberOfMessages) $(depth "$orders_dlq" ApproximateNumberOfMessagesNotVisible)" "6 0"

finish
