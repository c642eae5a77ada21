#!/usr/bin/env bash
# `qrel dlq` on beanstalkd's buried jobs, against a real beanstalkd (Debian's 1.12) and a real
# PostgreSQL, with jobs put and buried through beanstalkd's Ruby client (beaneater, from Debian,
# tests/peers/beanstalkd/dlq.rb): each order's job reserved, released once and buried by a failing
# worker; the tubes' ids interleaved with another tube's jobs and with deleted ids, so the id scan
# must keep only its tube's buried jobs; a work table marks some orders charged.
#   inspect: counts per class exact against SQL over the buried orders (a body that is no JSON is
#   unknown); deliveries (reserves), dead_since (the put time); inspect and a dry run leave every
#   job as it was (state, counters, body: `stats-job` and `peek` of every id);
#   replay --yes kicks exactly the not-done jobs back to ready, bodies intact, and a worker then
#   runs each once; a second replay moves nothing;
#   a replay SIGKILLed after 2 kicks, then run again, ends with every job ready exactly once (each
#   kicked once), none lost.
# beanstalkd has no users or permissions: anyone who reaches the port can do anything.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_beanstalkd BP
start_postgres PGP
B=127.0.0.1:$BP
peer() { ruby "$QREL_SOURCE_DIR/tests/peers/beanstalkd/dlq.rb" "$B" "$@"; }
# jobs: every job as `peer jobs` prints it; state TUBE STATE: the orders (or bodies) of TUBE's
# jobs in STATE, sorted.
state() {
  peer jobs | awk -v t="$1" -v s="$2" '$2 == t && $3 == s' | cut -d' ' -f10- \
    | jq -Rr '. as $b | (try (fromjson | .order.id) catch null) // $b' | sort
}

# ---- buried jobs, made by a worker that gives up ----------------------------------------------
t0=$(date +%s)
peer put emails o1 o2 o3
peer put_gone scratch 5
peer put refunds r1 r2
peer put emails o4 o5 o6
peer put_raw emails 'not json'
peer put refunds r3 r4 r5
peer put_gone scratch 2
peer bury emails 7
peer bury refunds 5
peer put emails o7 # ready, not dead
expect_eq "the worker buried 7 jobs of emails and 5 of refunds; o7 is ready" \
  "$(state emails buried | paste -sd' ') $(state refunds buried | paste -sd' ') $(state emails ready)" \
  "not json o1 o2 o3 o4 o5 o6 r1 r2 r3 r4 r5 o7"
psql_do "CREATE TABLE charges (order_id text PRIMARY KEY, charged_at timestamptz)"
# o1 o3 o5 charged (done); o2 claimed but not charged and the rest without a row (not done).
psql_do "INSERT INTO charges VALUES ('o1', now()), ('o2', NULL), ('o3', now()), ('o5', now())"

cat > "$T/qrel.yml" <<YML
sources:
  - name: work
    kind: beanstalkd
    address: $B
    tubes: [emails, refunds]
$(pg_source shop-db "$PGP")
    dedup_tables: [{table: charges, id_column: order_id, handled_at_column: charged_at}]
dead_letters:
YML
for q in emails refunds; do
  printf '  - source: work\n    queue: %s\n    id_field: order.id\n' "$q" >> "$T/qrel.yml"
  printf '    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}\n' >> "$T/qrel.yml"
done
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }
sed 's/queue: refunds/queue: billing/' "$T/qrel.yml" > "$T/billing.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/billing.yml" --source=work --queue=billing > /dev/null 2> "$T/billing.err" || rc=$?
expect_eq "a tube the source does not list: exit 2" "$rc" 2
expect_cmd "... refused at load, with file:line:col" grep -qF \
  'billing.yml:19:12: queue: source "work" lists no tube "billing"' "$T/billing.err"
# snapshot: every job's state, priority, counters and body (not its age, which passes on).
snapshot() { peer jobs; }
not_done() {
  psql_val "SELECT v.id FROM unnest(string_to_array('$(state "$1" buried | grep -v ' ' | paste -sd,)', ',')) AS v(id)
            LEFT JOIN charges c ON c.order_id = v.id WHERE c.charged_at IS NULL ORDER BY 1"
}

# ---- inspect, dry run: counts as SQL says, nothing changed -----------------------------------
snapshot > "$T/before.txt"
sql=$(psql_val "SELECT count(*) FILTER (WHERE c.charged_at IS NOT NULL), count(*) FILTER (WHERE c.charged_at IS NULL)
                FROM unnest(string_to_array('$(state emails buried | grep -v ' ' | paste -sd,)', ',')) AS v(id)
                LEFT JOIN charges c ON c.order_id = v.id" | tr '|' ' ')
rc=0
DLQ inspect --config.file="$T/qrel.yml" --source=work --queue=emails --format=json > "$T/inspect.json" || rc=$?
expect_eq "inspect: exit 0" "$rc" 0
expect_eq "inspect's split equals SQL's (done not_done), the body without JSON unknown, total read" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/inspect.json")" \
  "$sql 1 7 7"
expect_eq "... names: buried, origin, kind, no read effect" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind) \(.read_effect)"' "$T/inspect.json")" \
  "buried emails beanstalkd null"
expect_eq "... each reserved twice (a release, then the bury)" \
  "$(jq -r '"\(.deliveries.min) \(.deliveries.max)"' "$T/inspect.json")" "2 2"
oldest=$(jq -r '.dead_since.oldest | floor' "$T/inspect.json")
expect_cmd "... dead_since is when the oldest was put ($oldest, test began $t0)" \
  test "$oldest" -ge "$((t0 - 1))" -a "$oldest" -le "$(date +%s)"
