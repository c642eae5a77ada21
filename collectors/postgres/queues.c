/* postgres/queues.c: the `queues` section of a postgres source: queue and job tables of the runners
 * that keep their work in PostgreSQL, each read through a preset that knows its layout.
 *
 * pgmq (kind label pgmq) keeps one table per queue and lists them in pgmq.meta; the job runners
 * (graphile_worker, pg_boss, river, oban, que, good_job, solid_queue; kind label pg_jobs) keep
 * their jobs in a few tables with a queue column and a state. Every preset is reduced to the same
 * shape: an inner SELECT that gives each pending or dead job one row (queue, state class, age,
 * redelivered, ...) in the runner's own terms, wrapped in one generic aggregate grouped by queue.
 * So there is one statement per preset per scrape (pgmq: one to list the queues, one over all of
 * them), the state mapping lives in one place per runner, and the emitting code is shared.
 *
 * State classes: 'r' ready (runnable now), 'i' in flight (a worker holds it), 'd' delayed
 * (scheduled, or waiting to be retried), 'x' dead (given up on: the runner's discarded / failed
 * jobs). Finished jobs are filtered out in the inner WHERE, so the runners' own state / finished
 * indexes keep the scan to pending work and the dead jobs the runner retains.
 *
 * Timestamps are compared as epochs (EXTRACT(EPOCH FROM col)): for `timestamp without time zone`
 * columns (Rails, Ecto) that reads the stored UTC value as UTC whatever the session's TimeZone,
 * and for timestamptz it is the true epoch, so one expression serves both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres.h"
#include "util.h"

/* A queue label for graphile-worker jobs added without a queue name (they run in parallel). */
#define GRAPHILE_NO_QUEUE "(none)"
/* graphile-worker treats a lock older than this as abandoned (get_job's job_expiry). */
#define GRAPHILE_LOCK_SECONDS 14400
/* pgmq: more queues than this in one item must be narrowed with `queues:`. */
#define PGMQ_MAX_QUEUES 2000

/* The presets. */
enum pgq_preset_id {
    PGQ_PGMQ,
    PGQ_GRAPHILE_WORKER,
    PGQ_PG_BOSS,
    PGQ_RIVER,
    PGQ_OBAN,
    PGQ_QUE,
    PGQ_GOOD_JOB,
    PGQ_SOLID_QUEUE,
};

/* What a preset's layout records, and so which families its queues get. */
enum {
    PGQ_HAS_REDELIVERED = 1 << 0,    /* an attempt / read counter */
    PGQ_HAS_DEAD = 1 << 1,           /* jobs the runner gave up on and keeps */
    PGQ_HAS_MAX_DELIVERIES = 1 << 2, /* a max-attempts column */
    PGQ_HAS_LEASE_AGE = 1 << 3,      /* when the current hold began */
    PGQ_HAS_LEASE_TIMEOUT = 1 << 4,  /* how long a hold may last */
    PGQ_JOB_TIMEOUT = 1 << 5,        /* the lease may be declared as job_timeout */
};

struct pgq_preset {
    enum pgq_preset_id id;
    const char *name;              /* the `preset:` value */
    const char *schema;            /* the default schema */
    const char *dead_letter_queue; /* the dead_letter_queue label of its dead jobs */
    const char *kind_label;
    unsigned flags;
};

/* The columns of the aggregate every preset's statement ends in. */
enum pgq_col {
    PGQ_COL_QUEUE,
    PGQ_COL_READY,
    PGQ_COL_IN_FLIGHT,
    PGQ_COL_DELAYED,
    PGQ_COL_OLDEST_AGE,
    PGQ_COL_REDELIVERED,
    PGQ_COL_DEAD,
    PGQ_COL_DEAD_AGE,
    PGQ_COL_MAX_DELIVERIES,
    PGQ_COL_LEASE_AGE,
    PGQ_COL_LEASE_TIMEOUT,
    PGQ_NCOLS
};

/* One row of the aggregate: v[k] valid when has[k] (the queue column is the string). */
struct pgq_row {
    const char *queue;
    double v[PGQ_NCOLS];
    int has[PGQ_NCOLS];
};

