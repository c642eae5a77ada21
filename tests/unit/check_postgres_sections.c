/* check_postgres_sections.c: unit tests for the dedup_tables and claim_tables sections of a
 * postgres source (collectors/postgres/dedup.c, collectors/postgres/claim.c).
 *
 * The entries and the arithmetic are reached through the sections' headers (claim.h, dedup.h),
 * which declare what these tests call; the objects are the library's. Configuration errors are
 * compared with the exact messages a user reads. The SQL is compared whole, because it is what
 * decides which index the server can use. Querying a server is left to
 * tests/integration/postgres_tables.sh, which runs a real one. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/claim.h"
#include "postgres/dedup.h"
#include "support/section_item.h"
#include "support/check_run.h"

/* ---- dedup_tables: configuration ---- */

START_TEST(test_dedup_defaults)
{
    struct err e;
    struct dedup *d = dedup_configure(item_of("- table: handled_messages\n  id_column: message_id\n"
                                              "  handled_at_column: handled_at\n"),
                                      "shop-db", &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    ck_assert_str_eq(d->t.name, "handled_messages");
    ck_assert_int_eq(d->mode, DEDUP_UNIQUE);
    ck_assert_double_eq(d->window, 300);
    ck_assert_double_eq(d->retention, 0);
    ck_assert_ptr_null(d->t.col[DEDUP_DUPLICATES]);
    ck_assert_str_eq(d->t.what, "dedup_table \"handled_messages\"");
    ck_assert_str_eq(d->window_param, "300.000000 seconds");
    ck_assert_str_eq(
        d->t.sql,
        "SELECT (SELECT count(*) FROM \"handled_messages\" WHERE \"handled_at\" >= now() - "
        "$1::interval AND \"handled_at\" <= (now() + interval '1 second'))::float8, NULL::float8, "
        "(SELECT "
        "date_part('epoch', now() - min(\"handled_at\")) FROM \"handled_messages\"), (SELECT "
        "count(*) FROM (SELECT FROM \"handled_messages\" WHERE \"handled_at\" > (now() + interval "
        "'1 second') LIMIT "
        "1000) AS ahead)::float8");
    tables_free(d);
    tables_free(NULL);
    ck_assert_str_eq(section_of(dedup_configure)->key, "dedup_tables");
    ck_assert_str_eq(section_of(dedup_configure)->kind_label, "dedup_table");
}
END_TEST

START_TEST(test_dedup_duplicates_column)
{
    struct err e;
    struct dedup *d =
        dedup_configure(item_of("- table: app.handled\n  name: mailer\n  id_column: id\n"
                                "  handled_at_column: at\n  duplicates_column: dup\n  window: 90s\n"
                                "  retention: 7d\n"),
                        "shop-db", &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    ck_assert_str_eq(d->t.name, "mailer");
    ck_assert_double_eq(d->window, 90);
    ck_assert_double_eq(d->retention, 7 * 86400);
    ck_assert_str_eq(d->window_param, "90.000000 seconds");
    /* the sum reads only rows with duplicates (a partial index WHERE dup > 0 serves it); a
     * declared retention needs no query */
    ck_assert_str_eq(
        d->t.sql,
        "SELECT (SELECT count(*) FROM \"app\".\"handled\" WHERE \"at\" >= now() - "
        "$1::interval AND \"at\" <= (now() + interval '1 second'))::float8, (SELECT "
        "COALESCE(sum(\"dup\"), 0) FROM "
        "\"app\".\"handled\" WHERE \"dup\" > 0)::float8, NULL::float8, (SELECT count(*) FROM "
        "(SELECT FROM \"app\".\"handled\" WHERE \"at\" > (now() + interval '1 second') LIMIT 1000) "
        "AS ahead)::float8");
    tables_free(d);
}
END_TEST

START_TEST(test_dedup_attempts_log)
{
    struct err e;
    struct dedup *d = dedup_configure(
        item_of("- table: deliveries\n  id_column: msg\n  handled_at_column: received_at\n"
                "  mode: attempts_log\n"),
        "shop-db", &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    ck_assert_int_eq(d->mode, DEDUP_ATTEMPTS_LOG);
    ck_assert_str_eq(
        d->t.sql,
        "SELECT (SELECT count(DISTINCT \"msg\") FROM \"deliveries\" WHERE \"received_at\" >= "
        "now() - $1::interval AND \"received_at\" <= (now() + interval '1 second'))::float8, "
        "(SELECT COALESCE(sum(n "
        "- 1), 0) FROM (SELECT count(*) AS n FROM \"deliveries\" WHERE \"msg\" IS NOT NULL "
        "GROUP BY \"msg\" HAVING count(*) > 1) AS d)::float8, (SELECT date_part('epoch', "
        "now() - min(\"received_at\")) FROM \"deliveries\"), (SELECT count(*) FROM (SELECT "
        "FROM \"deliveries\" WHERE \"received_at\" > (now() + interval '1 second') LIMIT 1000) AS "
        "ahead)::float8");
    tables_free(d);
}
END_TEST

/* Names are quoted whatever they hold: a quote is doubled, case and spaces are kept. */
START_TEST(test_dedup_quoting)
{
    struct err e;
    struct dedup *d = dedup_configure(item_of("- table: 'My Schema.Handled\"; DROP TABLE x; --'\n"
                                              "  id_column: Id\n  handled_at_column: 'at\"'\n"
                                              "  retention: 1h\n"),
                                      "shop-db", &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    ck_assert_str_eq(
        d->t.sql,
        "SELECT (SELECT count(*) FROM \"My Schema\".\"Handled\"\"; DROP TABLE x; --\" WHERE "
        "\"at\"\"\" >= now() - $1::interval AND \"at\"\"\" <= (now() + interval '1 "
        "second'))::float8, NULL::float8, "
        "NULL::float8, (SELECT count(*) FROM (SELECT FROM \"My Schema\".\"Handled\"\"; DROP "
        "TABLE x; --\" WHERE \"at\"\"\" > (now() + interval '1 second') LIMIT 1000) AS "
        "ahead)::float8");
    tables_free(d);
}
END_TEST

static const struct check_case dedup_errors[] = {
    {"- id_column: id\n  handled_at_column: at\n",
     "q.yml:2:3: table: required in each entry of dedup_tables"},
    {"- table: t\n  handled_at_column: at\n",
     "q.yml:2:3: id_column: required in each entry of dedup_tables"},
    {"- table: t\n  id_column: id\n",
     "q.yml:2:3: handled_at_column: required in each entry of dedup_tables"},
    /* a misspelt key is reported before the "required" it causes */
    {"- table: t\n  id_column: id\n  handled_column: at\n",
     "q.yml:4:3: unknown key \"handled_column\" in a dedup_table of source \"shop-db\" (known "
     "keys: duplicates_column, handled_at_column, id_column, mode, name, retention, table, "
     "window)"},
    {"- table: t\n  id_column: id\n  handled_at_column: at\n  windw: 5m\n",
     "q.yml:5:3: unknown key \"windw\" in dedup_table \"t\" of source \"shop-db\" (known keys: "
     "duplicates_column, handled_at_column, id_column, mode, name, retention, table, window)"},
    {"- table: a.b.c\n  id_column: id\n  handled_at_column: at\n",
     "q.yml:2:10: table: want \"table\" or \"schema.table\", got \"a.b.c\""},
    {"- table: .t\n  id_column: id\n  handled_at_column: at\n",
     "q.yml:2:10: table: want \"table\" or \"schema.table\", got \".t\""},
    {"- table: t\n  name: ''\n  id_column: id\n  handled_at_column: at\n",
     "q.yml:3:9: name: want a non-empty string"},
    {"- table: [t]\n  id_column: id\n  handled_at_column: at\n",
     "q.yml:2:10: table: want a string, got a list"},
    {"- table: t\n  id_column: id\n  handled_at_column: at\n  mode: log\n",
     "q.yml:5:9: mode: want unique (one row per id) or attempts_log (one row per delivery), got "
     "\"log\""},
    {"- table: t\n  id_column: id\n  handled_at_column: at\n  mode: attempts_log\n"
     "  duplicates_column: dup\n",
     "q.yml:6:22: duplicates_column: not with mode attempts_log, where every row is a delivery "
     "and duplicates are the rows beyond the first of each id"},
    {"- table: t\n  id_column: id\n  handled_at_column: at\n  window: 0s\n",
     "q.yml:5:11: window: want a duration above 0"},
    {"- table: t\n  id_column: id\n  handled_at_column: at\n  retention: 5\n",
     "q.yml:5:14: retention: want a duration like \"5s\", got \"5\""},
};

START_TEST(test_dedup_errors)
{
    struct err e;
    err_clear(&e);
    void *d = dedup_configure(item_of(dedup_errors[_i].in), "shop-db", &e);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(e.msg, dedup_errors[_i].want);
    ck_assert_int_eq(e.code, ERR_CONFIG);
}
END_TEST

/* ---- dedup_tables: values ---- */

START_TEST(test_dedup_values)
{
    struct dedup_values v;
    struct dedup_row row = {12, 1, 40, 1, 3600.5};
    dedup_values(0, &row, &v); /* measured: now() - the oldest row */
    ck_assert_double_eq(v.handled, 12);
    ck_assert_int_eq(v.has_duplicates, 1);
    ck_assert_double_eq(v.duplicates, 40);
    ck_assert_int_eq(v.has_window, 1);
    ck_assert_double_eq(v.window_seconds, 3600.5);

    dedup_values(86400, &row, &v); /* a declared retention wins */
    ck_assert_double_eq(v.window_seconds, 86400);

    struct dedup_row empty = {0, 0, 0, 0, 0};
    dedup_values(0, &empty, &v); /* empty table: no window to tell, no duplicates recorded */
    ck_assert_int_eq(v.has_window, 0);
    ck_assert_int_eq(v.has_duplicates, 0);
    ck_assert_double_eq(v.handled, 0);

    struct dedup_row future = {1, 0, 0, 1, -2.5}; /* rows stamped ahead of the server clock */
    dedup_values(0, &future, &v);
    ck_assert_int_eq(v.has_window, 1);
    ck_assert_double_eq(v.window_seconds, 0);
}
END_TEST

START_TEST(test_interval_param)
{
    char buf[64];
    pg_interval_param(buf, sizeof buf, 0.25);
    ck_assert_str_eq(buf, "0.250000 seconds");
    pg_interval_param(buf, sizeof buf, 5400);
    ck_assert_str_eq(buf, "5400.000000 seconds");
}
END_TEST

/* ---- claim_tables: configuration ---- */

static const char claim_yaml[] = "- table: confirmation_claims\n"
                                 "  id_column: order_id\n"
                                 "  claimed_at_column: claimed_at\n"
                                 "  done_at_column: sent_at\n"
                                 "  in_flight_window: 2m\n";

START_TEST(test_claim_defaults)
{
    struct err e;
    struct claim *c = claim_configure(item_of(claim_yaml), "shop-db", &e);
    ck_assert_msg(c != NULL, "%s", e.msg);
    ck_assert_str_eq(c->t.name, "confirmation_claims");
    ck_assert_double_eq(c->in_flight_window, 120);
    ck_assert_double_eq(c->window, 300);
    ck_assert_double_eq(c->lease, 0);
    ck_assert_int_eq(c->max_deliveries, 0);
    ck_assert_str_eq(c->in_flight_param, "120.000000 seconds");
    ck_assert_str_eq(c->window_param, "300.000000 seconds");
    ck_assert_str_eq(c->t.what, "claim_table \"confirmation_claims\"");
    /* open claims through done_at IS NULL, finished ones through done_at >= now() - window:
     * both indexable by one index on (done_at, claimed_at); each window ends at now(), and the
     * rows after it are counted apart (the last column) */
    ck_assert_str_eq(
        c->t.sql,
        "SELECT o.in_flight, o.stale, o.oldest_age, f.done, f.q[1], f.q[2], f.q[3], f.q[4], "
        "LEAST(o.ahead + (SELECT count(*) FROM (SELECT FROM \"confirmation_claims\" WHERE "
        "\"sent_at\" > (now() + interval '1 second') LIMIT 1000) AS ahead)::float8, 1000) FROM "
        "(SELECT count(*) "
        "FILTER (WHERE \"claimed_at\" >= now() - $1::interval AND \"claimed_at\" <= "
        "(now() + interval '1 second'))::float8 AS in_flight, count(*) FILTER (WHERE "
        "\"claimed_at\" < now() - "
        "$1::interval)::float8 AS stale, date_part('epoch', now() - min(\"claimed_at\") "
        "FILTER (WHERE \"claimed_at\" >= now() - $1::interval AND \"claimed_at\" <= (now() + "
        "interval '1 second'))) "
        "AS oldest_age, count(*) FILTER (WHERE \"claimed_at\" > (now() + interval '1 "
        "second'))::float8 AS ahead FROM "
        "\"confirmation_claims\" WHERE \"sent_at\" IS NULL) AS o, (SELECT count(*)::float8 "
        "AS done, percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP (ORDER BY "
        "date_part('epoch', \"sent_at\"::timestamptz - \"claimed_at\"::timestamptz)) AS q "
        "FROM \"confirmation_claims\" WHERE \"sent_at\" >= now() - $2::interval AND "
        "\"sent_at\" <= (now() + interval '1 second')) AS f");
    tables_free(c);
    tables_free(NULL);
    ck_assert_str_eq(section_of(claim_configure)->key, "claim_tables");
    ck_assert_str_eq(section_of(claim_configure)->kind_label, "claim_table");
}
END_TEST

START_TEST(test_claim_full)
{
    struct err e;
    struct claim *c = claim_configure(
        item_of("- table: mail.claims\n  name: mailer\n  id_column: id\n"
                "  claimed_at_column: c\n  done_at_column: d\n  in_flight_window: 90s\n"
                "  lease_timeout: 30s\n  max_deliveries: 3\n  window: 15m\n"),
        "shop-db", &e);
    ck_assert_msg(c != NULL, "%s", e.msg);
    ck_assert_str_eq(c->t.name, "mailer");
    ck_assert_double_eq(c->lease, 30);
    ck_assert_int_eq(c->max_deliveries, 3);
    ck_assert_double_eq(c->window, 900);
    ck_assert_ptr_nonnull(strstr(c->t.sql, "FROM \"mail\".\"claims\" WHERE \"d\" IS NULL"));
    ck_assert_ptr_nonnull(strstr(c->t.sql, "FROM \"mail\".\"claims\" WHERE \"d\" >= now() - "
                                           "$2::interval"));
    tables_free(c);
}
END_TEST

static const struct check_case claim_errors[] = {
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n",
     "q.yml:2:3: in_flight_window: required in each entry of claim_tables"},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  in_flight_window: 2m\n",
     "q.yml:2:3: done_at_column: required in each entry of claim_tables"},
    {"- table: t\n  id_column: id\n  done_at_column: d\n  in_flight_window: 2m\n",
     "q.yml:2:3: claimed_at_column: required in each entry of claim_tables"},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_column: d\n"
     "  in_flight_window: 2m\n",
     "q.yml:5:3: unknown key \"done_column\" in a claim_table of source \"shop-db\" (known keys: "
     "claimed_at_column, done_at_column, id_column, in_flight_window, lease_timeout, "
     "max_deliveries, name, table, window)"},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 2m\n  lease: 30s\n",
     "q.yml:7:3: unknown key \"lease\" in claim_table \"t\" of source \"shop-db\" (known keys: "
     "claimed_at_column, done_at_column, id_column, in_flight_window, lease_timeout, "
     "max_deliveries, name, table, window)"},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 0s\n",
     "q.yml:6:21: in_flight_window: want a duration above 0"},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 2 minutes\n",
     "q.yml:6:21: in_flight_window: want a duration like \"5s\", got \"2 minutes\""},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 2m\n  lease_timeout: 0s\n",
     "q.yml:7:18: lease_timeout: want a duration above 0"},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 2m\n  max_deliveries: 0\n",
     "q.yml:7:19: max_deliveries: want an integer from 1 to 1000000, got \"0\""},
    {"- table: t\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 2m\n  window: -5m\n",
     "q.yml:7:11: window: want a duration like \"5s\", got \"-5m\""},
    {"- table: t\n  id_column: id\n  claimed_at_column: at\n  done_at_column: at\n"
     "  in_flight_window: 2m\n",
     "q.yml:5:19: done_at_column: want a column other than claimed_at_column (\"at\")"},
    {"- table: t.\n  id_column: id\n  claimed_at_column: c\n  done_at_column: d\n"
     "  in_flight_window: 2m\n",
     "q.yml:2:10: table: want \"table\" or \"schema.table\", got \"t.\""},
};

