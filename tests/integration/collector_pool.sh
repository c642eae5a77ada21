#!/usr/bin/env bash
# The collection pool against real Redis servers: with --collector.concurrency=1 and one server
# stopped (SIGSTOP: connections accepted, never answered), the stuck source holds the only thread
# until its deadline, the sources queued behind it are reported up 0 as "not started", and the
# scrape still ends by the sources' deadline. The next scrape serves them: they did not back off,
# and a source that failed last time waits behind the healthy ones. Each source keeps its
# connection between scrapes.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis OK
start_redis STUCK
for q in a b; do redis-cli -p "$OK" XGROUP CREATE "$q" g 0 MKSTREAM >/dev/null; done
cat > "$T/qrel.yml" <<YML
sources:
  - {name: stuck, kind: redis_stream, address: "127.0.0.1:$STUCK", streams: [{name: a}], timeout: 1s}
  - {name: ok1, kind: redis_stream, address: "127.0.0.1:$OK", streams: [{name: a}], timeout: 1s}
  - {name: ok2, kind: redis_stream, address: "127.0.0.1:$OK", streams: [{name: b}], timeout: 1s}
YML

out=$("$EXPORTER" --config.file="$T/qrel.yml" --collector.concurrency=0 2>&1) && rc=0 || rc=$?
expect_eq "--collector.concurrency=0 exits" "$rc" 2
expect_eq "and says what it wants" "$out" 'qrel_exporter: --collector.concurrency: want 1 to 10000, got "0"'

kill -STOP "$(cat "$T/redis-$STUCK/redis.pid")"
start_exporter "$T/qrel.yml" --collector.concurrency=1
# The sources' own timeout (1 s) is the deadline: a scrape-timeout header would only bound the
# wait, and a collection late only by a short header is not a failure of the source.
expect_scrape_ms "scrape time with the only thread stuck (ms)" "$T/m1.txt" 950 3000
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="stuck"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="ok1"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="ok2"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="ok1"' 'reason="timeout"'
expect_cmd "the log says why ok1 was not collected" grep -qF \
  'source=ok1 kind=redis_stream reason=timeout failures=0 err="collection not started before the deadline: all 1 collection threads were busy (--collector.concurrency)"' \
  "$T/exporter.log"

# stuck failed (timeout, back-off) and now waits behind the healthy ones, which did not back off.
sleep 0.2
scrape "$T/m2.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 1'
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="ok1"'
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="ok2"'
expect_metric "$T/m2.txt" 0 qrel_collector_up 'source="stuck"'

# Connections are kept: more scrapes open no new one to the healthy server.
before=$(redis-cli -p "$OK" INFO stats | tr -d '\r' | awk -F: '$1 == "total_connections_received" { print $2 }')
for i in 3 4 5; do scrape "$T/m$i.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 1'; done
after=$(redis-cli -p "$OK" INFO stats | tr -d '\r' | awk -F: '$1 == "total_connections_received" { print $2 }')
expect_eq "new connections to Redis over 3 scrapes (besides redis-cli's own)" $((after - before - 1)) 0
expect_metric "$T/m5.txt" 1 qrel_collector_up 'source="ok2"'
kill -CONT "$(cat "$T/redis-$STUCK/redis.pid")"
finish
