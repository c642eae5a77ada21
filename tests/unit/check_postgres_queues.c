/* check_postgres_queues.c: unit tests for the queues section of a postgres source
 * (collectors/postgres/queues.c): pgmq and the job-runner presets.
 *
 * The section keeps everything but its pg_section_kind static, as collectors do; the test
 * includes its source to reach the statement builder and the emitter directly (the library's
 * copy of the object is then never linked in: this file defines the symbol it would supply).
 * Configuration errors are compared with the exact messages a user reads. Which families a
 * preset's queue gets is decided by pgq_emit from what the runner records and what the config
 * declares, so it is tested per preset here; the state mapping itself is SQL, run against real
 * schemas by tests/integration/postgres_queues.sh. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectors/postgres/queues.c"
#include "section_item.h"

static struct queues *configured(const char *list)
{
    struct err e = {0};
    struct queues *q = configure(item_of(list), "db", &e);
    ck_assert_msg(q != NULL, "%s", e.msg);
    return q;
}

START_TEST(test_defaults)
{
    static const struct {
        const char *preset, *schema, *kind;
    } cases[] = {
        {"pgmq", "pgmq", "pgmq"},          {"graphile_worker", "graphile_worker", "pg_jobs"},
        {"pg_boss", "pgboss", "pg_jobs"},  {"river", "public", "pg_jobs"},
        {"oban", "public", "pg_jobs"},     {"que", "public", "pg_jobs"},
        {"good_job", "public", "pg_jobs"}, {"solid_queue", "public", "pg_jobs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *list = xasprintf("- preset: %s\n", cases[i].preset);
        struct queues *q = configured(list);
        ck_assert_str_eq(q->preset->name, cases[i].preset);
        ck_assert_str_eq(q->schema, cases[i].schema);
        ck_assert_str_eq(q->preset->kind_label, cases[i].kind);
        ck_assert_ptr_null(q->filter_param);
        ck_assert(q->lease_timeout < 0);
        ck_assert_int_eq(q->max_deliveries, 0);
        destroy(q);
        free(list);
        teardown_doc();
    }
}
END_TEST

START_TEST(test_full)
{
    struct queues *q = configured("- preset: river\n  schema: Jobs\n  queues: [mail, \"a\\\"b\"]\n"
                                  "  max_deliveries: 5\n  job_timeout: 90s\n");
    ck_assert_str_eq(q->schema, "Jobs");
    ck_assert_uint_eq(q->nqueues, 2);
    ck_assert_str_eq(q->filter_param, "{\"mail\",\"a\\\"b\"}");
    ck_assert_int_eq(q->max_deliveries, 5);
    ck_assert(q->lease_timeout == 90.0);
    ck_assert_str_eq(q->what, "queues preset \"river\" (schema \"Jobs\")");
    destroy(q);
    teardown_doc();

    q = configured("- preset: pgmq\n  visibility_timeout: 30s\n");
    ck_assert(q->lease_timeout == 30.0);
    destroy(q);
    teardown_doc();
}
END_TEST

START_TEST(test_errors)
{
    static const struct {
        const char *yaml, *msg;
    } cases[] = {
        {"- schema: x\n", "q.yml:2:3: preset: required in each entry of queues (one of pgmq, "
                          "graphile_worker, pg_boss, river, oban, que, good_job, solid_queue)"},
        {"- preset: sidekiq\n", "q.yml:2:11: preset: want one of pgmq, graphile_worker, pg_boss, "
                                "river, oban, que, good_job, solid_queue, got \"sidekiq\""},
        {"- preset: river\n  schema: \"\"\n", "q.yml:3:11: schema: want a non-empty string"},
        {"- preset: river\n  queues: []\n",
         "q.yml:3:11: queues: want at least one queue name (leave the key out for all)"},
        {"- preset: river\n  queues: [a, \"\"]\n", "q.yml:3:15: queues: want non-empty names"},
        {"- preset: river\n  queues: [a, b, a]\n", "q.yml:3:18: queues: \"a\" is listed twice"},
        {"- preset: river\n  queues: a\n", "q.yml:3:11: queues: want a list, got a string"},
        {"- preset: pgmq\n  job_timeout: 30s\n",
         "q.yml:3:16: job_timeout: not a key of preset \"pgmq\" (its lease is visibility_timeout)"},
        {"- preset: river\n  visibility_timeout: 30s\n",
         "q.yml:3:23: visibility_timeout: not a key of preset \"river\" (job runners take "
         "job_timeout)"},
        {"- preset: graphile_worker\n  job_timeout: 30s\n",
         "q.yml:3:16: job_timeout: preset \"graphile_worker\" records each job's lease itself"},
        {"- preset: pg_boss\n  job_timeout: 30s\n",
         "q.yml:3:16: job_timeout: preset \"pg_boss\" records each job's lease itself"},
        {"- preset: river\n  job_timeout: 0s\n",
         "q.yml:3:16: job_timeout: want a duration above 0"},
        {"- preset: pgmq\n  visibility_timeout: 30\n",
         "q.yml:3:23: visibility_timeout: want a duration like \"5s\", got \"30\""},
        {"- preset: que\n  max_deliveries: 0\n",
         "q.yml:3:19: max_deliveries: want an integer from 1 to 1000000, got \"0\""},
        {"- preset: river\n  shema: x\n",
         "q.yml:3:3: unknown key \"shema\" in queues preset \"river\" of source \"db\" (known "
         "keys: job_timeout, max_deliveries, preset, queues, schema, visibility_timeout)"},
        {"- shema: x\n",
         "q.yml:2:3: unknown key \"shema\" in an entry of queues of source \"db\" (known keys: "
         "job_timeout, max_deliveries, preset, queues, schema, visibility_timeout)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct err e = {0};
        void *q = configure(item_of(cases[i].yaml), "db", &e);
        ck_assert_msg(q == NULL, "case %zu accepted", i);
        ck_assert_int_eq(e.code, ERR_CONFIG);
        ck_assert_str_eq(e.msg, cases[i].msg);
        teardown_doc();
    }
}
END_TEST

START_TEST(test_array_literal)
{
    char *v[] = {"plain", "with \"quote\"", "back\\slash", "comma,brace}", NULL};
    char *s = pgq_array_literal(v, 4);
    ck_assert_str_eq(s, "{\"plain\",\"with \\\"quote\\\"\",\"back\\\\slash\",\"comma,brace}\"}");
    free(s);
    s = pgq_array_literal(v, 0);
    ck_assert_str_eq(s, "{}");
    free(s);
}
END_TEST

START_TEST(test_jobs_sql)
{
    /* pgmq's statement is built per scrape from the queue list, not here. */
    ck_assert_ptr_null(pgq_jobs_sql(PGQ_PGMQ, "pgmq", 0, 0));

    char *s = pgq_jobs_sql(PGQ_RIVER, "my\"schema", 0, 0);
    /* the states are listed, so that River's (state, queue, ...) index skips completed jobs */
    ck_assert_ptr_nonnull(strstr(s, "FROM \"my\"\"schema\".river_job WHERE state IN ('available', "
                                    "'pending', 'retryable', 'running', 'scheduled', 'discarded')) "
                                    "AS jobs GROUP BY 1 ORDER BY 1"));
    ck_assert_ptr_null(strstr(s, "$1"));
    ck_assert_ptr_null(strstr(s, "@S"));
    ck_assert(strncmp(s, aggregate_head, strlen(aggregate_head)) == 0);
    free(s);

    /* Filtered: listed queues always get a row, and only they do. */
    s = pgq_jobs_sql(PGQ_OBAN, "public", 0, 1);
    ck_assert_ptr_nonnull(strstr(s, " UNION ALL SELECT unnest($1::text[]), NULL, NULL::float8, "));
    ck_assert_ptr_nonnull(
        strstr(s, ") AS jobs WHERE queue = ANY ($1::text[]) GROUP BY 1 ORDER BY 1"));
    free(s);

    s = pgq_jobs_sql(PGQ_GRAPHILE_WORKER, "graphile_worker", 0, 0);
    ck_assert_ptr_nonnull(strstr(s, "FROM \"graphile_worker\"._private_jobs j LEFT JOIN "
                                    "\"graphile_worker\"._private_job_queues q"));
    free(s);
    s = pgq_jobs_sql(PGQ_GRAPHILE_WORKER, "graphile_worker", 1, 0);
    ck_assert_ptr_nonnull(strstr(s, "FROM \"graphile_worker\".jobs j"));
    ck_assert_ptr_null(strstr(s, "_private"));
    free(s);

    /* pg-boss 9: lower-cased camel case, expired is dead, internal completion jobs left out */
    s = pgq_jobs_sql(PGQ_PG_BOSS, "pgboss", 1, 0);
    ck_assert_ptr_nonnull(strstr(s, "retrycount > 0 AS redel"));
    ck_assert_ptr_nonnull(strstr(s, "WHEN state IN ('failed', 'expired') THEN 'x'"));
    ck_assert_ptr_nonnull(
        strstr(s, "WHERE name NOT LIKE '\\_\\_state\\_\\_%' AND state < 'active'"));
    free(s);
    s = pgq_jobs_sql(PGQ_PG_BOSS, "pgboss", 0, 0);
    ck_assert_ptr_nonnull(strstr(s, "retry_count > 0 AS redel"));
    /* two branches, each matching a partial index */
    ck_assert_ptr_nonnull(strstr(s, "FROM \"pgboss\".job WHERE state < 'active' UNION ALL "));
    ck_assert_ptr_nonnull(strstr(s, "FROM \"pgboss\".job WHERE state IN ('active', 'failed'))"));
    free(s);

    s = pgq_jobs_sql(PGQ_SOLID_QUEUE, "public", 0, 0);
    /* every table of the schema qualified */
    ck_assert_ptr_null(strstr(s, " solid_queue_"));
    ck_assert_ptr_nonnull(strstr(s, "\"public\".solid_queue_failed_executions e"));
    free(s);
}
END_TEST