START_TEST(test_claim_errors)
{
    struct err e;
    err_clear(&e);
    void *c = claim_configure(item_of(claim_errors[_i].in), "shop-db", &e);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(e.msg, claim_errors[_i].want);
    ck_assert_int_eq(e.code, ERR_CONFIG);
}
END_TEST

/* ---- claim_tables: arithmetic ---- */

START_TEST(test_claim_margin)
{
    double m = -1;
    /* the worked incident: a 30 s lease, the provider at 34 s at the tail */
    ck_assert_int_eq(claim_margin(30, 1, 34, 1, 2, &m), 1);
    ck_assert_double_eq_tol(m, 30.0 / 34.0, 1e-12);
    /* a hold running longer than the p99 is the worse of the two */
    ck_assert_int_eq(claim_margin(30, 1, 0.24, 1, 12, &m), 1);
    ck_assert_double_eq_tol(m, 2.5, 1e-12);
    /* only one of them known */
    ck_assert_int_eq(claim_margin(30, 1, 0.24, 0, 0, &m), 1);
    ck_assert_double_eq_tol(m, 125, 1e-9);
    ck_assert_int_eq(claim_margin(30, 0, 0, 1, 60, &m), 1);
    ck_assert_double_eq_tol(m, 0.5, 1e-12);
    /* under 1 ms counts as 1 ms */
    ck_assert_int_eq(claim_margin(30, 1, 0, 1, 0, &m), 1);
    ck_assert_double_eq_tol(m, 30000, 1e-6);
    ck_assert_int_eq(claim_margin(30, 1, -3, 0, 0, &m), 1);
    ck_assert_double_eq_tol(m, 30000, 1e-6);
    /* no lease declared, or nothing to divide by: no series, *out untouched */
    m = -1;
    ck_assert_int_eq(claim_margin(0, 1, 34, 1, 2, &m), 0);
    ck_assert_int_eq(claim_margin(30, 0, 34, 0, 2, &m), 0);
    ck_assert_double_eq(m, -1);
}
END_TEST