static const struct pgq_preset presets[] = {
    /* name, default schema, dead_letter_queue label, kind label, flags */
    {PGQ_PGMQ, "pgmq", "pgmq", NULL, "pgmq", PGQ_HAS_REDELIVERED},
    {PGQ_GRAPHILE_WORKER, "graphile_worker", "graphile_worker", "failed", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_MAX_DELIVERIES | PGQ_HAS_LEASE_AGE |
         PGQ_HAS_LEASE_TIMEOUT},
    {PGQ_PG_BOSS, "pg_boss", "pgboss", "failed", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_MAX_DELIVERIES | PGQ_HAS_LEASE_AGE |
         PGQ_HAS_LEASE_TIMEOUT},
    {PGQ_RIVER, "river", "public", "discarded", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_MAX_DELIVERIES | PGQ_HAS_LEASE_AGE |
         PGQ_JOB_TIMEOUT},
    {PGQ_OBAN, "oban", "public", "discarded", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_MAX_DELIVERIES | PGQ_HAS_LEASE_AGE |
         PGQ_JOB_TIMEOUT},
    {PGQ_QUE, "que", "public", "expired", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_JOB_TIMEOUT},
    {PGQ_GOOD_JOB, "good_job", "public", "discarded", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_LEASE_AGE | PGQ_JOB_TIMEOUT},
    {PGQ_SOLID_QUEUE, "solid_queue", "public", "failed", "pg_jobs",
     PGQ_HAS_DEAD | PGQ_HAS_LEASE_AGE | PGQ_JOB_TIMEOUT},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

static const struct pgq_preset *pgq_preset_find(const char *name)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (name && strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

/* ---- the per-job rows of each preset ----
 *
 * Every inner query yields: queue text, st char ('r','i','d','x'), age (seconds since the job
 * was enqueued), redel (delivered more than once), dead_age (seconds since it was given up on),
 * maxdel (deliveries allowed), held (seconds a worker has held it), lease (seconds a hold may
 * last). @S is replaced by the quoted schema. NULL where the runner records nothing. */
#define EP "EXTRACT(EPOCH FROM now())"
#define AGE(col) "(" EP " - EXTRACT(EPOCH FROM " col "))"

/* The SQL below is laid out by hand: clang-format cannot break strings joined with macros. */
/* clang-format off */

/* graphile-worker >= 0.14: jobs in _private_jobs, queue names in _private_job_queues. A lock
 * older than 4 hours is abandoned: get_job hands the job out again, so it counts as waiting. */
#define GRAPHILE_ROWS(from, queue)                                                              \
    "SELECT COALESCE(" queue ", '" GRAPHILE_NO_QUEUE "') AS queue, "                           \
    "CASE WHEN j.locked_at > now() - interval '4 hours' THEN 'i' "                              \
    "WHEN j.attempts >= j.max_attempts THEN 'x' "                                               \
    "WHEN j.run_at > now() THEN 'd' ELSE 'r' END AS st, "                                       \
    AGE("j.created_at") " AS age, j.attempts > 1 AS redel, "                                    \
    AGE("j.updated_at") " AS dead_age, j.max_attempts::float8 AS maxdel, "                      \
    AGE("j.locked_at") " AS held, 14400::float8 AS lease FROM " from
static const char graphile_rows[] =
    GRAPHILE_ROWS("@S._private_jobs j "
                  "LEFT JOIN @S._private_job_queues q ON q.id = j.job_queue_id",
                  "q.queue_name");
/* graphile-worker < 0.14: one jobs table with a queue_name column (0.14+ keeps a view of that
 * name, which works too but joins the tasks table for nothing). */
static const char graphile_legacy_rows[] = GRAPHILE_ROWS("@S.jobs j", "j.queue_name");

/* pg-boss 10: retry_count grows when a job is fetched again, so > 0 means a redelivery; a job
 * may be delivered retry_limit + 1 times; active jobs past started_on + expire_in are failed by
 * the maintenance loop: that is the lease. pg-boss keeps completed jobs for days, so the waiting
 * jobs (state < 'active', the predicate of pg-boss's own fetch index) and the active and failed
 * ones (an index the docs suggest) are read in two branches, each able to use its index. */
#define PG_BOSS_ROWS                                                                            \
    "SELECT name AS queue, "                                                                    \
    "CASE WHEN state = 'active' THEN 'i' WHEN state = 'failed' THEN 'x' "                        \
    "WHEN start_after > now() THEN 'd' ELSE 'r' END AS st, "                                    \
    AGE("created_on") " AS age, retry_count > 0 AS redel, "                                     \
    AGE("completed_on") " AS dead_age, (retry_limit + 1)::float8 AS maxdel, "                   \
    AGE("started_on") " AS held, EXTRACT(EPOCH FROM expire_in)::float8 AS lease FROM @S.job "
static const char pg_boss_rows[] =
    PG_BOSS_ROWS "WHERE state < 'active' "
    "UNION ALL " PG_BOSS_ROWS "WHERE state IN ('active', 'failed')";

/* pg-boss 9 (detected: its columns are camel case folded to lower case): the same rules, with
 * 'expired' (the lease ran out on the last attempt) dead like 'failed'. Its internal completion
 * jobs (__state__completed__<queue> and the like) are not the application's work. */
#define PG_BOSS_9_ROWS                                                                          \
    "SELECT name AS queue, "                                                                    \
    "CASE WHEN state = 'active' THEN 'i' WHEN state IN ('failed', 'expired') THEN 'x' "         \
    "WHEN startafter > now() THEN 'd' ELSE 'r' END AS st, "                                     \
    AGE("createdon") " AS age, retrycount > 0 AS redel, "                                       \
    AGE("completedon") " AS dead_age, (retrylimit + 1)::float8 AS maxdel, "                     \
    AGE("startedon") " AS held, EXTRACT(EPOCH FROM expirein)::float8 AS lease FROM @S.job "     \
    "WHERE name NOT LIKE '\\_\\_state\\_\\_%' AND "
static const char pg_boss_9_rows[] =
    PG_BOSS_9_ROWS "state < 'active' "
    "UNION ALL " PG_BOSS_9_ROWS "state IN ('active', 'failed', 'expired')";

/* River: attempt grows when a job is fetched. scheduled, retryable and pending wait. The states
 * are listed (not `NOT IN ('completed', 'cancelled')`) so that River's own index on (state, queue,
 * ...) skips the completed jobs it keeps for a day; 'pending' needs River's migration 004. */
static const char river_rows[] =
    "SELECT queue, "
    "CASE state WHEN 'available' THEN 'r' WHEN 'running' THEN 'i' "
    "WHEN 'discarded' THEN 'x' ELSE 'd' END AS st, "
    AGE("created_at") " AS age, attempt > 1 AS redel, "
    AGE("finalized_at") " AS dead_age, max_attempts::float8 AS maxdel, "
    AGE("attempted_at") " AS held, NULL::float8 AS lease "
    "FROM @S.river_job "
    "WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled', 'discarded')";

/* Oban: like River (states listed for its (state, queue, ...) index); timestamps are
 * `timestamp` in UTC. */
static const char oban_rows[] =
    "SELECT queue, "
    "CASE state WHEN 'available' THEN 'r' WHEN 'executing' THEN 'i' "
    "WHEN 'discarded' THEN 'x' ELSE 'd' END AS st, "
    AGE("inserted_at") " AS age, attempt > 1 AS redel, "
    AGE("discarded_at") " AS dead_age, max_attempts::float8 AS maxdel, "
    AGE("attempted_at") " AS held, NULL::float8 AS lease "
    "FROM @S.oban_jobs "
    "WHERE state IN ('available', 'scheduled', 'executing', 'retryable', 'discarded')";

/* Que 1.x/2.x: a worker holds a job by a session advisory lock on its id (one bigint key:
 * classid is the high half, objid the low one, objsubid 1), which pg_locks shows to everyone
 * (for every database of the cluster: only this one's count).
 * No column says when the lock was taken, and the table has no creation time: the age is from
 * run_at (when the job became runnable). error_count grows when a run fails. */
static const char que_rows[] =
    "SELECT queue, "
    "CASE WHEN expired_at IS NOT NULL THEN 'x' "
    "WHEN id IN (SELECT (l.classid::int8 << 32) | l.objid::int8 FROM pg_catalog.pg_locks l "
    "WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND l.database = "
    "(SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())) THEN 'i' "
    "WHEN run_at > now() THEN 'd' ELSE 'r' END AS st, "
    AGE("run_at") " AS age, error_count > 0 AS redel, "
    AGE("expired_at") " AS dead_age, NULL::float8 AS maxdel, "
    "NULL::float8 AS held, NULL::float8 AS lease "
    "FROM @S.que_jobs WHERE finished_at IS NULL";

/* GoodJob 3.x/4.x, its own scopes: queued (performed_at and finished_at NULL, scheduled_at
 * passed), scheduled (not yet), running (performed_at set, finished_at NULL), discarded
 * (finished with an error). A retry reuses the row: executions_count counts the runs. */
static const char good_job_rows[] =
    "SELECT queue_name AS queue, "
    "CASE WHEN performed_at IS NOT NULL THEN 'i' "
    "WHEN EXTRACT(EPOCH FROM scheduled_at) > " EP " THEN 'd' ELSE 'r' END AS st, "
    AGE("created_at") " AS age, executions_count > 1 AS redel, "
    "NULL::float8 AS dead_age, NULL::float8 AS maxdel, "
    AGE("performed_at") " AS held, NULL::float8 AS lease "
    "FROM @S.good_jobs WHERE finished_at IS NULL "
    /* two branches, so that each can use a partial index: GoodJob's own on unfinished jobs,
     * and for the discarded ones the index the docs suggest */
    "UNION ALL SELECT queue_name, 'x', NULL, NULL, " AGE("finished_at") ", NULL, NULL, NULL "
    "FROM @S.good_jobs WHERE finished_at IS NOT NULL AND error IS NOT NULL";

/* Solid Queue 1.x: a job's state is which execution table holds it. Claimed and failed
 * executions carry no queue name: it comes from the job. Retries are new jobs (Active Job), so
 * there is no attempt count to read. */
static const char solid_queue_rows[] =
    "SELECT e.queue_name AS queue, 'r' AS st, " AGE("j.created_at") " AS age, "
    "NULL::bool AS redel, NULL::float8 AS dead_age, NULL::float8 AS maxdel, "
    "NULL::float8 AS held, NULL::float8 AS lease "
    "FROM @S.solid_queue_ready_executions e JOIN @S.solid_queue_jobs j ON j.id = e.job_id "
    "UNION ALL SELECT j.queue_name, 'i', " AGE("j.created_at") ", NULL, NULL, NULL, "
    AGE("e.created_at") ", NULL "
    "FROM @S.solid_queue_claimed_executions e JOIN @S.solid_queue_jobs j ON j.id = e.job_id "
    "UNION ALL SELECT queue_name, 'd', NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM @S.solid_queue_scheduled_executions "
    "UNION ALL SELECT queue_name, 'd', NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM @S.solid_queue_blocked_executions "
    "UNION ALL SELECT j.queue_name, 'x', NULL, NULL, " AGE("e.created_at") ", NULL, NULL, NULL "
    "FROM @S.solid_queue_failed_executions e JOIN @S.solid_queue_jobs j ON j.id = e.job_id";

/* The rest of a row that stands for no job: every existing queue gets a result row, even when
 * empty (its counts are then 0). */
static const char no_job[] =
    ", NULL, NULL::float8, NULL::bool, NULL::float8, NULL::float8, NULL::float8, NULL::float8";

/* The aggregate over any preset's rows: one result row per queue, columns as enum pgq_col. */
static const char aggregate_head[] =
    "SELECT queue::text, count(*) FILTER (WHERE st = 'r'), count(*) FILTER (WHERE st = 'i'), "
    "count(*) FILTER (WHERE st = 'd'), "
    "GREATEST(max(age) FILTER (WHERE st IN ('r', 'i')), 0)::float8, "
    "count(*) FILTER (WHERE st IN ('r', 'i', 'd') AND redel), count(*) FILTER (WHERE st = 'x'), "
    "GREATEST(max(dead_age) FILTER (WHERE st = 'x'), 0)::float8, "
    "max(maxdel) FILTER (WHERE st IN ('r', 'i', 'd'))::float8, "
    "GREATEST(max(held) FILTER (WHERE st = 'i'), 0)::float8, "
    "min(lease) FILTER (WHERE st IN ('r', 'i', 'd'))::float8 FROM (";

/* clang-format on */
struct queues {
    const struct pgq_preset *preset;
    char *schema;  /* unquoted, as configured or the preset's default */
    char **queues; /* the `queues` filter, or NULL */
    size_t nqueues;
    char *filter_param;       /* the filter as a text[] literal for $1, or NULL */
    long long max_deliveries; /* declared; 0 = not declared */
    double lease_timeout;     /* visibility_timeout / job_timeout declared; < 0 = not declared */
    char *what;               /* queues preset "river" (schema "public") */
    /* Layout found on the live database (graphile-worker), 0 until detected. */
    int layout;
    char *sql; /* the built statement for job presets, NULL until built */
};

enum { LAYOUT_UNKNOWN, LAYOUT_CURRENT, LAYOUT_LEGACY };

static const char *const keys[] = {
    "preset", "schema", "queues", "max_deliveries", "visibility_timeout", "job_timeout", NULL,
};

static void destroy(void *item)
{
    struct queues *q = item;
    if (!q)
        return;
    free(q->schema);
    cfg_strv_free(q->queues);
    free(q->filter_param);
    free(q->what);
    free(q->sql);
    free(q);
}

/* {"a","b\"c"}: a text[] literal for the filter parameter (elements always quoted). */
static char *pgq_array_literal(char *const *v, size_t n)
{
    struct buf b;
    buf_init(&b);
    buf_putc(&b, '{');
    for (size_t i = 0; i < n; i++) {
        buf_puts(&b, i ? ",\"" : "\"");
        for (const char *p = v[i]; *p; p++) {
            if (*p == '"' || *p == '\\')
                buf_putc(&b, '\\');
            buf_putc(&b, *p);
        }
        buf_putc(&b, '"');
    }
    buf_putc(&b, '}');
    return buf_steal(&b);
}

static void *configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct queues *q = xcalloc(1, sizeof *q);
    char where[400];
    char *preset = NULL;
    q->lease_timeout = -1.0;
    snprintf(where, sizeof where, "an entry of queues of source \"%s\"", source);

    if (cfg_get_str(item, "preset", 0, &preset, e))
        goto fail;
    if (!preset) {
        if (cfg_finish_keys(item, keys, where, e))
            goto fail;
        cfg_error(e, item,
                  "preset: required in each entry of queues (one of pgmq, "
                  "graphile_worker, pg_boss, river, oban, que, good_job, solid_queue)");
        goto fail;
    }
    q->preset = pgq_preset_find(preset);
    if (!q->preset) {
        cfg_error(e, cfg_at(item, "preset"),
                  "preset: want one of pgmq, graphile_worker, pg_boss, river, oban, que, "
                  "good_job, solid_queue, got \"%s\"",
                  preset);
        goto fail;
    }
    if (cfg_get_str(item, "schema", 0, &q->schema, e))
        goto fail;
    if (q->schema && !*q->schema) {
        cfg_error(e, cfg_at(item, "schema"), "schema: want a non-empty string");
        goto fail;
    }
    if (!q->schema)
        q->schema = xstrdup(q->preset->schema);

    struct cfg_node *n = NULL;
    if (cfg_get_node(item, "queues", CFG_SEQ, &n, e) ||
        cfg_get_strlist(item, "queues", &q->queues, &q->nqueues, e))
        goto fail;
    if (n && q->nqueues == 0) {
        cfg_error(e, n, "queues: want at least one queue name (leave the key out for all)");
        goto fail;
    }
    for (size_t i = 0; i < q->nqueues; i++) {
        if (!*q->queues[i]) {
            cfg_error(e, n->items[i], "queues: want non-empty names");
            goto fail;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->queues[i], q->queues[j]) == 0) {
                cfg_error(e, n->items[i], "queues: \"%s\" is listed twice", q->queues[i]);
                goto fail;
            }
    }
    if (q->nqueues)
        q->filter_param = pgq_array_literal(q->queues, q->nqueues);

    if (cfg_get_node(item, "max_deliveries", CFG_SCALAR, &n, e))
        goto fail;
    if (n && cfg_get_int(item, "max_deliveries", 0, 1, 1000000, &q->max_deliveries, e))
        goto fail;

    /* The declared lease: visibility_timeout for pgmq, job_timeout for runners that keep no
     * lease of their own; the other key is refused with the reason. */
    const char *lease_key = q->preset->id == PGQ_PGMQ ? "visibility_timeout" : "job_timeout";
    const char *other_key = q->preset->id == PGQ_PGMQ ? "job_timeout" : "visibility_timeout";
    if (cfg_get_node(item, other_key, CFG_NULL, &n, e))
        goto fail;
    if (n) {
        cfg_error(e, n, "%s: not a key of preset \"%s\"%s", other_key, q->preset->name,
                  q->preset->id == PGQ_PGMQ ? " (its lease is visibility_timeout)"
                                            : " (job runners take job_timeout)");
        goto fail;
    }
    if (cfg_get_node(item, lease_key, CFG_SCALAR, &n, e))
        goto fail;
    if (n && q->preset->id != PGQ_PGMQ && !(q->preset->flags & PGQ_JOB_TIMEOUT)) {
        cfg_error(e, n, "job_timeout: preset \"%s\" records each job's lease itself",
                  q->preset->name);
        goto fail;
    }
    if (n) {
        if (cfg_get_duration(item, lease_key, -1.0, &q->lease_timeout, e))
            goto fail;
        if (!(q->lease_timeout > 0)) {
            cfg_error(e, n, "%s: want a duration above 0", lease_key);
            goto fail;
        }
    }
    snprintf(where, sizeof where, "queues preset \"%s\" of source \"%s\"", q->preset->name, source);
    if (cfg_finish(item, where, e))
        goto fail;
    q->what = xasprintf("queues preset \"%s\" (schema \"%s\")", q->preset->name, q->schema);
    free(preset);
    return q;
fail:
    free(preset);
    destroy(q);
    return NULL;
}

