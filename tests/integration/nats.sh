#!/usr/bin/env bash
# The nats collector against a real nats-server 2.9 with JetStream: a work-queue stream with a
# durable pull consumer (ack_wait 1 s, max_deliver 3) whose messages are delivered and left
# unacknowledged until they are redelivered and given up, a dead-letter stream keeping the
# MAX_DELIVERIES advisories, a limits stream with a backoff consumer, an ack-none consumer and an
# ephemeral one give exactly the expected series; accounts are paged; a proxy's basic auth is
# sent and never shown. Faults (down, hanging, HTTP 500, 401, 403, truncated, malformed, larger
# than the cap) give up 0 with their reason within the timeout while a healthy source reports.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

JSCTL="$QREL_PYTHON $QREL_SOURCE_DIR/tests/peers/nats/jsctl.py"

start_nats NP NM
J() { $JSCTL "$NP" "$@"; }
req() { J req "$@" >/dev/null; }

# The dead-letter pattern of JetStream: a stream that keeps the advisories the server publishes
# when a message reaches max_deliver (the message itself stays in its stream).
req '$JS.API.STREAM.CREATE.ORDERS_DLQ' \
  '{"name":"ORDERS_DLQ","storage":"file","subjects":["$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.*"],"max_age":86400000000000}'
# ORDERS keeps messages 7 days (max_age), ORDERS_DLQ its advisories 1 day: dead letters expire unread.
req '$JS.API.STREAM.CREATE.ORDERS' \
  '{"name":"ORDERS","subjects":["orders.>"],"storage":"file","retention":"workqueue","duplicate_window":90000000000,"max_age":604800000000000}'
req '$JS.API.CONSUMER.DURABLE.CREATE.ORDERS.worker' \
  '{"stream_name":"ORDERS","config":{"durable_name":"worker","ack_policy":"explicit","ack_wait":1000000000,"max_deliver":3,"filter_subject":"orders.>"}}'
req '$JS.API.STREAM.CREATE.EVENTS' '{"name":"EVENTS","subjects":["events.>"],"storage":"memory"}'
req '$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.backoff' \
  '{"stream_name":"EVENTS","config":{"durable_name":"backoff","ack_policy":"explicit","max_deliver":5,"backoff":[1000000000,2000000000,5000000000]}}'
req '$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.fire' \
  '{"stream_name":"EVENTS","config":{"durable_name":"fire","ack_policy":"none","max_deliver":2}}'
req '$JS.API.CONSUMER.CREATE.EVENTS' \
  '{"stream_name":"EVENTS","config":{"ack_policy":"explicit","inactive_threshold":60000000000}}'
J pub events.x e 2

