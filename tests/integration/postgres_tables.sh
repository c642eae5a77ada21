#!/usr/bin/env bash
# The dedup_tables and claim_tables sections of kind: postgres against a real PostgreSQL: a claim
# table with 1000 handler times spread evenly over known values (so percentile_cont's exact
# answers are computable here) plus finished claims outside the window that must not count;
# stale and in-flight claims of known ages; the lease margin from the oldest hold, and below 1
# where the handler p99 exceeds the lease (the worked incident: a 30 s lease, a provider at
# 31-40 s); `timestamp` columns; dedup tables with a duplicates column (measured and declared
# retention), without one, empty, and an attempts log in another schema; a missing column and a
# column of the wrong type at scrape time (up 0, reason query, the message names source, table
# and column) and in --config.check; promtool on the output.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_postgres P

psql_do <<'SQL'
-- Claims: 1000 finished 60 s ago, handler times 0.01 s, 0.02 s, ..., 10.00 s.
CREATE TABLE claims (order_id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL,
                     sent_at timestamptz);
CREATE INDEX claims_done ON claims (sent_at, claimed_at);
INSERT INTO claims
SELECT g, now() - interval '60 s' - g * interval '10 ms', now() - interval '60 s'
FROM generate_series(1, 1000) g;
-- Finished long ago, and slow: outside the 5 min window, so in no count and no quantile.
INSERT INTO claims
SELECT 10000 + g, now() - interval '2 h', now() - interval '1 h' FROM generate_series(1, 50) g;
-- Open claims: three stale (older than the 2 min in-flight window), two in flight (5 s, 45 s).
INSERT INTO claims (order_id, claimed_at) VALUES
  (20001, now() - interval '10 min'), (20002, now() - interval '20 min'),
  (20003, now() - interval '1 day'), (20004, now() - interval '5 s'),
  (20005, now() - interval '45 s');

-- The worked incident: the provider answers in 31-40 s, the lease is 30 s. Nothing in flight.
CREATE TABLE slow_claims (id int PRIMARY KEY, claimed_at timestamptz, done_at timestamptz);
INSERT INTO slow_claims
SELECT g, now() - interval '100 s' - (31 + (g - 1) * 0.1) * interval '1 s', now() - interval '100 s'
FROM generate_series(1, 91) g;   -- 31.0, 31.1, ..., 40.0 s

-- timestamp without time zone: durations 1, 2, 3, 4 s.
CREATE TABLE legacy_claims (id int, claimed timestamp, done timestamp);
INSERT INTO legacy_claims
SELECT g, now()::timestamp - interval '30 s' - g * interval '1 s', now()::timestamp - interval '30 s'
FROM generate_series(1, 4) g;

-- A dedup table with a duplicates column: 10 handled within 5 min, 5 older (the oldest 2 days).
CREATE TABLE handled (message_id text PRIMARY KEY, handled_at timestamptz NOT NULL,
                      duplicate_count int NOT NULL DEFAULT 0, note text);
CREATE INDEX handled_at ON handled (handled_at);
CREATE INDEX handled_dups ON handled (duplicate_count) WHERE duplicate_count > 0;
INSERT INTO handled (message_id, handled_at, duplicate_count)
SELECT 'new-' || g, now() - g * interval '10 s', CASE WHEN g <= 3 THEN g ELSE 0 END
FROM generate_series(1, 10) g;                                       -- duplicates 1 + 2 + 3
INSERT INTO handled (message_id, handled_at, duplicate_count) VALUES
  ('old-1', now() - interval '1 h', 4), ('old-2', now() - interval '3 h', 0),
  ('old-3', now() - interval '1 day', 0), ('old-4', now() - interval '36 h', 0),
  ('old-5', now() - interval '2 days', 1);                            -- + 4 + 1 = 11
-- Duplicates as the app counts them: ON CONFLICT ... DO UPDATE SET dup = dup + 1.
INSERT INTO handled (message_id, handled_at) VALUES ('new-10', now()), ('new-10', now()) ON CONFLICT DO NOTHING;
INSERT INTO handled (message_id, handled_at) VALUES ('new-10', now())
  ON CONFLICT (message_id) DO UPDATE SET duplicate_count = handled.duplicate_count + 1;  -- 12

