/* rq.c: `kind: rq`, the reliability of RQ (Python) queues in Redis.
 *
 * RQ keeps a queue as a list of job ids (rq:queue:<q>, enqueued at the right, taken from the
 * left), a hash per job (rq:job:<id>: enqueued_at, started_at, ended_at, timeout, ...) and sorted
 * sets per queue for the jobs in other states: rq:wip:<q> (StartedJobRegistry: running),
 * rq:scheduled:<q> and rq:deferred:<q> (waiting for a time or for other jobs), rq:failed:<q>
 * (FailedJobRegistry: given up, the dead-letter queue). A running job's lease is its timeout: the
 * worker kills a job that runs longer, and a job whose worker died stays in rq:wip until its
 * expiry, then goes to the failed registry (or back to the queue with retries left).
 *
 * A scrape is three pipelined round trips whatever the number of queues, all read-only:
 *   1. TIME (ages use Redis's clock), SMEMBERS rq:workers and, unless queues are named,
 *      SMEMBERS rq:queues, less the queues `exclude` matches (no key of theirs is asked for);
 *   2. per queue LLEN, four ZCARDs, LINDEX 0 (the oldest ready job), ZRANGE of rq:wip (at most
 *      max_in_flight_jobs) and the first and last failed job; per worker HMGET queues, death;
 *   3. HMGET of those jobs' times and timeout.
 * A job field qrel cannot read (a time that is none or out of range, a timeout "soon") is passed
 * over and counted (qrel_skipped_entries, common/entries.h): one bad job never takes the source
 * down, nor gives an age of decades.
 *
 * A queue's consumers are counted as RQ's Worker.all(queue=...) counts them: the workers of
 * rq:workers whose hash still exists (RQ expires it worker_ttl + 60 s after the last heartbeat,
 * 480 s by default) and has no death (a worker that stopped cleanly), and whose queues field
 * names the queue (a hash without queues serves none, as RQ reads it). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "common/entries.h"
#include "common/exclude.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "common/redis_settings.h"
#include "config.h"
#include "dlq.h"
#include "log.h"
#include "rq.h"
#include "alloc.h"

#define QUEUE_PREFIX "rq:queue:"
#define DEFAULT_TIMEOUT 180.0 /* RQ's Queue.DEFAULT_TIMEOUT */
#define DEFAULT_MAX_IN_FLIGHT 1000
#define DEAD_LETTER_LABEL "failed"
#define ROUND2_PER_QUEUE 9
#define WORKER_PREFIX "rq:worker:"

struct state {
    struct redis_job job; /* the connection keys, queues, connection and pipeline */
    double default_timeout;
    long long max_in_flight;
};
/* dlq.c reaches the connection through the first member, without the rest of the state. */
_Static_assert(offsetof(struct state, job) == 0, "struct redis_job first in rq's state");

/* What a job's HMGET is for. */
enum job_role { JOB_HEAD, JOB_RUNNING, JOB_FAILED_FIRST, JOB_FAILED_LAST };

struct job {
    size_t queue;
    enum job_role role;
    char *id;
};

struct queue {
    char *name;
    double ready, running, scheduled, deferred, failed, consumers;
    int has_head_age, has_failed_oldest, has_failed_newest;
    double head_age, failed_oldest, failed_newest;
    struct rq_hold *holds;
    size_t nholds;
};

struct scrape {
    struct state *st;
    double now;
    char **listed;
    size_t nlisted;
    char **workers; /* the worker keys of rq:workers */
    size_t nworkers;
    struct queue *q;
    size_t n;
    struct job *jobs;
    size_t njobs;
    struct entry_skips skips; /* the job fields that could not be read, passed over */
    size_t next;              /* the next queue or job a filler adds commands for */
    char stop[32];            /* ZRANGE's last index of a queue's jobs in progress */
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    redis_job_free(&st->job);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    st->job.rs.no_cluster = "RQ does not support Redis Cluster (a job and its queue are updated "
                            "together in one transaction over keys of different hash slots)";
    st->job.discovery = "the rq:queues set";
    if (redis_job_read(map, &st->job, e) ||
        cfg_get_positive_duration(map, "default_timeout", DEFAULT_TIMEOUT, &st->default_timeout,
                                  e) ||
        cfg_get_int(map, "max_in_flight_jobs", DEFAULT_MAX_IN_FLIGHT, 1, 1000000,
                    &st->max_in_flight, e) ||
        redis_job_finish(c, map, &st->job, e))
        return -1;
    if (redis_job_check_queues(map, &st->job, e))
        return -1;
    for (size_t i = 0; i < st->job.nqueues; i++)
        if (!*st->job.queues[i])
            return cfg_error(e, cfg_at(map, "queues"), "queues: want non-empty names");
    return 0;
}

