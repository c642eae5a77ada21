/* bullmq/dlq.c: `qrel dlq`'s hooks for BullMQ (core/dlq_kind.h): the failed set of a queue
 * (<prefix>:<queue>:failed, a sorted set of job ids scored by finishedOn) is its dead-letter
 * queue, each job's hash (<prefix>:<queue>:<id>) carries its name, data, attempts and failure
 * time.
 *
 * Reading is ZCARD, ZRANGE and HMGET, which change nothing: no read_effect, nothing to release.
 * BullMQ's own retry (Job.retry, the reprocessJob script) moves a failed job back to wait in one
 * script too, but takes every job it is given, done work included, and nothing stops two of them
 * at once. A replay here adds:
 * - check_origin asks that BullMQ knows the queue (its meta key, which the kind's discovery finds
 *   queues by): an obliterated or misspelt queue is refused;
 * - lock takes `qrel:replay-lock:<prefix>:<queue>:failed` (common/redis_lock.h), one replay per
 *   failed set at a time; it expires, so a killed replay blocks the next one only for a while;
 * - only the jobs the work table calls not done (the engine's choice), and move is one Lua script,
 *   atomic in Redis: only while the lock is this run's and the job is still in the failed set, it
 *   does what reprocessJob does (the job pushed onto wait as its opts.lifo says, or into
 *   prioritized with BullMQ's score when it has a priority; the marker a waiting worker blocks on
 *   set unless the queue is paused or at its concurrency; finishedOn, processedOn and
 *   failedReason dropped; the `waiting` event on the events stream) and stamps the hash with
 *   qrel-replayed. Every check comes before the first write, and the writes that could meet a
 *   key of the wrong type are checked first too, so a refused move has written nothing.
 * A job of a flow (a parentKey) is refused: putting it back would need its parent's keys, which
 * Job.retry moves along. On a Redis Cluster (a queue with a hash tag: every key of it and the
 * lock in one slot) each hook runs on the master of the queue's slot, through dlq_cluster.c, and
 * once more after a MOVED that ran nothing. bullmq.c's state starts with struct bullmq_dlq_view
 * (asserted there). */
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bullmq.h"
#include "collector.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "common/redis_lock.h"
#include "config.h"
#include "dlq_cluster.h"
#include "log.h"

static struct bullmq_dlq_view *view_of(struct collector *c)
{
    return c->priv; /* bullmq.c's state starts with these members */
}

/* The source's connection (common/redis_job.h); on a cluster that to the master of the queue's
 * slot (routed before), *moved set when a MOVED ran nothing (moved may be NULL). */
static int run_routed(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                      const struct deadline *dl, int *moved, struct err *e)
{
    struct redis_job *j = &view_of(c)->job;
    if (j->rs.cluster)
        return bullmq_dlq_cluster_run(j, c->name, p, fn, ctx, dl, moved, e);
    return redis_job_run_pipe(j, c->name, p, fn, ctx, dl, e);
}

/* The same without a second try: the replay lock's callback. */
static int run_pipe(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                    const struct deadline *dl, struct err *e)
{
    return run_routed(c, p, fn, ctx, dl, NULL, e);
}

/* On a cluster: the connection to the master of queue's slot (nothing to do on one server). */
static int route(struct collector *c, const char *queue, const struct deadline *dl, struct err *e)
{
    struct bullmq_dlq_view *v = view_of(c);
    if (!v->job.rs.cluster)
        return 0;
    return bullmq_dlq_cluster_route(&v->job, c->name, v->prefix, queue, dl, e);
}

/* One hook's commands (op: 0, 1 or -1, *moved as run_routed says), routed to queue's node; on a
 * cluster once more after a MOVED that ran nothing, the map learnt again. */
typedef int (*routed_op)(struct collector *c, void *arg, const struct deadline *dl, int *moved,
                         struct err *e);

static int on_queue(struct collector *c, const char *queue, routed_op op, void *arg,
                    const struct deadline *dl, struct err *e)
{
    for (int again = 0;; again++) {
        int moved = 0;
        if (route(c, queue, dl, e))
            return -1;
        int rc = op(c, arg, dl, &moved, e);
        if (rc >= 0 || !moved || again)
            return rc;
        log_kv(LOG_DEBUG, "qrel dlq: MOVED, learning the cluster's map again", "source", c->name,
               "queue", queue, "err", e->msg, NULL);
        err_clear(e);
    }
}

