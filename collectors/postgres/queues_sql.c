/* postgres/queues_sql.c: the SQL of the `queues` section: per preset and layout, the rows that
 * stand for its jobs, and the statements built from them (pure, no I/O).
 *
 * pgmq (kind label pgmq) keeps one table per queue and lists them in pgmq.meta; the job runners
 * (graphile_worker, pg_boss, river, oban, que, good_job, solid_queue, delayed_job; kind label
 * pg_jobs) keep
 * their jobs in a few tables with a queue column and a state. Every preset is reduced to the same
 * shape: an inner SELECT that gives each pending or dead job one row (queue, state class, age,
 * redelivered, ...) in the runner's own terms, wrapped in one generic aggregate grouped by queue.
 * (delayed_job, whose jobs are all in one table, has a statement of its own that reads it in
 * one scan: queues_sql_dj.c.)
 * So there is one statement per preset per scrape for the pending and dead jobs (pgmq: one to
 * list the queues, one over all of them), plus one for the finished jobs where the runner keeps
 * their start and end; the state mapping lives in one place per runner, and the emitting code
 * is shared.
 *
 * State classes: 'r' ready (runnable now), 'i' in flight (a worker holds it), 'd' delayed
 * (scheduled, or waiting to be retried), 'x' dead (given up on: the runner's discarded / failed
 * jobs). Finished jobs are filtered out in the inner WHERE, so the runners' own state / finished
 * indexes keep the scan to pending work and the dead jobs the runner retains. 'a' (ahead): a
 * job whose column stamped by the application's clock lies after now(), one row each, up to
 * PG_AHEAD_CAP per table (qrel_future_stamped_rows; see "rows ahead" below). 'e' (Laravel): one
 * more row for each held job whose lease expired under it.
 *
 * Timestamps are compared as epochs (date_part('epoch', col)): for `timestamp without time zone`
 * columns (Rails, Ecto) that reads the stored UTC value as UTC whatever the session's TimeZone,
 * and for timestamptz it is the true epoch, so one expression serves both. date_part, not
 * EXTRACT: since PostgreSQL 14 EXTRACT returns numeric (date_part still float8, the same value),
 * and numeric arithmetic on every row and column was the larger part of a statement's cost on a
 * large table. now()'s epoch is a scalar subquery, worked out once per statement (an InitPlan)
 * instead of on every row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queues.h"

/* ---- the per-job rows of each preset ----
 *
 * Every inner query yields: queue text, st char ('r','i','d','x'), age (seconds since the job
 * was enqueued), redel (delivered more than once), dead_age (seconds since it was given up on),
 * maxdel (deliveries allowed), held (seconds a worker has held it), lease (seconds a hold may
 * last), hz (the retry horizon, seconds), hb (the lease is a heartbeat), dlq (the queue's own
 * dead-letter queue). @S is replaced by the quoted schema. NULL where the runner records
 * nothing; NONE fills the last three for the runners that have none of them. */
