# common.sh: helpers for integration tests (sourced, not run). Each test gets a temp dir, starts
# its own servers on free loopback ports, and everything it started is stopped on exit.
# shellcheck shell=bash

set -euo pipefail

# Absolute, so tests may cd and hand the paths to servers (Prometheus' rule_files symlink)
QREL_SOURCE_DIR=$(cd "${QREL_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
QREL_BUILD_DIR=$(cd "${QREL_BUILD_DIR:-$QREL_SOURCE_DIR/build}" && pwd)
export EXPORTER=$QREL_BUILD_DIR/qrel_exporter
export QREL=$QREL_BUILD_DIR/qrel
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-test.XXXXXX")
chmod 755 "$T"
# shellcheck source=servers.sh
. "$QREL_SOURCE_DIR/tests/lib/servers.sh"
# shellcheck source=faults.sh
. "$QREL_SOURCE_DIR/tests/lib/faults.sh"
# shellcheck source=redis_tls.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_tls.sh"
CHECKS=0
FAILS=0
FAILED_CHECKS=()

cleanup() {
  local rc=$?
  servers_stop
  if [ "$rc" -ne 0 ] || [ "$FAILS" -ne 0 ]; then
    echo "--- exporter logs kept in $T" >&2
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
    # Last, so that a log that cuts a long output in its middle still shows what failed.
    echo "--- exit status $rc; failed checks and errors: ${#FAILED_CHECKS[@]}" >&2
    for f in "${FAILED_CHECKS[@]}"; do echo "--- FAIL $f" >&2; done
  else
    rm -rf "$T" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'FAILED_CHECKS+=("error: ${BASH_SOURCE[0]##*/}:$LINENO: ${BASH_COMMAND:0:200}")
  echo "${FAILED_CHECKS[-1]}" >&2' ERR

# psql_do SQL...: runs SQL as postgres on the last started cluster, stopping at the first error;
# with no argument, reads SQL from stdin. psql_val SQL: the single value a query returns.
psql_do() {
  if [ $# -gt 0 ]; then
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$*"
  else
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres
  fi
}
psql_val() {
  psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$*"
}

# redis_source NAME PORT: the opening lines of the YAML list entry of a redis_stream source NAME
# on the Redis at 127.0.0.1:PORT; the caller writes its streams and other keys below them.
redis_source() {
  printf '  - name: %s\n    kind: redis_stream\n    address: 127.0.0.1:%s\n' "$1" "$2"
}

# nats_source NAME URL: the opening lines of the YAML list entry of a nats source NAME reading the
# monitoring endpoint at URL.
nats_source() {
  printf '  - name: %s\n    kind: nats\n    url: %s\n' "$1" "$2"
}

# pg_source NAME PORT [USER]: the opening lines of the YAML list entry of a postgres source NAME
# connecting as USER (default postgres) to database postgres of the cluster on 127.0.0.1:PORT; the
# caller writes its sections (outboxes, queries, claim_tables, ...) below them.
pg_source() {
  printf '  - name: %s\n    kind: postgres\n    host: 127.0.0.1\n    port: %s\n' "$1" "$2"
  printf '    user: %s\n    dbname: postgres\n' "${3:-postgres}"
}

# orders_source NAME PORT [LINE...]: the YAML list entry of a redis_stream source NAME reading
# stream orders of the Redis on 127.0.0.1:PORT, each LINE (e.g. "timeout: 1s") one more key.
orders_source() {
  redis_source "$1" "$2"
  shift 2
  [ $# -eq 0 ] || printf '    %s\n' "$@"
  printf '    streams: [{name: orders}]\n'
}

# orders_config FILE: writes FILE, a config whose one source, cache, reads stream orders of the
# Redis on $RP (the exporter tests' usual target).
orders_config() {
  { echo 'sources:'; orders_source cache "$RP"; } > "$1"
}

# tls_fixture: writes a self-signed certificate for 127.0.0.1 to $T/server.crt (key
# $T/server.key) and prints the bcrypt hash of user prometheus's password s3cret-scrape, for web
# configs.
tls_fixture() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$T/server.key" -out "$T/server.crt" 2>/dev/null
  htpasswd -nbBC 10 prometheus 's3cret-scrape' | cut -d: -f2
}

# redis_clock CMD: reads the clock of a Redis with `CMD TIME` (CMD a redis-cli wrapper), so that
# stream_id AGE is the id of an entry AGE seconds old by that clock: tests place entries at known
# ages whatever the clock of this machine says.
redis_clock() {
  local s us
  read -r s us < <("$1" TIME | tr '\n' ' '; echo)
  redis_now_ms=$((s * 1000 + us / 1000))
}
stream_id() { echo "$((redis_now_ms - $1 * 1000))-0"; }

# start_exporter CONFIG [flags...]: runs qrel_exporter on a free port; sets ADDR and EXPORTER_PID.
# Its log goes to $T/exporter.log (debug level).
start_exporter() {
  local config=$1; shift
  : > "$T/exporter.log"
  "$EXPORTER" --config.file="$config" --web.listen-address=127.0.0.1:0 --log.level=debug "$@" \
    2>>"$T/exporter.log" &
  EXPORTER_PID=$!
  PIDS+=("$EXPORTER_PID")
  wait_for 30 "qrel_exporter to log its listening address" exporter_listening && return 0
  cat "$T/exporter.log" >&2
  return 1
}
exporter_listening() { # sets ADDR from the exporter's log, text or JSON
  ADDR=$(sed -nE -e 's/.*msg=listening address=([^ ]+).*/\1/p' \
    -e 's/.*"msg":"listening","address":"([^"]+)".*/\1/p' "$T/exporter.log" | tail -1)
  [ -n "$ADDR" ]
}

stop_exporter() {
  kill "$EXPORTER_PID" 2>/dev/null || true
  wait "$EXPORTER_PID" 2>/dev/null || true
}

# scrape FILE [curl args...]: GET /metrics into FILE.
scrape() {
  local out=$1; shift
  curl -fsS "$@" "http://$ADDR/metrics" -o "$out"
}

# scrape_ms FILE [curl args...]: GET /metrics into FILE; prints how long the request took in
# milliseconds, as curl measured it: from connecting to the last byte, without the time a loaded
# machine takes to start curl, which is no part of what the exporter is asked to bound. Prints
# nothing when the request fails, which fails an expect_between on it.
scrape_ms() {
  local out=$1 secs
  shift
  secs=$(curl -fsS "$@" -w '%{time_total}' "http://$ADDR/metrics" -o "$out") || return 1
  awk -v s="$secs" 'BEGIN { printf "%d\n", s * 1000 }'
}

# expect_scrape_ms WHAT FILE LOW HIGH [curl args...]: scrapes into FILE; the request took LOW to
# HIGH milliseconds (scrape_ms).
expect_scrape_ms() {
  local what=$1 out=$2 lo=$3 hi=$4
  shift 4
  expect_between "$what" "$(scrape_ms "$out" "$@")" "$lo" "$hi"
}

# expect_scrape_error CASE CONFIG STEM SOURCE REASON [SAYS MESSAGE]: `qrel scrape` of CONFIG (its
# output to STEM.txt, its errors to STEM.err) exits 1 in CASE, counting one error of REASON for
# SOURCE; with SAYS (what the message shows), its errors contain MESSAGE.
expect_scrape_error() {
  local stem=$3 rc=0
  "$QREL" scrape --config.file="$2" > "$stem.txt" 2> "$stem.err" || rc=$?
  expect_eq "qrel scrape exit status $1" "$rc" 1
  expect_metric "$stem.txt" 1 qrel_collector_errors_total "source=\"$4\"" "reason=\"$5\""
  [ $# -lt 7 ] || expect_cmd "$6" grep -qF -- "$7" "$stem.err"
}

# mval FILE NAME [LABEL=\"VALUE\"...]: the value of the first sample of NAME whose labels contain
# every given pair; prints nothing when there is none.
mval() {
  local file=$1 name=$2; shift 2
  # Passed through the environment: awk -v would interpret the backslashes of escaped labels.
  MVAL_NAME=$name MVAL_WANT="$*" awk '
    BEGIN { name = ENVIRON["MVAL_NAME"]; n = split(ENVIRON["MVAL_WANT"], pairs, " ") }
    index($0, name "{") == 1 || index($0, name " ") == 1 {
      ok = 1
      for (i = 1; i <= n; i++) if (index($0, pairs[i]) == 0) ok = 0
      if (ok) { print $NF; exit }
    }' "$file"
}

ok() { CHECKS=$((CHECKS + 1)); printf 'ok   %s\n' "$1"; }
not_ok() {
  CHECKS=$((CHECKS + 1))
  FAILS=$((FAILS + 1))
  printf 'FAIL %s\n' "$1" >&2
  FAILED_CHECKS+=("${1:0:300}")
}

# expect_eq WHAT GOT WANT
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1 = $3"; else not_ok "$1: got '$2', want '$3'"; fi
}

# expect_between WHAT GOT LOW HIGH (numbers, inclusive)
expect_between() {
  if [ -n "$2" ] && awk -v g="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(g + 0 >= lo && g + 0 <= hi) }'; then
    ok "$1 = $2 (in [$3, $4])"
  else
    not_ok "$1: got '$2', want within [$3, $4]"
  fi
}

# within WHAT GOT WANT PCT: GOT is within PCT % of WANT (a WANT of 0 must be 0).
within() {
  local lo hi
  lo=$(awk -v w="$3" -v p="$4" 'BEGIN { printf "%.17g", w * (1 - (w < 0 ? -p : p) / 100) }')
  hi=$(awk -v w="$3" -v p="$4" 'BEGIN { printf "%.17g", w * (1 + (w < 0 ? -p : p) / 100) }')
  expect_between "$1" "$2" "$lo" "$hi"
}

# expect_metric FILE WANT NAME [LABEL=\"VALUE\"...]
expect_metric() {
  local file=$1 want=$2 name=$3; shift 3
  expect_eq "$name{$*}" "$(mval "$file" "$name" "$@")" "$want"
}

expect_absent() { # expect_absent FILE NAME [labels...]
  local file=$1 name=$2; shift 2
  local got
  got=$(mval "$file" "$name" "$@")
  if [ -z "$got" ]; then ok "$name{$*} absent"; else not_ok "$name{$*}: want no series, got $got"; fi
}

# expect_cmd WHAT CMD...: the command succeeds
expect_cmd() {
  local what=$1; shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}

# expect_exit WHAT WANT OUT CMD...: runs CMD with its output and errors to OUT; its exit status is
# WANT.
expect_exit() {
  local what=$1 want=$2 out=$3 rc=0
  shift 3
  "$@" > "$out" 2>&1 || rc=$?
  expect_eq "$what" "$rc" "$want"
}

# expect_line WHAT REGEX FILE: some line of FILE matches REGEX (grep's basic regex); otherwise
# FILE is shown.
expect_line() {
  if grep -q "$2" "$3"; then ok "$1"; else not_ok "$1: $(cat "$3")"; fi
}

# now_ms: milliseconds since the epoch; ms_since T0
now_ms() { date +%s%3N; }

finish() {
  echo "$((CHECKS - FAILS)) passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}
