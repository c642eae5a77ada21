#!/usr/bin/env bash
# Windows of kind: postgres against tables whose newest rows lie ahead of the database's now()
# (writers with fast clocks; issue 14): a claim table with 500 claims done within the window and
# 900 "done" up to 8.5 min ahead (slow ones, so that counting them would move every quantile),
# open claims in flight, stale and ahead; a dedup table with 3x as many rows ahead as in the
# window, and an attempts log with 5x (more than the count's cap of 1,000); an outbox with pending
# rows ahead. Every figure must equal a reference query over the rows in [now() - window, now()],
# and the rows ahead must be exported on their own as qrel_future_stamped_rows, exactly up to
# 1,000. The unbounded queries are run too, to show that the data would give other figures if the
# bound were missing.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_postgres P

# Rows ahead start 60 s after now(), rows in the window end 60 s before it, so that the seconds
# between this script's statements move no row across a bound.
psql_do <<'SQL'
CREATE TABLE claims (id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL, done_at timestamptz);
CREATE INDEX claims_done ON claims (done_at, claimed_at);
INSERT INTO claims                                -- done within the window: 7 ms .. 3.5 s
SELECT g, now() - interval '60 s' - (g % 100) * interval '1 s' - g * interval '7 ms',
       now() - interval '60 s' - (g % 100) * interval '1 s'
FROM generate_series(1, 500) g;
INSERT INTO claims                                -- "done" ahead of now(): 100 s each
SELECT 10000 + g, now() + interval '60 s' + g * interval '0.5 s' - interval '100 s',
       now() + interval '60 s' + g * interval '0.5 s'
FROM generate_series(1, 900) g;
INSERT INTO claims SELECT 20000 + g, now() - interval '2 h', now() - interval '1 h'
FROM generate_series(1, 20) g;                    -- done before the window
INSERT INTO claims (id, claimed_at) VALUES        -- open: 3 in flight, 4 ahead, 2 stale
  (30001, now() - interval '10 s'), (30002, now() - interval '20 s'), (30003, now() - interval '30 s'),
  (30004, now() + interval '5 min'), (30005, now() + interval '6 min'),
  (30006, now() + interval '7 min'), (30007, now() + interval '8 min'),
  (30008, now() - interval '1 h'), (30009, now() - interval '1 day');

CREATE TABLE handled (id text PRIMARY KEY, handled_at timestamptz NOT NULL, dups int NOT NULL);
CREATE INDEX handled_at ON handled (handled_at);
INSERT INTO handled SELECT 'w' || g, now() - interval '60 s' - g * interval '0.7 s', g % 3
FROM generate_series(1, 300) g;
INSERT INTO handled SELECT 'f' || g, now() + interval '60 s' + g * interval '1 s', 1
FROM generate_series(1, 900) g;
INSERT INTO handled SELECT 'o' || g, now() - interval '1 day' - g * interval '1 min', 0
FROM generate_series(1, 50) g;

-- One row per delivery: 300 deliveries of 100 ids within the window, 1,500 of 600 ids ahead.
CREATE TABLE deliveries (msg text NOT NULL, received_at timestamptz NOT NULL);
CREATE INDEX deliveries_at ON deliveries (received_at);
INSERT INTO deliveries SELECT 'm' || (g % 100), now() - interval '60 s' - g * interval '0.7 s'
FROM generate_series(1, 300) g;
INSERT INTO deliveries SELECT 'f' || (g % 600), now() + interval '60 s' + g * interval '1 s'
FROM generate_series(1, 1500) g;

CREATE TABLE outbox (id serial PRIMARY KEY, created_at timestamptz NOT NULL,
                     published_at timestamptz);
INSERT INTO outbox (created_at) SELECT now() - g * interval '1 min' FROM generate_series(1, 10) g;
INSERT INTO outbox (created_at) SELECT now() + interval '10 min' FROM generate_series(1, 3) g;
INSERT INTO outbox (created_at, published_at) SELECT now() - interval '1 h', now()
FROM generate_series(1, 5) g;
SQL

cat > "$T/qrel.yml" <<YML
global:
  timeout: 10s
sources:
  - {name: skew, kind: postgres, host: 127.0.0.1, port: $P, user: postgres, dbname: postgres,
     claim_tables: [{table: claims, id_column: id, claimed_at_column: claimed_at,
                     done_at_column: done_at, in_flight_window: 2m, lease_timeout: 60s}],
     dedup_tables: [{table: handled, id_column: id, handled_at_column: handled_at,
                     duplicates_column: dups},
                    {table: deliveries, mode: attempts_log, id_column: msg,
                     handled_at_column: received_at}],
     outboxes: [{table: outbox, created_at_column: created_at, published_at_column: published_at}]}