/* Replaces every "@S" of tmpl with schema (already quoted) into b. */
static void put_with_schema(struct buf *b, const char *tmpl, const char *schema)
{
    const char *p = tmpl, *at;
    while ((at = strstr(p, "@S"))) {
        buf_append(b, p, (size_t)(at - p));
        buf_puts(b, schema);
        p = at + 2;
    }
    buf_puts(b, p);
}

/* The whole statement for a job preset: the aggregate around the preset's rows, filtered by
 * $1 (a text[]) when the item lists queues. Pure, for the unit tests too. */
static char *pgq_jobs_sql(enum pgq_preset_id id, const char *schema, int legacy, int filtered)
{
    const char *rows = NULL;
    switch (id) {
    case PGQ_GRAPHILE_WORKER:
        rows = legacy ? graphile_legacy_rows : graphile_rows;
        break;
    case PGQ_PG_BOSS:
        rows = legacy ? pg_boss_9_rows : pg_boss_rows;
        break;
    case PGQ_RIVER:
        rows = river_rows;
        break;
    case PGQ_OBAN:
        rows = oban_rows;
        break;
    case PGQ_QUE:
        rows = que_rows;
        break;
    case PGQ_GOOD_JOB:
        rows = good_job_rows;
        break;
    case PGQ_SOLID_QUEUE:
        rows = solid_queue_rows;
        break;
    case PGQ_PGMQ:
        return NULL;
    }
    char *qs = pg_quote_ident(schema);
    struct buf b;
    buf_init(&b);
    buf_puts(&b, aggregate_head);
    put_with_schema(&b, rows, qs);
    /* A listed queue shows (with zeros) even when it has no job at all right now. */
    if (filtered)
        buf_printf(&b, " UNION ALL SELECT unnest($1::text[])%s", no_job);
    buf_puts(&b, ") AS jobs");
    if (filtered)
        buf_puts(&b, " WHERE queue = ANY ($1::text[])");
    buf_puts(&b, " GROUP BY 1 ORDER BY 1");
    free(qs);
    return buf_steal(&b);
}