/* ---- replies ---- */

static int on_round1(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (index == 0) /* TIME: seconds, microseconds */
        return redis_job_time(r, &sc->now, e);
    if (index == 1) { /* SMEMBERS rq:workers: the keys of the workers' hashes */
        if (redis_job_want(r, REDIS_REPLY_ARRAY, "SMEMBERS rq:workers", e))
            return -1;
        sc->workers = xcalloc(r->elements + 1, sizeof *sc->workers);
        for (size_t i = 0; i < r->elements; i++) {
            const redisReply *k = r->element[i];
            if (k->type != REDIS_REPLY_STRING)
                return err_set(e, ERR_PROTOCOL, "SMEMBERS rq:workers: want strings");
            if (strncmp(k->str, WORKER_PREFIX, strlen(WORKER_PREFIX)) == 0) /* else not RQ's */
                sc->workers[sc->nworkers++] = xstrdup(k->str);
        }
        return 0;
    }
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "SMEMBERS rq:queues", e))
        return -1;
    sc->listed = xcalloc(r->elements + 1, sizeof *sc->listed);
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *k = r->element[i];
        if (k->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "SMEMBERS rq:queues: want strings");
        /* Members are queue keys; anything else in the set is not RQ's and is passed over. */
        if (strncmp(k->str, QUEUE_PREFIX, strlen(QUEUE_PREFIX)) != 0 ||
            !k->str[strlen(QUEUE_PREFIX)])
            continue;
        if (exclude_drop(&sc->st->job.exclude, k->str + strlen(QUEUE_PREFIX)))
            continue; /* neither read nor exported */
        sc->listed[sc->nlisted++] = xstrdup(k->str + strlen(QUEUE_PREFIX));
    }
    return 0;
}

static void add_job(struct scrape *sc, size_t q, enum job_role role, const char *id)
{
    sc->jobs = xrealloc(sc->jobs, (sc->njobs + 1) * sizeof *sc->jobs);
    sc->jobs[sc->njobs].queue = q;
    sc->jobs[sc->njobs].role = role;
    sc->jobs[sc->njobs].id = xstrdup(id);
    sc->njobs++;
}

/* HMGET <worker> queues death: a live worker counts once on each queue it names. */
static void on_worker(struct scrape *sc, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return;
    const redisReply *queues = r->element[0], *death = r->element[1];
    if (death->type != REDIS_REPLY_NIL)
        return; /* stopped cleanly (register_death), its hash kept 60 s */
    /* Expired (RQ drops it from rq:workers when it next looks), or without queues, which RQ
     * reads as a worker of no queue: either way it counts on none. */
    if (queues->type != REDIS_REPLY_STRING)
        return;
    for (size_t i = 0; i < sc->n; i++)
        sc->q[i].consumers += rq_worker_serves(queues->str, queues->len, sc->q[i].name);
}

static int on_round2(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (index >= sc->n * ROUND2_PER_QUEUE) {
        on_worker(sc, r);
        return 0;
    }
    size_t qi = index / ROUND2_PER_QUEUE;
    struct queue *q = &sc->q[qi];
    static const char *const what[ROUND2_PER_QUEUE] = {
        "LLEN rq:queue",     "ZCARD rq:wip",     "ZCARD rq:scheduled",
        "ZCARD rq:deferred", "ZCARD rq:failed",  "LINDEX rq:queue",
        "ZRANGE rq:wip",     "ZRANGE rq:failed", "ZREVRANGE rq:failed"};
    size_t k = index % ROUND2_PER_QUEUE;
    if (k < 5) {
        if (redis_job_want(r, REDIS_REPLY_INTEGER, what[k], e))
            return err_prefix(e, "queue %s", q->name);
        double *dst[] = {&q->ready, &q->running, &q->scheduled, &q->deferred, &q->failed};
        *dst[k] = (double)r->integer;
        return 0;
    }
    if (k == 5) {
        if (r->type == REDIS_REPLY_NIL)
            return 0;
        if (redis_job_want(r, REDIS_REPLY_STRING, what[k], e))
            return err_prefix(e, "queue %s", q->name);
        add_job(sc, qi, JOB_HEAD, r->str);
        return 0;
    }
    if (redis_job_want(r, REDIS_REPLY_ARRAY, what[k], e))
        return err_prefix(e, "queue %s", q->name);
    enum job_role role = k == 6 ? JOB_RUNNING : k == 7 ? JOB_FAILED_FIRST : JOB_FAILED_LAST;
    for (size_t i = 0; i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "queue %s: %s: want job ids", q->name, what[k]);
        add_job(sc, qi, role, r->element[i]->str);
    }
    return 0;
}

