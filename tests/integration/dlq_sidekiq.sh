#!/usr/bin/env bash
# `qrel dlq` on Sidekiq's dead set, against a real redis-server and a real PostgreSQL, with dead
# jobs made by Sidekiq itself (Debian's ruby-sidekiq 6.4): orders pushed through the client
# (tests/peers/sidekiq/dlq.rb, the order as the job's first argument) on two queues, run by one
# `sidekiq` process while the provider is down, so each job (retry: 0) dies into `dead`; a work
# table marks some orders charged.
#   inspect: counts per class exact against SQL over the dead set's orders; deliveries,
#   dead_since; inspect and a dry run leave Redis byte-identical (DUMP of every key);
#   replay --yes moves exactly the not-done jobs to queue:<queue>, as Sidekiq's retry pushes them
#            (retry_count one less, enqueued_at now, error fields kept) plus the stamp
#            qrel-replayed: 1; a second replay moves nothing;
#   a replay SIGKILLed after 2 jobs is followed by a refused one (the lock), and once the lock is
#            gone a rerun ends with every job on its queue exactly once, none lost;
#   a real Sidekiq process then runs each replayed job once, the stamp reaching it harmlessly;
#            one that dies again carries qrel-replayed: 1 in the dead set, and its next replay
#            writes 2 (read() took the 1);
#   refused: a queue Sidekiq does not know (even a dry run).
# Redis users with exactly the permissions docs/dlq.md lists run inspect, the dry run and replay.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
start_postgres PGP
R() { redis-cli -p "$RP" "$@"; }
PEER=$QREL_SOURCE_DIR/tests/peers/sidekiq/dlq.rb
export REDIS_URL="redis://127.0.0.1:$RP"
push() { ruby "$PEER" push "$@" 2>>"$T/client.log"; }
# One Sidekiq process at a time, one thread; -t 2: a TERM ends it within 2 s. The timeout bounds
# it should the test stop early.
worker_start() {
  timeout -s KILL 120 sidekiq -r "$PEER" -q emails -q refunds -c 1 -t 2 >>"$T/sidekiq.log" 2>&1 &
  WORKER=$!
  PIDS+=("$WORKER")
}
worker_stop() {
  kill -TERM "$WORKER" 2>/dev/null || true # timeout hands the TERM on to sidekiq
  wait "$WORKER" 2>/dev/null || true
}
# orders QUEUE: the orders (first arguments) of QUEUE's jobs in the dead set, sorted.
orders() { R ZRANGE dead 0 -1 | jq -r --arg q "$1" 'select(.queue == $q) | .args[0]' | sort; }
dead_count() { [ "$(R ZCARD dead)" = "$1" ]; }

# ---- dead jobs, made by Sidekiq ---------------------------------------------------------------
EMAILS="o1 o2 o3 o4 o5 o6"
REFUNDS="r1 r2 r3 r4 r5"
# shellcheck disable=SC2086 # one argument per order
push emails $EMAILS
# shellcheck disable=SC2086
push refunds $REFUNDS
worker_start
expect_cmd "Sidekiq killed every job into the dead set (retry: 0)" \
  wait_for 60 "11 dead jobs" dead_count 11
worker_stop
expect_eq "... 6 of emails, 5 of refunds" "$(orders emails | paste -sd' ') $(orders refunds | paste -sd' ')" \
  "$EMAILS $REFUNDS"
psql_do "CREATE TABLE charges (order_id text PRIMARY KEY, charged_at timestamptz)"
# o1 o3 o5 charged (done); o2 claimed but not charged and the rest without a row (not done).
psql_do "INSERT INTO charges VALUES ('o1', now()), ('o2', NULL), ('o3', now()), ('o5', now())"

# The least permissions of docs/dlq.md: reading the dead set (and the queues set for a dry run's
# origin check); for replay also the move script's commands and the lock's.
echo 'sk-dlq-pw-3141' > "$T/redis.pw"
R ACL SETUSER qrel-inspect on '>sk-dlq-pw-3141' resetkeys '%R~dead' '%R~queues' \
  -@all +zcard +zrange +sismember >/dev/null
R ACL SETUSER qrel-replay on '>sk-dlq-pw-3141' resetkeys '~dead' '~queues' '~queue:*' \
  '~qrel:replay-lock:dead:*' -@all +zcard +zrange +sismember +eval +set +get +pexpire +pttl +del \
  +zscore +sadd +lpush +zrem >/dev/null
