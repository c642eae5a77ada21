/* rq/dlq.c: `qrel dlq`'s hooks for RQ (core/dlq_kind.h): the failed job registry of a queue
 * (rq:failed:<queue>, a sorted set of job ids) is its dead-letter queue, each job's hash
 * (rq:job:<id>) says when it failed and carries its id.
 *
 * Reading is ZCARD, ZRANGE and HMGET, which change nothing: no read_effect, nothing to release.
 * RQ's own requeue removes the job from the registry first and pushes it second, so a lost
 * connection in between loses it. A replay here never does:
 * - check_origin asks that RQ knows the queue (rq:queues, where RQ adds every queue it enqueues
 *   on and whence Queue.delete removes it): a deleted or misspelt queue is refused;
 * - lock takes `qrel:replay-lock:rq:failed:<queue>` (SET NX PX, a random token), one replay per
 *   registry at a time; it expires, so a killed replay blocks the next one only for a while;
 * - move is one Lua script, atomic in Redis: only while the lock is this run's and the job is
 *   still in the registry, it sets the job hash back as RQ's enqueue_job does (status queued,
 *   origin, enqueued_at now, started_at and ended_at empty, exc_info cleared as RQ's requeue
 *   does, the job's own ttl as expiry when it has one), adds the queue to rq:queues, pushes the
 *   id onto rq:queue:<queue> unless it is there already, and ZREMs it from the registry. A
 *   job another client removed meanwhile is "gone"; a job whose hash expired is refused and
 *   stays in the registry (there is nothing to run).
 * The struct redis_job is the first member of rq.c's state (asserted there), so this file reads
 * the connection and settings through it without knowing the rest of the state. */
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "collector.h"
#include "common/redis_lock.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "config.h"
#include "rq.h"

#define Y2000 946684800.0 /* 2000-01-01T00:00:00Z */

static struct redis_job *job_of(struct collector *c)
{
    return c->priv; /* the first member of rq.c's struct state */
}

/* The source's connection, through common/redis_job.h (also the replay lock's callback). */
static int run_pipe(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                    const struct deadline *dl, struct err *e)
{
    return redis_job_run_pipe(job_of(c), c->name, p, fn, ctx, dl, e);
}

int rq_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                    const char *id_field, struct err *e)
{
    enum rq_id_field f;
    char why[300];
    if (rq_dlq_id_field(id_field, &f, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    const struct redis_job *j = job_of(c);
    if (!*queue)
        return cfg_error(e, cfg_at(entry, "queue"), "queue: want a queue name");
    if (!j->queues)
        return 0; /* every queue of rq:queues is watched */
    for (size_t i = 0; i < j->nqueues; i++)
        if (strcmp(j->queues[i], queue) == 0)
            return 0;
    return cfg_error(e, cfg_at(entry, "queue"), "queue: source \"%s\" lists no queue \"%s\"",
                     c->name, queue);
}

/* ---- read ---- */

struct read_run {
    const char *queue;
    enum rq_id_field field;
    struct dlq_batch *out;
    char **ids;
    size_t nids;
};

static int on_ids(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct read_run *run = ctx;
    if (i == 0) {
        if (redis_job_want(r, REDIS_REPLY_INTEGER, "ZCARD rq:failed", e))
            return -1;
        run->out->total = r->integer > 0 ? (size_t)r->integer : 0;
        return 0;
    }
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "ZRANGE rq:failed", e))
        return -1;
    run->ids = xcalloc(r->elements + 1, sizeof *run->ids);
    for (size_t k = 0; k < r->elements; k++) {
        if (r->element[k]->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "ZRANGE rq:failed: want job ids");
        run->ids[run->nids++] = xstrdup(r->element[k]->str);
    }
    return 0;
}

static const char *hash_field(const redisReply *r, size_t i)
{
    return i < r->elements && r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : NULL;
}

/* HMGET rq:job:<id> ended_at enqueued_at retries_left description qrel-replayed */
static int on_job(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct read_run *run = ctx;
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "HMGET rq:job", e))
        return -1;
    struct dlq_message *m = dlq_batch_push(run->out);
    m->message_id = xstrdup(run->ids[i]);
    const char *id = run->field == RQ_ID_JOB_ID ? run->ids[i] : hash_field(r, 3);
    if (id && *id)
        m->work_id = xstrdup(id);
    /* A job whose hash expired is all nil: it is listed, with what its id says. */
    if (hash_field(r, 0) || hash_field(r, 1)) {
        m->deliveries = rq_dlq_deliveries(hash_field(r, 2));
        m->replays = rq_dlq_replays(hash_field(r, 4));
    }
    /* A time before 2000 is no failure time RQ wrote (docs/dlq.md): it says nothing. */
    double t;
    if ((rq_parse_time(hash_field(r, 0), &t) == 0 || rq_parse_time(hash_field(r, 1), &t) == 0) &&
        t >= Y2000)
        m->dead_since = t;
    return 0;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a moved job has left the registry: a rerun cannot see it again */
    struct read_run run = {.queue = queue, .out = out};
    char why[300];
    if (rq_dlq_id_field(id_field, &run.field, why, sizeof why))
        return err_set(e, ERR_CONFIG, "id_field: %s", why);
    char *failed = xasprintf("rq:failed:%s", queue);
    char stop[32];
    snprintf(stop, sizeof stop, "%zu", max ? max - 1 : 0);
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "ZCARD", failed, NULL);
    redis_pipe_addv(p, "ZRANGE", failed, "0", stop, NULL);
    int rc = run_pipe(c, p, on_ids, &run, dl, e);
    if (rc == 0 && run.nids) {
        redis_pipe_reset(p);
        for (size_t i = 0; i < run.nids; i++) {
            char *key = xasprintf("rq:job:%s", run.ids[i]);
            redis_pipe_addv(p, "HMGET", key, "ended_at", "enqueued_at", "retries_left",
                            "description", DLQ_STAMP, NULL);
            free(key);
        }
        rc = run_pipe(c, p, on_job, &run, dl, e);
    }
    redis_pipe_free(p);
    cfg_strv_free(run.ids);
    if (rc) {
        free(failed);
        return err_prefix(e, "failed job registry of queue \"%.200s\"", queue);
    }
    if (out->total < out->n)
        out->total = out->n; /* failed between ZCARD and ZRANGE */
    out->dead_letter_queue = failed;
    out->origin = xstrdup(queue);
    return 0;
}

