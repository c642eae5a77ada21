/* postgres/dlq.c: `qrel dlq`'s hooks (core/dlq_kind.h) for the job runners whose dead jobs and
 * queue live in one database: pg-boss 9 to 12 and graphile-worker 0.14 and later, as a `queues`
 * entry of a postgres source reads them (preset pg_boss or graphile_worker), and River, Oban, Que,
 * GoodJob and Solid Queue (their presets; one read and one move statement each, dlq_sql.c), and
 * Laravel's failed_jobs (preset laravel: its rows of every connection read, the database
 * driver's moved back into jobs in one transaction; the payload is read by laravel.c).
 *
 * The dead letters of a queue are, for pg-boss, the waiting copies in the queue's dead_letter
 * queue when it has one, else its own jobs in state failed (9: failed or expired; 9 has no dead
 * letter queue, 10 and 11 copy without saying whence, dlq_sql.c); for graphile-worker, its jobs
 * whose attempts reached max_attempts and that no worker holds. Reading is one SELECT: nothing
 * changes, nothing to release. A replay moves each job with move(), never requeue() + remove(): put
 * back and removed in one statement (pg-boss) or one transaction (graphile-worker), the job's row
 * locked FOR UPDATE while it is still dead. So a kill at any moment leaves each job dead or back,
 * never both, and two replays at once cannot both move one job: the second waits for the row, then
 * finds it no longer dead ("gone"). No lock hook is needed for that. The SQL is dlq_sql.c's. */
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "client.h"
#include "config.h"
#include "laravel_redis.h"
#include "postgres.h"
#include "queues.h"

/* The mode of a job runner's preset qrel dlq reads other than pg-boss (by its queue's row) and
 * graphile-worker; -1 for pgmq. */
static int runner_mode(enum pgq_preset_id id)
{
    switch (id) {
    case PGQ_RIVER:
        return PGDLQ_RIVER;
    case PGQ_OBAN:
        return PGDLQ_OBAN;
    case PGQ_QUE:
        return PGDLQ_QUE;
    case PGQ_GOOD_JOB:
        return PGDLQ_GOOD_JOB;
    case PGQ_SOLID_QUEUE:
        return PGDLQ_SOLID_QUEUE;
    default:
        return -1;
    }
}

/* The queue's entry: a job runner's entry of `queues` that watches it. pgmq keeps no dead letters,
 * and delayed_job's failed rows have no retry of delayed_job's own to replay them by (its failed
 * jobs are put back by hand, in the application): both are left out. */
static int watches(const struct pg_item *it, const char *queue)
{
    if (strcmp(it->sec->key, "queues") != 0)
        return 0;
    const struct queues *q = it->state;
    if (q->preset->id == PGQ_PGMQ || q->preset->id == PGQ_DELAYED_JOB)
        return 0;
    /* Laravel: a failed job of another connection is labelled queue@connection */
    if (q->preset->id == PGQ_LARAVEL && q->queues) {
        const char *at = strrchr(queue, '@');
        for (size_t i = 0; at && i < q->nqueues; i++)
            if (strlen(q->queues[i]) == (size_t)(at - queue) &&
                strncmp(q->queues[i], queue, (size_t)(at - queue)) == 0)
                return 1;
    }
    if (!q->queues)
        return 1;
    for (size_t i = 0; i < q->nqueues; i++)
        if (strcmp(q->queues[i], queue) == 0)
            return 1;
    return 0;
}

static struct queues *entry_of(struct pg_state *st, const char *queue, size_t *count)
{
    struct queues *found = NULL;
    *count = 0;
    for (size_t i = 0; i < st->nitems; i++)
        if (watches(&st->items[i], queue)) {
            if (!found)
                found = st->items[i].state;
            (*count)++;
        }
    return found;
}

