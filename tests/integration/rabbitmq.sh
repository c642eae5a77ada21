#!/usr/bin/env bash
# The rabbitmq collector against a real RabbitMQ 3.10 node (management + prometheus plugins): a
# queue with a dead-letter exchange and a real AMQP consumer that nacks and holds messages give
# exactly the expected series, from the management API alone and with the plugin for depth; DLQs
# are found through direct, topic, fanout (policy) and default-exchange dead-letter exchanges; a
# user with only the `monitoring` tag and no resource permissions suffices; the slow part is
# cached and served when its refresh fails; failures (down, hanging, 401, size cap, plugin
# disabled at runtime) give up 0 with their reason while a healthy source still reports; the
# consumer count follows the API's as the consumer attaches and leaves, and qrel check then finds
# the backlog nobody consumes.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/rabbitmq.sh
. "$QREL_SOURCE_DIR/tests/lib/rabbitmq.sh"
PY=/usr/bin/python3 # Debian's python3-pika imports only there

rabbit_test_start
api_queue() { # api_queue QUEUE FIELD: a figure the management API has for QUEUE of /
  curl -fsS -u guest:guest "$API/queues/%2F/$1?columns=$2" |
    "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"
}
api_stat() { # api_stat QUEUE FIELD: a count of QUEUE's message_stats in the management API
  curl -fsS -u guest:guest "$API/queues/%2F/$1?columns=message_stats" |
    "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["message_stats"].get(sys.argv[1], 0))' "$2"
}

# The monitoring user: tag `monitoring`, access to the vhost with empty permission patterns.
MON_PASS=s3cret-$$-mon
api PUT /users/qrel "{\"password\":\"$MON_PASS\",\"tags\":\"monitoring\"}"
api PUT /permissions/%2F/qrel '{"configure":"^$","write":"^$","read":"^$"}'
printf '%s\n' "$MON_PASS" > "$T/mon.pass"

# orders -> orders.dlx (direct, key orders) -> orders.dlq
api PUT /exchanges/%2F/orders.dlx '{"type":"direct","durable":true}'
api PUT /queues/%2F/orders.dlq '{"durable":true}'
api POST /bindings/%2F/e/orders.dlx/q/orders.dlq '{"routing_key":"orders"}'
api PUT /queues/%2F/orders '{"durable":true,"arguments":{"x-dead-letter-exchange":"orders.dlx","x-dead-letter-routing-key":"orders"}}'
# jobs (quorum) gets its DLX and delivery-limit from a policy; jobs.dlx is a fanout.
api PUT /exchanges/%2F/jobs.dlx '{"type":"fanout","durable":true}'
api PUT /queues/%2F/jobs.dlq '{"durable":true}'
api POST /bindings/%2F/e/jobs.dlx/q/jobs.dlq '{"routing_key":"ignored"}'
api PUT /queues/%2F/jobs '{"durable":true,"arguments":{"x-queue-type":"quorum"}}'
api PUT /policies/%2F/jobs-dl '{"pattern":"^jobs$","definition":{"dead-letter-exchange":"jobs.dlx","delivery-limit":2},"apply-to":"queues"}'
# events.a -> ev.dlx (topic) without a dead-letter routing key: the queue name is the key.
api PUT /exchanges/%2F/ev.dlx '{"type":"topic","durable":true}'
api PUT /queues/%2F/ev.dlq '{"durable":true}'
api PUT /queues/%2F/ev.other '{"durable":true}'
api POST /bindings/%2F/e/ev.dlx/q/ev.dlq '{"routing_key":"events.#"}'
api POST /bindings/%2F/e/ev.dlx/q/ev.other '{"routing_key":"other.*"}'
api PUT /queues/%2F/events.a '{"durable":true,"arguments":{"x-dead-letter-exchange":"ev.dlx"}}'
# plain -> the default exchange, key plain.dlq; timed has its own consumer timeout (60 s).
api PUT /queues/%2F/plain.dlq '{"durable":true}'
api PUT /queues/%2F/plain '{"durable":true,"arguments":{"x-dead-letter-exchange":"","x-dead-letter-routing-key":"plain.dlq"}}'
api PUT /queues/%2F/timed '{"durable":true,"arguments":{"x-consumer-timeout":60000}}'
# Another vhost with a queue of the same name: kept apart by the vhost label, or left out.
api PUT /vhosts/v2 '{}'
api PUT /permissions/v2/guest '{"configure":".*","write":".*","read":".*"}'
api PUT /permissions/v2/qrel '{"configure":"^$","write":"^$","read":"^$"}'
api PUT /queues/v2/orders '{"durable":true}'

