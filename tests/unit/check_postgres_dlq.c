/* check_postgres_dlq.c: unit tests for the pure parts of `qrel dlq` on the PostgreSQL job runners
 * (collectors/postgres/dlq_sql.c, declared in postgres.h): the id_field forms, the replay stamp as
 * the read statement gives it, and the statements' safety-bearing parts (the schema quoted, the
 * row locked while still dead, the copy deleted only when the insert happened, the stamp written
 * only into a JSON object). The statements themselves run against the real runners in
 * tests/integration/dlq_pg_runners.sh. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "postgres/postgres.h"
#include "support/check_run.h"

START_TEST(test_id_field)
{
    enum pgdlq_id k;
    char *path = NULL, why[200];
    ck_assert_int_eq(postgres_dlq_id_field("job:id", &k, &path, why, sizeof why), 0);
    ck_assert_int_eq(k, PGDLQ_ID_JOB);
    ck_assert_ptr_null(path);
    ck_assert_int_eq(postgres_dlq_id_field("job:key", &k, &path, why, sizeof why), 0);
    ck_assert_int_eq(k, PGDLQ_ID_KEY);
    ck_assert_ptr_null(path);
    /* a data key, dotted: a text[] literal for #>> */
    ck_assert_int_eq(postgres_dlq_id_field("order.id", &k, &path, why, sizeof why), 0);
    ck_assert_int_eq(k, PGDLQ_ID_DATA);
    ck_assert_str_eq(path, "{\"order\",\"id\"}");
    free(path);
    ck_assert_int_eq(postgres_dlq_id_field("id", &k, &path, why, sizeof why), 0);
    ck_assert_int_eq(k, PGDLQ_ID_DATA); /* a data key called id, not the job's */
    ck_assert_str_eq(path, "{\"id\"}");
    free(path);
    /* quotes and backslashes are escaped in the literal */
    ck_assert_int_eq(postgres_dlq_id_field("a\"b", &k, &path, why, sizeof why), 0);
    ck_assert_str_eq(path, "{\"a\\\"b\"}");
    free(path);

    ck_assert_int_eq(postgres_dlq_id_field("job:name", &k, &path, why, sizeof why), -1);
    ck_assert_str_eq(why, "want job:id (the job's id) or job:key (its uniqueness key) after "
                          "\"job:\"");
    ck_assert_int_eq(postgres_dlq_id_field("order..id", &k, &path, why, sizeof why), -1);
    ck_assert_str_eq(why, "a key of the job's data with an empty part: want \"order.id\"");
    ck_assert_int_eq(postgres_dlq_id_field(".id", &k, &path, why, sizeof why), -1);
    ck_assert_int_eq(postgres_dlq_id_field("id.", &k, &path, why, sizeof why), -1);
    ck_assert_int_eq(postgres_dlq_id_field("", &k, &path, why, sizeof why), -1);
    ck_assert_str_eq(why, "want job:id, job:key or a key of the job's data");
    ck_assert_ptr_null(path);
}
END_TEST

START_TEST(test_replays)
{
    ck_assert_int_eq(postgres_dlq_replays(NULL), -1); /* data is no object: no stamp */
    ck_assert_int_eq(postgres_dlq_replays("0"), 0);
    ck_assert_int_eq(postgres_dlq_replays("1"), 1);
    ck_assert_int_eq(postgres_dlq_replays("17"), 17);
    ck_assert_int_eq(postgres_dlq_replays("1000000000"), 1000000000);
    /* what someone else wrote under the key: not a count qrel kept */
    ck_assert_int_eq(postgres_dlq_replays("1000000001"), -1);
    ck_assert_int_eq(postgres_dlq_replays("99999999999"), -1);
    ck_assert_int_eq(postgres_dlq_replays("-1"), -1);
    ck_assert_int_eq(postgres_dlq_replays("1.5"), -1);
    ck_assert_int_eq(postgres_dlq_replays("yes"), -1);
    ck_assert_int_eq(postgres_dlq_replays(""), -1);
}
END_TEST

static int has(const char *s, const char *part)
{
    return strstr(s, part) != NULL;
}

