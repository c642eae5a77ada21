#!/usr/bin/env bash
# Issue 15, the HTTP server under hostile clients (tests/lib/hostile_client.py): 600 slowloris
# sockets leave /-/healthy answering within 1 s; one address cannot hold more than 1,024
# connections; 1,000 concurrent scrapes all get an HTTP status (503 with Retry-After when shed)
# and the log stays short, and qrel_http_requests_total counts the 503s; 10 scrapes whose X-Prometheus-Scrape-Timeout-Seconds is 1e-9 leave the
# next plain scrape's source up with no timeout counted.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
hostile() { "$QREL_PYTHON" "$QREL_SOURCE_DIR/tests/lib/hostile_client.py" "$@"; }
field() { sed -nE "s/.*$1=([0-9]+).*/\1/p" <<< "$2"; }

start_redis RP
orders_config "$T/qrel.yml"
start_exporter "$T/qrel.yml" --log.level=info
host=${ADDR%:*} port=${ADDR##*:}

# 600 sockets from 127.0.0.2 dribbling a header that never ends; /-/healthy probed from 127.0.0.1.
out=$(hostile slowloris "$host" "$port" 600 6 --bind 127.0.0.2 --probe /-/healthy --probe-every 0.3)
echo "slowloris: $out"
expect_eq "slowloris sockets still open after 6 s" "$(field open "$out")" 600
expect_eq "every /-/healthy probe answered 200" "$(field ok "$out")" "$(field probes "$out")"
expect_between "slowest /-/healthy (ms) with 600 slowloris sockets" "$(field max_ms "$out")" 0 999

# One address gets at most 1,024 connections; others still get in. The server first reaps the
# 600 sockets closed above: waited for (fewer than 10 of its sockets left, in any state but
# listening), instead of assumed done within 2 s, which a loaded machine outlasts.
server_sockets() { ss -Htn "( sport = :$port )" | wc -l; }
reaped() { [ "$(server_sockets)" -lt 10 ]; }
wait_for -i 0.2 60 "the server to close the 600 slowloris sockets" reaped || true
echo "server sockets before the per-IP test: $(server_sockets)"
out=$(hostile slowloris "$host" "$port" 1100 2 --bind 127.0.0.3 --probe /-/healthy --probe-every 0.3)
echo "per-IP: $out"
# The floor stays loose: on a loaded machine fewer are kept (567 to 856 seen with two CPU hogs;
# 779 once the wait above had found all 600 closed; 1024 on a fresh exporter), for a reason not
# yet known.
expect_between "connections kept from one address (per-IP limit 1024)" "$(field open "$out")" 500 1024
expect_eq "/-/healthy from another address answered throughout" "$(field ok "$out")" "$(field probes "$out")"

# 1,000 scrapes at once: every one gets a status; the shed ones 503 with Retry-After.
rq() { local v; v=$(mval "$1" qrel_http_requests_total 'handler="/metrics"' "code=\"$2\""); echo "${v:-0}"; }
scrape "$T/before.txt"
lines_before=$(wc -l < "$T/exporter.log")
hostile burst "$host" "$port" 1000 /metrics > "$T/burst.txt"
cat "$T/burst.txt"
expect_eq "scrapes left without an HTTP status" "$(sed -nE 's/^status=none count=([0-9]+)/\1/p' "$T/burst.txt")" ""
answered=$(awk -F'count=' '{ n += $2 } END { print n + 0 }' "$T/burst.txt")
expect_eq "scrapes answered" "$answered" 1000
other=$(grep -vE '^status=(200|503\+retry-after) ' "$T/burst.txt" || true)
expect_eq "statuses other than 200 and 503 with Retry-After" "$other" ""
expect_cmd "some scrapes were served 200" grep -q '^status=200 ' "$T/burst.txt"
sleep 1
new_lines=$(($(wc -l < "$T/exporter.log") - lines_before))
expect_between "log lines written during the burst (rate-limited)" "$new_lines" 0 20
# qrel_http_requests_total counts what the clients got (issue 23): the shed scrapes are visible,
# not only logged. The scrape before the burst is counted too once answered.
burst_count() { local n; n=$(sed -nE "s/^status=$1 count=([0-9]+)/\1/p" "$T/burst.txt"); echo "${n:-0}"; }
# The burst's last scrapes may still hold their admission while their clients are gone: a scrape
# shed here is counted too, and tried again.
shed_after=0
admitted() {
  local c
  c=$(curl -s -o "$T/after.txt" -w '%{http_code}' "http://$ADDR/metrics")
  [ "$c" = 503 ] && shed_after=$((shed_after + 1))
  [ "$c" = 200 ]
}
wait_for -i 0.2 30 "a scrape admitted after the burst" admitted || true
expect_eq "qrel_http_requests_total 503 on /metrics: the burst's shed scrapes" \
  "$(($(rq "$T/after.txt" 503) - $(rq "$T/before.txt" 503)))" "$(($(burst_count '503\+retry-after') + shed_after))"
expect_eq "qrel_http_requests_total 200 on /metrics: the burst's served scrapes and one" \
  "$(($(rq "$T/after.txt" 200) - $(rq "$T/before.txt" 200)))" "$(($(burst_count 200) + 1))"
expect_eq "/-/healthy after the burst" "$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR/-/healthy")" 200

# A client asking for 1 ns (or 4.9e-324) must not mark the source down for everybody.
for v in 1e-9 1e-9 1e-9 1e-9 1e-9 4.9e-324 1e-9 1e-9 1e-9 1e-9; do
  curl -s -o /dev/null -H "X-Prometheus-Scrape-Timeout-Seconds: $v" "http://$ADDR/metrics"
done
scrape "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="cache"'
expect_metric "$T/m.txt" 0 qrel_collector_errors_total 'source="cache"' 'reason="timeout"'

finish
