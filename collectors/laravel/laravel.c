/* laravel.c: `kind: laravel`, the reliability of Laravel (PHP) queues on its Redis driver
 * (Illuminate\Queue\RedisQueue).
 *
 * Laravel keeps a queue Q under its Redis key prefix (`prefix`, Laravel's default
 * `laravel_database_`) as the list `queues:Q` of job JSON (pushed at the right, popped from the
 * left, so the oldest job is at index 0), the sorted set `queues:Q:delayed` (jobs pushed with
 * later() or released for a retry, scored by when they become ready), and the sorted set
 * `queues:Q:reserved` (jobs a worker popped, scored by the expiry of their lease: pop time +
 * the connection's `retry_after`). A worker's pop first moves every reserved job whose score is
 * past back onto the list: a job running longer than retry_after is handed to the next worker
 * that polls while the first still runs, and runs twice. Between the expiry and that poll (all
 * workers busy) the job stays in the reserved set with a past score: counted here as a lease
 * that expired under a running handler.
 *
 * Nothing in Redis names the queues, so without `queues` they are found by SCAN <prefix>queues:*
 * (one round trip per page). Then one pipelined round trip reads, per queue: LLEN and LINDEX 0
 * of the list, ZCARD of the delayed set, ZCARD and ZCOUNT -inf..now of the reserved set, and its
 * first max_in_flight_jobs entries WITHSCORES (the oldest lease first).
 *
 * A job qrel cannot read (not JSON, no attempts, a time that is none) is passed over and counted
 * (qrel_skipped_entries, common/entries.h): one bad job never takes the source down. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "collector.h"
#include "common/entries.h"
#include "common/exclude.h"
#include "common/live_check.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "config.h"
#include "hashtab.h"
#include "laravel.h"
#include "log.h"
#include "alloc.h"

#define DEFAULT_PREFIX "laravel_database_"
#define DEFAULT_RETRY_AFTER 90.0 /* config/queue.php's redis connection */
#define DEFAULT_MAX_IN_FLIGHT 1000
#define PER_QUEUE 6

struct state {
    struct redis_job job; /* the connection keys, queues, connection and pipeline */
    char *prefix;
    double retry_after;
    double job_timeout; /* the workers' --timeout; NAN when not configured */
    long long max_in_flight;
};

struct queue {
    char *name;
    int excluded; /* matched by exclude: kept so that its other keys do not count it again */
    double ready, delayed, in_flight, expired, redelivered, read;
    double timeout; /* the longest timeout of its jobs read (their own, else job_timeout) */
    int has_head, has_hold, has_margin;
    double head_age, hold, margin;
};

struct scrape {
    struct state *st;
    double now;
    int timed; /* TIME answered: the first reply of the first round trip only */
    char now_text[64];
    char *cursor;    /* SCAN's; "0" once done */
    struct queue *q; /* in the order met, the excluded ones too */
    size_t n, cap;
    struct hashtab index; /* name -> position in q */
    size_t *read;         /* the positions in q of the queues not excluded, nread of them */
    size_t nread;
    struct entry_skips skips;
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    redis_job_free(&st->job);
    free(st->prefix);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    st->job.rs.no_cluster = "the laravel kind does not read a Redis Cluster yet (Laravel runs on "
                            "one with hash-tagged queue names): name one master as address";
    st->job.discovery = "SCAN <prefix>queues:*";
    st->job_timeout = NAN;
    if (redis_job_read(map, &st->job, e) || cfg_get_str(map, "prefix", 0, &st->prefix, e) ||
        cfg_get_positive_duration(map, "retry_after", DEFAULT_RETRY_AFTER, &st->retry_after, e) ||
        cfg_get_positive_duration(map, "job_timeout", NAN, &st->job_timeout, e) ||
        cfg_get_int(map, "max_in_flight_jobs", DEFAULT_MAX_IN_FLIGHT, 1, 1000000,
                    &st->max_in_flight, e) ||
        redis_job_finish(c, map, &st->job, e))
        return -1;
    if (!st->prefix)
        st->prefix = xstrdup(DEFAULT_PREFIX);
    if (redis_job_check_queues(map, &st->job, e))
        return -1;
    for (size_t i = 0; i < st->job.nqueues; i++)
        if (!*st->job.queues[i])
            return cfg_error(e, cfg_at(map, "queues"), "queues: want non-empty names");
    return 0;
}

