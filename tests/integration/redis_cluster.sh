#!/usr/bin/env bash
# redis_stream with cluster: true against a real Redis Cluster on loopback: six redis-servers
# (three masters, three replicas) made a cluster by redis-cli --cluster create; streams spread over
# the slots are read on every master, and qrel's counts equal a reference read node by node with
# redis-cli. Then a replica takes over its master (CLUSTER FAILOVER) while the exporter keeps its
# map and connections from the scrape before: the next scrape meets MOVED on the old master, learns
# the map again and reads everything. BullMQ itself (the npm peers of bullmq.sh, through
# ioredis's Cluster) makes queues under the hash-tagged prefix {bull} and hash-tagged queues
# spread over the masters; three bullmq sources (discovered, and named queues) read them, before
# and after the failover, equal to BullMQ's own counts. qrel dlq on a bullmq queue of the cluster
# (jobs failed by BullMQ's Worker, a work table in PostgreSQL), seeded by a master that does not
# serve the queue's slot, as users with the documented permissions: inspect and the exporter's join
# (which follows a MOVED) classify as the table says, a dry run changes no key, replay moves exactly
# the not-done jobs to wait stamped, a second one nothing.
# rq, sidekiq and celery refuse cluster: true, and bullmq refuses a named queue without a hash
# tag.
# Last, Bull 4 (npm bull) makes a queue under {legacy}, which a source without `queues:` finds
# by its job counter.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

npm_peers_install bullmq "BullMQ 6.7.0, ioredis 6.0.0 and Node 22, about a minute"

PORTS=()
for _ in 1 2 3 4 5 6; do
  # The bus port of its own: the default, port + 10000, may be past 65535 for a high free port.
  start_redis P --cluster-enabled yes --cluster-port "$(free_port)" --cluster-node-timeout 5000
  PORTS+=("$P")
done
nodes=()
for p in "${PORTS[@]}"; do nodes+=("127.0.0.1:$p"); done
redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes > "$T/create.log" 2>&1 \
  || { cat "$T/create.log" >&2; exit 1; }
all_ok() {
  local p
  for p in "${PORTS[@]}"; do
    redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' || return 1
  done
}
wait_for 60 "every node to say cluster_state:ok" all_ok || exit 1
P1=${PORTS[0]}
C() { redis-cli -c -p "$P1" "$@"; } # follows redirects: the writer's view, not qrel's

# 30 streams spread over the slots, each with a group g: i % 5 + 1 entries, of which i % 3 read
# (pending), the rest not delivered yet (ready). A named stream with a hash tag, and its dead-letter
# stream in the same slot.
for i in $(seq 0 29); do
  C XGROUP CREATE "ev:$i" g 0 MKSTREAM >/dev/null
  for _ in $(seq 0 $((i % 5))); do C XADD "ev:$i" '*' n 1 >/dev/null; done
  [ $((i % 3)) -eq 0 ] || C XREADGROUP GROUP g c COUNT $((i % 3)) STREAMS "ev:$i" '>' >/dev/null
done
C XGROUP CREATE '{orders}' w 0 MKSTREAM >/dev/null
C XADD '{orders}' '*' n 1 >/dev/null
C XADD '{orders}:dead' '*' n 1 >/dev/null
C XADD '{orders}:dead' '*' n 2 >/dev/null
# {mig}: moved to another master by hand below. Two entries, one read (pending), one not (lag 1).
C XGROUP CREATE '{mig}' g 0 MKSTREAM >/dev/null
C XADD '{mig}' '*' n 1 >/dev/null
C XADD '{mig}' '*' n 2 >/dev/null
C XREADGROUP GROUP g c COUNT 1 STREAMS '{mig}' '>' >/dev/null