config() { # FILE USER
  cat > "$1" <<YML
sources:
  - name: jobs
    kind: sidekiq
    address: 127.0.0.1:$RP
    username: $2
    password_file: $T/redis.pw
    queues: [emails, refunds]
$(pg_source shop-db "$PGP")
    dedup_tables: [{table: charges, id_column: order_id, handled_at_column: charged_at}]
dead_letters:
YML
  for q in emails refunds; do
    printf '  - source: jobs\n    queue: %s\n    id_field: args.0\n' "$q" >> "$1"
    printf '    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}\n' >> "$1"
  done
}
config "$T/inspect.yml" qrel-inspect
config "$T/replay.yml" qrel-replay
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }
sed 's/id_field: args.0/id_field: args..0/' "$T/inspect.yml" > "$T/badid.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/badid.yml" --source=jobs --queue=emails > /dev/null 2> "$T/badid.err" || rc=$?
expect_eq "an id_field with an empty key: exit 2" "$rc" 2
expect_cmd "... refused with file:line:col and the forms" grep -qF \
  'badid.yml:18:15: id_field: want a key of the job payload' "$T/badid.err"
# snapshot: every Redis key and its DUMP (value and encoding, byte for byte), and the table.
snapshot() {
  local keys
  keys=$(R --scan | sort)
  echo "$keys"
  sed 's/.*/DUMP "&"/' <<<"$keys" | R --no-raw
  psql_val "SELECT json_agg(c ORDER BY order_id) FROM charges c"
}
# not_done QUEUE: the queue's dead orders that have no charged row, as PostgreSQL says.
not_done() {
  psql_val "SELECT v.id FROM unnest(string_to_array('$(orders "$1" | paste -sd,)', ',')) AS v(id)
            LEFT JOIN charges c ON c.order_id = v.id WHERE c.charged_at IS NULL ORDER BY 1"
}

# ---- inspect, dry run: counts as SQL says, nothing changed -----------------------------------
snapshot > "$T/before.txt"
sql=$(psql_val "SELECT count(*) FILTER (WHERE c.charged_at IS NOT NULL), count(*) FILTER (WHERE c.charged_at IS NULL)
                FROM unnest(string_to_array('$(orders emails | paste -sd,)', ',')) AS v(id)
                LEFT JOIN charges c ON c.order_id = v.id" | tr '|' ' ')
rc=0
DLQ inspect --config.file="$T/inspect.yml" --source=jobs --queue=emails --format=json > "$T/inspect.json" || rc=$?
expect_eq "inspect (as the read-only user): exit 0" "$rc" 0
expect_eq "inspect's split equals SQL's (done not_done, then unknown total read)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read)"' "$T/inspect.json")" \
  "$sql 0 6 6"
expect_eq "... names: dead set, origin, kind, no read effect" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.kind) \(.read_effect)"' "$T/inspect.json")" \
  "dead emails sidekiq null"
expect_eq "... each ran once (retry_count 0), and died at a time" \
  "$(jq -r '"\(.deliveries.min) \(.deliveries.max) \(.dead_since.oldest != null)"' "$T/inspect.json")" "1 1 true"
died=$(R ZRANGE dead 0 0 WITHSCORES | tail -1)
oldest=$(jq -r '.dead_since.oldest' "$T/inspect.json")
expect_cmd "... dead_since is the dead set's score ($died, oldest $oldest)" \
  test "${oldest%.*}" -eq "${died%.*}"
rc=0
DLQ replay --config.file="$T/inspect.yml" --source=jobs --queue=emails --format=json > "$T/dry.json" || rc=$?
expect_eq "dry run (as the read-only user): exit 0" "$rc" 0
expect_eq "dry run: would move exactly the not-done jobs" \
  "$(jq -r '.replay.would_move[].work_id' "$T/dry.json" | sort)" "$(not_done emails)"
# The exporter's classification reads the dead set the same way, on every scrape (as the
# default user: a collection reads more than the dead letters).
grep -v -e '^    username:' -e '^    password_file:' "$T/inspect.yml" > "$T/scrape.yml"
"$QREL" scrape --config.file="$T/scrape.yml" > "$T/m.txt" 2>> "$T/dlq.err"
f='queue="emails",dead_letter_queue="dead"'
expect_eq "a scrape classifies the dead set as inspect does (done not_done unknown)" \
  "$(for w in "done" not_done unknown; do mval "$T/m.txt" qrel_dead_letter_classified_messages "$f" "work=\"$w\""; done | paste -sd' ')" \
  "$sql 0"
