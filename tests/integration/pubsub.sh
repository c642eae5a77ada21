#!/usr/bin/env bash
# The pubsub collector. Against Google's Pub/Sub emulator (skipped, loudly, where it is not
# installed): subscriptions with ack deadlines, dead-letter and retry policies give exactly the
# expected lease, max deliveries, retry horizon and qrel_queue_info series, listed or by name.
# Against stubs of the tests' own: Cloud Monitoring's timeSeries.list (backlog, oldest unacked
# age, expired ack deadlines counted once per period, the dead-letter topic's backlog, the data's
# age); a token endpoint that verifies the RS256 signature of the service-account grant with the
# public half of a key the test generates (one exchange while the token lives, a new one after);
# a token file re-read on every scrape. Faults give up 0 with their reason while a healthy source
# reports, and no key or token appears anywhere.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

PEERS=$QREL_SOURCE_DIR/tests/peers/pubsub

# ---- the emulator ---------------------------------------------------------------------------
if pubsub_emulator_installed; then
  shared_pubsub_emulator EP
  API=http://127.0.0.1:$EP/v1/projects/shop
  put() { curl -fsS -X PUT -H 'Content-Type: application/json' -d "$2" "$API/$1" >/dev/null; }
  put topics/orders '{}'
  put topics/orders-dlq '{}'
  put topics/events '{}'
  put subscriptions/orders-mailer '{"topic":"projects/shop/topics/orders","ackDeadlineSeconds":30,
    "deadLetterPolicy":{"deadLetterTopic":"projects/shop/topics/orders-dlq","maxDeliveryAttempts":5},
    "retryPolicy":{"minimumBackoff":"10s","maximumBackoff":"60s"},"enableExactlyOnceDelivery":true}'
  put subscriptions/orders-fast '{"topic":"projects/shop/topics/orders","ackDeadlineSeconds":20,
    "deadLetterPolicy":{"deadLetterTopic":"projects/shop/topics/orders-dlq","maxDeliveryAttempts":7}}'
  put subscriptions/orders-dlq-park '{"topic":"projects/shop/topics/orders-dlq","ackDeadlineSeconds":60}'
  put subscriptions/events-audit '{"topic":"projects/shop/topics/events","enableMessageOrdering":true,
    "messageRetentionDuration":"86400s"}'
  cat > "$T/emu.yml" <<YML
sources:
  - name: emu
    kind: pubsub
    project: shop
    endpoint: http://127.0.0.1:$EP
  - name: listed
    kind: pubsub
    project: shop
    endpoint: http://127.0.0.1:$EP/
    subscriptions: [orders-mailer, no-such-subscription, projects/shop/subscriptions/events-audit]
YML
  "$QREL" scrape --config.file="$T/emu.yml" --log.level=debug > "$T/emu.txt" 2> "$T/emu.log"
  expect_metric "$T/emu.txt" 1 qrel_collector_up 'source="emu"' 'kind="pubsub"'
  m='source="emu",kind="pubsub",queue="orders-mailer"'
  expect_metric "$T/emu.txt" 30 qrel_lease_timeout_seconds "$m"
  expect_metric "$T/emu.txt" 5 qrel_max_deliveries "$m"
  # 5 attempts of 30 s, and between them backoffs of 10, 20, 40 and (capped) 60 s
  expect_metric "$T/emu.txt" 280 qrel_retry_horizon_seconds "$m"
  expect_metric "$T/emu.txt" 1 qrel_queue_info "$m" 'dead_letter_queue="orders-dlq"' 'exactly_once="true"' 'ordered="false"'
  f='source="emu",kind="pubsub",queue="orders-fast"'
  expect_metric "$T/emu.txt" 140 qrel_retry_horizon_seconds "$f"  # 7 × 20 s, no retry policy
  a='source="emu",kind="pubsub",queue="events-audit"'
  expect_metric "$T/emu.txt" 10 qrel_lease_timeout_seconds "$a"   # the API's default
  expect_absent "$T/emu.txt" qrel_max_deliveries "$a"
  expect_metric "$T/emu.txt" 86400 qrel_retry_horizon_seconds "$a" # retried until it expires
  expect_metric "$T/emu.txt" 1 qrel_queue_info "$a" 'dead_letter_queue=""' 'exactly_once="false"' 'ordered="true"'
  expect_eq "subscriptions of source emu" "$(grep -c '^qrel_queue_info{source="emu"' "$T/emu.txt")" 4
  expect_metric "$T/emu.txt" 1 qrel_collector_up 'source="listed"'
  expect_eq "subscriptions of source listed" "$(grep -c '^qrel_queue_info{source="listed"' "$T/emu.txt")" 2
  expect_metric "$T/emu.txt" 280 qrel_retry_horizon_seconds 'source="listed",kind="pubsub",queue="orders-mailer"'
  # one per name (3), the two topics and orders-dlq (3), orders-dlq's list and its subscription (2)
  expect_cmd "requests of source listed" grep -q 'source=listed subscriptions=2 requests=8' "$T/emu.log"
  expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/emu.txt'"
  # The emulator's REST replies cut into 1- and 7-byte pieces by the fault proxy: the same series.
  expect_same_via_proxy "$T/emu.yml" emu "127.0.0.1:$EP"
  # exclude: two scratch subscriptions made now (after the counts above), left out of what
  # subscriptions.list finds and nothing else, against a read of every subscription.
  put subscriptions/tmp-reply-1 '{"topic":"projects/shop/topics/events"}'
  put subscriptions/tmp-reply-2 '{"topic":"projects/shop/topics/events"}'
  cat > "$T/excl.yml" <<YML
