#!/usr/bin/env bash
# The exporter as a program: flags, --config.check, endpoints and methods, content negotiation,
# reload by SIGHUP and POST /-/reload (a bad file keeps the running config), qrel scrape's exit
# status, and promtool check metrics on real output. Runs against a real redis-server.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
redis-cli -p "$RP" XGROUP CREATE orders workers '$' MKSTREAM >/dev/null
redis-cli -p "$RP" XADD orders '*' n 1 >/dev/null

cat > "$T/good.yml" <<YML
global:
  timeout: 5s
sources:
$(redis_source cache "$RP")
    streams:
      - name: orders
YML

# --config.check: OK, and a bad file names file:line:col and what was expected.
out=$("$EXPORTER" --config.file="$T/good.yml" --config.check 2>&1); rc=$?
expect_eq "config.check on a good file exits" "$rc" 0
expect_eq "config.check says" "$out" "$T/good.yml: OK, 1 source"
sed 's/timeout: 5s/timeout: 5/' "$T/good.yml" > "$T/bad.yml"
out=$("$EXPORTER" --config.file="$T/bad.yml" --config.check 2>&1) && rc=0 || rc=$?
expect_eq "config.check on a bad duration exits" "$rc" 1
expect_eq "config.check message" "$out" "$T/bad.yml:2:12: timeout: want a duration like \"5s\", got \"5\""
sed 's/    address:/    adress:/' "$T/good.yml" > "$T/typo.yml"
out=$("$EXPORTER" --config.file="$T/typo.yml" --config.check 2>&1) && rc=0 || rc=$?
expect_eq "config.check on an unknown key exits" "$rc" 1
case "$out" in
  "$T/typo.yml:6:5: unknown key \"adress\" in source \"cache\" (known keys: "*) ok "unknown key message names file:line:col" ;;
  *) not_ok "unknown key message: $out" ;;
esac
out=$("$EXPORTER" --bogus 2>&1) && rc=0 || rc=$?
expect_eq "unknown flag exits" "$rc" 2
expect_eq "unknown flag message" "$out" "qrel_exporter: unknown flag --bogus (see --help)"
expect_cmd "--version prints the version" bash -c "'$EXPORTER' --version | grep -q '^qrel_exporter [0-9]'"
expect_cmd "--help lists --web.listen-address" bash -c "'$EXPORTER' --help | grep -q -- '--web.listen-address'"

t_start=$(date +%s)
start_exporter "$T/good.yml"
t_started=$(date +%s)

# Endpoints, methods, content types.
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
expect_eq "GET /metrics" "$(code "http://$ADDR/metrics")" 200
expect_eq "HEAD /metrics" "$(code -I "http://$ADDR/metrics")" 200
expect_eq "POST /metrics" "$(code -X POST "http://$ADDR/metrics")" 405
expect_eq "Allow header on 405" "$(curl -s -D - -o /dev/null -X DELETE "http://$ADDR/-/healthy" | tr -d '\r' | sed -n 's/^Allow: //p')" "GET, HEAD"
expect_eq "GET /-/healthy" "$(code "http://$ADDR/-/healthy")" 200
expect_eq "GET /-/ready" "$(code "http://$ADDR/-/ready")" 200
expect_eq "GET /nope" "$(code "http://$ADDR/nope")" 404
expect_eq "GET /-/reload" "$(code "http://$ADDR/-/reload")" 405
ctype=$(curl -s -D - -o /dev/null "http://$ADDR/metrics" | tr -d '\r' | sed -n 's/^Content-Type: //p')
expect_eq "text content type" "$ctype" "text/plain; version=0.0.4; charset=utf-8"
prom_accept='application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
curl -s -D "$T/om.headers" -H "Accept: $prom_accept" "http://$ADDR/metrics" -o "$T/om.txt"
expect_eq "OpenMetrics content type" "$(tr -d '\r' < "$T/om.headers" | sed -n 's/^Content-Type: //p')" \
  "application/openmetrics-text; version=1.0.0; charset=utf-8"
