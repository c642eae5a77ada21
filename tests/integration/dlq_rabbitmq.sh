#!/usr/bin/env bash
# `qrel dlq` on RabbitMQ over AMQP 0-9-1, against Debian's RabbitMQ 3.10 and a PostgreSQL work
# table, with dead letters made by the broker itself from messages published and refused by
# python3-pika (tests/peers/rabbitmq/dlq_peer.py): a classic queue `orders` (fed through a fanout
# exchange that also feeds `audit`) whose consumer rejects without requeue, and a quorum queue
# `payments` whose x-delivery-limit dead-letters (through exchange dlx into a quorum queue).
#   inspect: counts per class equal SQL; deliveries, dead_since, origin; inspect and a dry run
#            leave every queue as it was (bodies, properties, headers, depths) apart from the
#            documented read effects (redelivered, which the snapshots' own reads set too, and
#            x-delivery-count + 1 per read on the quorum dead-letter queue);
#   replay:  moves exactly the not-done ones, back on their queue only (not fanned out to audit),
#            body, properties and headers intact, x-death gone, qrel-replayed: 1; a second replay
#            moves nothing; one that dies again carries its stamp, and its next replay writes 2;
#   SIGKILL: a paced replay killed after 2 moves, then run again, loses and duplicates nothing;
#   amqps:   the broker's TLS listener (the test's CA, a client certificate required, its key also
#            encrypted with key_password_file): inspect
#            reads what amqp:// reads, the first replay goes over it; a CA that did not sign the
#            broker's certificate and a server_name it does not carry are refused, naming TLS
#            verification; --config.check loads tls_config's files (file:line:col);
#   refused: a dead-letter queue with a delivery limit of its own; a publish the user may not
#            make leaves the message dead; an origin queue deleted since (even a dry run);
# all as RabbitMQ users holding exactly the permissions docs/dlq.md lists.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/rabbitmq.sh
. "$QREL_SOURCE_DIR/tests/lib/rabbitmq.sh"

redis_tls_certs
# shellcheck disable=SC2034 # rabbit_start (tests/lib/rabbitmq.sh) reads it
RABBIT_TLS=$T/tls
rabbit_test_start
start_postgres PGP
# Debian's python3-pika imports only under Debian's python3, which is $QREL_PYTHON.
peer() { "$QREL_PYTHON" "$QREL_SOURCE_DIR/tests/peers/rabbitmq/dlq_peer.py" "$RABBIT_AMQP" "$@"; }
depths() { for q in orders audit orders.dlq payments payments.dlq; do printf '%s=%s ' "$q" "$(peer count "$q")"; done; }

# ---- dead letters, made by the broker --------------------------------------------------------
peer setup
peer publish
peer reject orders
peer reject payments
expect_eq "the consumer's rejects and the delivery limit dead-lettered everything" \
  "$(depths)" "orders=0 audit=7 orders.dlq=7 payments=0 payments.dlq=4 "
psql_do <<SQL
CREATE TABLE claims (order_id text PRIMARY KEY, sent_at timestamptz);
INSERT INTO claims VALUES ('o-1', now()), ('o-2', now()), ('o-3', now()), ('o-4', NULL),
  ('p-1', now()), ('p-3', now());
SQL