/* ---- the origin must be a queue RQ knows ---- */

static int origin_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    const char *queue = ctx;
    if (redis_reply_is_error(r, NULL))
        return redis_job_reply_error(r, "SISMEMBER rq:queues", e);
    if (redis_job_want(r, REDIS_REPLY_INTEGER, "SISMEMBER rq:queues", e))
        return -1;
    if (r->integer != 1)
        return err_set(e, ERR_QUERY,
                       "RQ does not know queue \"%.200s\" (it is not in rq:queues: deleted, or "
                       "never enqueued on): no worker may read what a replay put back",
                       queue);
    return 0;
}

static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    char *key = xasprintf("rq:queue:%s", b->origin);
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "SISMEMBER", "rq:queues", key, NULL);
    int rc = run_pipe(c, p, origin_reply, b->origin, dl, e);
    redis_pipe_free(p);
    free(key);
    return rc;
}

/* ---- one replay per failed job registry ---- */

static int dlq_lock(struct collector *c, struct dlq_batch *b, double hold,
                    const struct deadline *dl, struct err *e)
{
    return redis_replay_lock_batch(c, run_pipe, b, NULL, "", hold, dl, e);
}

static int dlq_unlock(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                      struct err *e)
{
    return redis_replay_unlock_batch(c, run_pipe, b, dl, e);
}

/* ---- the move ---- */

/* KEYS: registry, queue list, job hash, lock, rq:queues; ARGV: job id, token, hold ms, queue
 * name, enqueued_at, the replay stamp (replays + 1, set in the hash as DLQ_STAMP: RQ saves a job
 * with HSET, so a field it does not know stays through the next failure). Atomic: Redis runs
 * nothing else meanwhile. 1: moved; 0: the job had left the registry, nothing done. */
static const char move_script[] =
    "local function refuse(why) return redis.error_reply('QREL ' .. why) end "
    "if redis.call('GET', KEYS[4]) ~= ARGV[2] then "
    "return refuse('this replay lost its lock (it expired; another replay may hold it now)') "
    "end "
    "redis.call('PEXPIRE', KEYS[4], ARGV[3]) "
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end "
    "if redis.call('EXISTS', KEYS[3]) == 0 then "
    "return refuse('job hash ' .. KEYS[3] .. ' is gone (expired): nothing to run; left in the "
    "registry') end "
    "redis.call('HSET', KEYS[3], 'status', 'queued', 'origin', ARGV[4], 'enqueued_at', ARGV[5], "
    "'started_at', '', 'ended_at', '', '" DLQ_STAMP "', ARGV[6]) "
    "redis.call('HDEL', KEYS[3], 'exc_info') "
    "local ttl = tonumber(redis.call('HGET', KEYS[3], 'ttl')) "
    "if ttl and ttl > 0 then redis.call('EXPIRE', KEYS[3], math.floor(ttl)) end "
    "redis.call('SADD', KEYS[5], KEYS[2]) "
    "if not redis.call('LPOS', KEYS[2], ARGV[1]) then redis.call('RPUSH', KEYS[2], ARGV[1]) end "
    "redis.call('ZREM', KEYS[1], ARGV[1]) "
    "return 1";

static int dlq_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    const struct redis_replay_lock *l = b->kind_data;
    if (!l)
        return err_set(e, ERR_INTERNAL, "a move without the replay lock");
    /* RQ stamps enqueued_at with the enqueuing client's clock; so does this replay. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char now[40];
    if (rq_utcformat((double)ts.tv_sec + (double)ts.tv_nsec / 1e9, now, sizeof now))
        return err_set(e, ERR_INTERNAL, "the clock says no time RQ can write");
    char stamp[24]; /* replays + 1; an unreadable stamp counts as none */
    snprintf(stamp, sizeof stamp, "%lld", (long long)(m->replays > 0 ? m->replays + 1 : 1));
    char *queue = xasprintf("rq:queue:%s", b->origin);
    char *job = xasprintf("rq:job:%s", m->message_id);
    long long got = 0;
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "EVAL", move_script, "5", b->dead_letter_queue, queue, job, l->key,
                    "rq:queues", m->message_id, l->token, l->hold_ms, b->origin, now, stamp, NULL);
    int rc = run_pipe(c, p, redis_job_eval_int, &got, dl, e);
    redis_pipe_free(p);
    free(queue);
    free(job);
    if (rc)
        return err_prefix(e, "queue \"%.200s\"", b->origin);
    return got == 1 ? 0 : 1;
}

/* No release or read_effect: reading changes nothing. A move is requeue and remove in one step,
 * so neither of those is set. */
const struct dlq_kind rq_dlq = {.read = dlq_read,
                                .check_origin = dlq_check_origin,
                                .lock = dlq_lock,
                                .unlock = dlq_unlock,
                                .move = dlq_move,
                                .batch_free = redis_replay_lock_free,
                                .stamps = 1,
                                .join_label = "failed"};
