#!/usr/bin/env bash
# The sqs collector against the fauxqs SQS emulator (Node 22, timer pump) behind a SigV4-verifying
# stub of our own that re-signs every request with AWS's signer and also answers CloudWatch
# GetMetricData: queues with a RedrivePolicy (maxReceiveCount as a string and as a number, one
# dead-letter queue shared by two queues, one in the selection), messages received and not
# deleted, messages redriven to the DLQ after maxReceiveCount receives, a FIFO queue; exact
# values. The collector never calls ReceiveMessage or any other action that changes a queue, asks
# for a shared DLQ once per scrape and resolves its URL once. A key signed with the wrong secret
# is refused (reason auth), and no secret, session token or wrong secret appears in any output.
# Faults: server down, hanging, HTTP 500, 401, 403, truncated, malformed, non-HTTP and too large
# answers each give up 0 with their reason within the timeout while a healthy source reports.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/sqs.sh
. "$QREL_SOURCE_DIR/tests/lib/sqs.sh"

# ---- the peers: fauxqs 2.4.1 and Node 22 from npm (tests/lib/servers.sh installs them once)
shared_fauxqs FQ

akid=AKIDQRELTEST0001
secret='s3cr3t/Key+Test=9f2Q'
token='FwoGZXIvYXdzEXAMPLEsessionTOKEN0042'
wrong='wr0ng/Key+Test=7c1Z'
printf '%s\n' "$secret" > "$T/secret"
chmod 600 "$T/secret"
echo '{}' > "$T/cw.json"
(cd "$SQS_PEERS" && STUB_ACCESS_KEY=$akid STUB_SECRET_KEY=$secret STUB_SESSION_TOKEN=$token \
  STUB_REGION=us-east-1 STUB_UPSTREAM=http://127.0.0.1:$FQ STUB_CLOUDWATCH=$T/cw.json \
  STUB_LOG=$T/stub.jsonl exec "$NODE" --no-warnings sigv4-stub.mjs "$T/stub.port") >"$T/stub.out" 2>&1 &
PIDS+=("$!")
wait_for 30 "the SigV4 stub to write its port" port_file "$T/stub.port" SP

# ---- the workload, set up straight on fauxqs (so the stub's log holds only the exporter's calls)

orders_dlq=$(create orders-dlq '{}')
orders=$(create orders "{\"VisibilityTimeout\":\"2\",\"RedrivePolicy\":$(policy orders-dlq '"2"')}")
shared=$(create shared-dlq '{}')
create billing "{\"VisibilityTimeout\":\"45\",\"DelaySeconds\":\"5\",\"RedrivePolicy\":$(policy shared-dlq 3)}" >/dev/null
refunds=$(create refunds "{\"VisibilityTimeout\":\"60\",\"MessageRetentionPeriod\":\"200\",\"RedrivePolicy\":$(policy shared-dlq '"5"')}")
events=$(create events.fifo '{"FifoQueue":"true","ContentBasedDeduplication":"true","VisibilityTimeout":"10","MessageRetentionPeriod":"600"}')
create zz-other '{}' >/dev/null

# Redrive: x1 and x2 are received twice (maxReceiveCount 2) and not deleted; the next receive
# moves them to orders-dlq (fauxqs moves them on that receive, as SQS does).
send "$orders" x1
send "$orders" x2
expect_eq "first receive of x1, x2" "$(receive "$orders")" 2
sleep 2.4
expect_eq "second receive of x1, x2 (lease of 2 s expired)" "$(receive "$orders")" 2
sleep 2.4
expect_eq "third receive: both dead-lettered instead" "$(receive "$orders")" 0
expect_eq "orders-dlq depth after redrive" "$(depth "$orders_dlq" ApproximateNumberOfMessages)" 2
# Now 1 ready, 2 in flight (held for 300 s by this receive), 1 delayed.
for m in m1 m2 m3; do send "$orders" "$m"; done
send "$orders" m4 '"DelaySeconds":120'
expect_eq "received and kept in flight" "$(receive "$orders" '"MaxNumberOfMessages":2,"VisibilityTimeout":300' )" 2
for m in d1 d2 d3; do send "$shared" "$m"; done
# FIFO with content-based deduplication: the duplicate send is not enqueued.
for b in e1 e1 e2; do
  sqs SendMessage "{\"QueueUrl\":\"$events\",\"MessageBody\":\"$b\",\"MessageGroupId\":\"g\"}" >/dev/null