START_TEST(test_statements)
{
    char *s = postgres_dlq_read_sql(PGDLQ_BOSS_DEAD_LETTER, "my\"boss");
    ck_assert(has(s, "FROM \"my\"\"boss\".job j WHERE j.name = $1 AND j.source_name = $5 AND "
                     "j.state < 'active'"));
    ck_assert(has(s, "COALESCE(j.data->>'qrel-replayed', '0')"));
    ck_assert(!has(s, "@S"));
    free(s);
    s = postgres_dlq_read_sql(PGDLQ_BOSS_FAILED, "pgboss");
    ck_assert(has(s, "WHERE j.name = $1 AND j.state = 'failed'"));
    free(s);
    s = postgres_dlq_read_sql(PGDLQ_GRAPHILE, "graphile_worker");
    ck_assert(has(s, "q.queue_name IS NOT DISTINCT FROM $1 AND j.attempts >= j.max_attempts"));
    free(s);

    /* the copy is locked while still waiting, and deleted only if its job was inserted */
    s = postgres_dlq_move_sql(PGDLQ_BOSS_DEAD_LETTER, "pgboss");
    ck_assert(has(s, "j.state < 'active' AND j.source_name = $4 FOR UPDATE"));
    ck_assert(has(s, "ON CONFLICT DO NOTHING RETURNING id"));
    ck_assert(has(s, "DELETE FROM \"pgboss\".job x WHERE x.name = $1 AND x.id = $2::uuid AND "
                     "EXISTS (SELECT 1 FROM ins)"));
    ck_assert(has(s, "CASE WHEN $3::int IS NOT NULL AND jsonb_typeof(m.data) = 'object' THEN "
                     "m.data || jsonb_build_object('qrel-replayed', $3::int) ELSE m.data END"));
    free(s);
    /* pg-boss's retry(): a twin holding the key leaves it failed */
    s = postgres_dlq_move_sql(PGDLQ_BOSS_FAILED, "pgboss");
    ck_assert(has(s, "state = 'failed' FOR UPDATE"));
    ck_assert(has(s, "SET state = 'retry', retry_limit = x.retry_limit + 1, completed_on = NULL"));
    ck_assert(has(s, "NOT EXISTS (SELECT 1 FROM t)"));
    free(s);
    ck_assert_ptr_null(postgres_dlq_move_sql(PGDLQ_GRAPHILE, "graphile_worker"));

    s = postgres_dlq_graphile_sql(PGDLQ_G_LOCK, "gw");
    ck_assert(has(s, "FROM \"gw\"._private_jobs j WHERE j.id = $1::bigint AND j.attempts >= "
                     "j.max_attempts"));
    ck_assert(has(s, " FOR UPDATE"));
    free(s);
    s = postgres_dlq_graphile_sql(PGDLQ_G_STAMP, "gw");
    ck_assert(has(s, "json_typeof(payload) = 'object'"));
    free(s);
    s = postgres_dlq_graphile_sql(PGDLQ_G_RESCHEDULE, "gw");
    ck_assert_str_eq(s, "SELECT count(*) FROM \"gw\".reschedule_jobs(ARRAY[$1::bigint], run_at "
                        ":= now(), attempts := 0)");
    free(s);
}
END_TEST

/* River, Oban, Que, GoodJob, Solid Queue: each read takes only the runner's dead jobs of the
 * queue, each move locks the row while still dead and does what the runner's retry does. */
