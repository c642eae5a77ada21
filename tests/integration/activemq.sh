#!/usr/bin/env bash
# The activemq collector against a real ActiveMQ 5.17.2 broker (Debian's jars) with Jolokia at
# /api/jolokia behind basic auth (tests/peers/activemq): a JMS client sends 5 orders and 4
# emails, dead-letters 2 orders and 1 email by the broker's own mechanism (its RedeliveryPolicy,
# maximumRedeliveries 2, gives up and the broker moves them to ActiveMQ.DLQ), puts one message
# straight into ActiveMQ.DLQ (it names no queue: skipped and counted) and holds the 3
# orders left unacknowledged. qrel's figures equal the broker's own Jolokia reads; orders has the
# broker-side ack lease (abortSlowAckConsumerStrategy, 120 s), emails none (a qrel check warning,
# no_broker_lease). The same endpoint read
# through the fault proxy gives the same series; a broker that is down, a wrong password and a
# reply that is no JSON give up 0 with their reason; --config.check reads the broker live.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

secret='amq-s3cr3t-7731'
printf '%s\n' "$secret" > "$T/amq.pass"
printf 'wrong-password\n' > "$T/wrong.pass"
chmod 600 "$T/amq.pass" "$T/wrong.pass"
start_activemq OPENWIRE JP admin "$secret"
activemq_workload "$OPENWIRE"
URL="http://127.0.0.1:$JP/api/jolokia"

# The broker's own figures, read through Jolokia as an operator would (curl, not qrel).
jolokia() { # jolokia QUEUE ATTRIBUTE
  curl -fsS -u "admin:$secret" \
    "$URL/read/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=$1/$2" \
    | "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["value"])'
}
expect_eq "the broker: orders QueueSize / InFlightCount" "$(jolokia orders QueueSize) $(jolokia orders InFlightCount)" "3 3"
expect_eq "the broker: emails QueueSize / InFlightCount" "$(jolokia emails QueueSize) $(jolokia emails InFlightCount)" "3 0"
expect_eq "the broker: ActiveMQ.DLQ QueueSize" "$(jolokia ActiveMQ.DLQ QueueSize)" 4

amq_source() { # amq_source NAME PASSWORD_FILE [URL]
  printf '  - name: %s\n    kind: activemq\n    jolokia_url: %s\n    username: admin\n    password_file: %s\n' \
    "$1" "${3:-$URL}" "$2"
}
cat > "$T/qrel.yml" <<YML
sources:
$(amq_source amq "$T/amq.pass")
YML
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.log"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="amq"' 'kind="activemq"'
expect_metric "$T/m.txt" 0 qrel_queue_messages 'queue="orders"' 'state="ready"'
expect_metric "$T/m.txt" 3 qrel_queue_messages 'queue="orders"' 'state="in_flight"'
expect_metric "$T/m.txt" 3 qrel_queue_messages 'queue="emails"' 'state="ready"'
expect_metric "$T/m.txt" 0 qrel_queue_messages 'queue="emails"' 'state="in_flight"'
expect_absent "$T/m.txt" qrel_queue_messages 'queue="ActiveMQ.DLQ"'
expect_metric "$T/m.txt" 2 qrel_dead_letter_messages 'queue="orders",dead_letter_queue="ActiveMQ.DLQ"'
expect_metric "$T/m.txt" 1 qrel_dead_letter_messages 'queue="emails",dead_letter_queue="ActiveMQ.DLQ"'
expect_metric "$T/m.txt" 3 qrel_max_deliveries 'queue="orders"' # maximumRedeliveries 2, plus the first
expect_metric "$T/m.txt" 3 qrel_max_deliveries 'queue="emails"'
expect_metric "$T/m.txt" 120 qrel_lease_timeout_seconds 'queue="orders"'
expect_absent "$T/m.txt" qrel_lease_timeout_seconds 'queue="emails"'
expect_between "dead-letter oldest age of orders, s" \
  "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="orders"')" 0 120
expect_metric "$T/m.txt" 2 qrel_source_queues 'source="amq"'
# The message sent straight to ActiveMQ.DLQ names no queue: skipped and counted, the source up.
expect_metric "$T/m.txt" 1 qrel_skipped_entries 'queue=""' 'reason="missing_field"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"
# qrel check: emails has no broker-side lease (a warning), orders has one; both hold dead letters.
rc=0
"$QREL" check --config.file="$T/qrel.yml" > "$T/check.txt" 2>&1 || rc=$?
expect_eq "qrel check: dead letters are critical (exit 2)" "$rc" 2
expect_eq "no_broker_lease: emails only" "$(grep '\[no_broker_lease\]$' "$T/check.txt" | cut -d: -f1)" \
  "WARNING amq emails"
expect_cmd "it names the strategy to set" grep -qF 'give the queue'"'"'s destination policy an abortSlowAckConsumerStrategy' "$T/check.txt"
# The bulk reply cut into 1- and 7-byte pieces by the fault proxy gives the same series.
expect_same_via_proxy "$T/qrel.yml" amq "127.0.0.1:$JP"

# A browse limit of 2: the other two dead letters are counted under queue "" and the log says so.
cat > "$T/limit.yml" <<YML
sources:
$(amq_source lim "$T/amq.pass")
    dead_letter_browse_limit: 2
    queues: ["ord*"]
YML
"$QREL" scrape --config.file="$T/limit.yml" > "$T/lim.txt" 2> "$T/lim.log"
expect_metric "$T/lim.txt" 2 qrel_dead_letter_messages 'queue="orders"'
expect_metric "$T/lim.txt" 2 qrel_dead_letter_messages 'queue="",dead_letter_queue="ActiveMQ.DLQ"'
expect_absent "$T/lim.txt" qrel_queue_messages 'queue="emails"'
expect_cmd "the log counts the unread dead letters" grep -q 'unread=2 messages=4' "$T/lim.log"

# Faults: a broker that is down, a wrong password (Jolokia's 401), a reply that is no JSON.
start_http_stub GARBAGE ok --body-text '[{"status":200,"value":'
DOWN=$(free_port)
cat > "$T/faults.yml" <<YML
sources:
$(amq_source down "$T/amq.pass" "http://127.0.0.1:$DOWN/api/jolokia")
$(amq_source h401 "$T/wrong.pass")
$(amq_source malformed "$T/amq.pass" "http://127.0.0.1:$GARBAGE/api/jolokia")
    timeout: 5s
YML
"$QREL" scrape --config.file="$T/faults.yml" > "$T/f.txt" 2> "$T/f.log" || true
for want in down:connect h401:auth malformed:protocol; do
  s=${want%%:*} r=${want#*:}
  expect_metric "$T/f.txt" 0 qrel_collector_up "source=\"$s\""
  expect_metric "$T/f.txt" 1 qrel_collector_errors_total "source=\"$s\"" "reason=\"$r\""
done
if grep -rqF "$secret" "$T"/*.log "$T"/*.txt "$T"/*.out; then not_ok "the password appears in a log or the metrics"; else ok "the password appears nowhere"; fi

# --config.check collects once from the live broker: the real one passes, a wrong password fails.
expect_exit "--config.check against the live broker" 0 "$T/check.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
cat > "$T/bad.yml" <<YML
sources:
$(amq_source bad "$T/wrong.pass")
YML
expect_exit "--config.check with a wrong password" 1 "$T/badcheck.out" "$EXPORTER" --config.file="$T/bad.yml" --config.check

finish
