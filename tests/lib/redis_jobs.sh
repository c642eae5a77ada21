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

# redis_jobs_start ACL_RULE...: starts Redis on $RP asking for the admin password $secret, writes
# qrel's random password ($reader) to $T/reader.pass and a wrong one to $T/wrong.pass, and gives
# user qrel exactly ACL_RULEs (key patterns and +commands).
redis_jobs_start() {
  reader="rd-$RANDOM-pass"
  printf '%s\n' "$reader" > "$T/reader.pass"
  printf 'not-%s\n' "$reader" > "$T/wrong.pass"
  chmod 600 "$T"/*.pass
  start_redis RP --requirepass "$secret"
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