/* ---- reading the aggregate ---- */

/* Parses the aggregate's rows into *rows (malloc'd, *n of them; queue strings point into r). */
static int parse_rows(struct queues *q, struct pg_conn *c, PGresult *r, struct pgq_row **rows,
                      size_t *n, struct err *e)
{
    int nt = PQntuples(r);
    *rows = NULL;
    *n = 0;
    if (PQnfields(r) != PGQ_NCOLS)
        return pg_error(c, e, ERR_PROTOCOL, "%s: want %d columns, got %d", q->what, PGQ_NCOLS,
                        PQnfields(r));
    struct pgq_row *v = xcalloc(nt ? (size_t)nt : 1, sizeof *v);
    for (int i = 0; i < nt; i++) {
        v[i].queue = PQgetvalue(r, i, PGQ_COL_QUEUE);
        for (int k = 1; k < PGQ_NCOLS; k++) {
            v[i].has[k] = !PQgetisnull(r, i, k);
            if (v[i].has[k] && pg_cell_double(r, i, k, &v[i].v[k])) {
                pg_error(c, e, ERR_PROTOCOL, "%s: column %d of queue \"%s\" is not a number",
                         q->what, k + 1, v[i].queue);
                free(v);
                return -1;
            }
        }
    }
    *rows = v;
    *n = (size_t)nt;
    return 0;
}

