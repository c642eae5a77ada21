#!/usr/bin/env bash
# The laravel collector against a real Redis, with Laravel itself (Debian's php-laravel-framework
# 8.83 on php-redis): Queue::push and Queue::later, and TWO workers running Laravel's own
# Illuminate\Queue\Worker (what artisan queue:work runs) with retry_after 2 s and a job that runs
# until the test lets it go. The lease trap, live: the first worker's lease runs out, the second
# worker's poll moves the job back and runs it again while the first still runs it; once both are
# busy, nobody polls, and the second lease runs out in the reserved set. Every series is asserted
# against redis-cli reads of the same keys; the expired lease shows while the handlers still run,
# the margin below 1; `qrel check` names a worker timeout (job_timeout) and a job's own timeout at
# or above retry_after; --config.check reads the server; hostile entries are skipped and counted;
# the exporter scrapes as a Redis ACL user allowed only the documented read-only commands; faults
# give up 0 with their reason; no password appears in any output; bad configs fail --config.check.
# Then the database driver on PostgreSQL (kind postgres, preset laravel; tests/peers/laravel/db.php):
# two workers and a lease expired under its handler, failed_jobs of both drivers, every figure
# against SQL; qrel dlq on failed_jobs: inspect, dry run, the Redis driver's refusal, a replay
# SIGKILLed and rerun, a second replay, and Laravel's worker running each replayed job once.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/redis_jobs.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_jobs.sh"

JOBS=$QREL_SOURCE_DIR/tests/peers/laravel/jobs.php
secret="lv-$RANDOM-secret"
# The minimal ACL of docs/kinds/laravel.md: read-only commands, read-only keys.
redis_jobs_start '%R~laravel_database_queues:*' +time +scan +llen +lindex +zcard +zcount +zrange
export REDIS_PORT=$RP REDIS_PASSWORD=$secret RETRY_AFTER=2 LARAVEL_DIR=$T/jobs
mkdir -p "$LARAVEL_DIR"
client() { php "$JOBS" "$@"; }
K=laravel_database_queues # Laravel's default prefix, then queues:<name>
now() { R TIME | head -1; }

scene_start
client push emails
client push emails
client later emails 3600
client push orders 30 # the job's own $timeout: 30 s, past retry_after
for w in w1 w2; do
  # Killed at the end; the timeout bounds them should the test stop early.
  timeout -s KILL 120 php "$JOBS" work orders "$w" > "$T/$w.log" 2>&1 &
  PIDS+=("$!")
done
expect_cmd "a worker runs the job" wait_for 60 "attempt 1" test -e "$LARAVEL_DIR/started.1"
expect_cmd "the lease ran out and the other worker runs the same job again" \
  wait_for 60 "attempt 2" test -e "$LARAVEL_DIR/started.2"
# Both workers are busy now: nobody polls, so the second lease runs out in the reserved set.
lease_out() { [ "$(R ZCOUNT "$K:orders:reserved" -inf "$(now)")" = 1 ]; }
expect_cmd "the second lease ran out under its running handler" \
  wait_for 60 "an expired entry in the reserved set" lease_out
score=$(R ZRANGE "$K:orders:reserved" 0 0 WITHSCORES | tail -1)
t1=$(now)
job_scrape "$T/lv.yml" jobs laravel "retry_after: 2s"
t2=$(($(now) + 1))
expect_eq "neither run has ended" "$(find "$LARAVEL_DIR" -name 'done.*' | wc -l)" 0
expect_states "$P" orders ready="$(R LLEN "$K:orders")" in_flight="$(R ZCARD "$K:orders:reserved")" \
  delayed="$(R ZCARD "$K:orders:delayed")"
expect_states "$P" orders ready=0 in_flight=1 delayed=0
# Two workers run, yet Laravel's Redis driver keeps no registry of workers nor counts of jobs:
# no consumers, no flow counters (docs/kinds/laravel.md), never a made-up 0.
expect_absent "$P" qrel_queue_consumers
expect_absent "$P" qrel_messages_consumed_total
expect_absent "$P" qrel_messages_dead_lettered_total
expect_states "$P" emails ready="$(R LLEN "$K:emails")" in_flight=0 \
  delayed="$(R ZCARD "$K:emails:delayed")"