int bullmq_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                        const char *id_field, struct err *e)
{
    enum bullmq_id_field f;
    char why[300];
    if (bullmq_dlq_id_field(id_field, &f, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    const struct redis_job *j = &view_of(c)->job;
    if (!*queue)
        return cfg_error(e, cfg_at(entry, "queue"), "queue: want a queue name");
    /* The move's script and the lock must be in the queue's slot (dlq_cluster.c). */
    if (j->rs.cluster && !bullmq_queue_tagged(view_of(c)->prefix, queue))
        return cfg_error(e, cfg_at(entry, "queue"),
                         "queue: \"%s\": source \"%s\" is a Redis Cluster, where every key of "
                         "a queue and qrel's replay lock must be in one hash slot: give the "
                         "prefix or the queue name a hash tag, e.g. prefix: \"{bull}\"",
                         queue, c->name);
    if (!j->queues)
        return 0; /* every queue the discovery finds is watched */
    for (size_t i = 0; i < j->nqueues; i++)
        if (strcmp(j->queues[i], queue) == 0)
            return 0;
    return cfg_error(e, cfg_at(entry, "queue"), "queue: source \"%s\" lists no queue \"%s\"",
                     c->name, queue);
}

/* ---- read ---- */

struct read_run {
    enum bullmq_id_field field;
    const char *id_field;
    struct dlq_batch *out;
    char **ids, **scores;
    size_t nids;
};

static int on_ids(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct read_run *run = ctx;
    if (i == 0) {
        if (redis_job_want(r, REDIS_REPLY_INTEGER, "ZCARD failed", e))
            return -1;
        run->out->total = r->integer > 0 ? (size_t)r->integer : 0;
        return 0;
    }
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "ZRANGE failed", e))
        return -1;
    size_t n = r->elements / 2;
    run->ids = xcalloc(n + 1, sizeof *run->ids);
    run->scores = xcalloc(n + 1, sizeof *run->scores);
    for (size_t k = 0; k + 1 < r->elements; k += 2) {
        if (r->element[k]->type != REDIS_REPLY_STRING ||
            r->element[k + 1]->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "ZRANGE failed: want job ids and scores");
        run->scores[run->nids] = xstrdup(r->element[k + 1]->str);
        run->ids[run->nids++] = xstrdup(r->element[k]->str);
    }
    return 0;
}

static const redisReply *hash_field(const redisReply *r, size_t i)
{
    return i < r->elements && r->element[i]->type == REDIS_REPLY_STRING ? r->element[i] : NULL;
}

static const char *text_of(const redisReply *r)
{
    return r ? r->str : NULL;
}

/* HMGET <prefix>:<queue>:<id> name data atm attemptsMade finishedOn qrel-replayed */
static int on_job(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct read_run *run = ctx;
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "HMGET job", e))
        return -1;
    struct dlq_message *m = dlq_batch_push(run->out);
    m->message_id = xstrdup(run->ids[i]);
    const redisReply *data = hash_field(r, 1);
    m->work_id =
        bullmq_dlq_work_id(run->field, run->id_field, run->ids[i], text_of(hash_field(r, 0)),
                           data ? data->str : NULL, data ? data->len : 0);
    m->body_bytes = data ? data->len : 0;
    m->deliveries = bullmq_dlq_deliveries(text_of(hash_field(r, 2)), text_of(hash_field(r, 3)));
    m->dead_since = bullmq_dlq_dead_since(text_of(hash_field(r, 4)), run->scores[i]);
    m->replays = bullmq_dlq_replays(text_of(hash_field(r, 5)));
    return 0;
}

struct read_args {
    struct read_run run;
    const char *prefix, *queue, *failed;
    size_t max;
};