sources:
  - name: every
    kind: pubsub
    project: shop
    endpoint: http://127.0.0.1:$EP
  - name: excl
    kind: pubsub
    project: shop
    endpoint: http://127.0.0.1:$EP
    exclude: ["tmp-*"]
YML
  "$QREL" scrape --config.file="$T/excl.yml" > "$T/excl.txt"
  subs() { # subs SOURCE: its subscriptions, sorted, on one line
    grep "^qrel_queue_info{source=\"$1\"" "$T/excl.txt" | sed -E 's/.*[{,]queue="([^"]*)".*/\1/' | sort | tr '\n' ' '
  }
  expect_eq "the read without exclude has both scratch subscriptions" \
    "$(subs every | grep -o 'tmp-reply-[12] ' | wc -l)" 2
  expect_eq "exclude leaves out tmp-reply-1 and -2 and nothing else" "$(subs excl)" \
    "$(subs every | tr ' ' '\n' | grep -v '^tmp-reply-[12]$' | tr '\n' ' ')"
  expect_metric "$T/excl.txt" 2 qrel_excluded_objects 'source="excl"' 'object="subscription"'
  expect_absent "$T/excl.txt" qrel_excluded_objects 'source="every"'
  expect_absent "$T/excl.txt" qrel_lease_timeout_seconds 'source="excl"' 'queue="tmp-reply-1"'
  # Retention, in a project of its own (shop-keep): the subscriptions' and topics' own
  # messageRetentionDuration as the emulator returns them. refunds' topic keeps 3 days, more than
  # refunds-worker's 1 hour; its dead-letter topic's subscriptions keep 7 days (the most the
  # emulator takes: 8 is "message_retention_duration out of bounds") and 10 minutes;
  # payments-dlq's only subscription keeps 1 day against payments-worker's default 7; invoices-dlq
  # has no subscription and no retention.
  KAPI=http://127.0.0.1:$EP/v1/projects/shop-keep
  kput() { curl -fsS -X PUT -H 'Content-Type: application/json' -d "$2" "$KAPI/$1" >/dev/null; }
  kput topics/refunds '{"messageRetentionDuration":"259200s"}'
  for t in refunds-dlq payments payments-dlq invoices invoices-dlq; do kput "topics/$t" '{}'; done
  dlp() { printf '"deadLetterPolicy":{"deadLetterTopic":"projects/shop-keep/topics/%s","maxDeliveryAttempts":5}' "$1"; }
  kput subscriptions/refunds-worker "{\"topic\":\"projects/shop-keep/topics/refunds\",\"messageRetentionDuration\":\"3600s\",$(dlp refunds-dlq)}"
  kput subscriptions/refunds-dlq-keep '{"topic":"projects/shop-keep/topics/refunds-dlq","messageRetentionDuration":"604800s"}'
  kput subscriptions/refunds-dlq-peek '{"topic":"projects/shop-keep/topics/refunds-dlq","messageRetentionDuration":"600s"}'
  kput subscriptions/payments-worker "{\"topic\":\"projects/shop-keep/topics/payments\",$(dlp payments-dlq)}"
  kput subscriptions/payments-dlq-park '{"topic":"projects/shop-keep/topics/payments-dlq","messageRetentionDuration":"86400s"}'
  kput subscriptions/invoices-mailer "{\"topic\":\"projects/shop-keep/topics/invoices\",$(dlp invoices-dlq)}"
  keep() { # keep RESOURCE: the emulator's own messageRetentionDuration of it, in seconds ("" if none)
    curl -fsS "$KAPI/$1" | "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("messageRetentionDuration","").rstrip("s"))'
  }
  expect_eq "the emulator's retentions (refunds, refunds-worker, its dead-letter subscriptions, payments-worker, payments-dlq-park, invoices-dlq)" \
    "$(for r in topics/refunds subscriptions/refunds-worker subscriptions/refunds-dlq-keep subscriptions/refunds-dlq-peek \
      subscriptions/payments-worker subscriptions/payments-dlq-park topics/invoices-dlq; do printf '%s,' "$(keep "$r")"; done)" \
    "259200,3600,604800,600,604800,86400,,"
  cat > "$T/keep.yml" <<YML
