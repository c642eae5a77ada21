#!/usr/bin/env bash
# beanstalkd.sh: kind beanstalkd on many tubes, beside the floor, in two workload shapes:
#   shallow  every tube holds 1 ready job;
#   deep     every tube holds 20 ready jobs, 2 reserved (held by a live worker's connection),
#            2 buried and 2 delayed.
# The jobs are put, reserved and buried by beanstalkd's Ruby client (beaneater, from Debian, as
# tests/integration/beanstalkd.sh drives it), two processes at once, never written by hand; the
# time each setup took is printed. Each shape runs on a fresh beanstalkd.
#
# For each shape it prints the median and fastest collection time of `qrel scrape` (the
# qrel_collector_duration_seconds it reports: connect, every round trip and parsing, without the
# process start), qrel finding its tubes with list-tubes (no `tubes:`, the default); the floor:
# the very commands qrel sent in one scrape, recorded by a relay between qrel and the server
# (beanstalkd has no MONITOR), sent again as one pipeline on an open connection by
# bench/beanstalk_floor.c, which only counts the replies; the ratio of the fastest runs (the goal
# is at most 1.5, read at a size where a scrape takes at least 50 ms); the commands and round
# trips per scrape; and beanstalkd's own CPU (utime + stime of /proc/PID/stat) per qrel scrape
# and per floor run. That CPU grows with the square of the tubes: beanstalkd 1.12 finds a tube by
# name by walking its list of every tube, and a scrape names each tube twice (stats-tube, use),
# so 2,000 tubes, not 10,000 (seconds of beanstalkd's CPU a scrape), are the default. There is no peer: Debian 12 packages no beanstalkd exporter. And qrel's
# memory: a qrel_exporter on the same server, the largest RssAnon (own) and heap + stacks (heap,
# the 2 MiB goal's figure) after each of 3 scrapes. A missed goal is reported, not an error. See
# bench/README.md.
#
# Needs: beanstalkd, ruby-beaneater, python3, curl, cc, and a built qrel (build/qrel and
# build/qrel_exporter, or QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/beanstalkd.sh [--tubes N] [--scrapes N]

  --tubes N     tubes (default 2000)
  --scrapes N   measured runs of qrel and of the floor (default 11)
EOF
  usage_end
}

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/bench/lib.sh"
TUBES=2000
SCRAPES=11
parse_options "--tubes:TUBES --scrapes:SCRAPES" "$@"
need_num --tubes "$TUBES"
need_num --scrapes "$SCRAPES"
need_tools beanstalkd ruby python3 curl cc
ruby -e 'require "beaneater"' 2>/dev/null || die "ruby-beaneater not found"
BUILD=${QREL_BUILD_DIR:-$root/build}
QREL=$BUILD/qrel
[ -x "$QREL" ] || die "build qrel first ($QREL)"
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
FLOOR=$T/beanstalk_floor
cc -O2 -o "$FLOOR" "$root/bench/beanstalk_floor.c"
cleanup() {
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
progress() { printf '%s\n' "$*" >&2; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
# ticks_ms TICKS RUNS: clock ticks as ms per run
ticks_ms() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1000 / hz / n }'; }

# The per-tube jobs of each shape: ready, reserved, buried, delayed.
shape_jobs() { case $1 in shallow) echo "1 0 0 0" ;; deep) echo "20 2 2 2" ;; esac; }

# populate READY HELD BURIED DELAYED: the tubes t0 ... through beaneater, split between two client
# processes (tube i to process i mod 2). Each puts the jobs it will reserve first, more urgent
# (priority 10), reserves and buries BURIED of them and keeps HELD reserved, then puts the ready
# (priority 100) and delayed (1 h) ones; then it says "ready" and keeps its connection, and with
# it the reserved jobs, until it is stopped.
populate() {
  local k
  for k in 0 1; do
    ruby -e '
      require "beaneater"
      addr, flag = ARGV[0], ARGV[7]
      n, ready, held, buried, delayed, part = ARGV[1, 6].map(&:to_i)
      bs = Beaneater.new(addr)
      (part...n).step(2) do |i|
        name = "t#{i}"
        tube = bs.tubes[name]
        (held + buried).times { tube.put("job", pri: 10, ttr: 3600) }
        if held + buried > 0
          bs.tubes.watch!(name)
          buried.times { bs.tubes.reserve(0).bury }
          held.times { bs.tubes.reserve(0) }
        end
        ready.times { tube.put("job", pri: 100, ttr: 60) }
        delayed.times { tube.put("job", pri: 100, ttr: 60, delay: 3600) }
      end
      File.write(flag, "ready")
      sleep
    ' "127.0.0.1:$BP" "$TUBES" "$@" "$k" "$T/filled.$k" 2>> "$T/fill.log" &
    PIDS+=("$!")
    FILLERS+=("$!")
  done
  # Until both have filled their tubes, or one has stopped without (its error is in fill.log).
  for k in 0 1; do
    until [ -s "$T/filled.$k" ]; do
      kill -0 "${FILLERS[k]}" 2>/dev/null || die "filling the tubes failed: $(tail -3 "$T/fill.log")"
      sleep 0.2
    done
  done
}

# capture: the commands of one qrel scrape, recorded by a relay between qrel and the server
# (relay_scrape of bench/lib.sh), into $T/floor.cmds; prints how many.
capture() {
  relay_scrape "$BP" "$T/bench.yml" "$T/floor.cmds"
  grep -c '' "$T/floor.cmds"
}