NOW=$(date +%s)
publish() { # publish VHOST QUEUE ID [TIMESTAMP]
  local props='{}'
  [ -n "${4:-}" ] && props="{\"timestamp\":$4}"
  api POST "/exchanges/$1/amq.default/publish" \
    "{\"routing_key\":\"$2\",\"payload\":\"{\\\"id\\\":$3}\",\"payload_encoding\":\"string\",\"properties\":$props}"
}
publish %2F orders 1 $((NOW - 300))
publish %2F orders 3 $((NOW - 200))
publish %2F orders 4 $((NOW - 30))
publish %2F orders 5
for i in 6 7 8 9 10; do publish %2F orders "$i" $((NOW - 1)); done
publish %2F jobs 1
publish %2F plain 1 $((NOW - 100))
# A producer's timestamp of 1 (1970; a hostile or broken producer): no age of 1.8e9 s, but a
# skipped entry of timed, the one queue whose head age is asserted nowhere else.
publish %2F timed 1 1
publish v2 orders 1
publish v2 orders 2

"$PY" "$QREL_SOURCE_DIR/tests/lib/rabbitmq_consumer.py" "$RABBIT_AMQP" "$T/consumer.ready" \
  > "$T/consumer.log" 2>&1 &
CONSUMER_PID=$!
PIDS+=("$CONSUMER_PID")
wait_for -i 0.1 30 "the consumer to write consumer.ready" test -f "$T/consumer.ready" || true
expect_cmd "consumer saw the expected deliveries" test -f "$T/consumer.ready"

# mon_source NAME PORT [PASSWORD_FILE]: a source NAME of the monitoring user qrel (password in
# $T/mon.pass unless given) reading the management API on PORT.
mon_source() {
  printf '  - name: %s\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n' "$1" "$2"
  printf '    username: qrel\n    password_file: %s\n' "${3:-$T/mon.pass}"
}

write_config() { # write_config FILE [extra keys for both sources]
  cat > "$1" <<YML
sources:
$(mon_source mgmt "$RABBIT_MGMT")
    vhosts: ["/"]
    consumer_timeout: 15m
$2
  - name: prom
    kind: rabbitmq
    url: http://127.0.0.1:$RABBIT_MGMT/
    prometheus_url: http://127.0.0.1:$RABBIT_PROM
    username: qrel
    password_file: $T/mon.pass
    vhosts: ["/"]
    consumer_timeout: 15m
$2
YML
}
write_config "$T/qrel.yml" ""

# The management API's counters and queue lengths move in steps of about 5 s, each at its own
# pace (a loaded machine showed jobs' dead letter counted while its ready count still read 1):
# scrape until every figure that comes from those stats has caught up, for both sources.
t0=$(now_ms)
stats_settled() {
  "$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.log" || true
  [ "$(mval "$T/m.txt" qrel_redeliveries_total 'source="prom"' 'queue="orders"')" = 3 ] &&
    [ "$(mval "$T/m.txt" qrel_redeliveries_total 'source="mgmt"' 'queue="jobs"')" = 2 ] &&
    [ "$(mval "$T/m.txt" qrel_dead_letter_messages 'source="mgmt"' 'queue="jobs"')" = 1 ] &&
    [ "$(mval "$T/m.txt" qrel_messages_consumed_total 'source="mgmt"' 'queue="orders"')" = 5 ] &&
    [ "$(mval "$T/m.txt" qrel_messages_consumed_total 'source="prom"' 'queue="orders"')" = 5 ] || return 1
  local s
  for s in mgmt prom; do
    [ "$(mval "$T/m.txt" qrel_queue_messages "source=\"$s\"" 'queue="jobs"' 'state="ready"')" = 0 ] &&
      [ "$(mval "$T/m.txt" qrel_queue_messages "source=\"$s\"" 'queue="orders"' 'state="ready"')" = 0 ] &&
      [ "$(mval "$T/m.txt" qrel_queue_messages "source=\"$s\"" 'queue="orders"' 'state="in_flight"')" = 2 ] &&
      [ "$(mval "$T/m.txt" qrel_queue_messages "source=\"$s\"" 'queue="timed"' 'state="ready"')" = 1 ] || return 1
  done
}
wait_for -i 0.5 40 "the redeliveries and dead letters in the management API's stats" stats_settled || true
echo "# stats settled after $(( $(now_ms) - t0 )) ms"

