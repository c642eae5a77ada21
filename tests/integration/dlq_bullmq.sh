#!/usr/bin/env bash
# `qrel dlq` on BullMQ's failed set, against a real redis-server and a real PostgreSQL, with failed
# jobs made by BullMQ 6.7 itself (from npm, tests/peers/bullmq/dlq.mjs: one Node process for the
# whole test, driven line by line): orders added through Queue.add with the order as job id and
# data {order}, attempts 1 or 2, run by a real Worker while the provider is down, so every job
# fails into bull:<queue>:failed; a work table marks some orders charged.
#   inspect: counts per class exact against SQL over the failed set; deliveries from atm,
#            dead_since from finishedOn; inspect and a dry run leave Redis byte-identical (DUMP of
#            every key without an expiry, the worker stopped) and the table as it was;
#   replay --yes moves exactly the not-done jobs back to wait, as BullMQ's reprocessJob does (the
#            `waiting` event, the marker, prioritized for a job with a priority), stamped qrel-replayed 1, and a Worker that was already
#            running and idle (drainDelay 300 s: only the marker wakes it) completes each once;
#            a second replay moves nothing;
#   a replay SIGKILLed after 2 jobs is followed by a refused one (the lock), and once the lock is
#            gone a rerun ends with every job on wait exactly once, none lost, each stamped once;
#   the stamp: jobs replayed, dead again (a worker while the provider is down), carry
#            qrel-replayed 1, and a replay of them writes 2;
#   refused: an id_field that names nothing, a queue without a hash tag on a Redis Cluster (at
#            load; redis_cluster.sh replays on a cluster), a replay onto
#            a queue BullMQ does not know (even a dry run), the move of a job whose hash is gone
#            or of a job of a flow (left failed, nothing written).
# Redis users with exactly the permissions docs/dlq.md lists run inspect, the dry run and replay.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

npm_peers_install bullmq "BullMQ 6.7.0, ioredis 6.0.0 and Node 22, about a minute"
start_redis RP
start_postgres PGP
R() { redis-cli -p "$RP" "$@"; }

# ---- BullMQ: one Node process, a command a line on a FIFO -------------------------------------
mkfifo "$T/bq.in"
(cd "$PEERS" && exec "$NODE" dlq.mjs "$RP" "" < "$T/bq.in" > "$T/bq.log" 2>&1) &
PIDS+=("$!")
exec 3> "$T/bq.in"
# bq COMMAND ANSWER: sends COMMAND and waits for ANSWER on a line of its own.
bq() {
  echo "$1" >&3
  wait_for -i 0.1 120 "BullMQ to answer \"$1\" with \"$2\"" grep -qxF "$2" "$T/bq.log" \
    || { cat "$T/bq.log" >&2; return 1; }
}

REFUNDS="r1 r2 r3 r4 r5"
bq "fail orders o1:1 o2:1 o3:1 o4:2 o5:2 o6:2" "failed orders o1:1 o2:1 o3:1 o4:2 o5:2 o6:2"
bq "fail refunds r1:1 r2:1 r3:1 r4:1 r5:1" "failed refunds r1:1 r2:1 r3:1 r4:1 r5:1"
expect_eq "BullMQ's worker failed every job into the failed sets (orders refunds)" \
  "$(R ZCARD bull:orders:failed) $(R ZCARD bull:refunds:failed)" "6 5"
expect_eq "... counting attempts in atm (o1 with 1 attempt, o4 with 2)" \
  "$(R HGET bull:orders:o1 atm) $(R HGET bull:orders:o4 atm)" "1 2"
psql_do "CREATE TABLE charges (order_id text PRIMARY KEY, charged_at timestamptz)"
# o1 o3 o5 charged (done); o2 claimed but not charged and the rest without a row (not done).
psql_do "INSERT INTO charges VALUES ('o1', now()), ('o2', NULL), ('o3', now()), ('o5', now())"

# The least permissions of docs/dlq.md: reading the failed set and the job hashes (and the meta
# key for a dry run's origin check); for replay also the move script's commands and the lock's.
echo 'bq-dlq-pw-3141' > "$T/redis.pw"
R ACL SETUSER qrel-inspect on '>bq-dlq-pw-3141' resetkeys '%R~bull:orders:*' '%R~bull:refunds:*' \
  -@all +zcard +zrange +hmget +exists >/dev/null
R ACL SETUSER qrel-replay on '>bq-dlq-pw-3141' resetkeys '~bull:orders:*' '~bull:refunds:*' \
  '~qrel:replay-lock:bull:orders:failed' '~qrel:replay-lock:bull:refunds:failed' -@all +zcard \
  +zrange +hmget +exists +eval +set +get +pexpire +pttl +del +zscore +type +llen +lpush +rpush \
  +incr +zadd +zrem +hdel +hset +xadd >/dev/null
