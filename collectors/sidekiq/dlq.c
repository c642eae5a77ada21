/* sidekiq/dlq.c: `qrel dlq`'s hooks for Sidekiq (core/dlq_kind.h). The dead letters of queue Q
 * are the jobs of the dead set (`dead`, a sorted set of job payloads scored by the time of
 * death, shared by every queue) whose "queue" is Q; the namespace prefixes every key.
 *
 * Reading is ZCARD and ZRANGE … WITHSCORES in pages of PAGE jobs, at most max_set_entries of
 * them (as a scrape reads), which change nothing: no read_effect, nothing to release. Sidekiq's
 * own SortedEntry#retry removes the job from the dead set first (ZREMRANGEBYSCORE in a MULTI) and
 * pushes it second, from the client: a lost connection in between loses the job
 * (sidekiq/sidekiq#4138). A replay here never does:
 * - check_origin asks that Sidekiq knows the queue (the `queues` set, where every push adds it
 *   and whence Queue#clear removes it);
 * - lock takes `qrel:replay-lock:<ns>dead:<Q>` (common/redis_lock.h), one replay per queue's
 *   dead jobs at a time;
 * - move is one Lua script, atomic in Redis: only while the lock is this run's and the exact
 *   member is still in the dead set (ZSCORE), it adds Q to `queues`, LPUSHes the payload as
 *   Sidekiq's retry makes it (sidekiq_dlq_requeue_payload: retry_count one less, enqueued_at
 *   now, and the stamp) onto `queue:Q`, and ZREMs that exact member. A member gone meanwhile
 *   (another replay, Sidekiq's UI, its trimming) is "gone", and nothing is pushed. */
#include "dlq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "client.h"
#include "common/redis_lock.h"
#include "config.h"
#include "log.h"
#include "sidekiq.h"

#define PAGE 500
#define Y2000 946684800.0 /* 2000-01-01T00:00:00Z */

/* A dead letter's own data: the dead set's member, byte for byte (the move removes exactly it). */
struct dead_job {
    char *member;
    size_t len;
};

static void dead_job_free(void *p)
{
    struct dead_job *d = p;
    if (d)
        free(d->member);
    free(d);
}

int sidekiq_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                         const char *id_field, struct err *e)
{
    char why[300];
    if (sidekiq_dlq_id_field(id_field, why, sizeof why))
        return cfg_error(e, cfg_at(entry, "id_field"), "id_field: %s", why);
    const struct state *st = c->priv;
    if (!*queue)
        return cfg_error(e, cfg_at(entry, "queue"), "queue: want a queue name");
    if (!st->job.queues)
        return 0; /* every queue of the queues set is watched */
    for (size_t i = 0; i < st->job.nqueues; i++)
        if (strcmp(st->job.queues[i], queue) == 0)
            return 0;
    return cfg_error(e, cfg_at(entry, "queue"), "queue: source \"%s\" lists no queue \"%s\"",
                     c->name, queue);
}

/* ---- read ---- */

struct read_run {
    const char *queue, *id_field;
    size_t max;
    struct dlq_batch *out;
    long long card;  /* ZCARD of the dead set */
    size_t got;      /* members in the last page */
    size_t skipped;  /* members no queue could be read from */
    size_t of_queue; /* members of the queue seen */
    int with_card;   /* the page's pipeline starts with ZCARD */
};

static int on_job(struct read_run *run, const redisReply *job, const redisReply *score)
{
    struct sidekiq_dead d;
    enum entry_skip why;
    struct err ignored = {0};
    if (job->type != REDIS_REPLY_STRING ||
        sidekiq_dlq_job(job->str, job->len, run->id_field, &d, &why, &ignored)) {
        run->skipped++;
        return 0;
    }
    if (strcmp(d.queue, run->queue) != 0) {
        sidekiq_dead_free(&d);
        return 0;
    }
    run->of_queue++;
    if (run->out->n < run->max) {
        struct dlq_message *m = dlq_batch_push(run->out);
        m->message_id = d.jid ? d.jid : xasprintf("(no jid, #%zu)", run->of_queue);
        d.jid = NULL;
        m->work_id = d.work_id;
        d.work_id = NULL;
        m->deliveries = d.deliveries;
        m->replays = d.replays;
        m->body_bytes = job->len;
        double t = score && score->type == REDIS_REPLY_STRING ? strtod(score->str, NULL) : NAN;
        if (isfinite(t) && t >= Y2000) /* a score before 2000 is no death Sidekiq wrote */
            m->dead_since = t;
        struct dead_job *k = xcalloc(1, sizeof *k);
        k->member = xmalloc(job->len + 1);
        memcpy(k->member, job->str, job->len);
        k->member[job->len] = '\0';
        k->len = job->len;
        m->kind_data = k;
    }
    sidekiq_dead_free(&d);
    return 0;
}