for s in mgmt prom; do
  o="source=\"$s\",kind=\"rabbitmq\",queue=\"orders\",vhost=\"/\""
  expect_metric "$T/m.txt" 1 qrel_collector_up "source=\"$s\""
  expect_metric "$T/m.txt" 0 qrel_queue_messages "$o" 'state="ready"'
  expect_metric "$T/m.txt" 2 qrel_queue_messages "$o" 'state="in_flight"'
  expect_metric "$T/m.txt" 3 qrel_redeliveries_total "$o"
  # Consumed: the consumer acknowledged ids 6 to 10 (1 and 3 it rejected, 4 and 5 it holds).
  expect_metric "$T/m.txt" 5 qrel_messages_consumed_total "$o"
  expect_metric "$T/m.txt" "$(api_stat orders ack)" qrel_messages_consumed_total "$o"
  expect_absent "$T/m.txt" qrel_messages_dead_lettered_total # RabbitMQ counts them per node only
  expect_metric "$T/m.txt" 900 qrel_lease_timeout_seconds "$o"
  expect_absent "$T/m.txt" qrel_max_deliveries "$o"
  # The unacknowledged head (id 4) was published 30 s before NOW.
  expect_between "$s: orders oldest age" \
    "$(mval "$T/m.txt" qrel_queue_oldest_message_age_seconds "$o")" 30 $((31 + $(date +%s) - NOW))
  expect_metric "$T/m.txt" 2 qrel_dead_letter_messages "$o" 'dead_letter_queue="orders.dlq"'
  # orders.dlq's head is id 3 (rejected before id 1's second delivery), published at NOW-200.
  expect_between "$s: orders.dlq oldest age" \
    "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds "$o" 'dead_letter_queue="orders.dlq"')" \
    200 $((201 + $(date +%s) - NOW))
  expect_metric "$T/m.txt" 2 qrel_queue_messages "source=\"$s\"" 'queue="orders.dlq"' 'state="ready"'

  j="source=\"$s\",kind=\"rabbitmq\",queue=\"jobs\",vhost=\"/\""
  expect_metric "$T/m.txt" 3 qrel_max_deliveries "$j"
  expect_metric "$T/m.txt" 2700 qrel_retry_horizon_seconds "$j"
  expect_metric "$T/m.txt" 2 qrel_redeliveries_total "$j"
  expect_metric "$T/m.txt" 0 qrel_messages_consumed_total "$j" # every delivery returned
  expect_metric "$T/m.txt" 0 qrel_queue_messages "$j" 'state="ready"'
  expect_metric "$T/m.txt" 1 qrel_dead_letter_messages "$j" 'dead_letter_queue="jobs.dlq"'
  expect_absent "$T/m.txt" qrel_dead_letter_oldest_age_seconds "$j" # no timestamp was set

  expect_metric "$T/m.txt" 0 qrel_dead_letter_messages "source=\"$s\"" 'queue="events.a"' 'dead_letter_queue="ev.dlq"'
  expect_absent "$T/m.txt" qrel_dead_letter_messages "source=\"$s\"" 'queue="events.a"' 'dead_letter_queue="ev.other"'
  expect_metric "$T/m.txt" 0 qrel_dead_letter_messages "source=\"$s\"" 'queue="plain"' 'dead_letter_queue="plain.dlq"'
  expect_metric "$T/m.txt" 1 qrel_queue_messages "source=\"$s\"" 'queue="plain"' 'state="ready"'
  expect_between "$s: plain oldest age" \
    "$(mval "$T/m.txt" qrel_queue_oldest_message_age_seconds "source=\"$s\"" 'queue="plain"')" 100 $((101 + $(date +%s) - NOW))
  expect_metric "$T/m.txt" 60 qrel_lease_timeout_seconds "source=\"$s\"" 'queue="timed"'
  expect_absent "$T/m.txt" qrel_dead_letter_messages "source=\"$s\"" 'queue="timed"'
  expect_absent "$T/m.txt" qrel_queue_oldest_message_age_seconds "source=\"$s\"" 'queue="timed"'
  expect_metric "$T/m.txt" 1 qrel_skipped_entries "source=\"$s\"" 'queue="timed"' 'reason="bad_timestamp"'
  expect_absent "$T/m.txt" qrel_queue_messages "source=\"$s\"" 'vhost="v2"'
  expect_between "$s: sample age (fetched in this scrape)" \
    "$(mval "$T/m.txt" qrel_sample_age_seconds "source=\"$s\"")" 0 5
  # The consumer's two subscriptions (orders, jobs), none on plain: as the API counts them.
  for q in orders:1 jobs:1 plain:0; do
    expect_metric "$T/m.txt" "${q#*:}" qrel_queue_consumers "source=\"$s\"" "queue=\"${q%%:*}\"" 'vhost="/"'
  done
