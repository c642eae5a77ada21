# wait.sh: waiting for a condition and picking a free loopback port, for the integration tests and
# the benchmarks alike (sourced, not run; sourcing it defines functions and nothing else).
# shellcheck shell=bash

# The python3 for free_port: Debian's where it is there, since a python3 found through a version
# manager's shim costs 0.45 s of CPU a start against 0.04 s (measured here).
if [ -z "${QREL_PYTHON:-}" ]; then
  if [ -x /usr/bin/python3 ]; then QREL_PYTHON=/usr/bin/python3; else QREL_PYTHON=python3; fi
fi

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
  "$QREL_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || shuf -i 20000-32000 -n 1
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
# Bash's own /dev/tcp, not a python3: wait_for polls it 20 times a second while a server starts,
# and a python3 behind a version manager's shim (pyenv here) costs 0.45 s of CPU per start.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