/* The value of the sample of family whose labels include every name=value pair of want
 * ("queue", "q", ..., NULL); NAN when there is none. */
static double value_of(const struct metric_set *s, const char *family, ...)
{
    for (size_t i = 0; i < metric_set_len(s); i++) {
        struct metric_sample m;
        metric_set_get(s, i, &m);
        if (strcmp(m.family->name, family) != 0)
            continue;
        va_list ap;
        va_start(ap, family);
        int ok = 1;
        const char *name;
        while (ok && (name = va_arg(ap, const char *))) {
            const char *want = va_arg(ap, const char *);
            int found = 0;
            for (size_t k = 0; k < m.nlabels; k++)
                found |=
                    strcmp(m.labels[k].name, name) == 0 && strcmp(m.labels[k].value, want) == 0;
            ok = found;
        }
        va_end(ap);
        if (ok)
            return m.value;
    }
    return NAN;
}

static size_t count_family(const struct metric_set *s, const char *family)
{
    size_t n = 0;
    for (size_t i = 0; i < metric_set_len(s); i++)
        n += strcmp(metric_set_family(s, i)->name, family) == 0;
    return n;
}

/* A row with every column set: ready 1, in flight 2, delayed 3, oldest 40, redelivered 5, dead
 * 6, dead age 70, max deliveries 8, hold 9, lease 10. */
