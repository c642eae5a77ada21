#!/usr/bin/env bash
# kind: postgres against a real PostgreSQL: outboxes in both modes (published_at IS NULL, and a
# status column) with rows of known age, checked to the second; a schema-qualified mixed-case
# table; a role with a SCRAM password, right (up 1, through password_env and through a DSN file)
# and wrong (up 0, reason auth, and the passwords appear nowhere: output, landing page, debug
# log); an unknown host (reason connect); a query slower than the scrape (a view calling
# pg_sleep) answered within Prometheus' 2 s timeout with reason timeout, and cancelled on the
# server; a session that cannot write (a view whose function updates a table: reason query, the
# row unchanged); --config.check and `qrel scrape` naming a missing column; promtool on the
# output; the database stopped (reason connect). Also runs check_postgres's live cases on the server.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# Local and postgres over TCP trust; every other role over TCP must give a SCRAM password.
cat > "$T/pg_hba.conf" <<'HBA'
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
HBA
start_postgres P "$T/pg_hba.conf"

secret='correct-pg-horse-7781'
wrong='wrong-pg-battery-4421'
dsn_secret='dsn-only-staple-9913'
printf '%s\n' "$wrong" > "$T/wrong.pass"
printf 'postgresql://qrel_dsn:%s@127.0.0.1:%s/postgres?sslmode=disable\n' "$dsn_secret" "$P" > "$T/shop.dsn"
chmod 600 "$T"/*.pass "$T/shop.dsn"

psql_do <<SQL
CREATE TABLE outbox (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
                     published_at timestamptz, payload jsonb);
CREATE INDEX outbox_pending ON outbox (created_at) WHERE published_at IS NULL;
INSERT INTO outbox (created_at) VALUES (now() - interval '120 s'), (now() - interval '60 s'),
                                       (now() - interval '5 s');
INSERT INTO outbox (created_at, published_at) VALUES (now() - interval '900 s', now()),
                                                     (now() - interval '800 s', now());
CREATE TABLE empty_outbox (created_at timestamptz, published_at timestamptz);
CREATE SCHEMA app;
CREATE TABLE app."Events" (id bigserial, ts timestamptz NOT NULL, state text NOT NULL);
INSERT INTO app."Events" (ts, state) VALUES (now() - interval '42 s', 'new'),
  (now() - interval '10 s', 'new'), (now() - interval '3000 s', 'sent');
CREATE VIEW slow_outbox AS SELECT created_at, published_at FROM outbox WHERE pg_sleep(10) IS NOT NULL;
CREATE TABLE counter (n int);
INSERT INTO counter VALUES (0);
CREATE FUNCTION bump() RETURNS timestamptz LANGUAGE plpgsql VOLATILE
  AS \$\$ BEGIN UPDATE counter SET n = n + 1; RETURN now(); END \$\$;
CREATE VIEW sneaky_outbox AS SELECT bump() AS created_at, NULL::timestamptz AS published_at;
CREATE ROLE qrel_mon LOGIN PASSWORD '$secret';
CREATE ROLE qrel_dsn LOGIN PASSWORD '$dsn_secret';
GRANT USAGE ON SCHEMA app TO qrel_mon, qrel_dsn;
GRANT SELECT ON ALL TABLES IN SCHEMA public, app TO qrel_mon, qrel_dsn;
SQL
inserted_ms=$(now_ms)

# check_postgres's live cases (read-only session, statement_timeout, cancel at the deadline) need a
# server: this one.
expect_cmd "check_postgres against the live server" \
  env PGTEST_PORT="$P" CK_FORK=no CK_VERBOSITY=silent "$QREL_BUILD_DIR/tests/check_postgres"

outbox='{table: outbox, created_at_column: created_at, published_at_column: published_at}'
cat > "$T/qrel.yml" <<YML
global:
  timeout: 10s
sources:
$(pg_source shop "$P")
    outboxes:
      - $outbox
      - table: app.Events
        name: events
        created_at_column: ts
        status_column: state
        pending_value: new
      - {table: empty_outbox, created_at_column: created_at, published_at_column: published_at}
$(pg_source mon-right "$P" qrel_mon)
    password_env: QREL_TEST_PG_PASSWORD
    outboxes: [$outbox]
$(pg_source mon-wrong "$P" qrel_mon)
    password_file: $T/wrong.pass
    outboxes: [$outbox]
  - name: by-dsn
    kind: postgres
    dsn_file: $T/shop.dsn
    outboxes: [$outbox]
  - name: nohost
    kind: postgres
    host: nonexistent.invalid
    user: qrel_mon
    password_env: QREL_TEST_PG_PASSWORD
    outboxes: [$outbox]
$(pg_source slow "$P")
    timeout: 3s
    outboxes:
      - {table: slow_outbox, created_at_column: created_at, published_at_column: published_at}
YML
export QREL_TEST_PG_PASSWORD=$secret
start_exporter "$T/qrel.yml"

took=$(scrape_ms "$T/m1.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 2')
elapsed=$(awk -v a="$inserted_ms" -v b="$(now_ms)" 'BEGIN { printf "%.3f", (b - a) / 1000 }')
expect_between "scrape time with a 10 s query (header 2 s), ms" "$took" 0 1999
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="shop"' 'kind="postgres"'
expect_metric "$T/m1.txt" 3 qrel_outbox_pending_messages 'source="shop"' 'kind="outbox"' 'queue="outbox"'
expect_between "oldest pending outbox row, s" \
  "$(mval "$T/m1.txt" qrel_outbox_oldest_pending_age_seconds 'source="shop"' 'queue="outbox"')" \
  119 "$(awk -v e="$elapsed" 'BEGIN { print 121 + e }')"
expect_metric "$T/m1.txt" 2 qrel_outbox_pending_messages 'source="shop"' 'queue="events"'
expect_between "oldest pending event (status mode), s" \
  "$(mval "$T/m1.txt" qrel_outbox_oldest_pending_age_seconds 'source="shop"' 'queue="events"')" \
  41 "$(awk -v e="$elapsed" 'BEGIN { print 43 + e }')"
expect_metric "$T/m1.txt" 0 qrel_outbox_pending_messages 'source="shop"' 'queue="empty_outbox"'
expect_metric "$T/m1.txt" 0 qrel_outbox_oldest_pending_age_seconds 'source="shop"' 'queue="empty_outbox"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m1.txt'"
# The outboxes read again through the fault proxy: libpq's reading of every message cut into 1- and
# 7-byte pieces must give the same series (the ages are measured a moment apart).
{ echo 'sources:'; proxied_source "$T/qrel.yml" shop shop "" ""; } > "$T/shop.yml"
PROXY_FROM="port: $P" PROXY_TO_FORMAT='port: %s' expect_same_via_proxy "$T/shop.yml" shop "127.0.0.1:$P"

# Passwords: SCRAM through password_env and through a DSN file; a wrong one is reason auth.
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="mon-right"'
expect_metric "$T/m1.txt" 3 qrel_outbox_pending_messages 'source="mon-right"' 'queue="outbox"'
expect_metric "$T/m1.txt" 1 qrel_collector_up 'source="by-dsn"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="mon-wrong"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="mon-wrong"' 'reason="auth"'
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="nohost"'
expect_metric "$T/m1.txt" 1 qrel_collector_errors_total 'source="nohost"' 'reason="connect"'
expect_cmd "the log names the unknown host" \
  grep -q 'source=nohost kind=postgres reason=connect.*nonexistent.invalid' "$T/exporter.log"

# The slow query: this scrape stopped waiting at its header's 1.5 s, which is not the source's
# fault (no error counted); the query itself runs until the source's own 3 s timeout, then
# counts as a timeout and is cancelled on the server (nothing of qrel's still running).
expect_metric "$T/m1.txt" 0 qrel_collector_up 'source="slow"'
expect_metric "$T/m1.txt" 0 qrel_collector_errors_total 'source="slow"' 'reason="timeout"'
# Waits for the attempt to end (it logs its failure) rather than for 3 s of wall clock: a scrape
# sent by the clock could land after the 0.5 s back-off that follows and start a second attempt.
slow_failed() { grep -q 'msg="collection failed" source=slow .*reason=timeout' "$T/exporter.log"; }
wait_for 30 "the slow source's attempt to time out" slow_failed || true
active=1
none_active() {
  active=$(psql_val "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'qrel' AND state = 'active'")
  [ "$active" = 0 ]
}
wait_for 2 "no qrel query active on the server" none_active || true
expect_eq "qrel queries still running on the server 2 s after the timeout" "$active" 0
# The one timeout, whether this scrape comes within the back-off (nothing started) or after it (a
# second attempt starts, and this scrape's 1 s header, a 0.5 s wait, ends long before that
# attempt's own 3 s: late for the header only, which counts nothing).
scrape "$T/m1b.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 1'
expect_metric "$T/m1b.txt" 1 qrel_collector_errors_total 'source="slow"' 'reason="timeout"'
expect_cmd "the server log shows the cancel" grep -q 'canceling statement due to user request' "$T/pg-$P/server.log"

curl -fsS "http://$ADDR/" -o "$T/landing.html"
expect_cmd "the landing page shows the auth failure" grep -q 'password authentication failed' "$T/landing.html"
for f in "$T"/m*.txt "$T/landing.html" "$T/exporter.log"; do
  if grep -qF -e "$wrong" -e "$secret" -e "$dsn_secret" "$f"; then
    not_ok "a password appears in $(basename "$f")"
  else
    ok "no password in $(basename "$f")"
  fi
done

# A second scrape reuses the connection: no new backend for source shop (the one whose last
# query read empty_outbox).
shop_pids="SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = 'qrel' AND query LIKE '%empty_outbox%'"
pids1=$(psql_val "$shop_pids")
expect_cmd "source shop has a backend between scrapes" test -n "$pids1"
scrape "$T/m2.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 2'
expect_metric "$T/m2.txt" 1 qrel_collector_up 'source="shop"'
pids2=$(psql_val "$shop_pids")
expect_eq "backends of source shop after a second scrape" "$pids2" "$pids1"
stop_exporter

# Read-only: a view whose function writes fails the scrape (reason query); the row is unchanged.
cat > "$T/sneaky.yml" <<YML
sources:
$(pg_source sneaky "$P")
    outboxes: [{table: sneaky_outbox, created_at_column: created_at, published_at_column: published_at}]
YML
expect_scrape_error "with a writing view" "$T/sneaky.yml" "$T/sneaky" sneaky query \
  "the error says read-only" \
  'cannot execute UPDATE in a read-only transaction'
expect_eq "counter after the scrape" "$(psql_val 'SELECT n FROM counter')" 0

# A missing column: --config.check names source, table and column; so does a scrape.
cat > "$T/missing.yml" <<YML
sources:
$(pg_source shop "$P")
    outboxes:
      - {table: outbox, created_at_column: created_at, published_at_column: published_at}
      - {table: app.Events, created_at_column: created, status_column: state, pending_value: new}
YML
expect_exit "--config.check exit status with a missing column" 1 "$T/check.out" "$EXPORTER" --config.file="$T/missing.yml" --config.check
expect_cmd "--config.check names source, table and column" \
  grep -qF "postgres \"shop\" 127.0.0.1:$P/postgres: outbox \"app.Events\": column \"created\" does not exist in table \"app.Events\"" "$T/check.out"
expect_exit "--config.check exit status with an auth failure among the sources" 1 "$T/check-all.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
expect_cmd "--config.check reports the wrong password" grep -q 'source "mon-wrong".*password authentication failed' "$T/check-all.out"
expect_cmd "--config.check passes the good sources" bash -c "! grep -q 'source \"shop\"' '$T/check-all.out'"
sed -i '/app.Events/d' "$T/missing.yml"
expect_exit "--config.check exit status when every column exists" 0 "$T/check-ok.out" "$EXPORTER" --config.file="$T/missing.yml" --config.check
expect_cmd "--config.check says OK" grep -q ': OK, 1 source$' "$T/check-ok.out"
sed -i 's/created_at_column: created_at/created_at_column: created/' "$T/missing.yml"
expect_scrape_error "with a missing column" "$T/missing.yml" "$T/missing" shop query \
  "qrel scrape names table and column" \
  'outbox "outbox": column "created" does not exist in table "outbox"'

# min_interval: a recent result is served again, qrel_sample_age_seconds says how old it is, and
# the database is not asked until it has expired.
cat > "$T/cached.yml" <<YML
sources:
$(pg_source cached "$P")
    min_interval: 5s
    outboxes: [{table: empty_outbox, created_at_column: created_at, published_at_column: published_at}]
YML
# (min_interval 5 s: the second scrape comes about 0.6 s after the first on a quiet machine.)
start_exporter "$T/cached.yml"
c1_sent=$(now_ms)
scrape "$T/c1.txt"
expect_metric "$T/c1.txt" 0 qrel_outbox_pending_messages 'source="cached"'
psql_do "INSERT INTO empty_outbox VALUES (now(), NULL)"
sleep 0.5
scrape "$T/c2.txt"
expect_metric "$T/c2.txt" 0 qrel_outbox_pending_messages 'source="cached"'
expect_between "sample age of the cached result" \
  "$(mval "$T/c2.txt" qrel_sample_age_seconds 'source="cached"')" 0.4 4.9
# Scrapes until one sees the new row: every one before is served from the cache, and the first
# that asks the database again comes no sooner than min_interval after the first collection.
fresh() {
  scrape "$T/c3.txt"
  [ "$(mval "$T/c3.txt" qrel_outbox_pending_messages 'source="cached"')" = 1 ]
}
wait_for -i 0.2 30 "a scrape that asks the database again" fresh || true
expect_between "ms from the first scrape to the first one not served from the cache" \
  "$(($(now_ms) - c1_sent))" 5000 35000
expect_metric "$T/c3.txt" 1 qrel_outbox_pending_messages 'source="cached"'
expect_between "sample age after min_interval" \
  "$(mval "$T/c3.txt" qrel_sample_age_seconds 'source="cached"')" 0 0.5
psql_do "DELETE FROM empty_outbox"
stop_exporter

# The database stopped: reason connect (a kept connection is lost, a new one is refused).
start_exporter "$T/qrel.yml"
scrape "$T/m3.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 2'
expect_metric "$T/m3.txt" 1 qrel_collector_up 'source="shop"'
stop_postgres "$P"
m4_sent=$(now_ms)
scrape "$T/m4.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 2'
expect_metric "$T/m4.txt" 0 qrel_collector_up 'source="shop"'
expect_metric "$T/m4.txt" 1 qrel_collector_errors_total 'source="shop"' 'reason="connect"'
# Scrapes until a new connection is tried: none during the 0.5 s back-off (they count nothing),
# the first after it, which counts the second error.
second_try() {
  scrape "$T/m5.txt" -H 'X-Prometheus-Scrape-Timeout-Seconds: 2'
  [ "$(mval "$T/m5.txt" qrel_collector_errors_total 'source="shop"' 'reason="connect"')" != 1 ]
}
wait_for -i 0.1 30 "a scrape past the back-off" second_try || true
expect_between "ms from the failing scrape to the next attempt (back-off 0.5 s)" \
  "$(($(now_ms) - m4_sent))" 500 31000
expect_metric "$T/m5.txt" 2 qrel_collector_errors_total 'source="shop"' 'reason="connect"'
expect_cmd "the log says the server refused" grep -q 'source=shop kind=postgres reason=connect.*Connection refused' "$T/exporter.log"
for f in "$T"/m*.txt "$T/exporter.log" "$T"/*.out "$T"/*.err; do
  if grep -qF -e "$wrong" -e "$secret" -e "$dsn_secret" "$f"; then not_ok "a password appears in $(basename "$f")"; fi
done

finish