done
for q in orders:1 jobs:1 plain:0; do
  expect_eq "the management API counts ${q#*:} consumer(s) on ${q%%:*}" "$(api_queue "${q%%:*}" consumers)" "${q#*:}"
done
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"
expect_cmd "no password in the output or log" bash -c "! grep -q '$MON_PASS' '$T/m.txt' '$T/scrape.log'"
# The management API read through the fault proxy: its HTTP replies cut into 1- and 7-byte pieces
# must give the series read directly (the stats settled above; ages measured a moment apart).
expect_same_via_proxy "$T/qrel.yml" mgmt "127.0.0.1:$RABBIT_MGMT"

# Every vhost, and queue selection by name and pattern.
cat > "$T/sel.yml" <<YML
sources:
  - name: sel
    kind: rabbitmq
    url: http://127.0.0.1:$RABBIT_MGMT
    username: guest
    password_env: QREL_TEST_RABBIT_PASS
    queues: [timed]
    queue_pattern: "ord*"
YML
QREL_TEST_RABBIT_PASS=guest "$QREL" scrape --config.file="$T/sel.yml" > "$T/sel.txt"
expect_eq "queues selected (orders, orders.dlq in two vhosts, timed)" \
  "$(grep '^qrel_queue_messages{' "$T/sel.txt" | grep 'state="ready"' | sed -E 's/.*queue="([^"]*)",vhost="([^"]*)".*/\2:\1/' | sort | tr '\n' ' ')" \
  "/:orders /:orders.dlq /:timed v2:orders "
expect_metric "$T/sel.txt" 2 qrel_queue_messages 'queue="orders",vhost="v2"' 'state="ready"'
expect_absent "$T/sel.txt" qrel_lease_timeout_seconds 'queue="orders",vhost="/"' # no consumer_timeout

# exclude: the consumer's server-named queues (amq.gen-*) and exclude_vhosts: v2 are left out
# and nothing else is, against a read of every queue without them (re-read until the anonymous
# queues have stats: a queue without stats is left out whatever the exclude says).
all_queues() { # all_queues FILE: "vhost:queue " of every ready series, sorted
  grep '^qrel_queue_messages{' "$1" | grep 'state="ready"' |
    sed -E 's/.*queue="([^"]*)",vhost="([^"]*)".*/\2:\1/' | sort | tr '\n' ' '
}
excl_config() { # excl_config FILE [exclude keys]
  printf 'sources:\n  - name: all\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n' "$RABBIT_MGMT" > "$1"
  printf '    username: guest\n    password_env: QREL_TEST_RABBIT_PASS\n%s' "${2:-}" >> "$1"
}
excl_config "$T/all.yml"
excl_config "$T/excl.yml" $'    exclude: ["amq.gen-*"]\n    exclude_vhosts: ["v2"]\n'
anon_listed() {
  QREL_TEST_RABBIT_PASS=guest "$QREL" scrape --config.file="$T/all.yml" > "$T/all.txt" 2>/dev/null &&
    [ "$(all_queues "$T/all.txt" | grep -o '/:amq\.gen-' | wc -l)" -eq 2 ]
}
wait_for -i 0.5 60 "the server-named queues to have stats" anon_listed || true
QREL_TEST_RABBIT_PASS=guest "$QREL" scrape --config.file="$T/excl.yml" > "$T/excl.txt"
expect_eq "the read without exclude has both server-named queues" \
  "$(all_queues "$T/all.txt" | grep -o '/:amq\.gen-' | wc -l)" 2