START_TEST(test_runners)
{
    char *s = postgres_dlq_runner_sql(PGDLQ_RIVER, 0, "r\"s");
    ck_assert(has(s, "FROM \"r\"\"s\".river_job j WHERE j.queue = $1 AND j.state = 'discarded'"));
    ck_assert(has(s, "COALESCE(j.args->>'qrel-replayed', '0')"));
    ck_assert(!has(s, "@S"));
    free(s);
    s = postgres_dlq_runner_sql(PGDLQ_RIVER, 1, "public");
    ck_assert(has(s, "WHERE queue = $1 AND id = $2::bigint AND state = 'discarded' FOR UPDATE"));
    ck_assert(has(s, "state = 'available', scheduled_at = now(), finalized_at = NULL, "
                     "max_attempts = CASE WHEN x.attempt >= x.max_attempts THEN x.attempt + 1"));
    ck_assert(has(s, "args = CASE WHEN $3::int IS NOT NULL AND jsonb_typeof(x.args) = 'object'"));
    free(s);

    s = postgres_dlq_runner_sql(PGDLQ_OBAN, 0, "public");
    ck_assert(has(s, "oban_jobs j WHERE j.queue = $1 AND j.state = 'discarded'"));
    free(s);
    s = postgres_dlq_runner_sql(PGDLQ_OBAN, 1, "public");
    ck_assert(has(s, "state = 'discarded' FOR UPDATE"));
    ck_assert(has(s, "max_attempts = GREATEST(x.max_attempts, x.attempt + 1), completed_at = "
                     "NULL, discarded_at = NULL, cancelled_at = NULL"));
    free(s);

    /* Que: the stamp in data (an object), never in args (the job's arguments, an array) */
    s = postgres_dlq_runner_sql(PGDLQ_QUE, 0, "public");
    ck_assert(has(s, "j.expired_at IS NOT NULL AND j.finished_at IS NULL"));
    ck_assert(has(s, "COALESCE(j.data->>'qrel-replayed', '0')"));
    free(s);
    s = postgres_dlq_runner_sql(PGDLQ_QUE, 1, "public");
    ck_assert(has(s, "SET expired_at = NULL, run_at = now(), data = CASE"));
    ck_assert(!has(s, "error_count"));
    ck_assert(!has(s, "args"));
    free(s);

    s = postgres_dlq_runner_sql(PGDLQ_GOOD_JOB, 0, "public");
    ck_assert(has(s, "j.finished_at IS NOT NULL AND j.error IS NOT NULL"));
    free(s);
    s = postgres_dlq_runner_sql(PGDLQ_GOOD_JOB, 1, "public");
    ck_assert(has(s, "id = $2::uuid AND finished_at IS NOT NULL AND error IS NOT NULL FOR UPDATE"));
    ck_assert(has(s, "SET finished_at = NULL, performed_at = NULL, locked_at = NULL"));
    ck_assert(has(s, "error_event = 3, serialized_params = CASE"));
    ck_assert(
        has(s, "'{executions}', to_jsonb((x.serialized_params->'executions')::numeric + 1))"));
    free(s);

    /* Solid Queue: no stamp read; the failed execution deleted only for a job without a
     * concurrency key, and the ready one inserted from what was deleted */
    s = postgres_dlq_runner_sql(PGDLQ_SOLID_QUEUE, 0, "public");
    ck_assert(has(s, "NULL::text, COALESCE(octet_length(j.arguments), 0)"));
    free(s);
    s = postgres_dlq_runner_sql(PGDLQ_SOLID_QUEUE, 1, "public");
    ck_assert(has(s, "FOR UPDATE OF f"));
    ck_assert(has(s, "AND f.concurrency_key IS NULL RETURNING"));
    ck_assert(has(s, "SELECT job_id, queue_name, priority, timezone('UTC', now()) FROM d"));
    ck_assert(!has(s, "$3"));
    free(s);

    ck_assert_ptr_null(postgres_dlq_runner_sql(PGDLQ_GRAPHILE, 0, "public"));
    ck_assert_ptr_null(postgres_dlq_runner_sql(PGDLQ_BOSS_FAILED, 1, "public"));
}
END_TEST

