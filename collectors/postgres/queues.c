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
    PGQ_COL_HORIZON,   /* the retry horizon the runner's retry settings give, seconds */
    PGQ_COL_HEARTBEAT, /* 1 when the lease is a renewable heartbeat (pg-boss 12) */
    PGQ_COL_DLQ,       /* text: the queue's own dead-letter queue, NULL when it has none */
    PGQ_NCOLS
};

/* One row of the aggregate: v[k] valid when has[k] (the queue and dlq columns are strings). */
struct pgq_row {
    const char *queue;
    const char *dlq; /* NULL: the preset's dead_letter_queue label */
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
 * last), hz (the retry horizon, seconds), hb (the lease is a heartbeat), dlq (the queue's own
 * dead-letter queue). @S is replaced by the quoted schema. NULL where the runner records
 * nothing; NONE fills the last three for the runners that have none of them. */
#define EP "EXTRACT(EPOCH FROM now())"
#define AGE(col) "(" EP " - EXTRACT(EPOCH FROM " col "))"
#define NONE ", NULL::float8 AS hz, NULL::bool AS hb, NULL::text AS dlq "

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
    AGE("j.locked_at") " AS held, 14400::float8 AS lease" NONE "FROM " from
static const char graphile_rows[] =
    GRAPHILE_ROWS("@S._private_jobs j "
                  "LEFT JOIN @S._private_job_queues q ON q.id = j.job_queue_id",
                  "q.queue_name");
/* graphile-worker < 0.14: one jobs table with a queue_name column (0.14+ keeps a view of that
 * name, which works too but joins the tasks table for nothing). */
static const char graphile_legacy_rows[] = GRAPHILE_ROWS("@S.jobs j", "j.queue_name");

/* pg-boss 10, 11 and 12 (one template; what differs is passed in): retry_count grows when a job
 * is fetched again, so > 0 means a redelivery; a job may be delivered retry_limit + 1 times;
 * active jobs past started_on + the lease are failed by the maintenance loop. The job table is
 * partitioned by queue (job_common plus one table per queue created with a partition): reading
 * the parent reads them all in this one statement. Every job belongs to a row of the queue
 * table (a foreign key), so the jobs are read per queue from there, which lets pg-boss's
 * (name, ...) indexes serve each branch: waiting jobs (state < 'active', its fetch index), then
 * active and failed ones (12's live-state index; 10 and 11 have none: see the docs). A queue
 * whose row names a dead_letter queue has its failed jobs copied there by pg-boss: its dead jobs
 * are that queue's waiting jobs (as SQS's RedrivePolicy), and its own failed rows, the
 * originals, are not counted again. Every queue gets a row with the horizon its retry settings
 * give, so an empty queue reports zeros.
 *   LEASE:  the lease of a job, seconds; HELD: when its current hold began; BLOCKED: extra
 *   CASE arms for jobs waiting on something else; HB: whether the lease is a heartbeat;
 *   QLEASE: a queue row's lease per attempt; DELAY(c): the upper bound of the delay before
 *   retry c + 1 (pg-boss adds up to 100 % jitter: the bound takes all of it). */
/* Waiting jobs, said twice: `< 'active'` is the predicate of 10's and 11's fetch index, the list
 * is implied by the predicate of 12's live-state index (the planner proves neither from the
 * other). */
#define BOSS_WAITING(t) t ".state < 'active' AND " t ".state IN ('created', 'retry')"
#define BOSS_ROWS(LEASE, HELD, BLOCKED, HB)                                                     \
    "SELECT q.name AS queue, "                                                                  \
    "CASE WHEN j.state = 'active' THEN 'i' "                                                    \
    "WHEN j.state = 'failed' THEN CASE WHEN q.dead_letter IS NULL THEN 'x' END " BLOCKED        \
    "WHEN j.start_after > now() THEN 'd' ELSE 'r' END AS st, "                                  \
    AGE("j.created_on") " AS age, j.retry_count > 0 AS redel, "                                 \
    AGE("j.completed_on") " AS dead_age, (j.retry_limit + 1)::float8 AS maxdel, "               \
    AGE(HELD) " AS held, (" LEASE ")::float8 AS lease, NULL::float8 AS hz, " HB " AS hb, "      \
    "NULL::text AS dlq FROM @S.queue q JOIN @S.job j ON j.name = q.name "
#define BOSS_ALL(LEASE, HELD, BLOCKED, HB, QLEASE, DELAY)                                       \
    BOSS_ROWS(LEASE, HELD, BLOCKED, HB) "WHERE " BOSS_WAITING("j") " "                          \
    "UNION ALL " BOSS_ROWS(LEASE, HELD, BLOCKED, HB) "WHERE j.state IN ('active', 'failed') "   \
    "UNION ALL SELECT q.name, 'x', NULL, NULL, " AGE("d.created_on") ", NULL, NULL, NULL, "     \
    "NULL, NULL, q.dead_letter FROM @S.queue q JOIN @S.job d ON d.name = q.dead_letter "        \
    "AND " BOSS_WAITING("d") " "                                                                \
    "UNION ALL SELECT q.name, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "                       \
    "(q.retry_limit + 1) * (" QLEASE ") + (SELECT COALESCE(sum(" DELAY "), 0) "                 \
    "FROM generate_series(0, q.retry_limit - 1) AS c), NULL, q.dead_letter FROM @S.queue q"
