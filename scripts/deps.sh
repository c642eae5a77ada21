#!/usr/bin/env bash
# Installs the Debian 12 packages qrel needs to build, test, benchmark and run its demo, and only
# those that are missing. Safe to run again: with everything present it takes well under a second.
set -euo pipefail

packages=(
  # build
  cmake ninja-build lld gcc make pkg-config libmicrohttpd-dev libhiredis-dev libyaml-dev zlib1g-dev libcrypt-dev libpq-dev check
  libcurl4-openssl-dev libjansson-dev libssl-dev librdkafka-dev libgnutls28-dev librabbitmq-dev libnats-dev
  # tests and the demo: real servers, Prometheus' promtool, tools the scripts use
  redis-server postgresql prometheus prometheus-alertmanager curl jq valgrind clang-format-14 shellcheck netcat-openbsd
  iproute2 procps strace openssl apache2-utils bc python3 python3-pika python3-yaml jsonnet yamllint
  ruby-delayed-job ruby-delayed-job-active-record ruby-activerecord ruby-pg
  rabbitmq-server nats-server kcat openjdk-17-jre-headless chromium beanstalkd ruby-beaneater python3-rq ruby-sidekiq python3-celery
  php-cli php-redis php-pgsql php-laravel-framework
  libactivemq-java libjolokia-core-java openjdk-17-jdk-headless
  # the Debian package (tests/artifacts/package.sh, manpages.sh): CPack's dpkg-shlibdeps,
  # lintian, systemd-analyze, man pages, the postinst's adduser, readelf
  dpkg-dev lintian systemd groff-base man-db adduser binutils
  # the container image without a daemon (scripts/build-image.sh, tests/artifacts/image.sh)
  mmdebstrap umoci skopeo
  # fuzzing (tests/fuzz): clang and its libFuzzer runtime
  clang libclang-rt-14-dev
  # benchmark peer
  prometheus-redis-exporter prometheus-sql-exporter prometheus-postgres-exporter
  # benchmarks: GNU time (bench/dlq.sh: the CPU and peak RSS of a qrel that exits)
  time
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

# Node.js and npm run the SQS emulator and the npm queue runners. The machines may carry Node from
# another packager (which ships npm inside nodejs), so Debian's are installed only when npm is absent.
if ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
# kubectl renders deploy/kubernetes (tests/artifacts/kubernetes.sh: `kubectl kustomize`, offline).
# Likewise Debian's kubernetes-client only when no kubectl is there: Google's kubectl package
# holds the same /usr/bin/kubectl, and dpkg would refuse to install over it.
if ! command -v kubectl >/dev/null 2>&1; then
  missing+=(kubernetes-client)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install packages" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's packages start their services where an init system runs; the tests start their own
# servers on free ports, so stop any that came up to keep the machine quiet.
for svc in redis-server postgresql prometheus prometheus-alertmanager prometheus-redis-exporter rabbitmq-server nats-server beanstalkd; do
  if command -v service >/dev/null && service "$svc" status >/dev/null 2>&1; then
    "${sudo[@]}" service "$svc" stop >/dev/null 2>&1 || true
  fi
done
echo "deps: done"
