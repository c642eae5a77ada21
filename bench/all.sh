#!/usr/bin/env bash
# all.sh: every benchmark's two shapes at one stated size, one benchmark after the other, and the
# table that opens bench/README.md, written from the result rows.
#
# Each benchmark script appends one result row per shape (bench_result in bench/lib.sh) to the
# file BENCH_RESULTS names. This script points it at a temp file for each benchmark and, when
# every run of that benchmark completed, replaces bench/results/NAME.tsv with those rows and
# bench/results/NAME.txt with the runs' full output; a benchmark that fails keeps its previous
# results, and the others still run. Then it rewrites the table between the two marker lines of
# bench/README.md from every bench/results/*.tsv. The commit measured is taken once, before the
# first benchmark (bench_commit: the checkout's HEAD, "dirty" when tracked files differ).
# `--table` runs nothing and only rewrites the table from the stored rows.
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/all.sh [--only "NAME ..."] [--table] [--plan]

  --only "LIST"  run only these benchmarks (the others keep their stored rows), then rewrite
                 the table: redis_streams postgres rabbitmq kafka job_queues
                 beanstalkd activemq delayed_job sources dlq
  --table        run nothing: rewrite the table in bench/README.md from bench/results/*.tsv
  --plan         print each benchmark's command line at the stated size and the length of
                 its stored run (bench/results/NAME.txt), and exit
  -h, --help     this text

Build first (cmake -S . -B build && cmake --build build -j2); each benchmark's --help says what
it needs installed. Run it on a quiet machine: the load average of each run is in its rows.
Progress goes to stderr; exit status 0 when every benchmark run completed.
EOF
}

# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
README=$SRC_DIR/bench/README.md
RESULTS=$SRC_DIR/bench/results
ORDER=(redis_streams postgres rabbitmq kafka job_queues beanstalkd activemq delayed_job sources dlq)
START_MARK='<!-- bench/all.sh: table start -->'
END_MARK='<!-- bench/all.sh: table end -->'

# runs NAME: the arguments of each run of bench/NAME.sh at the stated size, one run a line. Both
# shapes of a benchmark come from one run (rabbitmq's second shape by a policy on the same queues).
runs() {
  case $1 in
    redis_streams) echo "--sizes 10000 --deep-streams 10000" ;; # 11 turns of qrel and the floor
    # sql_exporter's scrapes are spread over one interval of its job (its values' ages): 5 s
    # instead of the default 15 keeps that reading and takes 20 s less of waiting (2 shapes)
    postgres) echo "--sizes 10000000 --sql-exporter-interval 5" ;;
    # one node, 11,000 queues declared once: 1 in 10 with a dead-letter exchange, then every queue
    # (the other nine in ten by a policy)
    rabbitmq) echo "--sizes 11000 --dlq-every 10,1" ;;
    # their defaults: 1,000 partitions; 10,000 queues per kind; 2,000 tubes; 2,000 ActiveMQ
    # queues; 1,000,000 delayed_job rows; 1,000 sources
    kafka | job_queues | beanstalkd | activemq | delayed_job | sources) echo "" ;;
    # its defaults: 100,000 dead letters per shape, a work table of 10M rows; then a tenth of
    # the dead letters (and of the rows, which qrel's memory does not depend on), so that the
    # table shows the peak heap flat across two sizes (issue 28, goal 4: bounded memory)
    dlq) echo ""; echo "--dead-letters 10000 --rows 1000000" ;;
  esac
}

# cell VALUE: VALUE for a table cell ("|" escaped)
cell() { printf '%s' "${1//|/\\|}"; }

# table: the Markdown table of every stored row, benchmarks in ORDER, rows as stored.
table() {
  local name f
  echo "| benchmark | shape | size | qrel | floor | peer | heap + stacks | broker CPU / scrape | goal | verdict | measured | note |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for name in "${ORDER[@]}"; do
    f=$RESULTS/$name.tsv
    if [ ! -s "$f" ]; then
      echo "| \`$name.sh\` | | | not measured yet: \`bench/all.sh --only $name\` | | | | | | | | |"
      continue
    fi
    awk -F'\t' '
      function esc(s) { gsub(/\|/, "\\|", s); return s }
      function v(name) { return esc(row[col[name]]) }
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      {
        split($0, row, "\t")
        q = v("qrel_s") " s" (v("stat") == "fastest" ? " (fastest)" : "")
        fl = v("floor_s") == "-" ? "-" : v("floor_s") " s: " v("x_floor") "×"
        pe = v("peer") (v("peer_s") == "-" ? "" : " " v("peer_s") " s")
        br = v("broker_ms") == "-" ? "-" : v("broker_ms") " ms"
        d = v("date"); sub(/T/, " ", d); sub(/:[0-9][0-9]Z$/, "", d)
        printf "| `%s.sh` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s, %s, load %s | %s |\n",
          v("bench"), v("shape"), v("size"), q, fl, pe, v("heap"), br, v("goal"), v("verdict"),
          v("commit"), d, v("load"), v("note")
      }' "$f"
  done
}

# write_table: the table between the marker lines of bench/README.md, the rest of the file as it was.
write_table() {
  grep -qxF "$START_MARK" "$README" && grep -qxF "$END_MARK" "$README" ||
    die "$README has no marker lines \"$START_MARK\" and \"$END_MARK\""
  table > "$README.table"
  awk -v s="$START_MARK" -v e="$END_MARK" -v t="$README.table" '
    $0 == s { print; while ((getline l < t) > 0) print l; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$README" > "$README.new"
  rm -f "$README.table"
  mv "$README.new" "$README"
  echo "all.sh: wrote the table of bench/README.md ($(cat "$RESULTS"/*.tsv 2>/dev/null | grep -vc '^bench	' || true) rows)" >&2
}

# plan: each command line, and after a benchmark's last one the length of its stored run (the
# line this script appends to bench/results/NAME.txt), so that the plan shows where the time goes.
plan() {
  local name args took total=0
  for name in $ONLY; do
    while IFS= read -r args; do echo "bench/$name.sh${args:+ $args}"; done < <(runs "$name")
    took=''
    [ ! -s "$RESULTS/$name.txt" ] ||
      took=$(sed -nE 's/^all\.sh: [a-z_]+ took ([0-9]+) s \(setup included\), commit ([^,]+),.*/\1 s, at \2/p' "$RESULTS/$name.txt" | tail -1)
    echo "  # its stored run: ${took:-not timed}"
    [ -z "$took" ] || total=$((total + ${took%% *}))
  done
  echo "# stored runs: $total s in all, leaving out those not timed"
}