#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (metric_set_add(__VA_ARGS__, NULL))                                                     \
            return -1;                                                                             \
    } while (0)

/* Adds the series of one queue. Which families appear depends on what the preset records (its
 * flags) and on what the config declares; nothing is made up. Pure. */
static int pgq_emit(const struct pgq_preset *p, const struct pgq_row *row, long long max_deliveries,
                    double lease_timeout, struct metric_set *out)
{
    const char *qn = row->queue;
    ADD(out, "qrel_queue_messages", row->v[PGQ_COL_READY], "queue", qn, "state", "ready");
    ADD(out, "qrel_queue_messages", row->v[PGQ_COL_IN_FLIGHT], "queue", qn, "state", "in_flight");
    ADD(out, "qrel_queue_messages", row->v[PGQ_COL_DELAYED], "queue", qn, "state", "delayed");
    /* No ready or in-flight message: nothing waits, so the oldest is 0 s old (as SQS says). */
    ADD(out, "qrel_queue_oldest_message_age_seconds",
        row->has[PGQ_COL_OLDEST_AGE] ? row->v[PGQ_COL_OLDEST_AGE] : 0.0, "queue", qn);
    if (p->flags & PGQ_HAS_REDELIVERED)
        ADD(out, "qrel_messages_redelivered", row->v[PGQ_COL_REDELIVERED], "queue", qn);
    if (p->flags & PGQ_HAS_DEAD) {
        ADD(out, "qrel_dead_letter_messages", row->v[PGQ_COL_DEAD], "queue", qn,
            "dead_letter_queue", p->dead_letter_queue);
        ADD(out, "qrel_dead_letter_oldest_age_seconds",
            row->has[PGQ_COL_DEAD_AGE] ? row->v[PGQ_COL_DEAD_AGE] : 0.0, "queue", qn,
            "dead_letter_queue", p->dead_letter_queue);
    }
    if (max_deliveries > 0)
        ADD(out, "qrel_max_deliveries", (double)max_deliveries, "queue", qn);
    else if ((p->flags & PGQ_HAS_MAX_DELIVERIES) && row->has[PGQ_COL_MAX_DELIVERIES])
        ADD(out, "qrel_max_deliveries", row->v[PGQ_COL_MAX_DELIVERIES], "queue", qn);
    /* The hold age: read from the runner's lock column, or for pgmq derived from vt and the
     * declared visibility timeout (the collector put it into the rows). */
    if ((p->flags & PGQ_HAS_LEASE_AGE) || (p->id == PGQ_PGMQ && lease_timeout > 0))
        ADD(out, "qrel_lease_oldest_age_seconds",
            row->has[PGQ_COL_LEASE_AGE] ? row->v[PGQ_COL_LEASE_AGE] : 0.0, "queue", qn);
    if (lease_timeout > 0)
        ADD(out, "qrel_lease_timeout_seconds", lease_timeout, "queue", qn);
    else if ((p->flags & PGQ_HAS_LEASE_TIMEOUT) && row->has[PGQ_COL_LEASE_TIMEOUT])
        ADD(out, "qrel_lease_timeout_seconds", row->v[PGQ_COL_LEASE_TIMEOUT], "queue", qn);
    return 0;
}

