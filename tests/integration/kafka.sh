#!/usr/bin/env bash
# kind: kafka against librdkafka's mock cluster (tests/peers/kafka_mock, two brokers on free
# loopback ports) with records of known timestamps and a group committed part way: lag in
# messages per group and topic, lag in seconds within the time the scrape took, a partition with
# no commit counted from the log start, per-partition series, dead-letter topics' size, oldest and
# newest ages. Then the faults, each beside the healthy source, under a 4 s scrape-timeout header:
# nothing listening (connect), a listener that never answers (timeout), one that answers junk,
# SASL against a broker without SASL (auth, and the password appears nowhere), and a group
# regex on a broker without ListGroups (query, "list the groups by name"). Keys of earlier
# releases (flat tls_* keys, max_reply_bytes, a regex as pattern) are refused naming the new ones.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

MOCK=$QREL_BUILD_DIR/tests/kafka_mock
[ -x "$MOCK" ] || { echo "kafka_mock not built (QREL_WITH_KAFKA=OFF?)" >&2; exit 1; }

T0=$(( $(now_ms) - 600000 )) # the first record is 10 minutes old
# stamped: records whose producer set timestamps of 5 ms and on (1970: hostile or broken), which
# once gave a lag of 1.8e9 s.
start_kafka_mock BOOT -t orders:3 -t orders.dlq:2 -t payments:1 -t payments.dlq:3 -t stamped:1 \
  -m "stamped:0:3:5:1000" -c stamper:stamped:0:1 \
  -m "orders:0:10:$T0:1000" -m "orders:1:6:$((T0 + 100000)):1000" \
  -m "orders:2:4:$((T0 + 200000)):1000" \
  -m "orders.dlq:0:3:$((T0 + 50000)):5000" -m "orders.dlq:1:2:$((T0 + 10000)):5000" \
  -m "payments:0:5:$((T0 + 300000)):1000" \
  -m "payments.dlq:0:2:$((T0 + 20000)):10000" -m "payments.dlq:1:1:$((T0 + 25000)):1000" \
  -c mailer:orders:0:4 -c mailer:orders:1:6 \
  -c audit:orders:0:10 -c audit:orders:1:6 -c audit:orders:2:4 \
  -c billing:payments:0:5

# The faulty peers: nothing on DOWN, a listener that never answers on HANG, junk on JUNK.
DOWN=$(free_port); HANG=$(free_port); JUNK=$(free_port)
"$QREL_PYTHON" - "$HANG" "$JUNK" <<'PY' &
import socket, sys, threading, time
keep = []
def serve(port, reply):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    while True:
        c, _ = s.accept()
        keep.append(c)
        if reply:
            try:
                c.sendall(reply)
            except OSError:
                pass
threading.Thread(target=serve, args=(int(sys.argv[1]), b""), daemon=True).start()
threading.Thread(target=serve, args=(int(sys.argv[2]), b"\x00\x00\x00\x10garbage-garbage!"), daemon=True).start()
time.sleep(3600)
PY
PIDS+=("$!")
for port in "$HANG" "$JUNK"; do
  wait_for 30 "the faulty peer on port $port to listen" port_open "$port" || true
done

secret='sasl-Secret-5521-horse'
printf '%s\n' "$secret" > "$T/sasl.pass"
chmod 600 "$T/sasl.pass"

cat > "$T/qrel.yml" <<YML
global:
  timeout: 3s
sources:
  - name: stream
    kind: kafka
    bootstrap_servers: $BOOT
    groups:
      - name: mailer
        topics: [orders]
        max_poll_interval: 5m
        dead_letter_topic: "{topic}.dlq"
        per_partition: true
      - name: audit
        topics: [orders, missing-topic]
      - name: billing
        topic_pattern: "pay*"
        dead_letter_topic: "{topic}.dlq"
      - name: stamper
        topics: [stamped]
  - name: down
    kind: kafka
    bootstrap_servers: 127.0.0.1:$DOWN
    groups: [{name: mailer, topics: [orders]}]
  - name: hang
    kind: kafka
    bootstrap_servers: 127.0.0.1:$HANG
    groups: [{name: mailer, topics: [orders]}]
  - name: junk
    kind: kafka
    bootstrap_servers: 127.0.0.1:$JUNK
    groups: [{name: mailer, topics: [orders]}]
  - name: sasl
    kind: kafka
    bootstrap_servers: $BOOT
    security_protocol: sasl_plaintext
    sasl_mechanism: SCRAM-SHA-256
    sasl_username: monitor
    sasl_password_file: $T/sasl.pass
    groups: [{name: mailer, topics: [orders]}]
  - name: patterns
    kind: kafka
    bootstrap_servers: $BOOT
    groups: [{regex: "mail.*", topics: [orders]}]
  - name: every
    kind: kafka
    bootstrap_servers: $BOOT
    groups: [{name: audit, topic_pattern: "*"}]
  - name: excl
    kind: kafka
    bootstrap_servers: $BOOT
    groups: [{name: audit, topic_pattern: "*", topic_exclude: ["orders*"]}]
