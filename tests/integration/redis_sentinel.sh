#!/usr/bin/env bash
# Sentinel (issue 23): a master, one replica and one sentinel (Debian's redis-server run with
# --sentinel, asking for a password), with a short down-after-milliseconds and failover-timeout.
# A redis_stream source and an rq source find the master through the sentinels (a dead one listed
# first: each is tried in turn) and read a stream and a job RQ itself enqueued. A sentinel's stale
# answer naming the replica (a stub, tests/peers/sentinel) is refused by ROLE. The master is then
# killed (SIGKILL); once the sentinel has promoted the replica, the exporter's very next scrape
# reads the new master (up 1, the same figures: the dead connection sends the source back to the
# sentinels within that scrape) and its debug log names the new address. A master name
# the sentinel does not know, no sentinel answering and a wrong sentinel password are each up 0
# with their reason, and no password appears anywhere; --config.check refuses both forms at once.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis MASTER
start_redis REPLICA --replicaof 127.0.0.1 "$MASTER"
linked() { redis-cli -p "$REPLICA" INFO replication | grep -q 'master_link_status:up'; }
wait_for 30 "the replica to follow the master" linked || true

# The scene, written to the master: three entries no consumer of group workers has read, and a
# job RQ enqueues (Debian's python3-rq, the way an application does).
redis-cli -p "$MASTER" XGROUP CREATE orders workers 0 MKSTREAM >/dev/null
for n in 1 2 3; do redis-cli -p "$MASTER" XADD orders '*' n "$n" >/dev/null; done
(cd "$QREL_SOURCE_DIR/tests/peers/rq" && /usr/bin/python3 rqjobs.py "redis://127.0.0.1:$MASTER" \
  enqueue emails ok)
copied() { [ "$(redis-cli -p "$REPLICA" XLEN orders)" = 3 ] && [ "$(redis-cli -p "$REPLICA" LLEN rq:queue:emails)" = 1 ]; }
wait_for 30 "the replica to hold the scene" copied || true