START_TEST(test_claim_values)
{
    struct claim_values v;
    struct claim_row row = {2, 5, 1, 40, 100, 1, {0.5, 0.9, 31.5, 40}};
    claim_values(30, 3, &row, &v);
    ck_assert_double_eq(v.lease_oldest_age, 40);
    ck_assert_int_eq(v.has_margin, 1);
    ck_assert_double_eq_tol(v.margin, 0.75, 1e-12); /* the hold (40 s) beats the p99 (31.5 s) */
    ck_assert_int_eq(v.has_horizon, 1);
    ck_assert_double_eq(v.horizon, 90);

    /* nothing in flight and nothing done: hold 0, no margin even with a lease */
    struct claim_row idle = {0, 7, 0, 0, 0, 0, {0, 0, 0, 0}};
    claim_values(30, 3, &idle, &v);
    ck_assert_double_eq(v.lease_oldest_age, 0);
    ck_assert_int_eq(v.has_margin, 0);
    ck_assert_int_eq(v.has_horizon, 1);

    /* no lease: no margin, no horizon; max_deliveries alone is not a horizon */
    claim_values(0, 3, &row, &v);
    ck_assert_int_eq(v.has_margin, 0);
    ck_assert_int_eq(v.has_horizon, 0);
    claim_values(30, 0, &row, &v);
    ck_assert_int_eq(v.has_horizon, 0);

    /* a claim stamped ahead of the server clock is held 0 s */
    struct claim_row future = {1, 0, 1, -1.5, 0, 0, {0, 0, 0, 0}};
    claim_values(30, 0, &future, &v);
    ck_assert_double_eq(v.lease_oldest_age, 0);
    ck_assert_int_eq(v.has_margin, 1);
    ck_assert_double_eq_tol(v.margin, 30000, 1e-6);
}
END_TEST

static Suite *pg_sections_suite(void)
{
    Suite *s = suite_create("pg_sections");
    TCase *tc = tcase_create("dedup");
    tcase_add_checked_fixture(tc, NULL, teardown_doc);
    tcase_add_test(tc, test_dedup_defaults);
    tcase_add_test(tc, test_dedup_duplicates_column);
    tcase_add_test(tc, test_dedup_attempts_log);
    tcase_add_test(tc, test_dedup_quoting);
    tcase_add_loop_test(tc, test_dedup_errors, 0, sizeof dedup_errors / sizeof dedup_errors[0]);
    tcase_add_test(tc, test_dedup_values);
    tcase_add_test(tc, test_interval_param);
    suite_add_tcase(s, tc);

    tc = tcase_create("claim");
    tcase_add_checked_fixture(tc, NULL, teardown_doc);
    tcase_add_test(tc, test_claim_defaults);
    tcase_add_test(tc, test_claim_full);
    tcase_add_loop_test(tc, test_claim_errors, 0, sizeof claim_errors / sizeof claim_errors[0]);
    tcase_add_test(tc, test_claim_margin);
    tcase_add_test(tc, test_claim_values);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(pg_sections_suite(), CK_NORMAL);
}