static uint64_t queue_hash(const void *ctx, uint32_t k)
{
    const struct scrape *sc = ctx;
    return hashtab_hash(sc->q[k].name, strlen(sc->q[k].name), 0);
}

/* A queue named or found; found is judged by exclude, once per queue however many of its keys
 * SCAN met. Indexed by name: a linear search made 10,000 named queues cost 50 million string
 * comparisons a scrape. */
static void add_queue(struct scrape *sc, const char *name, int found)
{
    uint64_t h = hashtab_hash(name, strlen(name), 0);
    struct hashtab_probe p;
    for (uint32_t k = hashtab_first(&sc->index, h, &p); k != HASHTAB_END;
         k = hashtab_next(&sc->index, &p))
        if (strcmp(sc->q[k].name, name) == 0)
            return; /* the list and its sets name the same queue */
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 64;
        sc->q = xrealloc(sc->q, sc->cap * sizeof *sc->q);
    }
    memset(&sc->q[sc->n], 0, sizeof *sc->q);
    sc->q[sc->n].name = xstrdup(name);
    sc->q[sc->n].excluded = found && exclude_drop(&sc->st->job.exclude, name);
    sc->q[sc->n].timeout = sc->st->job_timeout;
    hashtab_add(&sc->index, &p, (uint32_t)sc->n++, queue_hash, sc);
}

/* ---- round 1: TIME, then SCAN pages ---- */

static int on_round1(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (index == 0 && !sc->timed) {
        sc->timed = 1;
        return redis_job_time(r, &sc->now, e);
    }
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "SCAN", e))
        return -1;
    if (r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "SCAN: want a cursor and a list of keys");
    free(sc->cursor);
    sc->cursor = xstrdup(r->element[0]->str);
    const redisReply *keys = r->element[1];
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        char *name = laravel_queue_of_key(k->str, k->len, sc->st->prefix);
        if (name)
            add_queue(sc, name, 1);
        free(name);
    }
    return 0;
}

/* ---- round 2: per queue ---- */

/* One job of q (its head, or a reserved one): 0 with *j, or -1 when it was skipped. */
static int read_job(struct scrape *sc, struct queue *q, const redisReply *r, struct laravel_job *j)
{
    enum entry_skip why;
    struct err ignored = {0};
    if (laravel_parse_job(r->str, r->len, j, &why, &ignored)) {
        entry_skips_add(&sc->skips, q->name, why);
        return -1;
    }
    double t = isnan(j->timeout) || j->timeout <= 0 ? sc->st->job_timeout : j->timeout;
    if (!isnan(t) && (isnan(q->timeout) || t > q->timeout))
        q->timeout = t;
    return 0;
}

static int on_reserved(struct scrape *sc, struct queue *q, const redisReply *r, struct err *e)
{
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "ZRANGE reserved", e))
        return err_prefix(e, "queue %s", q->name);
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *job = r->element[i], *score = r->element[i + 1];
        if (job->type != REDIS_REPLY_STRING || score->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "queue %s: ZRANGE reserved: want jobs and scores",
                           q->name);
        struct laravel_job j;
        q->read++;
        if (read_job(sc, q, job, &j) == 0 && j.attempts > 1)
            q->redelivered++;
        if (i > 0)
            continue; /* the first has the smallest score: the longest hold */
        char *end;
        double s = strtod(score->str, &end);
        int rc = end == score->str || *end
                     ? -1
                     : laravel_lease(sc->now, s, sc->st->retry_after, &q->hold, &q->margin);
        if (rc < 0) {
            entry_skips_add(&sc->skips, q->name, ENTRY_BAD_TIMESTAMP);
            continue;
        }
        q->has_hold = 1;
        q->has_margin = rc == 1;
    }
    return 0;
}