# The sentinel, asking for a password of its own; it finds the replica through the master.
spass="sentinel-$RANDOM-pass"
printf '%s\n' "$spass" > "$T/sentinel.pass"
printf 'not-%s\n' "$spass" > "$T/wrong.pass"
chmod 600 "$T"/*.pass
SENTINEL=$(free_port)
DEAD=$(free_port) # nothing listens there: a sentinel that does not answer
cat > "$T/sentinel.conf" <<CONF
bind 127.0.0.1
port $SENTINEL
dir $T
requirepass $spass
sentinel monitor mymaster 127.0.0.1 $MASTER 1
sentinel down-after-milliseconds mymaster 300
sentinel failover-timeout mymaster 3000
CONF
redis-server "$T/sentinel.conf" --sentinel --logfile "$T/sentinel.log" >/dev/null &
PIDS+=("$!")
S() { REDISCLI_AUTH=$spass redis-cli -p "$SENTINEL" --no-auth-warning "$@"; }
knows_replica() { S SENTINEL replicas mymaster 2>/dev/null | grep -qx "$REPLICA"; }
wait_for 30 "the sentinel to know the replica" knows_replica || true
master_port() { S SENTINEL get-master-addr-by-name mymaster 2>/dev/null | sed -n 2p; }
expect_eq "the sentinel names the master" "$(master_port)" "$MASTER"

sentinel_keys() { # the keys of a source that finds master NAME through the sentinels
  printf '    sentinels: ["127.0.0.1:%s", "127.0.0.1:%s"]\n    master_name: %s\n' "$DEAD" \
    "$SENTINEL" "$1"
  printf '    sentinel_password_file: %s\n' "$T/${2:-sentinel}.pass"
}
cat > "$T/qrel.yml" <<YML
sources:
  - name: via
    kind: redis_stream
$(sentinel_keys mymaster)
    streams: [{name: orders}]
  - name: jobs
    kind: rq
$(sentinel_keys mymaster)
YML
start_exporter "$T/qrel.yml"
scrape "$T/m1.txt"
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="via"'
expect_metric "$T/m1.txt" 3 qrel_queue_messages 'source="via"' 'queue="orders"' 'state="ready"'
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="jobs"'
expect_metric "$T/m1.txt" 1 qrel_queue_messages 'source="jobs"' 'queue="emails"' 'state="ready"'
expect_line "the debug log names the master" "source=via master=127.0.0.1:$MASTER" "$T/exporter.log"

# A stale answer is not trusted: a sentinel naming the replica as the master (as one that missed a
# failover would) is refused by ROLE, and the next sentinel is asked.
"$QREL_PYTHON" "$QREL_SOURCE_DIR/tests/peers/sentinel/stale_sentinel.py" 127.0.0.1 "$REPLICA" \
  "$T/stale.port" >"$T/stale.log" 2>&1 &
PIDS+=("$!")
wait_for 30 "the stale sentinel to listen" port_file "$T/stale.port" STALE || true
stale_config() { # FILE SOURCE SENTINEL...: a redis_stream source asking those sentinels
  local name=$2 list
  shift 2
  list=$(printf '"127.0.0.1:%s", ' "$@")
  printf 'sources:\n  - name: %s\n    kind: redis_stream\n    sentinels: [%s]\n' "$name" "${list%, }"
  printf '    master_name: mymaster\n    sentinel_password_file: %s\n' "$T/sentinel.pass"
  echo '    streams: [{name: orders}]'
} > "$1"
stale_config "$T/stale.yml" stale "$STALE" "$SENTINEL"
"$QREL" scrape --config.file="$T/stale.yml" > "$T/stale.txt" 2> "$T/stale.err"
expect_metric "$T/stale.txt" 1 qrel_collector_up 'source="stale"'
expect_metric "$T/stale.txt" 3 qrel_queue_messages 'source="stale"' 'queue="orders"' 'state="ready"'
stale_config "$T/staleonly.yml" staleonly "$STALE"
expect_scrape_error "a stale answer alone" "$T/staleonly.yml" "$T/staleonly" staleonly connect \
  "the message says why" "master 127.0.0.1:$REPLICA (named by the sentinels): ROLE says slave, not master"

# Failover: the master dies without a word; the sentinel promotes the replica.
kill -KILL "$(cat "$T/redis-$MASTER/redis.pid")"
rm -f "$T/redis-$MASTER/redis.pid" # a killed Redis leaves it: servers_stop must not wait on it
promoted() { [ "$(master_port)" = "$REPLICA" ]; }
wait_for 60 "the sentinel to promote the replica" promoted || true
expect_eq "the sentinel names the replica" "$(master_port)" "$REPLICA"
# No scrape ran since the kill, so each source still holds its connection to the dead master. The
# first scrape after the promotion must already read the new master: the dead connection fails
# before any byte is read, and the source asks the sentinels again within the same scrape.
scrape "$T/m2.txt"
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="via"'
expect_metric "$T/m2.txt" 3 qrel_queue_messages 'source="via"' 'queue="orders"' 'state="ready"'
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="jobs"'
expect_metric "$T/m2.txt" 1 qrel_queue_messages 'source="jobs"' 'queue="emails"' 'state="ready"'
expect_line "the debug log names the new master" "source=via master=127.0.0.1:$REPLICA" "$T/exporter.log"
expect_line "the stream source asked the sentinels again" 'msg="redis master gone, asking the sentinels again" source=via' "$T/exporter.log"
expect_line "the rq source asked the sentinels again" 'msg="redis master gone, asking the sentinels again" source=jobs' "$T/exporter.log"
scrape "$T/m3.txt"
expect_metric "$T/m3.txt" 1 qrel_collector_up 'source="via"'
stop_exporter

# A master name the sentinel does not know; no sentinel answering; a wrong sentinel password.
{ echo 'sources:'; printf '  - name: nosuch\n    kind: redis_stream\n'; sentinel_keys nosuch
  echo '    streams: [{name: orders}]'; } > "$T/nosuch.yml"
expect_scrape_error "an unknown master name" "$T/nosuch.yml" "$T/nosuch" nosuch query \
  "the message says so" "sentinel 127.0.0.1:$SENTINEL: does not know master \"nosuch\""
cat > "$T/silent.yml" <<YML
sources:
  - name: silent
    kind: redis_stream
    sentinels: ["127.0.0.1:$DEAD"]
    master_name: mymaster
    streams: [{name: orders}]
YML
expect_scrape_error "no sentinel answering" "$T/silent.yml" "$T/silent" silent connect \
  "the message names the sentinel" "sentinel 127.0.0.1:$DEAD: cannot connect"
{ echo 'sources:'; printf '  - name: locked\n    kind: redis_stream\n'; sentinel_keys mymaster wrong
  echo '    streams: [{name: orders}]'; } > "$T/locked.yml"
expect_scrape_error "a wrong sentinel password" "$T/locked.yml" "$T/locked" locked auth
expect_no_password "$spass" -- "$T"/m*.txt "$T"/*.err "$T/exporter.log"

# --config.check: exactly one of address and sentinels with master_name, at file:line:col.
badcheck "address and sentinels" 'bad.yml:5:16: sentinels: give either address or sentinels with master_name, not both' \
  "$(printf 'sources:\n  - name: b\n    kind: sidekiq\n    address: 127.0.0.1:1\n    sentinels: ["127.0.0.1:2"]\n    master_name: m')"
badcheck "sentinels without master_name" 'bad.yml:4:16: master_name: required with sentinels' \
  "$(printf 'sources:\n  - name: b\n    kind: celery\n    sentinels: ["127.0.0.1:2"]')"

finish