-- Unique ids only (ON CONFLICT DO NOTHING keeps no count), and an empty table.
CREATE TABLE seen (id uuid PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO seen SELECT gen_random_uuid(), now() - g * interval '1 min' FROM generate_series(1, 20) g;
CREATE TABLE nothing_yet (id text, at timestamptz);

-- One row per delivery, in another schema: m1 three times, m2 once, m3 twice within 5 min;
-- m4 twice an hour ago. Duplicates: 2 + 1 + 1 = 4; handled within the window: 3 ids.
CREATE SCHEMA audit;
CREATE TABLE audit.deliveries (msg text, received_at timestamptz NOT NULL);
CREATE INDEX deliveries_msg ON audit.deliveries (msg);
INSERT INTO audit.deliveries VALUES
  ('m1', now() - interval '100 s'), ('m1', now() - interval '70 s'), ('m1', now() - interval '40 s'),
  ('m2', now() - interval '20 s'), ('m3', now() - interval '90 s'), ('m3', now() - interval '60 s'),
  ('m4', now() - interval '61 min'), ('m4', now() - interval '60 min');
SQL

cat > "$T/qrel.yml" <<YML
global:
  timeout: 10s
sources:
$(pg_source shop "$P")
    claim_tables:
      - table: claims
        id_column: order_id
        claimed_at_column: claimed_at
        done_at_column: sent_at
        in_flight_window: 2m
        lease_timeout: 60s
        max_deliveries: 3
      - table: claims
        name: claims-short-window     # nothing finished in the last 10 s; no lease declared
        id_column: order_id
        claimed_at_column: claimed_at
        done_at_column: sent_at
        in_flight_window: 2m
        window: 10s
      - table: slow_claims
        id_column: id
        claimed_at_column: claimed_at
        done_at_column: done_at
        in_flight_window: 2m
        lease_timeout: 30s
        max_deliveries: 3
      - {table: legacy_claims, id_column: id, claimed_at_column: claimed, done_at_column: done,
         in_flight_window: 1m}
    dedup_tables:
      - table: handled
        id_column: message_id
        handled_at_column: handled_at
        duplicates_column: duplicate_count
      - table: handled
        name: handled-declared
        id_column: message_id
        handled_at_column: handled_at
        duplicates_column: duplicate_count
        retention: 7d
        window: 1m
      - {table: seen, id_column: id, handled_at_column: at}
      - {table: nothing_yet, id_column: id, handled_at_column: at}
      - table: audit.deliveries
        name: deliveries
        mode: attempts_log
        id_column: msg
        handled_at_column: received_at
YML

"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="shop"' 'kind="postgres"'
# qrel_handler_duration_seconds is typed summary (quantiles only), which promtool accepts.
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"

# claims LABELS IN_FLIGHT STALE DONE: the claims of LABELS in each state.
claims() {
  expect_metric "$T/m.txt" "$2" qrel_claims "$1" 'state="in_flight"'
  expect_metric "$T/m.txt" "$3" qrel_claims "$1" 'state="stale"'
  expect_metric "$T/m.txt" "$4" qrel_claims "$1" 'state="done"'
}
# durations LABELS PCT QUANTILE=WANT...: each handler-duration QUANTILE of LABELS is within PCT %
# of WANT.
durations() {
  local labels=$1 pct=$2 qw
  shift 2
  for qw in "$@"; do
    within "qrel_handler_duration_seconds{$labels,quantile=${qw%%=*}}" \
      "$(mval "$T/m.txt" qrel_handler_duration_seconds "$labels" "quantile=\"${qw%%=*}\"")" "${qw#*=}" "$pct"
  done
}

# ---- claims ----
c='kind="claim_table",queue="claims"'
claims "$c" 2 3 1000
expect_metric "$T/m.txt" 120 qrel_claim_in_flight_window_seconds "$c"
# percentile_cont over 0.01 k s, k = 1..1000: the value at position 1 + q * 999, interpolated.
durations "$c" 5 0.5=5.005 0.9=9.001 0.99=9.9001 1=10
durations "$c" 0.01 0.99=9.9001 # in fact exact to the microsecond: the timestamps are
expect_between "oldest hold (in flight since -45 s; stale ones do not count)" \
  "$(mval "$T/m.txt" qrel_lease_oldest_age_seconds "$c")" 45 55
expect_metric "$T/m.txt" 60 qrel_lease_timeout_seconds "$c"
expect_metric "$T/m.txt" 3 qrel_max_deliveries "$c"
expect_metric "$T/m.txt" 180 qrel_retry_horizon_seconds "$c"
# 60 s ÷ max(p99 9.9 s, hold 45-55 s): the hold is the worse
expect_between "claims margin (lease ÷ oldest hold)" \
  "$(mval "$T/m.txt" qrel_lease_margin_ratio "$c")" 1.09 1.334

s='queue="claims-short-window"'
claims "$s" 2 3 0
expect_absent "$T/m.txt" qrel_handler_duration_seconds "$s"
expect_absent "$T/m.txt" qrel_lease_timeout_seconds "$s"
expect_absent "$T/m.txt" qrel_lease_margin_ratio "$s"
expect_absent "$T/m.txt" qrel_max_deliveries "$s"
expect_absent "$T/m.txt" qrel_retry_horizon_seconds "$s"

w='queue="slow_claims"'
claims "$w" 0 0 91
expect_metric "$T/m.txt" 0 qrel_lease_oldest_age_seconds "$w"
durations "$w" 5 0.5=35.5 0.99=39.91 1=40
# 30 s ÷ 39.91 s: below 1, leases expire under running handlers
within "slow margin (lease ÷ p99)" "$(mval "$T/m.txt" qrel_lease_margin_ratio "$w")" 0.75169 1
expect_between "slow margin is below 1" "$(mval "$T/m.txt" qrel_lease_margin_ratio "$w")" 0 0.999
expect_metric "$T/m.txt" 90 qrel_retry_horizon_seconds "$w"

l='queue="legacy_claims"'
expect_metric "$T/m.txt" 4 qrel_claims "$l" 'state="done"'
durations "$l" 1 0.5=2.5 1=4 # timestamp columns

# ---- dedup tables ----
h='kind="dedup_table",queue="handled"'
expect_metric "$T/m.txt" 10 qrel_dedup_handled_messages "$h"
expect_metric "$T/m.txt" 12 qrel_dedup_duplicates_total "$h"
expect_between "measured retention (oldest row 2 days old)" \
  "$(mval "$T/m.txt" qrel_dedup_window_seconds "$h")" 172800 172860
d='queue="handled-declared"'
expect_metric "$T/m.txt" 5 qrel_dedup_handled_messages "$d" # window 1m: ages 10..50 s
expect_metric "$T/m.txt" 12 qrel_dedup_duplicates_total "$d"
expect_metric "$T/m.txt" 604800 qrel_dedup_window_seconds "$d"
expect_metric "$T/m.txt" 4 qrel_dedup_handled_messages 'queue="seen"' # 1..4 min old
expect_absent "$T/m.txt" qrel_dedup_duplicates_total 'queue="seen"'
expect_between "seen: measured retention" "$(mval "$T/m.txt" qrel_dedup_window_seconds 'queue="seen"')" 1200 1260
expect_metric "$T/m.txt" 0 qrel_dedup_handled_messages 'queue="nothing_yet"'
expect_absent "$T/m.txt" qrel_dedup_window_seconds 'queue="nothing_yet"'
expect_absent "$T/m.txt" qrel_dedup_duplicates_total 'queue="nothing_yet"'
a='queue="deliveries"'
expect_metric "$T/m.txt" 3 qrel_dedup_handled_messages "$a"
expect_metric "$T/m.txt" 4 qrel_dedup_duplicates_total "$a"
expect_between "attempts log: measured retention" "$(mval "$T/m.txt" qrel_dedup_window_seconds "$a")" 3660 3720
expect_cmd "promtool: the duplicates are a counter" grep -q '^# TYPE qrel_dedup_duplicates_total counter' "$T/m.txt"

# The counter grows as the app records duplicates.
psql_do "UPDATE handled SET duplicate_count = duplicate_count + 5 WHERE message_id = 'new-1'"
psql_do "INSERT INTO audit.deliveries VALUES ('m2', now())"
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m2.txt"
expect_metric "$T/m2.txt" 17 qrel_dedup_duplicates_total "$h"
expect_metric "$T/m2.txt" 5 qrel_dedup_duplicates_total "$a"
expect_metric "$T/m2.txt" 3 qrel_dedup_handled_messages "$a"

# ---- a column renamed since start-up, and a column of the wrong type ----
psql_do "ALTER TABLE claims RENAME COLUMN sent_at TO done_at"
expect_scrape_error "with a missing column" "$T/qrel.yml" "$T/missing" shop query \
  "the error names source, table and column" \
  "postgres \"shop\" 127.0.0.1:$P/postgres: claim_table \"claims\": column \"sent_at\" does not exist in table \"claims\""
expect_metric "$T/missing.txt" 0 qrel_collector_up 'source="shop"'
expect_absent "$T/missing.txt" qrel_claims
expect_absent "$T/missing.txt" qrel_dedup_handled_messages
expect_exit "--config.check exit status with a missing column" 1 "$T/check.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
expect_cmd "--config.check names the column" \
  grep -qF 'claim_table "claims": column "sent_at" does not exist in table "claims"' "$T/check.out"
psql_do "ALTER TABLE claims RENAME COLUMN done_at TO sent_at"

cat > "$T/types.yml" <<YML
sources:
$(pg_source typed "$P")
    dedup_tables:
      - table: handled
        id_column: message_id
        handled_at_column: handled_at
        duplicates_column: note
    claim_tables:
      - {table: claims, id_column: order_id, claimed_at_column: order_id, done_at_column: sent_at,
         in_flight_window: 2m}
      - {table: no_such_claims, id_column: id, claimed_at_column: c, done_at_column: d,
         in_flight_window: 2m}
YML
expect_exit "--config.check exit status with wrong types" 1 "$T/types.out" "$EXPORTER" --config.file="$T/types.yml" --config.check
expect_cmd "--config.check: the duplicates column must be a number" \
  grep -qF 'dedup_table "handled": column "note" of table "handled" is text, want a number' "$T/types.out"
expect_cmd "--config.check counts the other problems" grep -qF '(and 2 more problems)' "$T/types.out"
expect_scrape_error "with a text duplicates column" "$T/types.yml" "$T/types" typed query \
  "the scrape error names the column and its type" \
  'dedup_table "handled": column "note" of table "handled" is text, want a number'
sed -i '/duplicates_column: note/d' "$T/types.yml"
"$QREL" scrape --config.file="$T/types.yml" > "$T/types2.txt" 2> "$T/types2.err" || true
expect_cmd "a bigint claimed_at column is refused by name" \
  grep -qF 'claim_table "claims": column "order_id" of table "claims" is bigint, want a timestamp' "$T/types2.err"

finish