static int on_round2(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    struct queue *q = &sc->q[sc->read[index / PER_QUEUE]];
    static const char *const what[PER_QUEUE] = {
        "LLEN", "ZCARD delayed", "ZCARD reserved", "ZCOUNT reserved", "LINDEX", "ZRANGE reserved"};
    size_t k = index % PER_QUEUE;
    if (k < 4) {
        if (redis_job_want(r, REDIS_REPLY_INTEGER, what[k], e))
            return err_prefix(e, "queue %s", q->name);
        double *dst[] = {&q->ready, &q->delayed, &q->in_flight, &q->expired};
        *dst[k] = (double)r->integer;
        return 0;
    }
    if (k == 5)
        return on_reserved(sc, q, r, e);
    if (r->type == REDIS_REPLY_NIL)
        return 0;
    if (redis_job_want(r, REDIS_REPLY_STRING, what[k], e))
        return err_prefix(e, "queue %s", q->name);
    struct laravel_job j;
    if (read_job(sc, q, r, &j) == 0 && !isnan(j.created_at) &&
        entry_skips_age(&sc->skips, q->name, sc->now, j.created_at, &q->head_age) == 0)
        q->has_head = 1;
    return 0;
}

/* The key of queue's suffix into k, "<prefix>queues:<queue>" first when head is 0 (k then keeps
 * it: its length is what the caller passes as head for the queue's other keys). Each key joined
 * and freed apart cost about a fifth of a scrape's instructions in the collector. */
static const char *key(struct buf *k, size_t head, const struct state *st, const char *queue,
                       const char *suffix)
{
    if (!head) {
        buf_reset(k);
        buf_puts(k, st->prefix);
        buf_puts(k, "queues:");
        buf_puts(k, queue);
    } else {
        k->len = head;
    }
    buf_puts(k, suffix);
    return k->data;
}

/* Round 2's six commands a queue, a window at a time (redis_pipe_exec_stream): Redis answers
 * one window while the next is formatted. */
struct fill {
    struct scrape *sc;
    size_t next; /* in sc->read */
    struct buf k;
    char stop[32]; /* ZRANGE's last index of a queue's reserved jobs */
};

static int fill_round2(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct fill *f = ctx;
    struct scrape *sc = f->sc;
    const struct state *st = sc->st;
    struct buf *k = &f->k;
    for (; f->next < sc->nread && !redis_pipe_window_full(p); f->next++) {
        const char *name = sc->q[sc->read[f->next]].name;
        redis_pipe_addv(p, "LLEN", key(k, 0, st, name, ""), NULL);
        size_t head = k->len;
        redis_pipe_addv(p, "ZCARD", key(k, head, st, name, ":delayed"), NULL);
        const char *reserved = key(k, head, st, name, ":reserved");
        redis_pipe_addv(p, "ZCARD", reserved, NULL);
        redis_pipe_addv(p, "ZCOUNT", reserved, "-inf", sc->now_text, NULL);
        redis_pipe_addv(p, "LINDEX", key(k, head, st, name, ""), "0", NULL);
        redis_pipe_addv(p, "ZRANGE", key(k, head, st, name, ":reserved"), "0", f->stop,
                        "WITHSCORES", NULL);
    }
    return f->next < sc->nread;
}

