/* postgres/queues.c: the `queues` section of a postgres source: queue and job tables of the runners
 * that keep their work in PostgreSQL, each read through a preset that knows its layout.
 *
 * pgmq (kind label pgmq) keeps one table per queue and lists them in pgmq.meta; the job runners
 * (graphile_worker, pg_boss, river, oban, que, good_job, solid_queue, delayed_job, laravel; kind
 * label pg_jobs) keep
 * their jobs in a few tables with a queue column and a state. Every preset is reduced to the same
 * shape (queues_sql.c): an inner SELECT that gives each pending or dead job one row in the
 * runner's own terms, wrapped in one generic aggregate grouped by queue.
 *
 * This file parses an entry, detects the layout and runs a scrape; the SQL is in queues_sql.c,
 * the series are made in queues_emit.c, the check is queues_check.c (queues.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queues.h"
#include "alloc.h"
#include "laravel_redis.h"

/* What every job runner but Que and solid_queue records; the lease is then each runner's own
 * (graphile-worker and pg-boss record it, the others take job_timeout). */
#define PGQ_RUNNER (PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_MAX_DELIVERIES | PGQ_HAS_LEASE_AGE)

static const struct pgq_preset presets[] = {
    /* name, default schema, dead_letter_queue label, kind label, flags */
    {PGQ_PGMQ, "pgmq", "pgmq", NULL, "pgmq", PGQ_HAS_REDELIVERED},
    {PGQ_GRAPHILE_WORKER, "graphile_worker", "graphile_worker", "failed", "pg_jobs",
     PGQ_RUNNER | PGQ_HAS_LEASE_TIMEOUT | PGQ_HAS_AHEAD},
    {PGQ_PG_BOSS, "pg_boss", "pgboss", "failed", "pg_jobs", PGQ_RUNNER | PGQ_HAS_LEASE_TIMEOUT},
    {PGQ_RIVER, "river", "public", "discarded", "pg_jobs",
     PGQ_RUNNER | PGQ_JOB_TIMEOUT | PGQ_HAS_AHEAD},
    {PGQ_OBAN, "oban", "public", "discarded", "pg_jobs",
     PGQ_RUNNER | PGQ_JOB_TIMEOUT | PGQ_HAS_AHEAD},
    {PGQ_QUE, "que", "public", "expired", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_JOB_TIMEOUT},
    {PGQ_GOOD_JOB, "good_job", "public", "discarded", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_LEASE_AGE | PGQ_JOB_TIMEOUT | PGQ_HAS_AHEAD},
    {PGQ_SOLID_QUEUE, "solid_queue", "public", "failed", "pg_jobs",
     PGQ_HAS_DEAD | PGQ_HAS_LEASE_AGE | PGQ_JOB_TIMEOUT | PGQ_HAS_AHEAD},
    /* its lease (max_run_time) and max_attempts are the workers' settings, declared on the entry
     * with delayed_job's defaults */
    {PGQ_DELAYED_JOB, "delayed_job", "public", "failed", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_LEASE_AGE | PGQ_HAS_AHEAD},
    /* the lease is the connection's retry_after, declared on the entry with Laravel's default */
    {PGQ_LARAVEL, "laravel", "public", "failed_jobs", "pg_jobs",
     PGQ_HAS_REDELIVERED | PGQ_HAS_DEAD | PGQ_HAS_LEASE_AGE | PGQ_HAS_AHEAD | PGQ_HAS_EXPIRED},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

const struct pgq_preset *queues_preset_find(const char *name)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (name && strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

void queues_destroy(void *item)
{
    struct queues *q = item;
    if (!q)
        return;
    free(q->schema);
    cfg_strv_free(q->queues);
    free(q->filter_param);
    free(q->what);
    free(q->at);
    free(q->sql);
    free(q->done_sql);
    free(q->connection);
    laravel_redis_free(q->redis);
    free(q);
}

/* delayed_job's own keys: its workers' max_run_time (the lease) and max_attempts, and whether
 * they destroy failed jobs (rnode: the max_run_time node, NULL when absent); max_deliveries,
 * visibility_timeout and job_timeout are refused with the key to use. */
static int delayed_job_keys(struct queues *q, struct cfg_node *item, struct cfg_node *rnode,
                            struct cfg_node *const other[3], struct err *e)
{
    static const char *const names[3] = {"max_deliveries", "visibility_timeout", "job_timeout"};
    for (int i = 0; i < 3; i++)
        if (other[i])
            return cfg_error(e, other[i], "%s: not a key of preset \"delayed_job\" (%s)", names[i],
                             i == 0 ? "its limit is max_attempts" : "its lease is max_run_time");
    if (cfg_get_duration(item, "max_run_time", DELAYED_JOB_MAX_RUN_TIME, &q->lease_timeout, e) ||
        cfg_get_int(item, "max_attempts", DELAYED_JOB_MAX_ATTEMPTS, 1, 1000000, &q->max_deliveries,
                    e))
        return -1;
    if (!(q->lease_timeout > 0))
        return cfg_error(e, rnode, "max_run_time: want a duration above 0");
    struct cfg_node *d = NULL;
    if (cfg_get_node(item, "destroy_failed_jobs", CFG_SCALAR, &d, e))
        return -1;
    if (d && cfg_get_bool(item, "destroy_failed_jobs", 0, &q->destroy_failed, e))
        return -1;
    return 0;
}

/* Laravel's own keys: the connection's retry_after (the lease) and the jobs table's connection
 * name; max_deliveries (a job's tries are its own maxTries or the worker's --tries),
 * visibility_timeout and job_timeout are refused with the key to use. */
static int laravel_keys(struct queues *q, struct cfg_node *item, struct cfg_node *rnode,
                        struct cfg_node *cnode, struct cfg_node *lrnode,
                        struct cfg_node *const other[3], const char *source, struct err *e)
{
    static const char *const names[3] = {"max_deliveries", "visibility_timeout", "job_timeout"};
    for (int i = 0; i < 3; i++)
        if (other[i])
            return cfg_error(e, other[i], "%s: not a key of preset \"laravel\" (%s)", names[i],
                             i == 0 ? "the tries are each job's maxTries or the worker's --tries"
                                    : "its lease is retry_after");
    if (cfg_get_duration(item, "retry_after", LARAVEL_RETRY_AFTER, &q->lease_timeout, e) ||
        cfg_get_str(item, "connection", 0, &q->connection, e))
        return -1;
    if (!q->connection)
        q->connection = xstrdup(LARAVEL_CONNECTION);
    if (!(q->lease_timeout > 0))
        return cfg_error(e, rnode, "retry_after: want a duration above 0");
    if (!*q->connection)
        return cfg_error(e, cnode, "connection: want the name of the database connection");
    if (lrnode && !(q->redis = laravel_redis_configure(lrnode, source, e)))
        return -1;
    if (q->redis && strcmp(q->redis->connection, q->connection) == 0)
        return cfg_error(e, lrnode,
                         "redis: its connection \"%s\" is the jobs table's own (connection)",
                         q->connection);
    return 0;
}

void *queues_configure(struct cfg_node *item, const char *source, struct err *e)
{
    struct queues *q = xcalloc(1, sizeof *q);
    char where[400];
    char *preset = NULL;
    struct cfg_node *pnode = NULL, *snode = NULL, *qnode = NULL, *mnode = NULL, *vnode = NULL,
                    *jnode = NULL, *wnode = NULL, *rnode = NULL, *other = NULL;
    q->lease_timeout = -1.0;
    q->destroy_failed = -1;
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
    /* delayed_job's own keys are known to its entries only: elsewhere they are unknown keys. */
    int dj = pnode && pnode->scalar && strcmp(pnode->scalar, "delayed_job") == 0;
    if (dj && (cfg_get_node(item, "max_run_time", CFG_SCALAR, &rnode, e) ||
               cfg_get_node(item, "max_attempts", CFG_SCALAR, &other, e) ||
               cfg_get_node(item, "destroy_failed_jobs", CFG_SCALAR, &other, e)))
        goto fail;
    /* so are Laravel's to its entries */
    struct cfg_node *cnode = NULL, *lrnode = NULL;
    int lv = pnode && pnode->scalar && strcmp(pnode->scalar, "laravel") == 0;
    if (lv && (cfg_get_node(item, "retry_after", CFG_SCALAR, &rnode, e) ||
               cfg_get_node(item, "connection", CFG_SCALAR, &cnode, e) ||
               cfg_get_node(item, "redis", CFG_MAP, &lrnode, e)))
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
                  "graphile_worker, pg_boss, river, oban, que, good_job, solid_queue, "
                  "delayed_job, laravel)");
        goto fail;
    }
    q->preset = queues_preset_find(preset);
    if (!q->preset) {
        cfg_error(e, pnode,
                  "preset: want one of pgmq, graphile_worker, pg_boss, river, oban, que, "
                  "good_job, solid_queue, delayed_job, laravel, got \"%s\"",
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
        q->filter_param = pg_text_array((const char *const *)q->queues, q->nqueues);

    if (mnode && cfg_get_int(item, "max_deliveries", 0, 1, 1000000, &q->max_deliveries, e))
        goto fail;
    if (cfg_get_positive_duration(item, "window", PGQ_DEFAULT_WINDOW, &q->window, e))
        goto fail;
    pg_interval_param(q->window_param, sizeof q->window_param, q->window);

    if (q->preset->id == PGQ_DELAYED_JOB) {
        struct cfg_node *const refused[3] = {mnode, vnode, jnode};
        if (delayed_job_keys(q, item, rnode, refused, e))
            goto fail;
        goto done;
    }
    if (q->preset->id == PGQ_LARAVEL) {
        struct cfg_node *const refused[3] = {mnode, vnode, jnode};
        if (laravel_keys(q, item, rnode, cnode, lrnode, refused, source, e))
            goto fail;
        goto done;
    }
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
done:
    q->what = xasprintf("queues preset \"%s\" (schema \"%s\")", q->preset->name, q->schema);
    if (item->file)
        q->at = xasprintf("%s:%d:%d", item->file, item->line, item->col);
    free(preset);
    return q;
fail:
    free(preset);
    queues_destroy(q);
    return NULL;
}

/* ---- pgmq ---- */

/* The queues of pgmq.meta whose table exists (a queue being created or dropped concurrently
 * must not fail the scrape), narrowed by the filter. */
int queues_pgmq_list(struct queues *q, struct pg_conn *c, const struct deadline *dl, PGresult **r,
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
    if (queues_pgmq_list(q, c, dl, &list, e))
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
        snprintf(held, sizeof held, "(%.17g - date_part('epoch', vt - now()))", q->lease_timeout);
    queues_sql_pgmq_head(&b);
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
        queues_sql_pgmq_queue(&b, i == 0, lit, held, qs, qt);
        free(qt);
        PQfreemem(lit);
    }
    free(qs);
    queues_sql_pgmq_tail(&b);
    rc = queues_emit_run(q, c, dl, b.data, 0, NULL, out, e);
out:
    buf_free(&b);
    PQclear(list);
    return rc;
}

/* ---- job presets ---- */

/* Three presets have layouts that changed across the versions in use, and delayed_job's time
 * columns are `timestamp` (Rails' default) or timestamptz, which its statement compares as
 * stored (queues_sql_dj.c). graphile-worker before
 * 0.14 has one jobs table (no _private_jobs). Oban before V14 has no 'suspended' state. pg-boss is
 * told apart by its job table's columns: 9 and older have camel-case names folded to lower case
 * (retrycount), 10 has expire_in (an interval), 11 expire_seconds, 12 heartbeat_seconds too. Which
 * one a database has is asked once and remembered (check() asks again, and so does the scrape after
 * a failure). */
int queues_detect_layout(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                         struct err *e)
{
    const char *sql = NULL;
    if (q->preset->id == PGQ_GRAPHILE_WORKER)
        /* The third column: the tables whose rows row level security hides from this role.
         * graphile-worker (0.14 on) enables it with no policy, so a role that neither owns them
         * nor has BYPASSRLS reads no job at all, which would pass for empty queues. */
        sql = "SELECT to_regclass(format('%I._private_jobs', $1::text)) IS NOT NULL, "
              "to_regclass(format('%I.jobs', $1::text)) IS NOT NULL, "
              "(SELECT string_agg(t, ', ') FROM unnest(ARRAY['_private_jobs', "
              "'_private_job_queues']) AS t WHERE row_security_active(to_regclass(format('%I.%I', "
              "$1::text, t))) AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_policy WHERE polrelid = "
              "to_regclass(format('%I.%I', $1::text, t))))";
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
    else if (q->preset->id == PGQ_DELAYED_JOB)
        /* which time columns are timestamptz, a bit each as LAYOUT_DJ's (0 without the table:
         * the scrape's statement then says it is missing) */
        sql = "SELECT COALESCE(sum(CASE attname WHEN 'run_at' THEN 1 WHEN 'locked_at' THEN 2 "
              "WHEN 'failed_at' THEN 4 WHEN 'created_at' THEN 8 END), 0) "
              "FROM pg_catalog.pg_attribute WHERE attrelid = "
              "to_regclass(format('%I.delayed_jobs', $1::text)) AND NOT attisdropped AND "
              "atttypid = 'pg_catalog.timestamptz'::pg_catalog.regtype";
    if (!sql) {
        q->layout = LAYOUT_CURRENT;
        return 0;
    }
    PGresult *r = NULL;
    const char *params[1] = {q->schema};
    if (pg_query(c, dl, q->what, sql, 1, params, &r, e))
        return -1;
    int layout = LAYOUT_UNKNOWN;
    if (PQntuples(r) == 1 && q->preset->id == PGQ_DELAYED_JOB) {
        double tz = 0;
        layout =
            LAYOUT_DJ + (pg_cell_double(r, 0, 0, &tz) == 0 && tz >= 0 && tz <= 15 ? (int)tz : 0);
    } else if (PQntuples(r) == 1 && q->preset->id == PGQ_OBAN) {
        layout = strcmp(PQgetvalue(r, 0, 0), "t") == 0 ? LAYOUT_CURRENT : LAYOUT_LEGACY;
    } else if (PQntuples(r) == 1 && q->preset->id == PGQ_GRAPHILE_WORKER) {
        if (!PQgetisnull(r, 0, 2)) {
            int rc = pg_error(c, e, ERR_AUTH,
                              "%s: row level security hides every row of %s in schema \"%s\" "
                              "from this role (graphile-worker enables it with no policy): give "
                              "the role BYPASSRLS or a policy",
                              q->what, PQgetvalue(r, 0, 2), q->schema);
            PQclear(r);
            return rc;
        }
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
int queues_collect_jobs(struct queues *q, struct pg_conn *c, const struct deadline *dl,
                        struct metric_set *out, struct err *e)
{
    if (q->layout == LAYOUT_UNKNOWN && queues_detect_layout(q, c, dl, e))
        return -1;
    if (!q->sql) {
        /* lease_timeout and max_deliveries are delayed_job's max_run_time and max_attempts */
        q->sql = q->preset->id == PGQ_LARAVEL
                     ? queues_sql_jobs_laravel(q->schema, q->filter_param != NULL, q->lease_timeout,
                                               q->connection)
                     : queues_sql_jobs_limits(q->preset->id, q->schema, q->layout,
                                              q->filter_param != NULL, q->lease_timeout,
                                              q->max_deliveries);
        q->done_sql = queues_sql_done(q->preset->id, q->schema, q->layout, q->filter_param != NULL);
    }
    const char *params[1] = {q->filter_param};
    if (queues_emit_run(q, c, dl, q->sql, q->filter_param ? 1 : 0, q->filter_param ? params : NULL,
                        out, e)) {
        q->layout = LAYOUT_UNKNOWN; /* the runner may have been upgraded: look again */
        return -1;
    }
    return 0;
}

int queues_collect(void *item, struct pg_conn *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct queues *q = item;
    metric_set_set_kind(out, q->preset->kind_label);
    if (q->preset->id == PGQ_PGMQ)
        return collect_pgmq(q, c, dl, out, e);
    return queues_collect_jobs(q, c, dl, out, e);
}