done

# CloudWatch data for the stub: [seconds ago, ApproximateAgeOfOldestMessage].
cat > "$T/cw.json" <<'JSON'
{"orders": [[190, 70], [130, 75]], "orders-dlq": [[100, 400]], "shared-dlq": [[250, 900]],
 "events.fifo": [[95, 12]]}
JSON

# ---- the fault peers
DOWN=$(free_port)
start_http_stub HANG hang
echo '{"__type":"com.amazon.coral.service#InternalFailure","message":"boom at the back end"}' > "$T/500.json"
start_http_stub E500 ok --status 500 --body "$T/500.json" --content-type application/x-amz-json-1.0
start_http_stub E401 ok --status 401 --body-text '{}'
start_http_stub E403 ok --status 403 --body-text '{"__type":"AccessDeniedException","message":"not allowed"}'
start_http_stub TRUNC truncated
start_http_stub BADJSON ok --body-text '{"QueueUrls": ["http://x/1/a",' --content-type application/x-amz-json-1.0
start_http_stub GARBAGE garbage
start_http_stub HUGE huge --size 300000

fault() { # fault NAME PORT: a source whose every call goes to the fault peer on PORT
  cat <<YML
  - name: $1
    kind: sqs
    region: us-east-1
    endpoint: http://127.0.0.1:$2/
    timeout: 2s
    access_key_id: $akid
    secret_access_key_file: $T/secret
    queue_name_prefix: x
    max_response_bytes: 65536
YML
}

cat > "$T/qrel.yml" <<YML
sources:
  - name: aws
    kind: sqs
    region: us-east-1
    endpoint: http://127.0.0.1:$SP/
    access_key_id: $akid
    secret_access_key_file: $T/secret
    session_token_env: QREL_TEST_SQS_TOKEN
    queue_name_prefix: orders
    queues: [billing, "$events", refunds, no-such-queue]
    cloudwatch: true
    cloudwatch_endpoint: http://127.0.0.1:$SP/
  - name: from-env
    kind: sqs
    region: us-east-1
    endpoint: http://127.0.0.1:$SP/
    queues: [orders-dlq]
  - name: wrong-secret
    kind: sqs
    region: us-east-1
    endpoint: http://127.0.0.1:$SP/
    access_key_id: $akid
    secret_access_key_env: QREL_TEST_SQS_WRONG
    session_token_env: QREL_TEST_SQS_TOKEN
    queues: [billing]
$(fault down "$DOWN")
$(fault hang "$HANG")
$(fault http500 "$E500")
$(fault http401 "$E401")
$(fault http403 "$E403")
$(fault truncated "$TRUNC")
$(fault badjson "$BADJSON")
$(fault garbage "$GARBAGE")
$(fault huge "$HUGE")
YML

QREL_TEST_SQS_TOKEN=$token QREL_TEST_SQS_WRONG=$wrong \
  AWS_ACCESS_KEY_ID=$akid AWS_SECRET_ACCESS_KEY=$secret AWS_SESSION_TOKEN=$token \
  start_exporter "$T/qrel.yml"