# The least permissions of docs/dlq.md: tag management (the API reads queues and bindings), read
# on the dead-letter queues; replay also write on the default exchange (amq.default).
PW=rabbit-dlq-pw-$$
printf '%s\n' "$PW" > "$T/user.pw"
api PUT /users/qrel-inspect "{\"password\":\"$PW\",\"tags\":\"management\"}"
api PUT /permissions/%2F/qrel-inspect '{"configure":"^$","write":"^$","read":"^(orders|payments)\\.dlq$"}'
api PUT /users/qrel-replay "{\"password\":\"$PW\",\"tags\":\"management\"}"
api PUT /permissions/%2F/qrel-replay '{"configure":"^$","write":"^amq\\.default$","read":"^(orders|payments)\\.dlq$"}'
config() { # FILE USER
  cat > "$1" <<YML
sources:
  - name: rmq
    kind: rabbitmq
    url: http://127.0.0.1:$RABBIT_MGMT
    amqp_url: amqp://127.0.0.1:$RABBIT_AMQP
    username: $2
    password_file: $T/user.pw
    queues: [orders, payments]
$(pg_source shop "$PGP")
    dedup_tables: [{table: claims, id_column: order_id, handled_at_column: sent_at}]
dead_letters:
  - source: rmq
    queue: orders
    id_field: order.id
    work_table: {source: shop, table: claims, id_column: order_id, done_column: sent_at}
  - source: rmq
    queue: payments
    id_field: header:order_id
    work_table: {source: shop, table: claims, id_column: order_id, done_column: sent_at}
YML
}
config "$T/inspect.yml" qrel-inspect
config "$T/replay.yml" qrel-replay
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }
# amqps_config IN OUT CA [LINE]: IN over the broker's TLS listener, tls_config with CA, the test's
# client certificate and LINE (one more tls_config key)
amqps_config() {
  sed "s|^    amqp_url: amqp://.*|    amqp_url: amqps://127.0.0.1:$RABBIT_AMQPS\n    tls_config:\n      ca_file: $3\n      cert_file: $T/tls/client.crt\n      key_file: $T/tls/client.key${4:+\n      $4}|" "$1" > "$2"
}
amqps_config "$T/inspect.yml" "$T/amqps.yml" "$T/tls/ca.crt"
amqps_config "$T/replay.yml" "$T/amqps_replay.yml" "$T/tls/ca.crt"
amqps_config "$T/inspect.yml" "$T/no_ca.yml" "$T/tls/none.crt"
rc=0
"$EXPORTER" --config.file="$T/amqps.yml" --config.check > /dev/null 2> "$T/amqps.err" || rc=$?
rc2=0
"$EXPORTER" --config.file="$T/no_ca.yml" --config.check > /dev/null 2> "$T/no_ca.err" || rc2=$?
expect_eq "--config.check: amqps:// with tls_config passes; a missing ca_file is refused at file:line:col" \
  "$rc $rc2 $(grep -cF "no_ca.yml:7:16: tls_config: ca_file: cannot read" "$T/no_ca.err")" "0 1 1"

# snapshot NAME: depths, and each dead letter as pika reads it without the read effects
# (redelivered, x-delivery-count), sorted; NAME.xdc: payments.dlq's x-delivery-counts
snapshot() {
  depths > "$T/$1.txt"
  peer dump orders.dlq > "$T/$1.orders"
  peer dump payments.dlq > "$T/$1.payments"
  jq -S -c 'del(.redelivered, .headers["x-delivery-count"])' "$T/$1.orders" "$T/$1.payments" | sort >> "$T/$1.txt"
  jq -s -c 'map({key: .message_id, value: .headers["x-delivery-count"]}) | from_entries' "$T/$1.payments" > "$T/$1.xdc"
}
# not_done QUEUE_IDS: of the ids given (one a line), those without a sent row, as SQL says
not_done_sql() {
  psql_val "SELECT count(*) FILTER (WHERE c.sent_at IS NOT NULL), count(*) FILTER (WHERE c.sent_at IS NULL)
            FROM unnest(string_to_array('$1', ',')) AS v(id) LEFT JOIN claims c ON c.order_id = v.id" | tr '|' ' '
}

# ---- inspect and a dry run: counts as SQL says, nothing changed but the read effects ----------
snapshot before
ids=$(jq -r '.body | fromjson | .order.id // empty' "$T/before.orders" | paste -sd,)
rc=0
DLQ inspect --config.file="$T/inspect.yml" --source=rmq --queue=orders --format=json > "$T/inspect.json" || rc=$?
expect_eq "inspect orders (as the read-only user): exit 0" "$rc" 0
expect_eq "inspect's split equals SQL's (done not_done, then unknown total read)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/inspect.json")" \
  "$(not_done_sql "$ids") 1 7 7"
