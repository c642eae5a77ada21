#!/usr/bin/env bash
# `qrel dlq` on RQ's failed job registry, against a real redis-server and a real PostgreSQL, with
# failed jobs made by RQ itself (Debian's python3-rq): orders enqueued through rq.Queue with the
# order as job id (tests/peers/rq/rqdlq.py), run by one `rq worker --burst` while the provider is
# down, so every job fails into rq:failed:<queue>; a work table marks some orders charged.
#   inspect: counts per class exact against SQL over the registry's ids; deliveries, dead_since;
#   inspect, a dry run and a scrape leave Redis byte-identical (DUMP of every key) and the table
#            as it was; the scrape's qrel_dead_letter_classified_messages equal inspect's split;
#   replay --yes moves exactly the not-done jobs back to rq:queue:<queue>, queued as RQ queues
#            them, and a real RQ worker then runs each once; a second replay moves nothing;
#   a replay SIGKILLed after 2 jobs is followed by a refused one (the lock), and once the lock is
#            gone a rerun ends with every job back on its queue exactly once, none lost, one that
#            was already on its queue not pushed twice;
#   the replay stamp: a replayed job's hash says qrel-replayed 1; failed again by RQ's worker and
#            read, replays 1; replayed and failed again, poison (skipped by a default replay);
#   refused: a replay onto a queue RQ does not know (even a dry run), and the move of a job whose
#            hash expired (left in the registry, not queued).
# Redis users with exactly the permissions docs/dlq.md lists run inspect, the dry run and replay.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
start_postgres PGP
R() { redis-cli -p "$RP" "$@"; }
RQPEER=$QREL_SOURCE_DIR/tests/peers/rq
U="redis://127.0.0.1:$RP"
# Debian's python3-rq imports only under Debian's python3, which is $QREL_PYTHON.
enqueue() { (cd "$RQPEER" && "$QREL_PYTHON" rqdlq.py "$U" "$@"); }
worker() { (cd "$RQPEER" && timeout 60 rq worker -u "$U" --burst "$@" >>"$T/worker.log" 2>&1); }

# ---- failed jobs, made by RQ ------------------------------------------------------------------
EMAILS="o1 o2 o3 o4 o5 o6"
REFUNDS="r1 r2 r3 r4 r5"
# shellcheck disable=SC2046,SC2086 # one argument per job
enqueue $(printf 'emails:%s ' $EMAILS) $(printf 'refunds:%s ' $REFUNDS)
worker emails refunds
expect_eq "RQ's worker failed every job into the registries (emails refunds)" \
  "$(R ZCARD rq:failed:emails) $(R ZCARD rq:failed:refunds)" "6 5"
psql_do "CREATE TABLE charges (order_id text PRIMARY KEY, charged_at timestamptz)"
# o1 o3 o5 charged (done); o2 claimed but not charged and the rest without a row (not done).
psql_do "INSERT INTO charges VALUES ('o1', now()), ('o2', NULL), ('o3', now()), ('o5', now())"

# The least permissions of docs/dlq.md: reading the registry and the job hashes (and rq:queues
# for a dry run's origin check); for replay also the move script's commands and the lock's.
echo 'rq-dlq-pw-2718' > "$T/redis.pw"
R ACL SETUSER qrel-inspect on '>rq-dlq-pw-2718' resetkeys '%R~rq:failed:*' '%R~rq:job:*' \
  '%R~rq:queues' -@all +zcard +zrange +hmget +sismember >/dev/null
R ACL SETUSER qrel-replay on '>rq-dlq-pw-2718' resetkeys '~rq:failed:*' '~rq:job:*' '~rq:queue:*' \
  '~rq:queues' '~qrel:replay-lock:rq:failed:*' -@all +zcard +zrange +hmget +sismember +eval +set \
  +get +pexpire +pttl +del +zscore +exists +hset +hdel +hget +expire +sadd +lpos +rpush +zrem >/dev/null