static int run(void *arg, const struct deadline *dl, struct err *e)
{
    struct scrape *sc = arg;
    struct state *st = sc->st;
    struct redis_pipe *p = st->job.pipe;
    size_t max = st->job.rs.max_response_bytes;

    for (size_t i = 0; i < st->job.nqueues; i++)
        add_queue(sc, st->job.queues[i], 0);
    char *match = xasprintf("%squeues:*", st->prefix);
    redis_pipe_reset(p);
    redis_pipe_addv(p, "TIME", NULL);
    if (!st->job.queues)
        redis_pipe_addv(p, "SCAN", "0", "MATCH", match, "COUNT", "1000", NULL);
    int rc = redis_pipe_exec_each(st->job.conn, p, dl, max, on_round1, sc, e);
    while (rc == 0 && sc->cursor && strcmp(sc->cursor, "0") != 0) {
        redis_pipe_reset(p);
        redis_pipe_addv(p, "SCAN", sc->cursor, "MATCH", match, "COUNT", "1000", NULL);
        rc = redis_pipe_exec_each(st->job.conn, p, dl, max, on_round1, sc, e);
    }
    free(match);
    if (rc)
        return -1;

    snprintf(sc->now_text, sizeof sc->now_text, "%.6f", sc->now);
    redis_pipe_reset(p);
    sc->read = xcalloc(sc->n ? sc->n : 1, sizeof *sc->read);
    for (size_t i = 0; i < sc->n; i++)
        if (!sc->q[i].excluded) /* no key of an excluded queue is asked for */
            sc->read[sc->nread++] = i;
    struct fill f = {sc, 0, {0}, {0}};
    snprintf(f.stop, sizeof f.stop, "%lld", st->max_in_flight - 1);
    rc = redis_pipe_exec_stream(st->job.conn, p, dl, max, fill_round2, &f, on_round2, sc, e);
    buf_free(&f.k);
    if (rc)
        return -1;
    return 0;
}

static void emit(const struct scrape *sc, struct metric_set *out)
{
    struct state *st = sc->st;
    exclude_emit(&st->job.exclude, out, "queue");
    for (size_t r = 0; r < sc->nread; r++) {
        const struct queue *q = &sc->q[sc->read[r]];
        const char *n = q->name;
        metric_set_add(out, "qrel_queue_messages", q->ready, "queue", n, "state", "ready", NULL);
        metric_set_add(out, "qrel_queue_messages", q->in_flight, "queue", n, "state", "in_flight",
                       NULL);
        metric_set_add(out, "qrel_queue_messages", q->delayed, "queue", n, "state", "delayed",
                       NULL);
        metric_set_add(out, "qrel_lease_expired_messages", q->expired, "queue", n, NULL);
        metric_set_add(out, "qrel_messages_redelivered", q->redelivered, "queue", n, NULL);
        metric_set_add(out, "qrel_lease_timeout_seconds", st->retry_after, "queue", n, NULL);
        if (!isnan(q->timeout))
            metric_set_add(out, "qrel_handler_timeout_seconds", q->timeout, "queue", n, NULL);
        if (q->has_head)
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", q->head_age, "queue", n,
                           NULL);
        if (q->has_hold)
            metric_set_add(out, "qrel_lease_oldest_age_seconds", q->hold, "queue", n, NULL);
        if (q->has_margin)
            metric_set_add(out, "qrel_lease_margin_ratio", q->margin, "queue", n, NULL);
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
        for (size_t i = 0; i < sc.n; i++)
            if (!sc.q[i].excluded && sc.q[i].read < sc.q[i].in_flight) {
                char read[32], total[32];
                snprintf(read, sizeof read, "%.0f", sc.q[i].read);
                snprintf(total, sizeof total, "%.0f", sc.q[i].in_flight);
                log_kv(LOG_WARN,
                       "laravel reserved set larger than max_in_flight_jobs: "
                       "qrel_messages_redelivered is partial",
                       "source", c->name, "queue", sc.q[i].name, "read", read, "total", total,
                       NULL);
            }
        redis_job_log_done(&st->job, "laravel collection done", c->name, sc.nread);
    }
    for (size_t i = 0; i < sc.n; i++)
        free(sc.q[i].name);
    free(sc.q);
    hashtab_free(&sc.index);
    free(sc.read);
    free(sc.cursor);
    entry_skips_free(&sc.skips);
    return rc;
}

/* --config.check: one collection, as a scrape runs it (the kind has no dead letters to find). */
static int check(struct collector *c, const struct deadline *dl, struct err *e)
{
    return live_check(c, NULL, dl, e);
}

const struct collector_kind laravel_kind = {
    .name = "laravel",
    .state_size = sizeof(struct state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
    .check = check,
};