int postgres_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                          const char *id_field, struct err *e)
{
    enum pgdlq_id kind;
    char *path = NULL, why[200];
    if (postgres_dlq_id_field(id_field, &kind, &path, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    free(path);
    size_t n = 0;
    const struct queues *q = entry_of(c->priv, queue, &n);
    if (n == 1 && q->preset->id == PGQ_LARAVEL && kind == PGDLQ_ID_KEY)
        return cfg_error(e, cfg_at(entry, "id_field"),
                         "id_field: a Laravel job has no key: want job:id (its uuid) or a "
                         "property of its command (\"orderId\", \"order.id\")");
    if (n == 1)
        return 0;
    if (n == 0)
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: no job runner's entry of queues of source \"%s\" watches queue "
                         "\"%s\" (qrel dlq reads the job runners' presets, not pgmq or "
                         "delayed_job)",
                         c->name, queue);
    return cfg_error(e, cfg_at(entry, "queue"),
                     "queue: %zu entries of queues of source \"%s\" may hold queue \"%s\": list "
                     "it under queues: of one of them",
                     n, c->name, queue);
}

/* ---- the batch ---- */

struct batch_data {
    enum pgdlq_mode mode;
    int boss; /* pg-boss's release: 9, 10, 11 or 12; 0 for the other runners */
    char *schema;
    char *move_sql; /* pg-boss */
    char *what;
    /* Laravel: the failed rows' connection and queue (the label split at its last '@' when it
     * names another connection), and whether that connection is the jobs table's own */
    char *connection, *queue;
    int own;
    struct laravel_redis *redis; /* the entry's, when connection is its Redis one; else NULL */
};

static void batch_free(void *p)
{
    struct batch_data *d = p;
    if (!d)
        return;
    free(d->schema);
    free(d->move_sql);
    free(d->what);
    free(d->connection);
    free(d->queue);
    free(d);
}

/* After any failure the connection is dropped, as the scrape does: a transaction left open is
 * rolled back with it, and the next call reconnects. */
static int failed(struct pg_state *st)
{
    pg_state_drop(st);
    return -1;
}

static int laravel_read(struct pg_state *st, struct queues *q, const char *label, const char *path,
                        size_t max, const struct deadline *dl, struct dlq_batch *out,
                        struct err *e);
static int step(struct pg_state *st, const struct batch_data *d, const char *sql, int nparams,
                const char *const *params, long long *rows, const struct deadline *dl,
                struct err *e);

/* pg-boss: whether the queue has a dead_letter queue, which says where its dead letters are. */
static int boss_mode(struct pg_state *st, struct queues *q, const char *queue,
                     const struct deadline *dl, struct dlq_batch *out, struct batch_data *d,
                     struct err *e)
{
    char *qs = pg_quote_ident(q->schema);
    char *sql = xasprintf("SELECT dead_letter FROM %s.queue WHERE name = $1", qs);
    free(qs);
    const char *params[1] = {queue};
    PGresult *r = NULL;
    int rc = pg_query(st->conn, dl, d->what, sql, 1, params, &r, e);
    free(sql);
    if (rc)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return pg_error(st->conn, e, ERR_QUERY, "%s: pg-boss has no queue \"%s\" in schema \"%s\"",
                        d->what, queue, q->schema);
    }
    if (PQgetisnull(r, 0, 0)) {
        d->mode = PGDLQ_BOSS_FAILED;
        out->dead_letter_queue = xstrdup(q->preset->dead_letter_queue);
    } else {
        d->mode = PGDLQ_BOSS_DEAD_LETTER;
        out->dead_letter_queue = xstrdup(PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    return 0;
}

/* graphile-worker enables row level security on its tables and defines no policy: a role that
 * neither owns them nor bypasses it reads no job at all, which would pass for an empty queue. */
static int graphile_visible(struct pg_state *st, const struct queues *q, const struct batch_data *d,
                            const struct deadline *dl, struct err *e)
{
    static const char sql[] =
        "SELECT string_agg(t, ', ') FROM unnest(ARRAY['_private_jobs', '_private_job_queues']) "
        "AS t WHERE row_security_active(format('%I.%I', $1::text, t)::regclass) AND NOT EXISTS "
        "(SELECT 1 FROM pg_catalog.pg_policy WHERE polrelid = format('%I.%I', $1::text, "
        "t)::regclass)";
    const char *params[1] = {q->schema};
    PGresult *r = NULL;
    if (pg_query(st->conn, dl, d->what, sql, 1, params, &r, e))
        return -1;
    int rc = 0;
    if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        rc = pg_error(st->conn, e, ERR_AUTH,
                      "%s: row level security hides every row of %s in schema \"%s\" from this "
                      "role (graphile-worker enables it with no policy): give the role BYPASSRLS "
                      "or a policy (docs/dlq.md)",
                      d->what, PQgetvalue(r, 0, 0), q->schema);
    PQclear(r);
    return rc;
}

static void fill(struct dlq_batch *out, PGresult *r)
{
    for (int i = 0; i < PQntuples(r); i++) {
        struct dlq_message *m = dlq_batch_push(out);
        m->message_id = xstrdup(PQgetvalue(r, i, 0));
        if (!PQgetisnull(r, i, 1))
            m->work_id = xstrdup(PQgetvalue(r, i, 1));
        double v;
        if (pg_cell_double(r, i, 2, &v) == 0 && v >= 0)
            m->deliveries = (int64_t)v;
        if (pg_cell_double(r, i, 3, &v) == 0 && v > 0)
            m->dead_since = v;
        m->replays = postgres_dlq_replays(PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4));
        if (pg_cell_double(r, i, 5, &v) == 0 && v >= 0)
            m->body_bytes = (size_t)v;
        if (i == 0 && pg_cell_double(r, i, 6, &v) == 0 && v >= 0)
            out->total = (size_t)v;
    }
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a moved job is no longer dead: a rerun cannot see it again */
    struct pg_state *st = c->priv;
    size_t n = 0;
    struct queues *q = entry_of(st, queue, &n);
    if (!q || n != 1)
        return err_set(e, ERR_CONFIG, "queue \"%.200s\": not one job runner's entry of queues",
                       queue);
    enum pgdlq_id kind;
    char *path = NULL, why[200];
    if (postgres_dlq_id_field(id_field, &kind, &path, why, sizeof why))
        return err_set(e, ERR_CONFIG, "id_field: %s", why);
    if (pg_state_conn(st, c->name, dl, e)) {
        free(path);
        return -1;
    }
    if (q->preset->id == PGQ_LARAVEL) {
        free(path);
        return laravel_read(st, q, queue, kind == PGDLQ_ID_DATA ? id_field : NULL, max, dl, out, e);
    }
    int other = runner_mode(q->preset->id);
    if (other < 0 && q->layout == LAYOUT_UNKNOWN && queues_detect_layout(q, st->conn, dl, e)) {
        free(path);
        return failed(st);
    }
    int boss = q->preset->id != PGQ_PG_BOSS ? 0
               : q->layout == LAYOUT_BOSS9  ? 9
               : q->layout == LAYOUT_BOSS10 ? 10
               : q->layout == LAYOUT_BOSS11 ? 11
               : q->layout == LAYOUT_BOSS12 ? 12
                                            : -1;
    struct batch_data *d = xcalloc(1, sizeof *d);
    d->boss = boss;
    d->schema = xstrdup(q->schema);
    d->what = xasprintf("%s queue \"%s\"", q->preset->name, queue);
    int rc = -1;
    PGresult *r = NULL;
    char *sql = NULL;
    if (other < 0 && (boss ? boss < 0 : q->layout != LAYOUT_CURRENT)) {
        pg_error(st->conn, e, ERR_QUERY,
                 "%s: qrel dlq reads %s only; schema \"%s\" holds an older layout", d->what,
                 boss ? "pg-boss 9 to 12" : "graphile-worker 0.14 and later", q->schema);
        goto out;
    }
    if (other >= 0) {
        d->mode = (enum pgdlq_mode)other;
        out->dead_letter_queue = xstrdup(q->preset->dead_letter_queue);
    } else if (boss == 9) {
        /* no queue table, no dead_letter queue: its failed and expired jobs */
        d->mode = PGDLQ_BOSS_FAILED;
        out->dead_letter_queue = xstrdup(q->preset->dead_letter_queue);
    } else if (boss) {
        if (boss_mode(st, q, queue, dl, out, d, e))
            goto out;
    } else {
        d->mode = PGDLQ_GRAPHILE;
        out->dead_letter_queue = xstrdup(q->preset->dead_letter_queue);
        if (graphile_visible(st, q, d, dl, e))
            goto out;
    }
    sql = other >= 0 ? postgres_dlq_runner_sql(d->mode, 0, q->schema)
          : boss     ? postgres_dlq_boss_sql(boss, d->mode, 0, q->schema)
                     : postgres_dlq_read_sql(d->mode, q->schema);
    char limit[32];
    snprintf(limit, sizeof limit, "%zu", max ? max : 1);
    const char *kinds[] = {"id", "key", "data"};
    const char *name = d->mode == PGDLQ_BOSS_DEAD_LETTER ? out->dead_letter_queue
                       : d->mode == PGDLQ_GRAPHILE && strcmp(queue, GRAPHILE_NO_QUEUE) == 0 ? NULL
                                                                                            : queue;
    const char *params[5] = {name, limit, path, kinds[kind], queue};
    if (pg_query(st->conn, dl, d->what, sql, d->mode == PGDLQ_BOSS_DEAD_LETTER ? 5 : 4, params, &r,
                 e))
        goto out;
    fill(out, r);
    if (out->total < out->n)
        out->total = out->n;
    out->origin = xstrdup(queue);
    d->move_sql = other >= 0 ? postgres_dlq_runner_sql(d->mode, 1, q->schema)
                  : boss     ? postgres_dlq_boss_sql(boss, d->mode, 1, q->schema)
                             : postgres_dlq_move_sql(d->mode, q->schema);
    out->kind_data = d;
    d = NULL;
    rc = 0;
out:
    PQclear(r);
    free(sql);
    free(path);
    batch_free(d);
    return rc ? failed(st) : 0;
}

/* ---- Laravel: failed_jobs, the failer's table of every driver ---- */

/* The rows of one connection and queue, oldest first; the payload is read here (laravel.c): its
 * uuid (job:id), the work id from its command, its stamp and, for the Redis driver, attempts. */
static int laravel_read(struct pg_state *st, struct queues *q, const char *label, const char *path,
                        size_t max, const struct deadline *dl, struct dlq_batch *out, struct err *e)
{
    struct batch_data *d = xcalloc(1, sizeof *d);
    d->mode = PGDLQ_LARAVEL;
    d->schema = xstrdup(q->schema);
    d->what = xasprintf("laravel queue \"%s\"", label);
    const char *at = strrchr(label, '@');
    d->connection = xstrdup(at ? at + 1 : q->connection);
    d->queue = at ? xstrndup(label, (size_t)(at - label)) : xstrdup(label);
    d->own = strcmp(d->connection, q->connection) == 0;
    if (!d->own && q->redis && strcmp(d->connection, q->redis->connection) == 0)
        d->redis = q->redis;
    char *qs = pg_quote_ident(q->schema);
    char *sql = xasprintf("SELECT id::text, payload, date_part('epoch', failed_at), "
                          "count(*) OVER ()::float8 FROM %s.failed_jobs WHERE connection = $1 "
                          "AND queue = $2 ORDER BY id LIMIT $3",
                          qs);
    free(qs);
    char limit[32];
    snprintf(limit, sizeof limit, "%zu", max ? max : 1);
    const char *params[3] = {d->connection, d->queue, limit};
    PGresult *r = NULL;
    int rc = pg_query(st->conn, dl, d->what, sql, 3, params, &r, e);
    free(sql);
    if (rc) {
        batch_free(d);
        return failed(st);
    }
    for (int i = 0; i < PQntuples(r); i++) {
        struct dlq_message *m = dlq_batch_push(out);
        struct laravel_payload lp;
        const char *payload = PQgetvalue(r, i, 1);
        size_t len = (size_t)PQgetlength(r, i, 1);
        m->message_id = xstrdup(PQgetvalue(r, i, 0));
        m->body_bytes = len;
        double v;
        if (pg_cell_double(r, i, 2, &v) == 0 && v > 0)
            m->dead_since = v;
        if (i == 0 && pg_cell_double(r, i, 3, &v) == 0 && v >= 0)
            out->total = (size_t)v;
        if (postgres_laravel_payload_read(payload, len, path, &lp)) {
            m->replays = -1; /* not a payload Laravel wrote: no stamp can be kept */
            continue;
        }
        m->replays = lp.replays;
        m->deliveries = lp.attempts;
        if (path && lp.has_work_id)
            m->work_id = xstrdup(lp.work_id);
        else if (!path && lp.uuid[0])
            m->work_id = xstrdup(lp.uuid);
    }
    PQclear(r);
    if (out->total < out->n)
        out->total = out->n;
    out->dead_letter_queue = xstrdup(q->preset->dead_letter_queue);
    out->origin = xstrdup(label);
    out->kind_data = d;
    return 0;
}

/* The jobs table's own connection is put back into jobs, which must be there; the Redis
 * connection of the entry's redis block onto its Redis list. Another connection's jobs are
 * refused before anything moves. */
static int laravel_check_origin(struct pg_state *st, const struct batch_data *d,
                                const struct deadline *dl, struct err *e)
{
    if (d->redis)
        return 0;
    if (!d->own)
        return err_set(e, ERR_QUERY,
                       "%s: failed on connection \"%.100s\", not this database's nor that of "
                       "the entry's redis block: name its Redis in the laravel entry's redis "
                       "block (docs/kinds/postgres-queues.md), or retry these with artisan "
                       "queue:retry (docs/dlq.md)",
                       d->what, d->connection);
    const char *params[1] = {d->schema};
    PGresult *r = NULL;
    if (pg_query(st->conn, dl, d->what,
                 "SELECT to_regclass(format('%I.jobs', $1::text)) IS NOT NULL", 1, params, &r, e))
        return failed(st);
    int there = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (!there)
        return err_set(e, ERR_QUERY, "%s: no table \"%s.jobs\": nothing would run it", d->what,
                       d->schema);
    return 0;
}

/* One transaction, as queue:retry for the database driver but atomic: the failed row locked while
 * it is still there, its payload with attempts reset and stamped pushed as DatabaseQueue::pushRaw
 * does (attempts 0, available now), the row deleted. A kill anywhere leaves it failed or back,
 * never both; a concurrent replay waits for the row and finds it gone. A job with a retryUntil is
 * left failed: queue:retry computes a new one by calling the job's PHP, and the old one would
 * fail it again at once. For the redis block's connection the push is RedisQueue::pushRaw's script
 * (as queue:retry pushes it), run while the row is locked and before the delete: Redis and
 * PostgreSQL share no transaction, so a kill between the two leaves a duplicate, never a loss. */
static int laravel_move(struct pg_state *st, struct dlq_message *m, const struct batch_data *d,
                        const struct deadline *dl, struct err *e)
{
    char *qs = pg_quote_ident(d->schema);
    char *lock = xasprintf("SELECT queue, payload FROM %s.failed_jobs WHERE id = $1 AND "
                           "connection = $2 FOR UPDATE",
                           qs);
    char *push = xasprintf("INSERT INTO %s.jobs (queue, payload, attempts, reserved_at, "
                           "available_at, created_at) SELECT $1, $2, 0, NULL, t, t FROM "
                           "(SELECT floor(EXTRACT(EPOCH FROM now()))::int AS t) AS n",
                           qs);
    char *del = xasprintf("DELETE FROM %s.failed_jobs WHERE id = $1 RETURNING 1", qs);
    free(qs);
    const char *params[2] = {m->message_id, d->connection};
    PGresult *r = NULL;
    char *payload = NULL;
    long long n = 0;
    int rc = -1;
    if (step(st, d, "BEGIN READ WRITE", 0, NULL, NULL, dl, e) ||
        pg_query(st->conn, dl, d->what, lock, 2, params, &r, e))
        goto out;
    if (PQntuples(r) != 1) {
        rc = step(st, d, "ROLLBACK", 0, NULL, NULL, dl, e) ? -1 : 1;
        goto out;
    }
    struct laravel_payload lp;
    const char *body = PQgetvalue(r, 0, 1);
    size_t len = (size_t)PQgetlength(r, 0, 1);
    if (postgres_laravel_payload_read(body, len, NULL, &lp) == 0 && !lp.retry_until)
        payload = postgres_laravel_payload_requeue(body, len, lp.replays >= 0 ? lp.replays + 1 : 0);
    if (!payload) {
        err_set(e, ERR_QUERY,
                "%s: not taken back: failed job %s %s; left failed, retry it with artisan "
                "queue:retry",
                d->what, m->message_id,
                lp.retry_until ? "has a retryUntil, which Laravel computes anew by calling the job"
                               : "has no JSON payload");
        struct err ce;
        err_clear(&ce);
        rc = step(st, d, "ROLLBACK", 0, NULL, NULL, dl, &ce) ? -1 : -2;
        goto out;
    }
    const char *pushp[2] = {PQgetvalue(r, 0, 0), payload};
    /* Redis: pushed while the row is locked, deleted after; a crash between leaves the job both
     * failed and queued (a duplicate), never neither. */
    if (d->redis && laravel_redis_push(d->redis, pushp[0], payload, dl, e)) {
        struct err ce;
        err_clear(&ce);
        rc = step(st, d, "ROLLBACK", 0, NULL, NULL, dl, &ce) ? -1 : -2;
        goto out;
    }
    if ((!d->redis && step(st, d, push, 2, pushp, NULL, dl, e)) ||
        step(st, d, del, 1, params, &n, dl, e))
        goto out;
    if (n != 1) {
        pg_error(st->conn, e, ERR_QUERY, "%s: deleted %lld failed rows, want 1: rolled back",
                 d->what, n);
        goto out;
    }
    rc = step(st, d, "COMMIT", 0, NULL, NULL, dl, e);
out:
    PQclear(r);
    free(payload);
    free(lock);
    free(push);
    free(del);
    if (rc == -2)
        return -1; /* refused and rolled back: the connection stays */
    return rc < 0 ? failed(st) : rc;
}

/* ---- the origin ---- */

/* pg-boss: the queue must still be there (a job of a deleted queue has no partition to go to);
 * whether a worker reads it pg-boss cannot say. graphile-worker runs a job wherever a worker
 * knows its task, which the database does not record either, and so do the other runners. */
static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    struct pg_state *st = c->priv;
    const struct batch_data *d = b->kind_data;
    if (d && d->mode == PGDLQ_LARAVEL)
        return pg_state_conn(st, c->name, dl, e) ? -1 : laravel_check_origin(st, d, dl, e);
    if (!d || (d->mode != PGDLQ_BOSS_FAILED && d->mode != PGDLQ_BOSS_DEAD_LETTER))
        return 0;
    if (d->boss == 9)
        return 0; /* no queue table: a job's name is all its queue is */
    if (pg_state_conn(st, c->name, dl, e))
        return -1;
    char *qs = pg_quote_ident(d->schema);
    char *sql = xasprintf("SELECT 1 FROM %s.queue WHERE name = $1", qs);
    free(qs);
    const char *params[1] = {b->origin};
    PGresult *r = NULL;
    int rc = pg_query(st->conn, dl, d->what, sql, 1, params, &r, e);
    free(sql);
    if (rc)
        return failed(st);
    int there = PQntuples(r) == 1;
    PQclear(r);
    if (!there)
        return pg_error(st->conn, e, ERR_QUERY,
                        "%s: pg-boss has no queue \"%s\" in schema \"%s\" (deleted?): nothing "
                        "would run what a replay put back",
                        d->what, b->origin, d->schema);
    return 0;
}