expect_eq "... names: dead-letter queue, origin, kind; a read effect" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind) \(.read_effect != null)"' "$T/inspect.json")" \
  "orders.dlq orders rabbitmq true"
xtime=$(jq -r 'select(.message_id == "m-o-1") | .headers["x-death"][0].time' "$T/before.orders")
expect_eq "... each rejected once (x-death count), dead since x-death's time" \
  "$(jq -r '"\(.deliveries.min) \(.deliveries.max) \(.dead_since.oldest | floor)"' "$T/inspect.json")" "1 1 $xtime"
# the same read over amqps:// (orders.dlq is a classic queue: its read effect, redelivered, is
# left out of the snapshots)
rc=0
DLQ inspect --config.file="$T/amqps.yml" --source=rmq --queue=orders --format=json > "$T/inspect_tls.json" || rc=$?
same() { jq -S -c '{classes, total, read, deliveries, samples: (.samples | map_values(map(.message_id) | sort))}' "$1"; }
expect_eq "inspect orders over amqps:// (the test's CA, a client certificate): exit 0, counts and ids as over amqp://" \
  "$rc $(same "$T/inspect_tls.json")" "0 $(same "$T/inspect.json")"
# a CA that signed nothing here: the broker sends its own CA after its certificate (RabbitMQ
# appends cacertfile to the chain), which OpenSSL then names
amqps_config "$T/inspect.yml" "$T/wrong_ca.yml" "$T/tls/other-ca.crt"
rc=0
"$QREL" dlq inspect --config.file="$T/wrong_ca.yml" --source=rmq --queue=orders > /dev/null 2> "$T/wrong_ca.err" || rc=$?
expect_eq "a CA that did not sign the broker's certificate: inspect refused (exit 1), naming TLS verification" \
  "$rc $(grep -cF "TLS verification of the broker's certificate failed: self-signed certificate in certificate chain" "$T/wrong_ca.err")" "1 1"
amqps_config "$T/inspect.yml" "$T/wrong_name.yml" "$T/tls/ca.crt" "server_name: rabbit.example"
rc=0
"$QREL" dlq inspect --config.file="$T/wrong_name.yml" --source=rmq --queue=orders > /dev/null 2> "$T/wrong_name.err" || rc=$?
expect_eq "a server_name the broker's certificate does not carry: refused (exit 1), naming TLS verification; no password in any message" \
  "$rc $(grep -cF "TLS verification of the broker's certificate failed: hostname mismatch" "$T/wrong_name.err") $(cat "$T/no_ca.err" "$T/wrong_ca.err" "$T/wrong_name.err" "$T/dlq.err" | grep -cF "$PW")" "1 1 0"
# the client key encrypted, its password from key_password_file (rabbitmq-c hands it to OpenSSL)
printf 'key-pw-%s\n' "$$" > "$T/key.pw"
openssl pkey -in "$T/tls/client.key" -aes256 -passout file:"$T/key.pw" -out "$T/tls/client-enc.key"
amqps_config "$T/inspect.yml" "$T/enc_key.yml" "$T/tls/ca.crt" "key_password_file: $T/key.pw"
sed -i "s|key_file: $T/tls/client.key|key_file: $T/tls/client-enc.key|" "$T/enc_key.yml"
rc=0
DLQ inspect --config.file="$T/enc_key.yml" --source=rmq --queue=orders --format=json > "$T/enc_key.json" || rc=$?
expect_eq "... with an encrypted client key and its key_password_file: exit 0, all 7 read" \
  "$rc $(jq -r .read "$T/enc_key.json" 2>/dev/null)" "0 7"
