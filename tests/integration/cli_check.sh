#!/usr/bin/env bash
# `qrel check` against a real Redis (with a password) and a real PostgreSQL, driven through four
# states, each giving its Nagios exit code: OK (a clean configuration, nothing wrong), WARNING
# (a claim window and a dedup retention too short for the retries, a stale claim, a lagging
# outbox, a thin lease margin, a stream without a dead-letter stream), CRITICAL (a dead letter and
# a pending entry held past its lease), UNKNOWN (PostgreSQL stopped, or a wrong Redis password,
# with nothing critical). Text lines and JSON are asserted exactly (ages, which move while the
# test runs, are checked by range); qrel_audit_failed on the exporter's /metrics names the same
# findings as `qrel check`, qrel_audit_failed_queues counts them, and 40 streams without a
# dead-letter stream give 3 series (audit.queue_series) and a count of 40; usage and configuration
# errors are UNKNOWN too; no password appears in any output. `qrel scrape` prints the families
# /metrics serves for the same file (and --source=NAME those of /probe?target=NAME).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

secret="s3cret-$RANDOM-pass"
wrong="wr0ng-$RANDOM-pass"
printf '%s\n' "$secret" > "$T/redis.pass"
printf '%s\n' "$wrong" > "$T/wrong.pass"
chmod 600 "$T"/*.pass
start_redis RP --requirepass "$secret"
R() { REDISCLI_AUTH=$secret redis-cli -p "$RP" --no-auth-warning "$@"; }
start_postgres P

# Entry ids at known ages on the server's clock (not named id: as_postgres calls `id -u`).
redis_clock R
R XGROUP CREATE orders workers 0 MKSTREAM >/dev/null
R XGROUP CREATE events g 0 MKSTREAM >/dev/null

psql_do <<'SQL'
CREATE TABLE mail_claims (id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL, sent_at timestamptz);
CREATE TABLE handled (message_id text PRIMARY KEY, handled_at timestamptz NOT NULL);
CREATE TABLE outbox (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
                     published_at timestamptz);
SQL

# config FILE IN_FLIGHT_WINDOW RETENTION [events]: the sources; `events` adds a stream without a
# dead-letter stream.
config() {
  cat > "$1" <<YML
global:
  timeout: 5s
sources:
$(redis_source cache "$RP")
    password_file: ${5:-$T/redis.pass}
    streams:
      - name: orders
        claim_min_idle: 30s
        max_deliveries: 3
        dead_letter_stream: orders.dlq
$([ "${4:-}" = events ] && printf '      - name: events\n')
$(pg_source db "$P")
    claim_tables:
      - table: mail_claims
        name: mail
        id_column: id
        claimed_at_column: claimed_at
        done_at_column: sent_at
        in_flight_window: $2
        lease_timeout: 30s
        max_deliveries: 3
    dedup_tables:
      - table: handled
        name: mail
        id_column: message_id
        handled_at_column: handled_at
        retention: $3
    outboxes:
      - table: outbox
        created_at_column: created_at
        published_at_column: published_at
YML
}

# check NAME CONFIG: runs qrel check in text and JSON; sets RC, keeps $T/NAME.txt and .json.
check() {
  RC=0
  "$QREL" check --config.file="$2" > "$T/$1.txt" 2> "$T/$1.err" || RC=$?
  local jrc=0
  "$QREL" check --config.file="$2" --format json > "$T/$1.json" 2>> "$T/$1.err" || jrc=$?
  expect_eq "$1: the JSON run exits as the text run" "$jrc" "$RC"
}

# The lines whose figures move while the test runs, with those figures replaced.
steady() {
  sed -E -e 's/the oldest [0-9.hms]+ old/the oldest AGE old/' \
    -e 's/the oldest pending for [0-9.hms]+ /the oldest pending for AGE /' \
    -e '/\(group workers\)/s/longest hold now [0-9.hms]+ → margin [0-9.]+/longest hold now HOLD → margin M/' \
    -e '/\(group workers\)/s/raise the lease above [0-9.hms]+ /raise the lease above X /' "$1"
}

# ---- OK: a sound configuration and nothing wrong ----
config "$T/ok.yml" 30s 10m
check ok "$T/ok.yml"
expect_eq "OK: exit status" "$RC" 0
expect_eq "OK: report" "$(cat "$T/ok.txt")" \
"QREL OK - 0 critical, 0 warning, 0 unknown | critical=0;;;0 warning=0;;;0 unknown=0;;;0 queues=4;;;0
checked 4 queues in 2 sources"
expect_eq "OK: JSON status and counts" "$(jq -c '[.status, .exit_code, .counts, (.findings | length)]' "$T/ok.json")" \
  '["ok",0,{"critical":0,"warning":0,"unknown":0},0]'
expect_eq "OK: JSON queues" "$(jq -r '.queues[] | [.source, .kind, .queue, (.group // "-"), .status] | join(" ")' "$T/ok.json" | sort)" \
"cache redis_stream orders workers ok
db claim_table mail - ok
db dedup_table mail - ok
db outbox outbox - ok"

# ---- WARNING: configuration that cannot hold, and state that needs a look ----
psql_do <<'SQL'
-- One stale claim (its attempt died 5 min ago); one done in 20 s (the handler p99: margin 1.5).
INSERT INTO mail_claims VALUES (1, now() - interval '5 min', NULL),
                               (2, now() - interval '100 s', now() - interval '80 s');
-- An event the relay has not published for 10 minutes.
INSERT INTO outbox (created_at) VALUES (now() - interval '10 min');
INSERT INTO handled VALUES ('m-1', now());
SQL
config "$T/main.yml" 2m 1m events
check warning "$T/main.yml"
expect_eq "WARNING: exit status" "$RC" 1
expect_eq "WARNING: report" "$(steady "$T/warning.txt")" \
"QREL WARNING - 0 critical, 6 warning, 0 unknown | critical=0;;;0 warning=6;;;0 unknown=0;;;0 queues=5;;;0
WARNING db mail: lease 30s, handler p99 20s → margin 1.50: handlers 1.5 times slower than now would have their leases expire under them and make duplicates; raise the lease above 40s or extend it while the handler works [lease_margin_below_2]
WARNING db mail: 1 stale claim (claimed, never done, older than the in-flight window 2m): the attempts died between claim and done, so their effects may never have happened; check each one and fix what stops the attempts [stale_claims]
WARNING db outbox: 1 row unpublished, the oldest pending for AGE (limit 60s): the relay is behind or stopped; check the relay process and its errors [outbox_lagging]
WARNING db mail: dedup window 60s is shorter than the retry horizon 90s (claim_table): a retry after the window is handled again as a new message; keep dedup keys longer than 90s or make the retries end sooner [dedup_window_shorter_than_retry_horizon]
WARNING cache events: no dead-letter queue: a message that always fails is retried without end or dropped, with nothing to alert on; have the consumers move given-up entries to a stream and name it in dead_letter_stream [no_dead_letter_queue]
WARNING db mail: in-flight window 2m with a lease of 30s and 3 deliveries: the last delivery comes 60s after the first, while the claim of a crashed attempt still looks in flight, so the message is dead-lettered with its effect possibly never done; make the in-flight window shorter than 60s or allow at least 6 deliveries [claim_window_too_short]
checked 5 queues in 2 sources"
expect_eq "WARNING: JSON findings" "$(jq -r '.findings[] | [.severity, .rule, .source, .kind, .queue, (.group // "-"), .limit] | join(" ")' "$T/warning.json")" \
"warning lease_margin_below_2 db claim_table mail - 2
warning stale_claims db claim_table mail - 0
warning outbox_lagging db outbox outbox - 60
warning dedup_window_shorter_than_retry_horizon db dedup_table mail - 90
warning no_dead_letter_queue cache redis_stream events - 0
warning claim_window_too_short db claim_table mail - 60"
expect_between "WARNING: outbox age in JSON" \
  "$(jq '.findings[] | select(.rule == "outbox_lagging") | .value' "$T/warning.json")" 600 630

# ---- CRITICAL: a dead letter, and an entry held twice as long as its lease ----
R XADD orders "$(stream_id 100)" n 1 >/dev/null
R XREADGROUP GROUP workers c1 COUNT 1 STREAMS orders '>' >/dev/null
R XCLAIM orders workers c2 0 "$(stream_id 100)" IDLE 60000 RETRYCOUNT 2 >/dev/null
R XADD orders.dlq "$(stream_id 200)" why expired >/dev/null
check critical "$T/main.yml"
expect_eq "CRITICAL: exit status" "$RC" 2
steady "$T/critical.txt" > "$T/critical.steady"
expect_eq "CRITICAL: first lines" "$(head -3 "$T/critical.steady")" \
"QREL CRITICAL - 2 critical, 6 warning, 0 unknown | critical=2;;;0 warning=6;;;0 unknown=0;;;0 queues=5;;;0
CRITICAL cache orders: dead-letter queue orders.dlq holds 1 message, the oldest AGE old: the broker gave up on them, which does not mean their work was not done; classify each against your dedup or claim table before replaying, and give the dead-letter queue an owner [dead_letter_queue_not_empty]
CRITICAL cache orders (group workers): lease 30s, longest hold now HOLD → margin M: leases expire under running handlers, so slow messages are delivered again while still being handled, up to 3 times; raise the lease above X or extend it while the handler works [lease_margin_below_1]"
expect_eq "CRITICAL: the warnings follow" "$(sed -n '4,9p' "$T/critical.steady")" "$(sed -n '2,7p' "$(steady "$T/warning.txt" > "$T/w.steady"; echo "$T/w.steady")")"
expect_between "CRITICAL: margin (30 s / about 60 s)" \
  "$(jq '.findings[] | select(.rule == "lease_margin_below_1") | .value' "$T/critical.json")" 0.45 0.5
expect_between "CRITICAL: oldest message age in the worst row" \
  "$(jq '.queues[0].oldest_age_seconds' "$T/critical.json")" 100 130
expect_eq "CRITICAL: worst queue first" \
  "$(jq -c '.queues[0] | [.queue, .group, .status, .dead_letter_messages, .depth, .rules]' "$T/critical.json")" \
  '["orders","workers","critical",1,1,["dead_letter_queue_not_empty","lease_margin_below_1"]]'

# The exporter serves the same findings as qrel_audit_failed.
start_exporter "$T/main.yml"
scrape "$T/m.txt"
expect_eq "qrel_audit_failed agrees with qrel check" \
  "$(grep '^qrel_audit_failed{' "$T/m.txt" | sed -E 's/^qrel_audit_failed\{(.*)\} 1$/\1/; s/[a-z_]+="([^"]*)",?/\1 /g; s/ $//' | sort)" \
  "$(jq -r '.findings[] | [.source, .kind, .queue] + (if .group then [.group] else [] end) + [.rule, .severity] | join(" ")' "$T/critical.json" | sort)"
expect_eq "qrel_audit_failed series" "$(grep -c '^qrel_audit_failed{' "$T/m.txt")" 8
expect_eq "qrel_audit_failed_queues counts the findings of each source, kind and rule" \
  "$(grep '^qrel_audit_failed_queues{' "$T/m.txt" | sed -E 's/^qrel_audit_failed_queues\{(.*)\} ([0-9]+)$/\1 \2/; s/[a-z_]+="([^"]*)",?/\1 /g; s/  / /' | sort)" \
  "$(jq -r '.findings | group_by([.source, .kind, .rule]) | .[] | [.[0].source, .[0].kind, .[0].rule, .[0].severity, length] | map(tostring) | join(" ")' "$T/critical.json" | sort)"
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"
# Fixed, the series disappears with the next scrape.
R XACK orders workers "$(stream_id 100)" >/dev/null
scrape "$T/m2.txt"
expect_absent "$T/m2.txt" qrel_audit_failed 'rule="lease_margin_below_1"'
expect_metric "$T/m2.txt" 1 qrel_audit_failed 'rule="dead_letter_queue_not_empty"'
stop_exporter

# ---- qrel scrape prints what /metrics serves (one assembly, exporter/scrape.c) ----
# The same file with a dead-letter join, so every part of a scrape is there: the collections and
# meta series, the join's series, the audit's series and the exporter's own. The families (names,
# HELP and TYPE lines) must be the same; --source=NAME must print what /probe?target=NAME serves.
cp "$T/main.yml" "$T/joined.yml"
cat >> "$T/joined.yml" <<YML
dead_letters:
  - source: cache
    queue: orders
    id_field: order_id
    work_table: {source: db, table: mail_claims, id_column: id, done_column: sent_at}
YML
families() { # the HELP and TYPE lines, then the sample names, of an exposition
  grep -E '^# (HELP|TYPE) ' "$1" | sort
  grep -v '^#' "$1" | sed -E 's/[{ ].*//' | sort -u
}
start_exporter "$T/joined.yml"
scrape "$T/joined.metrics"
curl -fsS "http://$ADDR/probe?target=cache" -o "$T/joined.probe"
rc=0; "$QREL" scrape --config.file="$T/joined.yml" > "$T/joined.scrape" 2> "$T/joined.scrape.err" || rc=$?
expect_eq "qrel scrape: exit status with every source up" "$rc" 0
rc=0; "$QREL" scrape --config.file="$T/joined.yml" --source=cache > "$T/joined.one" 2>> "$T/joined.scrape.err" || rc=$?
expect_eq "qrel scrape --source: exit status" "$rc" 0
stop_exporter
for part in qrel_collector_up qrel_dead_letter_classified_messages qrel_audit_failed qrel_build_info \
  qrel_config_last_reload_successful; do
  expect_cmd "/metrics serves $part" grep -q "^${part}[{ ]" "$T/joined.metrics"