config() { # FILE USER
  cat > "$1" <<YML
sources:
  - name: jobs
    kind: bullmq
    address: 127.0.0.1:$RP
    username: $2
    password_file: $T/redis.pw
    queues: [orders, refunds]
$(pg_source shop-db "$PGP")
    dedup_tables: [{table: charges, id_column: order_id, handled_at_column: charged_at}]
dead_letters:
  - source: jobs
    queue: orders
    id_field: order
    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}
  - source: jobs
    queue: refunds
    id_field: job_id
    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}
YML
}
config "$T/inspect.yml" qrel-inspect
config "$T/replay.yml" qrel-replay
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }

# ---- refused at load: an id_field naming nothing, an untagged queue on a cluster ---------------
sed 's/id_field: order$/id_field: order..id/' "$T/inspect.yml" > "$T/badid.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/badid.yml" --source=jobs --queue=orders > /dev/null 2> "$T/badid.err" || rc=$?
expect_eq "id_field order..id: exit 2" "$rc" 2
expect_cmd "... refused with file:line:col and the forms a BullMQ job answers" grep -qF \
  "badid.yml:18:15: id_field: want job_id (the job id), name (the job's name) or a key of the job's data" "$T/badid.err"
# On a cluster (redis_cluster.sh replays there) a queue found by discovery needs a hash tag.
sed 's/^    queues: \[orders, refunds\]/    cluster: true/' "$T/inspect.yml" > "$T/cluster.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/cluster.yml" --source=jobs --queue=orders > /dev/null 2> "$T/cluster.err" || rc=$?
expect_eq "an untagged queue of a source on a Redis Cluster: exit 2" "$rc" 2
expect_cmd "... refused at load, saying why" grep -qF \
  'cluster.yml:17:12: queue: "orders": source "jobs" is a Redis Cluster, where every key of a queue and qrel'"'"'s replay lock must be in one hash slot: give the prefix or the queue name a hash tag' "$T/cluster.err"

# snapshot: every Redis key without an expiry (BullMQ's stalled-check keys expire by themselves)
# and its DUMP (value and encoding, byte for byte), and the table.
snapshot() {
  local keys
  keys=$(R --scan | sort)
  keys=$(paste -d' ' <(sed 's/.*/PTTL "&"/' <<<"$keys" | R) <(echo "$keys") | sed -n 's/^-1 //p')
  echo "$keys"
  sed 's/.*/DUMP "&"/' <<<"$keys" | R --no-raw
  psql_val "SELECT json_agg(c ORDER BY order_id) FROM charges c"
}
failed() { R ZRANGE "bull:$1:failed" 0 -1 | sort; }
# not_done QUEUE: the failed set's ids that have no charged row, as PostgreSQL says.
not_done() {
  psql_val "SELECT v.id FROM unnest(string_to_array('$(failed "$1" | paste -sd,)', ',')) AS v(id)
            LEFT JOIN charges c ON c.order_id = v.id WHERE c.charged_at IS NULL ORDER BY 1"
}

# ---- inspect, dry run: counts as SQL says, nothing changed -----------------------------------
snapshot > "$T/before.txt"
sql=$(psql_val "SELECT count(*) FILTER (WHERE c.charged_at IS NOT NULL), count(*) FILTER (WHERE c.charged_at IS NULL)
                FROM unnest(string_to_array('$(failed orders | paste -sd,)', ',')) AS v(id)
                LEFT JOIN charges c ON c.order_id = v.id" | tr '|' ' ')
rc=0
DLQ inspect --config.file="$T/inspect.yml" --source=jobs --queue=orders --format=json > "$T/inspect.json" || rc=$?
expect_eq "inspect (as the read-only user): exit 0" "$rc" 0
expect_eq "inspect's split equals SQL's (done not_done, then unknown total read)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/inspect.json")" \
  "$sql 0 6 6"
expect_eq "... names: failed set, origin, kind, no read effect" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind) \(.read_effect)"' "$T/inspect.json")" \
  "bull:orders:failed orders bullmq null"
expect_eq "... deliveries from atm: 1 to 2 (3 jobs each)" \
  "$(jq -r '"\(.deliveries.min) \(.deliveries.max) \([.deliveries.histogram[].messages] | join(","))"' "$T/inspect.json")" "1 2 3,3"
fin=$(R HGET bull:orders:o1 finishedOn)
oldest=$(jq -r '.dead_since.oldest' "$T/inspect.json")
expect_cmd "... dead_since is the first failure's finishedOn ($fin ms, oldest $oldest s)" \
  awk -v a="$oldest" -v b="$fin" 'BEGIN { exit !(a * 1000 - b < 1 && b - a * 1000 < 1) }'
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=jobs --queue=orders --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run (as the read-only user): exit 0" "$rc" 0
expect_eq "dry run: would move exactly the not-done jobs" \
  "$(jq -r '.replay.would_move[].message_id' "$T/dry.json" | sort)" "$(not_done orders)"