static int on_page(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct read_run *run = ctx;
    if (redis_reply_is_error(r, NULL))
        return redis_job_reply_error(r, i == 0 && run->with_card ? "ZCARD" : "ZRANGE", e);
    if (i == 0 && run->with_card) {
        if (redis_job_want(r, REDIS_REPLY_INTEGER, "ZCARD dead", e))
            return -1;
        run->card = r->integer;
        return 0;
    }
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "ZRANGE dead", e))
        return -1;
    run->got = r->elements / 2;
    for (size_t k = 0; k + 1 < r->elements; k += 2)
        on_job(run, r->element[k], r->element[k + 1]);
    return 0;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a moved job has left the dead set: a rerun cannot see it again */
    struct state *st = c->priv;
    char why[300];
    if (sidekiq_dlq_id_field(id_field, why, sizeof why))
        return err_set(e, ERR_CONFIG, "id_field: %s", why);
    struct read_run run = {.queue = queue, .id_field = id_field, .max = max, .out = out};
    char *dead = sidekiq_key(st, "dead", NULL);
    struct redis_pipe *p = redis_pipe_new();
    int rc = 0;
    /* Rank pages, oldest death first, up to max_set_entries as a scrape reads: the whole dead
     * set must be read to count a queue's jobs in it (Sidekiq keeps at most 10,000). */
    for (long long from = 0; rc == 0 && from < st->max_set_entries; from += PAGE) {
        long long to =
            from + PAGE - 1 < st->max_set_entries ? from + PAGE - 1 : st->max_set_entries - 1;
        char a[32], b[32];
        snprintf(a, sizeof a, "%lld", from);
        snprintf(b, sizeof b, "%lld", to);
        redis_pipe_reset(p);
        if ((run.with_card = from == 0))
            redis_pipe_addv(p, "ZCARD", dead, NULL);
        redis_pipe_addv(p, "ZRANGE", dead, a, b, "WITHSCORES", NULL);
        run.got = 0;
        rc = sidekiq_run_pipe(c, p, on_page, &run, dl, e);
        if (rc == 0 && run.got < (size_t)(to - from + 1))
            break;
    }
    redis_pipe_free(p);
    if (rc) {
        free(dead);
        return err_prefix(e, "dead set of queue \"%.200s\"", queue);
    }
    if (run.card > st->max_set_entries) {
        char card[32], limit[32];
        snprintf(card, sizeof card, "%lld", run.card);
        snprintf(limit, sizeof limit, "%lld", st->max_set_entries);
        log_kv(LOG_WARN, "sidekiq dead set larger than max_set_entries: read only its oldest",
               "source", c->name, "dead", card, "max_set_entries", limit, NULL);
    }
    if (run.skipped) {
        char n[32];
        snprintf(n, sizeof n, "%zu", run.skipped);
        log_kv(LOG_WARN, "sidekiq dead jobs without a readable queue passed over", "source",
               c->name, "jobs", n, NULL);
    }
    out->total = run.of_queue;
    out->dead_letter_queue = dead;
    out->origin = xstrdup(queue);
    return 0;
}

/* ---- the origin must be a queue Sidekiq knows ---- */

static int origin_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    const char *queue = ctx;
    if (redis_reply_is_error(r, NULL))
        return redis_job_reply_error(r, "SISMEMBER queues", e);
    if (redis_job_want(r, REDIS_REPLY_INTEGER, "SISMEMBER queues", e))
        return -1;
    if (r->integer != 1)
        return err_set(e, ERR_QUERY,
                       "Sidekiq does not know queue \"%.200s\" (it is not in the queues set: "
                       "cleared, or never pushed to): no process may read what a replay put back",
                       queue);
    return 0;
}