expect_states "$P" emails ready=2 delayed=1
expect_metric "$P" 1 qrel_lease_expired_messages 'queue="orders"'
expect_metric "$P" 0 qrel_lease_expired_messages 'queue="emails"'
expect_metric "$P" 1 qrel_messages_redelivered 'queue="orders"'
expect_metric "$P" 0 qrel_messages_redelivered 'queue="emails"'
expect_metric "$P" 2 qrel_lease_timeout_seconds 'queue="orders"'
expect_metric "$P" 30 qrel_handler_timeout_seconds 'queue="orders"'
expect_absent "$P" qrel_handler_timeout_seconds 'queue="emails"'
# Held since the pop, the score less retry_after: now - (score - 2), read between t1 and t2.
hold=$(mval "$P" qrel_lease_oldest_age_seconds 'queue="orders"')
expect_between "the hold of orders" "$hold" $((t1 - score + 2)) $((t2 - score + 2))
expect_eq "the margin of orders, retry_after over the hold, is below 1" "$(mval "$P" \
  qrel_lease_margin_ratio 'queue="orders"' | awk '{ print ($1 > 0 && $1 < 1) ? "yes" : $1 }')" yes
expect_eq "the margin is 2 / hold" "$(mval "$P" qrel_lease_margin_ratio 'queue="orders"' |
  awk -v h="$hold" '{ d = $1 - 2 / h; print (d < 1e-9 && d > -1e-9) ? "yes" : $1 " vs 2/" h }')" yes
expect_recent "$P" emails qrel_queue_oldest_message_age_seconds
expect_eq "round trips: TIME and one SCAN page, then the queues" "$(round_trips laravel "$T/lv.log")" 2
# The same scene read through the fault proxy (replies cut into 1- and 7-byte pieces) and TLS.
job_same_via_proxy "$T/lv.yml" jobs

# qrel check: the margin, the job's own timeout (orders), and with job_timeout the workers'
# --timeout at or above retry_after (emails); without job_timeout, emails has no timeout finding.
expect_check "$T/lv.yml" 2 "a lease run out under its handler" "the margin of orders" \
  '^CRITICAL jobs orders: lease 2s, longest hold now .* → margin 0\..*\[lease_margin_below_1\]$' \
  "the job timeout of orders" \
  '^CRITICAL jobs orders: handler timeout 30s, lease 2s: a job running longer than the lease.*queue:work --timeout shorter than the connection.s retry_after.*\[handler_timeout_not_below_lease\]$'
expect_eq "no timeout finding on emails without job_timeout" \
  "$(grep -c '^CRITICAL jobs emails: handler timeout' "$T/check.txt")" 0
job_config "$T/lvt.yml" jobs laravel "retry_after: 2s" "job_timeout: 5s"
expect_check "$T/lvt.yml" 2 "job_timeout 5s against retry_after 2s" "the worker timeout of emails" \
  '^CRITICAL jobs emails: handler timeout 5s, lease 2s: .*\[handler_timeout_not_below_lease\]$'
# --config.check reads the server: fine as qrel, refused with the wrong password.
expect_exit "--config.check live" 0 "$T/cc.out" "$EXPORTER" --config.file="$T/lv.yml" --config.check
sed "s|$T/reader.pass|$T/wrong.pass|" "$T/lv.yml" > "$T/lvw.yml"
expect_exit "--config.check with a wrong password" 1 "$T/ccw.out" "$EXPORTER" \
  --config.file="$T/lvw.yml" --config.check
expect_line "--config.check names the refusal" 'jobs' "$T/ccw.out"

# Let the job go: both runs end; Laravel ran it twice (or more: the first worker to finish may
# take the expired lease again).
touch "$LARAVEL_DIR/release"
expect_cmd "both runs ended" wait_for 60 "done.1 and done.2" \
  test -e "$LARAVEL_DIR/done.1" -a -e "$LARAVEL_DIR/done.2"
for p in "${PIDS[@]: -2}"; do kill "$p" 2>/dev/null || true; done

# Hostile entries no Laravel writes (written by hand: that is the point): skipped and counted, the
# source stays up, the counts stand.
R RPUSH "$K:hostile" 'not json' > /dev/null
R ZADD "$K:hostile:reserved" 5 '{"attempts":1}' > /dev/null
"$QREL" scrape --config.file="$T/lv.yml" > "$T/hostile.prom"
expect_metric "$T/hostile.prom" 1 qrel_collector_up 'source="jobs"'
expect_states "$T/hostile.prom" hostile ready=1 in_flight=1
expect_states "$T/hostile.prom" emails ready=2 delayed=1
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile"' 'reason="not_json"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile"' 'reason="bad_timestamp"'
expect_absent "$T/hostile.prom" qrel_lease_oldest_age_seconds 'queue="hostile"'

