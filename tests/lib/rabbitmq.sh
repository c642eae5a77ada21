# rabbitmq.sh: start and stop throwaway RabbitMQ nodes for tests and benchmarks (sourced, not run).
# shellcheck shell=bash
#
# A node lives in its own directory (state, logs, config, Erlang cookie), listens on free loopback
# ports only and has a node name unique to this run, so several can run beside other helpers'
# servers. epmd is a machine-wide singleton shared with every other Erlang node: it is started
# bound to loopback if nobody runs it yet, and never stopped here.
#
#   rabbit_start DIR [PLUGINS]   PLUGINS: Erlang list items, default
#                                "rabbitmq_management,rabbitmq_prometheus". Sets RABBIT_AMQP,
#                                RABBIT_MGMT, RABBIT_PROM (ports), RABBIT_DIR; returns once the
#                                management API answers (about 4 s).
#                                RABBIT_STATS_INTERVAL_MS: the stats emission interval (default
#                                1000 ms, for tests; RabbitMQ's own default is 5000).
#                                RABBIT_TLS: a directory with ca.crt, server.crt, server.key
#                                (redis_tls_certs' $T/tls): an AMQPS listener too, on port
#                                RABBIT_AMQPS, which wants a client certificate signed by ca.crt.
#   rabbit_ctl DIR CMD ARGS...   runs a CLI tool (rabbitmqctl, rabbitmq-plugins, ...) on that node
#   rabbit_stop DIR              stops the node and waits for its VM to exit
#   rabbit_stop_all              stops every node this shell started (for traps)
#   rabbit_test_start            for integration tests (tests/lib/common.sh sourced): starts a
#                                node in $T/rabbit, stopped at exit before common.sh's cleanup,
#                                and sets API to its management API's base URL
#
# As root, the node runs as the `rabbitmq` user (Debian's package owns its files).

# shellcheck source=wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

RABBIT_DIRS=()
RABBIT_SEQ=0

_rabbit_as() { # _rabbit_as DIR CMD...: CMD with the node's environment, as the node's user
  local dir=$1; shift
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u rabbitmq -- sh -c '. "$0/env.sh"; exec "$@"' "$dir" "$@"
  else
    sh -c '. "$0/env.sh"; exec "$@"' "$dir" "$@"
  fi
}