rc=0
DLQ replay --config.file="$T/qrel.yml" --source=work --queue=emails --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run: exit 0" "$rc" 0
expect_eq "dry run: would move exactly the not-done jobs" \
  "$(jq -r '.replay.would_move[].work_id' "$T/dry.json" | sort)" "$(not_done emails)"
snapshot > "$T/after.txt"
expect_cmd "inspect and the dry run left every job as it was (state, counters, body)" \
  cmp -s "$T/before.txt" "$T/after.txt"

# ---- replay, then a worker runs what came back ------------------------------------------------
want=$(not_done emails)
rc=0
DLQ replay --config.file="$T/qrel.yml" --source=work --queue=emails --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes: exit 0" "$rc" 0
expect_eq "replay moved exactly the not-done jobs" "$(jq -r '.replay.moved[].work_id' "$T/replay.json" | sort)" "$want"
expect_eq "... which are ready again (o7 was already)" "$(state emails ready | paste -sd' ')" \
  "$(printf '%s\no7\n' "$want" | sort | paste -sd' ')"
expect_eq "... the same jobs, bodies and priority intact, kicked once, nothing else changed" \
  "$(snapshot | awk '$2 == "emails" && $3 == "ready" && $8 == 1 { $3 = "buried"; $8 = 0; print }')" \
  "$(grep -E "\"id\":\"($(paste -sd'|' <<<"$want"))\"" "$T/before.txt")"
expect_eq "buried: exactly the done ones and the unknown" "$(state emails buried | paste -sd' ')" "not json o1 o3 o5"
rc=0
DLQ replay --config.file="$T/qrel.yml" --source=work --queue=emails --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing" "$rc $(jq '.replay.moved | length' "$T/again.json")" "0 0"
peer run emails 4 "$T/ran.txt"
expect_eq "a worker ran each replayed job (and o7), once" \
  "$(jq -r '.order.id' "$T/ran.txt" | sort | paste -sd' ')" "$(printf '%s\no7\n' "$want" | sort | paste -sd' ')"
expect_eq "... and nothing of emails is ready" "$(state emails ready | wc -l)" 0

# ---- SIGKILL after 2 kicks, then again --------------------------------------------------------
"$QREL" dlq replay --config.file="$T/qrel.yml" --source=work --queue=refunds --only=all --yes \
  --rate=1/s --timeout=2s > "$T/killed.txt" 2>&1 &
KPID=$!
PIDS+=("$KPID")
# How many jobs of refunds are ready, as stats-tube says (Debian's python3 starts in a tenth of
# the time Ruby does, so the kill lands close behind the 2nd kick).
ready_now() {
  "$QREL_PYTHON" -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats-tube refunds\r\n")
data = b""
while b"\ncurrent-jobs-reserved" not in data:
    data += s.recv(4096)
print(data.split(b"current-jobs-ready: ")[1].split(b"\n")[0].decode())' "$BP"
}
two_back() { [ "$(ready_now)" -ge 2 ]; }
expect_cmd "the paced replay kicks 2 jobs" wait_for -i 0.05 10 "2 jobs ready in refunds" two_back
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
got=$(state refunds ready | wc -l)
# 3 s pass between the 2nd kick and the 5th (one a second): the kill lands before the last, even on a
# loaded machine (at 2/s, 1.5 s was once not enough).
expect_cmd "killed before the end ($got of 5 kicked)" test "$got" -lt 5
expect_eq "killed half-way: every job ready or buried ($got ready)" \
  "$( (state refunds ready; state refunds buried) | sort | paste -sd' ')" "r1 r2 r3 r4 r5"
rc=0
DLQ replay --config.file="$T/qrel.yml" --source=work --queue=refunds --only=all --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0, moved the rest" "$rc $(jq '.replay.moved | length' "$T/rerun.json")" "0 $((5 - got))"
expect_eq "every job of refunds ready, each kicked exactly once" \
  "$(peer jobs | awk '$2 == "refunds" { print $3, $8 }' | sort | uniq -c | awk '{ print $1, $2, $3 }')" "5 ready 1"

# ---- after a restart from the binlog: ids above total-jobs -----------------------------------
# beanstalkd restarted with -b restores its jobs with their ids but counts total-jobs from 0, so
# the scan down from total-jobs finds nothing and must go on upward.
mkdir "$T/binlog"
start_beanstalkd BP2 -b "$T/binlog"
B2=127.0.0.1:$BP2
peer2() { ruby "$QREL_SOURCE_DIR/tests/peers/beanstalkd/dlq.rb" "$B2" "$@"; }
peer2 put emails a1 a2 a3
peer2 bury emails 3
kill "${PIDS[-1]}"
wait "${PIDS[-1]}" 2>/dev/null || true
beanstalkd -l 127.0.0.1 -p "$BP2" -b "$T/binlog" &
PIDS+=("$!")
back() { (exec 3<>"/dev/tcp/127.0.0.1/$BP2") 2>/dev/null; }
expect_cmd "beanstalkd is back from its binlog" wait_for 10 "beanstalkd on $BP2" back
sed "s/address: $B\$/address: $B2/" "$T/qrel.yml" > "$T/binlog.yml"
rc=0
DLQ replay --config.file="$T/binlog.yml" --source=work --queue=emails --yes --format=json > "$T/binlog.json" || rc=$?
expect_eq "restored from the binlog (total-jobs 0): the replay found and kicked all 3" \
  "$rc $(jq -r '"\(.total) \(.read) \([.replay.moved[].work_id] | join(" "))"' "$T/binlog.json")" "0 3 3 a1 a2 a3"

finish