sources:
  - name: keep
    kind: pubsub
    project: shop-keep
    endpoint: http://127.0.0.1:$EP
  - name: keep-listed
    kind: pubsub
    project: shop-keep
    endpoint: http://127.0.0.1:$EP
    subscriptions: [refunds-worker]
YML
  "$QREL" scrape --config.file="$T/keep.yml" --log.level=debug > "$T/keep.txt" 2> "$T/keep.log"
  k() { printf 'source="%s",kind="pubsub",queue="%s"' "$1" "$2"; }
  # The topic's 3 days over the subscription's hour: Pub/Sub keeps it for the longer.
  expect_metric "$T/keep.txt" 259200 qrel_queue_retention_seconds "$(k keep refunds-worker)"
  expect_metric "$T/keep.txt" 600 qrel_queue_retention_seconds "$(k keep refunds-dlq-peek)"
  expect_metric "$T/keep.txt" 604800 qrel_queue_retention_seconds "$(k keep payments-worker)"
  expect_metric "$T/keep.txt" 604800 qrel_dead_letter_retention_seconds "$(k keep refunds-worker)" 'dead_letter_queue="refunds-dlq"'
  expect_metric "$T/keep.txt" 86400 qrel_dead_letter_retention_seconds "$(k keep payments-worker)" 'dead_letter_queue="payments-dlq"'
  expect_metric "$T/keep.txt" 0 qrel_dead_letter_retention_seconds "$(k keep invoices-mailer)" 'dead_letter_queue="invoices-dlq"'
  expect_absent "$T/keep.txt" qrel_dead_letter_retention_seconds "$(k keep refunds-dlq-keep)"
  expect_eq "dead-letter retention series (one per subscription with a dead-letter topic)" \
    "$(grep -c '^qrel_dead_letter_retention_seconds{source="keep"' "$T/keep.txt")" 3
  # Listed alone, refunds-worker's dead-letter subscriptions are read by name: the same figures.
  expect_metric "$T/keep.txt" 259200 qrel_queue_retention_seconds "$(k keep-listed refunds-worker)"
  expect_metric "$T/keep.txt" 604800 qrel_dead_letter_retention_seconds "$(k keep-listed refunds-worker)" 'dead_letter_queue="refunds-dlq"'
  # its subscription, its topic and the dead-letter topic, that topic's list, its two subscriptions
  expect_cmd "requests of source keep-listed" grep -q 'source=keep-listed subscriptions=1 requests=6' "$T/keep.log"
  # qrel check: payments-dlq keeps 1 day against payments-worker's 7 days plus its horizon; invoices-dlq
  # keeps nothing; refunds-dlq's 7 days outlast the 3 days refunds-worker keeps a message.
  rc=0
  "$QREL" check --config.file="$T/keep.yml" > "$T/keep-check.txt" 2>&1 || rc=$?
  expect_eq "qrel check on shop-keep: warnings only (exit 1)" "$rc" 1
  expect_eq "dead_letters_expire_unread: invoices-mailer and payments-worker of source keep" \
    "$(sed -nE 's/^WARNING keep ([a-z-]+): .*\[dead_letters_expire_unread\]$/\1/p' "$T/keep-check.txt" | sort | tr '\n' ' ')" \
    "invoices-mailer payments-worker "
  expect_cmd "the finding on payments-worker names both retentions and Pub/Sub's fix" grep -qF \
    "WARNING keep payments-worker: dead-letter queue payments-dlq keeps messages 24h, no longer than the queue keeps them (168h) plus its retry horizon (50s): a message dead-lettered late in its life expires there before anyone reads it, lost with the error that killed it; Pub/Sub keeps a dead letter only in the dead-letter topic's subscriptions" \
    "$T/keep-check.txt"
  # That 0 is Pub/Sub's own behaviour: what is published to a topic without a subscription is
  # dropped, so a subscription made afterwards pulls nothing of it.
  curl -fsS -X POST -H 'Content-Type: application/json' -d '{"messages":[{"data":"aW52b2ljZQ=="}]}' \
    "$KAPI/topics/invoices-dlq:publish" >/dev/null
  kput subscriptions/invoices-dlq-late '{"topic":"projects/shop-keep/topics/invoices-dlq"}'
  expect_eq "messages a later subscription of invoices-dlq pulls" "$(curl -fsS -X POST -H 'Content-Type: application/json' \
    -d '{"maxMessages":10,"returnImmediately":true}' "$KAPI/subscriptions/invoices-dlq-late:pull" |
    "$QREL_PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin).get("receivedMessages",[])))')" 0