static struct pgq_row full_row(void)
{
    struct pgq_row r = {.queue = "q"};
    for (int k = 1; k < PGQ_NCOLS; k++) {
        r.has[k] = 1;
        r.v[k] = k == PGQ_COL_OLDEST_AGE || k == PGQ_COL_DEAD_AGE ? k * 10 : k;
    }
    return r;
}

START_TEST(test_emit_job_presets)
{
    static const struct {
        const char *preset;
        int redelivered, dead, maxdel, lease_age, lease_timeout;
        const char *dlq;
    } cases[] = {
        {"graphile_worker", 1, 1, 1, 1, 1, "failed"},
        {"pg_boss", 1, 1, 1, 1, 1, "failed"},
        {"river", 1, 1, 1, 1, 0, "discarded"},
        {"oban", 1, 1, 1, 1, 0, "discarded"},
        {"que", 1, 1, 0, 0, 0, "expired"},
        {"good_job", 1, 1, 0, 1, 0, "discarded"},
        {"solid_queue", 0, 1, 0, 1, 0, "failed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct pgq_preset *p = pgq_preset_find(cases[i].preset);
        ck_assert_ptr_nonnull(p);
        struct metric_set *s = metric_set_new("db", p->kind_label);
        struct pgq_row r = full_row();
        ck_assert_int_eq(pgq_emit(p, &r, 0, -1.0, s), 0);
        ck_assert(value_of(s, "qrel_queue_messages", "state", "ready", NULL) == 1);
        ck_assert(value_of(s, "qrel_queue_messages", "state", "in_flight", NULL) == 2);
        ck_assert(value_of(s, "qrel_queue_messages", "state", "delayed", NULL) == 3);
        ck_assert(value_of(s, "qrel_queue_oldest_message_age_seconds", "queue", "q", NULL) == 40);
        ck_assert_uint_eq(count_family(s, "qrel_messages_redelivered"),
                          (size_t)cases[i].redelivered);
        ck_assert_uint_eq(count_family(s, "qrel_max_deliveries"), (size_t)cases[i].maxdel);
        ck_assert_uint_eq(count_family(s, "qrel_lease_oldest_age_seconds"),
                          (size_t)cases[i].lease_age);
        ck_assert_uint_eq(count_family(s, "qrel_lease_timeout_seconds"),
                          (size_t)cases[i].lease_timeout);
        ck_assert(
            value_of(s, "qrel_dead_letter_messages", "dead_letter_queue", cases[i].dlq, NULL) == 6);
        ck_assert(value_of(s, "qrel_dead_letter_oldest_age_seconds", "dead_letter_queue",
                           cases[i].dlq, NULL) == 70);
        metric_set_free(s);

        /* Declared values win over (or stand in for) what the table records. */
        s = metric_set_new("db", p->kind_label);
        ck_assert_int_eq(pgq_emit(p, &r, 4, 45.0, s), 0);
        ck_assert(value_of(s, "qrel_max_deliveries", "queue", "q", NULL) == 4);
        ck_assert(value_of(s, "qrel_lease_timeout_seconds", "queue", "q", NULL) == 45);
        metric_set_free(s);
    }
}
END_TEST

START_TEST(test_emit_pgmq)
{
    const struct pgq_preset *p = pgq_preset_find("pgmq");
    struct pgq_row r = full_row();
    struct metric_set *s = metric_set_new("db", "pgmq");
    ck_assert_int_eq(pgq_emit(p, &r, 0, -1.0, s), 0);
    /* The archive is acknowledged history, not dead letters; pgmq keeps no read time, so the
     * hold age needs the declared visibility timeout; it keeps no max reads. */
    ck_assert_uint_eq(count_family(s, "qrel_dead_letter_messages"), 0);
    ck_assert_uint_eq(count_family(s, "qrel_dead_letter_oldest_age_seconds"), 0);
    ck_assert_uint_eq(count_family(s, "qrel_lease_oldest_age_seconds"), 0);
    ck_assert_uint_eq(count_family(s, "qrel_lease_timeout_seconds"), 0);
    ck_assert_uint_eq(count_family(s, "qrel_max_deliveries"), 0);
    ck_assert(value_of(s, "qrel_messages_redelivered", "queue", "q", NULL) == 5);
    metric_set_free(s);

    s = metric_set_new("db", "pgmq");
    ck_assert_int_eq(pgq_emit(p, &r, 3, 30.0, s), 0);
    ck_assert(value_of(s, "qrel_lease_oldest_age_seconds", "queue", "q", NULL) == 9);
    ck_assert(value_of(s, "qrel_lease_timeout_seconds", "queue", "q", NULL) == 30);
    ck_assert(value_of(s, "qrel_max_deliveries", "queue", "q", NULL) == 3);
    metric_set_free(s);
}
END_TEST

START_TEST(test_emit_empty_queue)
{
    /* An empty queue: the aggregate's ages are NULL; the series say 0, not absent. */
    const struct pgq_preset *p = pgq_preset_find("river");
    struct pgq_row r = {.queue = "idle"};
    r.has[PGQ_COL_READY] = r.has[PGQ_COL_IN_FLIGHT] = r.has[PGQ_COL_DELAYED] = 1;
    r.has[PGQ_COL_REDELIVERED] = r.has[PGQ_COL_DEAD] = 1;
    struct metric_set *s = metric_set_new("db", "pg_jobs");
    ck_assert_int_eq(pgq_emit(p, &r, 0, -1.0, s), 0);
    ck_assert(value_of(s, "qrel_queue_oldest_message_age_seconds", "queue", "idle", NULL) == 0);
    ck_assert(value_of(s, "qrel_dead_letter_oldest_age_seconds", "queue", "idle", NULL) == 0);
    ck_assert(value_of(s, "qrel_lease_oldest_age_seconds", "queue", "idle", NULL) == 0);
    /* no pending job, so no max_attempts to read */
    ck_assert_uint_eq(count_family(s, "qrel_max_deliveries"), 0);
    metric_set_free(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pg_queues");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_full);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_array_literal);
    tcase_add_test(tc, test_jobs_sql);
    tcase_add_test(tc, test_emit_job_presets);
    tcase_add_test(tc, test_emit_pgmq);
    tcase_add_test(tc, test_emit_empty_queue);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