expect_eq "... and counts its dead letters by replay stamp: none replayed yet (never once poison)" \
  "$(for r in never once poison; do mval "$T/m.txt" qrel_dead_letter_replayed_messages "$f" "replays=\"$r\""; done | paste -sd' ')" \
  "6 0 0"
snapshot > "$T/after.txt"
expect_cmd "inspect, the dry run and the scrape left Redis byte-identical (every key's DUMP) and the table" \
  cmp -s "$T/before.txt" "$T/after.txt"

# ---- replay ----------------------------------------------------------------------------------
want=$(not_done emails)
o2=$(R ZRANGE dead 0 -1 | jq -c 'select(.args[0] == "o2")')
t0=$(date +%s)
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --yes --format=json > "$T/replay.json" || rc=$?
expect_eq "replay --yes: exit 0" "$rc" 0
expect_eq "replay moved exactly the not-done jobs" "$(jq -r '.replay.moved[].work_id' "$T/replay.json" | sort)" "$want"
expect_eq "... which are on queue:emails, once each" \
  "$(R LRANGE queue:emails 0 -1 | jq -r '.args[0]' | sort)" "$want"
back=$(R LRANGE queue:emails 0 -1 | jq -c 'select(.args[0] == "o2")')
expect_eq "... pushed as Sidekiq's retry pushes it: retry_count one less, error kept, the stamp" \
  "$(jq -r '"\(.retry_count) \(.error_class) \(.jid) \(.["qrel-replayed"])"' <<<"$back")" \
  "$(jq -r '"\(.retry_count - 1) \(.error_class) \(.jid) 1"' <<<"$o2")"
expect_cmd "... enqueued_at now (>= $t0)" test "$(jq '.enqueued_at | floor' <<<"$back")" -ge "$t0"
expect_eq "... every other member as it was" \
  "$(jq -cS 'del(.retry_count, .enqueued_at, .["qrel-replayed"])' <<<"$back")" \
  "$(jq -cS 'del(.retry_count, .enqueued_at)' <<<"$o2")"
expect_eq "the dead set keeps exactly the done ones" "$(orders emails | paste -sd' ')" "o1 o3 o5"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --yes --format=json > "$T/again.json" || rc=$?
expect_eq "a second replay: exit 0, moved nothing, the queue as it was" \
  "$rc $(jq '.replay.moved | length' "$T/again.json") $(R LLEN queue:emails)" "0 0 $(grep -c . <<<"$want")"

# ---- SIGKILL after 2 moves, then again --------------------------------------------------------
"$QREL" dlq replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes \
  --rate=1/s --timeout=2s > "$T/killed.txt" 2>&1 &
KPID=$!
PIDS+=("$KPID")
two_back() { [ "$(R LLEN queue:refunds)" -ge 2 ]; }
expect_cmd "the paced replay puts 2 jobs back" wait_for -i 0.02 10 "2 jobs on queue:refunds" two_back
kill -KILL "$KPID"
wait "$KPID" 2>/dev/null || true
got=$(R LLEN queue:refunds)
# 3 s pass between the 2nd move and the 5th (one a second): the kill lands before the last, even on a
# loaded machine (at 2/s, 1.5 s was once not enough).
expect_cmd "killed before the end ($got of 5 back)" test "$got" -lt 5
expect_eq "killed half-way: every job on its queue or in the dead set, none in both ($got back)" \
  "$( (R LRANGE queue:refunds 0 -1 | jq -r '.args[0]'; orders refunds) | sort | paste -sd' ')" "$REFUNDS"
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes > /dev/null || rc=$?
expect_eq "a replay while the killed one's lock lives is refused (exit 1)" "$rc" 1
expect_cmd "... saying another replay is running" \
  grep -qF 'another replay of "dead:refunds" is running' "$T/dlq.err"