# BullMQ's queues, written by one node process that then keeps a worker holding a job of mail.
bull_t0=$(date +%s)
(cd "$PEERS" && exec "$NODE" bull.mjs "$P1" "" cluster) > "$T/bull.log" 2>&1 &
PIDS+=("$!")
# qrel dlq's work table (below), made while Node starts and BullMQ fills the cluster.
start_postgres PGP
psql_do "CREATE TABLE charges (order_id text PRIMARY KEY, charged_at timestamptz)"
psql_do "INSERT INTO charges VALUES ('c1', now()), ('c2', NULL), ('c3', now())"
bull_ready() { grep -qx ready "$T/bull.log"; }
wait_for 60 "BullMQ's queues on the cluster" bull_ready || { cat "$T/bull.log" >&2; exit 1; }
# bull_ref: "prefix queue state value" per queue, as BullMQ's getJobCounts said.
bull_ref() {
  awk '$1 == "counts" { for (i = 4; i <= 7; i++) { split($i, kv, "="); print $2, $3, kv[1], kv[2] } }' \
    "$T/bull.log" | sort
}
# bull_got FILE SOURCE PREFIX: the same from a scrape, for one bullmq source (one awk: a sed per
# series made this test's harness cost more CPU than the cluster).
bull_got() {
  awk -v src="source=\"$2\"" -v pfx="$3" '
    /^qrel_(queue_messages|dead_letter_messages)\{/ && index($0, src) {
      match($0, /[{,]queue="[^"]*"/); q = substr($0, RSTART + 8, RLENGTH - 9)
      st = "failed"
      if ($0 ~ /^qrel_queue_messages/) { match($0, /state="[^"]*"/); st = substr($0, RSTART + 7, RLENGTH - 8) }
      print pfx, q, st, $NF
    }' "$1" | sort
}
BREF=$(bull_ref)
expect_eq "BullMQ's counts (5 queues, 4 figures each)" "$(echo "$BREF" | wc -l)" 20
expect_line "mail: a job held by the worker" "^counts {bull} mail ready=2 in_flight=1 delayed=2 failed=1$" "$T/bull.log"
bull_masters() { # the masters holding the bull: queues ({a}, {b}, {c})
  local p
  for p in $(masters); do redis-cli -p "$p" --scan --pattern 'bull:*:meta' | grep -q . && echo "$p"; done
}

# masters: the ports of the masters as the cluster says now.
masters() {
  redis-cli -p "$P1" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ { split($2, a, "[:@]"); print a[2] }'
}
# reference: "stream state value" per stream of ev:*, read on each master by itself (no -c): one
# redis-cli for every XINFO GROUPS of a master, its JSON replies paired with the streams in order.
reference() {
  local p
  for p in $(masters); do
    redis-cli -p "$p" --scan --pattern 'ev:*' > "$T/ref.streams"
    sed 's/^/XINFO GROUPS /' "$T/ref.streams" | redis-cli -p "$p" --json | paste "$T/ref.streams" - |
      jq -Rr 'split("\t") as [$s, $r] | ($r | fromjson)[] |
        "\($s) in_flight \(.pending)", "\($s) ready \(.lag // "")"'
  done | sort
}
# got FILE: the same from a scrape.
got() {
  grep '^qrel_queue_messages{.*queue="ev:' "$1" |
    sed -E 's/.*queue="([^"]*)".*state="([^"]*)".*\} ([^ ]+)$/\1 \2 \3/' | sort
}
per_master() { # how many of the ev: streams each master holds
  local p
  for p in $(masters); do redis-cli -p "$p" --scan --pattern 'ev:*' | wc -l; done
}

expect_eq "masters" "$(masters | wc -l)" 3
expect_cmd "every master holds some of the streams" test "$(per_master | grep -c '^0$')" -eq 0
REF=$(reference)
expect_eq "reference lines (2 per stream)" "$(echo "$REF" | wc -l)" 60

cat > "$T/qrel.yml" <<YML
sources:
  - name: cl
    kind: redis_stream
    cluster: true
    addresses: ["127.0.0.1:${PORTS[0]}", "127.0.0.1:${PORTS[1]}"]
    streams:
      - pattern: "ev:*"
      - name: "{orders}"
        dead_letter_stream: "{stream}:dead"
      - name: "{mig}"
  - name: bq_tag
    kind: bullmq
    cluster: true
    addresses: ["127.0.0.1:${PORTS[2]}"]
    prefix: "{bull}"
  - name: bq_names
    kind: bullmq
    cluster: true
    addresses: ["127.0.0.1:${PORTS[3]}"]
  - name: bq_named
    kind: bullmq
    cluster: true
    addresses: ["127.0.0.1:${PORTS[0]}"]
    queues: ["{a}", "{b}", "{c}"]
YML
start_exporter "$T/qrel.yml" || exit 1
scrape "$T/m1.txt"
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="cl"'
expect_eq "counts of every stream on every master, as redis-cli reads them node by node" \
  "$(got "$T/m1.txt")" "$REF"
expect_metric "$T/m1.txt" 1 qrel_queue_messages 'queue="{orders}"' 'state="ready"'
expect_metric "$T/m1.txt" 2 qrel_dead_letter_messages 'queue="{orders}"'
expect_eq "the hash-tagged queues live on the three masters" "$(bull_masters | wc -l)" 3
# bulls FILE: the three bullmq sources' figures, each named by the prefix it reads
bulls() {
  { bull_got "$1" bq_tag "{bull}"; bull_got "$1" bq_names bull; } | sort
}
BREF_NAMED=$(echo "$BREF" | grep '^bull ')
for s in bq_tag bq_names bq_named; do expect_metric "$T/m1.txt" 1 qrel_collector_up "source=\"$s\""; done
expect_eq "bullmq on every master: BullMQ's own counts" "$(bulls "$T/m1.txt")" "$BREF"
expect_eq "bullmq, named queues: read on the master of each one's slot" \
  "$(bull_got "$T/m1.txt" bq_named bull)" "$BREF_NAMED"
expect_metric "$T/m1.txt" 30 qrel_lease_timeout_seconds 'source="bq_tag"' 'queue="mail"'
for m in qrel_lease_oldest_age_seconds qrel_queue_oldest_message_age_seconds \
  qrel_dead_letter_oldest_age_seconds qrel_dead_letter_newest_age_seconds; do
  expect_between "$m of mail (the time since BullMQ began)" \
    "$(mval "$T/m1.txt" "$m" 'source="bq_tag"' 'queue="mail"')" 0 $(($(date +%s) - bull_t0 + 1))
done

# A replica takes over its master. The exporter still holds the old map and a connection to the
# old master, now a replica, which answers XINFO GROUPS with MOVED.
old=$(masters | head -1)
old_id=$(redis-cli -p "$old" cluster myid)
replica=$(redis-cli -p "$P1" cluster nodes | awk -v m="$old_id" '$4 == m { split($2, a, "[:@]"); print a[2]; exit }')
redis-cli -p "$replica" cluster failover >/dev/null
is_master() { redis-cli -p "$1" role | head -1 | grep -qx master; }
everyone_knows() { # every node's view has the new master and the old one as a replica
  local p
  for p in "${PORTS[@]}"; do
    redis-cli -p "$p" cluster nodes | awk -v r=":$replica@" -v o=":$old@" '
      index($2, r) && $3 ~ /master/ { n++ } index($2, o) && $3 ~ /slave/ { n++ } END { exit n != 2 }' \
      || return 1
  done
}
wait_for 60 "port $replica to be master" is_master "$replica" || exit 1
wait_for 60 "every node to know of the failover" everyone_knows || exit 1
expect_cmd "the old master is a replica now" is_master "$replica"
# A promoted replica may not know a group's lag (XINFO GROUPS says nil, and qrel leaves ready out):
# the reference is read again, and the pending counts have not moved.
REF2=$(reference | awk 'NF == 3')
expect_eq "pending after the failover" "$(echo "$REF2" | grep in_flight)" "$(echo "$REF" | grep in_flight)"
scrape "$T/m2.txt"
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="cl"'
expect_eq "the first scrape after the failover reads every stream again" "$(got "$T/m2.txt")" "$REF2"
expect_metric "$T/m2.txt" 2 qrel_dead_letter_messages 'queue="{orders}"'
for s in bq_tag bq_names bq_named; do expect_metric "$T/m2.txt" 1 qrel_collector_up "source=\"$s\""; done
expect_eq "bullmq after the failover: the same counts" "$(bulls "$T/m2.txt")" "$BREF"
expect_eq "bullmq, named queues, after the failover" "$(bull_got "$T/m2.txt" bq_named bull)" "$BREF_NAMED"

# A slot migrates, by hand as redis-cli --cluster reshard does it: {mig} (named) and ev:0 (found by
# the pattern) are moved to another master while their slots are still the old master's. The old
# one answers {mig} with ASK; the new one's SCAN finds ev:0 in a slot the map gives the old one.
# A scrape in the middle reads both where they are, after ASKING; then the migration ends.
holder() { # the master that holds key K
  local p
  for p in $(masters); do [ "$(redis-cli -p "$p" EXISTS "$1")" = 1 ] && { echo "$p"; return; }; done
}
migrating=()
migrate_start() { # K [KEY...]: K's slot set migrating to another master, and K (or the KEYs) moved
  local src dst slot k
  src=$(holder "$1")
  dst=$(masters | grep -vx "$src" | head -1)
  slot=$(redis-cli -p "$src" CLUSTER KEYSLOT "$1")
  redis-cli -p "$dst" CLUSTER SETSLOT "$slot" IMPORTING "$(redis-cli -p "$src" CLUSTER MYID)" >/dev/null
  redis-cli -p "$src" CLUSTER SETSLOT "$slot" MIGRATING "$(redis-cli -p "$dst" CLUSTER MYID)" >/dev/null
  [ $# -gt 1 ] && shift
  for k in "$@"; do redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "$k" 0 5000 >/dev/null; done
  migrating+=("$slot:$dst:$src")
  last_src=$src last_dst=$dst
}
migrate_start '{mig}'
old_of_mig=$last_src new_of_mig=$last_dst
migrate_start ev:0
# BullMQ's queue {a} half moved: its meta key (so the new master's SCAN finds it), wait and failed.
migrate_start 'bull:{a}:meta' 'bull:{a}:meta' 'bull:{a}:wait' 'bull:{a}:failed'
expect_eq "{mig} is on the importing master (after ASKING)" \
  "$(printf 'ASKING\nEXISTS {mig}\n' | redis-cli -p "$new_of_mig" | tail -1)" 1
expect_line "the old master answers {mig} with ASK" "ASK " <(redis-cli -p "$old_of_mig" XLEN '{mig}' 2>&1)
scrape "$T/m3.txt"
expect_metric "$T/m3.txt" 1 qrel_collector_up 'source="cl"'
expect_eq "mid-migration: every ev: stream, ev:0 on the importing master" "$(got "$T/m3.txt")" "$REF2"
expect_metric "$T/m3.txt" 1 qrel_queue_messages 'queue="{mig}"' 'state="in_flight"'
expect_metric "$T/m3.txt" 1 qrel_queue_messages 'queue="{mig}"' 'state="ready"'
for s in '{mig}' ev:0; do
  expect_line "the ASK was followed for $s (debug log)" \
    "msg=\"reading a stream after ASKING\" source=cl stream=$s " "$T/exporter.log"
done
for s in bq_tag bq_names bq_named; do expect_metric "$T/m3.txt" 1 qrel_collector_up "source=\"$s\""; done
expect_eq "bullmq mid-migration: the same counts" "$(bulls "$T/m3.txt")" "$BREF"
expect_eq "bullmq mid-migration, named queues" "$(bull_got "$T/m3.txt" bq_named bull)" "$BREF_NAMED"
for s in bq_names bq_named; do
  expect_line "$s followed the ASKs of {a} (debug log)" "msg=\"following ASK\" source=$s " "$T/exporter.log"
done
for m in "${migrating[@]}"; do # the migration ends: the rest of the slot's keys, then every master
  IFS=: read -r slot dst src <<<"$m"
  mapfile -t rest < <(redis-cli -p "$src" CLUSTER GETKEYSINSLOT "$slot" 1000)
  [ "${#rest[@]}" -eq 0 ] || redis-cli -p "$src" MIGRATE 127.0.0.1 "$dst" "" 0 5000 KEYS "${rest[@]}" >/dev/null
  for p in $(masters); do
    redis-cli -p "$p" CLUSTER SETSLOT "$slot" NODE "$(redis-cli -p "$dst" CLUSTER MYID)" >/dev/null
  done
done
n3=$(wc -l < "$T/exporter.log")
scrape "$T/m4.txt"
tail -n +"$((n3 + 1))" "$T/exporter.log" > "$T/m4.log"
expect_metric "$T/m4.txt" 1 qrel_collector_up 'source="cl"'
expect_eq "after the migration: every ev: stream" "$(got "$T/m4.txt")" "$REF2"
expect_metric "$T/m4.txt" 1 qrel_queue_messages 'queue="{mig}"' 'state="in_flight"'
expect_line "{mig}: MOVED to the master that has it now, read there" \
  "stream={mig} node=127.0.0.1:$new_of_mig" "$T/m4.log"
expect_metric "$T/m4.txt" 2 qrel_dead_letter_messages 'queue="{orders}"'
for s in bq_tag bq_names bq_named; do expect_metric "$T/m4.txt" 1 qrel_collector_up "source=\"$s\""; done
expect_eq "bullmq after the migration: the same counts" "$(bulls "$T/m4.txt")" "$BREF"
expect_eq "bullmq after the migration, named queues" "$(bull_got "$T/m4.txt" bq_named bull)" "$BREF_NAMED"
stop_exporter

# qrel dlq on the cluster: the failed jobs of {charges} and {refunds} (prefix dq, failed by BullMQ's
# Worker in bull.mjs), classified against a work table where c1 and c3 were charged. The seed is a
# master that serves neither queue's slot: every hook is routed to the master that does. Redis
# users with the permissions docs/dlq.md lists for a cluster run inspect, the dry run and replay.
for q in '{charges} failed=4' '{refunds} failed=2'; do
  expect_line "BullMQ failed the jobs of $q" "^dlq dq $q\$" "$T/bull.log"
done
# Per master, one redis-cli: does it hold {charges} (slot 386), {refunds} (slot 7042); and the
# users qrel dlq runs as (qrel talks to masters only: the seed and the queue's).
echo 'dq-pw-2718' > "$T/dq.pw"
DQ='' DQR='' SEED=''
for p in $(masters); do
  mapfile -t held < <(redis-cli -p "$p" <<'CMDS'
CLUSTER COUNTKEYSINSLOT 386
CLUSTER COUNTKEYSINSLOT 7042
ACL SETUSER dq-inspect on >dq-pw-2718 resetkeys %R~dq:{charges}:* -@all +cluster|slots +zcard +zrange +hmget +exists
ACL SETUSER dq-replay on >dq-pw-2718 resetkeys ~dq:{charges}:* ~qrel:replay-lock:dq:{charges}:failed -@all +cluster|slots +zcard +zrange +hmget +exists +eval +set +get +pexpire +pttl +del +zscore +type +llen +lpush +rpush +incr +zadd +zrem +hdel +hset +xadd
CMDS
  )
  if [ "${held[0]}" -gt 0 ]; then DQ=$p; elif [ "${held[1]}" -gt 0 ]; then DQR=$p; else SEED=$p; fi
  expect_eq "the users qrel dlq runs as, on master $p" "${held[2]} ${held[3]}" "OK OK"
done
expect_cmd "{charges} ($DQ), {refunds} ($DQR) and the seed ($SEED) are on three masters" \
  test -n "$DQ" -a -n "$DQR" -a -n "$SEED"
dq_config() { # FILE [USER]
  cat > "$1" <<YML
sources:
  - name: dq
    kind: bullmq
    cluster: true
    addresses: ["127.0.0.1:$SEED"]
    prefix: dq
    queues: ["{charges}", "{refunds}"]
${2:+    username: $2
    password_file: $T/dq.pw}
$(pg_source shop-db "$PGP")
    dedup_tables: [{table: charges, id_column: order_id, handled_at_column: charged_at}]
dead_letters:
  - source: dq
    queue: "{charges}"
    id_field: order
    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}
  - source: dq
    queue: "{refunds}"
    id_field: order
    work_table: {source: shop-db, table: charges, id_column: order_id, done_column: charged_at}
YML
}
dq_config "$T/dq.yml"
dq_config "$T/dq-inspect.yml" dq-inspect
dq_config "$T/dq-replay.yml" dq-replay
D() { redis-cli -p "$DQ" "$@"; }
dq_dump() { # every key of the queue (and the replay lock) without an expiry, and its DUMP
  D --scan --pattern '*{charges}*' | sort | sed 's/.*/ECHO "&"\nPTTL "&"\nDUMP "&"/' |
    D --no-raw | paste - - - | grep $'\t(integer) -1\t'
}
dq_failed() { D ZRANGE 'dq:{charges}:failed' 0 -1 | paste -sd' '; }
DQA=(--source=dq --queue='{charges}' --format=json)
dq_dump > "$T/dq.before"
expect_eq "the dump holds the failed set and the 4 job hashes" \
  "$(grep -cE '^"dq:\{charges\}:(failed|c[1-4])"'$'\t' "$T/dq.before")" 5
rc=0
"$QREL" dlq inspect --config.file="$T/dq-inspect.yml" "${DQA[@]}" > "$T/dq.inspect.json" 2> "$T/dq.err" || rc=$?
expect_eq "dlq inspect on the cluster (the read-only user): exit 0" "$rc" 0
expect_eq "... done not_done unknown total read, as the table says (c1 c3 charged)" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.total) \(.read) \(.dead_letter_queue)"' "$T/dq.inspect.json")" \
  "2 2 0 4 4 dq:{charges}:failed"
rc=0
"$QREL" dlq replay --config.file="$T/dq-inspect.yml" "${DQA[@]}" > "$T/dq.dry.json" 2>> "$T/dq.err" || rc=$?
expect_eq "a dry run would move c2 c4 (exit $rc)" \
  "$rc $(jq -r '[.replay.would_move[].message_id] | sort | join(" ")' "$T/dq.dry.json")" "0 c2 c4"
# The exporter's join reads both queues on one connection: the second read meets MOVED (the
# first's master), learns the map again and reads on the master of its slot.
"$QREL" scrape --config.file="$T/dq.yml" --log.level=debug > "$T/dq.m.txt" 2> "$T/dq.scrape.log"
classes() { # QUEUE: done not_done of the exporter's join
  for w in "done" not_done; do
    mval "$T/dq.m.txt" qrel_dead_letter_classified_messages "queue=\"$1\"" "work=\"$w\""
  done | paste -sd' '
}
expect_eq "the exporter's join classifies {charges} and {refunds} on the cluster" \
  "$(classes '{charges}') / $(classes '{refunds}')" "2 2 / 0 2"
expect_line "... the second queue's read met MOVED and was routed again (debug log)" \
  'msg="qrel dlq: MOVED, learning the cluster.s map again" source=dq queue=' "$T/dq.scrape.log"
dq_dump > "$T/dq.after"
expect_cmd "inspect, the dry run and the scrape changed nothing (DUMP of every key of {charges})" \
  cmp -s "$T/dq.before" "$T/dq.after"
rc=0
"$QREL" dlq replay --config.file="$T/dq-replay.yml" "${DQA[@]}" --yes > "$T/dq.replay.json" 2>> "$T/dq.err" || rc=$?
expect_eq "replay --yes on the cluster (the replay user) moved c2 c4 (exit $rc)" \
  "$rc $(jq -r '[.replay.moved[].message_id] | sort | join(" ")' "$T/dq.replay.json")" "0 c2 c4"
# wait: LPUSHed in the failed set's order, so a worker takes c2 (the older failure) first.
expect_eq "... onto wait, stamped qrel-replayed 1; c1 c3 left failed; the lock gone" \
  "$(D <<'CMDS' | paste -sd' '
LRANGE dq:{charges}:wait 0 -1
HMGET dq:{charges}:c2 qrel-replayed failedReason
HMGET dq:{charges}:c4 qrel-replayed failedReason
ZRANGE dq:{charges}:failed 0 -1
EXISTS qrel:replay-lock:dq:{charges}:failed
CMDS
)" "c4 c2 1  1  c1 c3 0"
rc=0
"$QREL" dlq replay --config.file="$T/dq-replay.yml" "${DQA[@]}" --yes > "$T/dq.again.json" 2>> "$T/dq.err" || rc=$?
expect_eq "a second replay moves nothing" \
  "$rc $(jq '.replay.moved | length' "$T/dq.again.json") $(D LLEN 'dq:{charges}:wait') $(dq_failed)" "0 0 2 c1 c3"

# The kinds whose framework cannot run on a cluster say why, from --config.check too.
for kind in rq sidekiq celery; do
  printf 'sources:\n  - name: j\n    kind: %s\n    address: 127.0.0.1:%s\n    cluster: true\n' \
    "$kind" "$P1" > "$T/$kind.yml"
  expect_exit "$kind with cluster: true: --config.check fails" 1 "$T/$kind.out" \
    "$EXPORTER" --config.file="$T/$kind.yml" --config.check
  expect_line "$kind: the refusal says where and why" ":5:[0-9]*:.*cluster:.*Cluster" "$T/$kind.out"
done
# bullmq: a named queue whose keys would spread over slots (no hash tag) is refused.
printf 'sources:\n  - name: j\n    kind: bullmq\n    address: 127.0.0.1:%s\n    cluster: true\n    queues: [email]\n' \
  "$P1" > "$T/bq_untagged.yml"
expect_exit "bullmq, untagged queue on a cluster: --config.check fails" 1 "$T/bq_untagged.out" \
  "$EXPORTER" --config.file="$T/bq_untagged.yml" --config.check
expect_line "bullmq: the refusal asks for a hash tag" ':6:[0-9]*:.*queues: "email": .*hash tag' "$T/bq_untagged.out"

# Bull 4 (npm bull, bull4.mjs) on the cluster under the prefix {legacy}: found without `queues:`
# by its job counter `id` (Bull writes no `meta`), its figures Bull's own getJobCounts().
(cd "$PEERS" && exec "$NODE" bull4.mjs "$P1" "" cluster jobs) > "$T/bull4.log" 2>&1 || cat "$T/bull4.log" >&2
expect_line "Bull 4 set its queue on the cluster" '^ready$' "$T/bull4.log"
printf 'sources:\n  - name: legacy\n    kind: bullmq\n    address: 127.0.0.1:%s\n    cluster: true\n    prefix: "{legacy}"\n' \
  "$P1" > "$T/legacy.yml"
"$QREL" scrape --config.file="$T/legacy.yml" > "$T/legacy.prom"
expect_eq "Bull 4 on the cluster: qrel's figures are Bull's own" \
  "$(awk '/^qrel_queue_messages\{/ { match($0, /state="[^"]*"/); printf "%s=%s ", substr($0, RSTART + 7, RLENGTH - 8), $NF }' "$T/legacy.prom")" \
  "$(sed -n 's/^counts jobs \(ready=[0-9]* in_flight=[0-9]* delayed=[0-9]*\).*/\1 /p' "$T/bull4.log")"
expect_metric "$T/legacy.prom" "$(sed -n 's/^counts jobs .*failed=\([0-9]*\).*/\1/p' "$T/bull4.log")" \
  qrel_dead_letter_messages 'source="legacy"' 'queue="jobs"'
expect_metric "$T/legacy.prom" 1 qrel_source_queues 'source="legacy"'

finish
