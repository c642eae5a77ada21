#!/usr/bin/env bash
# dead_letter_classify of a redis_stream source against a real redis-server and a real
# PostgreSQL: dead-letter entries whose id the claim table records as done, not done or not at
# all, entries without the id field or with an id the column cannot hold give exact counts of
# qrel_dead_letter_classified_messages{work}; ids spelt differently from the column's text form
# ("0003", an uppercase or braced uuid) are found; a table without a done column counts a row as
# done; max_entries caps what is read and the rest is unknown; the PostgreSQL connection is kept
# between scrapes; a missing table fails --config.check and the scrape (reason query); PostgreSQL
# stopped is up 0 with reason connect and a "dead_letter_classify: " message, and back up is up
# 1 again; the password of the DSN appears in no output, page or log.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
start_postgres PGP
R() { redis-cli -p "$RP" "$@" >/dev/null; }
secret='dlq-classify-pw-5531'

psql_do <<SQL
CREATE ROLE qrel_ro LOGIN PASSWORD '$secret';
CREATE TABLE confirmation_claims (order_id bigint PRIMARY KEY,
  claimed_at timestamptz NOT NULL DEFAULT now(), sent_at timestamptz);
INSERT INTO confirmation_claims (order_id, sent_at) VALUES (1, now()), (2, now()), (3, now()), (4, NULL);
CREATE SCHEMA jobs;
CREATE TABLE jobs."handled jobs" (job_id uuid PRIMARY KEY);
INSERT INTO jobs."handled jobs" VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
GRANT USAGE ON SCHEMA jobs TO qrel_ro;
GRANT SELECT ON confirmation_claims, jobs."handled jobs" TO qrel_ro;
SQL
printf 'postgresql://qrel_ro:%s@127.0.0.1:%s/postgres\n' "$secret" "$PGP" > "$T/shop.dsn"
chmod 600 "$T/shop.dsn"

# orders.dlq: done 1, 2, 3 (spelt 0003) and 1 again; not done 4 (open claim) and 5 (no claim);
# unknown: an entry without the field and one whose id cannot be a bigint.
R XGROUP CREATE orders mailer '$' MKSTREAM
for o in 1 2 0003 4 5 1; do R XADD orders.dlq '*' order "$o" reason max_deliveries; done
R XADD orders.dlq '*' reason max_deliveries
R XADD orders.dlq '*' order abc
# jobs.dlq, read 3 at most: the handled uuid in upper case and in braces (done), another uuid
# (not done); the two entries beyond the cap are unknown.
R XGROUP CREATE jobs workers '$' MKSTREAM
for j in A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11 b1eebc99-9c0b-4ef8-bb6d-6bb9bd380a12 \
  '{a0eebc999c0b4ef8bb6d6bb9bd380a11}' a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 c1eebc99-9c0b-4ef8-bb6d-6bb9bd380a13; do
  R XADD jobs.dlq '*' job "$j"
done
# A dead-letter stream without the block: no classification.
R XGROUP CREATE plain g '$' MKSTREAM
R XADD plain.dlq '*' order 1

cat > "$T/qrel.yml" <<YML
sources:
  - name: cache
    kind: redis_stream
    address: 127.0.0.1:$RP
    streams:
      - name: orders
        dead_letter_stream: orders.dlq
        dead_letter_classify:
          dsn_file: $T/shop.dsn
          table: confirmation_claims
          id_column: order_id
          done_column: sent_at
          id_field: order
      - name: jobs
        dead_letter_stream: jobs.dlq
        dead_letter_classify:
          dsn_file: $T/shop.dsn
          table: jobs.handled jobs
          id_column: job_id
          id_field: job
          max_entries: 3
      - name: plain
        dead_letter_stream: plain.dlq
YML

expect_cmd "--config.check passes (tables and columns exist)" \
  "$EXPORTER" --config.file="$T/qrel.yml" --config.check
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.log"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="cache"'
o='queue="orders",dead_letter_queue="orders.dlq"'
expect_metric "$T/m.txt" 8 qrel_dead_letter_messages "$o"
expect_metric "$T/m.txt" 4 qrel_dead_letter_classified_messages "$o" 'work="done"'
expect_metric "$T/m.txt" 2 qrel_dead_letter_classified_messages "$o" 'work="not_done"'
expect_metric "$T/m.txt" 2 qrel_dead_letter_classified_messages "$o" 'work="unknown"'
j='queue="jobs",dead_letter_queue="jobs.dlq"'
expect_metric "$T/m.txt" 5 qrel_dead_letter_messages "$j"
expect_metric "$T/m.txt" 2 qrel_dead_letter_classified_messages "$j" 'work="done"'
expect_metric "$T/m.txt" 1 qrel_dead_letter_classified_messages "$j" 'work="not_done"'
expect_metric "$T/m.txt" 2 qrel_dead_letter_classified_messages "$j" 'work="unknown"'
expect_between "jobs.dlq oldest age still from the capped read (s)" \
  "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds "$j")" 0 10