else
  echo "SKIPPED: the Pub/Sub emulator part (no $PUBSUB_EMULATOR or no java; CI must have google-cloud-cli-pubsub-emulator)" >&2
fi

# exclude refused at load, at file:line:col: not a list; beside subscriptions (nothing listed).
refused() { # refused WHAT WANT KEY_LINES
  printf 'sources:\n  - name: bad\n    kind: pubsub\n    project: shop\n%s' "$3" > "$T/bad.yml"
  expect_cmd "$1" bash -c "'$EXPORTER' --config.file='$T/bad.yml' --config.check 2>&1 | grep -qF -- '$2'"
}
refused "an exclude that is not a list is refused at its line and column" \
  'bad.yml:5:14: exclude: want a list of strings, got a mapping' $'    exclude: {tmp: 1}\n'
refused "an exclude beside subscriptions is refused, saying why" \
  'bad.yml:6:14: exclude: only without subscriptions (it leaves out subscriptions subscriptions.list finds)' \
  $'    subscriptions: [orders-mailer]\n    exclude: ["tmp-*"]\n'

# ---- Cloud Monitoring (stub) and a Pub/Sub API stand-in -------------------------------------
now=$(date +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
sub_json() { # sub_json ID EXTRA_JSON
  printf '{"name":"projects/shop/subscriptions/%s","topic":"projects/shop/topics/orders","ackDeadlineSeconds":30%s}' "$1" "$2"
}
sub_json orders-mailer ',"deadLetterPolicy":{"deadLetterTopic":"projects/shop/topics/orders-dlq","maxDeliveryAttempts":5}' > "$T/sub.json"
printf '{"subscriptions":["projects/shop/subscriptions/orders-dlq-park"]}' > "$T/dlq-subs.json"
point() { printf '{"interval":{"startTime":"%s","endTime":"%s"},"value":{"%s":%s}}' "$(iso $(($1 - 60)))" "$(iso "$1")" "$2" "$3"; }
series() { # series METRIC SUBSCRIPTION POINTS...
  local m=$1 s=$2; shift 2
  printf '{"metric":{"type":"pubsub.googleapis.com/subscription/%s"},"resource":{"type":"pubsub_subscription","labels":{"project_id":"shop","subscription_id":"%s"}},"metricKind":"GAUGE","points":[%s]}' \
    "$m" "$s" "$(IFS=,; echo "$*")"
}
timeseries() { # timeseries EXTRA_EXPIRY_POINT
  local extra=${1:-}
  printf '{"timeSeries":[%s,%s,%s,%s,%s,%s]}' \
    "$(series num_undelivered_messages orders-mailer "$(point $((now - 90)) int64Value '"42"')" "$(point $((now - 150)) int64Value '"40"')")" \
    "$(series oldest_unacked_message_age orders-mailer "$(point $((now - 90)) int64Value '"125"')")" \
    "$(series expired_ack_deadlines_count orders-mailer ${extra:+"$extra"} "$(point $((now - 120)) int64Value '"3"')" "$(point $((now - 180)) int64Value '"2"')")" \
    "$(series num_undelivered_messages orders-dlq-park "$(point $((now - 100)) int64Value '"7"')")" \
    "$(series oldest_unacked_message_age orders-dlq-park "$(point $((now - 100)) doubleValue 900.5)")" \
    "$(series ack_message_count orders-mailer "$(point $((now - 90)) int64Value '"1"')")"
}
timeseries > "$T/timeseries.json"
# The topic orders and the dead-letter subscription orders-dlq-park are out of the credentials'
# reach (403, as another project's would be): their retention series are left out, nothing else.
cat > "$T/routes.json" <<JSON
{"GET /v1/projects/shop/subscriptions/orders-mailer": {"body_file": "$T/sub.json"},
 "GET /v1/projects/shop/topics/orders": {"status": 403, "body": "{\"error\":{\"code\":403,\"status\":\"PERMISSION_DENIED\"}}"},
 "GET /v1/projects/shop/topics/orders-dlq": {"body": "{\"name\":\"projects/shop/topics/orders-dlq\"}"},
 "GET /v1/projects/shop/subscriptions/orders-dlq-park": {"status": 403, "body": "{}"},
 "GET /v1/projects/shop/topics/orders-dlq/subscriptions": {"body_file": "$T/dlq-subs.json"},
 "GET /v3/projects/shop/timeSeries": {"body_file": "$T/timeseries.json"}}
JSON
start_http_stub GAPI routes --routes "$T/routes.json" --log "$T/gapi.jsonl"

# A service-account key of the test's own; the token endpoint knows only its public half.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/sa.pem" 2>/dev/null
openssl pkey -in "$T/sa.pem" -pubout -out "$T/sa.pub.pem"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/other.pem" 2>/dev/null
email=qrel-monitor@shop.iam.gserviceaccount.com
token='ya29.test-access-token-7f3a9c'
start_token_stub() { # start_token_stub VAR EXPIRES_IN LOG
  local pf=$T/token-$RANDOM.port
  "$QREL_PYTHON" "$PEERS/token_stub.py" --port-file "$pf" --public-key "$T/sa.pub.pem" --email "$email" \
    --token "$token" --expires-in "$2" --log "$3" > "$pf.out" 2>&1 &
  PIDS+=("$!")
  wait_for -i 0.025 30 "the token stub to write its port" port_file "$pf" "$1" || cat "$pf.out" >&2
}
start_token_stub TOK 3600 "$T/token.jsonl"
start_token_stub TOKSHORT 61 "$T/token-short.jsonl"
key_json() { # key_json PEM TOKEN_PORT > FILE
  "$QREL_PYTHON" -c 'import json,sys; print(json.dumps({"type":"service_account","project_id":"shop",
    "private_key_id":"k1","private_key":open(sys.argv[1]).read(),"client_email":sys.argv[3],
    "token_uri":"http://127.0.0.1:%s/token" % sys.argv[2]}))' "$1" "$2" "$email"
}
key_json "$T/sa.pem" "$TOK" > "$T/sa.json"
key_json "$T/sa.pem" "$TOKSHORT" > "$T/sa-short.json"
key_json "$T/other.pem" "$TOK" > "$T/other.json"
printf 'file-token-1\n' > "$T/token.txt"
chmod 600 "$T"/*.json "$T/token.txt" "$T"/*.pem

G=http://127.0.0.1:$GAPI
cat > "$T/auth.yml" <<YML
sources:
  - name: sa
    kind: pubsub
    project: shop
    subscriptions: [orders-mailer]
    endpoint: $G
    monitoring: true
    monitoring_endpoint: $G
    credentials_file: $T/sa.json
  - name: short
    kind: pubsub
    project: shop
    subscriptions: [orders-mailer]
    endpoint: $G
    credentials_file: $T/sa-short.json
  - name: wrongkey
    kind: pubsub
    project: shop
    subscriptions: [orders-mailer]
    endpoint: $G
    credentials_file: $T/other.json
  - name: tokenfile
    kind: pubsub
    project: shop
    subscriptions: [orders-mailer]
    endpoint: $G
    token_file: $T/token.txt
YML
start_exporter "$T/auth.yml"
scrape "$T/a1.txt"
m='source="sa",kind="pubsub",queue="orders-mailer"'
expect_metric "$T/a1.txt" 1 qrel_collector_up 'source="sa"'
expect_metric "$T/a1.txt" 42 qrel_queue_messages "$m" 'state="ready"'  # the newest point
expect_metric "$T/a1.txt" 125 qrel_queue_oldest_message_age_seconds "$m"
expect_metric "$T/a1.txt" 5 qrel_lease_expiries_total "$m"
d='queue="orders-mailer",dead_letter_queue="orders-dlq"'
expect_metric "$T/a1.txt" 7 qrel_dead_letter_messages "source=\"sa\",kind=\"pubsub\",$d"
expect_metric "$T/a1.txt" 900.5 qrel_dead_letter_oldest_age_seconds "source=\"sa\",kind=\"pubsub\",$d"
expect_metric "$T/a1.txt" 30 qrel_lease_timeout_seconds "$m"
expect_absent "$T/a1.txt" qrel_queue_retention_seconds "$m"
expect_absent "$T/a1.txt" qrel_dead_letter_retention_seconds "source=\"sa\",kind=\"pubsub\",$d"
expect_cmd "a topic out of reach is named in the log" grep -q \
  'source=sa request="GET topic" resource=projects/shop/topics/orders' "$T/exporter.log"
expect_cmd "so is a dead-letter subscription out of reach" grep -q \
  'source=sa request="GET dead-letter subscription" resource=projects/shop/subscriptions/orders-dlq-park' "$T/exporter.log"
# The data's age is that of the stalest series it used: the expiry periods' newest ends 120 s ago.
expect_between "sample age, s" "$(mval "$T/a1.txt" qrel_sample_age_seconds 'source="sa"')" \
  120 $((122 + $(date +%s) - now))
expect_absent "$T/a1.txt" qrel_sample_age_seconds 'source="tokenfile"'
q=$("$QREL_PYTHON" -c 'import json,sys,urllib.parse as u
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r["path"].endswith("/timeSeries"):
        q=dict(u.parse_qsl(r["query"])); print(q["filter"]); print(q["interval.startTime"]); print(q["interval.endTime"]); break' "$T/gapi.jsonl")
expect_eq "timeSeries filter" "$(sed -n 1p <<<"$q")" \
  'metric.type = one_of("pubsub.googleapis.com/subscription/num_undelivered_messages", "pubsub.googleapis.com/subscription/oldest_unacked_message_age", "pubsub.googleapis.com/subscription/expired_ack_deadlines_count") AND resource.type = "pubsub_subscription"'
start_s=$(date -u -d "$(sed -n 2p <<<"$q")" +%s)
end_s=$(date -u -d "$(sed -n 3p <<<"$q")" +%s)
expect_eq "monitoring window (default 10m), s" "$((end_s - start_s))" 600

expect_metric "$T/a1.txt" 1 qrel_collector_up 'source="tokenfile"'
expect_metric "$T/a1.txt" 1 qrel_collector_up 'source="short"'
expect_metric "$T/a1.txt" 0 qrel_collector_up 'source="wrongkey"'
expect_metric "$T/a1.txt" 1 qrel_collector_errors_total 'source="wrongkey"' 'reason="auth"'
expect_cmd "the refused grant is explained" grep -q 'source=wrongkey kind=pubsub reason=auth.*token exchange for qrel-monitor@shop.iam.gserviceaccount.com refused with HTTP 400 (invalid_grant: Invalid JWT Signature.)' "$T/exporter.log"

# A new expiry period counts once; periods already counted do not count again.
timeseries "$(point $((now - 60)) int64Value '"4"')" > "$T/timeseries.json"
printf 'file-token-2\n' > "$T/token.txt"
sleep 1.1   # the short-lived token (61 s - 60 s margin) is due for renewal
scrape "$T/a2.txt"
scrape "$T/a3.txt"
expect_metric "$T/a2.txt" 9 qrel_lease_expiries_total "$m"
expect_metric "$T/a3.txt" 9 qrel_lease_expiries_total "$m"
oks() { grep -c '"ok": true' "$1" || true; }
expect_eq "grants verified by the token endpoint (source sa, 3 scrapes, token cached)" "$(oks "$T/token.jsonl")" 1
# Scrapes 1 and 2 ask; scrape 3 comes within the 1 s back-off after two failures.
expect_eq "grants refused (source wrongkey)" "$(grep -c '"why": "signature does not verify"' "$T/token.jsonl")" 2
# Renewed after its 1 s: a second grant. Scrape 3 renews again only when it comes more than 1 s after
# scrape 2's grant (a loaded machine, 6 engineers' builds beside the test, got 3): at most one grant a
# scrape. That a valid token is reused is source sa's assertion above.
expect_between "grants for the short-lived token (renewed after 1 s, at most once a scrape)" \
  "$(oks "$T/token-short.jsonl")" 2 3
bearers=$("$QREL_PYTHON" -c 'import json,sys
seen=[]
for l in open(sys.argv[1]):
    a=json.loads(l)["headers"].get("Authorization","none")
    if a not in seen: seen.append(a)
print(" ".join(sorted(seen)))' "$T/gapi.jsonl")
expect_eq "Authorization headers the API saw" "$bearers" "Bearer file-token-1 Bearer file-token-2 Bearer $token"
curl -fsS "http://$ADDR/" > "$T/landing.html"
stop_exporter
leak=0
for s in "$token" file-token-1 file-token-2 "$(sed -n 2p "$T/sa.pem")" "$(sed -n 2p "$T/other.pem")"; do
  if grep -qF -- "$s" "$T/exporter.log" "$T"/a?.txt "$T/landing.html"; then leak=1; fi
done
expect_eq "no token or key in the log, the metrics or the landing page" "$leak" 0

# ---- faults -----------------------------------------------------------------------------------
http_fault_stubs '{"error":{"code":500}}' '{"error":{"code":401}}' \
  '{"error":{"code":403,"status":"PERMISSION_DENIED"}}' '{"subscriptions": [{"name": ' \
  '{"subscriptions":[{"name":"projects/shop/subscriptions/x","ackDeadlineSeconds":true}]}'
cat > "$T/faults.yml" <<YML
sources:
  - name: healthy
    kind: pubsub
    project: shop
    subscriptions: [orders-mailer]
    endpoint: $G
YML
http_fault_sources '    kind: pubsub\n    project: shop\n    endpoint: http://127.0.0.1:%s\n' >> "$T/faults.yml"
# The token endpoint itself down: the grant fails with connect.
key_json "$T/sa.pem" "$DOWN" > "$T/sa-down.json"
printf '  - name: tokendown\n    kind: pubsub\n    project: shop\n    endpoint: %s\n    credentials_file: %s\n' \
  "$G" "$T/sa-down.json" >> "$T/faults.yml"
start_exporter "$T/faults.yml"
expect_scrape_ms "scrape time with a hanging peer (timeout 2 s), ms" "$T/f.txt" 1900 5000
expect_metric "$T/f.txt" 1 qrel_collector_up 'source="healthy"'
expect_metric "$T/f.txt" 30 qrel_lease_timeout_seconds 'source="healthy"'
expect_http_faults "$T/f.txt" pubsub tokendown:connect
expect_cmd "the type error names the JSON path" \
  grep -q 'GET subscriptions: \$.subscriptions\[0\].ackDeadlineSeconds: want a number, got a boolean' "$T/exporter.log"
expect_cmd "a failed token exchange says so" grep -q 'source=tokendown.*token exchange: POST /token' "$T/exporter.log"
stop_exporter

finish