expect_eq "exclude leaves out amq.gen-* and vhost v2, and nothing else" \
  "$(all_queues "$T/excl.txt")" \
  "$(all_queues "$T/all.txt" | tr ' ' '\n' | grep -v -e '^/:amq\.gen-' -e '^v2:' | tr '\n' ' ')"
expect_metric "$T/excl.txt" 3 qrel_excluded_objects 'source="all"' 'object="queue"'
expect_absent "$T/all.txt" qrel_excluded_objects
expect_cmd "a regex in exclude fails --config.check at its line and column" bash -c \
  "printf '    exclude: [\"reply.*\"]\n' >> '$T/all.yml'; QREL_TEST_RABBIT_PASS=guest '$EXPORTER' --config.file='$T/all.yml' --config.check 2>&1 | grep -qF 'all.yml:7:15: exclude: \"reply.*\" looks like a regular expression'"

# A queue declared a moment ago has no stats yet: left out, not reported as 0. Checked only when
# the API, asked after the scrape, still shows no stats (they never disappear once there).
api PUT /queues/%2F/fresh.q '{"durable":true}'
QREL_TEST_RABBIT_PASS=guest "$QREL" scrape --config.file="$T/sel.yml" --log.level=debug > /dev/null 2> "$T/fresh.log" || true
write_config "$T/fresh.yml" ""
"$QREL" scrape --config.file="$T/fresh.yml" --source=mgmt > "$T/fresh.txt" 2>/dev/null || true
if curl -fsS -u guest:guest "$API/queues/%2F/fresh.q" | grep -q '"messages"'; then
  echo "# fresh.q had stats already: the no-stats case was not observable this run"
else
  expect_absent "$T/fresh.txt" qrel_queue_messages 'queue="fresh.q"'
fi

# ---- the exporter: cached slow part, sample age, a failed refresh ----
# metadata_interval 10 s: the cached phase below (c1 to the last scrape for the four dead
# letters) takes about 2 s on a quiet machine; the cache must not be refreshed within it.
write_config "$T/cache.yml" "    metadata_interval: 10s"
start_exporter "$T/cache.yml"
c1_sent=$(now_ms)
scrape "$T/c1.txt"
publish %2F orders.dlq 99
publish %2F orders.dlq 98
sleep 1.2
scrape "$T/c2.txt"
for s in mgmt prom; do
  expect_metric "$T/c2.txt" 1 qrel_collector_up "source=\"$s\""
  expect_between "$s: sample age grows while cached" "$(mval "$T/c2.txt" qrel_sample_age_seconds "source=\"$s\"")" 1.2 9.9
  expect_metric "$T/c2.txt" 3 qrel_redeliveries_total "source=\"$s\"" 'queue="orders"'
done
# Depth is fresh on every scrape: the two new dead letters show before the cache refreshes.
four_dead() {
  [ "$(mval "$T/c2.txt" qrel_dead_letter_messages 'source="prom"' 'queue="orders"')" = 4 ] &&
    [ "$(mval "$T/c2.txt" qrel_dead_letter_messages 'source="mgmt"' 'queue="orders"')" = 4 ] && return 0
  sleep 0.3
  scrape "$T/c2.txt"
  return 1
}
wait_for -i 0 20 "four dead letters of orders in both sources" four_dead || true
expect_metric "$T/c2.txt" 4 qrel_dead_letter_messages 'source="prom"' 'queue="orders"' 'dead_letter_queue="orders.dlq"'
expect_metric "$T/c2.txt" 4 qrel_dead_letter_messages 'source="mgmt"' 'queue="orders"' 'dead_letter_queue="orders.dlq"'
expect_between "prom: sample age still from the first refresh" "$(mval "$T/c2.txt" qrel_sample_age_seconds 'source="prom"')" 1.2 10.0

# The monitoring user's password changes: the next refresh fails with auth. prom still has depth
# (the plugin needs no password) and serves the old cache with a warning; mgmt's depth needs the
# API, so it is down.
api PUT /users/qrel '{"password":"changed-elsewhere","tags":"monitoring"}'
sleep 10.2 # past the interval however recent the last refresh (a longer wait only makes it surer)
scrape "$T/c3.txt"
expect_metric "$T/c3.txt" 1 qrel_collector_up 'source="prom"'
expect_between "prom: sample age past the interval after a failed refresh (the first refresh's)" \
  "$(mval "$T/c3.txt" qrel_sample_age_seconds 'source="prom"')" 10.2 "$(( ($(now_ms) - c1_sent) / 1000 + 1 ))"