config() { # FILE USER
  cat > "$1" <<YML
sources:
  - name: jobs
    kind: rq
    address: 127.0.0.1:$RP
    username: $2
    password_file: $T/redis.pw
    queues: [emails, refunds]
$(pg_source shop-db "$PGP")
    dedup_tables: [{table: charges, id_column: order_id, handled_at_column: charged_at}]
dead_letters:
YML
  for q in emails refunds; do
    printf '  - source: jobs\n    queue: %s\n    id_field: job_id\n' "$q" >> "$1"
    printf '    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}\n' >> "$1"
  done
}
config "$T/inspect.yml" qrel-inspect
config "$T/replay.yml" qrel-replay
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }
# An id_field RQ keeps pickled is refused at load, with where and why.
sed 's/id_field: job_id/id_field: order_id/' "$T/inspect.yml" > "$T/pickled.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/pickled.yml" --source=jobs --queue=emails > /dev/null 2> "$T/pickled.err" || rc=$?
expect_eq "id_field order_id (inside RQ's pickled arguments): exit 2" "$rc" 2
expect_cmd "... refused with file:line:col and the forms RQ keeps as text" grep -qF \
  "pickled.yml:18:15: id_field: want job_id (the job id) or description (the job's description)" "$T/pickled.err"
sed 's/queue: refunds/queue: billing/' "$T/inspect.yml" > "$T/billing.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/billing.yml" --source=jobs --queue=billing > /dev/null 2> "$T/billing.err" || rc=$?
expect_eq "a queue the source does not list: exit 2" "$rc" 2
expect_cmd "... refused at load, with file:line:col" grep -qF \
  'billing.yml:21:12: queue: source "jobs" lists no queue "billing"' "$T/billing.err"
# snapshot: every Redis key and its DUMP (value and encoding, byte for byte), and the table.
snapshot() {
  local keys
  keys=$(R --scan | sort)
  echo "$keys"
  sed 's/.*/DUMP "&"/' <<<"$keys" | R --no-raw
  psql_val "SELECT json_agg(c ORDER BY order_id) FROM charges c"
}
registry() { R ZRANGE "rq:failed:$1" 0 -1 | sort; }
# not_done QUEUE: the registry's ids that have no charged row, as PostgreSQL says.
not_done() {
  psql_val "SELECT v.id FROM unnest(string_to_array('$(registry "$1" | paste -sd,)', ',')) AS v(id)
            LEFT JOIN charges c ON c.order_id = v.id WHERE c.charged_at IS NULL ORDER BY 1"
}

# ---- inspect, dry run: counts as SQL says, nothing changed -----------------------------------
snapshot > "$T/before.txt"
sql=$(psql_val "SELECT count(*) FILTER (WHERE c.charged_at IS NOT NULL), count(*) FILTER (WHERE c.charged_at IS NULL)
                FROM unnest(string_to_array('$(registry emails | paste -sd,)', ',')) AS v(id)
                LEFT JOIN charges c ON c.order_id = v.id" | tr '|' ' ')
rc=0
DLQ inspect --config.file="$T/inspect.yml" --source=jobs --queue=emails --format=json > "$T/inspect.json" || rc=$?
expect_eq "inspect (as the read-only user): exit 0" "$rc" 0
expect_eq "inspect's split equals SQL's (done not_done, then unknown total read)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/inspect.json")" \
  "$sql 0 6 6"
expect_eq "... names: registry, origin, kind, no read effect" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind) \(.read_effect)"' "$T/inspect.json")" \
  "rq:failed:emails emails rq null"
expect_eq "... each ran once (no Retry), and failed since a time" \
  "$(jq -r '"\(.deliveries.min) \(.deliveries.max) \(.dead_since.oldest != null)"' "$T/inspect.json")" "1 1 true"
