/* celery.c: `kind: celery`, the reliability of Celery queues on kombu's Redis transport.
 *
 * kombu keeps each queue as a list (LPUSH, BRPOP from the right) plus, for priorities, sub-lists
 * named `<queue>\x06\x16<step>` (steps 3, 6 and 9; priority 0 stays in the plain list). A message
 * a worker has taken but not acknowledged is kept in the hash `unacked` (delivery tag ->
 * [message, exchange, routing_key]) and the sorted set `unacked_index` (delivery tag -> when it
 * was delivered). Once an entry is older than the transport's visibility_timeout (1 h by
 * default), any worker puts the message back on its queue and it is delivered again: that is
 * Celery's lease. A task with an ETA or countdown is taken at once and held unacknowledged until
 * its time; when that lies beyond delivery + visibility_timeout, it is delivered again every
 * visibility_timeout while it waits, and runs once per delivery (Celery's best-known duplicate
 * trap). qrel counts those.
 *
 * An entry qrel cannot read (not JSON, not kombu's shape, a time that is none) is passed over and
 * counted (qrel_skipped_entries, common/entries.h): one bad entry never takes the source down.
 *
 * A scrape is one pipelined round trip whatever the number of queues: TIME, HGETALL unacked,
 * ZRANGE unacked_index WITHSCORES and four LLENs per queue. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "celery.h"
#include "collector.h"
#include "common/entries.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "common/redis_settings.h"
#include "config.h"
#include "log.h"
#include "alloc.h"
#include "buf.h"

#define DEFAULT_VISIBILITY_TIMEOUT 3600.0 /* kombu's Redis transport */
#define PRIORITY_SEP "\x06\x16"
static const char *const priority_steps[] = {"3", "6", "9"}; /* kombu's PRIORITY_STEPS above 0 */
#define NSTEPS 3

struct state {
    struct redis_job job; /* the connection keys, queues, connection and pipeline */
    char *prefix;         /* kombu's global_keyprefix, "" when none */
    double visibility_timeout;
};

struct queue {
    double ready, in_flight, eta_beyond, redelivered, hold;
};

/* An unacked entry's delivery time, by tag, from unacked_index (read before the hash). */
struct delivery {
    char *tag;
    double at;
};

struct scrape {
    struct state *st;
    double now;
    struct queue *q; /* parallel to st->job.queues */
    struct delivery *d;
    size_t nd;
    double unattributed;      /* unacked entries whose routing key is no watched queue */
    struct entry_skips skips; /* the entries that could not be read, passed over */
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
    st->job.rs.no_cluster = "Celery's Redis broker (kombu) does not support Redis Cluster";
    if (redis_job_read(map, &st->job, e) || cfg_get_str(map, "key_prefix", 0, &st->prefix, e) ||
        cfg_get_positive_duration(map, "visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT,
                                  &st->visibility_timeout, e) ||
        redis_job_finish(c, map, &st->job, e))
        return -1;
    if (!st->prefix)
        st->prefix = xstrdup("");
    if (!st->job.queues) { /* Celery's default queue */
        st->job.queues = xcalloc(2, sizeof *st->job.queues);
        st->job.queues[0] = xstrdup("celery");
        st->job.nqueues = 1;
    }
    if (st->job.nqueues == 0)
        return cfg_error(e, cfg_at(map, "queues"), "queues: want at least one queue");
    return 0;
}

static int cmp_delivery(const void *a, const void *b)
{
    return strcmp(((const struct delivery *)a)->tag, ((const struct delivery *)b)->tag);
}