expect_metric "$T/c3.txt" 3 qrel_redeliveries_total 'source="prom"' 'queue="orders"'
expect_metric "$T/c3.txt" 3 qrel_max_deliveries 'source="prom"' 'queue="jobs"'
expect_metric "$T/c3.txt" 0 qrel_collector_up 'source="mgmt"'
expect_metric "$T/c3.txt" 1 qrel_collector_errors_total 'source="mgmt"' 'reason="auth"'
expect_cmd "refresh failure logged with its reason" \
  grep -q 'msg="metadata refresh failed: serving the last good one" source=prom reason=auth' "$T/exporter.log"
expect_cmd "no password in the exporter log" bash -c "! grep -qe '$MON_PASS' -e changed-elsewhere '$T/exporter.log'"
stop_exporter
api PUT /users/qrel "{\"password\":\"$MON_PASS\",\"tags\":\"monitoring\"}"

# ---- faults: each source fails alone, with its reason, within its timeout ----
DEAD=$(free_port)
# a listener that accepts and never answers (start_http_stub waits until it listens)
start_http_stub HANG hang
WRONG_PASS=not-it-$$-x
printf '%s\n' "$WRONG_PASS" > "$T/wrong.pass"
cat > "$T/faults.yml" <<YML
sources:
$(mon_source good "$RABBIT_MGMT")
$(mon_source down "$DEAD")
$(mon_source hang "$HANG")
    timeout: 2s
$(mon_source badauth "$RABBIT_MGMT" "$T/wrong.pass")
$(mon_source capped "$RABBIT_MGMT")
    max_response_bytes: 1024
$(mon_source promdown "$RABBIT_MGMT")
    prometheus_url: http://127.0.0.1:$DEAD
YML
start_exporter "$T/faults.yml"
expect_scrape_ms "scrape with a hanging source took (ms)" "$T/f.txt" 1900 5000
expect_metric "$T/f.txt" 1 qrel_collector_up 'source="good"'
expect_metric "$T/f.txt" 2 qrel_queue_messages 'source="good"' 'queue="orders",vhost="/"' 'state="in_flight"'
for f in down:connect hang:timeout badauth:auth capped:limit promdown:connect; do
  expect_metric "$T/f.txt" 0 qrel_collector_up "source=\"${f%%:*}\""
  expect_metric "$T/f.txt" 1 qrel_collector_errors_total "source=\"${f%%:*}\"" "reason=\"${f#*:}\""
  expect_cmd "${f%%:*}: failure logged with reason ${f#*:}" \
    grep -qE "source=${f%%:*} .*reason=${f#*:}|reason=${f#*:}.* source=${f%%:*}" "$T/exporter.log"
done
expect_cmd "no password in the fault log or output" bash -c "! grep -qe '$MON_PASS' -e '$WRONG_PASS' '$T/exporter.log' '$T/f.txt'"
stop_exporter

# ---- the plugin disabled at runtime: mgmt-only keeps working, the plugin source says connect ----
t0=$(now_ms)
rabbit_ctl "$T/rabbit" rabbitmq-plugins disable rabbitmq_prometheus > "$T/plugins.log" 2>&1
echo "# rabbitmq-plugins disable took $(( $(now_ms) - t0 )) ms"
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/np.txt" 2> "$T/np.log" || true
expect_metric "$T/np.txt" 1 qrel_collector_up 'source="mgmt"'
expect_metric "$T/np.txt" 2 qrel_queue_messages 'source="mgmt"' 'queue="orders",vhost="/"' 'state="in_flight"'
expect_metric "$T/np.txt" 0 qrel_collector_up 'source="prom"'
expect_metric "$T/np.txt" 1 qrel_collector_errors_total 'source="prom"' 'reason="connect"'

# ---- a delivery limit with nowhere to go: RabbitMQ drops the message, qrel check says so ----
# nodlx: a quorum queue with x-delivery-limit 3 and no dead-letter exchange (RabbitMQ 4 gives
# every quorum queue a limit of 20). jobs has a limit and a DLX, timed neither (a warning only).
# A new queue is listed once the management API has its first stats (about 5 s): wait for it.
api PUT /queues/%2F/nodlx '{"durable":true,"arguments":{"x-queue-type":"quorum","x-delivery-limit":3}}'
printf 'sources:\n  - name: limits\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n    username: guest\n    password_env: QREL_TEST_RABBIT_PASS\n    queues: [nodlx, jobs, timed]\n' \
  "$RABBIT_MGMT" > "$T/limits.yml"
