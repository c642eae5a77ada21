#!/usr/bin/env bash
# consumers_interval against a real RabbitMQ 3.10 node with the prometheus plugin: the consumer
# counts of queue_consumer_count, the plugin's dearest family, are read once per interval and
# served from the last read in between. One exporter, three sources on the same node: `every`
# (0s: a consumer shows in the next scrape once the plugin counts it), `long` (1h: the count stays
# at the value read first while depth follows the broker) and `short` (2s: the count catches up
# on a later scrape, read by the plugin and not by a refresh of the slow part), and `capped`
# (0s, with a max_response_bytes that the depth family's reply fits and the reply with the
# consumer family does not: depth is served with the last good count, and a warning says why).
# The debug log says which scrape read the counts and how old the ones served are;
# --config.check refuses a bad value at its line and column.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/rabbitmq.sh
. "$QREL_SOURCE_DIR/tests/lib/rabbitmq.sh"
PY=/usr/bin/python3 # Debian's python3-pika imports only there

rabbit_test_start
publish() { # publish ID: one message to queue work through the default exchange
  api POST /exchanges/%2F/amq.default/publish \
    "{\"routing_key\":\"work\",\"payload\":\"$1\",\"payload_encoding\":\"string\",\"properties\":{}}"
}
plugin_val() { # plugin_val FAMILY METRIC: the plugin's own figure of METRIC for queue work
  curl -fsS "http://127.0.0.1:$RABBIT_PROM/metrics/detailed?family=$1" |
    awk -v m="$2" 'index($0, m "{") == 1 && index($0, "queue=\"work\"") { print $NF; exit }'
}
api PUT /queues/%2F/work '{"durable":true}'

source_yaml() { # source_yaml NAME CONSUMERS_INTERVAL [EXTRA KEY LINE]
  printf '  - name: %s\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n' "$1" "$RABBIT_MGMT"
  printf '    prometheus_url: http://127.0.0.1:%s\n    username: guest\n' "$RABBIT_PROM"
  printf '    password_env: QREL_TEST_RABBIT_PASS\n    queues: [work]\n'
  # the slow part is refreshed only at start: counts that change come from consumers_interval
  printf '    metadata_interval: 1h\n    consumers_interval: %s\n' "$2"
  [ -z "${3:-}" ] || printf '    %s\n' "$3"
}
export QREL_TEST_RABBIT_PASS=guest

# A queue has its figures once the broker emitted its stats, in the plugin and in the management
# API (whose consumers column the refresh of the slow part reads): wait for both, then the first
# scrape reads the slow part, and the counts with it (no consumer yet).
both_have_work() {
  [ -n "$(plugin_val queue_coarse_metrics rabbitmq_detailed_queue_messages_ready)" ] &&
    curl -fsS -u guest:guest "$API/queues/%2F/work?columns=consumers" | grep -q '"consumers":0'
}
expect_cmd "work has its figures in the plugin and the management API" \
  wait_for -i 0.2 30 "work's first stats" both_have_work
# capped's max_response_bytes: halfway between the plugin's reply without and with the consumer
# family (the figures in them keep their digits in this test), above the refresh's /api/queues
body_len() { curl -fsS -H 'Accept-Encoding: identity' -o /dev/null -w '%{size_download}' "$@"; }
coarse_len=$(body_len "http://127.0.0.1:$RABBIT_PROM/metrics/detailed?family=queue_coarse_metrics")
both_len=$(body_len "http://127.0.0.1:$RABBIT_PROM/metrics/detailed?family=queue_coarse_metrics&family=queue_consumer_count")
api_len=$(body_len -u guest:guest "$API/queues?columns=name,vhost,messages,messages_ready,messages_unacknowledged,consumers,head_message_timestamp,arguments,effective_policy_definition,message_stats.redeliver,message_stats.ack,message_stats.deliver_no_ack,message_stats.get_no_ack")
cap=$(((coarse_len + both_len) / 2))
expect_cmd "a cap between the replies ($coarse_len < $cap < $both_len bytes; /api/queues $api_len)" \
  test "$coarse_len" -lt $((cap - 50)) -a "$both_len" -gt $((cap + 50)) -a "$api_len" -lt "$cap"
{
  echo "sources:"
  source_yaml every 0s
  source_yaml long 1h
  source_yaml short 2s
  source_yaml capped 0s "max_response_bytes: $cap"
} > "$T/qrel.yml"
start_exporter "$T/qrel.yml"
scrape "$T/s1.txt"
for s in every long short capped; do
  expect_metric "$T/s1.txt" 1 qrel_collector_up "source=\"$s\""
  expect_metric "$T/s1.txt" 0 qrel_queue_consumers "source=\"$s\"" 'queue="work"'
  expect_cmd "$s: the first scrape took its counts from the refresh of the slow part" \
    grep -qE "msg=\"rabbitmq collection done\" source=$s .*requests=2 .*consumers_read=refresh " "$T/exporter.log"
done

# A consumer subscribes (prefetch 1, never acknowledges), and three messages arrive: one is held
# by the consumer, two wait. Wait until the plugin itself counts both.
cat > "$T/consumer.py" <<'PYTHON'
import sys

