# redis_jobs.sh: what the integration tests of the Redis job kinds (bullmq, celery, rq, sidekiq)
# share, sourced after common.sh: a Redis with an admin password where the exporter reads as the
# ACL user qrel allowed only its kind's documented commands, the source entry that reads it that
# way, the round trips a collection logged, and the closing fault drill. One copy, so the four
# kinds are set up and held to the same bar the same way.
# shellcheck shell=bash

# The admin's password, which the test sets (its peers need it too), and qrel's, set by
# redis_jobs_start.
secret=''
reader=''

# redis_jobs_start ACL_RULE...: starts Redis on $RP (and a TLS port, $RP_TLS: start_redis_tls)
# asking for the admin password $secret, writes
# qrel's random password ($reader) to $T/reader.pass and a wrong one to $T/wrong.pass, and gives
# user qrel exactly ACL_RULEs (key patterns and +commands).
redis_jobs_start() {
  reader="rd-$RANDOM-pass"
  printf '%s\n' "$reader" > "$T/reader.pass"
  printf 'not-%s\n' "$reader" > "$T/wrong.pass"
  chmod 600 "$T"/*.pass
  start_redis_tls RP RP_TLS --requirepass "$secret"
  R ACL SETUSER qrel on ">$reader" -@all "$@" >/dev/null
}

# R ARG...: redis-cli as the admin, for setting the scene.
R() { REDISCLI_AUTH=$secret redis-cli -p "$RP" --no-auth-warning "$@"; }

# job_source NAME KIND [LINE...]: the YAML list entry of a source NAME of KIND that reads the Redis
# of redis_jobs_start as qrel, with each LINE (e.g. "queues: [a]") as one more key of it.
job_source() {
  printf '  - name: %s\n    kind: %s\n    address: 127.0.0.1:%s\n' "$1" "$2" "$RP"
  printf '    username: qrel\n    password_file: %s\n' "$T/reader.pass"
  shift 2
  [ $# -eq 0 ] || printf '    %s\n' "$@"
}

# job_config FILE NAME KIND [LINE...]: writes FILE, a config whose one source is job_source's.
job_config() {
  local file=$1
  shift
  { echo 'sources:'; job_source "$@"; } > "$file"
}

# round_trips KIND LOG: the round trips of the last "KIND collection done" line of LOG (a
# --log.level=debug run).
round_trips() {
  sed -nE "s/.*$1 collection done.* round_trips=([0-9]+).*/\\1/p" "$2" | tail -1
}

# job_faults_config KIND [LINE...]: writes $T/faults.yml, a healthy source of KIND (with LINEs,
# as job_source) beside the fault drill's down, wrong-password, silent and garbage ones; a test may
# append more sources to it.
job_faults_config() {
  local kind=$1
  shift
  fault_ports
  { echo 'sources:'; job_source healthy "$kind" "$@"; fault_sources "$kind" "127.0.0.1:$RP"; } \
    > "$T/faults.yml"
}

# job_faults_check LOG [SOURCE:REASON...]: scrapes $T/faults.yml; the drill's sources, and each
# SOURCE, are down with their reason, and neither password appears in the scrape, the landing
# page, the exporter's log, LOG or $T/check.txt. Stops the exporter.
job_faults_check() {
  local log=$1
  shift
  fault_scrape "$T/faults.yml" "$T/faults.prom"
  expect_fault_reasons "$T/faults.prom" down:connect wrongpass:auth silent:timeout \
    garbage:protocol "$@"
  curl -fsS "http://$ADDR/" -o "$T/landing.html"
  stop_exporter
  expect_no_password "$reader" "$secret" -- "$T/faults.prom" "$T/landing.html" \
    "$T/exporter.log" "$log" "$T/check.txt"
}

# bad_job_key KIND WHAT WANT_MESSAGE LINE: badcheck of a source of KIND at 127.0.0.1 whose one
# more key, on line 5, is LINE.
bad_job_key() {
  badcheck "$2" "$3" "sources:
  - name: ${1:0:1}
    kind: $1
    address: 127.0.0.1
    $4"
}

# scene_start: notes when the test begins setting its scene, before its oldest job.
scene_start() { t0=$(date +%s); }

# job_scrape CONFIG NAME KIND [LINE...]: writes CONFIG (job_config), scrapes it at debug level
# (debug_scrape, stem CONFIG less .yml), sets P to the scrape's file, and expects source NAME up.
job_scrape() {
  local stem=${1%.yml}
  job_config "$@"
  debug_scrape "$1" "$stem"
  P=$stem.prom
  expect_metric "$P" 1 qrel_collector_up "source=\"$2\""
}

# debug_scrape CONFIG STEM: `qrel scrape` of CONFIG into STEM.prom, its debug log into STEM.log.
debug_scrape() {
  "$QREL" scrape --config.file="$1" --log.level=debug > "$2.prom" 2> "$2.log"
}

# expect_states FILE QUEUE STATE=N...: qrel_queue_messages of QUEUE in each STATE is N.
expect_states() {
  local file=$1 queue=$2 s
  shift 2
  for s in "$@"; do
    expect_metric "$file" "${s#*=}" qrel_queue_messages "queue=\"$queue\"" "state=\"${s%%=*}\""
  done
}

