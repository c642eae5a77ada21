# bench/lib.sh: measurement helpers shared by the benchmarks (sourced, not run). The servers they
# measure against, free_port and wait_for come from the tests' own tests/lib.
# shellcheck shell=bash

# shellcheck source=../tests/lib/servers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/lib/servers.sh"

# The checkout, its build directory (tests/lib's start_postgres keeps its template cluster there,
# AmqPeer is compiled there), and the qrel_exporter a benchmark measures unless its --qrel names
# another.
SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export QREL_BUILD_DIR=${QREL_BUILD_DIR:-$SRC_DIR/build}
# shellcheck disable=SC2034 # for the benchmark that sources this
QREL_BIN=$QREL_BUILD_DIR/qrel_exporter

# median of the numbers on stdin, one a line ("nan" when there are none)
median() {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) printf "%.6f\n", v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# cpu_ticks PID: the process's user+system CPU so far, in clock ticks (/proc/PID/stat)
cpu_ticks() {
  local stat rest
  stat=$(<"/proc/$1/stat")
  rest=${stat##*) }         # the command name may hold spaces and parentheses
  read -ra f <<<"$rest"     # f[0] is field 3 (state): utime is field 14, stime 15
  echo $((f[11] + f[12]))
}

# hwm_kib PID: peak resident set size in KiB (VmHWM)
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

# own_kib PID: all of the process's anonymous resident pages now, in KiB (RssAnon): the heap,
# malloc arenas and thread stacks, but also the private pages the dynamic loader and the libraries
# wrote inside their file mappings (relocations, .data, .bss: 1.2 MiB of an idle qrel's 1.6 MiB,
# most of it libcrypto, librdkafka, p11-kit, gnutls and krb5; bench/README.md has the split). It
# leaves out the binary's and the libraries' unwritten pages (RssFile).
own_kib() { awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status"; }

# heap_kib PID: the process's own heap and stacks now, in KiB, from /proc/PID/smaps: the resident
# anonymous pages of [heap], [stack] and of the mappings without a file (malloc arenas, chunks
# malloc maps on their own, thread stacks), leaving out the anonymous pages inside file mappings
# that own_kib also counts. Issue 14's goal ("qrel's own heap + stacks stay <= 2 MiB") is on this
# figure; the kernel keeps no peak of it, so read it after each scrape and keep the largest.
heap_kib() {
  awk '$1 ~ /^[0-9a-f]+-[0-9a-f]+$/ { own = (NF == 5 || $6 ~ /^\[(heap|stack|anon:)/) }
    own && $1 == "Anonymous:" { kib += $2 } END { print kib + 0 }' "/proc/$1/smaps"
}

# mem_kib PID: "OWN HEAP": own_kib and heap_kib now
mem_kib() { echo "$(own_kib "$1") $(heap_kib "$1")"; }

# mem_settled_kib PID: mem_kib once the exporter has freed the scrape it answered. The client has
# the last byte before the exporter frees the scrape's memory and hands it back (malloc_trim), so
# a reading right after curl can catch it in between; read until two readings 0.1 s apart agree
# (at most 2 s).
mem_settled_kib() {
  local a b
  b=$(mem_kib "$1")
  for _ in $(seq 1 20); do
    a=$b; sleep 0.1; b=$(mem_kib "$1")
    [ "$a" = "$b" ] && break
  done
  echo "$b"
}

# col_max N FILE: the largest number in column N of FILE (0 when it is empty)
col_max() { awk -v c="$1" '$c > m { m = $c } END { print m + 0 }' "$2"; }

# exporter_mem CONFIG N: "OWN HEAP", the largest mem_settled_kib of a qrel_exporter ($QREL_BIN)
# serving CONFIG, read after each of N scrapes, for a benchmark that times something else (qrel
# scrape); the exporter is stopped after. Uses $T/exporter.log.
exporter_mem() {
  local pid i
  : > "$T/exporter.log"
  "$QREL_BIN" --config.file="$1" --web.listen-address=127.0.0.1:0 2>> "$T/exporter.log" &
  pid=$!
  wait_for 5 "qrel_exporter to log its listening address" listening || { kill "$pid"; die "qrel_exporter did not start"; }
  for ((i = 0; i < $2; i++)); do
    curl -fsS -o /dev/null "http://$ADDR/metrics"
    mem_settled_kib "$pid"
  done > "$T/exporter.mem"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "$(col_max 1 "$T/exporter.mem") $(col_max 2 "$T/exporter.mem")"
}

# peak_own_kib PID: a lower bound of the largest own_kib (RssAnon) so far, inside scrapes too: the
# peak RSS (VmHWM) less the file-backed and shared pages now (which only grow while libraries are
# used)
peak_own_kib() { awk '$1 == "VmHWM:" { h = $2 } $1 == "RssFile:" || $1 == "RssShmem:" { f += $2 } END { print h - f }' "/proc/$1/status"; }

# fmt VALUE PRINTF-FORMAT: the value formatted, or "-" when it is empty, "nan" or "-"
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { if (x == "" || x == "nan" || x == "-") print "-"; else printf f, x }'; }

# listening: true once qrel_exporter has logged its address in $T/exporter.log; sets ADDR to it
listening() {
  ADDR=$(sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$T/exporter.log" | tail -1)
  [ -n "$ADDR" ]
}

# relay_scrape PORT CONFIG RECORD: one `qrel scrape` of CONFIG through a relay between qrel and
# the server at 127.0.0.1:PORT, which writes every byte qrel sent into RECORD: what a floor sends
# again where the server has no MONITOR (beanstalkd, Jolokia). CONFIG's address is pointed at the
# relay. The scrape's output is left in $T/relay.prom and its log in $T/relay.log; dies unless
# the source was up. Uses $T and the benchmark's qrel ($QREL, else the build's).
relay_scrape() {
  local port=$1 config=$2 record=$3 relay
  rm -f "$T/relay.port"
  python3 - "$port" "$T/relay.port" "$record" <<'PY' &
import os, socket, sys, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
srv.settimeout(120)  # a qrel that never connects ends the relay, not the benchmark's wait
open(sys.argv[2] + ".tmp", "w").write(str(srv.getsockname()[1]))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
client, _ = srv.accept()
client.settimeout(None)
server = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
out = open(sys.argv[3], "wb")
def relay(a, b, rec):
    while True:
        d = a.recv(65536)
        if not d:
            break
        if rec:
            rec.write(d)
        b.sendall(d)
    b.shutdown(socket.SHUT_WR)
up = threading.Thread(target=relay, args=(client, server, out))
up.start()
relay(server, client, None)
up.join()
out.close()
PY
  relay=$!
  # python's start alone can take seconds on a loaded machine (10 s was once not enough)
  wait_for 60 "the relay's port" test -s "$T/relay.port" || die "the relay did not start"
  sed -E "s/127\.0\.0\.1:$port([^0-9]|\$)/127.0.0.1:$(cat "$T/relay.port")\1/" "$config" > "$T/relay.yml"
  "${QREL:-$QREL_BUILD_DIR/qrel}" scrape --config.file="$T/relay.yml" > "$T/relay.prom" 2> "$T/relay.log" || true
  wait "$relay" || die "the relay failed (qrel never connected?): $(tail -3 "$T/relay.log")"
  grep -q '^qrel_collector_up{.*} 1$' "$T/relay.prom" || die "qrel through the relay was not up: $(tail -3 "$T/relay.log")"
}

# ---- what was measured, and the result rows ----

# When the run started, and the machine's 1-minute load average then: the date and load of every
# result row of this run.
BENCH_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
BENCH_LOAD=$(cut -d' ' -f1 /proc/loadavg)

# bench_commit: the commit measured: `git rev-parse --short HEAD` of this checkout, then " dirty"
# when a tracked file differs from it (leaving out bench/results/ and bench/README.md, which
# bench/all.sh itself rewrites between benchmarks). BENCH_COMMIT, when set, is used instead:
# bench/all.sh takes it once before its first benchmark, and a benchmark as it starts (below). A
# binary passed with --qrel is taken to be built from this checkout.
bench_commit() {
  local c
  if [ -n "${BENCH_COMMIT:-}" ]; then echo "$BENCH_COMMIT"; return; fi
  c=$(git -C "$SRC_DIR" rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
  git -C "$SRC_DIR" diff --quiet HEAD -- . ':!bench/results' ':!bench/README.md' 2>/dev/null || c="$c dirty"
  echo "$c"
}
# Taken once, as the run starts: a commit made while it runs is not the one measured.
BENCH_COMMIT=$(bench_commit)

# qrel_version BIN: "qrel_exporter 0.1.0, commit 1a2b3c4" for a header line. The "(revision …)"
# of --version is left out: it is the commit the build directory was configured at, which later
# builds in the same directory do not update, so it can name an older commit than the one built.
qrel_version() {
  local v
  v=$("$1" --version 2>&1 | head -1 | sed 's/ (revision [^)]*)//') || true
  echo "${v:-${1##*/} ?}, commit $(bench_commit)"
}

# The columns of a result row, in order (bench/README.md says what each holds).
BENCH_COLUMNS=(bench shape size stat qrel_s floor_s x_floor peer peer_s heap broker_ms goal verdict commit date load note)

# bench_result COLUMN=VALUE...: one result row, appended to the file $BENCH_RESULTS names (with
# the header line first when the file is empty). Without BENCH_RESULTS it does nothing, so a quick
# look writes no row; bench/all.sh sets it. bench, commit, date and load are filled in (bench from
# the script's name); a column not given is "-". Tabs and newlines in a value become spaces.
bench_result() {
  [ -n "${BENCH_RESULTS:-}" ] || return 0
  local kv col v line=""
  local -A row=([bench]=$(basename "$0" .sh) [commit]=$(bench_commit) [date]=$BENCH_DATE [load]=$BENCH_LOAD)
  for kv in "$@"; do
    col=${kv%%=*}
    [[ " ${BENCH_COLUMNS[*]} " == *" $col "* ]] || die "bench_result: no column \"$col\""
    row[$col]=${kv#*=}
  done
  for col in "${BENCH_COLUMNS[@]}"; do
    v=${row[$col]:--}
    v=${v//$'\t'/ }
    line+=${line:+$'\t'}${v//$'\n'/ }
  done
  [ -s "$BENCH_RESULTS" ] || (IFS=$'\t'; echo "${BENCH_COLUMNS[*]}") > "$BENCH_RESULTS"
  printf '%s\n' "$line" >> "$BENCH_RESULTS"
}

# ratio A B: A / B to two decimals, or "-" when either is missing or B is 0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || a == "-" || b == "" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'; }

# ---- the command line ----

# usage_end: the closing paragraph of a comparing benchmark's --help.
usage_end() {
  cat <<'EOF'

The table goes to stdout, progress lines to stderr. Exit status is 0 whether or not the goal is
met; non-zero only when the benchmark itself could not run.
With BENCH_RESULTS=FILE set, one result row per shape is appended to FILE (bench/all.sh sets it).
EOF
}

# die MESSAGE: the benchmark cannot run: says why, named after the script, and exits 2.
die() { echo "$(basename "$0"): $*" >&2; exit 2; }

# need_num OPTION VALUE: VALUE is a positive integer, else die naming OPTION.
need_num() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: want a positive integer, got \"$2\""; }

# parse_options "OPTION:VARIABLE ..." ARG...: sets VARIABLE to the value of each --OPTION VALUE or
# --OPTION=VALUE among the ARGs; -h or --help shows usage (the caller's function) and exits 0; an
# unknown argument, or an option without its value, dies.
parse_options() {
  local spec=$1 opt val var pair
  shift
  while [ $# -gt 0 ]; do
    case $1 in -h | --help) usage; exit 0 ;; esac
    opt=${1%%=*} var=''
    for pair in $spec; do [ "${pair%%:*}" != "$opt" ] || var=${pair#*:}; done
    [ -n "$var" ] || die "unknown argument \"$1\" (see --help)"
    if [ "$opt" != "$1" ]; then
      val=${1#*=}
      shift
    else
      [ $# -ge 2 ] || die "$opt needs a value"
      val=$2
      shift 2
    fi
    printf -v "$var" '%s' "$val"
  done
}

# ascending_sizes OPTION LIST [WHY]: the words of LIST into the array SIZE_LIST: at least one,
# each a positive integer, in ascending order (WHY, e.g. " (queues are only added)", says why).
ascending_sizes() {
  local n prev=0
  read -ra SIZE_LIST <<<"$2"
  [ ${#SIZE_LIST[@]} -gt 0 ] || die "$1: want at least one number"
  for n in "${SIZE_LIST[@]}"; do
    need_num "$1" "$n"
    [ "$n" -gt "$prev" ] || die "$1: want ascending numbers${3:-}, got \"$2\""
    prev=$n
  done
}

# need_tools TOOL...: each TOOL is in PATH, else die.
need_tools() {
  local t
  for t in "$@"; do command -v "$t" >/dev/null || die "$t not found"; done
}