done
# The exporter's own process (process_*, and qrel_http_requests_total once a request was
# answered) is /metrics' alone: qrel scrape has no server and no long-lived process to describe.
# Everything else is the same.
exporter_own='^(# (HELP|TYPE) )?(process_[a-z_]+|qrel_http_requests_total)( |$)'
expect_eq "qrel scrape and /metrics: the same families, HELP and TYPE (but the exporter's own)" \
  "$(families "$T/joined.scrape")" "$(families "$T/joined.metrics" | grep -Ev "$exporter_own")"
expect_eq "/metrics: the exporter's process families" \
  "$(grep -E '^# TYPE process_' "$T/joined.metrics" | awk '{print $3}' | sort | tr '\n' ' ')" \
  "process_cpu_seconds_total process_max_fds process_open_fds process_resident_memory_bytes process_start_time_seconds process_virtual_memory_bytes "
expect_eq "qrel scrape and /metrics: the same audit series" \
  "$(grep '^qrel_audit_failed' "$T/joined.scrape" | sort)" \
  "$(grep '^qrel_audit_failed' "$T/joined.metrics" | sort)"
expect_cmd "/probe serves the join of the source probed" \
  grep -q '^qrel_dead_letter_classified_messages{' "$T/joined.probe"
expect_eq "qrel scrape --source and /probe: the same families, HELP and TYPE" \
  "$(families "$T/joined.one")" "$(families "$T/joined.probe")"
