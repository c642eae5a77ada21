#!/usr/bin/env bash
# Issue 15, reload and the config loader: POST /-/reload only with --web.enable-lifecycle (SIGHUP
# always); error counters survive a reload; a config that became a FIFO and a FIFO as
# password_file are refused at once; a reload stuck in the file system (an injected 10 s openat,
# as on a hung mount) blocks neither a scrape nor SIGTERM; a 100k-key config is refused in < 1 s
# with file:line:col; NUL is refused in a YAML name and in a /probe target; an invalid source name
# is escaped in the message.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
elapsed_ms() { local t0; t0=$(now_ms); "$@" > "$T/out.txt" 2>&1 || true; echo $(($(now_ms) - t0)); }
# cpu_ms CMD...: user+system CPU milliseconds CMD took (its output to $T/out.txt). The loader's
# bounds are checked in CPU time, which other jobs on a shared machine do not inflate; the old
# quadratic duplicate check spent over 10 s of CPU on 100k keys.
cpu_ms() {
  local TIMEFORMAT='%3U %3S' t
  t=$( { time "$@" > "$T/out.txt" 2>&1 || true; } 2>&1)
  awk '{ printf "%d\n", ($1 + $2) * 1000 }' <<< "$t"
}

start_redis RP
dead=$(free_port)
{ echo 'sources:'; orders_source cache "$RP"; orders_source gone "$dead" "timeout: 1s"; } \
  > "$T/qrel.yml"

# ---- lifecycle and counters ----
start_exporter "$T/qrel.yml"
expect_eq "POST /-/reload without --web.enable-lifecycle" "$(code -X POST "http://$ADDR/-/reload")" 403
scrape "$T/m1.txt"
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="gone"' 'reason="connect"'
sleep 0.6 # past the first back-off, so the next scrape tries again
scrape "$T/m2.txt"
expect_metric "$T/m2.txt" 2 qrel_collector_errors_total 'source="gone"' 'reason="connect"'
kill -HUP "$EXPORTER_PID"
for _ in $(seq 1 50); do grep -q 'configuration reloaded' "$T/exporter.log" && break; sleep 0.05; done
expect_cmd "SIGHUP reloads without the flag" grep -q 'configuration reloaded' "$T/exporter.log"
scrape "$T/m3.txt"
# The 2 from before the reload plus this scrape's own attempt (a reset would show 1).
expect_metric "$T/m3.txt" 3 qrel_collector_errors_total 'source="gone"' 'reason="connect"'

# ---- a config that became a FIFO: refused at once, scrapes go on ----
mv "$T/qrel.yml" "$T/qrel.real.yml"
mkfifo "$T/qrel.yml"
kill -HUP "$EXPORTER_PID"
for _ in $(seq 1 40); do grep -q 'reload failed' "$T/exporter.log" && break; sleep 0.05; done
expect_cmd "a FIFO config is refused: not a regular file" grep -q 'reload failed.*not a regular file' "$T/exporter.log"
expect_between "scrape time (ms) after a FIFO reload" "$(scrape_ms "$T/m4.txt")" 0 999
expect_metric "$T/m4.txt" 1 qrel_collector_up 'source="cache"'
expect_metric "$T/m4.txt" 0 qrel_config_last_reload_successful
stop_exporter
rm -f "$T/qrel.yml"
mv "$T/qrel.real.yml" "$T/qrel.yml"

# ---- a FIFO as password_file ----
mkfifo "$T/pw.fifo"
cat > "$T/pw.yml" <<YML
sources:
$(redis_source cache "$RP")
    password_file: $T/pw.fifo
    streams: [{name: orders}]
YML
ms=$(elapsed_ms timeout 10 "$EXPORTER" --config.file="$T/pw.yml" --config.check)
expect_between "--config.check with a FIFO password_file, wall ms (it used to hang)" "$ms" 0 4999
expect_cmd "the FIFO password_file is named: not a regular file" grep -qE "pw.yml:[0-9]+:[0-9]+: password_file: cannot read .*not a regular file" "$T/out.txt"