ended=$(R HGET rq:job:o1 ended_at)
oldest=$(jq -r '.dead_since.oldest' "$T/inspect.json")
expect_cmd "... dead_since is a job's ended_at ($ended, oldest $oldest)" \
  test "$(date -u -d "$ended" +%s)" -le "${oldest%.*}"
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=jobs --queue=emails --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run (as the read-only user): exit 0" "$rc" 0
expect_eq "dry run: would move exactly the not-done jobs" \
  "$(jq -r '.replay.would_move[].message_id' "$T/dry.json" | sort)" "$(not_done emails)"
# The exporter's classification reads the registry the same way, on every scrape (as the
# default user: a collection reads more than the dead letters).
grep -v -e '^    username:' -e '^    password_file:' "$T/inspect.yml" > "$T/scrape.yml"
"$QREL" scrape --config.file="$T/scrape.yml" > "$T/m.txt" 2>> "$T/dlq.err"
f='queue="emails",dead_letter_queue="failed"'
expect_eq "a scrape classifies the registry as inspect does (done not_done unknown)" \
  "$(for w in "done" not_done unknown; do mval "$T/m.txt" qrel_dead_letter_classified_messages "$f" "work=\"$w\""; done | paste -sd' ')" \
  "$sql 0"
expect_eq "... and counts its dead letters by replay stamp: none replayed yet (never once poison)" \
  "$(for r in never once poison; do mval "$T/m.txt" qrel_dead_letter_replayed_messages "$f" "replays=\"$r\""; done | paste -sd' ')" \
  "6 0 0"
snapshot > "$T/after.txt"
expect_cmd "inspect, the dry run and the scrape left Redis byte-identical (every key's DUMP) and the table" \
  cmp -s "$T/before.txt" "$T/after.txt"

# ---- replay, then RQ runs what came back -----------------------------------------------------
want=$(not_done emails)
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes: exit 0" "$rc" 0
expect_eq "replay moved exactly the not-done jobs" "$(jq -r '.replay.moved[].message_id' "$T/replay.json" | sort)" "$want"
expect_eq "... which are on rq:queue:emails, once each" "$(R LRANGE rq:queue:emails 0 -1 | sort)" "$want"
expect_eq "... queued as RQ queues a job (status origin started_at ended_at exc_info)" \
  "$(R HMGET rq:job:o2 status origin started_at ended_at exc_info | paste -sd' ')" "queued emails   "
expect_eq "... stamped qrel-replayed 1 in the job hash" "$(R HGET rq:job:o2 qrel-replayed)" 1
expect_eq "the registry keeps exactly the done ones" "$(registry emails)" "$(printf 'o1\no3\no5')"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing, the queue as it was" \
  "$rc $(jq '.replay.moved | length' "$T/again.json") $(R LLEN rq:queue:emails)" "0 0 $(grep -c . <<<"$want")"
R SET rqdlq:phase fixed >/dev/null
worker emails
expect_eq "RQ's worker ran each replayed job, once" "$(R SMEMBERS rqdlq:ran | sort) $(R GET rqdlq:runs)" \
  "$want $(grep -c . <<<"$want")"
expect_eq "... and the queue is empty, the done ones still failed" \
  "$(R LLEN rq:queue:emails) $(R ZCARD rq:failed:emails)" "0 3"

# ---- SIGKILL after 2 moves, then again --------------------------------------------------------
R SET rqdlq:phase down >/dev/null
"$QREL" dlq replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes \
  --rate=1/s --timeout=2s > "$T/killed.txt" 2>&1 &
KPID=$!
PIDS+=("$KPID")
two_back() { [ "$(R LLEN rq:queue:refunds)" -ge 2 ]; }
expect_cmd "the paced replay puts 2 jobs back" wait_for -i 0.02 10 "2 jobs on rq:queue:refunds" two_back
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
got=$(R LLEN rq:queue:refunds)
# 3 s pass between the 2nd move and the 5th (one a second): the kill lands before the last, even on a
# loaded machine (at 2/s, 1.5 s was once not enough).
expect_cmd "killed before the end ($got of 5 back)" test "$got" -lt 5
expect_eq "killed half-way: every job on its queue or in the registry, none in both ($got back)" \
  "$( (R LRANGE rq:queue:refunds 0 -1; registry refunds) | sort | paste -sd' ')" "$REFUNDS"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes > /dev/null || rc=$?