static int run_aggregate(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                         const char *sql, int nparams, const char *const *params,
                         struct metric_set *out, struct err *e)
{
    PGresult *r = NULL;
    struct pgq_row *rows = NULL;
    size_t n = 0;
    int rc = -1;
    if (pg_query(c, dl, q->what, sql, nparams, params, &r, e))
        return -1;
    if (parse_rows(q, c, r, &rows, &n, e))
        goto out;
    for (size_t i = 0; i < n; i++)
        if (pgq_emit(q->preset, &rows[i], q->max_deliveries, q->lease_timeout, out)) {
            err_set(e, ERR_INTERNAL, "%s: %s", q->what, metric_set_error(out));
            goto out;
        }
    rc = 0;
out:
    free(rows);
    PQclear(r);
    return rc;
}

/* ---- pgmq ---- */

/* The queues of pgmq.meta whose table exists (a queue being created or dropped concurrently
 * must not fail the scrape), narrowed by the filter. */
static int pgmq_list(struct queues *q, struct pg_conn *c, const struct deadline *dl, PGresult **r,
                     struct err *e)
{
    char *qs = pg_ident(c, q->schema);
    if (!qs)
        return pg_error(c, e, ERR_INTERNAL, "%s: cannot quote the schema name", q->what);
    /* $1: the schema name (unquoted) for to_regclass; $2: the filter. */
    char *sql = xasprintf("SELECT queue_name::text FROM %s.meta WHERE "
                          "to_regclass(format('%%I.%%I', $1::text, 'q_' || queue_name)) IS NOT NULL"
                          "%s ORDER BY 1",
                          qs, q->filter_param ? " AND queue_name = ANY ($2::text[])" : "");
    const char *params[2] = {q->schema, q->filter_param};
    int rc = pg_query(c, dl, q->what, sql, q->filter_param ? 2 : 1, params, r, e);
    free(sql);
    free(qs);
    return rc;
}