expect_metric "$T/m.txt" 1 qrel_dead_letter_messages 'queue="plain"'
expect_absent "$T/m.txt" qrel_dead_letter_classified_messages 'queue="plain"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"

# An empty dead-letter stream: all three values, zeros included.
R DEL jobs.dlq
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m2.txt" 2>> "$T/scrape.log"
for w in "done" not_done unknown; do
  expect_metric "$T/m2.txt" 0 qrel_dead_letter_classified_messages "$j" "work=\"$w\""
done

# The exporter keeps one connection per block between scrapes.
start_exporter "$T/qrel.yml"
backends() { psql_val "SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity WHERE usename = 'qrel_ro'"; }
scrape "$T/e1.txt"
b1=$(backends)
scrape "$T/e2.txt"
expect_eq "qrel's PostgreSQL backends after 2 scrapes (one per block, kept)" "$(backends)" "$b1"
expect_eq "number of backends" "$(tr ',' '\n' <<<"$b1" | grep -c .)" 2
expect_metric "$T/e2.txt" 4 qrel_dead_letter_classified_messages "$o" 'work="done"'

# PostgreSQL goes away: the source fails with reason connect, Redis' series are not served.
stop_postgres "$PGP"
sleep 0.6 # past the first back-off
scrape "$T/down.txt"
expect_metric "$T/down.txt" 0 qrel_collector_up 'source="cache"'
expect_absent "$T/down.txt" qrel_dead_letter_messages "$o"
got=$(mval "$T/down.txt" qrel_collector_errors_total 'source="cache"' 'reason="connect"')
if [ -n "$got" ] && [ "$got" -ge 1 ]; then ok "errors_total{reason=connect} = $got"; else not_ok "errors_total{reason=connect}: got '$got'"; fi
curl -fsS "http://$ADDR/" -o "$T/landing.html"
expect_cmd "the landing page names dead_letter_classify as the cause" grep -q 'dead_letter_classify: ' "$T/landing.html"
rc=0
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/down-cli.txt" 2> "$T/down-cli.log" || rc=$?
expect_eq "qrel scrape exit status with PostgreSQL down" "$rc" 1
sed 's/^/     /' "$T/down-cli.log"
expect_cmd "qrel scrape says dead_letter_classify: ... connect" \
  grep -qE 'dead_letter_classify: postgres "cache" 127\.0\.0\.1:[0-9]+/postgres: connect: ' "$T/down-cli.log"

# And back: the next scrapes reconnect.
as_postgres "$PGBIN/pg_ctl" -D "$T/pg-$PGP/data" -l "$T/pg-$PGP/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $PGP -k $T/pg-$PGP -c fsync=off" start >/dev/null
up_again() {
  scrape "$T/up.txt"
  [ "$(mval "$T/up.txt" qrel_collector_up 'source="cache"')" = 1 ]
}
expect_cmd "up 1 again once PostgreSQL is back (within 10 s)" \
  wait_for -i 0.25 10 "qrel_collector_up 1 for source cache" up_again
expect_metric "$T/up.txt" 2 qrel_dead_letter_classified_messages "$o" 'work="not_done"'
stop_exporter

# A table that does not exist: --config.check and the scrape fail, reason query.
sed 's/table: confirmation_claims/table: confirmation_claimz/' "$T/qrel.yml" > "$T/bad.yml"
rc_check=0 rc_bad=0
"$EXPORTER" --config.file="$T/bad.yml" --config.check > "$T/check.out" 2>&1 || rc_check=$?
"$QREL" scrape --config.file="$T/bad.yml" > "$T/bad.txt" 2> "$T/bad.log" || rc_bad=$?
expect_eq "--config.check exit status for a missing table" "$rc_check" 1
sed 's/^/     /' "$T/check.out"
expect_cmd "--config.check names the table" grep -qE 'source "cache": dead_letter_classify: postgres "cache" 127\.0\.0\.1:[0-9]+/postgres: stream "orders": table "confirmation_claimz" does not exist$' "$T/check.out"
expect_eq "qrel scrape exit status for a missing table" "$rc_bad" 1
expect_metric "$T/bad.txt" 1 qrel_collector_errors_total 'source="cache"' 'reason="query"'

for f in "$T"/*.txt "$T"/*.log "$T"/*.out "$T/landing.html"; do
  if grep -q "$secret" "$f"; then not_ok "the DSN's password appears in $(basename "$f")"; fi
done
ok "the DSN's password appears in no output, page or log"

finish