# exclude: a queue Laravel made itself (its list and its notify list) is found without the key;
# with exclude ["scr*"] no key of it is read, and it is counted once, not once per key.
client push scratch
expect_excluded laravel scratch "scr*"
expect_states "$T/incl.prom" scratch ready=1
expect_states "$T/excl.prom" emails ready=2 delayed=1

# Round trips do not grow with queues: 30 more queues, still TIME and one SCAN page, then one.
client spread q 30
expect_flat_round_trips laravel "$T/lv.yml" 33 2 ready

# Named queues: one Laravel never saw reads as empty; other queues are not read.
expect_named_queues laravel

# Faults, each beside the healthy source.
job_faults_config laravel "queues: [emails]"
job_faults_check "$T/lv.log"

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key laravel "retry_after not a duration" 'bad.yml:5:18: retry_after: want a duration' \
  "retry_after: 90"
bad_job_key laravel "cluster" 'the laravel kind does not read a Redis Cluster yet' "cluster: true"

# ---- The database driver on PostgreSQL: kind postgres, preset laravel -------------------------
# Laravel's own DatabaseQueue (tests/peers/laravel/db.php, php-pgsql), its tables made by its own
# schema builder as its migrations make them, failed jobs written by its own failer
# (DatabaseUuidFailedJobProvider) for the database AND the Redis driver. Two workers and a job
# held past retry_after 2 s: the lease expires under it; every figure against SQL over the same
# tables with DatabaseQueue's own predicates. Then qrel dlq on failed_jobs.
DB=$QREL_SOURCE_DIR/tests/peers/laravel/db.php
start_postgres PGP
export PGPORT=$PGP PGDATABASE=postgres PGUSER=postgres LARAVEL_DIR=$T/db
mkdir -p "$LARAVEL_DIR"
dbq() { php "$DB" "$@"; }
# One PHP process (each start loads Laravel): the tables; FailJobs o1 o2 o3 on the database and
# r1 on the Redis connection's billing, run by Laravel's worker into failed_jobs; a HeldJob on
# mail (stays ready: no worker reads mail) and one on slow.
dbq scene
psql_do "CREATE TABLE work (order_id text PRIMARY KEY, done_at timestamptz);
         INSERT INTO work VALUES ('o1', now())" # o1's work was done before its job failed
for w in d1 d2; do
  timeout -s KILL 120 php "$DB" work database slow "$w" > "$T/$w.log" 2>&1 &
  PIDS+=("$!")
done
expect_cmd "a database worker runs the held job, the lease runs out, the other worker runs it again" \
  wait_for 60 "held.2" test -e "$LARAVEL_DIR/held.2"
# Both workers busy: nobody pops, so the second reservation's lease runs out under its handler.
EXPIRED_SQL="reserved_at <= EXTRACT(EPOCH FROM now()) - 2"
db_lease_out() { [ "$(psql_val "SELECT count(*) FROM jobs WHERE $EXPIRED_SQL")" = 1 ]; }
expect_cmd "the second lease ran out under its running handler" wait_for 60 "an expired reservation" db_lease_out
{ echo "sources:"; pg_source lvdb "$PGP"; echo "    queues:"
  echo "      - {preset: laravel, retry_after: 2s}"; } > "$T/db.yml"