expect_eq "OpenMetrics ends with # EOF" "$(tail -1 "$T/om.txt")" "# EOF"
expect_cmd "OpenMetrics counter family drops _total in TYPE" grep -q '^# TYPE qrel_collector_errors counter$' "$T/om.txt"
# gzip, which Prometheus always asks for: the body is compressed and decodes to the same series.
curl -s -D "$T/gz.headers" -H 'Accept-Encoding: gzip' "http://$ADDR/metrics" -o "$T/m.gz"
expect_eq "Content-Encoding with gzip accepted" "$(tr -d '\r' < "$T/gz.headers" | sed -n 's/^Content-Encoding: //p')" gzip
gunzip -c "$T/m.gz" > "$T/gz.txt"
expect_metric "$T/gz.txt" 1 qrel_collector_up 'source="cache"'
expect_cmd "gzip body passes promtool" bash -c "promtool check metrics < '$T/gz.txt'"
expect_eq "no Content-Encoding for gzip;q=0" "$(curl -s -D - -o /dev/null -H 'Accept-Encoding: gzip;q=0' "http://$ADDR/metrics" | tr -d '\r' | sed -n 's/^Content-Encoding: //p')" ""
curl -s "http://$ADDR/" -o "$T/landing.html"
expect_cmd "landing page lists the source" grep -q '<td>cache</td><td>redis_stream</td>' "$T/landing.html"
expect_cmd "landing page links the metrics" grep -q 'href="/metrics"' "$T/landing.html"

# /probe collects one configured source; targets come only from the configuration.
curl -fsS "http://$ADDR/probe?target=cache" -o "$T/probe.txt"
expect_metric "$T/probe.txt" 1 qrel_collector_up 'source="cache"'
expect_absent "$T/probe.txt" qrel_build_info
expect_absent "$T/probe.txt" process_resident_memory_bytes
expect_absent "$T/probe.txt" qrel_http_requests_total
expect_eq "GET /probe without a target" "$(code "http://$ADDR/probe")" 400
expect_eq "GET /probe?target=unknown" "$(code "http://$ADDR/probe?target=127.0.0.1:6379")" 400

# Real output passes promtool, and carries HELP for every family.
scrape "$T/m1.txt"
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m1.txt'"
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="cache"' 'kind="redis_stream"'
expect_metric "$T/m1.txt" 1 qrel_config_last_reload_successful
expect_metric "$T/m1.txt" 1 qrel_build_info
expect_eq "families without HELP" "$(comm -23 <(sed -nE 's/^# TYPE ([^ ]+) .*/\1/p' "$T/m1.txt" | sort) <(sed -nE 's/^# HELP ([^ ]+) .*/\1/p' "$T/m1.txt" | sort) | wc -l)" 0

# The exporter's own process (issue 23) against /proc read just before and just after the scrape:
# a figure that moves while the scrape runs lies between the two readings (5% of slack for
# memory). The exporter counts two descriptors that neither reading sees: the connection serving
# this scrape and the directory it lists to count.
pid=$EXPORTER_PID
status_kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
nfds() { find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 | wc -l; }
cpu_ticks() { sed 's/.*) //' "/proc/$pid/stat" | awk '{ print $12 + $13 }'; }
rss0=$(status_kb VmRSS) vm0=$(status_kb VmSize) fd0=$(nfds) cpu0=$(cpu_ticks)
scrape "$T/p.txt"
rss1=$(status_kb VmRSS) vm1=$(status_kb VmSize) fd1=$(nfds) cpu1=$(cpu_ticks)
lo() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { printf "%.0f\n", (a < b ? a : b) * f }'; }
hi() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { printf "%.0f\n", (a > b ? a : b) * f }'; }
expect_between "process_resident_memory_bytes against VmRSS" "$(mval "$T/p.txt" process_resident_memory_bytes)" \
  "$(lo "$rss0" "$rss1" 972.8)" "$(hi "$rss0" "$rss1" 1075.2)"
expect_between "process_virtual_memory_bytes against VmSize" "$(mval "$T/p.txt" process_virtual_memory_bytes)" \
  "$(lo "$vm0" "$vm1" 972.8)" "$(hi "$vm0" "$vm1" 1075.2)"
expect_between "process_open_fds against /proc/PID/fd" "$(mval "$T/p.txt" process_open_fds)" \
  "$(lo "$fd0" "$fd1" 1)" "$(($(hi "$fd0" "$fd1" 1) + 2))"
tck=$(getconf CLK_TCK)
expect_between "process_cpu_seconds_total against utime+stime" "$(mval "$T/p.txt" process_cpu_seconds_total)" \
  "$(awk -v t="$cpu0" -v k="$tck" 'BEGIN { print t / k }')" "$(awk -v t="$cpu1" -v k="$tck" 'BEGIN { print t / k }')"
expect_eq "process_max_fds is the soft limit" "$(mval "$T/p.txt" process_max_fds)" \
  "$(awk '/^Max open files/ { print $4 }' "/proc/$pid/limits")"