rabbit_start() {
  local dir=$1 plugins=${2:-rabbitmq_management,rabbitmq_prometheus}
  RABBIT_SEQ=$((RABBIT_SEQ + 1))
  RABBIT_AMQP=$(free_port)
  RABBIT_MGMT=$(free_port)
  RABBIT_PROM=$(free_port)
  local dist ctl
  dist=$(free_port)
  ctl=$(free_port)
  mkdir -p "$dir/log" "$dir/mnesia"
  chmod 755 "$dir"
  cat > "$dir/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$RABBIT_AMQP
management.tcp.ip = 127.0.0.1
management.tcp.port = $RABBIT_MGMT
prometheus.tcp.ip = 127.0.0.1
prometheus.tcp.port = $RABBIT_PROM
collect_statistics_interval = ${RABBIT_STATS_INTERVAL_MS:-1000}
consumer_timeout = 900000
loopback_users = none
CONF
  if [ -n "${RABBIT_TLS:-}" ]; then
    # copies, so that the node's user can read the key whoever owns the test's files
    mkdir -p "$dir/tls"
    cp "$RABBIT_TLS/ca.crt" "$RABBIT_TLS/server.crt" "$RABBIT_TLS/server.key" "$dir/tls/"
    RABBIT_AMQPS=$(free_port)
    cat >> "$dir/rabbitmq.conf" <<CONF
listeners.ssl.default = 127.0.0.1:$RABBIT_AMQPS
ssl_options.cacertfile = $dir/tls/ca.crt
ssl_options.certfile = $dir/tls/server.crt
ssl_options.keyfile = $dir/tls/server.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
CONF
  fi
  echo "[$plugins]." > "$dir/enabled_plugins"
  cat > "$dir/env.sh" <<ENV
export HOME=$dir
export RABBITMQ_NODENAME=qrel-test-$$-$RABBIT_SEQ@localhost
export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$RABBIT_AMQP RABBITMQ_DIST_PORT=$dist
export RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins
export RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log RABBITMQ_PID_FILE=$dir/rabbit.pid
# +sbwt none (and its dirty-scheduler forms): the Erlang schedulers sleep when idle instead of
# spinning, so a test broker waiting between requests leaves the CPU to the tests beside it.
export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +sbwt none +sbwtdcpu none +sbwtdio none"
export RABBITMQ_CTL_DIST_PORT_MIN=$ctl RABBITMQ_CTL_DIST_PORT_MAX=$((ctl + 15))
export ERL_EPMD_ADDRESS=127.0.0.1
ENV
  [ "$(id -u)" -eq 0 ] && chown -R rabbitmq:rabbitmq "$dir"
  RABBIT_DIRS+=("$dir")
  if [ "$(id -u)" -eq 0 ]; then
    setsid runuser -u rabbitmq -- sh -c '. "$0/env.sh"; exec /usr/lib/rabbitmq/bin/rabbitmq-server' "$dir" \
      > "$dir/stdout.log" 2>&1 < /dev/null &
  else
    setsid sh -c '. "$0/env.sh"; exec /usr/lib/rabbitmq/bin/rabbitmq-server' "$dir" \
      > "$dir/stdout.log" 2>&1 < /dev/null &
  fi
  export RABBIT_DIR=$dir
  wait_for -i 0.1 120 "rabbitmq in $dir to answer on its management API" \
    curl -fs -o /dev/null -u guest:guest "http://127.0.0.1:$RABBIT_MGMT/api/overview" && return 0
  echo "last lines of its output:" >&2
  tail -20 "$dir/stdout.log" >&2
  return 1
}

# The CLI's own Erlang node listens on a port of a range picked when the broker started: a port
# another test took since then cost a run its "Distribution failed: nodistribution" (one port, in a
# loaded ASan run), so the range has 16 and a failed call is tried again twice.
rabbit_ctl() {
  local dir=$1 tool=$2 try; shift 2
  for try in 1 2 3; do
    _rabbit_as "$dir" "/usr/lib/rabbitmq/bin/$tool" "$@" && return 0
    [ "$try" -lt 3 ] && sleep 1
  done
  return 1
}

# The node's data is thrown away, so it is killed rather than shut down gracefully (which takes
# about 6 s of flushing message stores); epmd notices the closed connection and forgets the name.
rabbit_stop() {
  local dir=$1 beam
  [ -f "$dir/rabbit.pid" ] || return 0
  beam=$(cat "$dir/rabbit.pid")
  kill -KILL "$beam" 2>/dev/null || true
  wait_for 10 "rabbitmq's VM (pid $beam) to exit" _rabbit_gone "$beam" || true
  rm -f "$dir/rabbit.pid"
}

_rabbit_gone() { ! kill -0 "$1" 2>/dev/null; }

rabbit_stop_all() {
  local d
  for d in "${RABBIT_DIRS[@]}"; do rabbit_stop "$d"; done
}

_rabbit_test_cleanup() {
  local rc=$?
  set +e # so that the (exit) below only sets $? for cleanup
  rabbit_stop_all
  (exit "$rc")
  cleanup
}

rabbit_test_start() {
  local t0
  trap _rabbit_test_cleanup EXIT
  t0=$(now_ms)
  rabbit_start "$T/rabbit"
  echo "# broker ready in $(($(now_ms) - t0)) ms"
  # shellcheck disable=SC2034 # for the test that called this
  API=http://127.0.0.1:$RABBIT_MGMT/api
}

# api METHOD PATH [JSON]: a management API request as the broker's guest user (after
# rabbit_test_start), its body discarded; fails when the API refuses it.
api() {
  curl -fsS -u guest:guest -H 'content-type: application/json' -X "$1" "$API$2" ${3:+-d "$3"} >/dev/null
}
