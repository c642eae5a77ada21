# redis_tls.sh: Redis over TLS for the integration tests (sourced by common.sh, not run): the
# certificates a test makes with openssl (EC P-256, cheap to make), the redis-server arguments
# for a TLS port beside the plaintext one, and expect_same_via_tls, which reads a test's workload
# once more over that port and wants what the plaintext read got.
# shellcheck shell=bash

# redis_tls_certs: makes $T/tls/ once per test: ca.crt (the test's CA), server.crt/server.key
# (for 127.0.0.1, signed by it), client.crt/client.key (a client certificate signed by it),
# other-ca.crt (a CA that signed nothing here) and expired.crt (server.key's certificate that
# ended before it began: `x509 -days -1`, which OpenSSL 3.0 takes).
redis_tls_certs() {
  local d=$T/tls
  [ -f "$d/expired.crt" ] && return 0
  mkdir -p "$d"
  (
    cd "$d" || exit 1
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
    key ca.key && key server.key && key client.key && key other-ca.key
    openssl req -x509 -key ca.key -out ca.crt -days 2 -subj /CN=qrel-test-ca 2>/dev/null
    openssl req -x509 -key other-ca.key -out other-ca.crt -days 2 -subj /CN=qrel-other-ca 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' > san.ext
    openssl req -new -key server.key -subj /CN=127.0.0.1 -out server.csr 2>/dev/null
    openssl req -new -key client.key -subj /CN=qrel-client -out client.csr 2>/dev/null
    sign() { openssl x509 -req -in "$1" -CA ca.crt -CAkey ca.key -CAcreateserial "${@:3}" -out "$2" 2>/dev/null; }
    sign server.csr server.crt -days 2 -extfile san.ext
    sign client.csr client.crt -days 2
    sign server.csr expired.crt -days -1 -extfile san.ext
    chmod 600 ./*.key
  ) || { echo "cannot make the test's TLS certificates in $d" >&2; return 1; }
}

# redis_tls_args VAR: sets VAR to a free port and prints nothing; REDIS_TLS_ARGS then holds the
# redis-server arguments that open it as a TLS port with $T/tls's certificates, client
# certificates verified when given (tls-auth-clients optional; CONFIG SET may make it yes).
redis_tls_args() {
  redis_tls_certs || return 1
  local port
  port=$(free_port)
  printf -v "$1" '%s' "$port"
  # shellcheck disable=SC2034 # start_redis_tls (servers.sh) passes it on
  REDIS_TLS_ARGS=(--tls-port "$port" --tls-cert-file "$T/tls/server.crt"
    --tls-key-file "$T/tls/server.key" --tls-ca-cert-file "$T/tls/ca.crt"
    --tls-auth-clients optional)
}

# expect_same_via_tls CONFIG NAME HOST:PORT TLS_PORT [DRIFT [TLS_LINE...]]: CONFIG's source NAME,
# which reads the server at HOST:PORT in plaintext, read again in one scrape beside itself as
# NAME_tls over the server's TLS port (tls_config with the test's CA, and TLS_LINEs as more keys
# of tls_config): it must be up with NAME's series (expect_same_through_proxy; DRIFT as for
# expect_same_via_proxy). The scrape is $T/tls.prom, its log $T/tls.log.
expect_same_via_tls() {
  local config=$1 name=$2 server=$3 tport=$4 drift=${5:-'_(age|lag)_seconds$|_margin_ratio$'}
  shift $(($# < 5 ? $# : 5))
  { cat "$config"; proxied_source "$config" "$name" "${name}_tls" "$server" "127.0.0.1:$tport"
    printf '    tls_config:\n      ca_file: %s\n' "$T/tls/ca.crt"
    [ $# -eq 0 ] || printf '      %s\n' "$@"; } > "$T/tls.yml"
  "$QREL" scrape --config.file="$T/tls.yml" > "$T/tls.prom" 2> "$T/tls.log" || true
  expect_same_through_proxy "$T/tls.prom" "$name" "${name}_tls" "$drift"
}
