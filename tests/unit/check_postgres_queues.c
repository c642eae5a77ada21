/* check_postgres_queues.c: unit tests for the queues section of a postgres source
 * (collectors/postgres/queues*.c): pgmq and the job-runner presets.
 *
 * The statement builders, the emitter and the preset table are reached through queues.h, the
 * section's header, which declares what its files share and what these tests call; the objects
 * are the library's, as in every other unit test.
 * Configuration errors are compared with the exact messages a user reads. Which families a
 * preset's queue gets is decided by queues_emit_queue from what the runner records and what the
 * config declares, so it is tested per preset here; the state mapping itself is SQL, run against
 * real schemas by tests/integration/postgres_queues.sh. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/queues.h"
#include "support/section_item.h"
#include "support/check_run.h"
#include "support/sample.h"
#include "support/check_str.h"

static struct queues *configured(const char *list)
{
    struct err e = {0};
    struct queues *q = queues_configure(item_of(list), "db", &e);
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
    /* delayed_job declares its workers' settings, with delayed_job's defaults */
    struct queues *q = configured("- preset: delayed_job\n");
    ck_assert_str_eq(q->schema, "public");
    ck_assert_str_eq(q->preset->kind_label, "pg_jobs");
    ck_assert(q->lease_timeout == 14400.0);
    ck_assert_int_eq(q->max_deliveries, 25);
    ck_assert_int_eq(q->destroy_failed, -1);
    queues_destroy(q);
    teardown_doc();
    q = configured("- preset: delayed_job\n  max_run_time: 15m\n  max_attempts: 3\n"
                   "  destroy_failed_jobs: false\n");
    ck_assert(q->lease_timeout == 900.0);
    ck_assert_int_eq(q->max_deliveries, 3);
    ck_assert_int_eq(q->destroy_failed, 0);
    queues_destroy(q);
    teardown_doc();
    q = configured("- preset: delayed_job\n  destroy_failed_jobs: true\n");
    ck_assert_int_eq(q->destroy_failed, 1);
    queues_destroy(q);
    teardown_doc();

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *list = xasprintf("- preset: %s\n", cases[i].preset);
        q = configured(list);
        ck_assert_str_eq(q->preset->name, cases[i].preset);
        ck_assert_str_eq(q->schema, cases[i].schema);
        ck_assert_str_eq(q->preset->kind_label, cases[i].kind);
        ck_assert_ptr_null(q->filter_param);
        ck_assert(q->lease_timeout < 0);
        ck_assert_int_eq(q->max_deliveries, 0);
        queues_destroy(q);
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
    queues_destroy(q);
    teardown_doc();

    q = configured("- preset: pgmq\n  visibility_timeout: 30s\n");
    ck_assert(q->lease_timeout == 30.0);
    queues_destroy(q);
    teardown_doc();
}
END_TEST