measure() { # measure SHAPE SETUP_S
  local shape=$1 setup=$2 cmds i qrel qmin floor floor_med c0 broker floor_broker own heap x verdict
  local rt tubes
  cmds=$(capture)
  : > "$T/q.txt"
  for ((i = 0; i < 2; i++)); do "$QREL" scrape --config.file="$T/bench.yml" >/dev/null; done
  c0=$(cpu_ticks "$BPID")
  for ((i = 0; i < SCRAPES; i++)); do
    "$QREL" scrape --config.file="$T/bench.yml" --log.level=debug > "$T/one.prom" 2> "$T/one.log"
    awk '/^qrel_collector_duration_seconds\{/ { print $NF }' "$T/one.prom" >> "$T/q.txt"
  done
  broker=$(ticks_ms $(($(cpu_ticks "$BPID") - c0)) "$SCRAPES")
  [ "$(wc -l < "$T/q.txt")" = "$SCRAPES" ] || die "$shape: a qrel scrape reported no collection time"
  rt=$(sed -nE 's/.*round_trips=([0-9]+).*/\1/p' "$T/one.log" | tail -1)
  tubes=$(grep -c '^qrel_queue_messages{.*state="ready"' "$T/one.prom" || true)
  # every tube, and `default`, which beanstalkd always has
  [ "$tubes" = $((TUBES + 1)) ] || die "$shape: qrel reported $tubes tubes, want $((TUBES + 1))"
  qrel=$(median < "$T/q.txt")
  qmin=$(sort -g "$T/q.txt" | head -1)
  c0=$(cpu_ticks "$BPID")
  read -r floor floor_med _ < <("$FLOOR" "$BP" "$T/floor.cmds" "$SCRAPES")
  floor_broker=$(ticks_ms $(($(cpu_ticks "$BPID") - c0)) "$SCRAPES")
  read -r own heap < <(exporter_mem "$T/bench.yml" 3)
  printf '| %-7s | %6s | %9s | %9s | %17s | %5s | %8s | %11s | %9s | %10s | %7s | %8s |\n' \
    "$shape" "$setup s" "$(ms "$qrel")" "$(ms "$qmin")" \
    "$(awk -v f="$floor" -v m="$floor_med" 'BEGIN { printf "%.1f (%.1f) ms", f * 1000, m * 1000 }')" \
    "$(ratio "$qmin" "$floor")" "$cmds" "${rt:-?}" "$broker ms" "$floor_broker ms" "$own" \
    "$heap $([ "$heap" -le 2048 ] && echo met || echo missed)"
  x=$(ratio "$qmin" "$floor")
  verdict=$(awk -v x="$x" -v q="$qmin" -v h="$heap" 'BEGIN { m = ""
    if (q < 0.05) m = m "; scrape " sprintf("%.1f", q * 1000) " ms, below the 50 ms the goal is read at (raise --tubes)"
    if (x == "-" || x > 1.5) m = m "; " x "x the floor (goal <= 1.5)"
    if (h > 2048) m = m "; heap + stacks " h " KiB (goal <= 2048)"
    print (m == "" ? "met" : "missed: " substr(m, 3)) }')
  bench_result shape="$shape" size="$TUBES tubes" stat=fastest qrel_s="$(fmt "$qmin" %.4f)" \
    floor_s="$(fmt "$floor" %.4f)" x_floor="$x" heap="$heap KiB" broker_ms="$broker" \
    goal="<= 1.5x the floor (fastest runs) at >= 50 ms, heap + stacks <= 2048 KiB" verdict="$verdict" \
    note="$cmds commands in ${rt:-?} round trips a scrape; beanstalkd CPU $floor_broker ms a floor run; setup $setup s"
}

echo "# qrel beanstalkd benchmark, $BENCH_DATE, $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(qrel_version "$QREL")"
echo "# $TUBES tubes, $SCRAPES runs of qrel and the floor; beanstalkd $(beanstalkd -v 2>&1 | awk '{ print $2 }')"
echo "| shape   | setup  | qrel med  | qrel min  | floor min (med)   | ratio | commands | round trips | qrel: CPU | floor: CPU | own_kib | heap_kib |"
echo "|---------|--------|-----------|-----------|-------------------|-------|----------|-------------|-----------|------------|---------|----------|"
t_all=$SECONDS
for shape in shallow deep; do
  BP=''
  start_beanstalkd BP
  BPID=${PIDS[-1]}
  FILLERS=()
  rm -f "$T"/filled.*
  # A minute's timeout: the benchmark times the collections; the default 10 s must not end one,
  # the relayed one least of all.
  printf 'sources:\n  - name: bench\n    kind: beanstalkd\n    address: 127.0.0.1:%s\n    timeout: 60s\n' \
    "$BP" > "$T/bench.yml"
  progress "$shape: filling $TUBES tubes through beaneater"
  t0=$SECONDS
  # shellcheck disable=SC2046 # four numbers
  populate $(shape_jobs "$shape")
  measure "$shape" "$((SECONDS - t0))"
  kill "${FILLERS[@]}" "$BPID" 2>/dev/null || true
  wait "${FILLERS[@]}" "$BPID" 2>/dev/null || true
done
echo "# both shapes in $((SECONDS - t_all)) s (setup included)"