"$QREL" scrape --config.file="$T/db.yml" > "$T/db.prom" 2> "$T/db.err" || { cat "$T/db.err" >&2; exit 1; }
# DatabaseQueue's own terms per queue: ready (isAvailable: unreserved, available_at passed),
# in flight (reserved), delayed, expired (isReservedButExpired), redelivered; failed_jobs' rows.
sql_db() { # QUEUE: "ready in_flight delayed expired redelivered"
  psql_val "SELECT count(*) FILTER (WHERE reserved_at IS NULL AND available_at <= EXTRACT(EPOCH FROM now())) || ' ' ||
    count(*) FILTER (WHERE reserved_at IS NOT NULL) || ' ' || count(*) FILTER (WHERE reserved_at IS NULL AND available_at > EXTRACT(EPOCH FROM now())) || ' ' ||
    count(*) FILTER (WHERE $EXPIRED_SQL) || ' ' || count(*) FILTER (WHERE attempts > CASE WHEN reserved_at IS NULL THEN 0 ELSE 1 END) FROM jobs WHERE queue = '$1'"
}
qrel_db() {
  local q=$1
  echo "$(mval "$T/db.prom" qrel_queue_messages "queue=\"$q\"" 'state="ready"') $(mval "$T/db.prom" qrel_queue_messages "queue=\"$q\"" 'state="in_flight"') $(mval "$T/db.prom" qrel_queue_messages "queue=\"$q\"" 'state="delayed"') $(mval "$T/db.prom" qrel_lease_expired_messages "queue=\"$q\"") $(mval "$T/db.prom" qrel_messages_redelivered "queue=\"$q\"")"
}
expect_eq "slow: qrel = SQL with DatabaseQueue's predicates" "$(qrel_db slow)" "$(sql_db slow)"
expect_eq "slow: one job, in flight, its lease expired under it, redelivered" "$(qrel_db slow)" "0 1 0 1 1"
expect_eq "mail: qrel = SQL" "$(qrel_db mail)" "$(sql_db mail)"
expect_eq "mail: one ready" "$(qrel_db mail)" "1 0 0 0 0"
expect_metric "$T/db.prom" 2 qrel_lease_timeout_seconds 'queue="slow"'
expect_eq "the margin of slow is below 1" "$(mval "$T/db.prom" qrel_lease_margin_ratio 'queue="slow"' | awk '{ print ($1 > 0 && $1 < 1) ? "yes" : $1 }')" yes
expect_metric "$T/db.prom" "$(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'database' AND queue = 'billing'")" \
  qrel_dead_letter_messages 'queue="billing"' 'dead_letter_queue="failed_jobs"'
expect_metric "$T/db.prom" 3 qrel_dead_letter_messages 'queue="billing"' 'dead_letter_queue="failed_jobs"'
expect_metric "$T/db.prom" "$(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'redis'")" \
  qrel_dead_letter_messages 'queue="billing@redis"' 'dead_letter_queue="failed_jobs"'
expect_metric "$T/db.prom" 1 qrel_dead_letter_messages 'queue="billing@redis"' 'dead_letter_queue="failed_jobs"'
expect_exit "--config.check live (preset laravel)" 0 "$T/dbcc.out" "$EXPORTER" --config.file="$T/db.yml" --config.check
psql_do "ALTER TABLE failed_jobs RENAME TO failed_jobs_x"
expect_exit "--config.check without failed_jobs" 1 "$T/dbcc2.out" "$EXPORTER" --config.file="$T/db.yml" --config.check
expect_line "... names the table" 'failed_jobs' "$T/dbcc2.out"
psql_do "ALTER TABLE failed_jobs_x RENAME TO failed_jobs"
touch "$LARAVEL_DIR/release"
for p in "${PIDS[@]: -2}"; do kill "$p" 2>/dev/null || true; done

# qrel dlq on failed_jobs: the work id from each job's serialized command (its $orderId).
cp "$T/db.yml" "$T/dbq.yml"
cat >> "$T/dbq.yml" <<YML
dead_letters:
  - {source: lvdb, queue: billing, id_field: orderId,
     work_table: {source: lvdb, table: work, id_column: order_id, done_column: done_at}}
  - {source: lvdb, queue: billing@redis, id_field: orderId,
     work_table: {source: lvdb, table: work, id_column: order_id, done_column: done_at}}
YML
# The order of a failed job as SQL reads it from the serialized command: \u0000*\u0000orderId\";s:2:\"o1\"
ORDER_SQL='substring(payload from $$orderId\\";s:[0-9]+:\\"([a-z0-9]+)$$)'
tables_md5() {
  psql_val "SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM jobs t) || ' ' ||
    (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM failed_jobs t) || ' ' ||
    (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM work t)"
}
before=$(tables_md5)
DLQ() { "$QREL" dlq "$@" --config.file="$T/dbq.yml" --source=lvdb 2>>"$T/dlq.err"; }
DLQ inspect --queue=billing --format=json > "$T/dbi.json"
expect_eq "inspect billing: done not_done unknown = SQL over failed_jobs and work" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/dbi.json")" \
  "$(psql_val "SELECT count(*) FILTER (WHERE w.done_at IS NOT NULL) || ' ' || count(*) FILTER (WHERE w.done_at IS NULL) || ' ' ||
    count(*) FILTER (WHERE f.o IS NULL) FROM (SELECT $ORDER_SQL AS o FROM failed_jobs WHERE connection = 'database') f LEFT JOIN work w ON w.order_id = f.o")"