t_first=$(now_ms)
J pub orders.created order 4
# Each round waits for the server rather than for the clock: while a round's pull is open (up to
# 30 s, 30x the 1 s ack_wait; it returns as soon as its batch is full) the only messages it can
# get are the ones whose lease ran out, since orders 5 and 6 are published only after round 3.
# Round 1: order 1 acked, orders 2-4 delivered and left to expire (ack_wait 1 s).
expect_eq "round 1 (payload:delivery count)" "$(J fetch ORDERS worker 1 ack | tr '\n' ' ')" "order:1 "
expect_eq "round 1, left" "$(J fetch ORDERS worker 3 leave | tr '\n' ' ')" "order:1 order:1 order:1 "
# Round 2: the three expired ones come again (second delivery) and are left again.
expect_eq "round 2" "$(J fetch ORDERS worker 3 leave 30 | tr '\n' ' ')" "order:2 order:2 order:2 "
# Round 3: the third and last delivery; one is acked, two expire for good (max_deliver 3).
t_round3=$(now_ms)
expect_eq "round 3, acked" "$(J fetch ORDERS worker 1 ack 30 | tr '\n' ' ')" "order:3 "
expect_eq "round 3, left" "$(J fetch ORDERS worker 2 leave 30 | tr '\n' ' ')" "order:3 order:3 "
# Round 4: the server gives the two up when a pull finds their last lease expired, publishing an
# advisory each to ORDERS_DLQ (the messages themselves stay in the stream, unacknowledged). The
# pull is opened first and kept open: only once both advisories are in (the give-up happened) are
# orders 5 and 6 published, and the pull gets order 5. Order 6 is never delivered.
J fetch ORDERS worker 1 leave 60 > "$T/round4.txt" &
round4=$!
dlq_count() {
  dlq=$(J req '$JS.API.STREAM.INFO.ORDERS_DLQ' | "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["state"]["messages"])')
  [ "$dlq" -ge 2 ]
}
wait_for -i 0.2 30 "the max-deliveries advisories" dlq_count || true
expect_eq "max-deliveries advisories" "$dlq" 2
J pub orders.created order 2
wait "$round4" || true
expect_eq "round 4" "$(tr '\n' ' ' < "$T/round4.txt")" "order:1 "
J req '$JS.API.CONSUMER.INFO.ORDERS.worker' > "$T/worker.json"

cat > "$T/qrel.yml" <<YML
sources:
$(nats_source events "http://127.0.0.1:$NM/")
    streams:
      - name: ORDERS
        dead_letter_stream: ORDERS_DLQ
      - name: EVENTS
YML
"$QREL" scrape --config.file="$T/qrel.yml" --log.level=debug > "$T/m.txt" 2> "$T/scrape.log"
# EVENTS' consumer backoff gives up after 5 deliveries and no stream captures its advisories (no
# dead_letter_stream): qrel check calls it critical; ORDERS' are captured in ORDERS_DLQ.
rc=0
"$QREL" check --config.file="$T/qrel.yml" > "$T/check.txt" 2>&1 || rc=$?
expect_eq "qrel check: a max_deliver nobody captures is critical (exit 2)" "$rc" 2
expect_eq "delivery_limit_drops: EVENTS only" "$(grep '\[delivery_limit_drops\]$' "$T/check.txt" | cut -d: -f1)" \
  "CRITICAL events EVENTS"
expect_cmd "dead_letters_expire_unread: ORDERS_DLQ keeps 1 day against ORDERS' 7" grep -qF \
  'WARNING events ORDERS: dead-letter queue ORDERS_DLQ keeps messages 24h, no longer than the queue keeps them (168h): a message dead-lettered late in its life expires there before anyone reads it, lost with the error that killed it; keep dead letters longer than the queue keeps messages plus its retry horizon, by the time you need to read them [dead_letters_expire_unread]' \
  "$T/check.txt"
expect_cmd "it names the advisory to capture" grep -qF \
  'capture the consumers'"'"' MAX_DELIVERIES advisories ($JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>) in a stream and name it dead_letter_stream, or raise max_deliver [delivery_limit_drops]' \
  "$T/check.txt"
age_max=$(( ($(now_ms) - t_first) / 1000 + 1 ))
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="events"' 'kind="nats"'
w='queue="ORDERS",group="worker"'
# Order 6 never delivered; order 5 held; the two given up still count as redelivered.
expect_metric "$T/m.txt" 1 qrel_queue_messages "$w" 'state="ready"'
expect_metric "$T/m.txt" 1 qrel_queue_messages "$w" 'state="in_flight"'
expect_metric "$T/m.txt" 2 qrel_messages_redelivered "$w"
info() { "$QREL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$T/worker.json" "$1"; }
expect_eq "the same as CONSUMER.INFO says (num_pending num_ack_pending num_redelivered)" \
  "$(info num_pending) $(info num_ack_pending) $(info num_redelivered)" "1 1 2"
expect_metric "$T/m.txt" 1 qrel_lease_timeout_seconds "$w"
expect_metric "$T/m.txt" 3 qrel_max_deliveries "$w"
expect_metric "$T/m.txt" 3 qrel_retry_horizon_seconds "$w"
expect_metric "$T/m.txt" 90 qrel_dedup_window_seconds 'queue="ORDERS"'
# Retention: the streams' max_age as STREAM.INFO gives it (ns -> s); EVENTS has none and no
# dead-letter stream, so no series.
max_age() { J req "\$JS.API.STREAM.INFO.$1" | "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["config"]["max_age"] // 10**9)'; }
expect_metric "$T/m.txt" "$(max_age ORDERS)" qrel_queue_retention_seconds 'queue="ORDERS"'
expect_metric "$T/m.txt" "$(max_age ORDERS_DLQ)" qrel_dead_letter_retention_seconds 'queue="ORDERS",dead_letter_queue="ORDERS_DLQ"'
# Two acknowledged messages are gone (work queue): the oldest left was published first, and given
# up only after three leases of 1 s had run out one after the other.
expect_between "oldest message age of the work queue, s" \
  "$(mval "$T/m.txt" qrel_queue_oldest_message_age_seconds 'queue="ORDERS"')" 3 "$age_max"
expect_metric "$T/m.txt" 2 qrel_dead_letter_messages 'queue="ORDERS",dead_letter_queue="ORDERS_DLQ"'
# The advisories are published when a pull finds the last lease expired, after round 3's pulls
# began: their age is the time since then (not since the messages were published, t_first, at
# least 2 s earlier), however long the steps in between took on a loaded machine.
expect_between "dead-letter oldest age, s" \
  "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="ORDERS",dead_letter_queue="ORDERS_DLQ"')" \
  0 "$(( ($(now_ms) - t_round3) / 1000 + 1 ))"
expect_absent "$T/m.txt" qrel_queue_messages 'queue="ORDERS_DLQ"'

b='queue="EVENTS",group="backoff"'
expect_metric "$T/m.txt" 2 qrel_queue_messages "$b" 'state="ready"'
expect_metric "$T/m.txt" 0 qrel_queue_messages "$b" 'state="in_flight"'
expect_metric "$T/m.txt" 1 qrel_lease_timeout_seconds "$b"
expect_metric "$T/m.txt" 5 qrel_max_deliveries "$b"
expect_metric "$T/m.txt" 18 qrel_retry_horizon_seconds "$b"  # 1 + 2 + 5 + 5 + 5
expect_metric "$T/m.txt" 120 qrel_dedup_window_seconds 'queue="EVENTS"'  # the server's default
expect_absent "$T/m.txt" qrel_queue_oldest_message_age_seconds 'queue="EVENTS"'  # limits stream
f='queue="EVENTS",group="fire"'
expect_metric "$T/m.txt" 2 qrel_queue_messages "$f" 'state="ready"'
expect_absent "$T/m.txt" qrel_lease_timeout_seconds "$f"
expect_absent "$T/m.txt" qrel_max_deliveries "$f"
expect_eq "consumer series of EVENTS (the ephemeral one left out)" \
  "$(grep -c '^qrel_messages_redelivered{.*queue="EVENTS"' "$T/m.txt")" 2
expect_cmd "debug log counts one request" grep -q 'msg="nats collection done".*streams=2 consumers=3 requests=1' "$T/scrape.log"
# Consumers: worker (pull) delivered in round 4, within the 5-minute window; backoff and fire
# never delivered and have no pull waiting, so no client: qrel check calls their backlog.
expect_metric "$T/m.txt" 1 qrel_queue_consumers "$w"
expect_cmd "CONSUMER.INFO of worker: a delivery stamped, no pull waiting" "$QREL_PYTHON" -c \
  'import json,sys; i=json.load(open(sys.argv[1])); sys.exit(not (i["delivered"]["last_active"] and i["num_waiting"] == 0))' "$T/worker.json"
expect_metric "$T/m.txt" 0 qrel_queue_consumers "$b"
expect_metric "$T/m.txt" 0 qrel_queue_consumers "$f"
expect_eq "backlog_without_consumer: EVENTS' backoff and fire, not ORDERS' worker" \
  "$(grep '\[backlog_without_consumer\]$' "$T/check.txt" | cut -d: -f1-2 | tr '\n' '|')" \
  "WARNING events EVENTS (group backoff): 2 messages ready and no consumer|WARNING events EVENTS (group fire): 2 messages ready and no consumer|"
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"
# The same monitoring endpoint read through the fault proxy: its HTTP reply (headers, chunks, JSON)
# cut into 1- and 7-byte pieces must give the same series.
expect_same_via_proxy "$T/qrel.yml" events "127.0.0.1:$NM"

# consumers: narrows; every stream when streams is left out.
cat > "$T/all.yml" <<YML
sources:
$(nats_source all "http://127.0.0.1:$NM")
$(nats_source narrow "http://127.0.0.1:$NM")
    streams: [{name: EVENTS, consumers: [fire]}]
$(nats_source excl "http://127.0.0.1:$NM")
    exclude: ["*_DLQ"]
    exclude_consumers: ["fire"]
YML
"$QREL" scrape --config.file="$T/all.yml" > "$T/all.txt"
expect_eq "streams of source all" "$(grep -o '^qrel_dedup_window_seconds{source="all"[^}]*' "$T/all.txt" | grep -o 'queue="[^"]*"' | sort | tr '\n' ' ')" \
  'queue="EVENTS" queue="ORDERS" queue="ORDERS_DLQ" '
expect_eq "consumers of source narrow" "$(grep -c '^qrel_messages_redelivered{source="narrow"' "$T/all.txt")" 1
expect_metric "$T/all.txt" 2 qrel_queue_messages 'source="narrow"' 'group="fire"' 'state="ready"'
# exclude and exclude_consumers: ORDERS_DLQ and consumer fire are left out and counted, nothing else.
expect_eq "streams of source excl" "$(grep -o '^qrel_dedup_window_seconds{source="excl"[^}]*' "$T/all.txt" | grep -o 'queue="[^"]*"' | sort | tr '\n' ' ')" \
  'queue="EVENTS" queue="ORDERS" '
expect_eq "consumers of excl: those of all on EVENTS and ORDERS but fire" \
  "$(grep '^qrel_messages_redelivered{source="excl"' "$T/all.txt" | grep -o 'queue=.*group="[^"]*"' | sort | tr '\n' ' ')" \
  "$(grep '^qrel_messages_redelivered{source="all"' "$T/all.txt" | grep -v -e 'group="fire"' -e 'queue="ORDERS_DLQ"' | grep -o 'queue=.*group="[^"]*"' | sort | tr '\n' ' ')"
expect_metric "$T/all.txt" 1 qrel_excluded_objects 'source="excl"' 'object="stream"'
expect_metric "$T/all.txt" 1 qrel_excluded_objects 'source="excl"' 'object="consumer"'
expect_absent "$T/all.txt" qrel_excluded_objects 'source="all"'

# Accounts: streams outside \$G are labelled ACCOUNT/STREAM. nats-server 2.9 pages /jsz over
# accounts in an order that changes between requests, so beyond one page (page_size 1 here) the
# collector asks for the other accounts by name: each of A, B, C exactly once, in 1 + 1 + 3
# requests (the first page, /accountz, the two accounts not on it and \$G, which has no streams
# here; the system account is not asked).
cat > "$T/accounts.conf" <<CONF
accounts {
  A: { jetstream: enabled, users: [{user: a, password: a}] }
  B: { jetstream: enabled, users: [{user: b, password: b}] }
  C: { jetstream: enabled, users: [{user: c, password: c}] }
}
CONF
start_nats AP AM -c "$T/accounts.conf"
NATS_USER=a NATS_PASS=a $JSCTL "$AP" req '$JS.API.STREAM.CREATE.JOBS' '{"name":"JOBS","subjects":["jobs"]}' >/dev/null
NATS_USER=b NATS_PASS=b $JSCTL "$AP" req '$JS.API.STREAM.CREATE.JOBS' '{"name":"JOBS","subjects":["jobs"],"duplicate_window":30000000000}' >/dev/null
NATS_USER=c NATS_PASS=c $JSCTL "$AP" req '$JS.API.STREAM.CREATE.MAIL' '{"name":"MAIL","subjects":["mail"],"duplicate_window":10000000000}' >/dev/null
cat > "$T/acc.yml" <<YML
sources:
$(nats_source paged "http://127.0.0.1:$AM")
    page_size: 1
$(nats_source one "http://127.0.0.1:$AM")
    account: B
YML
"$QREL" scrape --config.file="$T/acc.yml" --log.level=debug > "$T/acc.txt" 2> "$T/acc.log"
expect_metric "$T/acc.txt" 120 qrel_dedup_window_seconds 'source="paged"' 'queue="A/JOBS"'
expect_metric "$T/acc.txt" 30 qrel_dedup_window_seconds 'source="paged"' 'queue="B/JOBS"'
expect_metric "$T/acc.txt" 10 qrel_dedup_window_seconds 'source="paged"' 'queue="C/MAIL"'
expect_eq "series of source paged" "$(grep -c '^qrel_dedup_window_seconds{source="paged"' "$T/acc.txt")" 3
expect_cmd "requests of source paged" grep -q 'source=paged streams=3 consumers=0 requests=5' "$T/acc.log"
expect_metric "$T/acc.txt" 30 qrel_dedup_window_seconds 'source="one"' 'queue="JOBS"'
expect_eq "series of source one" "$(grep -c '^qrel_dedup_window_seconds{source="one"' "$T/acc.txt")" 1
expect_cmd "requests of source one" grep -q 'source=one streams=1 consumers=0 requests=1' "$T/acc.log"

# A proxy with basic auth in front of the monitoring port: the stub records what was sent.
secret='s3cr3t-nats-proxy-5521'
printf '%s\n' "$secret" > "$T/proxy.pass"
chmod 600 "$T/proxy.pass"
curl -fsS "http://127.0.0.1:$NM/jsz?streams=true&consumers=true&config=true" > "$T/jsz.json"
start_http_stub PROXY ok --body "$T/jsz.json" --log "$T/proxy.log"
http_fault_stubs 'internal error' unauthorized forbidden '{"account_details": [ {"name": ' \
  '{"now":"2026-01-01T00:00:00Z","account_details":[{"name":"$G","stream_detail":[{"name":"S","config":{},"state":{"messages":"many"}}]}]}'
cat > "$T/faults.yml" <<YML
sources:
$(nats_source healthy "http://127.0.0.1:$NM")
$(nats_source proxied "http://127.0.0.1:$PROXY")
    username: qrel
    password_file: $T/proxy.pass
YML
http_fault_sources '    kind: nats\n    url: http://127.0.0.1:%s\n' >> "$T/faults.yml"
start_exporter "$T/faults.yml"
expect_scrape_ms "scrape time with a hanging peer (timeout 2 s), ms" "$T/f.txt" 1900 5000
expect_metric "$T/f.txt" 1 qrel_collector_up 'source="healthy"'
expect_metric "$T/f.txt" 1 qrel_queue_messages 'source="healthy"' 'group="worker"' 'state="ready"'
expect_metric "$T/f.txt" 1 qrel_collector_up 'source="proxied"'
expect_metric "$T/f.txt" 1 qrel_queue_messages 'source="proxied"' 'group="worker"' 'state="ready"'
auth=$("$QREL_PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["headers"].get("Authorization",""))' "$T/proxy.log")
expect_eq "basic auth sent to the proxy" "$auth" "Basic $(printf 'qrel:%s' "$secret" | base64)"
expect_http_faults "$T/f.txt" nats
expect_cmd "the type error names the JSON path" \
  grep -q 'GET /jsz: \$.account_details\[0\].stream_detail\[0\].state.messages: want a number, got a string' "$T/exporter.log"
expect_cmd "the cap is named" grep -q 'larger than 1000000 bytes' "$T/exporter.log"
stop_exporter
if grep -rqF "$secret" "$T"/*.log "$T/f.txt"; then not_ok "the proxy password appears in a log or the metrics"; else ok "the proxy password appears nowhere"; fi

# A push consumer counts one consumer while a subscriber listens on its deliver subject
# (push_bound), none once it left; the figure follows CONSUMER.INFO's.
req '$JS.API.CONSUMER.DURABLE.CREATE.EVENTS.pusher' \
  '{"stream_name":"EVENTS","config":{"durable_name":"pusher","ack_policy":"none","deliver_subject":"deliver.pusher"}}'
$JSCTL "$NP" sub deliver.pusher "$T/sub.ready" > /dev/null 2>&1 & # the python itself, to kill
sub=$!
PIDS+=("$sub")
wait_for 10 "the subscriber" test -f "$T/sub.ready" || true
pusher() { # pusher WANT_CONSUMERS WANT_BOUND: scrape until qrel and CONSUMER.INFO say so
  "$QREL" scrape --config.file="$T/qrel.yml" > "$T/p.txt" 2>/dev/null || true
  bound=$(J req '$JS.API.CONSUMER.INFO.EVENTS.pusher' | "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("push_bound", False))')
  [ "$(mval "$T/p.txt" qrel_queue_consumers 'queue="EVENTS",group="pusher"')" = "$1" ] && [ "$bound" = "$2" ]
}
expect_cmd "pusher bound: 1 consumer, as CONSUMER.INFO's push_bound" wait_for -i 0.1 20 "pusher bound" pusher 1 True
kill "$sub"
expect_cmd "pusher left: 0 consumers, push_bound gone" wait_for -i 0.1 20 "pusher unbound" pusher 0 False

finish