static const char *field(const redisReply *r, size_t i)
{
    return i < r->elements && r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : NULL;
}

/* The age at sc->now of the time in field f (RQ's utcformat), when there is one: 1 with *age, 0
 * when the field is absent, -1 when it is no time or out of range (counted as skipped). */
static int field_age(struct scrape *sc, const char *queue, const char *f, double *age)
{
    double t;
    if (!f || !*f)
        return 0;
    if (rq_parse_time(f, &t) != 0) {
        entry_skips_add(&sc->skips, queue, ENTRY_BAD_TIMESTAMP);
        return -1;
    }
    return entry_skips_age(&sc->skips, queue, sc->now, t, age) == 0 ? 1 : -1;
}

static int on_round3(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    const struct job *j = &sc->jobs[index];
    struct queue *q = &sc->q[j->queue];
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "HMGET rq:job", e))
        return -1;
    /* enqueued_at, started_at, ended_at, timeout; a job whose hash expired meanwhile is all nil. */
    double age;
    switch (j->role) {
    case JOB_HEAD:
        if (field_age(sc, q->name, field(r, 0), &age) == 1) {
            q->has_head_age = 1;
            q->head_age = age;
        }
        return 0;
    case JOB_RUNNING: {
        if (field_age(sc, q->name, field(r, 1), &age) != 1)
            return 0; /* registered, not started yet; or started at no time */
        double timeout = 0;
        int limited = rq_job_timeout(field(r, 3), sc->st->default_timeout, &timeout);
        if (limited < 0) {
            entry_skips_add(&sc->skips, q->name, ENTRY_BAD_VALUE);
            return 0;
        }
        q->holds = xrealloc(q->holds, (q->nholds + 1) * sizeof *q->holds);
        q->holds[q->nholds].timeout = limited ? timeout : 0;
        q->holds[q->nholds].held = age;
        q->nholds++;
        return 0;
    }
    case JOB_FAILED_FIRST:
    case JOB_FAILED_LAST:
        if (field_age(sc, q->name, field(r, 2), &age) == 1) {
            if (j->role == JOB_FAILED_FIRST) {
                q->has_failed_oldest = 1;
                q->failed_oldest = age;
            } else {
                q->has_failed_newest = 1;
                q->failed_newest = age;
            }
        }
        return 0;
    }
    return 0;
}

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->q[i].name);
        free(sc->q[i].holds);
    }
    free(sc->q);
    for (size_t i = 0; i < sc->njobs; i++)
        free(sc->jobs[i].id);
    free(sc->jobs);
    cfg_strv_free(sc->listed);
    cfg_strv_free(sc->workers);
    entry_skips_free(&sc->skips);
}

/* Round 2's commands, a window at a time (redis_pipe_exec_stream): Redis answers one window
 * while the next is formatted. Nine a queue, then one a worker. */
static int fill_round2(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct scrape *sc = ctx;
    for (; sc->next < sc->n && !redis_pipe_window_full(p); sc->next++) {
        const char *name = sc->q[sc->next].name;
        char *queue = xstrjoin(QUEUE_PREFIX, name, (char *)NULL);
        char *wip = xstrjoin("rq:wip:", name, (char *)NULL);
        char *scheduled = xstrjoin("rq:scheduled:", name, (char *)NULL);
        char *deferred = xstrjoin("rq:deferred:", name, (char *)NULL);
        char *failed = xstrjoin("rq:failed:", name, (char *)NULL);
        redis_pipe_addv(p, "LLEN", queue, NULL);
        redis_pipe_addv(p, "ZCARD", wip, NULL);
        redis_pipe_addv(p, "ZCARD", scheduled, NULL);
        redis_pipe_addv(p, "ZCARD", deferred, NULL);
        redis_pipe_addv(p, "ZCARD", failed, NULL);
        redis_pipe_addv(p, "LINDEX", queue, "0", NULL);
        redis_pipe_addv(p, "ZRANGE", wip, "0", sc->stop, NULL);
        redis_pipe_addv(p, "ZRANGE", failed, "0", "0", NULL);
        redis_pipe_addv(p, "ZREVRANGE", failed, "0", "0", NULL);
        free(queue);
        free(wip);
        free(scheduled);
        free(deferred);
        free(failed);
    }
    if (sc->next < sc->n)
        return 1;
    for (size_t i = 0; i < sc->nworkers; i++)
        redis_pipe_addv(p, "HMGET", sc->workers[i], "queues", "death", NULL);
    return 0;
}