# The exporter's classification reads the failed set the same way, on every scrape (as the
# default user: a collection reads more than the dead letters).
grep -v -e '^    username:' -e '^    password_file:' "$T/inspect.yml" > "$T/scrape.yml"
"$QREL" scrape --config.file="$T/scrape.yml" > "$T/m.txt" 2>> "$T/dlq.err"
f='queue="orders",dead_letter_queue="failed"'
expect_eq "a scrape classifies the failed set as inspect does (done not_done unknown)" \
  "$(for w in "done" not_done unknown; do mval "$T/m.txt" qrel_dead_letter_classified_messages "$f" "work=\"$w\""; done | paste -sd' ')" \
  "$sql 0"
expect_eq "... and counts its dead letters by replay stamp: none replayed yet (never once poison)" \
  "$(for r in never once poison; do mval "$T/m.txt" qrel_dead_letter_replayed_messages "$f" "replays=\"$r\""; done | paste -sd' ')" \
  "6 0 0"
snapshot > "$T/after.txt"
expect_cmd "inspect, the dry run and the scrape left Redis byte-identical (every key's DUMP) and the table" \
  cmp -s "$T/before.txt" "$T/after.txt"

# ---- replay onto a worker that is already running and idle ------------------------------------
bq "work orders" "working orders"
blocked() { R CLIENT LIST | grep -q 'cmd=bzpopmin'; }
expect_cmd "the worker is idle, blocked on the queue's marker" wait_for 30 "BZPOPMIN" blocked
R SET bqdlq:phase fixed >/dev/null
want=$(not_done orders)
# The events stream so far ends here: BullMQ's own retries (attempts 2) wrote waiting events too.
mark=$(R XREVRANGE bull:orders:events + - COUNT 1 | head -1)
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=orders --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes: exit 0" "$rc" 0
expect_eq "replay moved exactly the not-done jobs" "$(jq -r '.replay.moved[].message_id' "$T/replay.json" | sort)" "$want"
expect_eq "the failed set keeps exactly the done ones" "$(failed orders | paste -sd' ')" "o1 o3 o5"
three_done() { [ "$(R ZCARD bull:orders:completed)" = 3 ]; }
expect_cmd "the running worker woke up and completed the 3 replayed jobs" \
  wait_for 30 "3 completed jobs" three_done
expect_eq "... each once (bqdlq:ran, bqdlq:runs)" "$(R SMEMBERS bqdlq:ran | sort) $(R GET bqdlq:runs)" \
  "$want 3"
expect_eq "... each stamped qrel-replayed 1, its failure cleared (failedReason)" \
  "$(for j in $want; do R HMGET "bull:orders:$j" qrel-replayed failedReason; done | paste -sd' ')" "1  1  1 "