expect_eq "a replay while the killed one's lock lives is refused (exit 1)" "$rc" 1
expect_cmd "... saying another replay is running" \
  grep -qF 'another replay of "rq:failed:refunds" is running' "$T/dlq.err"
expect_eq "... and moved nothing" "$(R LLEN rq:queue:refunds)" "$got"
# The kill is known, so the lock may go now (docs/dlq.md) rather than after it expires.
R DEL qrel:replay-lock:rq:failed:refunds >/dev/null
# A job put back by someone else meanwhile but left in the registry: not pushed a second time.
stray=$(registry refunds | tail -1)
R RPUSH rq:queue:refunds "$stray" >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0, moved the rest" "$rc $(jq '.replay.moved | length' "$T/rerun.json")" "0 $((5 - got))"
expect_eq "every job on rq:queue:refunds exactly once ($stray too), the registry empty" \
  "$(R LRANGE rq:queue:refunds 0 -1 | sort | paste -sd' ') $(R ZCARD rq:failed:refunds)" "$REFUNDS 0"

# ---- the replay stamp: dead again by RQ's worker, then poison (issue 24) ----------------------
# The provider is still down: RQ's worker fails the replayed jobs again, keeping the stamp (RQ
# saves a job with HSET and leaves a field it does not know).
worker refunds
DLQ inspect --config.file="$T/replay.yml" --source=jobs --queue=refunds --format=json > "$T/once.json"
expect_eq "failed again after one replay: replays once for all 5 (never once poison unknown)" \
  "$(jq -c '[.replays.never, .replays.once, .replays.poison, .replays.unknown]' "$T/once.json")" '[0,5,0,0]'
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes > /dev/null
expect_eq "replayed again: qrel-replayed 2" "$(R HGET rq:job:r1 qrel-replayed)" 2
worker refunds
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes --format=json > "$T/poison.json"
expect_eq "failed again: 5 poison jobs, listed with replays 2, skipped by the default replay" \
  "$(jq -c '[.replays.poison, ([.samples.poison[].replays] | unique), .replay.skipped.poison.count, (.replay.moved | length)]' "$T/poison.json")" \
  '[5,[2],5,0]'

# ---- refusals: a queue RQ does not know; a job whose hash expired ----------------------------
R SREM rq:queues rq:queue:emails >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --only=all > /dev/null || rc=$?
expect_eq "a queue gone from rq:queues: even the dry run is refused (exit 1)" "$rc" 1
expect_cmd "... saying so" grep -qF 'RQ does not know queue "emails" (it is not in rq:queues' "$T/dlq.err"
R SADD rq:queues rq:queue:emails >/dev/null
R DEL rq:job:o5 >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --only=all --yes --format=json > "$T/expired.json" || rc=$?
expect_eq "--only=all with o5's hash expired: exit 1, o1 o3 moved, o5 failed" \
  "$rc $(jq -r '[.replay.moved[].message_id] + [.replay.failed[].message_id] | join(" ")' "$T/expired.json")" "1 o1 o3 o5"
expect_cmd "... as a hash gone, left in the registry" \
  bash -c "jq -r '.replay.failed[0].error' '$T/expired.json' | grep -qF 'rq:job:o5 is gone (expired)' && [ \"\$(redis-cli -p $RP ZRANGE rq:failed:emails 0 -1)\" = o5 ]"
expect_eq "... and not queued" "$(R LRANGE rq:queue:emails 0 -1 | sort | paste -sd' ')" "o1 o3"

finish
