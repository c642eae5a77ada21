/* postgres/queues_sql_dj.c: delayed_job's statement (pure, no I/O).
 *
 * delayed_job 4.1 (Active Record backend) keeps its jobs in one delayed_jobs table. Its reserve
 * hands out a job whose run_at has passed, with no failed_at, unlocked or locked longer ago than
 * max_run_time (Delayed::Backend::ActiveRecord's ready_to_run): a lock that old is an expired
 * lease, the job waiting again. attempts counts the failed runs (> 0: it is being retried); with
 * destroy_failed_jobs false a job that used up max_attempts keeps its row with failed_at set.
 * Last try (PGQ_COL_LAST_TRY): a pending job whose next failure is its last (reschedule fails a
 * job once attempts + 1 reaches max_attempts), for the finding on failed jobs destroyed. Ahead:
 * locked_at, failed_at and created_at are Delayed::Job.db_time_now and Active Record's
 * timestamps, the worker's or the enqueuing host's clock.
 *
 * The other job presets give one row per job to the generic two-level aggregate of
 * queues_sql.c; delayed_job's one table is read once here and aggregated in one level, per
 * queue, into the same columns (enum pgq_col) with the same values:
 *
 * - Each job's class (0 ready, 1 in flight, 2 delayed, 3 failed) is worked out once, in a
 *   subquery fenced by OFFSET 0: without the fence the planner pulls the subquery up and
 *   evaluates the CASE again in every FILTER that names it.
 * - The times are compared as stored, against thresholds of the column's own type worked out
 *   once (InitPlans): a `timestamp` column (Rails' default) holds UTC, so it is compared with
 *   timezone('UTC', now()); a timestamptz column with now(). Which columns are which is the
 *   detected layout (LAYOUT_DJ + a bit per timestamptz column). date_part on every row and
 *   column was most of the statement's CPU on a large table.
 * - Ages are taken from min() of the stored times, once per queue: now's epoch minus the epoch
 *   of the oldest stamp is the largest age, as date_part is monotonic.
 * - A row lies ahead when any of its three stamps does: where the three columns are of one type
 *   (Rails' default: all `timestamp`), that is GREATEST of them (NULLs ignored) against one
 *   threshold, one comparison a row instead of three (most rows have none ahead, so the OR
 *   form evaluated all three on almost every row).
 * - The last-try jobs and the rows ahead are counted in the same scan (they were two more scans
 *   of the table: neither has an index to read them by, delayed_job's migration makes only
 *   (priority, run_at)). The rows ahead stay capped at PG_AHEAD_CAP per table: the queues take
 *   their share in name order (a window over the few result rows).
 *
 * On 1M jobs this is about a third of the two-level statement's CPU (bench/history.md). */
#include <stdio.h>
#include <stdlib.h>

#include "queues.h"

/* The time columns read, their bit in the layout, and the now() of their type. */
#define DJ_RUN_AT 1
#define DJ_LOCKED_AT 2
#define DJ_FAILED_AT 4
#define DJ_CREATED_AT 8

static const char *now_of(int tz, int bit)
{
    return tz & bit ? "now()" : "timezone('UTC', now())";
}

static const char *ahead_of(int tz, int bit)
{
    return tz & bit ? PG_AHEAD_NOW : "timezone('UTC', " PG_AHEAD_NOW ")";
}

/* Appends whether the job's locked_at, failed_at or created_at lies ahead (a boolean). */
static void ahead_expr(struct buf *b, int tz)
{
    int stamps = DJ_LOCKED_AT | DJ_FAILED_AT | DJ_CREATED_AT;
    if ((tz & stamps) == 0 || (tz & stamps) == stamps)
        buf_printf(b, "GREATEST(locked_at, failed_at, created_at) > (SELECT %s)",
                   ahead_of(tz, DJ_CREATED_AT));
    else /* mixed types: GREATEST would cast `timestamp` by the session's TimeZone */
        buf_printf(b,
                   "(locked_at > (SELECT %s) OR failed_at > (SELECT %s) OR created_at > "
                   "(SELECT %s))",
                   ahead_of(tz, DJ_LOCKED_AT), ahead_of(tz, DJ_FAILED_AT),
                   ahead_of(tz, DJ_CREATED_AT));
}