# The boot time is cut to whole seconds and the start ticks to hundredths, both downwards.
expect_between "process_start_time_seconds within the start of the exporter" \
  "$(mval "$T/p.txt" process_start_time_seconds)" "$((t_start - 2))" "$((t_started + 1))"
# qrel_http_requests_total: a scrape counts once it is answered, so the next one sees it.
rq() { local v; v=$(mval "$1" qrel_http_requests_total "handler=\"$2\"" "code=\"$3\""); echo "${v:-0}"; }
code "http://$ADDR/nope" > /dev/null
code "http://$ADDR/also/not/here" > /dev/null
code -X POST "http://$ADDR/metrics" > /dev/null
code "http://$ADDR/-/healthy" > /dev/null
scrape "$T/r.txt"
expect_eq "/metrics answered 200 between the two scrapes (the first itself)" "$(($(rq "$T/r.txt" /metrics 200) - $(rq "$T/p.txt" /metrics 200)))" 1
expect_eq "unknown paths answered 404 as handler other" "$(($(rq "$T/r.txt" other 404) - $(rq "$T/p.txt" other 404)))" 2
expect_eq "POST /metrics answered 405" "$(($(rq "$T/r.txt" /metrics 405) - $(rq "$T/p.txt" /metrics 405)))" 1
expect_eq "/-/healthy answered 200" "$(($(rq "$T/r.txt" /-/healthy 200) - $(rq "$T/p.txt" /-/healthy 200)))" 1
expect_absent "$T/r.txt" qrel_http_requests_total 'handler="/nope"'
expect_cmd "promtool check metrics with the process and request families" bash -c "promtool check metrics < '$T/r.txt'"

# Reload: a bad file keeps the running sources and reports 0; a good one is taken.
cp "$T/good.yml" "$T/live.yml"
stop_exporter
start_exporter "$T/live.yml" --web.enable-lifecycle
cp "$T/bad.yml" "$T/live.yml"
kill -HUP "$EXPORTER_PID"
wait_for 10 "the exporter to log 'reload failed'" grep -q 'reload failed' "$T/exporter.log" || true
scrape "$T/m2.txt"
expect_metric "$T/m2.txt" 0 qrel_config_last_reload_successful
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="cache"'
expect_cmd "the log says why the reload failed" grep -q 'want a duration like' "$T/exporter.log"
expect_eq "POST /-/reload with a bad file" "$(code -X POST "http://$ADDR/-/reload")" 500
sed 's/name: cache/name: cache2/' "$T/good.yml" > "$T/live.yml"
expect_eq "POST /-/reload with a good file" "$(code -X POST "http://$ADDR/-/reload")" 200
scrape "$T/m3.txt"
expect_metric "$T/m3.txt" 1 qrel_config_last_reload_successful
expect_metric "$T/m3.txt" 1 qrel_collector_up 'source="cache2"'
expect_absent "$T/m3.txt" qrel_collector_up 'source="cache"'
stop_exporter

# --web.telemetry-path moves the metrics; --log.format=json writes one JSON object per line.
start_exporter "$T/good.yml" --web.telemetry-path=/qrel/metrics --log.format=json
expect_eq "GET the moved telemetry path" "$(code "http://$ADDR/qrel/metrics")" 200
expect_eq "GET /metrics after moving it" "$(code "http://$ADDR/metrics")" 404
expect_cmd "every log line is JSON with ts, level and msg" \
  bash -c "grep -v '^$' '$T/exporter.log' | jq -e 'has(\"ts\") and has(\"level\") and has(\"msg\")' > /dev/null"
stop_exporter

# qrel scrape: exit 0 when every source is up, 1 when one fails.
expect_cmd "qrel scrape exits 0 with every source up" bash -c "'$QREL' scrape --config.file='$T/good.yml' > '$T/s1.txt'"
expect_metric "$T/s1.txt" 1 qrel_collector_up 'source="cache"'
dead=$(free_port)
sed "s/127.0.0.1:$RP/127.0.0.1:$dead/" "$T/good.yml" > "$T/dead.yml"
"$QREL" scrape --config.file="$T/dead.yml" > "$T/s2.txt" 2> "$T/s2.err" && rc=0 || rc=$?
expect_eq "qrel scrape with a dead source exits" "$rc" 1
expect_metric "$T/s2.txt" 0 qrel_collector_up 'source="cache"'
expect_cmd "qrel scrape says which source failed" grep -q 'source "cache" (redis_stream) failed' "$T/s2.err"

finish