took=$(scrape_ms "$T/m1.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 5')
expect_between "scrape time with a hanging source (timeout 2 s), ms" "$took" 0 3500
scrape "$T/m2.txt"

m=$T/m1.txt
src='source="aws"'
expect_metric "$m" 1 qrel_collector_up "$src" 'kind="sqs"'
q='queue="orders"'
expect_metric "$m" 1 qrel_queue_messages "$src" "$q" 'state="ready"'
expect_metric "$m" 2 qrel_queue_messages "$src" "$q" 'state="in_flight"'
expect_metric "$m" 1 qrel_queue_messages "$src" "$q" 'state="delayed"'
expect_metric "$m" 2 qrel_lease_timeout_seconds "$src" "$q"
expect_metric "$m" 2 qrel_max_deliveries "$src" "$q"
expect_metric "$m" 4 qrel_retry_horizon_seconds "$src" "$q"
expect_metric "$m" 2 qrel_dead_letter_messages "$src" "$q" 'dead_letter_queue="orders-dlq"'
expect_absent "$m" qrel_dedup_window_seconds "$src" "$q"
# The DLQ matches the prefix, so it is a queue of its own too.
q='queue="orders-dlq"'
expect_metric "$m" 2 qrel_queue_messages "$src" "$q" 'state="ready"'
expect_metric "$m" 0 qrel_queue_messages "$src" "$q" 'state="in_flight"'
expect_metric "$m" 30 qrel_lease_timeout_seconds "$src" "$q"
expect_metric "$m" 345600 qrel_retry_horizon_seconds "$src" "$q"
expect_absent "$m" qrel_max_deliveries "$src" "$q"
expect_absent "$m" qrel_dead_letter_messages "$src" "kind=\"sqs\",$q"
q='queue="billing"'
expect_metric "$m" 0 qrel_queue_messages "$src" "$q" 'state="ready"'
expect_metric "$m" 45 qrel_lease_timeout_seconds "$src" "$q"
expect_metric "$m" 3 qrel_max_deliveries "$src" "$q"
expect_metric "$m" 140 qrel_retry_horizon_seconds "$src" "$q"   # 5 + 3 x 45
expect_metric "$m" 3 qrel_dead_letter_messages "$src" "$q" 'dead_letter_queue="shared-dlq"'
q='queue="refunds"'
expect_metric "$m" 5 qrel_max_deliveries "$src" "$q"
expect_metric "$m" 200 qrel_retry_horizon_seconds "$src" "$q"   # 5 x 60, capped by retention
expect_metric "$m" 3 qrel_dead_letter_messages "$src" "$q" 'dead_letter_queue="shared-dlq"'
q='queue="events.fifo"'
expect_metric "$m" 2 qrel_queue_messages "$src" "$q" 'state="ready"'
expect_metric "$m" 300 qrel_dedup_window_seconds "$src" "$q"
expect_metric "$m" 10 qrel_lease_timeout_seconds "$src" "$q"
expect_metric "$m" 600 qrel_retry_horizon_seconds "$src" "$q"
expect_absent "$m" qrel_max_deliveries "$src" "$q"
expect_absent "$m" qrel_queue_messages "$src" 'queue="shared-dlq"'
expect_absent "$m" qrel_queue_messages "$src" 'queue="zz-other"'
expect_absent "$m" qrel_queue_messages "$src" 'queue="no-such-queue"'
# CloudWatch: the newest datum, and how old it is.
expect_metric "$m" 75 qrel_queue_oldest_message_age_seconds "$src" 'queue="orders"'
expect_between "sample age of the orders datum (130 s old)" \
  "$(mval "$m" qrel_sample_age_seconds "$src" 'queue="orders"')" 130 136
expect_metric "$m" 400 qrel_queue_oldest_message_age_seconds "$src" 'queue="orders-dlq"'
expect_metric "$m" 12 qrel_queue_oldest_message_age_seconds "$src" 'queue="events.fifo"'
expect_absent "$m" qrel_queue_oldest_message_age_seconds "$src" 'queue="billing"'
expect_absent "$m" qrel_sample_age_seconds "$src" 'queue="billing"'
expect_metric "$m" 400 qrel_dead_letter_oldest_age_seconds "$src" 'queue="orders"' 'dead_letter_queue="orders-dlq"'
expect_metric "$m" 900 qrel_dead_letter_oldest_age_seconds "$src" 'queue="billing"' 'dead_letter_queue="shared-dlq"'
expect_metric "$m" 900 qrel_dead_letter_oldest_age_seconds "$src" 'queue="refunds"' 'dead_letter_queue="shared-dlq"'
# Retention: MessageRetentionPeriod of each queue and of its dead-letter queue as SQS states it,
# orders-dlq selected itself (GetQueueAttributes All), shared-dlq not (the counts' call asks for
# it). SQS's default (345600 s, 4 days) for all but refunds (200 s).
ret() { depth "$1" MessageRetentionPeriod; }
expect_metric "$m" "$(ret "$orders")" qrel_queue_retention_seconds "$src" 'queue="orders"'
expect_metric "$m" "$(ret "$orders_dlq")" qrel_dead_letter_retention_seconds "$src" 'queue="orders"' 'dead_letter_queue="orders-dlq"'
expect_metric "$m" "$(ret "$orders_dlq")" qrel_queue_retention_seconds "$src" 'queue="orders-dlq"'
expect_metric "$m" "$(ret "$refunds")" qrel_queue_retention_seconds "$src" 'queue="refunds"'
expect_metric "$m" "$(ret "$shared")" qrel_dead_letter_retention_seconds "$src" 'queue="refunds"' 'dead_letter_queue="shared-dlq"'
expect_metric "$m" "$(ret "$shared")" qrel_dead_letter_retention_seconds "$src" 'queue="billing"' 'dead_letter_queue="shared-dlq"'

# Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
expect_metric "$m" 1 qrel_collector_up 'source="from-env"'
expect_metric "$m" 2 qrel_queue_messages 'source="from-env"' 'queue="orders-dlq"' 'state="ready"'
# The wrong secret: the verifying stub refuses the signature.
expect_metric "$m" 0 qrel_collector_up 'source="wrong-secret"'
expect_metric "$m" 1 qrel_collector_errors_total 'source="wrong-secret"' 'reason="auth"'
expect_cmd "the log explains the refused signature" \
  grep -q 'source=wrong-secret kind=sqs reason=auth .*SignatureDoesNotMatch' "$T/exporter.log"

# What reached the stub: every request of the right key was signed right, with the session
# token, for sqs or monitoring in us-east-1; only read-only actions; a shared DLQ's URL asked
# once over two scrapes and its attributes once per scrape.
expect_eq "stub verdicts (MATCH for aws and from-env, MISMATCH for wrong-secret)" \
  "$(jq -r .verdict "$T/stub.jsonl" | sort -u | tr '\n' ' ')" "MATCH MISMATCH "
expect_eq "scopes the stub saw" \
  "$(jq -r '.scope' "$T/stub.jsonl" | cut -d/ -f2- | sort -u | tr '\n' ' ')" "us-east-1/monitoring us-east-1/sqs "
expect_eq "actions the collector called" \
  "$(jq -r '.target' "$T/stub.jsonl" | sort -u | tr '\n' ' ')" \
  "AmazonSQS.GetQueueAttributes AmazonSQS.GetQueueUrl AmazonSQS.ListQueues GraniteServiceVersion20100801.GetMetricData "
expect_eq "GetQueueUrl of shared-dlq over two scrapes" \
  "$(jq -r 'select(.target == "AmazonSQS.GetQueueUrl" and (.body | contains("shared-dlq"))) | .body' "$T/stub.jsonl" | wc -l)" 1
expect_eq "GetQueueAttributes of shared-dlq over two scrapes (billing and refunds share it)" \
  "$(jq -r 'select(.target == "AmazonSQS.GetQueueAttributes" and (.body | contains("/shared-dlq"))) | .body' "$T/stub.jsonl" | wc -l)" 2
expect_eq "session token sent on every request of source aws and from-env" \
  "$(jq -r 'select(.verdict == "MATCH") | .headers["x-amz-security-token"]' "$T/stub.jsonl" | sort -u | wc -l)" 1
expect_eq "requests of source aws, first and second scrape" \
  "$(sed -nE 's/.*msg="sqs collection done" source=aws .*requests=([0-9]+).*/\1/p' "$T/exporter.log" | head -2 | tr '\n' ' ')" "12 9 "
expect_eq "missing queues reported in the debug log" \
  "$(sed -nE 's/.*msg="sqs collection done" source=aws .*missing_queues=([0-9]+).*/\1/p' "$T/exporter.log" | head -1)" 1
expect_cmd "the CloudWatch query asks for Maximum of AWS/SQS ApproximateAgeOfOldestMessage per minute" \
  jq -e 'select(.target | startswith("Granite")) | .body | fromjson | .MetricDataQueries[0].MetricStat
         | .Stat == "Maximum" and .Period == 60 and .Metric.Namespace == "AWS/SQS"
           and .Metric.MetricName == "ApproximateAgeOfOldestMessage"' "$T/stub.jsonl" >/dev/null

# Source aws (SQS and CloudWatch) read again through the fault proxy: the emulator's HTTP replies cut
# into 1- and 7-byte pieces must give the series read directly (every call goes to the endpoint,
# the queue's URL travels in the body, so none bypasses the proxy). After the counts of what
# reached the stub above, which this scrape would change.
{ echo 'sources:'; proxied_source "$T/qrel.yml" aws aws "" ""; } > "$T/aws.yml"
QREL_TEST_SQS_TOKEN=$token expect_same_via_proxy "$T/aws.yml" aws "127.0.0.1:$SP"

# ---- faults: each source is down with its reason, the healthy one reports
check_fault() { # check_fault NAME REASON LOG_PATTERN
  expect_metric "$m" 0 qrel_collector_up "source=\"$1\""
  expect_metric "$m" 1 qrel_collector_errors_total "source=\"$1\"" "reason=\"$2\""
  expect_cmd "log: $1 failed with $2 ($3)" grep -qE "msg=\"collection failed\" source=$1 kind=sqs reason=$2 .*$3" "$T/exporter.log"
}
check_fault down connect 'AmazonSQS.ListQueues: POST /'
check_fault hang timeout 'no complete answer within'
check_fault http500 query 'HTTP 500 InternalFailure: boom at the back end'
check_fault http401 auth 'HTTP 401'
check_fault http403 auth 'HTTP 403 AccessDeniedException'
check_fault truncated protocol 'AmazonSQS.ListQueues'
check_fault badjson protocol 'AmazonSQS.ListQueues'
check_fault garbage protocol 'AmazonSQS.ListQueues'
check_fault huge limit 'larger than 65536 bytes'

# ---- no secret anywhere: metrics, landing page, log, qrel scrape's output
curl -fsS "http://$ADDR/" -o "$T/landing.html"
QREL_TEST_SQS_TOKEN=$token QREL_TEST_SQS_WRONG=$wrong \
  AWS_ACCESS_KEY_ID=$akid AWS_SECRET_ACCESS_KEY=$secret AWS_SESSION_TOKEN=$token \
  "$QREL" scrape --config.file="$T/qrel.yml" --source=wrong-secret > "$T/scrape.out" 2> "$T/scrape.err" || true
expect_cmd "qrel scrape reports the refused signature" grep -q SignatureDoesNotMatch "$T/scrape.err"
for f in "$T"/m*.txt "$T/landing.html" "$T/exporter.log" "$T/scrape.out" "$T/scrape.err"; do
  if grep -qF -e "$secret" -e "$token" -e "$wrong" "$f"; then
    not_ok "a secret appears in $(basename "$f")"
  else
    ok "no secret, token or wrong secret in $(basename "$f")"
  fi
done
stop_exporter
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$T/exporter.log" "$T/scrape.err"; then
  not_ok "a sanitizer report in the exporter's or qrel's output"
else
  ok "no sanitizer report in the exporter's or qrel's output"
fi

# ---- exclude: two scratch queues made now (after the counts above, which they would change),
# left out of what ListQueues finds. After the exporter stopped: only these reach the stub now.
export QREL_TEST_SQS_TOKEN=$token
tmp_a=$(create orders-tmp-a '{}')
create orders-tmp-b '{}' >/dev/null
excl_yml() { # excl_yml FILE NAME [key lines]: one sqs source on the stub
  printf 'sources:\n  - name: %s\n    kind: sqs\n    region: us-east-1\n    endpoint: http://127.0.0.1:%s/\n' "$2" "$SP" > "$1"
  printf '    access_key_id: %s\n    secret_access_key_file: %s\n' "$akid" "$T/secret" >> "$1"
  printf '    session_token_env: QREL_TEST_SQS_TOKEN\n%s' "${3:-}" >> "$1"
}
sqs_queues() { # sqs_queues FILE: the queues with a ready count, sorted, one line
  grep '^qrel_queue_messages{' "$1" | grep 'state="ready"' | grep -o 'queue="[^"]*"' | sort | tr '\n' ' '
}
excl_yml "$T/every.yml" every
"$QREL" scrape --config.file="$T/every.yml" > "$T/every.prom"
expect_eq "the whole account's listing has both scratch queues" \
  "$(sqs_queues "$T/every.prom" | grep -o 'queue="orders-tmp-[ab]"' | wc -l)" 2
expect_absent "$T/every.prom" qrel_excluded_objects
n_all=$(sqs_queues "$T/every.prom" | wc -w)
# max_queues is the count left after the exclude: it counts after it, so every queue but the two
# still fits and no cap is reached.
excl_yml "$T/excl.yml" excl "    exclude: [\"*-tmp-*\"]
    max_queues: $((n_all - 2))
"
sent=$(wc -l < "$T/stub.jsonl")
"$QREL" scrape --config.file="$T/excl.yml" > "$T/excl.prom" 2> "$T/excl.log"
expect_eq "exclude leaves out orders-tmp-a and -b and nothing else" "$(sqs_queues "$T/excl.prom")" \
  "$(sqs_queues "$T/every.prom" | tr ' ' '\n' | grep -v '^queue="orders-tmp-[ab]"$' | tr '\n' ' ')"
expect_metric "$T/excl.prom" 2 qrel_excluded_objects 'source="excl"' 'object="queue"'
expect_absent "$T/excl.prom" qrel_lease_timeout_seconds 'queue="orders-tmp-a"'
expect_cmd "max_queues counts after the exclude (no cap reached)" \
  bash -c "! grep -q 'max_queues reached' '$T/excl.log'"
attrs_asked() { # attrs_asked PATTERN: GetQueueAttributes calls of that scrape whose body has it
  tail -n +"$((sent + 1))" "$T/stub.jsonl" |
    jq -r 'select(.target == "AmazonSQS.GetQueueAttributes") | .body' | grep -c -- "$1" || true
}
expect_eq "GetQueueAttributes of an excluded queue" "$(attrs_asked '/orders-tmp-')" 0
expect_eq "GetQueueAttributes of the queues kept (one each)" "$(attrs_asked QueueUrl)" "$((n_all - 2))"
# A queue listed in queues is kept though it matches; an excluded dead-letter queue is not
# reported but still measured for the dead-letter figures of orders, as read without exclude.
excl_yml "$T/kept.yml" kept "    queue_name_prefix: orders
    queues: [\"$tmp_a\"]
    exclude: [\"*-tmp-*\", orders-dlq]
"
"$QREL" scrape --config.file="$T/kept.yml" > "$T/kept.prom"
expect_eq "queues of source kept" "$(sqs_queues "$T/kept.prom")" 'queue="orders" queue="orders-tmp-a" '
expect_metric "$T/kept.prom" 2 qrel_excluded_objects 'source="kept"' 'object="queue"'
expect_metric "$T/kept.prom" "$(mval "$T/every.prom" qrel_dead_letter_messages 'queue="orders"' 'dead_letter_queue="orders-dlq"')" \
  qrel_dead_letter_messages 'source="kept"' 'queue="orders"' 'dead_letter_queue="orders-dlq"'
# Refused at load, at file:line:col: not a list; an exclude with nothing listed (only queues).
refused() { # refused WHAT WANT [key lines]
  excl_yml "$T/bad.yml" bad "$3"
  expect_cmd "$1" bash -c "'$EXPORTER' --config.file='$T/bad.yml' --config.check 2>&1 | grep -qF -- '$2'"
}
refused "an exclude that is not a list is refused at its line and column" \
  'bad.yml:9:14: exclude: want a list of strings, got a mapping' $'    exclude: {orders-tmp-a: 1}\n'
refused "an exclude beside only queues is refused, saying why" \
  'bad.yml:10:14: exclude: only with queue_name_prefix or without queues (it leaves out queues ListQueues finds' \
  $'    queues: [orders]\n    exclude: ["*-tmp-*"]\n'
# qrel check: orders and billing keep their dead letters (4 days) no longer than the queue does
# (4 days) plus the retry horizon, so a dead letter can expire unread; refunds (200 s against
# shared-dlq's 4 days) is fine. After the counts of the stub's log above, which it would change.
excl_yml "$T/ret.yml" retention "    queue_name_prefix: orders
    queues: [billing, refunds]
"
"$QREL" check --config.file="$T/ret.yml" > "$T/ret.txt" 2>&1 || true
expect_eq "dead_letters_expire_unread: orders and billing, not refunds" \
  "$(sed -nE 's/^WARNING retention ([a-z.-]+): .*\[dead_letters_expire_unread\]$/\1/p' "$T/ret.txt" | sort | tr '\n' ' ')" "billing orders "
expect_cmd "orders: both retentions, the horizon, what is lost and the fix" grep -qF \
  "WARNING retention orders: dead-letter queue orders-dlq keeps messages 96h, no longer than the queue keeps them (96h) plus its retry horizon (4s): a message dead-lettered late in its life expires there before anyone reads it, lost with the error that killed it; a standard queue's dead letter keeps its original enqueue time, so it may arrive with its retention nearly spent (FIFO queues restart it); set the dead-letter queue's MessageRetentionPeriod to 1209600 (14 days, the most SQS allows) or to the queue's plus the time you need to read them [dead_letters_expire_unread]" \
  "$T/ret.txt"
if grep -qF -e "$secret" -e "$wrong" "$T/stub.jsonl"; then
  not_ok "a secret key reached the server"
else
  ok "no secret key in anything the server received"
fi
finish
