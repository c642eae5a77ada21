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
# The silent source's timeout is 1 s and the default is 10 s: a scrape that ignored the timeout
# would take 10 s or hang (curl gives up at 20 s), so the bound sits between the two, far from
# both, where a loaded machine's scheduling delays cannot reach it (curl's own start is not
# counted: scrape_ms).
fault_scrape() {
  start_exporter "$1"
  expect_between "scrape with a silent source (ms)" "$(scrape_ms "$2" --max-time 20)" 0 5000
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

# ---- the HTTP kinds' drill: peers that misbehave over HTTP (start_http_stub) ----

# http_fault_stubs H500_BODY H401_BODY H403_BODY MALFORMED_BODY WRONG_BODY: starts a peer per fault
# and sets its port: H500, H401 and H403 answer that status with the kind's error body, HANG never
# answers, TRUNC closes mid-body, GARBAGE answers 200 with MALFORMED_BODY (JSON cut short) and
# WRONG with WRONG_BODY (a value of the wrong type), HUGE sends 2,000,000 bytes; DOWN is a port
# nothing listens on.
http_fault_stubs() {
  start_http_stub H500 ok --status 500 --body-text "$1"
  start_http_stub H401 ok --status 401 --body-text "$2"
  start_http_stub H403 ok --status 403 --body-text "$3"
  start_http_stub HANG hang
  start_http_stub TRUNC truncated
  start_http_stub GARBAGE ok --body-text "$4"
  start_http_stub WRONG ok --body-text "$5"
  start_http_stub HUGE huge --size 2000000
  DOWN=$(free_port)
}

# http_fault_sources FORMAT: the YAML list entries of a source per peer of http_fault_stubs, named
# down, h500, h401, h403, hang, truncated, malformed, wrongtype and huge, each with a timeout of 2 s
# and a cap of 1,000,000 bytes; FORMAT, a printf format given the peer's port, writes the lines
# of the kind between the name and the timeout.
http_fault_sources() {
  local f
  for f in down:$DOWN h500:$H500 h401:$H401 h403:$H403 hang:$HANG truncated:$TRUNC \
    malformed:$GARBAGE wrongtype:$WRONG huge:$HUGE; do
    printf '  - name: %s\n' "${f%%:*}"
    # shellcheck disable=SC2059 # the format is the caller's, for its kind's keys
    printf "$1" "${f#*:}"
    printf '    timeout: 2s\n    max_response_bytes: 1000000\n'
  done
}

# expect_http_faults FILE KIND [SOURCE:REASON...]: each source of http_fault_sources, and each
# SOURCE, is down in FILE with one error of its reason, and the exporter's log says so.
expect_http_faults() {
  local file=$1 kind=$2 want s r
  shift 2
  for want in down:connect h500:query h401:auth h403:auth hang:timeout truncated:protocol \
    malformed:protocol wrongtype:protocol huge:limit "$@"; do
    s=${want%%:*} r=${want#*:}
    expect_metric "$file" 0 qrel_collector_up "source=\"$s\""
    expect_metric "$file" 1 qrel_collector_errors_total "source=\"$s\"" "reason=\"$r\""
    expect_cmd "log line for $s names reason $r" grep -q "source=$s kind=$kind reason=$r" "$T/exporter.log"
  done
}

# ---- The fault proxy (issue 29: every reader survives any split of any reply) ------------------

# expect_same_through_proxy FILE DIRECT PROXIED [DRIFT]: in one scrape FILE, the source PROXIED
# (the same server read through fault_proxy_start) is up and has exactly the series of the source
# DIRECT: the same families and labels, and the same values, except in the families matching the
# extended regex DRIFT (ages and rates measured a moment apart), whose values are not compared.
# The collector's own families (qrel_collector_*: durations, round trips) are left out.
expect_same_through_proxy() {
  local file=$1 direct=$2 proxied=$3 drift=${4:-'^$'}
  expect_metric "$file" 1 qrel_collector_up "source=\"$proxied\""
  # Each sample of a source as "name{labels without source} value"; the value dropped in DRIFT.
  series_of() {
    grep -F "source=\"$1\"" "$file" | grep -v '^qrel_collector_' \
      | sed -e "s/source=\"$1\",\{0,1\}//" -e 's/,}/}/' -e 's/{}//' \
      | awk -v drift="$drift" '{ n = $1; sub(/\{.*/, "", n); if (n ~ drift) $NF = "~"; print }' \
      | sort
  }
  series_of "$direct" > "$T/proxy-direct.txt"
  series_of "$proxied" > "$T/proxy-proxied.txt"
  local n
  n=$(wc -l < "$T/proxy-direct.txt")
  expect_between "series of source $direct to compare" "$n" 1 1000000
  if diff "$T/proxy-direct.txt" "$T/proxy-proxied.txt" > "$T/proxy-diff.txt"; then
    ok "source $proxied (through the fault proxy) has the $n series of $direct"
  else
    not_ok "source $proxied differs from $direct: $(head -20 "$T/proxy-diff.txt")"
  fi
}

# expect_fault_proxy_cut PORT [MIN_PIECES]: the fault proxy on PORT wrote at least MIN_PIECES
# (default 20) pieces, none over 7 bytes (its default cut): the traffic really went through it.
expect_fault_proxy_cut() {
  local stats=$T/fault-proxy-$1.stats pieces largest
  # The proxy rewrites its counters at most every 50 ms: wait for them rather than race them.
  wait_for 10 "the fault proxy on port $1 to count ${2:-20} pieces" \
    awk -v min="${2:-20}" '$1 == "pieces" && $2 >= min { f = 1 } END { exit !f }' "$stats" || true
  pieces=$(awk '$1 == "pieces" { print $2 }' "$stats")
  largest=$(awk '$1 == "largest" { print $2 }' "$stats")
  expect_between "pieces the fault proxy on port $1 cut the server's replies into" \
    "$pieces" "${2:-20}" 1000000000
  expect_between "largest piece of the fault proxy on port $1 (bytes)" "$largest" 1 7
}

# proxied_source CONFIG NAME NEWNAME FROM TO: prints the sources list entry NAME of CONFIG (from
# its "  - name: NAME" line to the next entry or top-level key) renamed NEWNAME, with every FROM
# (a fixed string: the server's host:port) replaced by TO (the fault proxy's) and a timeout of 60 s
# in place of its own, for a test to add beside the original.
proxied_source() {
  awk -v name="$2" -v new="$3" -v from="$4" -v to="$5" '
    /^  - / || /^[^ ]/ { on = ($0 == "  - name: " name) }
    on && /^    timeout:/ { next }
    on {
      line = $0
      # A timeout of its own: 1- and 7-byte pieces on a loaded machine take their time, and
      # what is compared here is the series, not how fast they come.
      if (line == "  - name: " name) line = "  - name: " new "\n    timeout: 60s"
      out = ""
      while (from != "" && (i = index(line, from)) > 0) {
        out = out substr(line, 1, i - 1) to
        line = substr(line, i + length(from))
      }
      print out line
    }' "$1"
}

# expect_same_via_proxy CONFIG NAME HOST:PORT [DRIFT [PROXY_ARG...]]: CONFIG's source NAME, which
# reads the server at HOST:PORT, read again in one scrape beside itself as NAME_proxy through the
# fault proxy (fault_proxy_start, with PROXY_ARGs): it must be up with NAME's series
# (expect_same_through_proxy; DRIFT defaults to the ages, lags and margins, measured a moment
# apart), and the proxy must have cut what the server wrote. The scrape is $T/proxy.prom. Where the
# config does not spell the server as HOST:PORT, PROXY_FROM is what it spells and PROXY_TO_FORMAT
# the printf format that spells the proxy's port instead (e.g. 'port: %s').
expect_same_via_proxy() {
  local config=$1 name=$2 server=$3 drift=${4:-'_(age|lag)_seconds$|_margin_ratio$'} pp
  shift $(($# < 4 ? $# : 4))
  fault_proxy_start pp "$server" "$@"
  # shellcheck disable=SC2059 # the format is the caller's
  { cat "$config"; proxied_source "$config" "$name" "${name}_proxy" "${PROXY_FROM:-$server}" \
    "$(printf "${PROXY_TO_FORMAT:-127.0.0.1:%s}" "$pp")"; } > "$T/proxy.yml"
  "$QREL" scrape --config.file="$T/proxy.yml" > "$T/proxy.prom" 2> "$T/proxy.log" || true
  expect_same_through_proxy "$T/proxy.prom" "$name" "${name}_proxy" "$drift"
  expect_fault_proxy_cut "$pp"
}