/* Round 3's commands, a window at a time: one HMGET a job that round 2 named. */
static int fill_round3(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct scrape *sc = ctx;
    for (; sc->next < sc->njobs && !redis_pipe_window_full(p); sc->next++) {
        char *key = xstrjoin("rq:job:", sc->jobs[sc->next].id, (char *)NULL);
        redis_pipe_addv(p, "HMGET", key, "enqueued_at", "started_at", "ended_at", "timeout", NULL);
        free(key);
    }
    return sc->next < sc->njobs;
}

static int run(void *arg, const struct deadline *dl, struct err *e)
{
    struct scrape *sc = arg;
    struct state *st = sc->st;
    struct redis_pipe *p = st->job.pipe;
    size_t max = st->job.rs.max_response_bytes;
    redis_pipe_reset(p);
    redis_pipe_addv(p, "TIME", NULL);
    redis_pipe_addv(p, "SMEMBERS", "rq:workers", NULL);
    if (!st->job.queues)
        redis_pipe_addv(p, "SMEMBERS", "rq:queues", NULL);
    if (redis_pipe_exec_each(st->job.conn, p, dl, max, on_round1, sc, e))
        return -1;

    char **names = st->job.queues ? st->job.queues : sc->listed;
    sc->n = st->job.queues ? st->job.nqueues : sc->nlisted;
    sc->q = xcalloc(sc->n ? sc->n : 1, sizeof *sc->q);
    for (size_t i = 0; i < sc->n; i++)
        sc->q[i].name = xstrdup(names[i]);
    snprintf(sc->stop, sizeof sc->stop, "%lld", st->max_in_flight - 1);
    redis_pipe_reset(p);
    sc->next = 0;
    if (redis_pipe_exec_stream(st->job.conn, p, dl, max, fill_round2, sc, on_round2, sc, e))
        return -1;

    redis_pipe_reset(p);
    sc->next = 0;
    if (sc->njobs &&
        redis_pipe_exec_stream(st->job.conn, p, dl, max, fill_round3, sc, on_round3, sc, e))
        return -1;
    return 0;
}

static void emit(const struct scrape *sc, struct metric_set *out)
{
    exclude_emit(&sc->st->job.exclude, out, "queue");
    for (size_t i = 0; i < sc->n; i++) {
        const struct queue *q = &sc->q[i];
        const char *n = q->name;
        metric_set_add(out, "qrel_queue_messages", q->ready, "queue", n, "state", "ready", NULL);
        metric_set_add(out, "qrel_queue_messages", q->running, "queue", n, "state", "in_flight",
                       NULL);
        metric_set_add(out, "qrel_queue_messages", q->scheduled + q->deferred, "queue", n, "state",
                       "delayed", NULL);
        metric_set_add(out, "qrel_dead_letter_messages", q->failed, "queue", n, "dead_letter_queue",
                       DEAD_LETTER_LABEL, NULL);
        if (q->has_head_age)
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", q->head_age, "queue", n,
                           NULL);
        if (q->has_failed_oldest)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", q->failed_oldest, "queue", n,
                           "dead_letter_queue", DEAD_LETTER_LABEL, NULL);
        if (q->has_failed_newest)
            metric_set_add(out, "qrel_dead_letter_newest_age_seconds", q->failed_newest, "queue", n,
                           "dead_letter_queue", DEAD_LETTER_LABEL, NULL);
        metric_set_add(out, "qrel_queue_consumers", q->consumers, "queue", n, NULL);
        if (q->nholds) {
            double oldest, margin = 0, timeout = 0;
            int has_margin = rq_lease(q->holds, q->nholds, &oldest, &margin, &timeout);
            metric_set_add(out, "qrel_lease_oldest_age_seconds", oldest, "queue", n, NULL);
            if (has_margin) {
                metric_set_add(out, "qrel_lease_timeout_seconds", timeout, "queue", n, NULL);
                metric_set_add(out, "qrel_lease_margin_ratio", margin, "queue", n, NULL);
            }
        }
    }
    entry_skips_emit(&sc->skips, out);
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc = {0};
    sc.st = st;
    int rc = redis_job_collect(&st->job, c->name, dl, run, &sc, e);
    if (rc == 0) {
        emit(&sc, out);
        redis_job_log_done(&st->job, "rq collection done", c->name, sc.n);
    }
    scrape_free(&sc);
    return rc;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "keep the failed job registry"},
    {"backlog_without_consumer", "start an RQ worker that listens on this queue (rq worker "
                                 "<queue>)"},
    {NULL, NULL}};

const struct collector_kind rq_kind = {
    .name = "rq",
    .state_size = sizeof(struct state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
    .audit_hints = hints,
    .dead_letter_validate = rq_dlq_validate,
    /* The exporter's join reads the registry as `qrel dlq inspect` does (nothing changes). */
    .dead_letter_ids = dlq_dead_letter_ids,
    .dlq = &rq_dlq,
};