static int dlq_check_origin(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                            struct err *e)
{
    const struct state *st = c->priv;
    char *queues = sidekiq_key(st, "queues", NULL);
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "SISMEMBER", queues, b->origin, NULL);
    int rc = sidekiq_run_pipe(c, p, origin_reply, b->origin, dl, e);
    redis_pipe_free(p);
    free(queues);
    return rc;
}

/* ---- one replay per queue's dead jobs ---- */

static int dlq_lock(struct collector *c, struct dlq_batch *b, double hold,
                    const struct deadline *dl, struct err *e)
{
    char *name = xasprintf("%s:%s", b->dead_letter_queue, b->origin);
    int rc = redis_replay_lock_batch(c, sidekiq_run_pipe, b, name, "", hold, dl, e);
    free(name);
    return rc;
}

static int dlq_unlock(struct collector *c, struct dlq_batch *b, const struct deadline *dl,
                      struct err *e)
{
    return redis_replay_unlock_batch(c, sidekiq_run_pipe, b, dl, e);
}

/* ---- the move ---- */

/* KEYS: dead set, queue list, queues set, lock; ARGV: the member, the payload to push, token,
 * hold ms, queue name. Atomic: Redis runs nothing else meanwhile. 1: moved; 0: the member had
 * left the dead set, nothing done. */
static const char move_script[] =
    "if redis.call('GET', KEYS[4]) ~= ARGV[3] then "
    "return redis.error_reply('QREL this replay lost its lock (it expired; another replay may "
    "hold it now)') end "
    "redis.call('PEXPIRE', KEYS[4], ARGV[4]) "
    "if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end "
    "redis.call('SADD', KEYS[3], ARGV[5]) "
    "redis.call('LPUSH', KEYS[2], ARGV[2]) "
    "redis.call('ZREM', KEYS[1], ARGV[1]) "
    "return 1";

static int dlq_move(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                    const struct deadline *dl, struct err *e)
{
    const struct state *st = c->priv;
    const struct redis_replay_lock *l = b->kind_data;
    const struct dead_job *d = m->kind_data;
    if (!l || !d)
        return err_set(e, ERR_INTERNAL, "a move without the replay lock or the job");
    /* Sidekiq's client stamps enqueued_at with its own clock; so does this replay. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char *payload;
    size_t plen;
    if (sidekiq_dlq_requeue_payload(d->member, d->len, (double)ts.tv_sec + (double)ts.tv_nsec / 1e9,
                                    (m->replays > 0 ? m->replays : 0) + 1, &payload, &plen, e))
        return err_prefix(e, "job %.100s", m->message_id);
    char *queue = sidekiq_key(st, "queue:", b->origin);
    char *queues = sidekiq_key(st, "queues", NULL);
    long long got = 0;
    struct redis_pipe *p = redis_pipe_new();
    /* Binary safe: the member is matched byte for byte. */
    const char *argv[] = {"EVAL",  move_script, "4",        b->dead_letter_queue,
                          queue,   queues,      l->key,     d->member,
                          payload, l->token,    l->hold_ms, b->origin};
    size_t lens[sizeof argv / sizeof *argv];
    for (size_t i = 0; i < sizeof argv / sizeof *argv; i++)
        lens[i] = strlen(argv[i]);
    lens[7] = d->len;
    lens[8] = plen;
    redis_pipe_add(p, (int)(sizeof argv / sizeof *argv), argv, lens);
    int rc = sidekiq_run_pipe(c, p, redis_job_eval_int, &got, dl, e);
    redis_pipe_free(p);
    free(queue);
    free(queues);
    free(payload);
    if (rc)
        return err_prefix(e, "queue \"%.200s\"", b->origin);
    return got == 1 ? 0 : 1;
}

/* No release or read_effect: reading changes nothing. A move is requeue and remove in one step,
 * so neither of those is set. */
const struct dlq_kind sidekiq_dlq = {.read = dlq_read,
                                     .check_origin = dlq_check_origin,
                                     .lock = dlq_lock,
                                     .unlock = dlq_unlock,
                                     .move = dlq_move,
                                     .message_free = dead_job_free,
                                     .batch_free = redis_replay_lock_free,
                                     .stamps = 1,
                                     .join_label = "dead"};