/* ---- the move ---- */

/* One statement of a move's transaction; *rows its row count or count(*). */
static int step(struct pg_state *st, const struct batch_data *d, const char *sql, int nparams,
                const char *const *params, long long *rows, const struct deadline *dl,
                struct err *e)
{
    PGresult *r = NULL;
    if (pg_query(st->conn, dl, d->what, sql, nparams, params, &r, e))
        return -1;
    if (rows) {
        double v = 0;
        if (PQntuples(r) == 1 && PQnfields(r) == 1 && strcmp(PQfname(r, 0), "count") == 0)
            pg_cell_double(r, 0, 0, &v);
        else
            v = PQntuples(r);
        *rows = (long long)v;
    }
    PQclear(r);
    return 0;
}

static int boss_move(struct pg_state *st, struct dlq_batch *b, struct dlq_message *m,
                     const struct batch_data *d, const struct deadline *dl, struct err *e)
{
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%lld", (long long)(m->replays + 1));
    const char *params[4] = {d->mode == PGDLQ_BOSS_DEAD_LETTER ? b->dead_letter_queue : b->origin,
                             m->message_id, m->replays >= 0 ? stamp : NULL, b->origin};
    PGresult *r = NULL;
    /* the connection reads by default (default_transaction_read_only): the move says it writes */
    if (step(st, d, "BEGIN READ WRITE", 0, NULL, NULL, dl, e) ||
        pg_query(st->conn, dl, d->what, d->move_sql, d->mode == PGDLQ_BOSS_DEAD_LETTER ? 4 : 3,
                 params, &r, e))
        return failed(st);
    double found = 0, moved = 0, queues = 1;
    pg_cell_double(r, 0, 0, &found);
    pg_cell_double(r, 0, 1, &moved);
    if (d->mode == PGDLQ_BOSS_DEAD_LETTER)
        pg_cell_double(r, 0, 6, &queues);
    int rc = 0;
    if (found < 1) {
        rc = 1; /* no longer dead: another replay or client took it */
    } else if (moved < 1 && queues < 1) {
        rc = pg_error(st->conn, e, ERR_QUERY, "%s: pg-boss has no queue \"%s\": left dead", d->what,
                      b->origin);
    } else if (moved < 1) {
        /* a twin holds the key under the queue's policy: pg-boss refuses a second one */
        const char *twin = PQgetisnull(r, 0, 2) ? NULL : PQgetvalue(r, 0, 2);
        const char *policy = PQgetisnull(r, 0, 4) ? "standard" : PQgetvalue(r, 0, 4);
        const char *key = PQgetisnull(r, 0, 5) ? NULL : PQgetvalue(r, 0, 5);
        if (twin && d->boss == 9)
            rc = pg_error(st->conn, e, ERR_QUERY,
                          "%s: not taken back: job %s (%s) holds its %s slot (singletonKey "
                          "\"%.100s\"), which pg-boss 9's unique index gives one job; left dead, "
                          "not duplicated",
                          d->what, twin, PQgetvalue(r, 0, 3), policy, key ? key : "");
        else if (twin)
            rc = pg_error(st->conn, e, ERR_QUERY,
                          "%s: not taken back: job %s (%s) holds singletonKey \"%.100s\" under "
                          "the queue's %s policy; left dead, not duplicated",
                          d->what, twin, PQgetvalue(r, 0, 3), key ? key : "", policy);
        else
            rc = pg_error(st->conn, e, ERR_QUERY,
                          "%s: not taken back: a unique index of the queue's %s policy refused "
                          "it; left dead, not duplicated",
                          d->what, policy);
    }
    PQclear(r);
    /* a refusal changed nothing and is rolled back (its reason kept in e); else committed */
    struct err ce;
    err_clear(&ce);
    if (step(st, d, rc < 0 ? "ROLLBACK" : "COMMIT", 0, NULL, NULL, dl, rc < 0 ? &ce : e))
        return failed(st);
    return rc;
}

