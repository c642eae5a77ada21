#!/usr/bin/env bash
# Bad brokers never cost the other sources: a hung Redis (DEBUG SLEEP) beside a healthy one, with
# Prometheus' 2 s scrape-timeout header, returns in under 2 s with the hung source at up 0 (not
# counted as a timeout: the header cut the wait, not the source's own timeout) and the healthy
# source's series present, while /-/healthy keeps answering in under 50 ms; a stopped
# Redis is up 0 with reason "connect" and is tried again after its back-off; a wrong password is
# up 0 with reason "auth" and the password appears nowhere: not in the output, the landing page,
# or the debug log.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis GOOD
start_redis HUNG --enable-debug-command yes
secret='correct-horse-7781'
wrong='wrong-battery-staple-4421'
start_redis LOCKED --requirepass "$secret"
redis-cli -p "$GOOD" XGROUP CREATE orders workers '$' MKSTREAM >/dev/null
redis-cli -p "$HUNG" XGROUP CREATE orders workers '$' MKSTREAM >/dev/null
printf '%s\n' "$wrong" > "$T/wrong.pass"
printf '%s\n' "$secret" > "$T/right.pass"
chmod 600 "$T"/*.pass

cat > "$T/qrel.yml" <<YML
global:
  timeout: 10s
sources:
$(redis_source good "$GOOD")
    streams: [{name: orders}]
$(redis_source hung "$HUNG")
    streams: [{name: orders}]
$(redis_source locked-wrong "$LOCKED")
    password_file: $T/wrong.pass
    streams: [{name: orders}]
$(redis_source locked-right "$LOCKED")
    password_env: QREL_TEST_REDIS_PASSWORD
    streams: [{name: orders}]
YML
QREL_TEST_REDIS_PASSWORD=$secret start_exporter "$T/qrel.yml"

# Warm up: every source connected once.
scrape "$T/m0.txt"
expect_metric "$T/m0.txt" 1 qrel_collector_up 'source="hung"'

redis-cli -p "$HUNG" DEBUG SLEEP 6 >/dev/null &
sleeper=$!
# Hung for certain before the scrape: a PING goes unanswered for 1 s (an idle Redis answers in a
# millisecond). The scrape then starts more than 4 s before Redis wakes, and waits 1.5 s.
asleep() { ! timeout 1 redis-cli -p "$HUNG" PING >/dev/null 2>&1; }
wait_for 20 "Redis to be in DEBUG SLEEP" asleep || true
scrape_ms "$T/m1.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 2' > "$T/m1.ms" &
scrape_pid=$!
# Three /-/healthy probes while the scrape waits (1.5 s): none is held behind it (each well under
# the second it would take then), and the fastest takes under 50 ms (about 2 ms on a quiet
# machine; one probe alone was seen at 89 ms with two CPU hogs, the scheduler's delay, not qrel's).
health_ms=()
for _ in 1 2 3; do
  sleep 0.3
  health_ms+=("$(curl -fsS -o /dev/null -w '%{time_total}' "http://$ADDR/-/healthy" | awk '{printf "%d", $1 * 1000}')")
done
wait "$scrape_pid" || true
took=$(cat "$T/m1.ms")
expect_between "scrape time with a hung broker, ms (header 2 s)" "$took" 0 1999
for ms in "${health_ms[@]}"; do
  expect_between "a /-/healthy during the hung scrape, ms" "$ms" 0 999
done
expect_between "the fastest /-/healthy during the hung scrape, ms" \
  "$(printf '%s\n' "${health_ms[@]}" | sort -n | head -1)" 0 49
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="hung"'
# Late for this scrape's 2 s header only: the collection keeps its own 10 s, so this is not
# counted against the source and starts no back-off (issue 15).
expect_metric "$T/m1.txt" 0 qrel_collector_errors_total 'source="hung"' 'reason="timeout"'
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="good"'
expect_metric "$T/m1.txt" 0 qrel_queue_messages 'source="good"' 'queue="orders"' 'state="in_flight"'
expect_absent "$T/m1.txt" qrel_queue_messages 'source="hung"'

# Once Redis wakes up, that same collection finishes and the source is up for the next scrape.
wait "$sleeper"
sleep 0.2
scrape "$T/m1b.txt"
expect_metric "$T/m1b.txt" 1 qrel_collector_up 'source="hung"'
expect_metric "$T/m1b.txt" 0 qrel_collector_errors_total 'source="hung"' 'reason="timeout"'

# Stopped: connect errors, then after the back-off a fresh attempt; back up once it returns.
redis-cli -p "$HUNG" shutdown nosave >/dev/null 2>&1 || true
sleep 0.6  # past the 0.5 s back-off after one failure, so the next scrape asks the broker again
scrape "$T/m2.txt"
expect_metric "$T/m2.txt" 0 qrel_collector_up 'source="hung"'
expect_metric "$T/m2.txt" 1 qrel_collector_errors_total 'source="hung"' 'reason="connect"'
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="good"'
expect_cmd "the log names the reason" grep -q 'source=hung kind=redis_stream reason=connect' "$T/exporter.log"
redis-server --bind 127.0.0.1 --port "$HUNG" --daemonize yes --enable-debug-command yes --pidfile "$T/redis-$HUNG/redis.pid" --save '' --appendonly no \
  --dir "$T" --logfile "$T/hung2.log" >/dev/null
# Once it answers again, scrapes until the source is retried (after its back-off: 0.5 s after a
# first failure, 1 s after a second) and up.
awake() { [ "$(redis-cli -p "$HUNG" PING 2>/dev/null)" = PONG ]; }
wait_for 20 "the restarted Redis to answer" awake || true
up_again() { scrape "$T/m3.txt" && [ "$(mval "$T/m3.txt" qrel_collector_up 'source="hung"')" = 1 ]; }
wait_for -i 0.2 30 "the restarted Redis to be up in a scrape" up_again || true
expect_metric "$T/m3.txt" 1 qrel_collector_up 'source="hung"'

# Wrong password: reason auth, and the secrets are nowhere.
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="locked-wrong"'
# Counted on the warm-up scrape, its one attempt so far: by m1 the 0.5 s back-off may have run out
# (a slow ASan build) and a second attempt counted a second auth error.
expect_metric "$T/m0.txt" 1 qrel_collector_errors_total 'source="locked-wrong"' 'reason="auth"'
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="locked-right"'
curl -fsS "http://$ADDR/" -o "$T/landing.html"
expect_cmd "the landing page shows the auth failure" grep -q 'authentication failed' "$T/landing.html"
expect_no_password "$wrong" "$secret" -- "$T"/m*.txt "$T/landing.html" "$T/exporter.log"

finish