/* The rows below are laid out by hand: clang-format cannot break these strings. */
/* clang-format off */
char *queues_sql_delayed_job(const char *schema, int layout, int filtered, double max_run_time,
                             long long max_attempts)
{
    int tz = layout >= LAYOUT_DJ ? layout - LAYOUT_DJ : 0;
    char *qs = pg_quote_ident(schema);
    struct buf b;
    buf_init(&b);
    /* the outer level: the columns of enum pgq_col, and the cap on the rows ahead */
    buf_puts(&b,
             "SELECT queue, r, i, d, oldest, redel, x, dead_age, NULL::float8, held, "
             "NULL::float8, NULL::float8, NULL::float8, LEAST(a, GREATEST(" PG_AHEAD_CAP " - "
             "(sum(a) OVER (ORDER BY queue ROWS UNBOUNDED PRECEDING) - a), 0))::float8, l, "
             "0::float8, NULL::text FROM (");
    /* per queue: one pass over the job rows */
#define DJ_AGE(col, cond)                                                                         \
    "GREATEST((SELECT date_part('epoch', now())) - date_part('epoch', min(" col ") FILTER (WHERE " \
    cond ")), 0)::float8"
    buf_printf(&b,
               "SELECT queue, count(*) FILTER (WHERE c = 0)::int8 AS r, "
               "count(*) FILTER (WHERE c = 1)::int8 AS i, count(*) FILTER (WHERE c = 2)::int8 AS d, "
               DJ_AGE("created_at", "c < 2") " AS oldest, "
               "count(*) FILTER (WHERE c < 3 AND attempts > 0)::int8 AS redel, "
               "count(*) FILTER (WHERE c = 3)::int8 AS x, "
               DJ_AGE("failed_at", "c = 3") " AS dead_age, "
               DJ_AGE("locked_at", "c = 1") " AS held, "
               "count(*) FILTER (WHERE ahead) AS a, "
               "count(*) FILTER (WHERE c < 3 AND attempts >= %lld - 1)::float8 AS l FROM (",
               max_attempts);
#undef DJ_AGE
    /* per job: its class as delayed_job's reserve sees it (ready_to_run: run_at passed, no
     * failed_at, unlocked or locked longer ago than max_run_time), and whether a column stamped
     * by a host's clock lies ahead */
    buf_printf(&b,
               "%sSELECT COALESCE(queue, '" DELAYED_JOB_NO_QUEUE "')::text AS queue, "
               "CASE WHEN failed_at IS NOT NULL THEN 3 "
               "WHEN locked_at > (SELECT %s - %.17g * interval '1 second') THEN 1 "
               "WHEN run_at > (SELECT %s) THEN 2 ELSE 0 END AS c, "
               "created_at, failed_at, locked_at, attempts, ",
               filtered ? "(" : "", now_of(tz, DJ_LOCKED_AT), max_run_time, now_of(tz, DJ_RUN_AT));
    ahead_expr(&b, tz);
    buf_printf(&b, " AS ahead FROM %s.delayed_jobs", qs);
    /* A listed queue shows (with zeros) even when it has no job at all right now. */
    if (filtered)
        buf_puts(&b, " WHERE COALESCE(queue, '" DELAYED_JOB_NO_QUEUE "') = ANY ($1::text[]) "
                     "OFFSET 0) UNION ALL SELECT unnest($1::text[]), NULL, NULL, NULL, NULL, "
                     "NULL, NULL");
    else
        buf_puts(&b, " OFFSET 0");
    buf_puts(&b, ") AS jobs GROUP BY 1) AS per_queue ORDER BY 1");
    free(qs);
    return buf_steal(&b);
}
/* clang-format on */
