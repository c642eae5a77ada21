#!/usr/bin/env bash
# The `queries` section of kind: postgres (kind label sql) against a real PostgreSQL: a grouped
# query with two label columns gives one sample per row and metric with the exact values; a
# counter family keeps its _total; a NULL label becomes "" and a NULL value leaves its sample out;
# the row cap fails with reason limit; a non-numeric value and a missing column fail with reason
# query, naming the query, row and column on `qrel scrape`'s stderr; --config.check finds the
# missing column without running the query; a statement that writes is refused; promtool
# accepts the output.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_postgres P
psql_do <<'SQL' >/dev/null
CREATE TABLE orders (id serial PRIMARY KEY, region text, status text NOT NULL, total_cents bigint);
INSERT INTO orders (region, status, total_cents) VALUES
  ('eu', 'pending', 100), ('eu', 'pending', 250), ('eu', 'shipped', 1000),
  ('us', 'pending', 5), (NULL, 'shipped', 7);
CREATE TABLE refunds (id serial PRIMARY KEY, amount_cents bigint);
INSERT INTO refunds (amount_cents) VALUES (30), (12), (NULL);
CREATE TABLE counter (n int NOT NULL);
INSERT INTO counter VALUES (0);
SQL

cat > "$T/qrel.yml" <<YML
sources:
$(pg_source shop "$P")
    queries:
      - name: orders_by_state
        sql: |
          SELECT region, status, count(*) AS n, sum(total_cents) AS cents,
                 CASE WHEN status = 'shipped' THEN NULL ELSE max(total_cents) END AS biggest
          FROM orders GROUP BY region, status ORDER BY region, status;
        labels: [region, status]
        metrics:
          - {name: shop_orders, type: gauge, help: Orders by region and status., value_column: n}
          - {name: shop_order_cents, type: gauge, help: Sum of the orders in cents., value_column: cents}
          - {name: shop_biggest_pending_order_cents, type: gauge, help: Largest order not yet shipped., value_column: biggest}
      - name: refunds
        sql: SELECT sum(amount_cents) AS total, count(*) AS n FROM refunds
        metrics:
          - {name: shop_refunded_cents_total, type: counter, help: Money refunded in cents., value_column: total}
YML

rc=0
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/m.err" || rc=$?
expect_eq "qrel scrape exit status" "$rc" 0
expect_metric "$T/m.txt" 2 shop_orders 'source="shop"' 'kind="sql"' 'region="eu"' 'status="pending"'
expect_metric "$T/m.txt" 1 shop_orders 'region="eu"' 'status="shipped"'
expect_metric "$T/m.txt" 1 shop_orders 'region="us"' 'status="pending"'
expect_metric "$T/m.txt" 1 shop_orders 'region=""' 'status="shipped"'
expect_metric "$T/m.txt" 350 shop_order_cents 'region="eu"' 'status="pending"'
expect_metric "$T/m.txt" 7 shop_order_cents 'region=""' 'status="shipped"'
expect_metric "$T/m.txt" 250 shop_biggest_pending_order_cents 'region="eu"' 'status="pending"'
expect_absent "$T/m.txt" shop_biggest_pending_order_cents 'status="shipped"'
expect_eq "samples of shop_orders" "$(grep -c '^shop_orders{' "$T/m.txt")" 4
expect_metric "$T/m.txt" 42 shop_refunded_cents_total 'source="shop"' 'kind="sql"'
expect_cmd "counter TYPE line" grep -qx '# TYPE shop_refunded_cents_total counter' "$T/m.txt"
expect_cmd "HELP from the config" grep -qx '# HELP shop_orders Orders by region and status.' "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="shop"' 'kind="postgres"'
# Only SQL families, no queue: no qrel_source_queues 0, which would read as a source watching
# nothing (qrel check's source_watches_nothing).
expect_absent "$T/m.txt" qrel_source_queues 'source="shop"'
expect_cmd "user families after the catalogue" \
  bash -c "[ \"\$(grep -n '^# TYPE' '$T/m.txt' | tail -1 | cut -d' ' -f3)\" = shop_refunded_cents_total ]"
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"

# The same through the exporter, in OpenMetrics: the counter's family drops _total.
start_exporter "$T/qrel.yml"
scrape "$T/om.txt" -H 'Accept: application/openmetrics-text; version=1.0.0'
expect_cmd "OpenMetrics counter family" grep -qx '# TYPE shop_refunded_cents counter' "$T/om.txt"
expect_metric "$T/om.txt" 42 shop_refunded_cents_total 'source="shop"'
stop_exporter

# max_rows: one row too many fails with reason limit and adds none of the query's samples.
sed 's/        labels: \[region, status\]/        labels: [region, status]\n        max_rows: 3/' \
  "$T/qrel.yml" > "$T/cap.yml"
expect_scrape_error "past max_rows" "$T/cap.yml" "$T/cap" shop limit \
  "the error names the query and the cap" \
  'query "orders_by_state": more than 3 rows (max_rows)'
expect_absent "$T/cap.txt" shop_orders

# A value that is not a number: reason query, naming query, row and column.
cat > "$T/text.yml" <<YML
sources:
$(pg_source shop "$P")
    queries:
      - name: statuses
        sql: SELECT status AS v FROM orders ORDER BY id
        metrics: [{name: app_v, type: gauge, help: h, value_column: v}]
YML
expect_scrape_error "with a text value" "$T/text.yml" "$T/text" shop query \
  "the error names query, row and column" \
  'query "statuses": row 1, column "v": want a number, got "pending"'

# A missing column: qrel scrape and --config.check name the query and the column.
sed 's/value_column: cents}/value_column: cents_sum}/' "$T/qrel.yml" > "$T/missing.yml"
expect_scrape_error "with a missing column" "$T/missing.yml" "$T/missing" shop query \
  "qrel scrape names query and column" \
  "postgres \"shop\" 127.0.0.1:$P/postgres: query \"orders_by_state\": column \"cents_sum\" is not in the result (columns: region, status, n, cents, biggest)"
expect_exit "--config.check exit status with a missing column" 1 "$T/check.out" "$EXPORTER" --config.file="$T/missing.yml" --config.check
expect_cmd "--config.check names query and column" \
  grep -qF 'query "orders_by_state": column "cents_sum" is not in the result' "$T/check.out"
expect_exit "--config.check exit status when the columns exist" 0 "$T/check-ok.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check

# A statement that writes is refused: the subquery wrapping, and the read-only session behind it.
cat > "$T/write.yml" <<YML
sources:
$(pg_source shop "$P")
    queries:
      - name: sneaky
        sql: UPDATE counter SET n = n + 1 RETURNING n
        metrics: [{name: app_n, type: gauge, help: h, value_column: n}]
      - name: sneaky_cte
        sql: WITH u AS (UPDATE counter SET n = n + 1 RETURNING n) SELECT n FROM u
        metrics: [{name: app_m, type: gauge, help: h, value_column: n}]
YML
expect_scrape_error "with a writing statement" "$T/write.yml" "$T/write" shop query
sed -i '/name: sneaky$/,/app_n/d' "$T/write.yml"
"$QREL" scrape --config.file="$T/write.yml" > /dev/null 2>&1 || true
expect_eq "counter after the scrapes" "$(psql_val 'SELECT n FROM counter')" 0

finish