/* 10: expire_in is an interval; the queue row's expire_seconds may be NULL (15 min then). */
static const char boss10_rows[] =
    BOSS_ALL("EXTRACT(EPOCH FROM j.expire_in)", "j.started_on", "", "false",
             "COALESCE(q.expire_seconds, 900)",
             "CASE WHEN q.retry_backoff THEN q.retry_delay * 2 ^ LEAST(16, c + 1) "
             "ELSE q.retry_delay END");
/* 11: expire_seconds, and a cap on the backoff. */
#define BOSS11_DELAY                                                                            \
    "CASE WHEN q.retry_backoff THEN LEAST(COALESCE(q.retry_delay_max::float8, 'Infinity'), "    \
    "GREATEST(q.retry_delay, 1) * 2 ^ LEAST(16, c + 1)) ELSE q.retry_delay END"
static const char boss11_rows[] =
    BOSS_ALL("j.expire_seconds", "j.started_on", "", "false", "q.expire_seconds", BOSS11_DELAY);
/* 12: a job with heartbeat_seconds is failed when its worker has not beaten for that long:
 * that is its lease, and its hold is measured from the last beat (a job past it is about to
 * be expired: it shows as a hold older than the lease). Jobs blocked on dependencies wait. */
static const char boss12_rows[] =
    BOSS_ALL("COALESCE(j.heartbeat_seconds, j.expire_seconds)",
             "CASE WHEN j.heartbeat_seconds IS NULL THEN j.started_on "
             "ELSE COALESCE(j.heartbeat_on, j.started_on) END",
             "WHEN j.blocked THEN 'd' ", "j.heartbeat_seconds IS NOT NULL", "q.expire_seconds",
             BOSS11_DELAY);

/* pg-boss 9 (detected: its columns are camel case folded to lower case): the same rules, with
 * 'expired' (the lease ran out on the last attempt) dead like 'failed'; no queue table. Its
 * internal completion jobs (__state__completed__<queue> and the like) are not the application's
 * work. */
#define PG_BOSS_9_ROWS                                                                          \
    "SELECT name AS queue, "                                                                    \
    "CASE WHEN state = 'active' THEN 'i' WHEN state IN ('failed', 'expired') THEN 'x' "         \
    "WHEN startafter > now() THEN 'd' ELSE 'r' END AS st, "                                     \
    AGE("createdon") " AS age, retrycount > 0 AS redel, "                                       \
    AGE("completedon") " AS dead_age, (retrylimit + 1)::float8 AS maxdel, "                     \
    AGE("startedon") " AS held, EXTRACT(EPOCH FROM expirein)::float8 AS lease" NONE             \
    "FROM @S.job WHERE name NOT LIKE '\\_\\_state\\_\\_%' AND "
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
    AGE("attempted_at") " AS held, NULL::float8 AS lease" NONE
    "FROM @S.river_job "
    "WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled', 'discarded')";

/* Oban: like River (states listed for its (state, queue, ...) index); timestamps are
 * `timestamp` in UTC. Oban's migration V14 added 'suspended' (held until resumed: it waits, like
 * a scheduled job); an older schema's state type has no such value, and naming it would fail, so
 * the layout is detected (LEGACY: before V14). */
#define OBAN_ROWS(suspended)                                                                    \
    "SELECT queue, "                                                                            \
    "CASE state WHEN 'available' THEN 'r' WHEN 'executing' THEN 'i' "                           \
    "WHEN 'discarded' THEN 'x' ELSE 'd' END AS st, "                                            \
    AGE("inserted_at") " AS age, attempt > 1 AS redel, "                                        \
    AGE("discarded_at") " AS dead_age, max_attempts::float8 AS maxdel, "                        \
    AGE("attempted_at") " AS held, NULL::float8 AS lease" NONE                                  \
    "FROM @S.oban_jobs "                                                                        \
    "WHERE state IN ('available', " suspended "'scheduled', 'executing', 'retryable', 'discarded')"
static const char oban_rows[] = OBAN_ROWS("'suspended', ");
static const char oban_legacy_rows[] = OBAN_ROWS("");

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
    "NULL::float8 AS held, NULL::float8 AS lease" NONE
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
    AGE("performed_at") " AS held, NULL::float8 AS lease" NONE
    "FROM @S.good_jobs WHERE finished_at IS NULL "
    /* two branches, so that each can use a partial index: GoodJob's own on unfinished jobs,
     * and for the discarded ones the index the docs suggest */
    "UNION ALL SELECT queue_name, 'x', NULL, NULL, " AGE("finished_at") ", NULL, NULL, NULL, "
    "NULL, NULL, NULL FROM @S.good_jobs WHERE finished_at IS NOT NULL AND error IS NOT NULL";