static int on_unacked(struct scrape *sc, const redisReply *r, struct err *e)
{
    const struct state *st = sc->st;
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "HGETALL unacked", e))
        return -1;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *tag = r->element[i], *val = r->element[i + 1];
        if (tag->type != REDIS_REPLY_STRING || val->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "HGETALL unacked: want strings");
        struct celery_unacked u;
        enum entry_skip why;
        if (celery_parse_unacked(val->str, val->len, &u, &why, e)) {
            entry_skips_add(&sc->skips, "", why); /* no queue could be read from it */
            continue;
        }
        size_t qi = st->job.nqueues;
        for (size_t k = 0; k < st->job.nqueues; k++)
            if (strcmp(st->job.queues[k], u.routing_key) == 0)
                qi = k;
        celery_unacked_free(&u);
        if (qi == st->job.nqueues) {
            sc->unattributed++;
            continue;
        }
        struct queue *q = &sc->q[qi];
        struct delivery key = {tag->str, 0};
        const struct delivery *d = bsearch(&key, sc->d, sc->nd, sizeof *sc->d, cmp_delivery);
        q->in_flight++;
        q->redelivered += u.redelivered;
        if (isnan(u.eta))
            entry_skips_add(&sc->skips, st->job.queues[qi], ENTRY_BAD_TIMESTAMP);
        double hold;
        if (!d)
            continue; /* acknowledged between the two reads: kombu removes both at once */
        if (entry_skips_age(&sc->skips, st->job.queues[qi], sc->now, d->at, &hold))
            continue; /* held, but since when is unknown */
        if (hold > q->hold)
            q->hold = hold;
        if (u.eta >= 0 && u.eta - d->at > st->visibility_timeout)
            q->eta_beyond++;
    }
    return 0;
}

/* Replies in pipeline order: TIME, ZRANGE unacked_index, HGETALL unacked, then NSTEPS + 1 LLENs
 * per queue. The index comes first so the hash's entries can find their delivery times. */
static int on_reply(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (index == 0)
        return redis_job_time(r, &sc->now, e);
    if (index == 1) {
        if (redis_job_want(r, REDIS_REPLY_ARRAY, "ZRANGE unacked_index", e))
            return -1;
        sc->d = xcalloc(r->elements / 2 + 1, sizeof *sc->d);
        for (size_t i = 0; i + 1 < r->elements; i += 2) {
            if (r->element[i]->type != REDIS_REPLY_STRING ||
                r->element[i + 1]->type != REDIS_REPLY_STRING)
                return err_set(e, ERR_PROTOCOL, "ZRANGE unacked_index: want strings");
            sc->d[sc->nd].tag = xstrdup(r->element[i]->str);
            sc->d[sc->nd].at = strtod(r->element[i + 1]->str, NULL);
            sc->nd++;
        }
        qsort(sc->d, sc->nd, sizeof *sc->d, cmp_delivery);
        return 0;
    }
    if (index == 2)
        return on_unacked(sc, r, e);
    size_t qi = (index - 3) / (NSTEPS + 1);
    if (r->type != REDIS_REPLY_INTEGER)
        return err_set(e, ERR_PROTOCOL, "queue %s: LLEN: want an integer, got %s",
                       sc->st->job.queues[qi], redis_reply_type_name(r));
    sc->q[qi].ready += (double)r->integer;
    return 0;
}

static void emit(const struct scrape *sc, struct metric_set *out)
{
    const struct state *st = sc->st;
    /* Found in the catalogue once a scrape rather than by name for each of 7 adds a queue. */
    const struct metric_family *messages = metric_catalog_find("qrel_queue_messages"),
                               *timeout = metric_catalog_find("qrel_lease_timeout_seconds"),
                               *redelivered = metric_catalog_find("qrel_messages_redelivered"),
                               *eta_beyond = metric_catalog_find("qrel_lease_eta_beyond_messages"),
                               *hold = metric_catalog_find("qrel_lease_oldest_age_seconds"),
                               *margin = metric_catalog_find("qrel_lease_margin_ratio");
    for (size_t i = 0; i < st->job.nqueues; i++) {
        const struct queue *q = &sc->q[i];
        const char *n = st->job.queues[i];
        metric_set_add_family(out, messages, q->ready, "queue", n, "state", "ready", NULL);
        metric_set_add_family(out, messages, q->in_flight, "queue", n, "state", "in_flight", NULL);
        metric_set_add_family(out, timeout, st->visibility_timeout, "queue", n, NULL);
        metric_set_add_family(out, redelivered, q->redelivered, "queue", n, NULL);
        metric_set_add_family(out, eta_beyond, q->eta_beyond, "queue", n, NULL);
        if (q->in_flight > 0) {
            metric_set_add_family(out, hold, q->hold, "queue", n, NULL);
            if (q->hold > 0)
                metric_set_add_family(out, margin, st->visibility_timeout / q->hold, "queue", n,
                                      NULL);
        }
    }
    entry_skips_emit(&sc->skips, out);
}