# ---- a reload stuck in the file system ----
# strace delays the reload thread's second openat of the file by 10 s (its first is the first
# reload below, which passes), the way a hung mount would. The process itself can only end once
# strace lets the delayed call return, so "stopped" is: SIGTERM logged, port closed.
if strace -f -qq --seccomp-bpf -o /dev/null -e trace=none true 2>/dev/null; then
  : > "$T/exporter.log"
  # LeakSanitizer cannot run under ptrace (it aborts at exit), so leaks are not checked here.
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq --seccomp-bpf -o /dev/null -P "$T/qrel.yml" -e trace=openat \
    -e inject=openat:delay_exit=10000000:when=2 \
    "$EXPORTER" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 --log.level=debug \
    2>>"$T/exporter.log" &
  STRACE_PID=$!
  PIDS+=("$STRACE_PID")
  for _ in $(seq 1 100); do
    ADDR=$(sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$T/exporter.log")
    [ -n "$ADDR" ] && break
    sleep 0.05
  done
  pid=$(pgrep -P "$STRACE_PID" -x qrel_exporter)
  kill -HUP "$pid"
  for _ in $(seq 1 100); do grep -q 'configuration reloaded' "$T/exporter.log" && break; sleep 0.05; done
  expect_cmd "the first reload under strace passes" grep -q 'configuration reloaded' "$T/exporter.log"
  kill -HUP "$pid" # this one sticks for 10 s
  for _ in $(seq 1 100); do [ "$(grep -c 'SIGHUP received' "$T/exporter.log")" -ge 2 ] && break; sleep 0.05; done
  sleep 0.3
  expect_between "scrape time (ms) while a reload is stuck" "$(scrape_ms "$T/m5.txt")" 0 999
  expect_metric "$T/m5.txt" 1 qrel_collector_up 'source="cache"'
  expect_eq "/-/healthy while a reload is stuck" "$(code "http://$ADDR/-/healthy")" 200
  t0=$(now_ms)
  kill -TERM "$pid"
  for _ in $(seq 1 60); do code "http://$ADDR/-/healthy" > /dev/null || break; sleep 0.05; done
  expect_between "SIGTERM to closed port (ms) while a reload is stuck" "$(($(now_ms) - t0))" 0 2999
  expect_cmd "the exporter says it leaves the stuck reload behind" grep -q 'exiting without it' "$T/exporter.log"
  wait "$STRACE_PID" || true
else
  not_ok "strace cannot trace here (ptrace refused): the stuck-reload case did not run"
fi

# ---- the loader's limits ----
"$QREL_PYTHON" - "$T/big.yml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("sources: []\nglobal:\n")
    for i in range(100000):
        f.write(f"  k{i}: 1\n")
PY
ms=$(cpu_ms "$EXPORTER" --config.file="$T/big.yml" --config.check)
expect_between "a 100k-key config refused (CPU ms)" "$ms" 0 999
expect_cmd "its error names file:line:col and the limit" grep -qF "big.yml:50003:3: more than 50000 keys in one mapping (the limit)" "$T/out.txt"
"$QREL_PYTHON" - "$T/dup.yml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("global:\n")
    for i in range(40000):
        f.write(f"  k{i}: 1\n")
    f.write("  k7: 2\n")
PY
ms=$(cpu_ms "$EXPORTER" --config.file="$T/dup.yml" --config.check)
expect_between "a duplicate after 40k keys found (CPU ms)" "$ms" 0 999
expect_cmd "duplicate named with both lines" grep -qF 'dup.yml:40002:3: duplicate key "k7" (first at line 9)' "$T/out.txt"
"$QREL_PYTHON" -c 'import sys; open(sys.argv[1], "w").write("sources: [" + "1," * 300000 + "1]\n")' "$T/flow.yml"
ms=$(cpu_ms "$EXPORTER" --config.file="$T/flow.yml" --config.check)
expect_between "a 300k-item flow list refused (CPU ms)" "$ms" 0 999
expect_cmd "its error names the item limit" grep -qE "flow.yml:1:[0-9]+: more than 50000 items in one list" "$T/out.txt"

# ---- NUL and escaping ----
printf 'sources:\n  - name: "ca\\0che"\n    kind: redis_stream\n    address: 127.0.0.1:%s\n    streams: [{name: orders}]\n' "$RP" > "$T/nul.yml"
"$EXPORTER" --config.file="$T/nul.yml" --config.check > "$T/out.txt" 2>&1 && rc=0 || rc=$?
expect_eq "a NUL in a YAML name: exit" "$rc" 1
expect_cmd "a NUL in a YAML name: file:line:col" grep -qF "nul.yml:2:11: a NUL character is not allowed in a string" "$T/out.txt"
printf 'sources:\n  - name: "bad\\e[31mname"\n    kind: redis_stream\n    address: 127.0.0.1:%s\n    streams: [{name: orders}]\n' "$RP" > "$T/esc.yml"
"$EXPORTER" --config.file="$T/esc.yml" --config.check > "$T/out.txt" 2>&1 || true
expect_cmd "an invalid name is escaped in the message" grep -qF 'got "bad\x1b[31mname"' "$T/out.txt"
if grep -q $'\e' "$T/out.txt"; then not_ok "a raw escape byte reached the output"; else ok "no raw escape byte in the output"; fi

start_exporter "$T/qrel.yml"
expect_eq "/probe?target=cache" "$(code "http://$ADDR/probe?target=cache")" 200
expect_eq "/probe?target=cache%00x" "$(code "http://$ADDR/probe?target=cache%00x")" 400

finish