/* Solid Queue 1.x: a job's state is which execution table holds it. Claimed and failed
 * executions carry no queue name: it comes from the job. Retries are new jobs (Active Job), so
 * there is no attempt count to read. */
static const char solid_queue_rows[] =
    "SELECT e.queue_name AS queue, 'r' AS st, " AGE("j.created_at") " AS age, "
    "NULL::bool AS redel, NULL::float8 AS dead_age, NULL::float8 AS maxdel, "
    "NULL::float8 AS held, NULL::float8 AS lease" NONE
    "FROM @S.solid_queue_ready_executions e JOIN @S.solid_queue_jobs j ON j.id = e.job_id "
    "UNION ALL SELECT j.queue_name, 'i', " AGE("j.created_at") ", NULL, NULL, NULL, "
    AGE("e.created_at") ", NULL, NULL, NULL, NULL "
    "FROM @S.solid_queue_claimed_executions e JOIN @S.solid_queue_jobs j ON j.id = e.job_id "
    "UNION ALL SELECT queue_name, 'd', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM @S.solid_queue_scheduled_executions "
    "UNION ALL SELECT queue_name, 'd', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM @S.solid_queue_blocked_executions "
    "UNION ALL SELECT j.queue_name, 'x', NULL, NULL, " AGE("e.created_at") ", NULL, NULL, NULL, "
    "NULL, NULL, NULL "
    "FROM @S.solid_queue_failed_executions e JOIN @S.solid_queue_jobs j ON j.id = e.job_id";

/* The rest of a row that stands for no job: every existing queue gets a result row, even when
 * empty (its counts are then 0). */
static const char no_job[] = ", NULL, NULL::float8, NULL::bool, NULL::float8, NULL::float8, "
                             "NULL::float8, NULL::float8, NULL::float8, NULL::bool, NULL::text";

/* The aggregate over any preset's rows: one result row per queue, columns as enum pgq_col. */
static const char aggregate_head[] =
    "SELECT queue::text, count(*) FILTER (WHERE st = 'r'), count(*) FILTER (WHERE st = 'i'), "
    "count(*) FILTER (WHERE st = 'd'), "
    "GREATEST(max(age) FILTER (WHERE st IN ('r', 'i')), 0)::float8, "
    "count(*) FILTER (WHERE st IN ('r', 'i', 'd') AND redel), count(*) FILTER (WHERE st = 'x'), "
    "GREATEST(max(dead_age) FILTER (WHERE st = 'x'), 0)::float8, "
    "max(maxdel) FILTER (WHERE st IN ('r', 'i', 'd'))::float8, "
    "GREATEST(max(held) FILTER (WHERE st = 'i'), 0)::float8, "
    "min(lease) FILTER (WHERE st IN ('r', 'i', 'd'))::float8, max(hz)::float8, "
    "(bool_or(hb) FILTER (WHERE st IN ('r', 'i', 'd')))::int::float8, max(dlq) FROM (";

/* ---- handler latency: the finished jobs that keep their start and end ----
 *
 * One statement per scrape for the presets that keep both: queue, the jobs finished within the
 * window ($1, an interval) and bounded by now() (a row stamped in the future is not in it), and
 * their duration (end - start, seconds). Only jobs finished successfully: a failed attempt's
 * duration is often the lease that ended it. Each reads a runner's own index where it has one:
 * pg-boss 12's (name, completed_on), queue by queue from its queue table; River's (state,
 * finalized_at); GoodJob's (finished_at). graphile-worker deletes a
 * job when it succeeds, Que and Solid Queue keep no start time: none for them. */
#define DUR(end, start) "(EXTRACT(EPOCH FROM " end ") - EXTRACT(EPOCH FROM " start "))"
#define WINDOW(col, now) col " > " now " - $1::interval AND " col " <= " now
static const char boss_done[] =
    "SELECT q.name AS queue, " DUR("j.completed_on", "j.started_on") " AS d FROM @S.queue q "
    "JOIN @S.job j ON j.name = q.name "
    "WHERE j.state = 'completed' AND " WINDOW("j.completed_on", "now()");
static const char boss9_done[] =
    "SELECT name AS queue, " DUR("completedon", "startedon") " AS d FROM @S.job "
    "WHERE state = 'completed' AND " WINDOW("completedon", "now()")
    " AND name NOT LIKE '\\_\\_state\\_\\_%'";
static const char river_done[] =
    "SELECT queue, " DUR("finalized_at", "attempted_at") " AS d FROM @S.river_job "
    "WHERE state = 'completed' AND " WINDOW("finalized_at", "now()");
/* Oban and GoodJob keep UTC in `timestamp` columns: compared with UTC now, so an index on the
 * column can serve the range. */
static const char oban_done[] =
    "SELECT queue, " DUR("completed_at", "attempted_at") " AS d FROM @S.oban_jobs "
    "WHERE state = 'completed' AND " WINDOW("completed_at", "timezone('UTC', now())");