static void scrape_free(struct scrape *sc)
{
    free(sc->q);
    for (size_t i = 0; i < sc->nd; i++)
        free(sc->d[i].tag);
    free(sc->d);
    entry_skips_free(&sc->skips);
}

/* One pipeline: TIME, the unacked index and hash, and every queue's lists by priority. */
/* The queues' LLENs, a window at a time (redis_pipe_exec_stream): Redis answers one window
 * while the next is formatted. */
struct fill {
    const struct state *st;
    size_t next; /* the next queue of st->job.queues */
    /* A queue's four keys are written into one buffer, with their lengths: four keys malloc'd,
     * measured and freed per queue were two thirds of the requests' instructions. */
    struct buf key;
};

static int fill_llens(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct fill *f = ctx;
    const struct state *st = f->st;
    struct buf *key = &f->key;
    for (; f->next < st->job.nqueues && !redis_pipe_window_full(p); f->next++) {
        buf_reset(key);
        buf_puts(key, st->prefix);
        buf_puts(key, st->job.queues[f->next]);
        size_t plain = key->len;
        buf_append(key, PRIORITY_SEP "0", 3); /* the step's digit is written in its place */
        for (int s = 0; s <= NSTEPS; s++) {
            if (s > 0)
                key->data[plain + 2] = priority_steps[s - 1][0];
            const char *argv[] = {"LLEN", key->data};
            const size_t len[] = {4, s > 0 ? key->len : plain};
            redis_pipe_add(p, 2, argv, len);
        }
    }
    return f->next < st->job.nqueues;
}

static int run(void *arg, const struct deadline *dl, struct err *e)
{
    struct scrape *sc = arg;
    struct state *st = sc->st;
    struct redis_pipe *p = st->job.pipe;
    redis_pipe_reset(p);
    redis_pipe_addv(p, "TIME", NULL);
    char *k = xasprintf("%sunacked_index", st->prefix);
    redis_pipe_addv(p, "ZRANGE", k, "0", "-1", "WITHSCORES", NULL);
    free(k);
    k = xasprintf("%sunacked", st->prefix);
    redis_pipe_addv(p, "HGETALL", k, NULL);
    free(k);
    struct fill f = {st, 0, {0}};
    int rc = redis_pipe_exec_stream(st->job.conn, p, dl, st->job.rs.max_response_bytes, fill_llens,
                                    &f, on_reply, sc, e);
    buf_free(&f.key);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc = {0};
    sc.st = st;
    sc.q = xcalloc(st->job.nqueues, sizeof *sc.q);
    int rc = redis_job_collect(&st->job, c->name, dl, run, &sc, e);
    if (rc == 0) {
        emit(&sc, out);
        if (log_enabled(LOG_DEBUG)) {
            char rts[32], other[32];
            snprintf(rts, sizeof rts, "%llu", st->job.round_trips);
            snprintf(other, sizeof other, "%.0f", sc.unattributed);
            log_kv(LOG_DEBUG, "celery collection done", "source", c->name, "round_trips", rts,
                   "unacked_of_other_queues", other, NULL);
        }
    }
    scrape_free(&sc);
    return rc;
}

const struct collector_kind celery_kind = {
    .name = "celery",
    .state_size = sizeof(struct state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
};
