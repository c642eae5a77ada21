/* check_postgres_sql.c: unit tests for the `queries` section of a postgres source
 * (collectors/postgres/sql.c).
 *
 * The section's entry is reached through sql.h, the section's header. What a user reads is pinned
 * whole: configuration errors with file:line:col, and the SQL actually sent (the user's statement
 * wrapped so that it stays one read-only SELECT with a row cap). Running queries against a server
 * is tests/integration/postgres_sql.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/sql.h"
#include "support/section_item.h"
#include "support/check_refused.h"
#include "support/check_run.h"

START_TEST(test_configure_full)
{
    struct err e;
    struct sql_query *q = sql_configure(
        item_of("- name: orders\n"
                "  sql: |\n"
                "    SELECT region, status, count(*) AS n, sum(total) AS amount_total\n"
                "    FROM orders GROUP BY 1, 2;\n"
                "  labels: [region, status]\n"
                "  max_rows: 500\n"
                "  metrics:\n"
                "    - name: shop_orders\n"
                "      type: gauge\n"
                "      help: Orders by region and status.\n"
                "      value_column: n\n"
                "    - name: shop_order_amount_total\n"
                "      type: counter\n"
                "      help: Money ordered, in cents.\n"
                "      value_column: amount_total\n"),
        "shop-db", &e);
    ck_assert_msg(q != NULL, "%s", e.msg);
    ck_assert_str_eq(q->what, "query \"orders\"");
    ck_assert_str_eq(q->sql, "SELECT region, status, count(*) AS n, sum(total) AS amount_total\n"
                             "FROM orders GROUP BY 1, 2");
    ck_assert_str_eq(q->collect,
                     "SELECT * FROM (SELECT region, status, count(*) AS n, sum(total) AS "
                     "amount_total\nFROM orders GROUP BY 1, 2\n) q LIMIT 501");
    ck_assert_str_eq(q->check_sql,
                     "SELECT * FROM (SELECT region, status, count(*) AS n, sum(total) AS "
                     "amount_total\nFROM orders GROUP BY 1, 2\n) q LIMIT 0");
    ck_assert_uint_eq(q->nmetrics, 2);
    ck_assert_str_eq(q->metrics[0].fam.name, "shop_orders");
    ck_assert_int_eq(q->metrics[0].fam.type, METRIC_GAUGE);
    ck_assert_str_eq(q->metrics[0].fam.help, "Orders by region and status.");
    ck_assert_str_eq(q->metrics[0].value_column, "n");
    ck_assert_int_eq(q->metrics[1].fam.type, METRIC_COUNTER);
    ck_assert_uint_eq(q->nlabels, 2);
    ck_assert_str_eq(q->labels[1], "status");
    ck_assert_int_eq(q->max_rows, 500);
    sql_destroy(q);
    sql_destroy(NULL);
    ck_assert_str_eq(section_of(sql_configure)->key, "queries");
    ck_assert_str_eq(section_of(sql_configure)->kind_label, "sql");
}
END_TEST

START_TEST(test_configure_defaults)
{
    struct err e;
    struct sql_query *q =
        sql_configure(item_of("- name: backlog\n  sql: SELECT 1 AS v\n  metrics:\n"
                              "    - {name: app_backlog, type: gauge, help: h, value_column: v}\n"),
                      "db", &e);
    ck_assert_msg(q != NULL, "%s", e.msg);
    ck_assert_int_eq(q->max_rows, 10000);
    ck_assert_uint_eq(q->nlabels, 0);
    ck_assert_str_eq(q->collect, "SELECT * FROM (SELECT 1 AS v\n) q LIMIT 10001");
    sql_destroy(q);
}
END_TEST

#define M1 "  metrics:\n    - {name: app_x, type: gauge, help: h, value_column: v}\n"

static const struct check_case config_errors[] = {
    {"- sql: SELECT 1 AS v\n" M1, "q.yml:2:3: name: required in each entry of queries"},
    {"- name: ''\n  sql: SELECT 1 AS v\n" M1, "q.yml:2:9: name: want a non-empty string"},
    {"- name: q\n" M1, "q.yml:2:3: sql: required in query \"q\""},
    {"- name: q\n  sql: ' ; '\n" M1, "q.yml:3:8: sql: want a SELECT statement in query \"q\""},
    {"- name: q\n  sql: SELECT 1\n",
     "q.yml:2:3: metrics: want at least one {name, type, help, value_column} in query \"q\""},
    {"- name: q\n  sql: SELECT 1\n  metrics: []\n",
     "q.yml:4:12: metrics: want at least one {name, type, help, value_column} in query \"q\""},
    {"- name: q\n  sql: SELECT 1\n  min_interval: 5m\n" M1,
     "q.yml:4:3: unknown key \"min_interval\" in query \"q\" of source \"db\" (known keys: "
     "labels, max_rows, metrics, name, sql)"},
    {"- name: q\n  sql: SELECT 1\n  max_rows: 0\n" M1,
     "q.yml:4:13: max_rows: want an integer from 1 to 1000000, got \"0\""},
    {"- name: q\n  sql: SELECT 1\n  labels: region\n" M1,
     "q.yml:4:11: labels: want a list of strings, got a string"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app_x, type: gauge, help: h}\n",
     "q.yml:5:7: value_column: required in each entry of metrics"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app_x, help: h, value_column: v}\n",
     "q.yml:5:7: type: required in each entry of metrics"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app_x, type: gauge, value_column: v}\n",
     "q.yml:5:7: help: required in each entry of metrics"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n"
     "    - {name: app_x, type: gauge, help: h, value_column: v, unit: s}\n",
     "q.yml:5:60: unknown key \"unit\" in a metric of query \"q\" of source \"db\" (known keys: "
     "help, name, type, value_column)"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n"
     "    - {name: app_x, type: histogram, help: h, value_column: v}\n",
     "q.yml:5:27: type: want gauge or counter, got \"histogram\""},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app_x, type: counter, help: h, "
     "value_column: v}\n",
     "q.yml:5:14: metric \"app_x\": a counter's name must end in _total"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app_x_total, type: gauge, help: h, "
     "value_column: v}\n",
     "q.yml:5:14: metric \"app_x_total\": a gauge's name must not end in _total (the suffix "
     "marks counters)"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: qrel_queue_messages, type: gauge, "
     "help: h, value_column: v}\n",
     "q.yml:5:14: metric \"qrel_queue_messages\": the name is taken by one of qrel's own "
     "families"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: qrel_mine, type: gauge, "
     "help: h, value_column: v}\n",
     "q.yml:5:14: metric \"qrel_mine\": names starting with qrel_ are reserved for qrel's own "
     "families"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app.x, type: gauge, "
     "help: h, value_column: v}\n",
     "q.yml:5:14: metric \"app.x\": the name must match [a-zA-Z_:][a-zA-Z0-9_:]*"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - {name: app_x, type: gauge, help: '', "
     "value_column: v}\n",
     "q.yml:5:40: help: want a non-empty string"},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n"
     "    - {name: app_x, type: gauge, help: h, value_column: v}\n"
     "    - {name: app_x, type: gauge, help: h, value_column: w}\n",
     "q.yml:6:14: metric \"app_x\": defined twice in query \"q\""},
    {"- name: q\n  sql: SELECT 1\n  metrics:\n    - app_x\n",
     "q.yml:5:7: each entry of metrics: want a mapping, got a string"},
    {"- name: q\n  sql: SELECT 1\n  labels: [region, source]\n" M1,
     "q.yml:4:11: labels: \"source\" is set by qrel on every series; rename the column with AS"},
    {"- name: q\n  sql: SELECT 1\n  labels: [kind]\n" M1,
     "q.yml:4:11: labels: \"kind\" is set by qrel on every series; rename the column with AS"},
    {"- name: q\n  sql: SELECT 1\n  labels: [__name__]\n" M1,
     "q.yml:4:11: labels: \"__name__\" is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*, "
     "not starting with __); rename the column with AS"},
    {"- name: q\n  sql: SELECT 1\n  labels: [\"order id\"]\n" M1,
     "q.yml:4:11: labels: \"order id\" is not a valid label name (want [a-zA-Z_][a-zA-Z0-9_]*, "
     "not starting with __); rename the column with AS"},
    {"- name: q\n  sql: SELECT 1\n  labels: [a, b, a]\n" M1,
     "q.yml:4:11: labels: \"a\" is listed twice"},
    {"- name: q\n  sql: SELECT 1\n  labels: [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o]\n" M1,
     "q.yml:4:11: labels: at most 14 (with source and kind, 16 labels a series)"},
};

START_TEST(test_configure_errors)
{
    struct err e;
    err_clear(&e);
    void *q = sql_configure(item_of(config_errors[_i].in), "db", &e);
    ck_assert_msg(q == NULL, "accepted: %s", config_errors[_i].in);
    ck_assert_int_eq(e.code, ERR_CONFIG);
    ck_assert_str_eq(e.msg, config_errors[_i].want);
}
END_TEST

/* The same metric name in two queries of one source is refused when the source is configured. */
START_TEST(test_finish_refuses_a_name_defined_twice)
{
    struct err e;
    err_clear(&e);
    const char *text =
        "l:\n- name: a\n  sql: SELECT 1 AS v\n" M1 "- name: b\n  sql: SELECT 2 AS v\n"
        "  metrics:\n    - {name: app_y, type: gauge, help: h, value_column: v}\n"
        "    - {name: app_x, type: gauge, help: h, value_column: v}\n";
    doc = cfg_parse_string("q.yml", text, strlen(text), &e);
    ck_assert_ptr_nonnull(doc);
    struct cfg_node *seq = NULL;
    ck_assert_int_eq(cfg_get_node(cfg_doc_root(doc), "l", CFG_SEQ, &seq, &e), 0);
    void *items[2];
    for (size_t i = 0; i < 2; i++) {
        items[i] = sql_configure(seq->items[i], "db", &e);
        ck_assert_msg(items[i] != NULL, "%s", e.msg);
    }
    ck_assert_int_eq(sql_finish(items, 1, &e), 0);
    check_refused(sql_finish(items, 2, &e), &e,
                  "q.yml:10:14: metric \"app_x\": already defined by query \"a\" at "
                  "q.yml:5:14");
    sql_destroy(items[0]);
    sql_destroy(items[1]);
}
END_TEST

START_TEST(test_trim_sql)
{
    char a[] = "SELECT 1;;  \n\t";
    sql_trim(a);
    ck_assert_str_eq(a, "SELECT 1");
    char b[] = "";
    sql_trim(b);
    ck_assert_str_eq(b, "");
}
END_TEST

static Suite *pg_sql_suite(void)
{
    Suite *s = suite_create("pg_sql");
    TCase *tc = tcase_create("configure");
    tcase_add_checked_fixture(tc, NULL, teardown_doc);
    tcase_add_test(tc, test_configure_full);
    tcase_add_test(tc, test_configure_defaults);
    tcase_add_loop_test(tc, test_configure_errors, 0,
                        sizeof config_errors / sizeof config_errors[0]);
    tcase_add_test(tc, test_trim_sql);
    tcase_add_test(tc, test_finish_refuses_a_name_defined_twice);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(pg_sql_suite(), CK_NORMAL);
}
