#!/usr/bin/env bash
# The dead_letters join between a redis_stream source and a postgres source, against a real
# redis-server and a real PostgreSQL: dead-letter entries whose id the claim table records as
# done, not done or not at all, entries without the id field or with an id the column cannot hold
# give exact counts of qrel_dead_letter_classified_messages{work}; ids spelt differently from the
# column's text form ("0003", an uppercase or braced uuid) are found; per id column type (numeric,
# bigint, uuid, text, citext off the search_path, varchar) ids are compared by PostgreSQL in the
# column's type ("2.0", " 6", "8e0" are numeric 2 and 6 and 8, "ORDER-A" the citext 'Order-A')
# in /metrics and in qrel dlq inspect alike, an id the type cannot hold is unknown, every lookup
# uses the primary key's index (auto_explain), a replay moves only the not-done ones, and a
# float8 id column fails --config.check and the join naming its type; a table without a done
# column counts a row as done; max_entries caps what is read and the rest is unknown; the join
# uses the postgres source's own connection, kept between scrapes; a missing table fails
# --config.check and the join (reason query) but not the sources; PostgreSQL stopped leaves
# Redis' series served while the classification is absent and counted (reason connect), and back
# up classifies again; the old dead_letter_classify block is refused with the new form filled
# in; a Kafka dead-letter topic (kafka_mock) classifies by a JSON key or a header without moving
# any offset; the password of the DSN appears in no output, page or log.
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

# One work table per id type the docs allow, each with done rows, an open one and 20000 more (so
# that only an index makes the lookup cheap), and a dead-letter stream of ids spelt as producers
# spell them. ids_<type>: "<done> | <not_done> | <unknown>" spellings, "-" for an entry without
# the id field. PostgreSQL says which is which: each done spelling equals a done row in the
# column's type, each not-done one a row without sent_at or none, each unknown one is no value of
# the type (it must not fail the lookup of the others).
psql_do <<SQL
-- citext in a schema of its own, off qrel's search_path: its = operator is not found by name.
CREATE SCHEMA ext;
CREATE EXTENSION citext SCHEMA ext;
GRANT USAGE ON SCHEMA ext TO qrel_ro;
-- auto_explain logs the plan of each of qrel's statements: the lookups must use the index.
ALTER ROLE qrel_ro SET session_preload_libraries = 'auto_explain';
ALTER ROLE qrel_ro SET auto_explain.log_min_duration = 0;
CREATE TABLE ids_numeric (id numeric(12,2) PRIMARY KEY, sent_at timestamptz);
INSERT INTO ids_numeric VALUES (2, now()), (4, now()), (6, now()), (8, now()), (10, NULL);
CREATE TABLE ids_bigint (id bigint PRIMARY KEY, sent_at timestamptz);
INSERT INTO ids_bigint VALUES (2, now()), (4, now()), (6, now()), (7, NULL);
CREATE TABLE ids_uuid (id uuid PRIMARY KEY, sent_at timestamptz);
INSERT INTO ids_uuid VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', now()),
  ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', NULL);
CREATE TABLE ids_text (id text PRIMARY KEY, sent_at timestamptz);
INSERT INTO ids_text VALUES ('ab', now()), ('cd', NULL);
CREATE TABLE ids_citext (id ext.citext PRIMARY KEY, sent_at timestamptz);
INSERT INTO ids_citext VALUES ('Order-A', now()), ('order-b', NULL);
CREATE TABLE ids_varchar (id varchar(8) PRIMARY KEY, sent_at timestamptz);
INSERT INTO ids_varchar VALUES ('ab', now()), ('abcdefgh', now()), ('cd', NULL);
INSERT INTO ids_numeric SELECT 1000000 + g, now() FROM generate_series(1, 20000) g;
INSERT INTO ids_bigint SELECT 1000000 + g, now() FROM generate_series(1, 20000) g;
INSERT INTO ids_uuid SELECT md5(g::text)::uuid, now() FROM generate_series(1, 20000) g;
INSERT INTO ids_text SELECT 'f' || g, now() FROM generate_series(1, 20000) g;
INSERT INTO ids_citext SELECT 'f' || g, now() FROM generate_series(1, 20000) g;
INSERT INTO ids_varchar SELECT 'f' || g, now() FROM generate_series(1, 20000) g;
ANALYZE;
-- A type ids cannot be checked for: the join fails naming it (below).
CREATE TABLE ids_float (id float8 PRIMARY KEY);
GRANT SELECT ON ids_numeric, ids_bigint, ids_uuid, ids_text, ids_citext, ids_varchar, ids_float
  TO qrel_ro;