/* ZCARD and ZRANGE of the failed set, then the HMGETs of its jobs: on_queue's op. */
static int read_once(struct collector *c, void *arg, const struct deadline *dl, int *moved,
                     struct err *e)
{
    struct read_args *a = arg;
    struct read_run *run = &a->run;
    char stop[32];
    snprintf(stop, sizeof stop, "%zu", a->max ? a->max - 1 : 0);
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "ZCARD", a->failed, NULL);
    redis_pipe_addv(p, "ZRANGE", a->failed, "0", stop, "WITHSCORES", NULL);
    int rc = run_routed(c, p, on_ids, run, dl, moved, e);
    if (rc == 0 && run->nids) {
        redis_pipe_reset(p);
        for (size_t i = 0; i < run->nids; i++) {
            char *key = xasprintf("%s:%s:%s", a->prefix, a->queue, run->ids[i]);
            redis_pipe_addv(p, "HMGET", key, "name", "data", "atm", "attemptsMade", "finishedOn",
                            DLQ_STAMP, NULL);
            free(key);
        }
        rc = run_routed(c, p, on_job, run, dl, moved, e);
    }
    redis_pipe_free(p);
    cfg_strv_free(run->ids);
    cfg_strv_free(run->scores);
    run->ids = run->scores = NULL; /* a second try (after a MOVED) reads afresh */
    run->nids = 0;
    return rc;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a moved job has left the failed set: a rerun cannot see it again */
    struct read_args a = {.run = {.id_field = id_field, .out = out},
                          .prefix = view_of(c)->prefix,
                          .queue = queue,
                          .max = max};
    char why[300];
    if (bullmq_dlq_id_field(id_field, &a.run.field, why, sizeof why))
        return err_set(e, ERR_CONFIG, "id_field: %s", why);
    char *failed = xasprintf("%s:%s:failed", a.prefix, queue);
    a.failed = failed;
    if (on_queue(c, queue, read_once, &a, dl, e)) {
        free(failed);
        return err_prefix(e, "failed set of queue \"%.200s\"", queue);
    }
    if (out->total < out->n)
        out->total = out->n; /* failed between ZCARD and ZRANGE */
    out->dead_letter_queue = failed;
    out->origin = xstrdup(queue);
    return 0;
}

/* ---- the origin must be a queue BullMQ knows ---- */

struct origin_check {
    const char *queue, *meta;
};

static int origin_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    const struct origin_check *o = ctx;
    if (redis_reply_is_error(r, NULL))
        return redis_job_reply_error(r, "EXISTS meta", e);
    if (redis_job_want(r, REDIS_REPLY_INTEGER, "EXISTS meta", e))
        return -1;
    if (r->integer != 1)
        return err_set(e, ERR_QUERY,
                       "BullMQ does not know queue \"%.200s\" (no key %.300s: obliterated, or "
                       "never used): no worker may read what a replay put back",
                       o->queue, o->meta);
    return 0;
}

static int origin_once(struct collector *c, void *arg, const struct deadline *dl, int *moved,
                       struct err *e)
{
    struct origin_check *o = arg;
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "EXISTS", o->meta, NULL);
    int rc = run_routed(c, p, origin_reply, o, dl, moved, e);
    redis_pipe_free(p);
    return rc;
}

static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    char *meta = xasprintf("%s:%s:meta", view_of(c)->prefix, b->origin);
    struct origin_check o = {.queue = b->origin, .meta = meta};
    int rc = on_queue(c, b->origin, origin_once, &o, dl, e);
    free(meta);
    return rc;
}

/* ---- one replay per failed set ---- */

/* The lock key has the failed set's hash tag: on a cluster it lives on the queue's master. A
 * MOVED here fails the hook (nothing was moved yet, or the lock expires). */
static int dlq_lock(struct collector *c, struct dlq_batch *b, double hold,
                    const struct deadline *dl, struct err *e)
{
    if (route(c, b->origin, dl, e))
        return -1;
    return redis_replay_lock_batch(c, run_pipe, b, NULL, "", hold, dl, e);
}

static int dlq_unlock(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                      struct err *e)
{
    if (b->kind_data && route(c, b->origin, dl, e))
        return -1;
    return redis_replay_unlock_batch(c, run_pipe, b, dl, e);
}

/* ---- the move ---- */

/* KEYS: 1 failed, 2 job hash, 3 lock, 4 wait, 5 meta, 6 active, 7 marker, 8 prioritized,
 * 9 priority counter (pc), 10 events; ARGV: job id, token, hold ms, the stamp's field. What
 * reprocessJob does, in its order, after every check. n >= 1: moved, stamped n; 0: the job had
 * left the failed set, nothing done. */