limits_read() {
  rc=0
  QREL_TEST_RABBIT_PASS=guest "$QREL" check --config.file="$T/limits.yml" > "$T/limits.txt" 2>&1 || rc=$?
  grep -q 'queues=3;' "$T/limits.txt"
}
expect_cmd "qrel check reads nodlx once it has stats" wait_for -i 0.5 60 "nodlx listed" limits_read
expect_eq "qrel check: a delivery limit without a dead-letter exchange is critical (exit 2)" "$rc" 2
expect_cmd "nodlx: the limit (3, so 4 deliveries), what is lost and the fix" grep -qF \
  'CRITICAL limits nodlx: a delivery limit of 4 and no dead-letter target: a message delivered that many times is dropped, its work lost with nothing to alert on, and the redelivery figures fall back as if it had recovered; set a dead-letter exchange (x-dead-letter-exchange, by policy) so that RabbitMQ dead-letters the message instead [delivery_limit_drops]' \
  "$T/limits.txt"
expect_eq "only nodlx drops (jobs dead-letters; timed has no limit, only the warning)" \
  "$(grep -e '\[delivery_limit_drops\]$' -e '\[no_dead_letter_queue\]$' "$T/limits.txt" | sed -E 's/^([A-Z]+) limits ([a-z.]+):.*\[([a-z_]+)\]$/\1 \2 \3/' | sort | tr '\n' ' ')" \
  "CRITICAL nodlx delivery_limit_drops WARNING timed no_dead_letter_queue "

# ---- the consumer detached: orders gets its held messages back as ready, and no consumer ----
kill "$CONSUMER_PID"
# Once the API counts no consumer and nothing unacknowledged (the plugin is off by now: the
# management API's source only), qrel's figures must be the API's.
detached() {
  # both of the consumer's queues: the API's per-queue stats do not update together
  [ "$(api_queue orders consumers)" = 0 ] && [ "$(api_queue jobs consumers)" = 0 ] &&
    [ "$(api_queue orders messages_unacknowledged)" = 0 ] || return 1
  "$QREL" scrape --config.file="$T/qrel.yml" > "$T/d.txt" 2>/dev/null || true
  ready=$(api_queue orders messages_ready)
  [ "$(mval "$T/d.txt" qrel_queue_consumers 'source="mgmt"' 'queue="orders"')" = 0 ] &&
    [ "$(mval "$T/d.txt" qrel_queue_consumers 'source="mgmt"' 'queue="jobs"')" = 0 ] &&
    [ "$(mval "$T/d.txt" qrel_queue_messages 'source="mgmt"' 'queue="orders"' 'state="ready"')" = "$ready" ]
}
expect_cmd "orders: no consumer, its messages ready, as the API says" wait_for -i 0.5 30 "the consumer's exit in the stats" detached
expect_cmd "orders has messages ready ($ready)" test "$ready" -ge 2
expect_metric "$T/d.txt" 0 qrel_queue_consumers 'source="mgmt"' 'queue="jobs"'
printf 'sources:\n  - name: idle\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n    username: guest\n    password_env: QREL_TEST_RABBIT_PASS\n    vhosts: ["/"]\n    queues: [orders, jobs]\n' \
  "$RABBIT_MGMT" > "$T/idle.yml"
QREL_TEST_RABBIT_PASS=guest "$QREL" check --config.file="$T/idle.yml" > "$T/idle.txt" 2>&1 || true
expect_eq "qrel check: orders has a backlog and no consumer, with the fix (and jobs, nothing ready, none)" \
  "$(grep '\[backlog_without_consumer\]$' "$T/idle.txt")" \
  "WARNING idle orders: $ready messages ready and no consumer: nothing takes them, so the backlog only grows and ages; start the workers that consume this queue (a basic.consume on it, in its vhost), or delete the queue if nothing should read it [backlog_without_consumer]"