expect_absent "$T/joined.one" qrel_build_info

# ---- a fleet that breaks one rule by design: the series stay bounded ----
# 40 streams without a dead-letter stream: `qrel check` lists all 40, /metrics counts 40 and
# names only the first audit.queue_series of them.
for i in $(seq -w 1 40); do R XGROUP CREATE "fleet:$i" g 0 MKSTREAM >/dev/null; done
cat > "$T/fleet.yml" <<YML
audit:
  queue_series: 3
sources:
$(redis_source fleet "$RP")
    password_file: $T/redis.pass
    streams:
      - pattern: "fleet:*"
YML
check fleet "$T/fleet.yml"
expect_eq "fleet: qrel check lists every stream" \
  "$(jq '[.findings[] | select(.rule == "no_dead_letter_queue")] | length' "$T/fleet.json")" 40
start_exporter "$T/fleet.yml"
scrape "$T/fleet.txt"
expect_metric "$T/fleet.txt" 40 qrel_audit_failed_queues 'source="fleet"' 'rule="no_dead_letter_queue"'
expect_eq "fleet: 3 qrel_audit_failed series, the first streams by name" \
  "$(grep '^qrel_audit_failed{' "$T/fleet.txt" | grep -o 'queue="[^"]*"' | tr '\n' ' ')" \
  'queue="fleet:01" queue="fleet:02" queue="fleet:03" '
expect_eq "fleet: audit series in all" "$(grep -c '^qrel_audit_failed' "$T/fleet.txt")" 4
stop_exporter
for i in $(seq -w 1 40); do R DEL "fleet:$i" >/dev/null; done

# ---- UNKNOWN: a source that cannot be read, nothing critical ----
R DEL orders.dlq >/dev/null
stop_postgres "$P"
check unknown "$T/main.yml"
expect_eq "UNKNOWN: exit status" "$RC" 3
expect_eq "UNKNOWN: report" "$(sed -E 's/(cannot be read, so its queues were not checked: ).*/\1ERR/' "$T/unknown.txt")" \
"QREL UNKNOWN - 0 critical, 1 warning, 1 unknown | critical=0;;;0 warning=1;;;0 unknown=1;;;0 queues=2;;;0
UNKNOWN db (postgres): cannot be read, so its queues were not checked: ERR
WARNING cache events: no dead-letter queue: a message that always fails is retried without end or dropped, with nothing to alert on; have the consumers move given-up entries to a stream and name it in dead_letter_stream [no_dead_letter_queue]
checked 2 queues in 2 sources"
expect_cmd "UNKNOWN: the reason names the source and the failure" \
  grep -qE '^UNKNOWN db \(postgres\): .*: postgres "db" 127\.0\.0\.1:[0-9]+/postgres: .*connect' "$T/unknown.txt"
expect_eq "UNKNOWN: JSON sources" "$(jq -c '[.status, .exit_code, [.sources[] | [.name, .up, (.error != null)]]]' "$T/unknown.json")" \
  '["unknown",3,[["cache",true,false],["db",false,true]]]'

# A wrong password: UNKNOWN with an auth reason, and neither password anywhere.
config "$T/wrong.yml" 30s 10m "" "$T/wrong.pass"
check wrong "$T/wrong.yml"
expect_eq "wrong password: exit status" "$RC" 3
expect_eq "wrong password: the reason" "$(grep '^UNKNOWN cache' "$T/wrong.txt")" \
  "UNKNOWN cache (redis_stream): cannot be read, so its queues were not checked: redis \"cache\" 127.0.0.1:$RP: authentication failed: WRONGPASS invalid username-password pair or user is disabled."

# Usage and configuration errors are UNKNOWN, not a state of the queues.
rc=0; out=$("$QREL" check --config.file="$T/main.yml" --format xml) || rc=$?
expect_eq "bad --format: exit status" "$rc" 3
expect_eq "bad --format: message" "$out" 'QREL UNKNOWN - --format: want text or json, got "xml"'
rc=0; out=$("$QREL" check --config.file="$T/main.yml" --timeout 5) || rc=$?
expect_eq "bad --timeout: exit status" "$rc" 3
printf 'audit:\n  outbox_lag: soon\n' > "$T/bad.yml"
rc=0; out=$("$QREL" check --config.file="$T/bad.yml") || rc=$?
expect_eq "config error: exit status" "$rc" 3
expect_eq "config error: message" "$out" "QREL UNKNOWN - $T/bad.yml:2:15: outbox_lag: want a duration like \"5s\", got \"soon\""

if grep -rlF -e "$secret" -e "$wrong" "$T"/*.txt "$T"/*.json "$T"/*.err "$T"/*.log 2>/dev/null; then
  not_ok "a password appears in an output"
else
  ok "no password appears in any output"
fi

finish