rc=0
DLQ inspect --config.file="$T/inspect.yml" --source=rmq --queue=payments --format=json > "$T/inspect_p.json" || rc=$?
pids=$(jq -r '.headers.order_id' "$T/before.payments" | paste -sd,)
expect_eq "inspect payments (id in a header, quorum): split equals SQL's, 3 deliveries each (limit 2)" \
  "$rc $(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.deliveries.min) \(.deliveries.max) \(.dead_letter_queue)"' "$T/inspect_p.json")" \
  "0 $(not_done_sql "$pids") 0 3 3 payments.dlq"
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=rmq --queue=orders --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run (as the read-only user): exit 0, would move exactly the not-done ones" \
  "$rc $(jq -r '[.replay.would_move[].message_id] | sort | join(" ")' "$T/dry.json")" "0 m-o-4 m-o-5 m-o-6"
snapshot after
expect_cmd "inspect and the dry run left depths, bodies, properties and headers as they were" \
  cmp -s "$T/before.txt" "$T/after.txt"
expect_eq "... and raised payments.dlq's x-delivery-count by 1 per read: inspect's and the snapshot's" \
  "$(jq -n -c --slurpfile a "$T/before.xdc" --slurpfile b "$T/after.xdc" '[$a[0] | to_entries[] | $b[0][.key] - .value] | unique')" "[2]"

# ---- replay: exactly the not-done ones, intact, to their queue only --------------------------
rc=0
DLQ replay --config.file="$T/amqps_replay.yml" --source=rmq --queue=orders --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes over amqps://: exit 0, moved exactly the not-done ones" \
  "$rc $(jq -r '[.replay.moved[].message_id] | sort | join(" ")' "$T/replay.json")" "0 m-o-4 m-o-5 m-o-6"
expect_eq "... back on orders only (the default exchange: audit got no copies)" "$(depths)" \
  "orders=3 audit=7 orders.dlq=4 payments=0 payments.dlq=4 "
peer dump orders > "$T/moved.orders"
expect_eq "... body and properties intact, x-death and x-first-death-* gone, qrel-replayed: 1" \
  "$(jq -S -c '{body, content_type, correlation_id, delivery_mode, message_id, headers}' "$T/moved.orders" | sort)" \
  "$(jq -S -c 'select(.message_id == "m-o-4" or .message_id == "m-o-5" or .message_id == "m-o-6")
     | {body, content_type, correlation_id, delivery_mode, message_id,
        headers: (.headers | with_entries(select(.key | test("^x-") | not)) | . + {"qrel-replayed": 1})}' "$T/before.orders" | sort)"
expect_eq "the dead-letter queue keeps the done ones and the one without an id" \
  "$(peer dump orders.dlq | jq -r .message_id | sort | paste -sd' ')" "m-noid m-o-1 m-o-2 m-o-3"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=rmq --queue=orders --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing, the queues as they were" \
  "$rc $(jq '.replay.moved | length' "$T/again.json") $(depths)" \
  "0 0 orders=3 audit=7 orders.dlq=4 payments=0 payments.dlq=4 "

# ---- the stamp: the replayed ones die again; read back, they carry it; replayed, it is 2 ------
peer reject orders
expect_eq "the replayed ones died again, with their stamp (read from the broker)" \
  "$(peer dump orders.dlq | jq -r 'select(.headers["qrel-replayed"] == 1 and .headers["x-death"][0].count == 1) | .message_id' | sort | paste -sd' ')" \
  "m-o-4 m-o-5 m-o-6"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=rmq --queue=orders --yes --limit=1 --format=json > "$T/poison.json" || rc=$?
expect_eq "replayed again: the read took replays from the stamp, the publish wrote 2" \
  "$rc $(peer dump orders | jq -c '[.message_id, .headers["qrel-replayed"]]')" \
  "0 [\"$(jq -r '.replay.moved[0].message_id' "$T/poison.json")\",2]"

# ---- refused: a publish the user may not make; a dead-letter queue with its own limit ----------
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=rmq --queue=payments --only=all --limit=1 --yes --format=json > "$T/denied.json" || rc=$?
expect_eq "replay as the read-only user: exit 1, the publish refused (403), left dead" \
  "$rc $(jq -r '.replay.failed[0].error | test("403 ACCESS_REFUSED")' "$T/denied.json") $(peer count payments.dlq) $(peer count payments)" "1 true 4 0"