import pika

conn = pika.BlockingConnection(
    pika.ConnectionParameters("127.0.0.1", int(sys.argv[1]), "/", pika.PlainCredentials("guest", "guest")))
ch = conn.channel()
ch.basic_qos(prefetch_count=1)
ch.basic_consume("work", lambda c, m, p, b: None, auto_ack=False)
open(sys.argv[2], "w").close()
ch.start_consuming()
PYTHON
"$PY" "$T/consumer.py" "$RABBIT_AMQP" "$T/consumer.ready" > "$T/consumer.log" 2>&1 &
PIDS+=("$!")
expect_cmd "the consumer subscribed" wait_for -i 0.1 30 "consumer.ready" test -f "$T/consumer.ready"
for i in 1 2 3; do publish "$i"; done
plugin_settled() {
  [ "$(plugin_val queue_consumer_count rabbitmq_detailed_queue_consumers)" = 1 ] &&
    [ "$(plugin_val queue_coarse_metrics rabbitmq_detailed_queue_messages_ready)" = 2 ] &&
    [ "$(plugin_val queue_coarse_metrics rabbitmq_detailed_queue_messages_unacked)" = 1 ]
}
expect_cmd "the plugin counts 1 consumer, 2 ready and 1 unacknowledged on work" \
  wait_for -i 0.2 30 "the plugin's figures of work" plugin_settled

scrape "$T/s2.txt"
w='queue="work"'
# 0s: the next scrape shows the consumer, as every scrape reads the counts
expect_metric "$T/s2.txt" 1 qrel_queue_consumers 'source="every"' "$w"
expect_metric "$T/s2.txt" 2 qrel_queue_messages 'source="every"' "$w" 'state="ready"'
# 1h: depth follows the broker, the count is the one read at the first scrape
expect_metric "$T/s2.txt" 2 qrel_queue_messages 'source="long"' "$w" 'state="ready"'
expect_metric "$T/s2.txt" 1 qrel_queue_messages 'source="long"' "$w" 'state="in_flight"'
expect_metric "$T/s2.txt" 0 qrel_queue_consumers 'source="long"' "$w"
# Each scrape of `every` read the counts; those of `long` after the first did not (one request,
# the depth family alone), and say how old the counts they served are.
expect_eq "every: scrapes that read the counts from the plugin" \
  "$(grep -c 'msg="rabbitmq collection done" source=every .*requests=1 .*consumers_read=plugin ' "$T/exporter.log")" 1
expect_cmd "long: the second scrape served the kept counts, with their age" \
  grep -qE 'msg="rabbitmq collection done" source=long .*requests=1 .*consumers_read=no consumers_age=[0-9]+[.][0-9]{3}' "$T/exporter.log"
# capped: the reply with the consumer family is over its cap: read again without it, the source
# is up with the broker's depth and the count read at the first scrape, and the warning says why
expect_metric "$T/s2.txt" 1 qrel_collector_up 'source="capped"'
expect_metric "$T/s2.txt" 2 qrel_queue_messages 'source="capped"' "$w" 'state="ready"'
expect_metric "$T/s2.txt" 0 qrel_queue_consumers 'source="capped"' "$w"
expect_cmd "capped: the failed read logged with its reason, the depth read again (2 requests)" \
  grep -qE 'msg="consumer count read failed: serving the last good ones" source=capped reason=limit ' "$T/exporter.log"
expect_cmd "capped: the debug log says the read failed" \
  grep -qE 'msg="rabbitmq collection done" source=capped .*requests=2 .*consumers_read=failed ' "$T/exporter.log"

# 2s: a later scrape reads the counts again and shows the consumer. Scrapes are polled until it
# does: how long that takes depends on the machine, the assertion is that it happens.
short_caught_up() {
  scrape "$T/s3.txt" && [ "$(mval "$T/s3.txt" qrel_queue_consumers 'source="short"' "$w")" = 1 ]
}
expect_cmd "short: the consumer shows once its counts are read again" \
  wait_for -i 0.5 60 "short's count of work to be 1" short_caught_up
expect_cmd "short: read by the plugin in a scrape of its own (not by a refresh)" \
  grep -qE 'msg="rabbitmq collection done" source=short .*requests=1 .*consumers_read=plugin ' "$T/exporter.log"
expect_metric "$T/s3.txt" 0 qrel_queue_consumers 'source="long"' "$w"
expect_metric "$T/s3.txt" 2 qrel_queue_messages 'source="long"' "$w" 'state="ready"'
stop_exporter

# --config.check: a bad value is refused at its line and column
printf 'sources:\n  - name: bad\n    kind: rabbitmq\n    url: http://127.0.0.1:1\n    username: u\n    password_env: QREL_TEST_RABBIT_PASS\n    consumers_interval: 30d\n' > "$T/bad.yml"
expect_cmd "consumers_interval: 30d refused by --config.check at its line and column" bash -c \
  "'$EXPORTER' --config.file='$T/bad.yml' --config.check 2>&1 | grep -qF 'bad.yml:7:25: consumers_interval: want a duration from 0 to 1d, got \"30d\"'"

finish
