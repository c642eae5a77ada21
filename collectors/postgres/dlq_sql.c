/* postgres/dlq_sql.c: the pure parts of `qrel dlq` on the PostgreSQL job runners (postgres.h):
 * where a dead job carries its work id, what its replay stamp says, and every statement, built
 * with the runner's schema quoted in. No I/O; dlq.c runs them.
 *
 * The moves follow each runner's own documented way back, so that the runner's bookkeeping stays
 * its own: pg-boss 12's retry() for a failed job (state retry, one more retry allowed), its
 * redrive() for a copy in a dead_letter queue (a fresh job on the origin from the origin queue's
 * settings, the copy deleted, ON CONFLICT DO NOTHING against the queue's unique indexes), and
 * graphile-worker's reschedule_jobs(attempts := 0, run_at := now()). Each is one statement
 * (pg-boss) or one transaction (graphile-worker): the job is back if and only if it left the dead
 * ones.
 *
 * The stamp is a key "qrel-replayed" of the job's data / payload, the one place both runners copy
 * whole through a retry and into a dead-letter copy (pg-boss's output is overwritten by the next
 * run, and graphile-worker keeps nothing else per job); data that is no JSON object is not
 * stamped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres.h"
#include "alloc.h"
#include "buf.h"
#include "common/pg.h"
#include "dlq_kind.h"

int postgres_dlq_id_field(const char *id_field, enum pgdlq_id *kind, char **path, char *why,
                          size_t cap)
{
    *path = NULL;
    if (!id_field || !*id_field) {
        snprintf(why, cap, "want job:id, job:key or a key of the job's data");
        return -1;
    }
    if (strncmp(id_field, "job:", 4) == 0) {
        if (strcmp(id_field + 4, "id") == 0) {
            *kind = PGDLQ_ID_JOB;
            return 0;
        }
        if (strcmp(id_field + 4, "key") == 0) {
            *kind = PGDLQ_ID_KEY;
            return 0;
        }
        snprintf(why, cap,
                 "want job:id (the job's id) or job:key (its uniqueness key) after "
                 "\"job:\"");
        return -1;
    }
    /* a dotted key: no empty part */
    size_t n = 0;
    const char *s = id_field;
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        if (len == 0) {
            snprintf(why, cap, "a key of the job's data with an empty part: want \"order.id\"");
            return -1;
        }
        n++;
        if (!dot)
            break;
        s = dot + 1;
    }
    const char **parts = xcalloc(n, sizeof *parts);
    char *copy = xstrdup(id_field);
    size_t i = 0;
    for (char *p = copy, *dot; p; p = dot ? dot + 1 : NULL) {
        dot = strchr(p, '.');
        if (dot)
            *dot = '\0';
        parts[i++] = p;
    }
    *path = pg_text_array(parts, n);
    free(parts);
    free(copy);
    *kind = PGDLQ_ID_DATA;
    return 0;
}

