# faults.sh: the fault drill every collector kind's integration test runs (sourced by common.sh):
# unreachable, wrong-password, silent and garbage sources beside a healthy one, each expected down
# with its own reason; no secret in any output; configs that --config.check must refuse. One copy,
# so every kind is held to the same bar.
# shellcheck shell=bash

# fault_ports: sets down (a port nothing listens on), silent_port (a stub that accepts and never
# answers) and garbage_port (a stub that answers garbage).
fault_ports() {
  down=$(free_port)
  silent_port='' garbage_port=''
  start_tcp_stub silent_port silent
  start_tcp_stub garbage_port garbage
}

# fault_sources KIND [ADDRESS]: the YAML list entries of the sources named down, silent and
# garbage (after fault_ports); with ADDRESS (a live server asking for a password), also wrongpass,
# user qrel with $T/wrong.pass. The silent one times out after 1 s.
fault_sources() {
  cat <<EOF2
  - name: down
    kind: $1
    address: 127.0.0.1:$down
EOF2
  if [ $# -gt 1 ]; then
    cat <<EOF2
  - name: wrongpass
    kind: $1
    address: $2
    username: qrel
    password_file: $T/wrong.pass
EOF2
  fi
  cat <<EOF2
  - name: silent
    kind: $1
    address: 127.0.0.1:$silent_port
    timeout: 1s
  - name: garbage
    kind: $1
    address: 127.0.0.1:$garbage_port
EOF2
}

# fault_scrape CONFIG OUT: starts the exporter on CONFIG and scrapes it into OUT, expecting the
# scrape not to wait on the silent source past its timeout and the source named healthy to be up.
fault_scrape() {
  start_exporter "$1"
  local s0 took
  s0=$(now_ms)
  scrape "$2"
  took=$(($(now_ms) - s0))
  expect_between "scrape with a silent source (ms)" "$took" 0 1900
  expect_metric "$2" 1 qrel_collector_up 'source="healthy"'
}

# expect_fault_reasons FILE SOURCE:REASON...: each SOURCE is down with one error of REASON.
expect_fault_reasons() {
  local file=$1 s
  shift
  for s in "$@"; do
    expect_metric "$file" 0 qrel_collector_up "source=\"${s%%:*}\""
    expect_metric "$file" 1 qrel_collector_errors_total "source=\"${s%%:*}\"" "reason=\"${s#*:}\""
  done
}

# expect_no_password SECRET... -- FILE...: no SECRET appears in any FILE.
expect_no_password() {
  local -a pats=()
  while [ "$1" != -- ]; do
    pats+=(-e "$1")
    shift
  done
  shift
  local f
  for f in "$@"; do
    if grep -qF "${pats[@]}" "$f"; then
      not_ok "a password appears in $(basename "$f")"
    else
      ok "no password in $(basename "$f")"
    fi
  done
}

# badcheck WHAT WANT_MESSAGE YAML: --config.check refuses YAML with exit status 1 and a message
# containing WANT_MESSAGE (file:line:col and what was expected).
badcheck() {
  printf '%s\n' "$3" > "$T/bad.yml"
  local rc=0 out
  out=$("$EXPORTER" --config.check --config.file="$T/bad.yml" 2>&1) || rc=$?
  expect_eq "$1: exit status" "$rc" 1
  if grep -qF "$2" <<<"$out"; then ok "$1: $2"; else not_ok "$1: want '$2' in: $out"; fi
}