expect_eq "... = what Laravel's worker made" "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.dead_letter_queue) \(.origin)"' "$T/dbi.json")" "1 2 0 failed_jobs billing"
DLQ inspect --queue=billing@redis --format=json > "$T/dbr.json"
expect_eq "inspect billing@redis: the Redis driver's failed job, read from the same table" \
  "$(jq -r '"\(.classes.not_done) \(.deliveries.max)"' "$T/dbr.json")" "1 0"
DLQ replay --queue=billing --format=json > "$T/dbdry.json"
expect_eq "dry run: would move exactly o2 and o3's rows" \
  "$(jq -r '.replay.would_move[].message_id' "$T/dbdry.json" | sort | paste -sd' ')" \
  "$(psql_val "SELECT string_agg(id::text, ' ' ORDER BY id::text) FROM failed_jobs WHERE connection = 'database' AND $ORDER_SQL <> 'o1'")"
rc=0; DLQ replay --queue=billing@redis --yes --format=json > "$T/dbrr.json" || rc=$?
expect_eq "replay of the Redis driver's failed job: refused, exit 1" "$rc" 1
expect_line "... saying why and what to run" 'not this database.s nor that of the entry.s redis block: name its Redis in the laravel entry.s redis block .*, or retry these with artisan queue:retry' "$T/dlq.err"
expect_eq "inspect, dry run and the refusal left jobs, failed_jobs and work identical" "$(tables_md5)" "$before"
# A replay paced to one move a second, SIGKILLed once one row moved, then run again.
"$QREL" dlq replay --config.file="$T/dbq.yml" --source=lvdb --queue=billing --yes --rate=1/s \
  > "$T/dbk.json" 2>>"$T/dlq.err" &
kpid=$!
PIDS+=("$kpid")
one_moved() { [ "$(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'database'")" -le 2 ]; }
expect_cmd "the paced replay moved one job" wait_for -i 0.02 20 "one failed row gone" one_moved
kill -KILL "$kpid"; wait "$kpid" 2>/dev/null || true
expect_eq "killed: every job failed or back, none both, none lost (failed + jobs on billing)" \
  "$(psql_val "SELECT (SELECT count(*) FROM failed_jobs WHERE connection = 'database') + (SELECT count(*) FROM jobs WHERE queue = 'billing')")" 3
DLQ replay --queue=billing --yes --format=json > "$T/dbrerun.json"
expect_eq "the rerun moved the rest; only o1 (done) left failed" \
  "$(psql_val "SELECT count(*) FROM jobs WHERE queue = 'billing'") $(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'database' AND $ORDER_SQL = 'o1'") $(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'database'")" "2 1 1"
expect_eq "each job put back: stamped qrel-replayed 1, attempts 0, available now" \
  "$(psql_val "SELECT count(*) FILTER (WHERE payload LIKE '%\"qrel-replayed\":1%' AND attempts = 0 AND reserved_at IS NULL) FROM jobs WHERE queue = 'billing'")" 2
DLQ replay --queue=billing --yes --format=json > "$T/dbsecond.json"
expect_eq "a second replay moves nothing" "$(jq '.replay.moved | length' "$T/dbsecond.json")" 0
touch "$LARAVEL_DIR/fixed"
dbq drain database billing
expect_eq "Laravel's worker ran each replayed job exactly once (o2, o3), none failed again" \
  "$(sort "$LARAVEL_DIR/ran" | paste -sd' ') $(psql_val "SELECT count(*) FROM jobs WHERE queue = 'billing'")/$(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'database'")" "o2 o3 0/1"