# ---- retention: a queue's message TTL against its dead-letter queue's (no TTL: +Inf) ----
# orders keeps messages 2 h and orders.dlq 1 h (policies): its dead letters expire unread. plain
# and plain.dlq have no TTL: fine. ttl.q has x-message-ttl 10 min and a policy of 5 min (RabbitMQ
# applies the lower), its ttl.dlq 20 min: fine.
api PUT /policies/%2F/orders-ttl '{"pattern":"^orders$","definition":{"message-ttl":7200000},"apply-to":"queues"}'
api PUT /policies/%2F/orders-dlq-ttl '{"pattern":"^orders\\.dlq$","definition":{"message-ttl":3600000},"apply-to":"queues"}'
api PUT /queues/%2F/ttl.dlq '{"durable":true,"arguments":{"x-message-ttl":1200000}}'
api PUT /queues/%2F/ttl.q '{"durable":true,"arguments":{"x-message-ttl":600000,"x-dead-letter-exchange":"","x-dead-letter-routing-key":"ttl.dlq"}}'
api PUT /policies/%2F/ttl-q '{"pattern":"^ttl\\.q$","definition":{"message-ttl":300000},"apply-to":"queues"}'
printf 'sources:\n  - name: ret\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n    username: guest\n    password_env: QREL_TEST_RABBIT_PASS\n    queues: [orders, plain, ttl.q]\n' \
  "$RABBIT_MGMT" > "$T/ret.yml"
ret_read() { # once ttl.q has its first stats and both policies apply
  QREL_TEST_RABBIT_PASS=guest "$QREL" scrape --config.file="$T/ret.yml" > "$T/ret.prom" 2>&1 &&
    grep -q '^qrel_dead_letter_retention_seconds{.*queue="ttl.q"' "$T/ret.prom" &&
    grep -q '^qrel_dead_letter_retention_seconds{.*queue="orders".* 3600$' "$T/ret.prom"
}
expect_cmd "qrel scrape reads the TTLs once ttl.q has stats" wait_for -i 0.5 60 "ttl.q listed" ret_read
# The broker's own figures: the effective policy's message-ttl, the lower of argument and policy.
ttl_of() { # ttl_of QUEUE: seconds, from GET /api/queues (+Inf: none, RabbitMQ keeps messages)
  curl -fsS -u guest:guest "$API/queues/%2F/$1" | jq -r '[.arguments["x-message-ttl"], .effective_policy_definition["message-ttl"]]
    | map(select(. != null)) | if length == 0 then "+Inf" else min / 1000 end'
}
r='source="ret"'
expect_metric "$T/ret.prom" "$(ttl_of orders)" qrel_queue_retention_seconds "$r" 'queue="orders"'
expect_metric "$T/ret.prom" "$(ttl_of orders.dlq)" qrel_dead_letter_retention_seconds "$r" 'queue="orders"' 'dead_letter_queue="orders.dlq"'
expect_metric "$T/ret.prom" "$(ttl_of ttl.q)" qrel_queue_retention_seconds "$r" 'queue="ttl.q"'
expect_metric "$T/ret.prom" "$(ttl_of ttl.dlq)" qrel_dead_letter_retention_seconds "$r" 'queue="ttl.q"' 'dead_letter_queue="ttl.dlq"'
expect_metric "$T/ret.prom" "$(ttl_of plain)" qrel_queue_retention_seconds "$r" 'queue="plain"'
expect_metric "$T/ret.prom" "$(ttl_of plain.dlq)" qrel_dead_letter_retention_seconds "$r" 'queue="plain"' 'dead_letter_queue="plain.dlq"'
QREL_TEST_RABBIT_PASS=guest "$QREL" check --config.file="$T/ret.yml" > "$T/ret.txt" 2>&1 || true
expect_eq "dead_letters_expire_unread: orders only" \
  "$(sed -nE 's/^WARNING ret ([a-z.]+): .*\[dead_letters_expire_unread\]$/\1/p' "$T/ret.txt" | tr '\n' ' ')" "orders "
expect_cmd "orders: both TTLs, what is lost and the fix" grep -qF \
  "WARNING ret orders: dead-letter queue orders.dlq keeps messages 1h, no longer than the queue keeps them (2h): a message dead-lettered late in its life expires there before anyone reads it, lost with the error that killed it; RabbitMQ restarts a message's TTL in the dead-letter queue, so give the dead-letter queue no message-ttl, or one longer than the queue's by the time you need to read them [dead_letters_expire_unread]" \
  "$T/ret.txt"

finish