static const char move_script[] =
    "local function refuse(why) return redis.error_reply('QREL ' .. why) end "
    "if redis.call('GET', KEYS[3]) ~= ARGV[2] then "
    "return refuse('this replay lost its lock (it expired; another replay may hold it now)') "
    "end "
    "redis.call('PEXPIRE', KEYS[3], ARGV[3]) "
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end "
    "if redis.call('EXISTS', KEYS[2]) == 0 then "
    "return refuse('job hash ' .. KEYS[2] .. ' is gone (removed): nothing to run; left in the "
    "failed set') end "
    "local f = redis.call('HMGET', KEYS[2], 'priority', 'opts', 'parentKey', ARGV[4]) "
    "if f[3] then return refuse('job ' .. ARGV[1] .. ' belongs to a flow (parent ' .. f[3] .. "
    "'): retry it with BullMQ (Job.retry), which puts it back among the dependencies of "
    "its parent; left in the failed set') end "
    "local lifo = false "
    "if f[2] then local ok, o = pcall(cjson.decode, f[2]) "
    "if ok and type(o) == 'table' and o.lifo then lifo = true end end "
    "local prio = tonumber(f[1]) or 0 "
    "local n = tonumber(f[4]) "
    "if not n or n < 0 or n ~= math.floor(n) then n = 0 end "
    "n = n + 1 "
    "local meta = redis.call('HMGET', KEYS[5], 'paused', 'concurrency', 'opts.maxLenEvents') "
    "local held = meta[1] ~= false "
    "local cap = tonumber(meta[2]) "
    "if not held and cap then held = redis.call('LLEN', KEYS[6]) >= cap end "
    "local maxev = 10000 "
    "if meta[3] then maxev = tonumber(meta[3]) "
    "if not maxev or maxev < 0 then return refuse(KEYS[5] .. ' opts.maxLenEvents is no count') "
    "end end "
    "local want = {[4] = 'list', [7] = 'zset', [8] = 'zset', [9] = 'string', [10] = 'stream'} "
    "for k, t in pairs(want) do local got = redis.call('TYPE', KEYS[k]).ok "
    "if got ~= 'none' and got ~= t then "
    "return refuse(KEYS[k] .. ' is a ' .. got .. ', not a ' .. t) end end "
    "if prio == 0 then redis.call(lifo and 'RPUSH' or 'LPUSH', KEYS[4], ARGV[1]) "
    "else local pc = redis.call('INCR', KEYS[9]) "
    "redis.call('ZADD', KEYS[8], prio * 0x100000000 + pc % 0x100000000, ARGV[1]) end "
    "redis.call('ZREM', KEYS[1], ARGV[1]) "
    "redis.call('HDEL', KEYS[2], 'finishedOn', 'processedOn', 'failedReason') "
    "redis.call('HSET', KEYS[2], ARGV[4], n) "
    "if not held then redis.call('ZADD', KEYS[7], 0, '0') end "
    "if not meta[3] then redis.call('HSET', KEYS[5], 'opts.maxLenEvents', maxev) end "
    "redis.call('XADD', KEYS[10], 'MAXLEN', '~', maxev, '*', 'event', 'waiting', 'jobId', "
    "ARGV[1], 'prev', 'failed') "
    "return n";

struct move_args {
    const char *const *argv;
    int argc;
    long long got;
};

/* The script's EVAL: on_queue's op (a MOVED EVAL ran nothing, so a second try moves once). */
static int move_once(struct collector *c, void *arg, const struct deadline *dl, int *moved,
                     struct err *e)
{
    struct move_args *a = arg;
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_add(p, a->argc, a->argv, NULL);
    int rc = run_routed(c, p, redis_job_eval_int, &a->got, dl, moved, e);
    redis_pipe_free(p);
    return rc;
}

static int dlq_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    const struct redis_replay_lock *l = b->kind_data;
    if (!l)
        return err_set(e, ERR_INTERNAL, "a move without the replay lock");
    const char *prefix = view_of(c)->prefix;
    static const char *const suffix[] = {"wait",        "meta", "active", "marker",
                                         "prioritized", "pc",   "events"};
    char *key[7];
    for (size_t i = 0; i < 7; i++)
        key[i] = xasprintf("%s:%s:%s", prefix, b->origin, suffix[i]);
    char *job = xasprintf("%s:%s:%s", prefix, b->origin, m->message_id);
    /* 17 arguments: more than redis_pipe_addv takes */
    const char *argv[] = {"EVAL",   move_script,   "10",     b->dead_letter_queue,
                          job,      l->key,        key[0],   key[1],
                          key[2],   key[3],        key[4],   key[5],
                          key[6],   m->message_id, l->token, l->hold_ms,
                          DLQ_STAMP};
    struct move_args a = {argv, (int)(sizeof argv / sizeof argv[0]), 0};
    int rc = on_queue(c, b->origin, move_once, &a, dl, e);
    for (size_t i = 0; i < 7; i++)
        free(key[i]);
    free(job);
    if (rc)
        return err_prefix(e, "queue \"%.200s\"", b->origin);
    return a.got >= 1 ? 0 : 1;
}

/* No release or read_effect: reading changes nothing. A move is requeue and remove in one step,
 * so neither of those is set. */
const struct dlq_kind bullmq_dlq = {.read = dlq_read,
                                    .check_origin = dlq_check_origin,
                                    .lock = dlq_lock,
                                    .unlock = dlq_unlock,
                                    .move = dlq_move,
                                    .batch_free = redis_replay_lock_free,
                                    .stamps = 1,
                                    .join_label = "failed"};