static int collect_pgmq(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                        struct metric_set *out, struct err *e)
{
    PGresult *list = NULL;
    struct buf b;
    int rc = -1;
    buf_init(&b);
    if (pgmq_list(q, c, dl, &list, e))
        return -1;
    int nq = PQntuples(list);
    if (nq == 0) {
        rc = 0;
        goto out;
    }
    if (nq > PGMQ_MAX_QUEUES) {
        err_set(e, ERR_LIMIT,
                "%s: %d queues, more than %d: list the ones to watch in queues:", q->what, nq,
                PGMQ_MAX_QUEUES);
        goto out;
    }
    char *qs = pg_ident(c, q->schema);
    char held[96] = "NULL::float8";
    /* A read sets vt = now() + the reader's vt argument and pgmq keeps no read time, so the
     * time held is known only when every reader uses the declared visibility timeout. */
    if (q->lease_timeout > 0)
        snprintf(held, sizeof held, "(%.17g - EXTRACT(EPOCH FROM vt - now()))", q->lease_timeout);
    buf_puts(&b, aggregate_head);
    for (int i = 0; i < nq; i++) {
        const char *name = PQgetvalue(list, i, 0);
        char *table = xasprintf("q_%s", name);
        char *qt = pg_ident(c, table);
        char *lit = PQescapeLiteral(pg_raw(c), name, strlen(name));
        free(table);
        if (!qs || !qt || !lit) {
            free(qt);
            if (lit)
                PQfreemem(lit);
            free(qs);
            pg_error(c, e, ERR_INTERNAL, "%s: cannot quote queue \"%s\"", q->what, name);
            goto out;
        }
        buf_printf(
            &b,
            "%sSELECT %s AS queue, CASE WHEN vt <= now() THEN 'r' WHEN read_ct > 0 "
            "THEN 'i' ELSE 'd' END AS st, " AGE(
                "enqueued_at") " AS age, "
                               "read_ct > 1 AS redel, NULL::float8 AS dead_age, NULL::float8 AS "
                               "maxdel, "
                               "%s AS held, NULL::float8 AS lease FROM %s.%s UNION ALL SELECT %s%s",
            i ? " UNION ALL " : "", lit, held, qs, qt, lit, no_job);
        free(qt);
        PQfreemem(lit);
    }
    free(qs);
    buf_puts(&b, ") AS msgs GROUP BY 1 ORDER BY 1");
    rc = run_aggregate(q, c, dl, b.data, 0, NULL, out, e);
out:
    buf_free(&b);
    PQclear(list);
    return rc;
}

/* ---- job presets ---- */

/* Two presets have an older layout still in use: graphile-worker before 0.14 (one jobs table,
 * no _private_jobs) and pg-boss 9 (retrycount instead of retry_count). Which one a database has
 * is asked once and remembered (check() asks again, and so does the scrape after a failure). */
static int detect_layout(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                         struct err *e)
{
    const char *sql = NULL;
    if (q->preset->id == PGQ_GRAPHILE_WORKER)
        sql = "SELECT to_regclass(format('%I._private_jobs', $1::text)) IS NOT NULL, "
              "to_regclass(format('%I.jobs', $1::text)) IS NOT NULL";
    else if (q->preset->id == PGQ_PG_BOSS)
        sql = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = "
              "to_regclass(format('%I.job', $1::text)) AND attname = 'retry_count' AND "
              "NOT attisdropped), EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = "
              "to_regclass(format('%I.job', $1::text)) AND attname = 'retrycount' AND "
              "NOT attisdropped)";
    if (!sql) {
        q->layout = LAYOUT_CURRENT;
        return 0;
    }
    PGresult *r = NULL;
    const char *params[1] = {q->schema};
    if (pg_query(c, dl, q->what, sql, 1, params, &r, e))
        return -1;
    int current = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    int legacy = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    PQclear(r);
    if (!current && !legacy) {
        if (q->preset->id == PGQ_GRAPHILE_WORKER)
            return pg_error(c, e, ERR_QUERY,
                            "%s: neither table \"%s._private_jobs\" (graphile-worker >= 0.14) "
                            "nor \"%s.jobs\" exists",
                            q->what, q->schema, q->schema);
        /* let the column check say what is missing */
        current = 1;
    }
    q->layout = current ? LAYOUT_CURRENT : LAYOUT_LEGACY;
    free(q->sql);
    q->sql = NULL;
    return 0;
}

static int collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct queues *q = item;
    metric_set_set_kind(out, q->preset->kind_label);
    if (q->preset->id == PGQ_PGMQ)
        return collect_pgmq(q, c, dl, out, e);
    if (q->layout == LAYOUT_UNKNOWN && detect_layout(q, c, dl, e))
        return -1;
    if (!q->sql)
        q->sql = pgq_jobs_sql(q->preset->id, q->schema, q->layout == LAYOUT_LEGACY,
                              q->filter_param != NULL);
    const char *params[1] = {q->filter_param};
    if (run_aggregate(q, c, dl, q->sql, q->filter_param ? 1 : 0, q->filter_param ? params : NULL,
                      out, e)) {
        q->layout = LAYOUT_UNKNOWN; /* the runner may have been upgraded: look again */
        return -1;
    }
    return 0;
}

/* ---- check ---- */

struct table_check {
    const char *table;
    struct pg_column cols[8];
    size_t n;
};

