#!/usr/bin/env bash
# The `queues` section against REAL job runners, installed from npm at pinned versions
# (tests/peers/pg_queues/package-lock.json: pg-boss 12.38.0, 11.1.2, 10.4.2, 9.0.3 and 2.5.2,
# graphile-worker 0.18.0, Node 22) and driven through their own APIs by
# tests/peers/pg_queues/drive.mjs: jobs sent, fetched, held by a live worker (one that beats a
# pg-boss 12 heartbeat), scheduled, failed for good (pg-boss 12 copying one to its queue's
# dead_letter queue) and finished with known handler durations. One scrape must give every series
# of every queue exactly: counts, the dead-letter queue found from pg-boss's queue table, the
# lease (expire_seconds, or the heartbeat), max deliveries, the retry horizon from the queue's
# retry settings, the handler quantiles (0.2/0.4/0.6/0.8 s: p50 0.5, p90 0.74, p99 0.794, max 0.8)
# and the lease margin; ages by range. pg-boss 9, 10, 11 and 12 are told apart by their columns.
# --config.check passes on them all and fails, naming the preset, schema and column, on pg-boss
# 2.5.2's real schema (startIn, not startAfter). Rows ahead of now(): none can be made through
# pg-boss's API (the database's clock stamps every column), so it exports none; graphile-worker
# exports 0, and 1 for a job its worker locked with useNodeTime on a host whose clock runs 10 min
# fast (a second driver process, its Date moved ahead). `qrel check` and the alert expressions of
# alerts/qrel-alerts.yml (promtool) work unchanged on these series.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# The alert check reads YAML: a python3 with PyYAML (Debian's python3-yaml), as alerts.sh.
PY=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "python3 with yaml missing (Debian package python3-yaml)" >&2; exit 1; }

# ---- the runners and Node 22 from npm, installed once into the build dir (as sqs.sh does)
npm_peers_install pg_queues "pg-boss, graphile-worker and Node 22, about 45 s" --prefer-offline
v() { "$NODE" -p "require('$PEERS/node_modules/$1/package.json').version"; }
echo "runners: pg-boss $(v pg-boss) $(v pg-boss-11) $(v pg-boss-10) $(v pg-boss-9) $(v pg-boss-2), graphile-worker $(v graphile-worker), node $("$NODE" --version)"

start_postgres P
# drive NAME [SKEW_SECONDS]: runs drive.mjs (NAME: its ready file and log) until its state is
# reached; with SKEW_SECONDS, the graphile-worker host whose clock runs that fast.
drive() {
  (cd "$PEERS" && exec "$NODE" --no-warnings drive.mjs "postgresql://postgres@127.0.0.1:$P/postgres" \
    "$T/$1.ready" "${@:2}") >"$T/$1.out" 2>&1 &
  local driver=$!
  PIDS+=("$driver")
  for _ in $(seq 1 1200); do
    [ -s "$T/$1.ready" ] && return 0
    kill -0 "$driver" 2>/dev/null || { cat "$T/$1.out" >&2; echo "the driver $1 failed" >&2; exit 1; }
    sleep 0.05
  done
  cat "$T/$1.out" >&2; echo "the driver $1 did not reach its state in 60 s" >&2; exit 1
}
drive runners
drive fast 600

cat > "$T/qrel.yml" <<YML
sources:
$(pg_source live "$P")
    queues:
      - preset: pg_boss
      - preset: pg_boss
        schema: pgboss11
      - preset: pg_boss
        schema: pgboss10
      - preset: pg_boss
        schema: pgboss9
        queues: [jobs9]  # pg-boss 9 keeps its own maintenance jobs beside them
      - preset: graphile_worker
      - preset: graphile_worker
        schema: graphile_fast
YML
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.err" || { cat "$T/scrape.err" >&2; exit 1; }
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="live"' 'kind="postgres"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"