# The Redis driver's failed job r1 put back as artisan queue:retry does, through the laravel
# entry's redis block, as a user allowed Laravel's push and nothing else (EVAL and RPUSH on
# billing's two lists; an EVAL's keys need read and write). A replay is held between its push and
# its delete by a SHARE lock on failed_jobs (it lets the row lock through, not the DELETE),
# SIGKILLed there, then run again: a duplicate, never a loss. Laravel's own worker then runs both
# copies.
replayer="rp-$RANDOM-pass"
printf '%s\n' "$replayer" > "$T/replayer.pass"
chmod 600 "$T/replayer.pass"
R ACL SETUSER replayer on ">$replayer" -@all "~$K:billing" "~$K:billing:notify" +eval +rpush > /dev/null
redis_entry() { # LINE: the laravel entry with a redis block holding LINE's keys
  { echo "sources:"; pg_source lvdb "$PGP"; echo "    queues:"
    echo "      - preset: laravel"
    echo "        retry_after: 2s"
    echo "        redis: {$1}"
    sed -n '/^dead_letters:/,$p' "$T/dbq.yml"; }
}
redis_entry "address: 127.0.0.1:$RP, username: replayer, password_file: $T/replayer.pass" > "$T/dbrq.yml"
redis_entry "adress: 127.0.0.1:$RP" > "$T/dbrbad.yml"
expect_exit "--config.check: an unknown key of the redis block" 1 "$T/dbrbad.out" "$EXPORTER" --config.file="$T/dbrbad.yml" --config.check
expect_line "... named, with the known ones" 'unknown key "adress" in the redis block of preset "laravel".*known keys:.*prefix' "$T/dbrbad.out"
redis_entry "address: 127.0.0.1:$RP, connection: database" > "$T/dbrown.yml"
expect_exit "--config.check: the redis block on the jobs table's own connection" 1 "$T/dbrown.out" "$EXPORTER" --config.file="$T/dbrown.yml" --config.check
expect_line "... refused" 'redis: its connection "database" is the jobs table.s own' "$T/dbrown.out"
R DEL "$K:billing" "$K:billing:notify" > /dev/null # what the drains left (an empty list is no key)
PGAPPNAME=qrel-test-hold psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "BEGIN; LOCK TABLE failed_jobs IN SHARE MODE; SELECT pg_sleep(120)" > /dev/null 2>&1 &
hold=$!
PIDS+=("$hold")
held() { [ "$(psql_val "SELECT count(*) FROM pg_locks WHERE relation = 'failed_jobs'::regclass AND mode = 'ShareLock' AND granted")" = 1 ]; }
expect_cmd "failed_jobs held in SHARE mode" wait_for 20 "the SHARE lock" held
"$QREL" dlq replay --config.file="$T/dbrq.yml" --source=lvdb --queue=billing@redis --yes --format=json \
  > "$T/dbrk.json" 2>>"$T/dlq.err" &
kpid=$!
PIDS+=("$kpid")
pushed_held() {
  [ "$(R LLEN "$K:billing")" = 1 ] &&
    [ "$(psql_val "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'DELETE FROM%failed_jobs%'")" = 1 ]
}
expect_cmd "the replay pushed r1 and waits on its DELETE" wait_for 20 "r1 pushed, its delete waiting" pushed_held
kill -KILL "$kpid"; wait "$kpid" 2>/dev/null || true
psql_val "SELECT count(*) FROM (SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'qrel-test-hold') c" > /dev/null
wait "$hold" 2>/dev/null || true
expect_eq "killed between push and delete: r1 both failed and queued (a duplicate, not a loss)" \
  "$(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'redis'") $(R LLEN "$K:billing") $(R LLEN "$K:billing:notify")" "1 1 1"
DLQ2() { "$QREL" dlq "$@" --config.file="$T/dbrq.yml" --source=lvdb 2>>"$T/dlq.err"; }
DLQ2 replay --queue=billing@redis --yes --format=json > "$T/dbrr2.json"
expect_eq "the rerun moved r1's row: failed_jobs holds no Redis job, billing two copies" \
  "$(jq '.replay.moved | length' "$T/dbrr2.json") $(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'redis'") $(R LLEN "$K:billing") $(R LLEN "$K:billing:notify")" "1 0 2 2"
expect_eq "each copy as queue:retry makes it: attempts 0, stamped qrel-replayed 1, the same job id" \
  "$(R LRANGE "$K:billing" 0 -1 | jq -sr '[map(.attempts), map(."qrel-replayed"), (map(.id) | unique | length)] | flatten | join(" ")')" "0 0 1 1 1"
dbq drain redis billing
expect_eq "Laravel's worker ran r1 twice (the duplicate), none failed again, billing empty" \
  "$(grep -c '^r1$' "$LARAVEL_DIR/ran") $(psql_val "SELECT count(*) FROM failed_jobs WHERE connection = 'redis'") $(R LLEN "$K:billing")" "2 0 0"

finish