# expect_recent FILE QUEUE METRIC...: each METRIC of QUEUE, an age in seconds, is within
# [0, seconds since scene_start]: no older than the test's scene.
expect_recent() {
  local file=$1 queue=$2 m
  shift 2
  # The bound is taken now, not at the first scrape: a later scrape's ages grew since (the hostile
  # entries' scrape came after a qrel check, and an ASan run under load overshot the first bound).
  local bound=$(($(date +%s) - t0 + 1))
  for m in "$@"; do
    expect_between "$m of $queue" "$(mval "$file" "$m" "queue=\"$queue\"")" 0 "$bound"
  done
}

# expect_check CONFIG WANT WHY [WHAT REGEX]...: `qrel check` of CONFIG exits WANT (WHY says why),
# and for each WHAT some line of its output ($T/check.txt) matches REGEX.
expect_check() {
  expect_exit "qrel check exit status with $3" "$2" "$T/check.txt" "$QREL" check --config.file="$1"
  shift 3
  while [ $# -ge 2 ]; do
    expect_line "qrel check names $1" "$2" "$T/check.txt"
    shift 2
  done
}

# expect_flat_round_trips KIND CONFIG QUEUES TRIPS STATE: once the test added queues q1..q30 with
# one job each (in STATE), a scrape of CONFIG, now QUEUES queues, still takes TRIPS round trips.
expect_flat_round_trips() {
  debug_scrape "$2" "$T/many"
  expect_eq "round trips for $3 queues" "$(round_trips "$1" "$T/many.log")" "$4"
  expect_states "$T/many.prom" q30 "$5=1"
}

# expect_named_queues KIND: a source of KIND naming queues emails and never-used reads 2 ready
# jobs in emails, none in never-used, and nothing of the queues it does not name.
expect_named_queues() {
  job_config "$T/named.yml" jobs "$1" "queues: [emails, never-used]"
  "$QREL" scrape --config.file="$T/named.yml" > "$T/named.prom"
  expect_states "$T/named.prom" emails ready=2
  expect_states "$T/named.prom" never-used ready=0
  expect_absent "$T/named.prom" qrel_queue_messages 'queue="q1"'
}

# job_same_via_proxy CONFIG NAME: expect_same_via_proxy of CONFIG's source NAME, which reads the
# Redis of redis_jobs_start, then expect_same_via_tls over its TLS port (the ACL user qrel over TLS).
job_same_via_proxy() {
  expect_same_via_proxy "$1" "$2" "127.0.0.1:$RP"
  expect_same_via_tls "$1" "$2" "127.0.0.1:$RP" "$RP_TLS"
}

# queue_set FILE: the queues of FILE's qrel_queue_messages series, one a line, sorted.
queue_set() {
  sed -nE 's/^qrel_queue_messages\{(.*[{,])?queue="([^"]*)".*/\2/p' "$1" | sort -u
}

# expect_excluded KIND QUEUE GLOB [LINE...]: a source of KIND (with LINEs, as job_source) finds
# QUEUE, and with `exclude: [GLOB]` leaves exactly it out: the queues of that scrape are those
# without the exclude less QUEUE, no series names QUEUE, qrel_excluded_objects{object="queue"} is
# 1 (no series without the key), and Redis's MONITOR saw that scrape send no command naming QUEUE
# (no key of it read). Leaves both scrapes in $T/incl.prom and $T/excl.prom.
expect_excluded() {
  local kind=$1 queue=$2 glob=$3 mon mark
  shift 3
  job_config "$T/incl.yml" jobs "$kind" "$@"
  job_config "$T/excl.yml" jobs "$kind" "exclude: [\"$glob\"]" "$@"
  "$QREL" scrape --config.file="$T/incl.yml" > "$T/incl.prom"
  queue_set "$T/incl.prom" > "$T/incl.queues"
  expect_line "the read without exclude has $queue" "^$queue\$" "$T/incl.queues"
  expect_absent "$T/incl.prom" qrel_excluded_objects
  # MONITOR answers OK once it listens; a marker sent after the scrape ends its log.
  REDISCLI_AUTH=$secret redis-cli -p "$RP" --no-auth-warning MONITOR > "$T/monitor.log" &
  mon=$!
  PIDS+=("$mon")
  expect_cmd "MONITOR listens" wait_for 20 "MONITOR to listen" grep -q '^OK$' "$T/monitor.log"
  "$QREL" scrape --config.file="$T/excl.yml" > "$T/excl.prom"
  mark="qrel-mark-$RANDOM"
  R ECHO "$mark" > /dev/null
  expect_cmd "MONITOR saw the marker after the scrape" \
    wait_for 20 "MONITOR to see the marker" grep -q "$mark" "$T/monitor.log"
  kill "$mon" 2>/dev/null || true
  wait "$mon" 2>/dev/null || true
  expect_metric "$T/excl.prom" 1 qrel_collector_up 'source="jobs"'
  expect_metric "$T/excl.prom" 1 qrel_excluded_objects 'object="queue"'
  expect_eq "the queues with exclude: those without it less $queue" \
    "$(queue_set "$T/excl.prom" | tr '\n' ' ')" \
    "$(grep -vx "$queue" "$T/incl.queues" | tr '\n' ' ')"
  expect_eq "series naming queue $queue with exclude" \
    "$(grep -c "[{,]queue=\"$queue\"" "$T/excl.prom")" 0
  expect_line "MONITOR saw the scrape" '"TIME"' "$T/monitor.log"
  expect_eq "commands naming $queue in the scrape with exclude" \
    "$(grep -c "$queue" "$T/monitor.log")" 0
}