START_TEST(test_errors)
{
    static const struct {
        const char *yaml, *msg;
    } cases[] = {
        {"- schema: x\n", "q.yml:2:3: preset: required in each entry of queues (one of pgmq, "
                          "graphile_worker, pg_boss, river, oban, que, good_job, solid_queue, "
                          "delayed_job, laravel)"},
        {"- preset: sidekiq\n",
         "q.yml:2:11: preset: want one of pgmq, graphile_worker, pg_boss, "
         "river, oban, que, good_job, solid_queue, delayed_job, laravel, got "
         "\"sidekiq\""},
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
         "keys: job_timeout, max_deliveries, preset, queues, schema, visibility_timeout, window)"},
        /* delayed_job's keys: its own names for the lease and the limit, known to it alone */
        {"- preset: river\n  max_run_time: 1h\n",
         "q.yml:3:3: unknown key \"max_run_time\" in queues preset \"river\" of source \"db\" "
         "(known keys: job_timeout, max_deliveries, preset, queues, schema, visibility_timeout, "
         "window)"},
        {"- preset: delayed_job\n  max_deliveries: 3\n",
         "q.yml:3:19: max_deliveries: not a key of preset \"delayed_job\" (its limit is "
         "max_attempts)"},
        {"- preset: delayed_job\n  job_timeout: 1h\n",
         "q.yml:3:16: job_timeout: not a key of preset \"delayed_job\" (its lease is "
         "max_run_time)"},
        {"- preset: delayed_job\n  max_run_time: 0s\n",
         "q.yml:3:17: max_run_time: want a duration above 0"},
        {"- preset: delayed_job\n  max_attempts: 0\n",
         "q.yml:3:17: max_attempts: want an integer from 1 to 1000000, got \"0\""},
        {"- preset: delayed_job\n  destroy_failed_jobs: maybe\n",
         "q.yml:3:24: destroy_failed_jobs: want true or false, got \"maybe\""},
        {"- preset: laravel\n  job_timeout: 1h\n",
         "q.yml:3:16: job_timeout: not a key of preset \"laravel\" (its lease is retry_after)"},
        {"- preset: laravel\n  retry_after: 0s\n",
         "q.yml:3:16: retry_after: want a duration above 0"},
        {"- preset: laravel\n  connection: \"\"\n",
         "q.yml:3:15: connection: want the name of the database connection"},
        {"- preset: river\n  retry_after: 1m\n",
         "q.yml:3:3: unknown key \"retry_after\" in queues preset \"river\" of source \"db\" "
         "(known keys: job_timeout, max_deliveries, preset, queues, schema, visibility_timeout, "
         "window)"},
        {"- preset: delayed_job\n  shema: x\n",
         "q.yml:3:3: unknown key \"shema\" in queues preset \"delayed_job\" of source \"db\" "
         "(known keys: destroy_failed_jobs, job_timeout, max_attempts, max_deliveries, "
         "max_run_time, preset, queues, schema, visibility_timeout, window)"},
        {"- shema: x\n",
         "q.yml:2:3: unknown key \"shema\" in an entry of queues of source \"db\" (known keys: "
         "job_timeout, max_deliveries, preset, queues, schema, visibility_timeout, window)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct err e = {0};
        void *q = queues_configure(item_of(cases[i].yaml), "db", &e);
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
    check_str_free(pg_text_array((const char *const *)v, 4),
                   "{\"plain\",\"with \\\"quote\\\"\",\"back\\\\slash\",\"comma,brace}\"}");
    check_str_free(pg_text_array((const char *const *)v, 0), "{}");
}
END_TEST

/* The rows ahead of each preset: only the columns its runner stamps with a host's clock, never a
 * scheduled time (intended, not skew); none for the runners that stamp everything with now(). */
START_TEST(test_ahead_sql)
{
    static const struct {
        enum pgq_preset_id id;
        int layout;
        const char *ahead; /* NULL: no branch */
    } cases[] = {
        {PGQ_GRAPHILE_WORKER, LAYOUT_CURRENT,
         "WHERE j.locked_at > (now() + interval '1 second')) AS a LIMIT 1000"},
        {PGQ_PG_BOSS, LAYOUT_BOSS9, NULL},
        {PGQ_PG_BOSS, LAYOUT_BOSS10, NULL},
        {PGQ_PG_BOSS, LAYOUT_BOSS11, NULL},
        {PGQ_PG_BOSS, LAYOUT_BOSS12, NULL},
        {PGQ_RIVER, LAYOUT_CURRENT,
         "AND finalized_at > (now() + interval '1 second')) AS a LIMIT 1000"},
        {PGQ_OBAN, LAYOUT_CURRENT,
         "WHERE state = 'executing' AND attempted_at > timezone('UTC', (now() + interval '1 "
         "second')) UNION ALL SELECT queue FROM \"s\".oban_jobs WHERE state = 'completed' AND "
         "completed_at > timezone('UTC', (now() + interval '1 second'))"},
        {PGQ_OBAN, LAYOUT_LEGACY,
         "AND discarded_at > timezone('UTC', (now() + interval '1 second'))) AS a LIMIT 1000"},
        {PGQ_QUE, LAYOUT_CURRENT, NULL},
        {PGQ_GOOD_JOB, LAYOUT_CURRENT,
         "WHERE finished_at IS NULL AND (created_at > timezone('UTC', (now() + interval '1 "
         "second')) OR performed_at > timezone('UTC', (now() + interval '1 second'))) UNION ALL "
         "SELECT queue_name FROM \"s\".good_jobs WHERE finished_at > timezone('UTC', (now() + "
         "interval '1 second'))) AS a"},
        {PGQ_SOLID_QUEUE, LAYOUT_CURRENT,
         "JOIN \"s\".solid_queue_jobs j ON j.id = e.job_id WHERE e.created_at > timezone('UTC', "
         "(now() + interval '1 second'))) AS a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = queues_sql_jobs(cases[i].id, "s", cases[i].layout, 0);
        const char *branch = strstr(s, " UNION ALL SELECT queue, 'a'");
        ck_assert_msg((branch != NULL) == (cases[i].ahead != NULL), "case %zu", i);
        if (branch) {
            ck_assert_msg(strstr(branch, cases[i].ahead) != NULL, "case %zu: %s", i, branch);
            ck_assert_ptr_null(strstr(branch, "scheduled_at"));
            ck_assert_ptr_null(strstr(branch, "run_at"));
            ck_assert_ptr_null(strstr(branch, "start_after"));
            ck_assert_ptr_null(strstr(branch, "@S"));
        }
        free(s);
    }
}
END_TEST

START_TEST(test_jobs_sql)
{
    /* pgmq's statement is built per scrape from the queue list, not here. */
    ck_assert_ptr_null(queues_sql_jobs(PGQ_PGMQ, "pgmq", LAYOUT_CURRENT, 0));

    char *s = queues_sql_jobs(PGQ_RIVER, "my\"schema", LAYOUT_CURRENT, 0);
    /* the states are listed, so that River's (state, queue, ...) index skips completed jobs */
    ck_assert_ptr_nonnull(strstr(s, "FROM \"my\"\"schema\".river_job WHERE state IN ('available', "
                                    "'pending', 'retryable', 'running', 'scheduled', 'discarded') "
                                    "UNION ALL SELECT queue, 'a', NULL::float8, "));
    /* the jobs River finalized ahead of now(), read through its (state, finalized_at) index and
     * at most 1,000 of them, in the same statement */
    ck_assert_ptr_nonnull(strstr(s, "(SELECT queue FROM \"my\"\"schema\".river_job WHERE state IN "
                                    "('completed', 'discarded') AND finalized_at > (now() + "
                                    "interval '1 second')) AS a LIMIT 1000) AS ahead) AS jobs "
                                    "GROUP BY 1, 2) AS per_class GROUP BY 1 ORDER BY 1"));
    ck_assert_ptr_null(strstr(s, "$1"));
    ck_assert_ptr_null(strstr(s, "@S"));
    ck_assert(strncmp(s, queues_sql_aggregate_head, strlen(queues_sql_aggregate_head)) == 0);
    free(s);

    /* Filtered: listed queues always get a row, and only they do. */
    s = queues_sql_jobs(PGQ_OBAN, "public", LAYOUT_CURRENT, 1);
    ck_assert_ptr_nonnull(strstr(s, " UNION ALL SELECT unnest($1::text[]), NULL, NULL::float8, "));
    ck_assert_ptr_nonnull(
        strstr(s, ") AS jobs WHERE queue = ANY ($1::text[]) GROUP BY 1, 2) AS per_class GROUP "
                  "BY 1 ORDER BY 1"));
    /* the filter applies inside the cap: queues left out take none of the 1,000 */
    ck_assert_ptr_nonnull(strstr(
        s, "discarded_at > timezone('UTC', (now() + interval '1 second'))) AS a WHERE queue = "
           "ANY ($1::text[]) LIMIT 1000) AS ahead"));
    free(s);

    s = queues_sql_jobs(PGQ_GRAPHILE_WORKER, "graphile_worker", LAYOUT_CURRENT, 0);
    ck_assert_ptr_nonnull(strstr(s, "FROM \"graphile_worker\"._private_jobs j LEFT JOIN "
                                    "\"graphile_worker\"._private_job_queues q"));
    free(s);
    s = queues_sql_jobs(PGQ_GRAPHILE_WORKER, "graphile_worker", LAYOUT_LEGACY, 0);
    ck_assert_ptr_nonnull(strstr(s, "FROM \"graphile_worker\".jobs j"));
    ck_assert_ptr_null(strstr(s, "_private"));
    ck_assert_ptr_nonnull(strstr(s, "FROM \"graphile_worker\".jobs j WHERE j.locked_at > "
                                    "(now() + interval '1 second')"));
    free(s);

    /* pg-boss 9: lower-cased camel case, expired is dead, internal completion jobs left out */
    s = queues_sql_jobs(PGQ_PG_BOSS, "pgboss", LAYOUT_BOSS9, 0);
    ck_assert_ptr_nonnull(strstr(s, "retrycount > 0 AS redel"));
    ck_assert_ptr_nonnull(strstr(s, "WHEN state IN ('failed', 'expired') THEN 'x'"));
    ck_assert_ptr_nonnull(
        strstr(s, "WHERE name NOT LIKE '\\_\\_state\\_\\_%' AND state < 'active'"));
    free(s);
    /* pg-boss 10-12: waiting, active and failed jobs in branches of their own; a queue with a
     * dead_letter queue has that queue's pending jobs as its dead ones, not its failed rows */
    static const int boss[] = {LAYOUT_BOSS10, LAYOUT_BOSS11, LAYOUT_BOSS12};
    static const char *const lease[] = {
        "(date_part('epoch', j.expire_in))::float8 AS lease", "(j.expire_seconds)::float8 AS lease",
        ("(COALESCE(j.heartbeat_seconds, j.expire_seconds))::float8 "
         "AS lease")};
    for (size_t i = 0; i < 3; i++) {
        s = queues_sql_jobs(PGQ_PG_BOSS, "pgboss", boss[i], 0);
        ck_assert_ptr_nonnull(strstr(s, "j.retry_count > 0 AS redel"));
        ck_assert_ptr_nonnull(strstr(s, lease[i]));
        /* read queue by queue from the queue table, so the (name, ...) indexes serve */
        ck_assert_ptr_nonnull(strstr(s, "FROM \"pgboss\".queue q JOIN \"pgboss\".job j ON "
                                        "j.name = q.name WHERE j.state < 'active' AND j.state IN "
                                        "('created', 'retry') UNION ALL "));
        ck_assert_ptr_nonnull(strstr(s, "j.name = q.name WHERE j.state IN ('active', 'failed') "
                                        "UNION ALL "));
        ck_assert_ptr_nonnull(
            strstr(s, "WHEN j.state = 'failed' THEN CASE WHEN q.dead_letter IS NULL THEN 'x' END"));
        ck_assert_ptr_nonnull(strstr(s, "JOIN \"pgboss\".job d ON d.name = q.dead_letter AND "
                                        "d.state < 'active' AND d.state IN ('created', 'retry')"));
        ck_assert((strstr(s, "j.blocked") != NULL) == (boss[i] == LAYOUT_BOSS12));
        ck_assert((strstr(s, "retry_delay_max") != NULL) == (boss[i] != LAYOUT_BOSS10));
        ck_assert_ptr_null(strstr(s, "@S"));
        free(s);
    }

    s = queues_sql_jobs(PGQ_SOLID_QUEUE, "public", LAYOUT_CURRENT, 0);
    /* every table of the schema qualified */
    ck_assert_ptr_null(strstr(s, " solid_queue_"));
    ck_assert_ptr_nonnull(strstr(s, "\"public\".solid_queue_failed_executions e"));
    free(s);
}
END_TEST

/* delayed_job's statement: one scan of its table, its workers' max_run_time and max_attempts
 * written in, the times compared as stored against a now() of each column's type. */
START_TEST(test_delayed_job_sql)
{
    /* Rails' default `timestamp` columns hold UTC: compared with UTC now */
    char *s = queues_sql_jobs_limits(PGQ_DELAYED_JOB, "@L@M", LAYOUT_DJ, 0, 900, 3);
    ck_assert_ptr_nonnull(strstr(s, "CASE WHEN failed_at IS NOT NULL THEN 3 WHEN locked_at > "
                                    "(SELECT timezone('UTC', now()) - 900 * interval '1 second') "
                                    "THEN 1 WHEN run_at > (SELECT timezone('UTC', now())) THEN 2 "
                                    "ELSE 0 END AS c"));
    ck_assert_ptr_nonnull(
        strstr(s, "count(*) FILTER (WHERE c < 3 AND attempts > 0)::int8 AS redel"));
    ck_assert_ptr_nonnull(
        strstr(s, "count(*) FILTER (WHERE c < 3 AND attempts >= 3 - 1)::float8 AS l"));
    /* the rows ahead: the columns a host's clock stamps (never run_at, a scheduled time), capped
     * at 1,000 for the table */
    ck_assert_ptr_nonnull(strstr(s, "GREATEST(locked_at, failed_at, created_at) > (SELECT "
                                    "timezone('UTC', (now() + interval '1 second'))) AS ahead"));
    ck_assert_ptr_nonnull(strstr(s, "LEAST(a, GREATEST(1000 - (sum(a) OVER (ORDER BY queue ROWS "
                                    "UNBOUNDED PRECEDING) - a), 0))::float8"));
    /* one scan, the class worked out once a row (the fence), one result row per queue */
    const char *from = strstr(s, "FROM \"@L@M\".delayed_jobs OFFSET 0) AS jobs GROUP BY 1) AS "
                                 "per_queue ORDER BY 1");
    ck_assert_ptr_nonnull(from);
    ck_assert_ptr_eq(strstr(s, "delayed_jobs"), from + strlen("FROM \"@L@M\"."));
    ck_assert_ptr_null(strstr(from + strlen("FROM \"@L@M\".delayed_jobs"), "delayed_jobs"));
    ck_assert_ptr_null(strstr(s, "$1"));
    free(s);

    /* the plain one: delayed_job's defaults, 4 h and 25; a layout below LAYOUT_DJ (none
     * detected) reads the columns as `timestamp` */
    s = queues_sql_jobs(PGQ_DELAYED_JOB, "public", LAYOUT_CURRENT, 0);
    ck_assert_ptr_nonnull(
        strstr(s, "(SELECT timezone('UTC', now()) - 14400 * interval '1 second')"));
    ck_assert_ptr_nonnull(strstr(s, "attempts >= 25 - 1"));
    free(s);
    /* the three stamps all timestamptz: one comparison of the greatest with now() itself */
    s = queues_sql_jobs(PGQ_DELAYED_JOB, "public", LAYOUT_DJ + 2 + 4 + 8, 0);
    ck_assert_ptr_nonnull(strstr(s, "GREATEST(locked_at, failed_at, created_at) > (SELECT "
                                    "(now() + interval '1 second')) AS ahead"));
    free(s);

    /* timestamptz columns (here locked_at and created_at) are compared with now() itself; the
     * stamps of mixed types each with its own threshold */
    s = queues_sql_jobs(PGQ_DELAYED_JOB, "public", LAYOUT_DJ + 2 + 8, 0);
    ck_assert_ptr_nonnull(strstr(s,
                                 "WHEN locked_at > (SELECT now() - 14400 * interval '1 "
                                 "second') THEN 1 WHEN run_at > (SELECT timezone('UTC', now()))"));
    ck_assert_ptr_nonnull(strstr(s, "(locked_at > (SELECT (now() + interval '1 second')) OR "
                                    "failed_at > (SELECT timezone('UTC', (now() + interval '1 "
                                    "second'))) OR created_at > (SELECT (now() + interval '1 "
                                    "second'))) AS ahead"));
    free(s);

    /* filtered: the listed queues only (also inside the cap), each with a row */
    s = queues_sql_jobs(PGQ_DELAYED_JOB, "public", LAYOUT_DJ, 1);
    ck_assert_ptr_nonnull(strstr(s, "FROM \"public\".delayed_jobs WHERE COALESCE(queue, '(none)') "
                                    "= ANY ($1::text[]) OFFSET 0) UNION ALL SELECT "
                                    "unnest($1::text[]), NULL, NULL, NULL, NULL, NULL, NULL) AS "
                                    "jobs GROUP BY 1"));
    free(s);
}
END_TEST

/* A row with every column set: ready 1, in flight 2, delayed 3, oldest 40, redelivered 5, dead
 * 6, dead age 70, max deliveries 8, hold 9, lease 10. */
static struct pgq_row full_row(void)
{
    struct pgq_row r = {.queue = "q"};
    for (int k = 1; k < PGQ_COL_HORIZON; k++) {
        r.has[k] = 1;
        r.v[k] = k == PGQ_COL_OLDEST_AGE || k == PGQ_COL_DEAD_AGE ? k * 10 : k;
    }
    return r;
}

START_TEST(test_emit_job_presets)
{
    static const struct {
        const char *preset;
        int redelivered, dead, maxdel, lease_age, lease_timeout, ahead;
        const char *dlq;
    } cases[] = {
        {"graphile_worker", 1, 1, 1, 1, 1, 1, "failed"},
        {"pg_boss", 1, 1, 1, 1, 1, 0, "failed"},
        {"river", 1, 1, 1, 1, 0, 1, "discarded"},
        {"oban", 1, 1, 1, 1, 0, 1, "discarded"},
        {"que", 1, 1, 0, 0, 0, 0, "expired"},
        {"good_job", 1, 1, 0, 1, 0, 1, "discarded"},
        {"solid_queue", 0, 1, 0, 1, 0, 1, "failed"},
        {"delayed_job", 1, 1, 0, 1, 0, 1, "failed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct pgq_preset *p = queues_preset_find(cases[i].preset);
        ck_assert_ptr_nonnull(p);
        struct metric_set *s = metric_set_new("db", p->kind_label);
        struct pgq_row r = full_row();
        r.has[PGQ_COL_AHEAD] = 1;
        r.v[PGQ_COL_AHEAD] = 12;
        queues_emit_queue(p, &r, NULL, 0, -1.0, s);
        ck_assert(sample_value(s, "qrel_queue_messages", "state", "ready", NULL) == 1);
        /* only where the runner stamps a column qrel reads with a host's clock */
        ck_assert_uint_eq(sample_count(s, "qrel_future_stamped_rows"), (size_t)cases[i].ahead);
        if (cases[i].ahead)
            ck_assert(sample_value(s, "qrel_future_stamped_rows", "queue", "q", NULL) == 12);
        ck_assert(sample_value(s, "qrel_queue_messages", "state", "in_flight", NULL) == 2);
        ck_assert(sample_value(s, "qrel_queue_messages", "state", "delayed", NULL) == 3);
        ck_assert(sample_value(s, "qrel_queue_oldest_message_age_seconds", "queue", "q", NULL) ==
                  40);
        ck_assert_uint_eq(sample_count(s, "qrel_messages_redelivered"),
                          (size_t)cases[i].redelivered);
        ck_assert_uint_eq(sample_count(s, "qrel_max_deliveries"), (size_t)cases[i].maxdel);
        ck_assert_uint_eq(sample_count(s, "qrel_lease_oldest_age_seconds"),
                          (size_t)cases[i].lease_age);
        ck_assert_uint_eq(sample_count(s, "qrel_lease_timeout_seconds"),
                          (size_t)cases[i].lease_timeout);
        ck_assert(sample_value(s, "qrel_dead_letter_messages", "dead_letter_queue", cases[i].dlq,
                               NULL) == 6);
        ck_assert(sample_value(s, "qrel_dead_letter_oldest_age_seconds", "dead_letter_queue",
                               cases[i].dlq, NULL) == 70);
        metric_set_free(s);

        /* Declared values win over (or stand in for) what the table records. */
        s = metric_set_new("db", p->kind_label);
        queues_emit_queue(p, &r, NULL, 4, 45.0, s);
        ck_assert(sample_value(s, "qrel_max_deliveries", "queue", "q", NULL) == 4);
        ck_assert(sample_value(s, "qrel_lease_timeout_seconds", "queue", "q", NULL) == 45);
        metric_set_free(s);
    }
}
END_TEST

/* delayed_job's failed jobs: destroyed as declared; undeclared, seen destroyed when the queue
 * keeps no failed job while some are one failure from the end. */
START_TEST(test_emit_not_kept)
{
    static const struct {
        int declared;
        double dead, last_try, want;
    } cases[] = {
        {1, 0, 0, 1},  {1, 4, 2, 1},  {0, 0, 3, 0},  {0, 0, 0, 0},
        {-1, 0, 2, 1}, {-1, 1, 2, 0}, {-1, 0, 0, 0}, {-1, 3, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct metric_set *s = metric_set_new("db", "pg_jobs");
        struct pgq_row r = full_row();
        r.v[PGQ_COL_DEAD] = cases[i].dead;
        r.has[PGQ_COL_LAST_TRY] = 1;
        r.v[PGQ_COL_LAST_TRY] = cases[i].last_try;
        queues_emit_not_kept(&r, cases[i].declared, s);
        ck_assert_msg(sample_value(s, "qrel_dead_letters_not_kept", "queue", "q", NULL) ==
                          cases[i].want,
                      "case %zu", i);
        metric_set_free(s);
    }
}
END_TEST

START_TEST(test_emit_pgmq)
{
    const struct pgq_preset *p = queues_preset_find("pgmq");
    struct pgq_row r = full_row();
    struct metric_set *s = metric_set_new("db", "pgmq");
    queues_emit_queue(p, &r, NULL, 0, -1.0, s);
    /* The archive is acknowledged history, not dead letters; pgmq keeps no read time, so the
     * hold age needs the declared visibility timeout; it keeps no max reads. */
    ck_assert_uint_eq(sample_count(s, "qrel_dead_letter_messages"), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_dead_letter_oldest_age_seconds"), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_lease_oldest_age_seconds"), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_lease_timeout_seconds"), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_max_deliveries"), 0);
    ck_assert(sample_value(s, "qrel_messages_redelivered", "queue", "q", NULL) == 5);
    metric_set_free(s);

    s = metric_set_new("db", "pgmq");
    queues_emit_queue(p, &r, NULL, 3, 30.0, s);
    ck_assert(sample_value(s, "qrel_lease_oldest_age_seconds", "queue", "q", NULL) == 9);
    ck_assert(sample_value(s, "qrel_lease_timeout_seconds", "queue", "q", NULL) == 30);
    ck_assert(sample_value(s, "qrel_max_deliveries", "queue", "q", NULL) == 3);
    metric_set_free(s);
}
END_TEST

START_TEST(test_emit_empty_queue)
{
    /* An empty queue: the aggregate's ages are NULL; the series say 0, not absent. */
    const struct pgq_preset *p = queues_preset_find("river");
    struct pgq_row r = {.queue = "idle"};
    r.has[PGQ_COL_READY] = r.has[PGQ_COL_IN_FLIGHT] = r.has[PGQ_COL_DELAYED] = 1;
    r.has[PGQ_COL_REDELIVERED] = r.has[PGQ_COL_DEAD] = 1;
    struct metric_set *s = metric_set_new("db", "pg_jobs");
    queues_emit_queue(p, &r, NULL, 0, -1.0, s);
    ck_assert(sample_value(s, "qrel_queue_oldest_message_age_seconds", "queue", "idle", NULL) == 0);
    ck_assert(sample_value(s, "qrel_dead_letter_oldest_age_seconds", "queue", "idle", NULL) == 0);
    ck_assert(sample_value(s, "qrel_lease_oldest_age_seconds", "queue", "idle", NULL) == 0);
    /* no pending job, so no max_attempts to read */
    ck_assert_uint_eq(sample_count(s, "qrel_max_deliveries"), 0);
    metric_set_free(s);
}
END_TEST

START_TEST(test_done_sql)
{
    /* Only the runners that keep finished jobs with their start and end. */
    ck_assert_ptr_null(queues_sql_done(PGQ_GRAPHILE_WORKER, "g", LAYOUT_CURRENT, 0));
    ck_assert_ptr_null(queues_sql_done(PGQ_QUE, "public", LAYOUT_CURRENT, 0));
    ck_assert_ptr_null(queues_sql_done(PGQ_SOLID_QUEUE, "public", LAYOUT_CURRENT, 0));
    ck_assert_ptr_null(queues_sql_done(PGQ_PGMQ, "pgmq", LAYOUT_CURRENT, 0));
    /* the window is bounded by now(): a row stamped in the future is not in it */
    char *s = queues_sql_done(PGQ_PG_BOSS, "pgboss", LAYOUT_BOSS12, 1);
    ck_assert_ptr_nonnull(strstr(s, "WHERE j.state = 'completed' AND j.completed_on > now() - "
                                    "$1::interval AND j.completed_on <= now()) AS done WHERE "
                                    "queue = ANY ($2::text[]) GROUP BY 1"));
    ck_assert_ptr_nonnull(strstr(s, "percentile_cont(ARRAY[0.5, 0.9, 0.99, 1])"));
    free(s);
    s = queues_sql_done(PGQ_PG_BOSS, "pgboss", LAYOUT_BOSS9, 0);
    ck_assert_ptr_nonnull(strstr(s, "completedon <= now()"));
    ck_assert_ptr_null(strstr(s, "$2"));
    free(s);
    s = queues_sql_done(PGQ_OBAN, "public", LAYOUT_CURRENT, 0);
    ck_assert_ptr_nonnull(strstr(s, "completed_at <= timezone('UTC', now())"));
    free(s);
    s = queues_sql_done(PGQ_RIVER, "public", LAYOUT_CURRENT, 0);
    ck_assert_ptr_nonnull(strstr(s, "finalized_at <= now()"));
    free(s);
    s = queues_sql_done(PGQ_GOOD_JOB, "public", LAYOUT_CURRENT, 0);
    ck_assert_ptr_nonnull(strstr(s, "WHERE error IS NULL AND finished_at >"));
    free(s);
}
END_TEST

START_TEST(test_margin_and_latency)
{
    const struct pgq_preset *p = queues_preset_find("pg_boss");
    struct pgq_row r = full_row(); /* in flight 2, hold 9, lease 10 */
    struct pgq_done d = {.has = 1, .n = 7, .q = {1, 2, 4, 5}};
    struct metric_set *s = metric_set_new("db", "pg_jobs");
    queues_emit_queue(p, &r, &d, 0, -1.0, s);
    ck_assert(sample_value(s, "qrel_handler_duration_seconds", "quantile", "0.5", NULL) == 1);
    ck_assert(sample_value(s, "qrel_handler_duration_seconds", "quantile", "0.99", NULL) == 4);
    ck_assert(sample_value(s, "qrel_handler_duration_seconds", "quantile", "1", NULL) == 5);
    /* the hold (9 s) is worse than the p99 (4 s): 10 / 9 */
    ck_assert(fabs(sample_value(s, "qrel_lease_margin_ratio", "queue", "q", NULL) - 10.0 / 9) <
              1e-9);
    ck_assert_uint_eq(sample_count(s, "qrel_retry_horizon_seconds"), 0);
    metric_set_free(s);

    /* nothing held now: the p99 alone; a horizon and a dead-letter queue of the queue's own */
    r.v[PGQ_COL_IN_FLIGHT] = 0;
    r.has[PGQ_COL_HORIZON] = 1;
    r.v[PGQ_COL_HORIZON] = 123;
    r.dlq = "q_dlq";
    s = metric_set_new("db", "pg_jobs");
    queues_emit_queue(p, &r, &d, 0, -1.0, s);
    ck_assert(sample_value(s, "qrel_lease_margin_ratio", "queue", "q", NULL) == 2.5);
    ck_assert(sample_value(s, "qrel_retry_horizon_seconds", "queue", "q", NULL) == 123);
    ck_assert(sample_value(s, "qrel_dead_letter_messages", "dead_letter_queue", "q_dlq", NULL) ==
              6);
    ck_assert_uint_eq(sample_count(s, "qrel_dead_letter_messages"), 1);
    metric_set_free(s);

    /* a heartbeat lease: the handler's length does not count, and with nothing held, no margin */
    r.has[PGQ_COL_HEARTBEAT] = 1;
    r.v[PGQ_COL_HEARTBEAT] = 1;
    s = metric_set_new("db", "pg_jobs");
    queues_emit_queue(p, &r, &d, 0, -1.0, s);
    ck_assert_uint_eq(sample_count(s, "qrel_lease_margin_ratio"), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_handler_duration_seconds"), 4);
    metric_set_free(s);

    /* nothing finished in the window: no quantiles; no lease: no margin */
    struct pgq_done none = {0};
    r = full_row();
    r.has[PGQ_COL_LEASE_TIMEOUT] = 0;
    s = metric_set_new("db", "pg_jobs");
    queues_emit_queue(p, &r, &none, 0, -1.0, s);
    ck_assert_uint_eq(sample_count(s, "qrel_handler_duration_seconds"), 0);
    ck_assert_uint_eq(sample_count(s, "qrel_lease_margin_ratio"), 0);
    metric_set_free(s);

    /* River's and Oban's default backoff (jitter at its upper bound), with a declared lease:
     * 3 deliveries x 60 s + River 1.1 x (1 + 16), Oban 1.1 x (15 + 2) + 1.1 x (15 + 4) */
    ck_assert(fabs(queues_emit_backoff(PGQ_RIVER, 3) - 18.7) < 1e-9);
    ck_assert(fabs(queues_emit_backoff(PGQ_OBAN, 3) - 39.6) < 1e-9);
    ck_assert(queues_emit_backoff(PGQ_OBAN, 1) == 0);
    ck_assert(queues_emit_backoff(PGQ_GOOD_JOB, 3) < 0);
    /* Oban above 20 attempts scales the exponent onto 1..20: with 40, retry n waits
     * 15 + 2^round(n / 2): 1.1 x (39 x 15 + 3 x 2^20 - 4) */
    ck_assert(fabs(queues_emit_backoff(PGQ_OBAN, 40) - 1.1 * (39 * 15 + 3 * 1048576 - 4)) < 1e-6);
    const struct pgq_preset *river = queues_preset_find("river");
    r = full_row();
    r.v[PGQ_COL_MAX_DELIVERIES] = 3;
    s = metric_set_new("db", "pg_jobs");
    queues_emit_queue(river, &r, NULL, 0, 60.0, s);
    ck_assert(fabs(sample_value(s, "qrel_retry_horizon_seconds", "queue", "q", NULL) - 198.7) <
              1e-9);
    metric_set_free(s);
    s = metric_set_new("db", "pg_jobs"); /* no job_timeout: no lease, no horizon */
    queues_emit_queue(river, &r, NULL, 0, -1.0, s);
    ck_assert_uint_eq(sample_count(s, "qrel_retry_horizon_seconds"), 0);
    metric_set_free(s);

    /* below 1 ms counts as 1 ms */
    double m = 0;
    ck_assert_int_eq(queues_emit_margin(2.0, NULL, 0, 1, 0.0, &m), 1);
    ck_assert(m == 2000);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_defaults, 0},
        {test_full, 0},
        {test_errors, 0},
        {test_array_literal, 0},
        {test_jobs_sql, 0},
        {test_delayed_job_sql, 0},
        {test_ahead_sql, 0},
        {test_emit_job_presets, 0},
        {test_emit_not_kept, 0},
        {test_emit_pgmq, 0},
        {test_emit_empty_queue, 0},
        {test_done_sql, 0},
        {test_margin_and_latency, 0},
    };
    return check_run_tests("pg_queues", tests, CHECK_ROWS(tests), 0);
}
