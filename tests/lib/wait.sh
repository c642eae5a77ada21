# wait.sh: waiting for a condition and picking a free loopback port, for the integration tests and
# the benchmarks alike (sourced, not run; sourcing it defines functions and nothing else).
# shellcheck shell=bash

# wait_for [-i INTERVAL] TIMEOUT WHAT CMD...: runs CMD (in this shell, so it may set variables)
# every INTERVAL seconds (default 0.05) until it succeeds. When TIMEOUT seconds (fractions allowed)
# pass first, says on stderr what it waited for and returns 1: a starter that gives up names the
# server, a test that gives up names the condition, instead of a bare "loop ended". Timeouts are
# generous (a loaded CI machine starts a JVM slowly): they only count when the wait fails anyway.
wait_for() {
  local interval=0.05 timeout what now deadline
  if [ "$1" = -i ]; then
    interval=$2
    shift 2
  fi
  timeout=$1 what=$2
  shift 2
  now=${EPOCHREALTIME/./}
  deadline=$((now + $(awk -v t="$timeout" 'BEGIN { printf "%d", t * 1000000 }')))
  until "$@"; do
    now=${EPOCHREALTIME/./}
    if [ "$now" -ge "$deadline" ]; then
      echo "wait_for: gave up after ${timeout}s waiting for $what" >&2
      return 1
    fi
    sleep "$interval"
  done
}

# free_port: a TCP port nothing listens on now (the kernel's choice, then released).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || shuf -i 20000-32000 -n 1
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null
}