expect_eq "... and moved nothing" "$(R LLEN queue:refunds)" "$got"
# The kill is known, so the lock may go now (docs/dlq.md) rather than after it expires.
R DEL qrel:replay-lock:dead:refunds >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=refunds --only=all --yes --format=json > "$T/rerun.json" || rc=$?
expect_eq "the rerun: exit 0, moved the rest" "$rc $(jq '.replay.moved | length' "$T/rerun.json")" "0 $((5 - got))"
expect_eq "every job on queue:refunds exactly once, none left dead" \
  "$(R LRANGE queue:refunds 0 -1 | jq -r '.args[0]' | sort | paste -sd' ') $(orders refunds | wc -l)" "$REFUNDS 0"

# ---- Sidekiq runs what came back; a poison job dies again and is stamped on ------------------
R SET skdlq:phase fixed >/dev/null
R SADD skdlq:poison o2 >/dev/null
runs=$(($(grep -c . <<<"$want") - 1 + 5))
all_ran() { [ "$(R GET skdlq:runs)" = "$runs" ] && [ "$(orders emails | paste -sd' ')" = "o1 o2 o3 o5" ]; }
worker_start
expect_cmd "Sidekiq ran the replayed jobs, and o2 died again" wait_for 60 "$runs runs, o2 dead" all_ran
expect_eq "... each once (the queues empty)" \
  "$(R SMEMBERS skdlq:ran | sort | paste -sd' ') $(R LLEN queue:emails) $(R LLEN queue:refunds)" \
  "$(grep -v o2 <<<"$want" | paste -sd' ') $REFUNDS 0 0"
expect_eq "... each arrived stamped qrel-replayed 1 (r1 o4 o2)" \
  "$(R HMGET skdlq:stamp r1 o4 o2 | paste -sd' ')" "1 1 1"
expect_eq "o2, dead again, carries the stamp 1 in the dead set" \
  "$(R ZRANGE dead 0 -1 | jq -r 'select(.args[0] == "o2") | .["qrel-replayed"]')" 1
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --yes --format=json > "$T/poison.json" || rc=$?
expect_eq "replaying it again: exit 0, moved o2" "$rc $(jq -r '.replay.moved[].work_id' "$T/poison.json")" "0 o2"
stamped2() { [ "$(R ZRANGE dead 0 -1 | jq -r 'select(.args[0] == "o2") | .["qrel-replayed"]')" = 2 ]; }
expect_cmd "... read its stamp 1 and wrote 2: it died again with qrel-replayed 2" \
  wait_for 30 "o2 dead with stamp 2" stamped2
expect_eq "... the job saw 2" "$(R HGET skdlq:stamp o2)" 2
worker_stop

# ---- refused: a queue Sidekiq does not know --------------------------------------------------
R SREM queues emails >/dev/null
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=emails --only=all > /dev/null || rc=$?
expect_eq "a queue gone from the queues set: even the dry run is refused (exit 1)" "$rc" 1
expect_cmd "... saying so" grep -qF 'Sidekiq does not know queue "emails" (it is not in the queues set' "$T/dlq.err"

# ---- a namespace (redis-namespace), beside a member no Sidekiq wrote --------------------------
# The dead job of o1 copied under the prefix shop: by hand, with a member that is no JSON: only
# shop:dead is read (the plain dead set is not), the stray member is passed over, and the job goes
# to shop:queue:emails.
R ZADD shop:dead "$(date +%s)" "$(R ZRANGE dead 0 -1 | grep -F '"args":["o1"]')" >/dev/null
R ZADD shop:dead "$(date +%s)" 'not json' >/dev/null
R SADD shop:queues emails >/dev/null
sed -e '/username:/d' -e '/password_file:/d' -e 's/^    queues: \[emails, refunds\]$/&\n    namespace: shop/' \
  "$T/replay.yml" > "$T/shop.yml"
dead_before=$(R ZCARD dead)
rc=0
DLQ replay --config.file="$T/shop.yml" --source=jobs --queue=emails --only=all --yes --format=json > "$T/shop.json" || rc=$?
expect_eq "namespace shop: read shop:dead only (1 job of emails), moved it" \
  "$rc $(jq -r '"\(.total) \(.classes.done) \(.dead_letter_queue) \([.replay.moved[].work_id] | join(" "))"' "$T/shop.json")" \
  "0 1 1 shop:dead o1"
expect_eq "... onto shop:queue:emails; the stray member stays, the plain dead set untouched" \
  "$(R LRANGE shop:queue:emails 0 -1 | jq -r '.args[0]') $(R ZRANGE shop:dead 0 -1) $(R ZCARD dead)" \
  "o1 not json $dead_before"

finish