# Every queue, and no other.
expect_eq "the queues reported" \
  "$(grep -o '[{,]queue="[^"]*"' "$T/m.txt" | cut -c2- | sort -u | tr '\n' ' ')" \
  'queue="(none)" queue="beat" queue="billing" queue="billing_dlq" queue="fast" queue="jobs10" queue="jobs11" queue="jobs9" queue="mail" queue="plain" '

age() { # age FILE NAME LOW HIGH labels...: a figure that moves while the test runs
  local file=$1 name=$2 lo=$3 hi=$4; shift 4
  expect_between "$name{$*}" "$(mval "$file" "$name" "$@")" "$lo" "$hi"
}
# series Q N: queue Q has exactly N series of the kind (each asserted below), so nothing unexpected
# appears. The audit's series over them (qrel_audit_failed, which qrel scrape serves as /metrics
# does) are the audit's, asserted on their own.
series() {
  expect_eq "number of series of queue $1" \
    "$(grep -vE '^qrel_audit_' "$T/m.txt" | grep -cF "kind=\"pg_jobs\",queue=\"$1\"")" "$2"
}
# counts Q READY IN_FLIGHT DELAYED REDELIVERED DEAD DLQ
counts() {
  local q="kind=\"pg_jobs\",queue=\"$1\""
  expect_metric "$T/m.txt" "$2" qrel_queue_messages "$q" 'state="ready"'
  expect_metric "$T/m.txt" "$3" qrel_queue_messages "$q" 'state="in_flight"'
  expect_metric "$T/m.txt" "$4" qrel_queue_messages "$q" 'state="delayed"'
  expect_metric "$T/m.txt" "$5" qrel_messages_redelivered "$q"
  expect_metric "$T/m.txt" "$6" qrel_dead_letter_messages "$q" "dead_letter_queue=\"$7\""
}
# ages Q OLDEST DEAD HOLD [DLQ]: the ages of Q's oldest ready message, oldest dead letter (in DLQ,
# default failed) and oldest hold, each 0 (there is none) or B: within [0, B] s, as it moves.
ages() {
  local o="kind=\"pg_jobs\",queue=\"$1\""
  age_or_0 qrel_queue_oldest_message_age_seconds "$2" "$o"
  age_or_0 qrel_dead_letter_oldest_age_seconds "$3" "$o" "dead_letter_queue=\"${5:-failed}\""
  age_or_0 qrel_lease_oldest_age_seconds "$4" "$o"
}
age_or_0() { # age_or_0 NAME B LABELS [LABEL]: 0 when B is (LABEL left out then), else within [0, B]
  if [ "$2" = 0 ]; then
    expect_metric "$T/m.txt" 0 "$1" "$3"
  else
    age "$T/m.txt" "$1" 0 "$2" "${@:3}"
  fi
}
# limits Q TIMEOUT MAX [HORIZON]: Q's lease timeout, max deliveries and, when given, its retry
# horizon (- for none) in seconds.
limits() {
  local o="kind=\"pg_jobs\",queue=\"$1\""
  expect_metric "$T/m.txt" "$2" qrel_lease_timeout_seconds "$o"
  expect_metric "$T/m.txt" "$3" qrel_max_deliveries "$o"
  case ${4-} in
    '') ;;
    -) expect_absent "$T/m.txt" qrel_retry_horizon_seconds "$o" ;;
    *) expect_metric "$T/m.txt" "$4" qrel_retry_horizon_seconds "$o" ;;
  esac
}
# quantiles Q TABLE DONE START P50 P90 P99 MAX: each quantile is at least the known duration the
# driver's handler slept, at most 1 s more (a loaded machine's runner calls after the driver's
# timer: about 20 ms quiet, 160 ms seen at load 10), and equal, to 1e-6, to the same quantile that
# PostgreSQL's percentile_cont gives over the durations the runner itself recorded for Q's
# completed jobs (DONE - START in TABLE): exact, however long the runner took.
quantiles() {
  local name=$1 q="kind=\"pg_jobs\",queue=\"$1\"" table=$2 done_col=$3 start_col=$4 i=0 want got recorded
  shift 4
  local ql=(0.5 0.9 0.99 1)
  for want in "$@"; do
    got=$(mval "$T/m.txt" qrel_handler_duration_seconds "$q" "quantile=\"${ql[$i]}\"")
    expect_between "qrel_handler_duration_seconds{$q,quantile=\"${ql[$i]}\"} against the driver's sleep" \
      "$got" "$want" "$(echo "$want + 1" | bc)"
    recorded=$(psql_val "SELECT percentile_cont(${ql[$i]}) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM $done_col - $start_col))
                         FROM $table WHERE name = '$name' AND state = 'completed'")
    expect_cmd "qrel_handler_duration_seconds{$q,quantile=\"${ql[$i]}\"} = $recorded, as the runner recorded (got $got)" \
      awk -v g="$got" -v r="$recorded" 'BEGIN { d = g - r; exit !(r != "" && d < 1e-6 && d > -1e-6) }'
    i=$((i + 1))
  done
}
# margin Q LEASE WITH_P99: qrel_lease_margin_ratio is lease / max(p99, oldest hold), from the
# values of the same scrape (the hold moves), to 1e-9; heartbeat leases leave the p99 out.
margin() {
  local q="kind=\"pg_jobs\",queue=\"$1\"" hold p99=0 got
  hold=$(mval "$T/m.txt" qrel_lease_oldest_age_seconds "$q")
  [ "$3" = 1 ] && p99=$(mval "$T/m.txt" qrel_handler_duration_seconds "$q" 'quantile="0.99"')
  got=$(mval "$T/m.txt" qrel_lease_margin_ratio "$q")
  expect_cmd "qrel_lease_margin_ratio{$q} = $2 / max(p99 $p99, hold $hold) (got $got)" \
    awk -v m="$got" -v l="$2" -v p="$p99" -v h="$hold" \
    'BEGIN { w = p > h ? p : h; exit !(m > 0 && (m - l / w) / m < 1e-9 && (l / w - m) / m < 1e-9) }'
}

# --- pg-boss 12: billing, whose failed job pg-boss copied to its dead_letter queue billing_dlq
counts billing 2 1 1 0 1 billing_dlq
ages billing 15 15 15 billing_dlq
# horizon: (2 retries + 1) x 60 s + min(7, 5 x 2) + min(7, 5 x 4): backoff capped by retryDelayMax
limits billing 60 3 194
quantiles billing pgboss.job completed_on started_on 0.5 0.74 0.794 0.8
margin billing 60 1
series billing 16
expect_metric "$T/m.txt" 1 qrel_audit_failed 'kind="pg_jobs",queue="billing"' 'rule="dead_letter_queue_not_empty"' 'severity="critical"'
# billing_dlq: the dead-letter copy waits there as a ready job
counts billing_dlq 1 0 0 0 0 failed
ages billing_dlq 15 0 0
limits billing_dlq 900 3 2700
series billing_dlq 11
# plain: no dead_letter queue, so its failed job is its dead letter; nothing pending
counts plain 0 0 0 0 1 failed
ages plain 0 15 0
expect_metric "$T/m.txt" 900 qrel_retry_horizon_seconds 'kind="pg_jobs",queue="plain"'
series plain 9
# beat: held by a live worker beating a 10 s heartbeat: the lease is the heartbeat, the hold is
# since the last beat, and the margin leaves the handler's length out
counts beat 0 1 0 0 0 failed
ages beat 15 0 10
limits beat 10 3 1800
margin beat 10 0
series beat 12

# --- pg-boss 11, 10 and 9: the same state in each one's layout (9 has no queue table: no horizon)
for n in 11 10 9; do
  q=jobs$n
  if [ "$n" = 9 ]; then
    horizon=- n_series=15 done_col=completedon start_col=startedon
  else
    horizon=900 n_series=16 done_col=completed_on start_col=started_on
  fi
  counts "$q" 1 1 0 0 1 failed
  ages "$q" 20 20 20
  limits "$q" 900 1 "$horizon"
  quantiles "$q" "pgboss$n.job" "$done_col" "$start_col" 0.3 0.3 0.3 0.3
  margin "$q" 900 1
  series "$q" "$n_series"
done

# --- graphile-worker 0.18: it deletes a job when it succeeds, so no handler quantiles
counts mail 1 1 1 0 0 failed
ages mail 15 0 15
limits mail 14400 25
margin mail 14400 0
series mail 12
counts '(none)' 0 0 0 0 1 failed
ages '(none)' 0 15 0
series '(none)' 9
expect_absent "$T/m.txt" qrel_handler_duration_seconds 'queue="mail"'

# ---- jobs stamped ahead of now(). pg-boss stamps every column qrel reads with the database's
# now() (its SQL), so no skew can be produced through its API: it has no such series. Neither can
# graphile-worker's default; with useNodeTime its locked_at is the worker host's clock: the job
# held by the host 10 min fast counts ahead, and its hold reads 0 s, not -600.
for q in beat billing billing_dlq jobs10 jobs11 jobs9 plain; do
  expect_absent "$T/m.txt" qrel_future_stamped_rows "queue=\"$q\""
done
expect_metric "$T/m.txt" 0 qrel_future_stamped_rows 'kind="pg_jobs",queue="mail"'
expect_metric "$T/m.txt" 0 qrel_future_stamped_rows 'kind="pg_jobs",queue="(none)"'
expect_eq "graphile-worker with useNodeTime on a host 10 min fast: its lock is ahead" \
  "$(psql_val "SELECT count(*) FROM graphile_fast._private_jobs WHERE locked_at > now() + interval '9 min'")" 1
expect_metric "$T/m.txt" 1 qrel_future_stamped_rows 'kind="pg_jobs",queue="fast"'
counts fast 0 1 0 0 0 failed
ages fast 15 0 0
series fast 12

# ---- --config.check: every layout above reads; pg-boss 2.5.2's does not, and says why
expect_exit "--config.check on pg-boss 9-12 and graphile-worker 0.18 (exit status)" 0 "$T/check-ok.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
sed 's/schema: pgboss9/schema: pgboss2/; s/queues: \[jobs9\].*/queues: [old]/' "$T/qrel.yml" > "$T/old.yml"
expect_exit "--config.check on pg-boss 2.5.2's schema (exit status)" 1 "$T/check-old.out" "$EXPORTER" --config.file="$T/old.yml" --config.check
expect_cmd "--config.check names the preset, schema and missing column" grep -qF \
  "queues preset \"pg_boss\" (schema \"pgboss2\"): column \"startafter\" does not exist in table \"pgboss2.job\"" \
  "$T/check-old.out"

# ---- qrel check and the alerts, unchanged, on these series
expect_exit "qrel check exit status (dead letters: CRITICAL)" 2 "$T/health.out" "$QREL" check --config.file="$T/qrel.yml"
expect_cmd "qrel check names billing's dead-letter queue" grep -q \
  '^CRITICAL live billing: dead-letter queue billing_dlq holds 1 message.*\[dead_letter_queue_not_empty\]$' "$T/health.out"
expect_eq "qrel check findings" "$(grep -c '^CRITICAL live' "$T/health.out")" 6

# The alert rules' own expressions, taken from alerts/qrel-alerts.yml, evaluated by promtool over
# this scrape's series: the dead-letter alert selects the six queues with dead letters, and the
# lease-margin alerts select none (every margin here is far above 2).
"$PY" - "$QREL_SOURCE_DIR/alerts/qrel-alerts.yml" "$T/m.txt" > "$T/promtool-test.yml" <<'PY'
import sys, yaml
rules, metrics = sys.argv[1], sys.argv[2]
expr = {r["alert"]: r["expr"].strip() for g in yaml.safe_load(open(rules))["groups"]
        for r in g["rules"] if "alert" in r}
series = []
for line in open(metrics):
    if line.startswith(("qrel_dead_letter_messages{", "qrel_lease_margin_ratio{")):
        name, value = line.rsplit(" ", 1)
        series.append({"series": name, "values": "%s+0x20" % value.strip()})
dead = [s for s in series if s["series"].startswith("qrel_dead_letter_messages{")
        and float(s["values"].split("+")[0]) > 0]
test = {"rule_files": [rules], "evaluation_interval": "1m", "tests": [{
    "interval": "1m", "input_series": series,
    "promql_expr_test": [
        {"expr": expr["QrelDeadLetterQueueNotEmpty"], "eval_time": "10m", "exp_samples": [
            {"labels": s["series"], "value": float(s["values"].split("+")[0])} for s in dead]},
        {"expr": expr["QrelLeaseMarginLow"], "eval_time": "10m", "exp_samples": []},
        {"expr": expr["QrelLeaseMarginCritical"], "eval_time": "10m", "exp_samples": []},
    ],
    "alert_rule_test": [{"alertname": "QrelLeaseMarginCritical", "eval_time": "15m", "exp_alerts": []}],
}]}
yaml.safe_dump(test, sys.stdout, sort_keys=False)
PY
expect_eq "dead-letter series the alert selects" "$(grep -c '^ *- labels:' "$T/promtool-test.yml")" 6
expect_cmd "promtool test rules with the alerts' expressions on the live series" \
  promtool test rules "$T/promtool-test.yml"

finish