/* BEGIN; lock the job while it is still dead; stamp its payload; reschedule_jobs(attempts := 0,
 * run_at := now()); COMMIT. A failure anywhere drops the connection, which rolls it all back. */
static int graphile_move(struct pg_state *st, struct dlq_message *m, const struct batch_data *d,
                         const struct deadline *dl, struct err *e)
{
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%lld", (long long)(m->replays + 1));
    const char *params[2] = {m->message_id, stamp};
    char *lock = postgres_dlq_graphile_sql(PGDLQ_G_LOCK, d->schema);
    char *stamped = postgres_dlq_graphile_sql(PGDLQ_G_STAMP, d->schema);
    char *resched = postgres_dlq_graphile_sql(PGDLQ_G_RESCHEDULE, d->schema);
    long long found = 0, back = 0;
    int rc = -1;
    if (step(st, d, "BEGIN READ WRITE", 0, NULL, NULL, dl, e) ||
        step(st, d, lock, 1, params, &found, dl, e))
        goto out;
    if (found < 1) {
        rc = step(st, d, "ROLLBACK", 0, NULL, NULL, dl, e) ? -1 : 1;
        goto out;
    }
    if ((m->replays >= 0 && step(st, d, stamped, 2, params, NULL, dl, e)) ||
        step(st, d, resched, 1, params, &back, dl, e))
        goto out;
    if (back != 1) {
        pg_error(st->conn, e, ERR_QUERY, "%s: reschedule_jobs moved %lld jobs, want 1: left dead",
                 d->what, back);
        goto out;
    }
    rc = step(st, d, "COMMIT", 0, NULL, NULL, dl, e);
out:
    free(lock);
    free(stamped);
    free(resched);
    return rc < 0 ? failed(st) : rc;
}