ONLY="${ORDER[*]}"
TABLE_ONLY=0
PLAN=0
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --table) TABLE_ONLY=1; shift ;;
    --plan) PLAN=1; shift ;;
    --only) [ $# -ge 2 ] || die "--only needs a value"; ONLY=$2; shift 2 ;;
    --only=*) ONLY=${1#*=}; shift ;;
    *) die "unknown argument \"$1\" (see --help)" ;;
  esac
done
for name in $ONLY; do
  [[ " ${ORDER[*]} " == *" $name "* ]] || die "--only: no benchmark \"$name\" (want some of: ${ORDER[*]})"
done

# In a subshell, and the exit on a line of its own: whatever fails in plan, --plan runs nothing.
if [ "$PLAN" = 1 ]; then
  (plan) || die "--plan failed"
  exit 0
fi
if [ "$TABLE_ONLY" = 1 ]; then
  write_table
  exit 0
fi

BENCH_COMMIT=$(bench_commit)
export BENCH_COMMIT
echo "all.sh: measuring commit $BENCH_COMMIT; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# Warn, do not refuse: the rows keep their load average either way.
awk '$1 > 1.5 { exit 1 }' /proc/loadavg ||
  echo "all.sh: WARNING: the machine is busy (load average above 1.5): these figures will be noisy, and they replace the stored rows" >&2
mkdir -p "$RESULTS"
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench-all.XXXXXX")
trap 'rm -rf "$T"' EXIT
failed=()
t_all=$SECONDS
for name in $ONLY; do
  : > "$T/$name.tsv"
  : > "$T/$name.txt"
  ok=1
  t0=$SECONDS
  while IFS= read -r args; do
    echo "all.sh: bench/$name.sh${args:+ $args}" >&2
    read -ra argv <<<"$args"
    if ! BENCH_RESULTS=$T/$name.tsv "$SRC_DIR/bench/$name.sh" "${argv[@]}" >> "$T/$name.txt"; then
      ok=0
      break
    fi
  done < <(runs "$name")
  if [ "$ok" = 1 ] && [ -s "$T/$name.tsv" ]; then
    # The run's own length, kept with its output: the README's table of sizes quotes it.
    echo "all.sh: $name took $((SECONDS - t0)) s (setup included), commit $BENCH_COMMIT, load at its end $(cut -d' ' -f1 /proc/loadavg)" >> "$T/$name.txt"
    cp "$T/$name.tsv" "$RESULTS/$name.tsv"
    cp "$T/$name.txt" "$RESULTS/$name.txt"
    echo "all.sh: $name done in $((SECONDS - t0)) s, $(($(wc -l < "$T/$name.tsv") - 1)) rows" >&2
  else
    failed+=("$name")
    echo "all.sh: $name FAILED after $((SECONDS - t0)) s; its stored rows are kept" >&2
  fi
done
echo "all.sh: every run in $((SECONDS - t_all)) s, commit $BENCH_COMMIT measured" >&2
write_table
[ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]}"