YML
start_exporter "$T/qrel.yml"

before=$(now_ms)
took=$(scrape_ms "$T/m1.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 4')
after=$(now_ms)
expect_between "scrape time with three bad brokers, ms (header 4 s)" "$took" 0 3999

S='source="stream"'
M='group="mailer"'
expect_metric "$T/m1.txt" 1 qrel_collector_up "$S"
# mailer: p0 committed 4 of 10 (6 left), p1 6 of 6, p2 no commit (4 from the log start).
expect_metric "$T/m1.txt" 10 qrel_queue_messages "$S" 'queue="orders",group="mailer",state="ready"}'
expect_metric "$T/m1.txt" 6 qrel_queue_messages "$S" "$M" 'partition="0"' 'state="ready"'
expect_metric "$T/m1.txt" 0 qrel_queue_messages "$S" "$M" 'partition="1"' 'state="ready"'
expect_metric "$T/m1.txt" 4 qrel_queue_messages "$S" "$M" 'partition="2"' 'state="ready"'
# The oldest unconsumed record is orders/0 offset 4, produced at T0 + 4 s.
lo=$(awk -v a="$before" -v t="$T0" 'BEGIN { printf "%.3f", (a - t - 4000) / 1000 }')
hi=$(awk -v a="$after" -v t="$T0" 'BEGIN { printf "%.3f", (a - t - 4000) / 1000 }')
expect_between "lag seconds of mailer on orders" \
  "$(mval "$T/m1.txt" qrel_consumer_lag_seconds "$S" 'queue="orders",group="mailer"}')" "$lo" "$hi"
expect_between "oldest message age of mailer on orders" \
  "$(mval "$T/m1.txt" qrel_queue_oldest_message_age_seconds "$S" "$M")" "$lo" "$hi"
lo2=$(awk -v a="$before" -v t="$T0" 'BEGIN { printf "%.3f", (a - t - 200000) / 1000 }')
hi2=$(awk -v a="$after" -v t="$T0" 'BEGIN { printf "%.3f", (a - t - 200000) / 1000 }')
expect_between "lag seconds of the uncommitted partition 2 (from the log start)" \
  "$(mval "$T/m1.txt" qrel_consumer_lag_seconds "$S" "$M" 'partition="2"')" "$lo2" "$hi2"
expect_metric "$T/m1.txt" 0 qrel_consumer_lag_seconds "$S" "$M" 'partition="1"'
expect_metric "$T/m1.txt" 300 qrel_lease_timeout_seconds "$S" "$M" 'queue="orders"'
# audit has consumed everything; its missing topic yields nothing; no per-partition series.
expect_metric "$T/m1.txt" 0 qrel_queue_messages "$S" 'queue="orders"' 'group="audit"' 'state="ready"'
expect_metric "$T/m1.txt" 0 qrel_consumer_lag_seconds "$S" 'queue="orders"' 'group="audit"'
expect_absent "$T/m1.txt" qrel_queue_messages "$S" 'queue="missing-topic"'
expect_absent "$T/m1.txt" qrel_queue_messages "$S" 'group="audit"' 'partition="0"'
expect_absent "$T/m1.txt" qrel_lease_timeout_seconds "$S" 'group="audit"'
# Source stream again with its bootstrap connection through the fault proxy. librdkafka 2.0.2's mock
# cluster advertises the address each broker listens on (there is no call to advertise another),
# so only what the bootstrap broker answers is cut into 1- and 7-byte pieces (ApiVersions, the
# first Metadata, whatever else librdkafka asks the bootstrap broker); the requests it then sends
# to the brokers the metadata names go to them directly. The series must be those read directly.
{ sed -n '1,/^sources:/p' "$T/qrel.yml"; proxied_source "$T/qrel.yml" stream stream "" ""; } \
  > "$T/stream.yml"
PROXY_FROM=$BOOT expect_same_via_proxy "$T/stream.yml" stream "${BOOT%%,*}"
# billing, by topic pattern: payments only (not orders, not its own dead-letter topic), caught up.
expect_metric "$T/m1.txt" 0 qrel_queue_messages "$S" 'queue="payments"' 'group="billing"' 'state="ready"'
expect_absent "$T/m1.txt" qrel_queue_messages "$S" 'queue="orders"' 'group="billing"'
expect_absent "$T/m1.txt" qrel_queue_messages "$S" 'queue="payments.dlq"'
# The dead-letter topic: 3 + 2 records, 5 s apart, the oldest produced at T0 + 10 s (partition 1).
expect_metric "$T/m1.txt" 5 qrel_dead_letter_messages "$S" 'queue="orders"' 'dead_letter_queue="orders.dlq"'
lo3=$(awk -v a="$before" -v t="$T0" 'BEGIN { printf "%.3f", (a - t - 10000) / 1000 }')
hi3=$(awk -v a="$after" -v t="$T0" 'BEGIN { printf "%.3f", (a - t - 10000) / 1000 }')
expect_between "dead-letter oldest age" \
  "$(mval "$T/m1.txt" qrel_dead_letter_oldest_age_seconds "$S" 'dead_letter_queue="orders.dlq"')" "$lo3" "$hi3"
# ages_between MS BEFORE AFTER: the bounds of the age of a record produced at T0 + MS, as seen by
# a scrape that ran between the times BEFORE and AFTER (epoch ms).
ages_between() {
  awk -v ms="$1" -v a="$2" -v b="$3" -v t="$T0" \
    'BEGIN { printf "%.3f %.3f", (a - t - ms) / 1000, (b - t - ms) / 1000 }'
}
# The newest: partition 0's last record (offset 2, T0 + 60 s; its others are 5 s and 10 s older,
# farther apart than a scrape takes), not partition 1's (T0 + 11 s).
read -r lo4 hi4 <<< "$(ages_between 60000 "$before" "$after")"
expect_between "dead-letter newest age (the last record of a 3-record partition)" \
  "$(mval "$T/m1.txt" qrel_dead_letter_newest_age_seconds "$S" 'dead_letter_queue="orders.dlq"')" "$lo4" "$hi4"
# payments.dlq: partition 0 holds two records (T0 + 20 s, T0 + 30 s: its first and last read in
# one go), partition 1 one record (T0 + 25 s), partition 2 none.
expect_metric "$T/m1.txt" 3 qrel_dead_letter_messages "$S" 'queue="payments"' 'dead_letter_queue="payments.dlq"'
read -r lo5 hi5 <<< "$(ages_between 20000 "$before" "$after")"
expect_between "payments dead-letter oldest age" \
  "$(mval "$T/m1.txt" qrel_dead_letter_oldest_age_seconds "$S" 'dead_letter_queue="payments.dlq"')" "$lo5" "$hi5"
read -r lo6 hi6 <<< "$(ages_between 30000 "$before" "$after")"
expect_between "payments dead-letter newest age (the last of a 2-record partition)" \
  "$(mval "$T/m1.txt" qrel_dead_letter_newest_age_seconds "$S" 'dead_letter_queue="payments.dlq"')" "$lo6" "$hi6"
# stamped: its lag is counted, its record's 1970 timestamp is skipped and gives no age.
expect_metric "$T/m1.txt" 2 qrel_queue_messages "$S" 'queue="stamped"' 'group="stamper"' 'state="ready"'
expect_absent "$T/m1.txt" qrel_consumer_lag_seconds "$S" 'queue="stamped"'
expect_absent "$T/m1.txt" qrel_queue_oldest_message_age_seconds "$S" 'queue="stamped"'
expect_metric "$T/m1.txt" 1 qrel_skipped_entries "$S" 'queue="stamped"' 'reason="bad_timestamp"'
dlq_series=$(grep -c '^qrel_dead_letter_messages{source="stream",kind="kafka",queue="orders"' "$T/m1.txt" || true)
expect_eq "dead-letter series of stream (one per topic and dead-letter topic)" "$dlq_series" 1

# topic_exclude: source excl leaves out orders and orders.dlq, which every (the same entry
# without it) reads, and nothing else; the two are counted, so an exclude is never silent.
kafka_topics() { # kafka_topics FILE SOURCE: the queues of SOURCE's ready series, sorted
  grep "^qrel_queue_messages{source=\"$2\"" "$1" | grep -v 'partition=' |
    sed -E 's/.*queue="([^"]*)".*/\1/' | sort -u | tr '\n' ' '
}
expect_eq "every reads orders and orders.dlq too" \
  "$(kafka_topics "$T/m1.txt" every | grep -o 'orders[^ ]* ' | tr -d '\n')" "orders orders.dlq "
expect_eq "topic_exclude leaves out orders* and nothing else" "$(kafka_topics "$T/m1.txt" excl)" \
  "$(kafka_topics "$T/m1.txt" every | tr ' ' '\n' | grep -v '^orders' | tr '\n' ' ')"
expect_metric "$T/m1.txt" 2 qrel_excluded_objects 'source="excl"' 'object="topic"'
expect_metric "$T/m1.txt" 0 qrel_excluded_objects 'source="excl"' 'object="group"'
expect_absent "$T/m1.txt" qrel_excluded_objects 'source="every"'

# Faults: each its own reason, nothing from them but the exporter's own series.
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="down"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="down"' 'reason="connect"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="hang"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="hang"' 'reason="timeout"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="junk"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="junk"' 'reason="timeout"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="sasl"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="sasl"' 'reason="auth"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="patterns"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="patterns"' 'reason="query"'
for s in down hang junk sasl patterns; do
  expect_absent "$T/m1.txt" qrel_queue_messages "source=\"$s\""
done
# librdkafka says either, depending on whether its "all brokers down" event came first.
expect_cmd "the log says the broker cannot be reached" grep -qE 'source=down kind=kafka reason=connect.*(brokers are down|Connection refused)' "$T/exporter.log"
expect_cmd "the log says what timed out" grep -q 'source=hang kind=kafka reason=timeout.*kafka: Metadata: timed out' "$T/exporter.log"
expect_cmd "the log names the SASL failure" grep -q 'source=sasl kind=kafka reason=auth.*SASL' "$T/exporter.log"
expect_cmd "the log says to name the groups" grep -q 'source=patterns kind=kafka reason=query.*list the groups by name' "$T/exporter.log"

# A second scrape (after the back-off) on the kept handle: the same values, and the healthy
# source is still served.
sleep 0.6
before2=$(now_ms)
scrape "$T/m2.txt"
after2=$(now_ms)
expect_metric "$T/m2.txt" 1 qrel_collector_up "$S"
expect_metric "$T/m2.txt" 10 qrel_queue_messages "$S" 'queue="orders",group="mailer",state="ready"}'
expect_metric "$T/m2.txt" 5 qrel_dead_letter_messages "$S" 'queue="orders"'
read -r lo7 hi7 <<< "$(ages_between 60000 "$before2" "$after2")"
expect_between "dead-letter newest age, second scrape" \
  "$(mval "$T/m2.txt" qrel_dead_letter_newest_age_seconds "$S" 'dead_letter_queue="orders.dlq"')" "$lo7" "$hi7"
expect_metric "$T/m2.txt" 2 qrel_collector_errors_total 'source="down"' 'reason="connect"'

# Nothing was committed by the exporter: mailer's offsets are as the peer left them.
expect_cmd "the exporter committed nothing (mailer still 10 behind)" \
  grep -q "^qrel_queue_messages{source=\"stream\",kind=\"kafka\",queue=\"orders\",group=\"mailer\",state=\"ready\"} 10$" "$T/m2.txt"

# Spellings of earlier releases fail --config.check with the new name, not a silent change.
old_spelling() { # old_spelling WHAT KEY-LINES... : the source with those lines, checked
  local what=$1 want=$2; shift 2
  { printf 'sources:\n  - name: old\n    kind: kafka\n    bootstrap_servers: %s\n' "$BOOT"
    printf '    %s\n' "$@"; } > "$T/old.yml"
  expect_cmd "$what" bash -c "'$EXPORTER' --config.file='$T/old.yml' --config.check 2>&1 | grep -qF -- '$want'"
}
old_spelling "tls_ca_file is refused naming tls_config.ca_file" \
  'old.yml:5:5: "tls_ca_file" is now called "tls_config.ca_file"' \
  "tls_ca_file: $T/ca.pem" 'groups: [{name: mailer, topics: [orders]}]'
old_spelling "max_reply_bytes is refused naming max_response_bytes" \
  'old.yml:5:5: "max_reply_bytes" is now called "max_response_bytes"' \
  'max_reply_bytes: 1000000' 'groups: [{name: mailer, topics: [orders]}]'
old_spelling "a regex written as topic_pattern is refused naming topic_regex" \
  'old.yml:5:45: topic_pattern: "pay.*" looks like a regular expression' \
  'groups: [{name: billing, topic_pattern: "pay.*"}]'
expect_cmd "the message points to topic_regex" grep -q 'write topic_regex: for a regular expression' <("$EXPORTER" --config.file="$T/old.yml" --config.check 2>&1)
old_spelling "an exclude_regex that does not compile is refused at its line and column" \
  'old.yml:5:54: exclude_regex: want a regular expression (POSIX extended)' \
  'groups: [{regex: "[0-9a-f-]{36}", exclude_regex: "(", topics: [orders]}]'
old_spelling "a group exclude beside a name is refused" \
  'old.yml:5:38: exclude: only with pattern or regex' \
  'groups: [{name: mailer, exclude: ["*-*-*-*-*"], topics: [orders]}]'

curl -fsS "http://$ADDR/" -o "$T/landing.html"
for f in "$T"/m*.txt "$T/landing.html" "$T/exporter.log"; do
  if grep -qF -e "$secret" "$f"; then not_ok "the SASL password appears in $(basename "$f")"; else ok "no password in $(basename "$f")"; fi
done

finish