static const char good_job_done[] =
    "SELECT queue_name AS queue, " DUR("finished_at", "performed_at") " AS d FROM @S.good_jobs "
    "WHERE error IS NULL AND " WINDOW("finished_at", "timezone('UTC', now())");

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
    double window;            /* seconds of finished jobs the handler quantiles cover */
    char window_param[64];    /* the same as an interval parameter */
    /* Layout found on the live database (graphile-worker, pg-boss), 0 until detected. */
    int layout;
    char *sql;      /* the built statement for job presets, NULL until built */
    char *done_sql; /* the handler-latency statement, NULL until built or where none */
};

/* The layouts: graphile-worker before 0.14 and Oban before V14 are LEGACY; pg-boss is one of
 * the BOSS ones. */
enum {
    LAYOUT_UNKNOWN,
    LAYOUT_CURRENT,
    LAYOUT_LEGACY,
    LAYOUT_BOSS9,
    LAYOUT_BOSS10,
    LAYOUT_BOSS11,
    LAYOUT_BOSS12,
};

/* The handler quantiles, in the order of the latency statement's columns. */
static const char *const pgq_quantiles[] = {"0.5", "0.9", "0.99", "1"};
#define PGQ_NQ 4
#define PGQ_P99 2
/* The default `window` of finished jobs the quantiles cover. */
#define PGQ_DEFAULT_WINDOW 300.0
/* Holds and durations below 1 ms count as 1 ms in the margin (as for claim tables). */
#define PGQ_MIN_DENOMINATOR 0.001

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
    free(q->done_sql);
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
    struct cfg_node *pnode = NULL, *snode = NULL, *qnode = NULL, *mnode = NULL, *vnode = NULL,
                    *jnode = NULL, *wnode = NULL;
    q->lease_timeout = -1.0;
    snprintf(where, sizeof where, "an entry of queues of source \"%s\"", source);

    /* Every key is looked up before anything is validated, so that an unknown key is reported
     * with the full list of known ones whatever else is wrong (policy P2). */
    if (cfg_get_node(item, "preset", CFG_SCALAR, &pnode, e) ||
        cfg_get_node(item, "schema", CFG_SCALAR, &snode, e) ||
        cfg_get_node(item, "queues", CFG_SEQ, &qnode, e) ||
        cfg_get_node(item, "max_deliveries", CFG_SCALAR, &mnode, e) ||
        cfg_get_node(item, "visibility_timeout", CFG_NULL, &vnode, e) ||
        cfg_get_node(item, "job_timeout", CFG_NULL, &jnode, e) ||
        cfg_get_node(item, "window", CFG_SCALAR, &wnode, e))
        goto fail;
    if (cfg_get_str(item, "preset", 0, &preset, e))
        goto fail;
    if (preset)
        snprintf(where, sizeof where, "queues preset \"%s\" of source \"%s\"", preset, source);
    if (cfg_finish(item, where, e))
        goto fail;
    if (!preset) {
        cfg_error(e, item,
                  "preset: required in each entry of queues (one of pgmq, "
                  "graphile_worker, pg_boss, river, oban, que, good_job, solid_queue)");
        goto fail;
    }
    q->preset = pgq_preset_find(preset);
    if (!q->preset) {
        cfg_error(e, pnode,
                  "preset: want one of pgmq, graphile_worker, pg_boss, river, oban, que, "
                  "good_job, solid_queue, got \"%s\"",
                  preset);
        goto fail;
    }
    if (cfg_get_str(item, "schema", 0, &q->schema, e))
        goto fail;
    if (q->schema && !*q->schema) {
        cfg_error(e, snode, "schema: want a non-empty string");
        goto fail;
    }
    if (!q->schema)
        q->schema = xstrdup(q->preset->schema);

    if (cfg_get_strlist(item, "queues", &q->queues, &q->nqueues, e))
        goto fail;
    if (qnode && q->nqueues == 0) {
        cfg_error(e, qnode, "queues: want at least one queue name (leave the key out for all)");
        goto fail;
    }
    for (size_t i = 0; i < q->nqueues; i++) {
        if (!*q->queues[i]) {
            cfg_error(e, qnode->items[i], "queues: want non-empty names");
            goto fail;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->queues[i], q->queues[j]) == 0) {
                cfg_error(e, qnode->items[i], "queues: \"%s\" is listed twice", q->queues[i]);
                goto fail;
            }
    }
    if (q->nqueues)
        q->filter_param = pgq_array_literal(q->queues, q->nqueues);

    if (mnode && cfg_get_int(item, "max_deliveries", 0, 1, 1000000, &q->max_deliveries, e))
        goto fail;
    if (cfg_get_positive_duration(item, "window", PGQ_DEFAULT_WINDOW, &q->window, e))
        goto fail;
    pg_interval_param(q->window_param, sizeof q->window_param, q->window);

    /* The declared lease: visibility_timeout for pgmq, job_timeout for runners that keep no
     * lease of their own; the other key is refused with the reason. */
    int pgmq = q->preset->id == PGQ_PGMQ;
    const char *lease_key = pgmq ? "visibility_timeout" : "job_timeout";
    const char *other_key = pgmq ? "job_timeout" : "visibility_timeout";
    struct cfg_node *n = pgmq ? jnode : vnode;
    if (n) {
        cfg_error(e, n, "%s: not a key of preset \"%s\"%s", other_key, q->preset->name,
                  pgmq ? " (its lease is visibility_timeout)" : " (job runners take job_timeout)");
        goto fail;
    }
    if (cfg_get_node(item, lease_key, CFG_SCALAR, &n, e))
        goto fail;
    if (n && !pgmq && !(q->preset->flags & PGQ_JOB_TIMEOUT)) {
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

/* The per-job rows of a preset in the layout found (pure). */
static const char *pgq_rows(enum pgq_preset_id id, int layout)
{
    switch (id) {
    case PGQ_GRAPHILE_WORKER:
        return layout == LAYOUT_LEGACY ? graphile_legacy_rows : graphile_rows;
    case PGQ_PG_BOSS:
        return layout == LAYOUT_BOSS9    ? pg_boss_9_rows
               : layout == LAYOUT_BOSS10 ? boss10_rows
               : layout == LAYOUT_BOSS11 ? boss11_rows
                                         : boss12_rows;
    case PGQ_RIVER:
        return river_rows;
    case PGQ_OBAN:
        return layout == LAYOUT_LEGACY ? oban_legacy_rows : oban_rows;
    case PGQ_QUE:
        return que_rows;
    case PGQ_GOOD_JOB:
        return good_job_rows;
    case PGQ_SOLID_QUEUE:
        return solid_queue_rows;
    case PGQ_PGMQ:
        break;
    }
    return NULL;
}

/* The whole statement for a job preset: the aggregate around the preset's rows, filtered by
 * $1 (a text[]) when the item lists queues. Pure, for the unit tests too. */
static char *pgq_jobs_sql(enum pgq_preset_id id, const char *schema, int layout, int filtered)
{
    const char *rows = pgq_rows(id, layout);
    if (!rows)
        return NULL;
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

/* The handler-latency statement of a preset, or NULL where the runner keeps no finished job
 * with its start and end: one row per queue with jobs finished within the window $1 (and in the
 * item's queues, $2): queue, count, then the quantiles of enum order pgq_quantiles. Pure. */
static char *pgq_done_sql(enum pgq_preset_id id, const char *schema, int layout, int filtered)
{
    const char *rows = NULL;
    switch (id) {
    case PGQ_PG_BOSS:
        rows = layout == LAYOUT_BOSS9 ? boss9_done : boss_done;
        break;
    case PGQ_RIVER:
        rows = river_done;
        break;
    case PGQ_OBAN:
        rows = oban_done;
        break;
    case PGQ_GOOD_JOB:
        rows = good_job_done;
        break;
    default:
        return NULL;
    }
    char *qs = pg_quote_ident(schema);
    struct buf b;
    buf_init(&b);
    buf_puts(&b, "SELECT queue, n, q[1], q[2], q[3], q[4] FROM (SELECT queue::text, "
                 "count(*)::float8 AS n, percentile_cont(ARRAY[0.5, 0.9, 0.99, 1]) WITHIN GROUP "
                 "(ORDER BY GREATEST(d, 0)) AS q FROM (");
    put_with_schema(&b, rows, qs);
    buf_puts(&b, ") AS done");
    if (filtered)
        buf_puts(&b, " WHERE queue = ANY ($2::text[])");
    buf_puts(&b, " GROUP BY 1) AS s ORDER BY 1");
    free(qs);
    return buf_steal(&b);
}

/* ---- reading the aggregate ---- */

/* Parses the aggregate's rows into *rows (malloc'd, *n of them; strings point into r). */
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
        v[i].dlq = PQgetisnull(r, i, PGQ_COL_DLQ) ? NULL : PQgetvalue(r, i, PGQ_COL_DLQ);
        for (int k = 1; k < PGQ_COL_DLQ; k++) {
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

/* What the latency statement said about one queue. */
struct pgq_done {
    int has; /* jobs finished within the window */
    double n;
    double q[PGQ_NQ];
};

/* lease / the worst of (handler p99, oldest current hold), each where known; 0 and *out
 * untouched when there is no lease or nothing to divide by. Where the lease is a heartbeat the
 * handler's length does not matter (the worker renews it while it runs): only the hold, the
 * time since the last beat, counts. Pure. */
static int pgq_margin(double lease, const struct pgq_done *d, int heartbeat, int has_hold,
                      double hold, double *out)
{
    int has_p99 = d && d->has && !heartbeat;
    if (!(lease > 0) || (!has_p99 && !has_hold))
        return 0;
    double worst = PGQ_MIN_DENOMINATOR;
    if (has_p99 && d->q[PGQ_P99] > worst)
        worst = d->q[PGQ_P99];
    if (has_hold && hold > worst)
        worst = hold;
    *out = lease / worst;
    return 1;
}

/* Adds the series of one queue. Which families appear depends on what the preset records (its
 * flags) and on what the config declares; nothing is made up. d: the queue's finished jobs, NULL
 * for a preset without them. metric_set_add failures are programming errors the set remembers
 * (policy P1): nothing to check here. Pure. */
static void pgq_emit(const struct pgq_preset *p, const struct pgq_row *row,
                     const struct pgq_done *d, long long max_deliveries, double lease_timeout,
                     struct metric_set *out)
{
    const char *qn = row->queue;
    metric_set_add(out, "qrel_queue_messages", row->v[PGQ_COL_READY], "queue", qn, "state", "ready",
                   NULL);
    metric_set_add(out, "qrel_queue_messages", row->v[PGQ_COL_IN_FLIGHT], "queue", qn, "state",
                   "in_flight", NULL);
    metric_set_add(out, "qrel_queue_messages", row->v[PGQ_COL_DELAYED], "queue", qn, "state",
                   "delayed", NULL);
    /* No ready or in-flight message: nothing waits, so the oldest is 0 s old (as SQS says). */
    metric_set_add(out, "qrel_queue_oldest_message_age_seconds",
                   row->has[PGQ_COL_OLDEST_AGE] ? row->v[PGQ_COL_OLDEST_AGE] : 0.0, "queue", qn,
                   NULL);
    if (p->flags & PGQ_HAS_REDELIVERED)
        metric_set_add(out, "qrel_messages_redelivered", row->v[PGQ_COL_REDELIVERED], "queue", qn,
                       NULL);
    if (p->flags & PGQ_HAS_DEAD) {
        const char *dlq = row->dlq ? row->dlq : p->dead_letter_queue;
        metric_set_add(out, "qrel_dead_letter_messages", row->v[PGQ_COL_DEAD], "queue", qn,
                       "dead_letter_queue", dlq, NULL);
        metric_set_add(out, "qrel_dead_letter_oldest_age_seconds",
                       row->has[PGQ_COL_DEAD_AGE] ? row->v[PGQ_COL_DEAD_AGE] : 0.0, "queue", qn,
                       "dead_letter_queue", dlq, NULL);
    }
    if (max_deliveries > 0)
        metric_set_add(out, "qrel_max_deliveries", (double)max_deliveries, "queue", qn, NULL);
    else if ((p->flags & PGQ_HAS_MAX_DELIVERIES) && row->has[PGQ_COL_MAX_DELIVERIES])
        metric_set_add(out, "qrel_max_deliveries", row->v[PGQ_COL_MAX_DELIVERIES], "queue", qn,
                       NULL);
    /* The hold age: read from the runner's lock column, or for pgmq derived from vt and the
     * declared visibility timeout (the collector put it into the rows). */
    int has_hold = (p->flags & PGQ_HAS_LEASE_AGE) || (p->id == PGQ_PGMQ && lease_timeout > 0);
    double hold = row->has[PGQ_COL_LEASE_AGE] ? row->v[PGQ_COL_LEASE_AGE] : 0.0;
    if (has_hold)
        metric_set_add(out, "qrel_lease_oldest_age_seconds", hold, "queue", qn, NULL);
    double lease = -1.0;
    if (lease_timeout > 0)
        lease = lease_timeout;
    else if ((p->flags & PGQ_HAS_LEASE_TIMEOUT) && row->has[PGQ_COL_LEASE_TIMEOUT])
        lease = row->v[PGQ_COL_LEASE_TIMEOUT];
    if (lease > 0)
        metric_set_add(out, "qrel_lease_timeout_seconds", lease, "queue", qn, NULL);
    if (d && d->has)
        for (int i = 0; i < PGQ_NQ; i++)
            metric_set_add(out, "qrel_handler_duration_seconds", d->q[i], "queue", qn, "quantile",
                           pgq_quantiles[i], NULL);
    /* The hold counts only when something is held now (an empty queue's 0 is no evidence). */
    double margin;
    int heartbeat = row->has[PGQ_COL_HEARTBEAT] && row->v[PGQ_COL_HEARTBEAT] > 0;
    if (pgq_margin(lease, d, heartbeat, has_hold && row->v[PGQ_COL_IN_FLIGHT] > 0, hold, &margin))
        metric_set_add(out, "qrel_lease_margin_ratio", margin, "queue", qn, NULL);
    if (row->has[PGQ_COL_HORIZON])
        metric_set_add(out, "qrel_retry_horizon_seconds", row->v[PGQ_COL_HORIZON], "queue", qn,
                       NULL);
}

/* Runs the latency statement: *done gets one entry per aggregate row (matched by queue name,
 * both ordered by queue). */
static int run_done(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                    const struct pgq_row *rows, size_t n, struct pgq_done *done, struct err *e)
{
    const char *params[2] = {q->window_param, q->filter_param};
    PGresult *r = NULL;
    if (pg_query(c, dl, q->what, q->done_sql, q->filter_param ? 2 : 1, params, &r, e))
        return -1;
    int rc = 0;
    if (PQnfields(r) != 2 + PGQ_NQ) {
        rc = pg_error(c, e, ERR_PROTOCOL, "%s: want %d columns of finished jobs, got %d", q->what,
                      2 + PGQ_NQ, PQnfields(r));
        goto out;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        for (size_t k = 0; k < n; k++) {
            if (strcmp(rows[k].queue, name) != 0)
                continue;
            done[k].has = pg_cell_double(r, i, 1, &done[k].n) == 0;
            for (int j = 0; j < PGQ_NQ && done[k].has; j++)
                if (pg_cell_double(r, i, 2 + j, &done[k].q[j]))
                    done[k].has = 0;
            break;
        }
    }
out:
    PQclear(r);
    return rc;
}

static int run_aggregate(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                         const char *sql, int nparams, const char *const *params,
                         struct metric_set *out, struct err *e)
{
    PGresult *r = NULL;
    struct pgq_row *rows = NULL;
    struct pgq_done *done = NULL;
    size_t n = 0;
    int rc = -1;
    if (pg_query(c, dl, q->what, sql, nparams, params, &r, e))
        return -1;
    if (parse_rows(q, c, r, &rows, &n, e))
        goto out;
    /* The finished jobs are read after the pending ones, so a job that finishes in between is
     * seen at most once as in flight and once as done, never lost from both. */
    done = xcalloc(n ? n : 1, sizeof *done);
    if (q->done_sql && n && run_done(q, c, dl, rows, n, done, e))
        goto out;
    for (size_t i = 0; i < n; i++)
        pgq_emit(q->preset, &rows[i], q->done_sql ? &done[i] : NULL, q->max_deliveries,
                 q->lease_timeout, out);
    rc = 0;
out:
    free(done);
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
                               "%s AS held, NULL::float8 AS lease" NONE
                               "FROM %s.%s UNION ALL SELECT %s%s",
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

/* Three presets have layouts that changed across the versions in use. graphile-worker before
 * 0.14 has one jobs table (no _private_jobs). Oban before V14 has no 'suspended' state. pg-boss is
 * told apart by its job table's columns: 9 and older have camel-case names folded to lower case
 * (retrycount), 10 has expire_in (an interval), 11 expire_seconds, 12 heartbeat_seconds too. Which
 * one a database has is asked once and remembered (check() asks again, and so does the scrape after
 * a failure). */
static int detect_layout(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                         struct err *e)
{
    const char *sql = NULL;
    if (q->preset->id == PGQ_GRAPHILE_WORKER)
        sql = "SELECT to_regclass(format('%I._private_jobs', $1::text)) IS NOT NULL, "
              "to_regclass(format('%I.jobs', $1::text)) IS NOT NULL";
    else if (q->preset->id == PGQ_OBAN)
        sql = "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_enum e JOIN pg_catalog.pg_type t ON "
              "t.oid = e.enumtypid JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace "
              "WHERE n.nspname = $1 AND t.typname = 'oban_job_state' AND "
              "e.enumlabel = 'suspended')";
    else if (q->preset->id == PGQ_PG_BOSS)
        sql = "SELECT COALESCE(string_agg(attname::text, ',' ORDER BY attname), '') "
              "FROM pg_catalog.pg_attribute WHERE attrelid = "
              "to_regclass(format('%I.job', $1::text)) AND NOT attisdropped AND attname IN "
              "('retrycount', 'expire_in', 'expire_seconds', 'heartbeat_seconds')";
    if (!sql) {
        q->layout = LAYOUT_CURRENT;
        return 0;
    }
    PGresult *r = NULL;
    const char *params[1] = {q->schema};
    if (pg_query(c, dl, q->what, sql, 1, params, &r, e))
        return -1;
    int layout = LAYOUT_UNKNOWN;
    if (PQntuples(r) == 1 && q->preset->id == PGQ_OBAN) {
        layout = strcmp(PQgetvalue(r, 0, 0), "t") == 0 ? LAYOUT_CURRENT : LAYOUT_LEGACY;
    } else if (PQntuples(r) == 1 && q->preset->id == PGQ_GRAPHILE_WORKER) {
        if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
            layout = LAYOUT_CURRENT;
        else if (strcmp(PQgetvalue(r, 0, 1), "t") == 0)
            layout = LAYOUT_LEGACY;
    } else if (PQntuples(r) == 1) {
        const char *cols = PQgetvalue(r, 0, 0);
        /* no job table, or none of these columns: the column check says what is missing */
        layout = strstr(cols, "heartbeat_seconds") ? LAYOUT_BOSS12
                 : strstr(cols, "expire_seconds")  ? LAYOUT_BOSS11
                 : strstr(cols, "expire_in")       ? LAYOUT_BOSS10
                 : strstr(cols, "retrycount")      ? LAYOUT_BOSS9
                                                   : LAYOUT_BOSS12;
    }
    PQclear(r);
    if (layout == LAYOUT_UNKNOWN)
        return pg_error(c, e, ERR_QUERY,
                        "%s: neither table \"%s._private_jobs\" (graphile-worker >= 0.14) "
                        "nor \"%s.jobs\" exists",
                        q->what, q->schema, q->schema);
    if (layout != q->layout) {
        free(q->sql);
        free(q->done_sql);
        q->sql = q->done_sql = NULL;
    }
    q->layout = layout;
    return 0;
}

/* The scrape of a job preset: the aggregate, then the finished jobs. check() runs it too. */
static int collect_jobs(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                        struct metric_set *out, struct err *e)
{
    if (q->layout == LAYOUT_UNKNOWN && detect_layout(q, c, dl, e))
        return -1;
    if (!q->sql) {
        q->sql = pgq_jobs_sql(q->preset->id, q->schema, q->layout, q->filter_param != NULL);
        q->done_sql = pgq_done_sql(q->preset->id, q->schema, q->layout, q->filter_param != NULL);
    }
    const char *params[1] = {q->filter_param};
    if (run_aggregate(q, c, dl, q->sql, q->filter_param ? 1 : 0, q->filter_param ? params : NULL,
                      out, e)) {
        q->layout = LAYOUT_UNKNOWN; /* the runner may have been upgraded: look again */
        return -1;
    }
    return 0;
}

static int collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct queues *q = item;
    metric_set_set_kind(out, q->preset->kind_label);
    if (q->preset->id == PGQ_PGMQ)
        return collect_pgmq(q, c, dl, out, e);
    return collect_jobs(q, c, dl, out, e);
}

/* ---- check ---- */

struct table_check {
    const char *table;
    struct pg_column cols[12];
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
/* pg-boss 10-12: the job table (its partitions inherit the columns) and the queue table the
 * dead-letter queue and the retry settings come from. */
#define BOSS_JOB_COLS                                                                              \
    {"name", A}, {"state", A}, {"start_after", T}, {"created_on", T}, {"completed_on", T},         \
        {"started_on", T}, {"retry_count", N},                                                     \
    {                                                                                              \
        "retry_limit", N                                                                           \
    }
#define BOSS_QUEUE_COLS                                                                            \
    {"name", A}, {"dead_letter", A}, {"retry_limit", N}, {"retry_delay", N}, {"retry_backoff", A}, \
    {                                                                                              \
        "expire_seconds", N                                                                        \
    }
static const struct table_check checks_boss10[] = {
    {"job", {BOSS_JOB_COLS, {"expire_in", A}}, 9},
    {"queue", {BOSS_QUEUE_COLS}, 6},
};
static const struct table_check checks_boss11[] = {
    {"job", {BOSS_JOB_COLS, {"expire_seconds", N}}, 9},
    {"queue", {BOSS_QUEUE_COLS, {"retry_delay_max", N}}, 7},
};
static const struct table_check checks_boss12[] = {
    {"job",
     {BOSS_JOB_COLS,
      {"expire_seconds", N},
      {"heartbeat_seconds", N},
      {"heartbeat_on", T},
      {"blocked", A}},
     12},
    {"queue", {BOSS_QUEUE_COLS, {"retry_delay_max", N}}, 7},
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
      {"retrylimit", N},
      {"expirein", A}},
     9},
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
      {"discarded_at", T},
      {"completed_at", T}},
     8},
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

/* The columns of the layout found, then the scrape's own statements (into a set thrown
 * away), so that --config.check fails on whatever a scrape would fail on; the column check
 * comes first because it names the missing column, which the server's message may not. */
static int check_jobs(struct queues *q, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    int rc = 0;
    if (detect_layout(q, c, dl, e))
        return -1;
    switch (q->preset->id) {
    case PGQ_GRAPHILE_WORKER:
        rc = q->layout == LAYOUT_LEGACY ? CHECK(checks_graphile_legacy) : CHECK(checks_graphile);
        break;
    case PGQ_PG_BOSS:
        rc = q->layout == LAYOUT_BOSS9    ? CHECK(checks_pg_boss_9)
             : q->layout == LAYOUT_BOSS10 ? CHECK(checks_boss10)
             : q->layout == LAYOUT_BOSS11 ? CHECK(checks_boss11)
                                          : CHECK(checks_boss12);
        break;
    case PGQ_RIVER:
        rc = CHECK(checks_river);
        break;
    case PGQ_OBAN:
        rc = CHECK(checks_oban);
        break;
    case PGQ_QUE:
        rc = CHECK(checks_que);
        break;
    case PGQ_GOOD_JOB:
        rc = CHECK(checks_good_job);
        break;
    case PGQ_SOLID_QUEUE:
        rc = CHECK(checks_solid_queue);
        break;
    case PGQ_PGMQ:
        break;
    }
    if (rc)
        return -1;
    struct metric_set *scratch = metric_set_new("check", q->preset->kind_label);
    rc = collect_jobs(q, c, dl, scratch, e);
    metric_set_free(scratch);
    return rc;
}

static int check(void *item, struct pg_conn *c, const struct deadline *dl, struct err *e)
{
    struct queues *q = item;
    if (q->preset->id == PGQ_PGMQ)
        return check_pgmq(q, c, dl, e);
    return check_jobs(q, c, dl, e);
}

const struct pg_section_kind pg_queues_section = {
    .key = "queues",
    .kind_label = "pg_jobs",
    .configure = configure,
    .collect = collect,
    .check = check,
    .destroy = destroy,
};