/* pg-boss 9, 10 and 11: each release's own way back (collectors/postgres/dlq_sql.c). */
START_TEST(test_boss_releases)
{
    /* 9: failed and expired jobs, resume()d; no dead-letter queue */
    char *s = postgres_dlq_boss_sql(9, PGDLQ_BOSS_FAILED, 0, "b9");
    ck_assert(has(s, "FROM \"b9\".job j WHERE j.name = $1 AND j.state IN ('failed', 'expired')"));
    ck_assert(has(s, "j.retrycount::int8 + 1, date_part('epoch', j.completedon)"));
    free(s);
    s = postgres_dlq_boss_sql(9, PGDLQ_BOSS_FAILED, 1, "b9");
    ck_assert(has(s, "state IN ('failed', 'expired') FOR UPDATE"));
    ck_assert(has(s, "SET state = 'created', completedon = NULL, data = CASE"));
    ck_assert(has(s, "x.singletonkey NOT LIKE '\\_\\_pgboss\\_\\_singleton\\_queue%' AND "
                     "x.state < 'completed'"));
    ck_assert(has(s, "x.singletonkey IS NOT DISTINCT FROM j.k AND x.state < 'expired'"));
    ck_assert(!has(s, "retrylimit"));
    free(s);
    ck_assert_ptr_null(postgres_dlq_boss_sql(9, PGDLQ_BOSS_DEAD_LETTER, 0, "b9"));

    /* 10 and 11: retry() as theirs, completed_on cleared, start_after left */
    s = postgres_dlq_boss_sql(10, PGDLQ_BOSS_FAILED, 1, "b10");
    ck_assert(has(s, "SET state = 'retry', retry_limit = x.retry_limit + 1, completed_on = NULL, "
                     "data = CASE"));
    ck_assert(!has(s, "start_after"));
    free(s);
    s = postgres_dlq_boss_sql(11, PGDLQ_BOSS_FAILED, 0, "b11");
    ck_assert(has(s, "WHERE j.name = $1 AND j.state = 'failed'"));
    free(s);

    /* a copy: every waiting job of the dead-letter queue (no source_name before 12) */
    s = postgres_dlq_boss_sql(10, PGDLQ_BOSS_DEAD_LETTER, 0, "b10");
    ck_assert(has(s, "j.retry_limit::int8 + 1, date_part('epoch', j.created_on)"));
    ck_assert(has(s, "WHERE j.name = $1 AND j.state < 'active' AND $5::text IS NOT NULL"));
    ck_assert(!has(s, "source_name"));
    free(s);
    s = postgres_dlq_boss_sql(11, PGDLQ_BOSS_DEAD_LETTER, 0, "b11");
    ck_assert(has(s, "-1::int8, date_part('epoch', j.created_on)"));
    free(s);
    /* ... inserted as that release's send() would, deleted only if inserted */
    s = postgres_dlq_boss_sql(10, PGDLQ_BOSS_DEAD_LETTER, 1, "b10");
    ck_assert(has(s, "policy, keep_until, expire_in) SELECT gen_random_uuid(), q.name"));
    ck_assert(has(s, "COALESCE(q.retry_limit, 2)"));
    ck_assert(has(s, "COALESCE(q.expire_seconds, 900) * interval '1s' FROM m, q ON CONFLICT DO "
                     "NOTHING RETURNING id"));
    ck_assert(has(s, "AND EXISTS (SELECT 1 FROM ins)"));
    free(s);
    s = postgres_dlq_boss_sql(11, PGDLQ_BOSS_DEAD_LETTER, 1, "b11");
    ck_assert(has(s, "expire_seconds, deletion_seconds, retry_delay_max) SELECT"));
    ck_assert(has(s, "now() + q.retention_seconds * interval '1s', q.expire_seconds"));
    ck_assert(has(s, "q.policy = 'exclusive' AND k.state IN ('created', 'retry', 'active')"));
    free(s);

    /* 12 is the statements above; another mode has none */
    char *a = postgres_dlq_boss_sql(12, PGDLQ_BOSS_DEAD_LETTER, 1, "pgboss");
    char *b = postgres_dlq_move_sql(PGDLQ_BOSS_DEAD_LETTER, "pgboss");
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    ck_assert_ptr_null(postgres_dlq_boss_sql(10, PGDLQ_GRAPHILE, 0, "pgboss"));
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_id_field, 0}, {test_replays, 0},       {test_statements, 0},
        {test_runners, 0},  {test_boss_releases, 0},
    };
    return check_run_tests("pg_dlq", tests, CHECK_ROWS(tests), 0);
}