/* River, Oban, Que, GoodJob, Solid Queue: the one statement in a transaction of its own. A
 * Solid Queue job with a concurrency key is left failed: its retry takes Solid Queue's semaphore,
 * which qrel does not (docs/dlq.md). */
static int runner_move(struct pg_state *st, struct dlq_batch *b, struct dlq_message *m,
                       const struct batch_data *d, const struct deadline *dl, struct err *e)
{
    char stamp[32];
    snprintf(stamp, sizeof stamp, "%lld", (long long)(m->replays + 1));
    const char *params[3] = {b->origin, m->message_id, m->replays >= 0 ? stamp : NULL};
    PGresult *r = NULL;
    if (step(st, d, "BEGIN READ WRITE", 0, NULL, NULL, dl, e) ||
        pg_query(st->conn, dl, d->what, d->move_sql, d->mode == PGDLQ_SOLID_QUEUE ? 2 : 3, params,
                 &r, e))
        return failed(st);
    double found = 0, moved = 0;
    pg_cell_double(r, 0, 0, &found);
    pg_cell_double(r, 0, 1, &moved);
    int rc = 0;
    if (found < 1)
        rc = 1; /* no longer dead: another replay or client took it */
    else if (moved != 1)
        rc = pg_error(st->conn, e, ERR_QUERY,
                      "%s: not taken back: job %s has a concurrency key (Solid Queue's semaphore "
                      "decides when it may run); left failed, retry it from Solid Queue",
                      d->what, m->message_id);
    PQclear(r);
    struct err ce;
    err_clear(&ce);
    if (step(st, d, rc < 0 ? "ROLLBACK" : "COMMIT", 0, NULL, NULL, dl, rc < 0 ? &ce : e))
        return failed(st);
    return rc;
}

static int dlq_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    struct pg_state *st = c->priv;
    const struct batch_data *d = b->kind_data;
    if (!d)
        return err_set(e, ERR_INTERNAL, "a move without a read");
    if (pg_state_conn(st, c->name, dl, e))
        return -1;
    if (d->mode == PGDLQ_LARAVEL)
        return laravel_move(st, m, d, dl, e);
    if (d->mode >= PGDLQ_RIVER)
        return runner_move(st, b, m, d, dl, e);
    return d->mode == PGDLQ_GRAPHILE ? graphile_move(st, m, d, dl, e)
                                     : boss_move(st, b, m, d, dl, e);
}

/* Reading changes nothing: no release, no read_effect. The move is atomic, so neither requeue
 * nor remove is set, and no lock is needed (above). */
const struct dlq_kind postgres_dlq = {
    .read = dlq_read, .check_origin = dlq_check_origin, .move = dlq_move, .batch_free = batch_free};