long long postgres_dlq_replays(const char *cell)
{
    if (!cell)
        return -1;
    if (!*cell || strlen(cell) > 10)
        return -1;
    long long v = 0;
    for (const char *p = cell; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v <= 1000000000LL ? v : -1;
}

/* template with every @S replaced by the quoted schema */
static char *with_schema(const char *tmpl, const char *schema)
{
    char *qs = pg_quote_ident(schema);
    struct buf b;
    buf_init(&b);
    for (const char *p = tmpl; *p;) {
        const char *at = strstr(p, "@S");
        if (!at) {
            buf_puts(&b, p);
            break;
        }
        buf_printf(&b, "%.*s%s", (int)(at - p), p, qs);
        p = at + 2;
    }
    free(qs);
    return buf_steal(&b);
}

/* clang-format off */
/* The work id of a job: its id, its key, or the string or number at the data path. */
#define WORK_ID(key, data, type_fn)                                                               \
    "CASE $4::text WHEN 'id' THEN j.id::text WHEN 'key' THEN " key " "                            \
    "ELSE CASE WHEN " type_fn "(" data " #> $3::text[]) IN ('string', 'number') "                 \
    "THEN " data " #>> $3::text[] END END"
/* The stamp a read reports: NULL when the data is no object. */
#define STAMP_READ(data, type_fn)                                                                 \
    "CASE WHEN " type_fn "(" data ") = 'object' "                                                 \
    "THEN COALESCE(" data "->>'" DLQ_STAMP "', '0') END"

static const char boss_failed_read[] =
    "SELECT j.id::text, " WORK_ID("j.singleton_key", "j.data", "jsonb_typeof") ", "
    "j.retry_count::int8 + 1, date_part('epoch', j.completed_on), "
    STAMP_READ("j.data", "jsonb_typeof") ", "
    "COALESCE(octet_length(j.data::text), 0), count(*) OVER () "
    "FROM @S.job j WHERE j.name = $1 AND j.state = 'failed' "
    "ORDER BY j.completed_on, j.id LIMIT $2::int8";

/* Waiting copies only (state created or retry), as pg-boss's redrive() takes them: one the dead
 * letter queue's own workers started is theirs. */
static const char boss_dead_letter_read[] =
    "SELECT j.id::text, " WORK_ID("j.singleton_key", "j.data", "jsonb_typeof") ", "
    "CASE WHEN j.source_retry_count IS NULL THEN -1 ELSE j.source_retry_count::int8 + 1 END, "
    "date_part('epoch', j.created_on), "
    STAMP_READ("j.data", "jsonb_typeof") ", "
    "COALESCE(octet_length(j.data::text), 0), count(*) OVER () "
    "FROM @S.job j WHERE j.name = $1 AND j.source_name = $5 AND j.state < 'active' "
    "ORDER BY j.created_on, j.id LIMIT $2::int8";

/* Dead as the scrape counts it: attempts used up, not locked (or locked longer than the 4 h
 * after which graphile-worker takes a lock for abandoned). */
#define GRAPHILE_DEAD                                                                             \
    "j.attempts >= j.max_attempts AND "                                                           \
    "(j.locked_at IS NULL OR j.locked_at < now() - interval '4 hours')"

static const char graphile_read[] =
    "SELECT j.id::text, " WORK_ID("j.key", "j.payload", "json_typeof") ", "
    "j.attempts::int8, date_part('epoch', j.updated_at), "
    STAMP_READ("j.payload", "json_typeof") ", "
    "COALESCE(octet_length(j.payload::text), 0), count(*) OVER () "
    "FROM @S._private_jobs j LEFT JOIN @S._private_job_queues q ON q.id = j.job_queue_id "
    "WHERE q.queue_name IS NOT DISTINCT FROM $1 AND " GRAPHILE_DEAD " "
    "ORDER BY j.updated_at, j.id LIMIT $2::int8";
/* clang-format on */

char *postgres_dlq_read_sql(enum pgdlq_mode m, const char *schema)
{
    return with_schema(m == PGDLQ_BOSS_FAILED        ? boss_failed_read
                       : m == PGDLQ_BOSS_DEAD_LETTER ? boss_dead_letter_read
                                                     : graphile_read,
                       schema);
}

/* clang-format off */
/* The stamped data: replays + 1 under the stamp key when the data is an object and $3 is set. */
#define STAMPED(data)                                                                             \
    "CASE WHEN $3::int IS NOT NULL AND jsonb_typeof(" data ") = 'object' "                        \
    "THEN " data " || jsonb_build_object('" DLQ_STAMP "', $3::int) ELSE " data " END"

/* pg-boss's retry(): the failed job goes to state retry with one retry more, start_after now at
 * the earliest. Its unique indexes that a retrying job enters are the exclusive policy's (one job
 * per key from created to active) and the stately one's (one per key and state): a twin there
 * leaves it failed, and the statement says which twin. */
#define BOSS_FAILED_MOVE(set)                                                                     \
    "WITH j AS (SELECT id, name, policy, singleton_key FROM @S.job "                              \
    "WHERE name = $1 AND id = $2::uuid AND state = 'failed' FOR UPDATE), "                        \
    "t AS (SELECT k.id::text AS id, k.state::text AS state FROM @S.job k, j "                     \
    "WHERE k.name = j.name AND k.id <> j.id AND j.policy IN ('exclusive', 'stately') "            \
    "AND COALESCE(k.singleton_key, '') = COALESCE(j.singleton_key, '') "                         \
    "AND k.state IN ('created', 'retry', 'active') "                                              \
    "AND (j.policy = 'exclusive' OR k.state = 'retry') LIMIT 1), "                                \
    "u AS (UPDATE @S.job x SET state = 'retry', retry_limit = x.retry_limit + 1, "                \
    "completed_on = NULL, " set "data = " STAMPED("x.data") " "                                   \
    "FROM j WHERE x.name = j.name AND x.id = j.id AND NOT EXISTS (SELECT 1 FROM t) RETURNING 1) " \
    "SELECT (SELECT count(*) FROM j), (SELECT count(*) FROM u), (SELECT id FROM t), "             \
    "(SELECT state FROM t), (SELECT policy FROM j), (SELECT singleton_key FROM j)"
static const char boss_failed_move[] =
    BOSS_FAILED_MOVE("start_after = GREATEST(x.start_after, now()), ");

/* pg-boss's redrive() for one copy: a new job on the origin with the origin queue's settings as
 * they are now (its id fresh, source_root_id carried on), inserted ON CONFLICT DO NOTHING, and the
 * copy deleted only when the insert happened. */
static const char boss_dead_letter_move[] =
    "WITH m AS (SELECT j.* FROM @S.job j WHERE j.name = $1 AND j.id = $2::uuid "
    "AND j.state < 'active' AND j.source_name = $4 FOR UPDATE), "
    "q AS (SELECT * FROM @S.queue WHERE name = $4), "
    "t AS (SELECT k.id::text AS id, k.state::text AS state FROM @S.job k, m "
    "WHERE k.name = $4 AND k.singleton_key = m.singleton_key AND k.state < 'completed' LIMIT 1), "
    "ins AS (INSERT INTO @S.job (id, name, data, priority, retry_limit, retry_backoff, "
    "retry_delay, retry_delay_max, expire_seconds, start_after, created_on, keep_until, "
    "deletion_seconds, policy, singleton_key, group_id, group_tier, heartbeat_seconds, "
    "dead_letter, source_root_id, trace_context) "
    "SELECT gen_random_uuid(), q.name, " STAMPED("m.data") ", m.priority, q.retry_limit, "
    "q.retry_backoff, q.retry_delay, q.retry_delay_max, q.expire_seconds, now(), now(), "
    "now() + q.retention_seconds * interval '1s', q.deletion_seconds, q.policy, "
    "m.singleton_key, m.group_id, m.group_tier, q.heartbeat_seconds, q.dead_letter, "
    "COALESCE(m.source_root_id, m.source_id), m.trace_context FROM m, q "
    "ON CONFLICT DO NOTHING RETURNING id), "
    "d AS (DELETE FROM @S.job x WHERE x.name = $1 AND x.id = $2::uuid "
    "AND EXISTS (SELECT 1 FROM ins) RETURNING 1) "
    "SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM d), (SELECT id FROM t), "
    "(SELECT state FROM t), (SELECT policy FROM q), (SELECT singleton_key FROM m), "
    "(SELECT count(*) FROM q), (SELECT count(*) FROM ins)";
/* clang-format on */

char *postgres_dlq_move_sql(enum pgdlq_mode m, const char *schema)
{
    if (m == PGDLQ_GRAPHILE)
        return NULL;
    return with_schema(m == PGDLQ_BOSS_FAILED ? boss_failed_move : boss_dead_letter_move, schema);
}

/* ---- pg-boss 9, 10 and 11: each release's own way back ----
 *
 * Read from each release's src/plans.js (9.0.3, 10.4.2, 11.1.2, the versions the tests run).
 * pg-boss 9 has no queue table and no dead-letter queue: its dead jobs are its failed and expired
 * ones, and its resume() is the only call that takes a job back (state created, completedOn
 * cleared; retryCount is kept, so the job runs once more). 10 and 11 keep a failed job failed in
 * its queue and, when the queue names a dead_letter queue, insert a bare copy there (name, data,
 * output and retry settings: no singleton key, no link to the original); they have retry() for
 * a failed job and no redrive(). So: a failed job goes back as their retry() does it (state retry,
 * one retry more), a copy goes back as a send() to the origin queue would insert it (the queue's
 * settings as they are now, the release's defaults where a column is NULL), the copy deleted only
 * when that insert happened. 10's and 11's retry() leave completed_on set, which their
 * maintenance reads (10 archives a retrying job by it, 11 deletes one by it), so the move clears
 * it, as 12's retry() does. */
/* clang-format off */
/* pg-boss 9's job states are ordered created < retry < active < completed < expired < cancelled
 * < failed; its unique indexes hold a key while the job is below completed (singletonKey), below
 * active (a singleton-queue key), below expired (singletonOn slots). */
#define BOSS9_SQ "'\\_\\_pgboss\\_\\_singleton\\_queue%'"
static const char boss9_read[] =
    "SELECT j.id::text, " WORK_ID("j.singletonkey", "j.data", "jsonb_typeof") ", "
    "j.retrycount::int8 + 1, date_part('epoch', j.completedon), "
    STAMP_READ("j.data", "jsonb_typeof") ", "
    "COALESCE(octet_length(j.data::text), 0), count(*) OVER () "
    "FROM @S.job j WHERE j.name = $1 AND j.state IN ('failed', 'expired') "
    "ORDER BY j.completedon, j.id LIMIT $2::int8";
/* resume(): a twin that one of the unique indexes would see leaves it dead; the policy column
 * names the index. */
static const char boss9_move[] =
    "WITH j AS (SELECT id, name, singletonkey AS k, singletonon AS o FROM @S.job "
    "WHERE name = $1 AND id = $2::uuid AND state IN ('failed', 'expired') FOR UPDATE), "
    "t AS (SELECT x.id::text AS id, x.state::text AS state FROM @S.job x, j "
    "WHERE x.name = j.name AND x.id <> j.id AND ("
    "(j.o IS NULL AND j.k NOT LIKE " BOSS9_SQ " AND x.singletonon IS NULL "
    "AND x.singletonkey = j.k AND x.singletonkey NOT LIKE " BOSS9_SQ " AND x.state < 'completed') "
    "OR (j.o IS NULL AND j.k LIKE " BOSS9_SQ " AND x.singletonon IS NULL "
    "AND x.singletonkey = j.k AND x.state < 'active') "
    "OR (j.o IS NOT NULL AND x.singletonon = j.o AND x.singletonkey IS NOT DISTINCT FROM j.k "
    "AND x.state < 'expired')) LIMIT 1), "
    "u AS (UPDATE @S.job x SET state = 'created', completedon = NULL, data = " STAMPED("x.data") " "
    "FROM j WHERE x.id = j.id AND NOT EXISTS (SELECT 1 FROM t) RETURNING 1) "
    "SELECT (SELECT count(*) FROM j), (SELECT count(*) FROM u), (SELECT id FROM t), "
    "(SELECT state FROM t), (SELECT CASE WHEN o IS NOT NULL THEN 'singletonOn' "
    "WHEN k LIKE " BOSS9_SQ " THEN 'singleton queue' ELSE 'singletonKey' END FROM j), "
    "(SELECT k FROM j)";

/* 10 and 11's retry(), and completed_on cleared (above). The unique indexes a job entering state
 * retry can meet: stately's (one per key and state) in both, exclusive's (one per key from created
 * to active) in 11; 10 has no exclusive policy. */
static const char boss10_failed_move[] = BOSS_FAILED_MOVE("");

/* A copy waiting in the dead_letter queue: every waiting job there, as the scrape counts them
 * (a copy does not say which queue it came from; $5 is named only so that it has a type).
 * Deliveries: 10 copies the original's retry_limit, which a job has used up when it fails for
 * good (retry_limit + 1 runs); 11 gives the copy the dead-letter queue's: unknown. */
#define BOSS_COPY_READ(deliveries)                                                                \
    "SELECT j.id::text, " WORK_ID("j.singleton_key", "j.data", "jsonb_typeof") ", "               \
    deliveries ", date_part('epoch', j.created_on), "                                     \
    STAMP_READ("j.data", "jsonb_typeof") ", "                                                     \
    "COALESCE(octet_length(j.data::text), 0), count(*) OVER () "                                  \
    "FROM @S.job j WHERE j.name = $1 AND j.state < 'active' AND $5::text IS NOT NULL "            \
    "ORDER BY j.created_on, j.id LIMIT $2::int8"
static const char boss10_copy_read[] = BOSS_COPY_READ("j.retry_limit::int8 + 1");
static const char boss11_copy_read[] = BOSS_COPY_READ("-1::int8");

/* The copy's way back: a new job on the origin as the release's send() inserts it, the copy
 * deleted only when the insert happened (ON CONFLICT DO NOTHING against the origin's unique
 * indexes: short's and stately's hold a key in state created, 11's exclusive from created to
 * active). */
#define BOSS_COPY_MOVE(columns, values)                                                           \
    "WITH m AS (SELECT j.* FROM @S.job j WHERE j.name = $1 AND j.id = $2::uuid "                  \
    "AND j.state < 'active' FOR UPDATE), "                                                        \
    "q AS (SELECT * FROM @S.queue WHERE name = $4), "                                             \
    "t AS (SELECT k.id::text AS id, k.state::text AS state FROM @S.job k, m, q "                  \
    "WHERE k.name = $4 AND COALESCE(k.singleton_key, '') = COALESCE(m.singleton_key, '') "        \
    "AND ((q.policy IN ('short', 'stately') AND k.state = 'created') OR (q.policy = 'exclusive' " \
    "AND k.state IN ('created', 'retry', 'active'))) LIMIT 1), "                                  \
    "ins AS (INSERT INTO @S.job (id, name, data, priority, start_after, singleton_key, "          \
    "dead_letter, retry_limit, retry_delay, retry_backoff, policy, keep_until, " columns ") "     \
    "SELECT gen_random_uuid(), q.name, " STAMPED("m.data") ", m.priority, now(), "                \
    "m.singleton_key, q.dead_letter, " values " FROM m, q ON CONFLICT DO NOTHING RETURNING id), " \
    "d AS (DELETE FROM @S.job x WHERE x.name = $1 AND x.id = $2::uuid "                           \
    "AND EXISTS (SELECT 1 FROM ins) RETURNING 1) "                                                \
    "SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM d), (SELECT id FROM t), "             \
    "(SELECT state FROM t), (SELECT policy FROM q), (SELECT singleton_key FROM m), "              \
    "(SELECT count(*) FROM q), (SELECT count(*) FROM ins)"
/* 10's insertJob: the queue's columns may be NULL: 2 retries, no delay, 15 minutes, 14 days. */
static const char boss10_copy_move[] = BOSS_COPY_MOVE(
    "expire_in",
    "COALESCE(q.retry_limit, 2), CASE WHEN COALESCE(q.retry_backoff, false) "
    "THEN GREATEST(COALESCE(q.retry_delay, 0), 1) ELSE COALESCE(q.retry_delay, 0) END, "
    "COALESCE(q.retry_backoff, false), q.policy, "
    "now() + COALESCE(q.retention_minutes * 60, 1209600) * interval '1s', "
    "COALESCE(q.expire_seconds, 900) * interval '1s'");
/* 11's insertJobs: the queue's columns are NOT NULL but the backoff cap. */
static const char boss11_copy_move[] = BOSS_COPY_MOVE(
    "expire_seconds, deletion_seconds, retry_delay_max",
    "q.retry_limit, q.retry_delay, q.retry_backoff, q.policy, "
    "now() + q.retention_seconds * interval '1s', q.expire_seconds, q.deletion_seconds, "
    "q.retry_delay_max");
/* clang-format on */

char *postgres_dlq_boss_sql(int version, enum pgdlq_mode m, int move, const char *schema)
{
    if (m != PGDLQ_BOSS_FAILED && m != PGDLQ_BOSS_DEAD_LETTER)
        return NULL;
    if (version == 12)
        return move ? postgres_dlq_move_sql(m, schema) : postgres_dlq_read_sql(m, schema);
    const char *t = NULL;
    if (version == 9)
        t = m == PGDLQ_BOSS_FAILED ? (move ? boss9_move : boss9_read) : NULL;
    else if ((version == 10 || version == 11) && m == PGDLQ_BOSS_FAILED)
        t = move ? boss10_failed_move : boss_failed_read;
    else if (version == 10)
        t = move ? boss10_copy_move : boss10_copy_read;
    else if (version == 11)
        t = move ? boss11_copy_move : boss11_copy_read;
    return t ? with_schema(t, schema) : NULL;
}

char *postgres_dlq_graphile_sql(enum pgdlq_graphile_step s, const char *schema)
{
    static const char lock[] =
        "SELECT 1 FROM @S._private_jobs j WHERE j.id = $1::bigint AND " GRAPHILE_DEAD " FOR UPDATE";
    static const char stamp[] = "UPDATE @S._private_jobs SET payload = (payload::jsonb || "
                                "jsonb_build_object('" DLQ_STAMP "', $2::int))::json WHERE id = "
                                "$1::bigint AND json_typeof(payload) = 'object'";
    static const char reschedule[] = "SELECT count(*) FROM @S.reschedule_jobs(ARRAY[$1::bigint], "
                                     "run_at := now(), attempts := 0)";
    return with_schema(s == PGDLQ_G_LOCK ? lock : s == PGDLQ_G_STAMP ? stamp : reschedule, schema);
}

/* ---- River, Oban, Que, GoodJob, Solid Queue: one read, one move statement each ----
 *
 * Written from the schema fixtures (tests/fixtures/postgres/queues) and each runner's documented
 * retry; no live runner checks them here (docs/dlq.md). Every move locks the dead row FOR UPDATE
 * in its first CTE while it is still dead, so a concurrent replay waits and then finds it gone;
 * columns: found, moved, and for Solid Queue the job's concurrency_key. */
/* clang-format off */
#define RUNNER_READ(key, ids, data, deliveries, since, stamp, from_where, order)                  \
    "SELECT j.id::text, " WORK_ID(key, ids, "jsonb_typeof") ", " deliveries "::int8, "            \
    "date_part('epoch', " since "), " stamp ", "                                          \
    "COALESCE(octet_length(" data "::text), 0), count(*) OVER () FROM " from_where " "            \
    "ORDER BY " order ", j.id LIMIT $2::int8"

/* River: its discarded jobs; the work key is the unique_key in hex. */
static const char river_read[] = RUNNER_READ(
    "encode(j.unique_key, 'hex')", "j.args", "j.args", "j.attempt", "j.finalized_at",
    STAMP_READ("j.args", "jsonb_typeof"),
    "@S.river_job j WHERE j.queue = $1 AND j.state = 'discarded'", "j.finalized_at");
/* Oban: its discarded jobs (Ecto's UTC `timestamp`: date_part reads it as UTC). */
static const char oban_read[] = RUNNER_READ(
    "NULL::text", "j.args", "j.args", "j.attempt", "j.discarded_at",
    STAMP_READ("j.args", "jsonb_typeof"),
    "@S.oban_jobs j WHERE j.queue = $1 AND j.state = 'discarded'", "j.discarded_at");
/* Que: its expired jobs; each failed run counted in error_count. The work id is read from args
 * (the job's positional arguments, an array: id_field "0" is the first), the stamp is kept in
 * data (the object Que keeps for tags), so the job's arguments are never changed. */
static const char que_read[] = RUNNER_READ(
    "NULL::text", "j.args", "j.data", "j.error_count", "j.expired_at",
    STAMP_READ("j.data", "jsonb_typeof"),
    "@S.que_jobs j WHERE j.queue = $1 AND j.expired_at IS NOT NULL AND j.finished_at IS NULL",
    "j.expired_at");
/* GoodJob: finished with an error (its discarded scope); key: the concurrency key. */
static const char good_job_read[] = RUNNER_READ(
    "j.concurrency_key", "j.serialized_params", "j.serialized_params", "j.executions_count",
    "j.finished_at",
    STAMP_READ("j.serialized_params", "jsonb_typeof"),
    "@S.good_jobs j WHERE j.queue_name = $1 AND j.finished_at IS NOT NULL AND j.error IS NOT NULL",
    "j.finished_at");
/* Solid Queue: the jobs with a failed execution; no attempt count (a retry is a new Active Job
 * execution), and no stamp: arguments is text Rails wrote, which PostgreSQL 15 cannot test for
 * JSON without failing the statement on a job that holds none (docs/dlq.md). For the same reason
 * a data key gives no work id ($3 named only so that it has a type): job:id or job:key. */
static const char solid_queue_read[] =
    "SELECT j.id::text, CASE $4::text WHEN 'id' THEN j.id::text WHEN 'key' THEN j.concurrency_key "
    "ELSE CASE WHEN $3::text[] IS NULL THEN NULL END END, "
    "NULL::int8, date_part('epoch', f.created_at), NULL::text, "
    "COALESCE(octet_length(j.arguments), 0), count(*) OVER () "
    "FROM @S.solid_queue_failed_executions f JOIN @S.solid_queue_jobs j ON j.id = f.job_id "
    "WHERE j.queue_name = $1 ORDER BY f.created_at, j.id LIMIT $2::int8";

#define RUNNER_MOVE(table, lock_where, set)                                                       \
    "WITH j AS (SELECT id FROM @S." table " WHERE " lock_where " FOR UPDATE), "                   \
    "u AS (UPDATE @S." table " x SET " set " FROM j WHERE x.id = j.id RETURNING 1) "              \
    "SELECT (SELECT count(*) FROM j), (SELECT count(*) FROM u)"

/* River's JobRetry: available now, finalized_at cleared, one attempt more when none is left. */
static const char river_move[] = RUNNER_MOVE(
    "river_job", "queue = $1 AND id = $2::bigint AND state = 'discarded'",
    "state = 'available', scheduled_at = now(), finalized_at = NULL, "
    "max_attempts = CASE WHEN x.attempt >= x.max_attempts THEN x.attempt + 1 "
    "ELSE x.max_attempts END, args = " STAMPED("x.args"));
/* Oban's retry_job (Oban.Engines.Basic): available now, max_attempts at least attempt + 1, the
 * completed / discarded / cancelled times cleared. */
static const char oban_move[] = RUNNER_MOVE(
    "oban_jobs", "queue = $1 AND id = $2::bigint AND state = 'discarded'",
    "state = 'available', scheduled_at = timezone('UTC', now()), "
    "max_attempts = GREATEST(x.max_attempts, x.attempt + 1), completed_at = NULL, "
    "discarded_at = NULL, cancelled_at = NULL, args = " STAMPED("x.args"));
/* Que: expired_at cleared, run_at now, error_count kept (Que has no retry call for an expired
 * job; its own retry of a failed run sets run_at and keeps the row). */
static const char que_move[] = RUNNER_MOVE(
    "que_jobs",
    "queue = $1 AND id = $2::bigint AND expired_at IS NOT NULL AND finished_at IS NULL",
    "expired_at = NULL, run_at = now(), data = " STAMPED("x.data"));
/* GoodJob's retry_job (Job#retry_job and the enqueue it makes, 4.x: the same row): unfinished,
 * not performed, scheduled now, error_event retried (3), Active Job's executions in
 * serialized_params one more; the last error and executions_count kept as GoodJob keeps them. */
#define GJ_EXECUTIONS "x.serialized_params->'executions'"
static const char good_job_move[] = RUNNER_MOVE(
    "good_jobs",
    "queue_name = $1 AND id = $2::uuid AND finished_at IS NOT NULL AND error IS NOT NULL",
    "finished_at = NULL, performed_at = NULL, locked_at = NULL, locked_by_id = NULL, "
    "scheduled_at = timezone('UTC', now()), updated_at = timezone('UTC', now()), "
    "error_event = 3, serialized_params = CASE WHEN jsonb_typeof(" GJ_EXECUTIONS ") = 'number' "
    "THEN jsonb_set(" STAMPED("x.serialized_params") ", '{executions}', "
    "to_jsonb((" GJ_EXECUTIONS ")::numeric + 1)) ELSE " STAMPED("x.serialized_params") " END");
/* Solid Queue's FailedExecution#retry: the failed execution deleted and a ready execution
 * inserted, in this one statement. A job with a concurrency key would need Solid Queue's
 * semaphore: it is left failed (the third column says why). */
static const char solid_queue_move[] =
    "WITH f AS (SELECT f.id, j.id AS job_id, j.queue_name, j.priority, j.concurrency_key "
    "FROM @S.solid_queue_failed_executions f JOIN @S.solid_queue_jobs j ON j.id = f.job_id "
    "WHERE j.queue_name = $1 AND j.id = $2::bigint FOR UPDATE OF f), "
    "d AS (DELETE FROM @S.solid_queue_failed_executions x USING f WHERE x.id = f.id "
    "AND f.concurrency_key IS NULL RETURNING f.job_id, f.queue_name, f.priority), "
    "i AS (INSERT INTO @S.solid_queue_ready_executions (job_id, queue_name, priority, created_at) "
    "SELECT job_id, queue_name, priority, timezone('UTC', now()) FROM d RETURNING 1) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM i), (SELECT concurrency_key FROM f)";
/* clang-format on */

char *postgres_dlq_runner_sql(enum pgdlq_mode m, int move, const char *schema)
{
    static const struct {
        enum pgdlq_mode m;
        const char *read, *move;
    } t[] = {
        {PGDLQ_RIVER, river_read, river_move},
        {PGDLQ_OBAN, oban_read, oban_move},
        {PGDLQ_QUE, que_read, que_move},
        {PGDLQ_GOOD_JOB, good_job_read, good_job_move},
        {PGDLQ_SOLID_QUEUE, solid_queue_read, solid_queue_move},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].m == m)
            return with_schema(move ? t[i].move : t[i].read, schema);
    return NULL;
}