api PUT /policies/%2F/dlq-limit '{"pattern":"^payments\\.dlq$","definition":{"delivery-limit":5},"apply-to":"queues"}'
dlq_limit() { # the management API shows payments.dlq's effective policy after its next stats
  [ "$(curl -fsS -u guest:guest "$API/queues/%2F/payments.dlq" | jq '.effective_policy_definition["delivery-limit"]')" = "${1:-5}" ]
}
expect_cmd "the policy gives payments.dlq a delivery limit of 5" wait_for -i 0.2 20 "the policy" dlq_limit
rc=0
DLQ inspect --config.file="$T/inspect.yml" --source=rmq --queue=payments > /dev/null || rc=$?
expect_eq "a dead-letter queue with a delivery limit of its own: inspect refused (exit 1)" "$rc" 1
expect_cmd "... with the figures and the way out" grep -qF \
  'dead-letter queue "payments.dlq" has a delivery limit of its own (5)' "$T/dlq.err"
sed 's|^    queues: \[orders, payments\]$|&\n    dlq_accept_delivery_limit: true|' "$T/inspect.yml" > "$T/accept.yml"
rc=0
DLQ inspect --config.file="$T/accept.yml" --source=rmq --queue=payments --format=json > "$T/accept.json" || rc=$?
expect_eq "... read anyway with dlq_accept_delivery_limit: true (exit 0, all 4)" \
  "$rc $(jq -r .read "$T/accept.json" 2>/dev/null)" "0 4"
api DELETE /policies/%2F/dlq-limit
expect_cmd "the policy is gone" wait_for -i 0.2 20 "no policy" dlq_limit null

# ---- SIGKILL after 2 moves, then again ---------------------------------------------------------
"$QREL" dlq replay --config.file="$T/replay.yml" --source=rmq --queue=payments --only=all --yes \
  --rate=1/s --log.level=debug > "$T/killed.txt" 2> "$T/killed.err" &
KPID=$!
PIDS+=("$KPID")
two_moved() { [ "$(grep -c 'dead letter put back and acked' "$T/killed.err")" -ge 2 ]; }
expect_cmd "the paced replay moves 2 messages" wait_for -i 0.02 20 "2 moves logged" two_moved
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
# The broker requeues what the killed connection held: wait for it to be ready again.
all_back() { [ $(($(peer count payments) + $(peer count payments.dlq))) -eq 4 ]; }
expect_cmd "after the kill every payment is on its queue or dead, once" wait_for -i 0.2 20 "4 payments" all_back
expect_eq "... 2 moved, 2 still dead, none in both" \
  "$(peer count payments) $( (peer dump payments; peer dump payments.dlq) | jq -r '.headers.order_id' | sort | paste -sd' ')" \
  "2 p-1 p-2 p-3 p-4"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=rmq --queue=payments --only=all --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0, moved the other 2" "$rc $(jq '.replay.moved | length' "$T/rerun.json")" "0 2"
expect_eq "every payment on its queue exactly once, stamped, the dead-letter queue empty" \
  "$(peer dump payments | jq -r '"\(.headers.order_id):\(.headers["qrel-replayed"]):\(.headers | has("x-death"))"' | sort | paste -sd' ') $(peer count payments.dlq)" \
  "p-1:1:false p-2:1:false p-3:1:false p-4:1:false 0"

# ---- refused: a replay onto an origin queue that no longer exists (even a dry run) -------------
api DELETE /queues/%2F/orders
rc=0
DLQ replay --config.file="$T/replay.yml" --source=rmq --queue=orders --only=all --format=json > /dev/null || rc=$?
expect_eq "orders deleted: the dry run of a replay is refused (exit 1), nothing moved" \
  "$rc $(peer count orders.dlq)" "1 6"
expect_cmd "... saying so" grep -qF 'queue "orders" does not exist' "$T/dlq.err"

finish