SQL
A0=a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11
declare -A IDS=(
  [numeric]="2.0|02|4.00| 6|8e0 ; 10|1e20 ; abc|1e"
  [bigint]="02|+4| 6  ; 7|8 ; 9223372036854775808|x1"
  [uuid]="${A0^^}|{$A0}|${A0//-/} ; b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12|c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a13 ; a0eebc99-9c0b| $A0"
  [text]="ab ; AB|ab |cd ; "$'\xff'"|-"
  [citext]="order-a|ORDER-A|Order-A ; ORDER-B|order-c ; "$'\xff'"|-"
  [varchar]="ab|abcdefgh ; abcdefghij|AB|cd ; "$'\xff'
)
TYPES=(numeric bigint uuid text citext varchar)
# ids_class TYPE N: the spellings of class N (0 done, 1 not_done, 2 unknown), one a line.
ids_class() {
  local parts
  IFS=';' read -ra parts <<<"${IDS[$1]}"
  parts[$2]=${parts[$2]# }
  parts[$2]=${parts[$2]%% }
  tr '|' '\n' <<<"${parts[$2]}" | LC_ALL=C sed '/^$/d'
}
# truth TYPE ID: what PostgreSQL says of ID in ids_TYPE: done, not_done, or unknown (no value of
# the type: the cast fails).
truth() {
  psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGP" -U postgres -d postgres -v v="$2" \
    2>/dev/null <<SQL || echo unknown
SET search_path = public, ext;
SELECT CASE WHEN bool_or(sent_at IS NOT NULL) THEN 'done' ELSE 'not_done' END
FROM ids_$1 WHERE id = (:'v')::$1;
SQL
}
CLASSES=("done" not_done unknown)
for ty in "${TYPES[@]}"; do
  for c in 0 1 2; do
    while IFS= read -r id; do
      [ "$id" = - ] || expect_eq "ids_$ty: PostgreSQL's word on $(printf %q "$id")" "$(truth "$ty" "$id")" "${CLASSES[$c]}"
    done < <(ids_class "$ty" "$c")
  done
  R XGROUP CREATE "ids_$ty" workers '$' MKSTREAM
  for c in 0 1 2; do
    while IFS= read -r id; do
      if [ "$id" = - ]; then R XADD "ids_$ty.dlq" '*' reason x; else R XADD "ids_$ty.dlq" '*' id "$id"; fi
    done < <(ids_class "$ty" "$c")
  done
done
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
$(redis_source cache "$RP")
    streams:
      - name: orders
        dead_letter_stream: orders.dlq
      - name: jobs
        dead_letter_stream: jobs.dlq
      - name: plain
        dead_letter_stream: plain.dlq
$(for ty in "${TYPES[@]}"; do printf '      - {name: ids_%s, dead_letter_stream: ids_%s.dlq}\n' "$ty" "$ty"; done)
  - name: shop
    kind: postgres
    dsn_file: $T/shop.dsn
    claim_tables:
      - table: confirmation_claims
        id_column: order_id
        claimed_at_column: claimed_at
        done_at_column: sent_at
        in_flight_window: 2m
dead_letters:
  - source: cache
    queue: orders
    id_field: order
    work_table:
      source: shop
      table: confirmation_claims
      id_column: order_id
      done_column: sent_at
  - source: cache
    queue: jobs
    id_field: job
    max_entries: 3
    work_table: {source: shop, table: jobs.handled jobs, id_column: job_id}
$(for ty in "${TYPES[@]}"; do
  printf '  - {source: cache, queue: ids_%s, id_field: id,\n' "$ty"
  printf '     work_table: {source: shop, table: ids_%s, id_column: id, done_column: sent_at}}\n' "$ty"
done)
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

# qrel check's dead-letter finding uses the same classification: 4 of the 8 were done.
rc=0
"$QREL" check --config.file="$T/qrel.yml" > "$T/check.txt" 2>> "$T/scrape.log" || rc=$?
expect_eq "qrel check's exit status (CRITICAL: dead letters)" "$rc" 2
expect_eq "check's finding on orders.dlq says what the work table says" \
  "$(grep -o 'orders.dlq holds 8 messages, the oldest [0-9.]*s old, 4 of them done (replaying those would repeat the work), 2 not done and 2 unknown by the work table: replay only the not-done ones' "$T/check.txt" | wc -l)" 1

# An empty dead-letter stream: all three values, zeros included.
R DEL jobs.dlq
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m2.txt" 2>> "$T/scrape.log"
for w in "done" not_done unknown; do
  expect_metric "$T/m2.txt" 0 qrel_dead_letter_classified_messages "$j" "work=\"$w\""
done

# The join asks through the postgres source's own connection, kept between scrapes.
start_exporter "$T/qrel.yml"
backends() { psql_val "SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity WHERE usename = 'qrel_ro'"; }
scrape "$T/e1.txt"
b1=$(backends)
scrape "$T/e2.txt"
expect_eq "qrel's PostgreSQL backends after 2 scrapes (the source's one, kept)" "$(backends)" "$b1"
expect_eq "number of backends" "$(tr ',' '\n' <<<"$b1" | grep -c .)" 1
expect_metric "$T/e2.txt" 4 qrel_dead_letter_classified_messages "$o" 'work="done"'

# Ids compared in the column's type by the server: per type, /metrics and `qrel dlq inspect` say
# how many of the spellings are done, not done and unknown; the lookups used the column's index;
# a replay moves the not-done ones only.
for ty in "${TYPES[@]}"; do
  q="queue=\"ids_$ty\""
  want=$(for c in 0 1 2; do ids_class "$ty" "$c" | wc -l; done | tr '\n' ' ')
  got=$(for w in "done" not_done unknown; do mval "$T/e2.txt" qrel_dead_letter_classified_messages "$q" "work=\"$w\""; done | tr '\n' ' ')
  expect_eq "ids_$ty: /metrics classified done not_done unknown" "$got" "$want"
  "$QREL" dlq inspect --config.file="$T/qrel.yml" --source=cache --queue="ids_$ty" --format=json \
    > "$T/ids-$ty.json" 2>> "$T/scrape.log"
  expect_eq "ids_$ty: qrel dlq inspect classes done not_done unknown" \
    "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) "' "$T/ids-$ty.json")" "$want"
done
# plans TABLE: "plans with_index" of the lookups on TABLE that auto_explain logged (an index
# scan, index-only or bitmap, on its primary key).
plans() {
  awk -v t="\"$1\"" -v ix="Scan using $1_pkey on $1 " -v bx="Bitmap Index Scan on $1_pkey " '
    /LOG:  duration: .* plan:/ { if (q) { n++; m += i } q = 0; i = 0; r = 1; next }
    /^[0-9]{4}-/ { if (q) { n++; m += i } q = 0; i = 0; r = 0; next }
    r && index($0, "Query Text:") && index($0, t) { q = 1 }
    r && (index($0, ix) || index($0, bx)) { i = 1 }
    END { if (q) { n++; m += i } print n + 0, m + 0 }' "$PG_DIR/server.log"
}
for ty in "${TYPES[@]}"; do
  read -r np ni <<<"$(plans "ids_$ty")"
  expect_cmd "ids_$ty: the lookup was planned ($np plans logged)" test "$np" -ge 1
  expect_eq "ids_$ty: lookups that used the primary key's index" "$ni" "$np"
done
# stream_ids STREAM: the id field of each entry ("-" without it), sorted, bytes as they are; by
# a script, since a replayed entry carries a second field (the replay stamp).
stream_ids() {
  redis-cli -p "$RP" --raw EVAL "local out = {}
    for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
      local v = '-'
      for i = 1, #e[2], 2 do if e[2][i] == 'id' then v = e[2][i + 1]; break end end
      out[#out + 1] = v
    end
    return out" 1 "$1" | LC_ALL=C sort
}
for ty in "${TYPES[@]}"; do
  "$QREL" dlq replay --config.file="$T/qrel.yml" --source=cache --queue="ids_$ty" --yes \
    > "$T/ids-replay-$ty.txt" 2>> "$T/scrape.log"
  expect_eq "ids_$ty: the replay moved the not-done spellings only" \
    "$(stream_ids "ids_$ty")" "$(ids_class "$ty" 1 | LC_ALL=C sort)"
  expect_eq "ids_$ty: the done and unknown ones stay dead" \
    "$(stream_ids "ids_$ty.dlq")" "$( (ids_class "$ty" 0; ids_class "$ty" 2) | LC_ALL=C sort)"
done

# PostgreSQL goes away: Redis' series are still served, the classification is absent and
# counted with reason connect, and the log says why.
stop_postgres "$PGP"
sleep 0.6 # past the first back-off
scrape "$T/down.txt"
expect_metric "$T/down.txt" 1 qrel_collector_up 'source="cache"'
expect_metric "$T/down.txt" 0 qrel_collector_up 'source="shop"'
expect_metric "$T/down.txt" 8 qrel_dead_letter_messages "$o"
curl -fsS "http://$ADDR/" -o "$T/landing.html"
expect_absent "$T/down.txt" qrel_dead_letter_classified_messages "$o"
got=$(mval "$T/down.txt" qrel_dead_letter_classify_errors_total 'source="cache"' 'queue="orders"' 'reason="connect"')
if [ -n "$got" ] && [ "$got" -ge 1 ]; then ok "classify_errors_total{reason=connect} = $got"; else not_ok "classify_errors_total{reason=connect}: got '$got'"; fi
expect_cmd "the exporter's log says why the classification failed" \
  grep -qE 'msg="dead-letter classification failed" source=cache queue=orders reason=connect' "$T/exporter.log"
rc=0
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/down-cli.txt" 2> "$T/down-cli.log" || rc=$?
expect_eq "qrel scrape exit status with PostgreSQL down (source shop failed)" "$rc" 1
sed 's/^/     /' "$T/down-cli.log"
expect_cmd "qrel scrape logs the join's failure: work_table source ... connect" \
  grep -qE 'queue=orders reason=connect err="work_table source \\"shop\\": postgres \\"shop\\" 127\.0\.0\.1:[0-9]+/postgres: connect: ' "$T/down-cli.log"
expect_metric "$T/down-cli.txt" 8 qrel_dead_letter_messages "$o"

# And back: the next scrapes reconnect.
as_postgres "$PGBIN/pg_ctl" -D "$T/pg-$PGP/data" -l "$T/pg-$PGP/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $PGP -k $T/pg-$PGP -c fsync=off" start >/dev/null
up_again() {
  scrape "$T/up.txt"
  [ -n "$(mval "$T/up.txt" qrel_dead_letter_classified_messages "$o" 'work="not_done"')" ]
}
expect_cmd "classified again once PostgreSQL is back (within 10 s)" \
  wait_for -i 0.25 10 "the classification of source cache" up_again
expect_metric "$T/up.txt" 2 qrel_dead_letter_classified_messages "$o" 'work="not_done"'
stop_exporter

# A table that does not exist: --config.check fails naming it; in a scrape the sources stay up,
# that join fails with reason query and the other join still classifies.
sed 's/      table: confirmation_claims$/      table: confirmation_claimz/' "$T/qrel.yml" > "$T/bad.yml"
expect_eq "only the work table is renamed" "$(grep -c confirmation_claimz "$T/bad.yml")" 1
rc_check=0 rc_bad=0
"$EXPORTER" --config.file="$T/bad.yml" --config.check > "$T/check.out" 2>&1 || rc_check=$?
"$QREL" scrape --config.file="$T/bad.yml" > "$T/bad.txt" 2> "$T/bad.log" || rc_bad=$?
expect_eq "--config.check exit status for a missing table" "$rc_check" 1
sed 's/^/     /' "$T/check.out"
expect_cmd "--config.check names the table" grep -qE 'dead_letters: queue "orders" of source "cache": work_table source "shop": postgres "shop" 127\.0\.0\.1:[0-9]+/postgres: work_table "confirmation_claimz": table "confirmation_claimz" does not exist$' "$T/check.out"
expect_eq "qrel scrape exit status for a missing work table (no source failed)" "$rc_bad" 0
expect_metric "$T/bad.txt" 1 qrel_collector_up 'source="cache"'
expect_metric "$T/bad.txt" 1 qrel_dead_letter_classify_errors_total 'source="cache"' 'queue="orders"' 'reason="query"'
expect_absent "$T/bad.txt" qrel_dead_letter_classified_messages "$o"
# (jobs.dlq was emptied above: classified, all three 0)
expect_metric "$T/bad.txt" 0 qrel_dead_letter_classified_messages "$j" 'work="done"'

# An id column of a type qrel cannot check ids for (float8: "1e0" and "1.0" are 1, text forms
# differ): --config.check names the type, and a scrape counts the join's failure (reason query)
# rather than compare text forms.
sed 's/table: ids_varchar, id_column: id, done_column: sent_at/table: ids_float, id_column: id/' \
  "$T/qrel.yml" > "$T/float.yml"
expect_eq "only the varchar entry now names ids_float" "$(grep -c ids_float "$T/float.yml")" 1
rc_float=0
"$EXPORTER" --config.file="$T/float.yml" --config.check > "$T/float.out" 2>&1 || rc_float=$?
expect_eq "--config.check exit status for a float8 id column" "$rc_float" 1
sed 's/^/     /' "$T/float.out"
expect_cmd "--config.check names the column's type and the ones it wants" grep -qF \
  'work_table "ids_float": column "id" is double precision: want an id column of type smallint, integer, bigint, numeric, uuid, text, varchar, char, name or citext (or a domain over one)' "$T/float.out"
"$QREL" scrape --config.file="$T/float.yml" > "$T/float.txt" 2> "$T/float.log"
expect_metric "$T/float.txt" 1 qrel_dead_letter_classify_errors_total 'queue="ids_varchar"' 'reason="query"'
expect_absent "$T/float.txt" qrel_dead_letter_classified_messages 'queue="ids_varchar"'
expect_metric "$T/float.txt" 3 qrel_dead_letter_classified_messages 'queue="ids_citext"' 'work="done"'

# The block of earlier releases: refused at its position, with the new form filled in.
cat > "$T/old.yml" <<YML
sources:
$(redis_source cache "$RP")
    streams:
      - name: orders
        dead_letter_stream: orders.dlq
        dead_letter_classify:
          dsn_file: $T/shop.dsn
          table: confirmation_claims
          id_column: order_id
          done_column: sent_at
          id_field: order
YML
rc_old=0
"$EXPORTER" --config.file="$T/old.yml" --config.check > "$T/old.out" 2>&1 || rc_old=$?
expect_eq "--config.check exit status for dead_letter_classify" "$rc_old" 1
sed 's/^/     /' "$T/old.out"
expect_cmd "the old block is refused at its position with the new form filled in" grep -qF \
  "old.yml:9:11: dead_letter_classify: moved to the top level, reading the table through a postgres source of this file: dead_letters: [{source: cache, queue: orders, id_field: order, work_table: {source: <postgres source>, table: confirmation_claims, id_column: order_id, done_column: sent_at}}]" "$T/old.out"

# Kafka: a dead-letter topic read at offsets by a consumer that never joins a group nor commits,
# ids from a JSON key of the record's value (with dots) or from a header. kafka_mock is librdkafka's
# mock cluster (tests/peers/kafka_mock.c). orders.dlq: done 1, "0002" and 3; not done 4 (open
# claim) and 5 (no claim); unknown: a value that is not JSON and one without the key. payments.dlq
# by header "order-id", read 3 at most: done 1, unknown the record without the header and the one
# beyond the cap, not done 4.
MOCK=$QREL_BUILD_DIR/tests/kafka_mock
[ -x "$MOCK" ] || { echo "kafka_mock not built (QREL_WITH_KAFKA=OFF?)" >&2; exit 1; }
kp1=$(free_port); kp2=$(free_port)
"$MOCK" -p "$kp1,$kp2" -t orders:1 -t orders.dlq:2 -t payments:1 -t payments.dlq:1 \
  -r 'orders.dlq:0::{"order": {"id": 1}, "reason": "max_deliveries"}' \
  -r 'orders.dlq:0::{"order": {"id": "0002"}}' -r 'orders.dlq:0::{"order": {"id": 4}}' \
  -r 'orders.dlq:0::not json' -r 'orders.dlq:1::{"order": {"id": 5}}' \
  -r 'orders.dlq:1::{"order": {}}' -r 'orders.dlq:1::{"order": {"id": 3}}' \
  -r 'payments.dlq:0:order-id=1:x' -r 'payments.dlq:0::x' -r 'payments.dlq:0:order-id=4:x' \
  -r 'payments.dlq:0:order-id=2:x' -r 'payments:0::{}' -c mailer:orders:0:0 -c mailer:payments:0:0 \
  > "$T/mock.out" 2> "$T/mock.log" &
PIDS+=("$!")
for _ in $(seq 1 200); do grep -q '^BOOTSTRAP=' "$T/mock.out" && break; sleep 0.05; done
KBOOT=$(sed -n 's/^BOOTSTRAP=//p' "$T/mock.out")
expect_cmd "kafka_mock started" test -n "$KBOOT"
cat > "$T/kafka.yml" <<YML
sources:
  - name: bus
    kind: kafka
    bootstrap_servers: $KBOOT
    groups:
      - name: mailer
        topics: [orders, payments]
        dead_letter_topic: "{topic}.dlq"
  - name: shop
    kind: postgres
    dsn_file: $T/shop.dsn
    claim_tables:
      - {table: confirmation_claims, id_column: order_id, claimed_at_column: claimed_at,
         done_at_column: sent_at, in_flight_window: 2m}
dead_letters:
  - source: bus
    queue: orders
    id_field: order.id
    work_table: {source: shop, table: confirmation_claims, id_column: order_id, done_column: sent_at}
  - source: bus
    queue: payments
    id_field: header:order-id
    max_entries: 3
    work_table: {source: shop, table: confirmation_claims, id_column: order_id, done_column: sent_at}
YML
for n in 1 2; do
  "$QREL" scrape --config.file="$T/kafka.yml" > "$T/k$n.txt" 2> "$T/k$n.log"
  ko='source="bus",kind="kafka",queue="orders",dead_letter_queue="orders.dlq"'
  expect_metric "$T/k$n.txt" 1 qrel_collector_up 'source="bus"'
  expect_metric "$T/k$n.txt" 7 qrel_dead_letter_messages "$ko"
  expect_metric "$T/k$n.txt" 3 qrel_dead_letter_classified_messages "$ko" 'work="done"'
  expect_metric "$T/k$n.txt" 2 qrel_dead_letter_classified_messages "$ko" 'work="not_done"'
  expect_metric "$T/k$n.txt" 2 qrel_dead_letter_classified_messages "$ko" 'work="unknown"'
  kp='queue="payments",dead_letter_queue="payments.dlq"'
  expect_metric "$T/k$n.txt" 1 qrel_dead_letter_classified_messages "$kp" 'work="done"'
  expect_metric "$T/k$n.txt" 1 qrel_dead_letter_classified_messages "$kp" 'work="not_done"'
  expect_metric "$T/k$n.txt" 2 qrel_dead_letter_classified_messages "$kp" 'work="unknown"'
  # Reading moved no offset: the group's lag is what its commit at 0 says, scrape after scrape.
  expect_metric "$T/k$n.txt" 1 qrel_queue_messages 'queue="payments"' 'group="mailer"' 'state="ready"'
done
# A dead-letter topic's id_field that cannot be a JSON key: refused at its position.
sed 's/id_field: order.id/id_field: order..id/' "$T/kafka.yml" > "$T/kbad.yml"
rc_k=0
"$EXPORTER" --config.file="$T/kbad.yml" --config.check > "$T/kbad.out" 2>&1 || rc_k=$?
expect_eq "--config.check exit status for a bad kafka id_field" "$rc_k" 1
expect_cmd "the bad id_field is named at its position" grep -qF \
  'kbad.yml:18:15: id_field: want a JSON key with dots between nested keys (order.id) or header:NAME, got "order..id"' "$T/kbad.out"

for f in "$T"/*.txt "$T"/*.log "$T"/*.out "$T/landing.html"; do
  if grep -q "$secret" "$f"; then not_ok "the DSN's password appears in $(basename "$f")"; fi
done
ok "the DSN's password appears in no output, page or log"

finish
