#!/usr/bin/env bash
# A server shared by the integration tests of one ctest run: tests/CMakeLists.txt makes
# `server.sh start SERVER TEST...` the setup test and `server.sh stop SERVER` the cleanup test of a
# fixture that those tests require. Google's Pub/Sub emulator is a JVM and fauxqs a Node program:
# each takes seconds to start, once per test before; now once per ctest run, so once in the plain
# pass and once in the ASan pass (each build directory has its own $QREL_SHARED_DIR).
#   start pubsub TEST...  the emulator; its port goes to $QREL_SHARED_DIR/pubsub/port. The tests
#                         keep apart by project: each uses a project no other test uses.
#   start fauxqs TEST...  one fauxqs process with a store per TEST, each on its own port
#                         ($QREL_SHARED_DIR/fauxqs/TEST.port): a test sees only its own queues.
#   stop SERVER           stops it and removes its directory.
# The files are in $QREL_SHARED_DIR/run-PID/SERVER, PID that of ctest, whose children the setup,
# the tests and the cleanup all are ($PPID): two ctest runs in one build directory at once each
# have their own servers, and a start stops what a run killed before its cleanup left.
# A test reaches the server through shared_pubsub_emulator or shared_fauxqs (tests/lib/servers.sh)
# and starts its own when there is none: the test run by hand, or this setup skipped.
set -euo pipefail

usage() { echo "usage: server.sh start pubsub|fauxqs TEST... | stop pubsub|fauxqs" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 server=$2
shift 2
case $server in pubsub | fauxqs) ;; *) usage ;; esac
QREL_SOURCE_DIR=$(cd "${QREL_SOURCE_DIR:-$(dirname "$0")/../..}" && pwd)
QREL_BUILD_DIR=$(cd "${QREL_BUILD_DIR:-$QREL_SOURCE_DIR/build}" && pwd)
shared=${QREL_SHARED_DIR:-$QREL_BUILD_DIR/shared}
dir=$shared/run-$PPID/$server
# shellcheck source=../lib/servers.sh
. "$QREL_SOURCE_DIR/tests/lib/servers.sh"

# exited PID: the process is gone, or a zombie (its parent, this script's, exited long ago: it
# waits for whoever adopted it to reap it).
exited() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
  [ "${state#Z}" != "$state" ]
}

# stop DIR: the server a start left in DIR (by the pid it wrote, and only if that pid still runs
# the server's program: a pid file left by a killed run may name another process by now).
stop() {
  local d=$1 pid program=node
  [ "${d##*/}" = pubsub ] && program=java
  pid=$(cat "$d/pid" 2>/dev/null) || pid=""
  if [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "$program"; then
    kill "$pid" 2>/dev/null || true
    wait_for -i 0.1 20 "the shared ${d##*/} (pid $pid) to exit" exited "$pid" ||
      kill -KILL "$pid" 2>/dev/null || true
    echo "stopped the shared ${d##*/} (pid $pid)"
  fi
  rm -rf "$d"
}

# stop_orphans: the servers of runs whose ctest is gone (killed before its cleanup).
stop_orphans() {
  local run d
  for run in "$shared"/run-*; do
    [ -d "$run" ] && [ ! -e "/proc/${run##*/run-}" ] || continue
    for d in "$run"/*/; do [ -d "$d" ] && stop "${d%/}"; done
    rm -rf "$run"
  done
}

# started: the server is up; it outlives this script (not in PIDS, so nothing here stops it).
started() {
  echo "${PIDS[-1]}" > "$dir/pid"
  echo "the shared $server is up (pid ${PIDS[-1]}) for: $*"
  PIDS=()
}

trap servers_stop EXIT # a server that did not come up; one that did is no longer in PIDS
case $action in
  stop)
    stop "$dir"
    rmdir "${dir%/*}" 2>/dev/null || true # the run's directory, once its last server is stopped
    ;;
  start)
    [ $# -ge 1 ] || usage
    stop_orphans
    stop "$dir" # a start of this run before (ctest --repeat)
    mkdir -p "$dir"
    # shellcheck disable=SC2034 # where servers.sh's starters keep their files
    T=$dir
    if [ "$server" = pubsub ]; then
      if ! pubsub_emulator_installed; then
        echo "SKIPPED: no Pub/Sub emulator ($PUBSUB_EMULATOR) or no java (the tests say so too)"
        exit 0
      fi
      emulator_port=""
      start_pubsub_emulator emulator_port
      echo "$emulator_port" > "$dir/port.tmp" && mv "$dir/port.tmp" "$dir/port"
    else
      sqs_peers_install
      files=()
      for t in "$@"; do files+=("$dir/$t.port"); done
      (cd "$SQS_PEERS" && exec "$NODE" --no-warnings start-fauxqs.mjs "${files[@]}") \
        >"$dir/fauxqs.out" 2>&1 &
      PIDS+=("$!")
      for f in "${files[@]}"; do
        wait_for 30 "fauxqs to write its port to $f" test -s "$f" ||
          { cat "$dir/fauxqs.out" >&2; exit 1; }
      done
    fi
    started "$@"
    ;;
  *) usage ;;
esac