#define T PG_COL_TIME
#define N PG_COL_NUMBER
#define A PG_COL_ANY
static const struct table_check checks_graphile[] = {
    {"_private_jobs",
     {{"job_queue_id", A},
      {"run_at", T},
      {"attempts", N},
      {"max_attempts", N},
      {"created_at", T},
      {"updated_at", T},
      {"locked_at", T}},
     7},
    {"_private_job_queues", {{"id", A}, {"queue_name", A}}, 2},
};
static const struct table_check checks_graphile_legacy[] = {
    {"jobs",
     {{"queue_name", A},
      {"run_at", T},
      {"attempts", N},
      {"max_attempts", N},
      {"created_at", T},
      {"updated_at", T},
      {"locked_at", T}},
     7},
};
static const struct table_check checks_pg_boss[] = {
    {"job",
     {{"name", A},
      {"state", A},
      {"start_after", T},
      {"created_on", T},
      {"completed_on", T},
      {"started_on", T},
      {"retry_count", N},
      {"retry_limit", N}},
     8},
};
static const struct table_check checks_pg_boss_9[] = {
    {"job",
     {{"name", A},
      {"state", A},
      {"startafter", T},
      {"createdon", T},
      {"completedon", T},
      {"startedon", T},
      {"retrycount", N},
      {"retrylimit", N}},
     8},
};
static const struct table_check checks_river[] = {
    {"river_job",
     {{"queue", A},
      {"state", A},
      {"attempt", N},
      {"max_attempts", N},
      {"created_at", T},
      {"attempted_at", T},
      {"finalized_at", T}},
     7},
};
static const struct table_check checks_oban[] = {
    {"oban_jobs",
     {{"queue", A},
      {"state", A},
      {"attempt", N},
      {"max_attempts", N},
      {"inserted_at", T},
      {"attempted_at", T},
      {"discarded_at", T}},
     7},
};
static const struct table_check checks_que[] = {
    {"que_jobs",
     {{"id", N},
      {"queue", A},
      {"run_at", T},
      {"error_count", N},
      {"finished_at", T},
      {"expired_at", T}},
     6},
};
static const struct table_check checks_good_job[] = {
    {"good_jobs",
     {{"queue_name", A},
      {"scheduled_at", T},
      {"performed_at", T},
      {"finished_at", T},
      {"error", A},
      {"created_at", T},
      {"executions_count", N}},
     7},
};
static const struct table_check checks_solid_queue[] = {
    {"solid_queue_jobs", {{"id", A}, {"queue_name", A}, {"created_at", T}}, 3},
    {"solid_queue_ready_executions", {{"job_id", A}, {"queue_name", A}}, 2},
    {"solid_queue_claimed_executions", {{"job_id", A}, {"created_at", T}}, 2},
    {"solid_queue_scheduled_executions", {{"queue_name", A}}, 1},
    {"solid_queue_blocked_executions", {{"queue_name", A}}, 1},
    {"solid_queue_failed_executions", {{"job_id", A}, {"created_at", T}}, 2},
};
static const struct table_check checks_pgmq[] = {
    {"meta", {{"queue_name", A}}, 1},
};
#undef T
#undef N
#undef A

static int check_tables(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                        const struct table_check *t, size_t n, struct err *e)
{
    for (size_t i = 0; i < n; i++) {
        char *table = xasprintf("%s.%s", q->schema, t[i].table);
        int rc = pg_check_columns(c, dl, q->what, table, t[i].cols, t[i].n, e);
        free(table);
        if (rc)
            return -1;
    }
    return 0;
}

#define CHECK(arr) check_tables(q, c, dl, arr, sizeof arr / sizeof arr[0], e)

static int check_pgmq(struct queues *q, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    if (CHECK(checks_pgmq))
        return -1;
    PGresult *r = NULL;
    if (pgmq_list(q, c, dl, &r, e))
        return -1;
    int rc = 0;
    /* Each listed queue must exist, else its series would silently never appear. */
    for (size_t i = 0; i < q->nqueues && rc == 0; i++) {
        int found = 0;
        for (int k = 0; k < PQntuples(r) && !found; k++)
            found = strcmp(PQgetvalue(r, k, 0), q->queues[i]) == 0;
        if (!found)
            rc = pg_error(c, e, ERR_QUERY, "%s: queue \"%s\" is not in \"%s.meta\"", q->what,
                          q->queues[i], q->schema);
    }
    for (int k = 0; k < PQntuples(r) && rc == 0; k++) {
        const char *name = PQgetvalue(r, k, 0);
        char *table = xasprintf("%s.q_%s", q->schema, name);
        struct pg_column cols[] = {
            {"vt", PG_COL_TIME},
            {"read_ct", PG_COL_NUMBER},
            {"enqueued_at", PG_COL_TIME},
        };
        rc = pg_check_columns(c, dl, q->what, table, cols, 3, e);
        free(table);
    }
    PQclear(r);
    return rc;
}

static int check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    struct queues *q = item;
    switch (q->preset->id) {
    case PGQ_PGMQ:
        return check_pgmq(q, c, dl, e);
    case PGQ_GRAPHILE_WORKER:
        if (detect_layout(q, c, dl, e))
            return -1;
        return q->layout == LAYOUT_LEGACY ? CHECK(checks_graphile_legacy) : CHECK(checks_graphile);
    case PGQ_PG_BOSS:
        if (detect_layout(q, c, dl, e))
            return -1;
        return q->layout == LAYOUT_LEGACY ? CHECK(checks_pg_boss_9) : CHECK(checks_pg_boss);
    case PGQ_RIVER:
        return CHECK(checks_river);
    case PGQ_OBAN:
        return CHECK(checks_oban);
    case PGQ_QUE:
        return CHECK(checks_que);
    case PGQ_GOOD_JOB:
        return CHECK(checks_good_job);
    case PGQ_SOLID_QUEUE:
        return CHECK(checks_solid_queue);
    }
    return 0;
}

const struct pg_section_kind pg_queues_section = {
    .key = "queues",
    .kind_label = "pg_jobs",
    .configure = configure,
    .collect = collect,
    .check = check,
    .destroy = destroy,
};