#define EPOCH(x) "date_part('epoch', " x ")"
#define EP "(SELECT " EPOCH("now()") ")"
#define EP_AHEAD "(SELECT " EPOCH(PG_AHEAD_NOW) ")"
#define AGE(col) "(" EP " - " EPOCH(col) ")"
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
    BOSS_ALL(EPOCH("j.expire_in"), "j.started_on", "", "false",
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
    AGE("startedon") " AS held, " EPOCH("expirein") "::float8 AS lease" NONE                   \
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
    "WHEN " EPOCH("scheduled_at") " > " EP " THEN 'd' ELSE 'r' END AS st, "
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

/* delayed_job 4.1 (Active Record backend): its one table is read by a statement of its own,
 * in one scan (queues_sql_dj.c). */

/* Laravel 8+ database driver (Illuminate\Queue\DatabaseQueue): one jobs table; reserved_at,
 * available_at and created_at are the PHP host's time() in integer seconds. A reserved job is in
 * flight; one reserved at or before now - retry_after (@L) is what isReservedButExpired hands out
 * again while its first handler may still run: one more 'e' row each (the lease expired under
 * it). attempts grows at each reservation: a waiting job that has one was released to be
 * retried, a reserved one above 1 is a redelivery. failed_jobs is the failer's table for every
 * driver: its rows of the jobs table's connection (@C) are this queue's dead jobs, those of any
 * other connection (a Redis one) are labelled queue@connection, so both read from one place. */
#define LV_QUEUE "CASE WHEN connection = @C THEN queue ELSE queue || '@' || connection END"
static const char laravel_rows[] =
    "SELECT queue, "
    "CASE WHEN reserved_at IS NOT NULL THEN 'i' WHEN available_at > " EP " THEN 'd' "
    "ELSE 'r' END AS st, (" EP " - created_at) AS age, "
    "CASE WHEN reserved_at IS NULL THEN attempts > 0 ELSE attempts > 1 END AS redel, "
    "NULL::float8 AS dead_age, NULL::float8 AS maxdel, (" EP " - reserved_at) AS held, "
    "NULL::float8 AS lease" NONE "FROM @S.jobs "
    "UNION ALL SELECT queue, 'e', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM @S.jobs WHERE reserved_at <= " EP " - @L "
    "UNION ALL SELECT " LV_QUEUE ", 'x', NULL, NULL, " AGE("failed_at") ", NULL, NULL, NULL, "
    "NULL, NULL, NULL FROM @S.failed_jobs";

/* ---- rows ahead: the jobs whose application-stamped column lies after now() ----
 *
 * Where a runner stamps a column qrel reads with the clock of the host that runs it (not the
 * database's now()), a host whose clock runs fast writes it ahead of now(): the row is then in no
 * window and reads as 0 s old. Each such column is listed here with the jobs it is read for;
 * scheduled times (run_at, scheduled_at, start_after) are intended, never counted. The branches
 * are read up to PG_AHEAD_CAP rows per table (each through the index named) and counted per
 * queue as class 'a'. pg-boss and Que stamp every column qrel reads with now() in their SQL:
 * none can be ahead, they have none (docs/kinds/postgres.md cites the code).
 *
 * graphile-worker: locked_at is the Node process's clock with its useNodeTime option (else
 * now()); created_at and updated_at are now(). */
#define GRAPHILE_AHEAD(from, queue)                                                             \
    "SELECT COALESCE(" queue ", '" GRAPHILE_NO_QUEUE "') AS queue FROM " from                   \
    " WHERE j.locked_at > " PG_AHEAD_NOW
static const char graphile_ahead[] =
    GRAPHILE_AHEAD("@S._private_jobs j "
                   "LEFT JOIN @S._private_job_queues q ON q.id = j.job_queue_id",
                   "q.queue_name");
static const char graphile_legacy_ahead[] = GRAPHILE_AHEAD("@S.jobs j", "j.queue_name");
/* River: finalized_at is the client's time.Now() (completed and discarded jobs, read by the
 * latency window and the dead age); created_at and attempted_at are now(). Index (state,
 * finalized_at). */
static const char river_ahead[] =
    "SELECT queue FROM @S.river_job "
    "WHERE state IN ('completed', 'discarded') AND finalized_at > " PG_AHEAD_NOW;
/* Oban: attempted_at, completed_at and discarded_at are the node's DateTime.utc_now(); inserted_at
 * is the column's default (now()). Its (state, ...) indexes narrow each branch to one state. */
#define UTC_NOW "timezone('UTC', now())"
#define UTC_AHEAD "timezone('UTC', " PG_AHEAD_NOW ")"
static const char oban_ahead[] =
    "SELECT queue FROM @S.oban_jobs WHERE state = 'executing' AND attempted_at > " UTC_AHEAD " "
    "UNION ALL SELECT queue FROM @S.oban_jobs "
    "WHERE state = 'completed' AND completed_at > " UTC_AHEAD " "
    "UNION ALL SELECT queue FROM @S.oban_jobs "
    "WHERE state = 'discarded' AND discarded_at > " UTC_AHEAD;
/* GoodJob: created_at, performed_at and finished_at are Rails' Time.current. Unfinished jobs
 * (age, hold), then finished ones through its finished_at index. */
static const char good_job_ahead[] =
    "SELECT queue_name AS queue FROM @S.good_jobs WHERE finished_at IS NULL AND "
    "(created_at > " UTC_AHEAD " OR performed_at > " UTC_AHEAD ") "
    "UNION ALL SELECT queue_name FROM @S.good_jobs WHERE finished_at > " UTC_AHEAD;
/* Solid Queue: a job enqueued alone is created by Rails (create!: its created_at is the host's
 * clock), and so is a failed execution; claimed executions are inserted with insert_all!, whose
 * timestamps are the database's CURRENT_TIMESTAMP. */
static const char solid_queue_ahead[] =
    "SELECT e.queue_name AS queue FROM @S.solid_queue_ready_executions e "
    "JOIN @S.solid_queue_jobs j ON j.id = e.job_id WHERE j.created_at > " UTC_AHEAD " "
    "UNION ALL SELECT j.queue_name FROM @S.solid_queue_claimed_executions e "
    "JOIN @S.solid_queue_jobs j ON j.id = e.job_id WHERE j.created_at > " UTC_AHEAD " "
    "UNION ALL SELECT j.queue_name FROM @S.solid_queue_failed_executions e "
    "JOIN @S.solid_queue_jobs j ON j.id = e.job_id WHERE e.created_at > " UTC_AHEAD;

/* Laravel: every time of jobs is the PHP host's time(); failed_at is its Date::now(). */
static const char laravel_ahead[] =
    "SELECT queue FROM @S.jobs WHERE created_at > " EP_AHEAD " OR reserved_at > " EP_AHEAD " "
    "UNION ALL SELECT " LV_QUEUE " FROM @S.failed_jobs WHERE " EPOCH("failed_at") " > "
    EP_AHEAD;

/* The rest of a row that stands for no job: every existing queue gets a result row, even when
 * empty (its counts are then 0). */
#define NO_JOB_TAIL                                                                             \
    ", NULL::float8, NULL::bool, NULL::float8, NULL::float8, NULL::float8, NULL::float8, "      \
    "NULL::float8, NULL::bool, NULL::text"
static const char no_job[] = ", NULL" NO_JOB_TAIL;

/* The aggregate over any preset's rows: one result row per queue, columns as enum pgq_col. Two
 * levels: the inner one groups by queue and class, so each job row costs one hash lookup and a
 * few plain aggregates; the outer one turns each queue's few class rows into columns. (One level
 * with a FILTER per column compared st, a text, about 14 times a row: most of the statement's
 * CPU on a large table.) The last-try column is delayed_job's only (queues_sql_dj.c): 0 here. */
#define CLASS_COUNT(c) "COALESCE(sum(n) FILTER (WHERE st = '" c "'), 0)"
const char queues_sql_aggregate_head[] =
    "SELECT queue, " CLASS_COUNT("r") "::int8, " CLASS_COUNT("i") "::int8, "
    CLASS_COUNT("d") "::int8, GREATEST(max(age) FILTER (WHERE st IN ('r', 'i')), 0)::float8, "
    "COALESCE(sum(redel) FILTER (WHERE st IN ('r', 'i', 'd')), 0)::int8, " CLASS_COUNT("x") "::int8, "
    "GREATEST(max(dead_age) FILTER (WHERE st = 'x'), 0)::float8, "
    "max(maxdel) FILTER (WHERE st IN ('r', 'i', 'd'))::float8, "
    "GREATEST(max(held) FILTER (WHERE st = 'i'), 0)::float8, "
    "min(lease) FILTER (WHERE st IN ('r', 'i', 'd'))::float8, max(hz)::float8, "
    "(bool_or(hb) FILTER (WHERE st IN ('r', 'i', 'd')))::int::float8, "
    CLASS_COUNT("a") "::float8, 0::float8, " CLASS_COUNT("e") "::float8, "
    "max(dlq) FROM (SELECT queue::text AS queue, st, count(*) AS n, max(age) AS age, "
    "count(*) FILTER (WHERE redel) AS redel, max(dead_age) AS dead_age, max(maxdel) AS maxdel, "
    "max(held) AS held, min(lease) AS lease, max(hz) AS hz, bool_or(hb) AS hb, max(dlq) AS dlq "
    "FROM (";
/* What closes it: the inner level's grouping (after the job rows' alias and filter), then the
 * outer one's. */
#define AGGREGATE_TAIL " GROUP BY 1, 2) AS per_class GROUP BY 1 ORDER BY 1"

/* ---- handler latency: the finished jobs that keep their start and end ----
 *
 * One statement per scrape for the presets that keep both: queue, the jobs finished within the
 * window ($1, an interval) and bounded by now() (a row stamped in the future is not in it), and
 * their duration (end - start, seconds). Only jobs finished successfully: a failed attempt's
 * duration is often the lease that ended it. Each reads a runner's own index where it has one:
 * pg-boss 12's (name, completed_on), queue by queue from its queue table; River's (state,
 * finalized_at); GoodJob's (finished_at). graphile-worker deletes a
 * job when it succeeds, Que and Solid Queue keep no start time: none for them. */
#define DUR(end, start) "(" EPOCH(end) " - " EPOCH(start) ")"
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
    "WHERE state = 'completed' AND " WINDOW("completed_at", UTC_NOW);
static const char good_job_done[] =
    "SELECT queue_name AS queue, " DUR("finished_at", "performed_at") " AS d FROM @S.good_jobs "
    "WHERE error IS NULL AND " WINDOW("finished_at", UTC_NOW);

/* clang-format on */

/* Each preset's SQL in each layout: its per-job rows, and its rows ahead (NULL where none can
 * be). The first entry of the preset whose layout matches serves; layout 0 matches any. */
static const struct pgq_sql {
    enum pgq_preset_id id;
    int layout;
    const char *rows, *ahead;
} pgq_sqls[] = {
    {PGQ_GRAPHILE_WORKER, LAYOUT_LEGACY, graphile_legacy_rows, graphile_legacy_ahead},
    {PGQ_GRAPHILE_WORKER, 0, graphile_rows, graphile_ahead},
    {PGQ_PG_BOSS, LAYOUT_BOSS9, pg_boss_9_rows, NULL},
    {PGQ_PG_BOSS, LAYOUT_BOSS10, boss10_rows, NULL},
    {PGQ_PG_BOSS, LAYOUT_BOSS11, boss11_rows, NULL},
    {PGQ_PG_BOSS, 0, boss12_rows, NULL},
    {PGQ_RIVER, 0, river_rows, river_ahead},
    {PGQ_OBAN, LAYOUT_LEGACY, oban_legacy_rows, oban_ahead},
    {PGQ_OBAN, 0, oban_rows, oban_ahead},
    {PGQ_QUE, 0, que_rows, NULL},
    {PGQ_GOOD_JOB, 0, good_job_rows, good_job_ahead},
    {PGQ_SOLID_QUEUE, 0, solid_queue_rows, solid_queue_ahead},
    {PGQ_LARAVEL, 0, laravel_rows, laravel_ahead},
};

static const struct pgq_sql *pgq_sql_find(enum pgq_preset_id id, int layout)
{
    for (size_t i = 0; i < sizeof pgq_sqls / sizeof pgq_sqls[0]; i++)
        if (pgq_sqls[i].id == id && (!pgq_sqls[i].layout || pgq_sqls[i].layout == layout))
            return &pgq_sqls[i];
    return NULL;
}

/* tmpl with delayed_job's @L (max_run_time) and @M (max_attempts), or Laravel's @L (retry_after)
 * and @C (its connection, as a literal), written in before the schema goes in (a schema's name
 * could hold them; the schema cannot end up in them). */
static char *with_limits(const char *tmpl, double max_run_time, long long max_attempts,
                         const char *connection)
{
    char lease[64], attempts[32];
    snprintf(lease, sizeof lease, "%.17g", max_run_time);
    snprintf(attempts, sizeof attempts, "%lld", max_attempts);
    struct buf b, c, lit;
    buf_init(&b);
    buf_init(&c);
    buf_init(&lit);
    /* a standard string literal: quotes doubled (the connection sets standard_conforming_strings
     * on; an E'' string is not needed, nothing is escaped with a backslash) */
    buf_puts(&lit, "'");
    for (const char *p = connection ? connection : LARAVEL_CONNECTION; *p; p++) {
        if (*p == '\'')
            buf_putc(&lit, '\'');
        buf_putc(&lit, *p);
    }
    buf_puts(&lit, "'");
    buf_substitute(&b, tmpl, "@L", lease);
    buf_substitute(&c, b.data, "@M", attempts);
    buf_free(&b);
    buf_init(&b);
    buf_substitute(&b, c.data, "@C", lit.data);
    buf_free(&c);
    buf_free(&lit);
    return buf_steal(&b);
}

char *queues_sql_jobs(enum pgq_preset_id id, const char *schema, int layout, int filtered)
{
    return queues_sql_jobs_limits(id, schema, layout, filtered, DELAYED_JOB_MAX_RUN_TIME,
                                  DELAYED_JOB_MAX_ATTEMPTS);
}

static char *jobs_sql(enum pgq_preset_id id, const char *schema, int layout, int filtered,
                      double max_run_time, long long max_attempts, const char *connection);

char *queues_sql_jobs_limits(enum pgq_preset_id id, const char *schema, int layout, int filtered,
                             double max_run_time, long long max_attempts)
{
    return jobs_sql(id, schema, layout, filtered, max_run_time, max_attempts, NULL);
}

char *queues_sql_jobs_laravel(const char *schema, int filtered, double retry_after,
                              const char *connection)
{
    return jobs_sql(PGQ_LARAVEL, schema, 0, filtered, retry_after, 0, connection);
}

/* The whole statement for a job preset: the aggregate around the preset's rows, filtered by
 * $1 (a text[]) when the item lists queues. Pure, for the unit tests too. */
static char *jobs_sql(enum pgq_preset_id id, const char *schema, int layout, int filtered,
                      double max_run_time, long long max_attempts, const char *connection)
{
    if (id == PGQ_DELAYED_JOB)
        return queues_sql_delayed_job(schema, layout, filtered, max_run_time, max_attempts);
    const struct pgq_sql *sql = pgq_sql_find(id, layout);
    if (!sql)
        return NULL;
    char *qs = pg_quote_ident(schema);
    char *rows = with_limits(sql->rows, max_run_time, max_attempts, connection);
    struct buf b;
    buf_init(&b);
    buf_puts(&b, queues_sql_aggregate_head);
    buf_substitute(&b, rows, "@S", qs);
    free(rows);
    /* A listed queue shows (with zeros) even when it has no job at all right now. */
    if (filtered)
        buf_printf(&b, " UNION ALL SELECT unnest($1::text[])%s", no_job);
    /* The rows ahead, in this same statement: the filter inside the cap, so that the queues
     * left out do not take the listed ones' share of it. */
    if (sql->ahead) {
        buf_puts(&b, " UNION ALL SELECT queue, 'a'" NO_JOB_TAIL " FROM (SELECT queue FROM (");
        char *ahead = with_limits(sql->ahead, max_run_time, max_attempts, connection);
        buf_substitute(&b, ahead, "@S", qs);
        free(ahead);
        buf_printf(&b, ") AS a%s LIMIT " PG_AHEAD_CAP ") AS ahead",
                   filtered ? " WHERE queue = ANY ($1::text[])" : "");
    }
    buf_puts(&b, ") AS jobs");
    if (filtered)
        buf_puts(&b, " WHERE queue = ANY ($1::text[])");
    buf_puts(&b, AGGREGATE_TAIL);
    free(qs);
    return buf_steal(&b);
}

/* The handler-latency statement of a preset, or NULL where the runner keeps no finished job
 * with its start and end: one row per queue with jobs finished within the window $1 (and in the
 * item's queues, $2): queue, count, then the quantiles of enum order emit_quantiles. Pure. */
char *queues_sql_done(enum pgq_preset_id id, const char *schema, int layout, int filtered)
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
    buf_substitute(&b, rows, "@S", qs);
    buf_puts(&b, ") AS done");
    if (filtered)
        buf_puts(&b, " WHERE queue = ANY ($2::text[])");
    buf_puts(&b, " GROUP BY 1) AS s ORDER BY 1");
    free(qs);
    return buf_steal(&b);
}

/* ---- pgmq: one branch per queue table, built per scrape from the queue list ---- */

void queues_sql_pgmq_head(struct buf *b)
{
    buf_puts(b, queues_sql_aggregate_head);
}

/* clang-format off */
void queues_sql_pgmq_queue(struct buf *b, int first, const char *lit, const char *held,
                           const char *qs, const char *qt)
{
    buf_printf(b,
               "%sSELECT %s AS queue, CASE WHEN vt <= now() THEN 'r' WHEN read_ct > 0 "
               "THEN 'i' ELSE 'd' END AS st, " AGE("enqueued_at") " AS age, "
               "read_ct > 1 AS redel, NULL::float8 AS dead_age, NULL::float8 AS maxdel, "
               "%s AS held, NULL::float8 AS lease" NONE "FROM %s.%s UNION ALL SELECT %s%s",
               first ? "" : " UNION ALL ", lit, held, qs, qt, lit, no_job);
}
/* clang-format on */

void queues_sql_pgmq_tail(struct buf *b)
{
    buf_puts(b, ") AS msgs" AGGREGATE_TAIL);
}