YML

"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="skew"' 'kind="postgres"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"
expect_cmd "qrel_future_stamped_rows has HELP and TYPE gauge" \
  grep -q '^# TYPE qrel_future_stamped_rows gauge$' "$T/m.txt"

# ---- claims: each figure against the reference over [now() - window, now()] ----
c='kind="claim_table",queue="claims"'
ref() { psql_val "$1"; }
open_sql="FROM claims WHERE done_at IS NULL"
expect_metric "$T/m.txt" "$(ref "SELECT count(*) $open_sql AND claimed_at BETWEEN now() - interval '2 min' AND now()")" \
  qrel_claims "$c" 'state="in_flight"'
expect_metric "$T/m.txt" "$(ref "SELECT count(*) $open_sql AND claimed_at < now() - interval '2 min'")" \
  qrel_claims "$c" 'state="stale"'
done_sql="FROM claims WHERE done_at BETWEEN now() - interval '5 min' AND now()"
expect_metric "$T/m.txt" "$(ref "SELECT count(*) $done_sql")" qrel_claims "$c" 'state="done"'
expect_metric "$T/m.txt" 500 qrel_claims "$c" 'state="done"'
expect_metric "$T/m.txt" 904 qrel_future_stamped_rows "$c"
expect_metric "$T/m.txt" "$(ref "SELECT (SELECT count(*) FROM claims WHERE done_at > now()) + (SELECT count(*) $open_sql AND claimed_at > now())")" \
  qrel_future_stamped_rows "$c"
for q in 0.5 0.9 0.99 1; do
  want=$(ref "SELECT percentile_cont($q) WITHIN GROUP (ORDER BY extract(epoch FROM done_at - claimed_at)) $done_sql")
  within "claims quantile $q = the reference's $want" \
    "$(mval "$T/m.txt" qrel_handler_duration_seconds "$c" "quantile=\"$q\"")" "$want" 0.0001
done
# Without the bound, the rows ahead (100 s each) would be 9/14 of the set: the p50 would be 100 s.
unbounded=$(ref "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM done_at - claimed_at)) FROM claims WHERE done_at >= now() - interval '5 min'")
expect_eq "the unbounded p50 (what the rows ahead would make of it)" "$unbounded" 100
expect_between "oldest hold: the in-flight claim of 30 s ago, not the one ahead" \
  "$(mval "$T/m.txt" qrel_lease_oldest_age_seconds "$c")" 30 40

# ---- dedup tables ----
h='kind="dedup_table",queue="handled"'
expect_metric "$T/m.txt" \
  "$(ref "SELECT count(*) FROM handled WHERE handled_at BETWEEN now() - interval '5 min' AND now()")" \
  qrel_dedup_handled_messages "$h"
expect_metric "$T/m.txt" 300 qrel_dedup_handled_messages "$h"
expect_eq "the unbounded count (what the rows ahead would make of it)" \
  "$(ref "SELECT count(*) FROM handled WHERE handled_at >= now() - interval '5 min'")" 1200
expect_metric "$T/m.txt" 900 qrel_future_stamped_rows "$h"
# the counter and the retention read the whole table, whatever the clocks
expect_metric "$T/m.txt" "$(ref "SELECT sum(dups) FROM handled")" qrel_dedup_duplicates_total "$h"
expect_between "retention: the oldest row, a day and 50 min old" \
  "$(mval "$T/m.txt" qrel_dedup_window_seconds "$h")" 89400 89500

d='kind="dedup_table",queue="deliveries"'
expect_metric "$T/m.txt" \
  "$(ref "SELECT count(DISTINCT msg) FROM deliveries WHERE received_at BETWEEN now() - interval '5 min' AND now()")" \
  qrel_dedup_handled_messages "$d"
expect_metric "$T/m.txt" 100 qrel_dedup_handled_messages "$d"
expect_eq "rows ahead in the attempts log" "$(ref "SELECT count(*) FROM deliveries WHERE received_at > now()")" 1500
expect_metric "$T/m.txt" 1000 qrel_future_stamped_rows "$d"   # the cap

# ---- outbox: no window, but the pending rows ahead are counted ----
o='kind="outbox",queue="outbox"'
expect_metric "$T/m.txt" 13 qrel_outbox_pending_messages "$o"
expect_metric "$T/m.txt" 3 qrel_future_stamped_rows "$o"
expect_between "outbox oldest pending: 10 min" \
  "$(mval "$T/m.txt" qrel_outbox_oldest_pending_age_seconds "$o")" 600 620

finish