expect_eq "... each announced by a waiting event, as BullMQ's retry does" \
  "$(R XRANGE bull:orders:events "($mark" + | paste -sd' ' | grep -o 'event waiting jobId o[0-9] prev failed' | sort | paste -sd,)" \
  "event waiting jobId o2 prev failed,event waiting jobId o4 prev failed,event waiting jobId o6 prev failed"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=orders --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing, no job run again" \
  "$rc $(jq '.replay.moved | length' "$T/again.json") $(R GET bqdlq:runs) $(R ZCARD bull:orders:failed)" "0 0 3 3"

# ---- SIGKILL after 2 moves, then again (no worker on refunds) ---------------------------------
R SET bqdlq:phase down >/dev/null
"$QREL" dlq replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --yes \
  --rate=1/s --timeout=2s > "$T/killed.txt" 2>&1 &
KPID=$!
PIDS+=("$KPID")
two_back() { [ "$(R LLEN bull:refunds:wait)" -ge 2 ]; }
expect_cmd "the paced replay puts 2 jobs back" wait_for -i 0.02 10 "2 jobs on bull:refunds:wait" two_back
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
got=$(R LLEN bull:refunds:wait)
# 3 s pass between the 2nd move and the 5th (one a second): the kill lands before the last, even on a
# loaded machine (at 2/s, 1.5 s was once not enough).
expect_cmd "killed before the end ($got of 5 back)" test "$got" -lt 5
expect_eq "killed half-way: every job on wait or in the failed set, none in both ($got back)" \
  "$( (R LRANGE bull:refunds:wait 0 -1; failed refunds) | sort | paste -sd' ')" "$REFUNDS"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --yes > /dev/null || rc=$?
expect_eq "a replay while the killed one's lock lives is refused (exit 1)" "$rc" 1
expect_cmd "... saying another replay is running" \
  grep -qF 'another replay of "bull:refunds:failed" is running' "$T/dlq.err"
expect_eq "... and moved nothing" "$(R LLEN bull:refunds:wait)" "$got"
# The kill is known, so the lock may go now (docs/dlq.md) rather than after it expires.
R DEL qrel:replay-lock:bull:refunds:failed >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0, moved the rest" "$rc $(jq '.replay.moved | length' "$T/rerun.json")" "0 $((5 - got))"
expect_eq "every job on bull:refunds:wait exactly once, the failed set empty" \
  "$(R LRANGE bull:refunds:wait 0 -1 | sort | paste -sd' ') $(R ZCARD bull:refunds:failed)" "$REFUNDS 0"
stamps() { for j in $REFUNDS; do R HGET "bull:refunds:$j" qrel-replayed; done | paste -sd' '; }
expect_eq "... each stamped once (qrel-replayed 1)" "$(stamps)" "1 1 1 1 1"

# ---- the stamp: dead again after a replay, replayed again --------------------------------------
bq "work refunds" "working refunds"
five_dead() { [ "$(R ZCARD bull:refunds:failed)" = 5 ] && [ "$(R LLEN bull:refunds:wait)" = 0 ]; }
expect_cmd "the provider still down: the replayed refunds died again" wait_for 30 "5 failed refunds" five_dead
expect_eq "... and still carry qrel-replayed 1 (BullMQ keeps the field)" "$(stamps)" "1 1 1 1 1"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --yes --format=json > "$T/poison.json" || rc=$?
expect_eq "replayed again: exit 0, 5 moved" "$rc $(jq '.replay.moved | length' "$T/poison.json")" "0 5"
twice() { [ "$(stamps)" = "2 2 2 2 2" ] && five_dead; }
expect_cmd "... stamped qrel-replayed 2 (what the read found, plus one), and dead again" \
  wait_for 30 "5 refunds stamped 2 and failed" twice
bq stop stopped

# ---- a job with a priority goes back to prioritized, scored as BullMQ scores it ----------------
bq "fail orders p7:1:3" "failed orders p7:1:3"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=orders --yes --format=json > "$T/prio.json" || rc=$?
expect_eq "p7 (priority 3, not done): exit 0, moved alone (o3 o5 are done)" \
  "$rc $(jq -r '[.replay.moved[].message_id] | join(" ")' "$T/prio.json")" "0 p7"
# BullMQ's getPriorityScore: priority * 2^32 + INCR pc (pc was deleted when prioritized emptied).
expect_eq "... into prioritized, score 3 * 2^32 + 1, not onto wait (empty), the marker set" \
  "$(R ZRANGE bull:orders:prioritized 0 -1 WITHSCORES | paste -sd' ') $(R LRANGE bull:orders:wait 0 -1) $(R ZCARD bull:orders:marker)" \
  "p7 12884901889  1"

# ---- refused: a queue BullMQ does not know -----------------------------------------------------
R RENAME bull:orders:meta bqdlq:meta >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=orders --only=all > /dev/null || rc=$?
expect_eq "a queue without its meta key: even the dry run is refused (exit 1)" "$rc" 1
expect_cmd "... saying so" grep -qF 'BullMQ does not know queue "orders" (no key bull:orders:meta' "$T/dlq.err"
R RENAME bqdlq:meta bull:orders:meta >/dev/null
# A job whose hash was removed, and a job of a flow (a parentKey): refused, nothing written.
R DEL bull:orders:o5 >/dev/null
R HSET bull:orders:o3 parentKey bull:parents:p1 >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=orders --only=all --yes --format=json > "$T/refused.json" || rc=$?
expect_eq "--only=all with o3 in a flow and o5's hash gone: exit 1, o1 moved, o3 o5 failed" \
  "$rc $(jq -r '"\([.replay.moved[].message_id] | join(" ")) / \([.replay.failed[].message_id] | join(" "))"' "$T/refused.json")" \
  "1 o1 / o3 o5"
expect_eq "... saying why" "$(jq -r '.replay.failed[].error' "$T/refused.json" | grep -oE 'belongs to a flow|is gone \(removed\)' | paste -sd,)" \
  "belongs to a flow,is gone (removed)"
expect_eq "... both left failed and o3 untouched (its failedReason kept, no stamp), o1 on wait" \
  "$(failed orders | paste -sd' ') $(R HEXISTS bull:orders:o3 failedReason)$(R HEXISTS bull:orders:o3 qrel-replayed) $(R LRANGE bull:orders:wait 0 -1)" \
  "o3 o5 10 o1"

exec 3>&-
finish
