/* bullmq.c: `kind: bullmq`, the reliability of BullMQ (Node.js) queues in Redis.
 *
 * BullMQ keeps a queue under `<prefix>:<queue>:`: `wait` (a list, jobs taken from the right),
 * `paused` and `prioritized` (jobs waiting too), `active` (the jobs a worker is running, each
 * locked by `<id>:lock` for the Worker's lockDuration and renewed while it runs), `delayed` (a
 * sorted set: scheduled jobs and retries waiting for their backoff), `failed` (given up: the
 * dead-letter queue, scored by when), the `events` stream, and a hash per job (`<prefix>:<queue>:
 * <id>`: timestamp, processedOn, attemptsMade, ...). A job whose lock was not renewed in time
 * (a worker that died or blocked its event loop) is found by another worker's stalled check,
 * moved back to wait and announced by a `stalled` event: that is a lease expiry.
 *
 * Bull 3/4 (npm `bull`, BullMQ's predecessor) keeps the same keys and job hashes without `meta`,
 * `prioritized` and `events`: a prioritized job waits in `wait` itself, with its priority in a
 * `priority` sorted set beside it, which is never read here (its jobs would count twice), and a
 * stall is announced only by pub/sub, so Bull's qrel_lease_expiries_total stays 0.
 *
 * A scrape is two or three pipelined round trips whatever the number of queues (plus SCAN pages
 * when queues are not named): per queue the list and set sizes, the oldest waiting job, the
 * active jobs, the first and last failed job, and the events since the last scrape; then the job
 * hashes of the oldest waiting and the active jobs. Stalled events are counted from the stream
 * as they arrive, so qrel_lease_expiries_total counts from the exporter's start. A job time that
 * is no time (processedOn -5, NaN, 1970) gives no age: it is passed over and counted
 * (qrel_skipped_entries, common/entries.h), so one bad job hash neither pages nor blinds.
 *
 * A queue's consumers are its workers as BullMQ's Queue.getWorkers() counts them: the connections
 * CLIENT LIST shows named for the queue (bullmq_worker_queues), asked once per scrape in round 2
 * (not with count_workers: false, nor on a cluster). Its flow counters are the `count` of
 * `metrics:completed` and `metrics:failed`, which BullMQ and Bull 4 keep only while the workers
 * run with the `metrics` option: absent otherwise, never 0.
 *
 * With cluster: true, cluster.c walks the masters and each is read as a single server
 * (read_server), its queues appended to the scrape's; ASKs are followed per command there. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "bullmq.h"
#include "cluster.h"
#include "collector.h"
#include "common/entries.h"
#include "common/exclude.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "common/redis_settings.h"
#include "config.h"
#include "cursors.h"
#include "dlq.h"
#include "hashtab.h"
#include "log.h"
#include "alloc.h"

#define DEFAULT_LOCK_DURATION 30.0 /* the Worker's lockDuration default */
#define DEFAULT_MAX_ACTIVE 1000
#define DEFAULT_MAX_QUEUES 1000
#define EVENTS_PER_SCRAPE "10000"
#define DEAD_LETTER_LABEL "failed"
#define ROUND2_PER_QUEUE 13

struct state {
    struct redis_job job; /* the connection keys, queues, connection and pipeline */
    char *prefix;
    double lock_duration;
    long long max_active, max_queues;
    int count_workers;             /* CLIENT LIST for qrel_queue_consumers */
    struct bullmq_cursors cursors; /* kept between scrapes: where each queue's events end */
    struct redis_cluster cl;       /* cluster: true (cluster.c): the map, a connection per master */
};
/* dlq.c reads the connection and the prefix through the first two members (dlq.h). */
_Static_assert(offsetof(struct state, job) == offsetof(struct bullmq_dlq_view, job) &&
                   offsetof(struct state, prefix) == offsetof(struct bullmq_dlq_view, prefix),
               "struct bullmq_dlq_view is the head of bullmq's state");

struct queue {
    char *name;
    size_t cur; /* index into st->cursors.c, which grows (a pointer would not survive) */
    double wait, paused, prioritized, active, delayed, failed;
    char *head_id;
    int has_head_age, has_failed; /* has_failed: bit 1 the first, bit 2 the last failed job */
    double head_age, failed_first, failed_last; /* scores: epoch ms */
    double hold, retried_active;
    int has_hold;
    struct bullmq_stream_id new_last; /* where has_new_last */
    int has_new_last;
    double new_stalled; /* counted this scrape; added to the cursor's total once it succeeds */
    double now_ms;      /* TIME of the server (on a cluster: the master) that holds the queue */
    double completed, dead_lettered; /* the metrics hashes' counts, where has_flow says */
    int has_flow;                    /* bit 1 completed, bit 2 failed */
};

struct job_ref {
    size_t queue;
    int head; /* 1: the oldest waiting job; 0: an active job */
    char *id;
};

struct scrape {
    struct state *st;
    double now_ms; /* of the server being read */
    struct queue *q;
    size_t n;
    struct job_ref *jobs;
    size_t njobs;
    /* One server's part (on a cluster, one master's): its queues and jobs start at q_base and
     * job_base; redirected says one of its replies was MOVED or ASK. */
    size_t q_base, job_base;
    int redirected;
    /* On a cluster (cluster.c): the map, and the ASKs met by the pipeline being read, followed
     * after it (asking while they are). */
    const char *source;
    const struct redis_cluster_map *map;
    struct bullmq_asks asks;
    int asking;
    int stale; /* a MOVED was followed: the map is learnt again after the scrape */
    /* Queues a master's SCAN found in a slot the map gives another master (moved there, or
     * migrating): read on that master after this one's part. */
    char **foreign;
    size_t *foreign_owner;
    size_t nforeign;
    struct entry_skips skips; /* the job times that could not be read, passed over */
    size_t nround2;           /* round 2's per-queue commands; CLIENT LIST after them */
    char **workers;           /* the queue of each worker connection, sorted */
    size_t nworkers;
    int has_workers;      /* CLIENT LIST was read */
    struct buf key;       /* the key being written: see key_head */
    char active_stop[32]; /* LRANGE active's stop: max_active_jobs - 1 */
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    redis_job_free(&st->job);
    redis_cluster_free(&st->cl);
    free(st->prefix);
    bullmq_cursors_free(&st->cursors);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    st->job.discovery = "SCAN <prefix>:*:meta and <prefix>:*:id";
    if (redis_job_read(map, &st->job, e) || cfg_get_nonempty(map, "prefix", &st->prefix, e) ||
        cfg_get_positive_duration(map, "lock_duration", DEFAULT_LOCK_DURATION, &st->lock_duration,
                                  e) ||
        cfg_get_int(map, "max_active_jobs", DEFAULT_MAX_ACTIVE, 1, 1000000, &st->max_active, e) ||
        cfg_get_int(map, "max_queues", DEFAULT_MAX_QUEUES, 1, 1000000, &st->max_queues, e) ||
        cfg_get_bool(map, "count_workers", 1, &st->count_workers, e) ||
        redis_job_finish(c, map, &st->job, e))
        return -1;
    if (!st->prefix)
        st->prefix = xstrdup("bull");
    if (redis_job_check_queues(map, &st->job, e))
        return -1;
    /* BullMQ's scripts touch several keys of a queue at once: on a cluster they share a slot. */
    for (size_t i = 0; st->job.rs.cluster && i < st->job.nqueues; i++)
        if (!bullmq_queue_tagged(st->prefix, st->job.queues[i]))
            return cfg_error(e, cfg_at(map, "queues"),
                             "queues: \"%s\": on a cluster every key of a queue is in one hash "
                             "slot: give the prefix or the queue name a hash tag, e.g. prefix: "
                             "\"{bull}\"",
                             st->job.queues[i]);
    return 0;
}

static int want(const redisReply *r, int type, const char *what, const char *queue, struct err *e)
{
    if (r->type == type)
        return 0;
    return err_set(e, ERR_PROTOCOL, "queue %s: %s: unexpected %s%s%s", queue, what,
                   redis_reply_type_name(r), r->type == REDIS_REPLY_ERROR ? ": " : "",
                   r->type == REDIS_REPLY_ERROR ? r->str : "");
}

/* ---- queue discovery: SCAN <prefix>:*:meta and <prefix>:*:id ----
 * BullMQ writes `:meta`; Bull 3/4 (npm `bull`) writes none, but both INCR the job counter `:id`
 * on every add, so one SCAN of the glob covering both finds either. A BullMQ queue has both
 * keys, and SCAN may return a key twice: each name is taken once (seen). */

struct scan {
    char *cursor;
    char **names;
    size_t n;
    char **seen; /* every name found, kept or excluded, by id; indexed by seen_index */
    size_t nseen;
    struct hashtab seen_index;
    const char *prefix;
    struct exclude *exclude; /* the queues found that are left out, before max_queues counts */
    double now_ms;
};

static uint64_t seen_hash(const void *ctx, uint32_t id)
{
    const struct scan *s = ctx;
    return hashtab_hash(s->seen[id], strlen(s->seen[id]), 0);
}

/* 1 when name was found before; else it is remembered (taken over) and 0. */
static int seen_before(struct scan *s, char *name)
{
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(&s->seen_index, hashtab_hash(name, strlen(name), 0), &p);
         id != HASHTAB_END; id = hashtab_next(&s->seen_index, &p))
        if (strcmp(s->seen[id], name) == 0)
            return 1;
    s->seen = xrealloc(s->seen, (s->nseen + 1) * sizeof *s->seen);
    s->seen[s->nseen] = name;
    hashtab_add(&s->seen_index, &p, (uint32_t)s->nseen++, seen_hash, s);
    return 0;
}

static int on_scan(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scan *s = ctx;
    if (index == 0) { /* TIME */
        if (want(r, REDIS_REPLY_ARRAY, "TIME", "-", e) || r->elements != 2)
            return err_set(e, ERR_PROTOCOL, "TIME: want two strings");
        s->now_ms =
            strtod(r->element[0]->str, NULL) * 1000 + strtod(r->element[1]->str, NULL) / 1e3;
        return 0;
    }
    if (want(r, REDIS_REPLY_ARRAY, "SCAN", "*", e) || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "SCAN: want a cursor and a list of keys");
    free(s->cursor);
    s->cursor = xstrdup(r->element[0]->str);
    const redisReply *keys = r->element[1];
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING)
            continue;
        char *name = bullmq_queue_of_found_key(k->str, k->len, s->prefix);
        if (!name)
            continue;
        if (seen_before(s, name)) {
            free(name);
            continue;
        }
        if (exclude_drop(s->exclude, name)) /* neither read nor exported */
            continue;
        s->names = xrealloc(s->names, (s->n + 2) * sizeof *s->names);
        s->names[s->n++] = xstrdup(name);
        s->names[s->n] = NULL;
    }
    return 0;
}

/* ---- round 2: per queue ---- */

/* Epoch milliseconds as BullMQ writes them, or NAN when the string is no number. */
static double ms_of(const redisReply *r)
{
    char *end;
    double v = strtod(r->str, &end);
    return end == r->str || *end ? NAN : v;
}

static void add_job(struct scrape *sc, size_t q, int head, const char *id)
{
    sc->jobs = xrealloc(sc->jobs, (sc->njobs + 1) * sizeof *sc->jobs);
    sc->jobs[sc->njobs].queue = q;
    sc->jobs[sc->njobs].head = head;
    sc->jobs[sc->njobs].id = xstrdup(id);
    sc->njobs++;
}

static int on_events(struct queue *q, const redisReply *r, int first, struct err *e)
{
    if (want(r, REDIS_REPLY_ARRAY, first ? "XREVRANGE events" : "XRANGE events", q->name, e))
        return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *ent = r->element[i];
        if (ent->type != REDIS_REPLY_ARRAY || ent->elements != 2 ||
            ent->element[0]->type != REDIS_REPLY_STRING ||
            ent->element[1]->type != REDIS_REPLY_ARRAY)
            return err_set(e, ERR_PROTOCOL, "queue %s: events: want stream entries", q->name);
        if (bullmq_stream_id_parse(ent->element[0]->str, &q->new_last))
            return err_set(e, ERR_PROTOCOL, "queue %s: events: \"%s\" is no stream id", q->name,
                           ent->element[0]->str);
        q->has_new_last = 1;
        if (first)
            continue; /* only where the stream ends: counting starts from here */
        const redisReply *f = ent->element[1];
        const char *names[64], *values[64];
        size_t nf = 0;
        for (size_t k = 0; k + 1 < f->elements && nf < 64; k += 2, nf++) {
            names[nf] = f->element[k]->type == REDIS_REPLY_STRING ? f->element[k]->str : NULL;
            values[nf] =
                f->element[k + 1]->type == REDIS_REPLY_STRING ? f->element[k + 1]->str : NULL;
        }
        if (bullmq_is_stalled_event(names, values, nf))
            q->new_stalled++;
    }
    return 0;
}

/* A reply of MOVED or ASK: the cluster's map is stale (cluster.c learns it again). */
static void note_redirect(struct scrape *sc, const redisReply *r)
{
    if (redis_reply_is_error(r, "MOVED ") || redis_reply_is_error(r, "ASK "))
        sc->redirected = 1;
}

/* CLIENT LIST: the workers' connections, by the queue their names stand for. */
static int on_client_list(struct scrape *sc, const redisReply *r, struct err *e)
{
    if (r->type != REDIS_REPLY_STRING)
        return err_set(e, ERR_PROTOCOL, "CLIENT LIST: unexpected %s%s%s", redis_reply_type_name(r),
                       r->type == REDIS_REPLY_ERROR ? ": " : "",
                       r->type == REDIS_REPLY_ERROR ? r->str : "");
    sc->nworkers = bullmq_worker_queues(r->str, r->len, sc->st->prefix, &sc->workers);
    sc->has_workers = 1;
    return 0;
}

/* HMGET metrics:completed|failed count: absent without the workers' metrics option. */
static void on_metrics(struct scrape *sc, struct queue *q, int bit, const redisReply *r)
{
    const redisReply *v = r->type == REDIS_REPLY_ARRAY && r->elements == 1 ? r->element[0] : NULL;
    if (!v || v->type == REDIS_REPLY_NIL)
        return;
    double n;
    if (v->type != REDIS_REPLY_STRING || bullmq_metrics_count(v->str, &n)) {
        entry_skips_add(&sc->skips, q->name, ENTRY_BAD_VALUE); /* no count of BullMQ's */
        return;
    }
    *(bit == 1 ? &q->completed : &q->dead_lettered) = n;
    q->has_flow |= bit;
}

static int on_round2(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (!sc->map && index >= sc->nround2)
        return on_client_list(sc, r, e);
    if (sc->map && !sc->asking && bullmq_cluster_ask_note(&sc->asks, sc->map, index, r, &sc->stale))
        return 0; /* asked again where the key is, after this pipeline */
    note_redirect(sc, r);
    size_t qi = sc->q_base + index / ROUND2_PER_QUEUE;
    struct queue *q = &sc->q[qi];
    size_t k = index % ROUND2_PER_QUEUE;
    static const char *const counts[] = {"LLEN wait",   "LLEN paused",   "ZCARD prioritized",
                                         "LLEN active", "ZCARD delayed", "ZCARD failed"};
    if (k < 6) {
        if (want(r, REDIS_REPLY_INTEGER, counts[k], q->name, e))
            return -1;
        double *dst[] = {&q->wait,   &q->paused,  &q->prioritized,
                         &q->active, &q->delayed, &q->failed};
        *dst[k] = (double)r->integer;
        return 0;
    }
    if (k == 6) { /* LINDEX wait -1 */
        if (r->type == REDIS_REPLY_NIL)
            return 0;
        if (want(r, REDIS_REPLY_STRING, "LINDEX wait", q->name, e))
            return -1;
        add_job(sc, qi, 1, r->str);
        return 0;
    }
    if (k == 7) { /* LRANGE active */
        if (want(r, REDIS_REPLY_ARRAY, "LRANGE active", q->name, e))
            return -1;
        for (size_t i = 0; i < r->elements; i++)
            if (r->element[i]->type == REDIS_REPLY_STRING)
                add_job(sc, qi, 0, r->element[i]->str);
        return 0;
    }
    if (k == 8 || k == 9) { /* ZRANGE / ZREVRANGE failed 0 0 WITHSCORES */
        if (want(r, REDIS_REPLY_ARRAY, "ZRANGE failed", q->name, e))
            return -1;
        if (r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
            double at = ms_of(r->element[1]), age;
            if (entry_skips_age(&sc->skips, q->name, sc->now_ms / 1000, at / 1000, &age) == 0) {
                q->has_failed |= k == 8 ? 1 : 2;
                *(k == 8 ? &q->failed_first : &q->failed_last) = at;
            }
        }
        return 0;
    }
    if (k == 11 || k == 12) {
        if (want(r, REDIS_REPLY_ARRAY, "HMGET metrics", q->name, e))
            return -1;
        on_metrics(sc, q, k == 11 ? 1 : 2, r);
        return 0;
    }
    return on_events(q, r, !sc->st->cursors.c[q->cur].has_last, e);
}

/* ---- round 3: job hashes ---- */

static int on_round3(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (sc->map && !sc->asking && bullmq_cluster_ask_note(&sc->asks, sc->map, index, r, &sc->stale))
        return 0;
    note_redirect(sc, r);
    const struct job_ref *j = &sc->jobs[sc->job_base + index];
    struct queue *q = &sc->q[j->queue];
    if (want(r, REDIS_REPLY_ARRAY, "HMGET job", q->name, e))
        return -1;
    /* timestamp, processedOn, attemptsMade; all nil for a job removed meanwhile */
    const redisReply *ts = r->elements > 0 ? r->element[0] : NULL;
    const redisReply *on = r->elements > 1 ? r->element[1] : NULL;
    const redisReply *att = r->elements > 2 ? r->element[2] : NULL;
    double now = sc->now_ms / 1000;
    if (j->head) {
        if (ts && ts->type == REDIS_REPLY_STRING &&
            entry_skips_age(&sc->skips, q->name, now, ms_of(ts) / 1000, &q->head_age) == 0)
            q->has_head_age = 1;
        return 0;
    }
    double hold;
    if (on && on->type == REDIS_REPLY_STRING &&
        entry_skips_age(&sc->skips, q->name, now, ms_of(on) / 1000, &hold) == 0) {
        if (!q->has_hold || hold > q->hold)
            q->hold = hold;
        q->has_hold = 1;
    }
    if (att && att->type == REDIS_REPLY_STRING && strtod(att->str, NULL) > 0)
        q->retried_active++;
    return 0;
}

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->q[i].name);
    }
    free(sc->q);
    for (size_t i = 0; i < sc->njobs; i++)
        free(sc->jobs[i].id);
    free(sc->jobs);
    entry_skips_free(&sc->skips);
    bullmq_asks_free(&sc->asks);
    for (size_t i = 0; i < sc->nworkers; i++)
        free(sc->workers[i]);
    free(sc->workers);
    cfg_strv_free(sc->foreign);
    free(sc->foreign_owner);
    buf_free(&sc->key);
}

static int has_queue(const struct scrape *sc, const char *name)
{
    for (size_t i = 0; i < sc->n; i++)
        if (strcmp(sc->q[i].name, name) == 0)
            return 1;
    for (size_t i = 0; i < sc->nforeign; i++)
        if (strcmp(sc->foreign[i], name) == 0)
            return 1;
    return 0;
}

/* The queues one server holds, found or named: on a cluster (map set), only those whose slot
 * master node serves (a queue's keys share one slot), the ones found in another's slot put
 * aside for it (found: SCAN found them here); else all. */
static size_t queues_here(struct scrape *sc, char **names, size_t n, int found,
                          const struct redis_cluster_map *map, size_t node, char ***out)
{
    const struct state *st = sc->st;
    *out = xcalloc(n + 1, sizeof **out);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (map) {
            if (!bullmq_queue_tagged(st->prefix, names[i]))
                continue; /* no BullMQ queue can live on a cluster without a hash tag */
            char *meta = xasprintf("%s:%s:meta", st->prefix, names[i]);
            unsigned owner = redis_cluster_node_of(map, meta, strlen(meta));
            free(meta);
            if (owner != node) {
                if (found && owner != REDIS_CLUSTER_NO_NODE && !has_queue(sc, names[i])) {
                    sc->foreign = xrealloc(sc->foreign, (sc->nforeign + 2) * sizeof *sc->foreign);
                    sc->foreign_owner =
                        xrealloc(sc->foreign_owner, (sc->nforeign + 1) * sizeof *sc->foreign_owner);
                    sc->foreign_owner[sc->nforeign] = owner;
                    sc->foreign[sc->nforeign++] = xstrdup(names[i]);
                    sc->foreign[sc->nforeign] = NULL;
                }
                continue;
            }
            if (found && has_queue(sc, names[i]))
                continue; /* read on the master of its slot already */
        }
        (*out)[k++] = names[i];
    }
    return k;
}

/* Moves the skips one server's part counted (its queues') into keep, then keep back into sc. */
static void skips_merge(struct scrape *sc, struct entry_skips *keep)
{
    for (size_t i = sc->q_base; i < sc->n; i++)
        for (int why = 0; why < ENTRY_SKIP_COUNT; why++)
            for (double k = entry_skips_count(&sc->skips, sc->q[i].name, why); k > 0; k--)
                entry_skips_add(keep, sc->q[i].name, why);
    entry_skips_free(&sc->skips);
    sc->skips = *keep;
}

/* Drops what a failed server's part added: its queues and jobs. */
static void drop_part(struct scrape *sc)
{
    for (size_t i = sc->q_base; i < sc->n; i++) {
        free(sc->q[i].name);
    }
    sc->n = sc->q_base;
    for (size_t i = sc->job_base; i < sc->njobs; i++)
        free(sc->jobs[i].id);
    sc->njobs = sc->job_base;
}

/* "<prefix>:<queue>:" into sc->key, the head every key of a queue shares: written once for a
 * queue's commands, each key its suffix after it (a key joined, measured and freed for each
 * command was 40% of round 2's instructions). */
static void key_head(struct scrape *sc, const char *queue)
{
    buf_reset(&sc->key);
    buf_puts(&sc->key, sc->st->prefix);
    buf_putc(&sc->key, ':');
    buf_puts(&sc->key, queue);
    buf_putc(&sc->key, ':');
}

/* Command k (of ROUND2_PER_QUEUE) of round 2 for queue q, whose key_head sc->key holds (and
 * holds again after). */
static void round2_cmd(struct scrape *sc, const struct queue *q, size_t k, struct redis_pipe *p)
{
    static const char *const suffix[] = {
        "wait",   "paused", "prioritized", "active", "delayed",           "failed",        "wait",
        "active", "failed", "failed",      "events", "metrics:completed", "metrics:failed"};
    static const char *const cmd[] = {"LLEN", "LLEN", "ZCARD", "LLEN", "ZCARD", "ZCARD"};
    size_t head = sc->key.len;
    buf_puts(&sc->key, suffix[k]);
    const char *key = sc->key.data;
    const struct bullmq_cursor *cur = &sc->st->cursors.c[q->cur];
    if (k < 6) {
        redis_pipe_addv(p, cmd[k], key, NULL);
    } else if (k == 6) {
        redis_pipe_addv(p, "LINDEX", key, "-1", NULL);
    } else if (k == 7) {
        redis_pipe_addv(p, "LRANGE", key, "0", sc->active_stop, NULL);
    } else if (k == 8 || k == 9) {
        redis_pipe_addv(p, k == 8 ? "ZRANGE" : "ZREVRANGE", key, "0", "0", "WITHSCORES", NULL);
    } else if (k == 11 || k == 12) {
        redis_pipe_addv(p, "HMGET", key, "count", NULL);
    } else if (cur->has_last) {
        char from[48];
        bullmq_stream_id_after(&cur->last, from, sizeof from);
        redis_pipe_addv(p, "XRANGE", key, from, "+", "COUNT", EVENTS_PER_SCRAPE, NULL);
    } else {
        redis_pipe_addv(p, "XREVRANGE", key, "+", "-", "COUNT", "1", NULL);
    }
    sc->key.len = head;
    sc->key.data[head] = '\0';
}

/* Round 3's command for job i of sc. */
static void round3_cmd(struct scrape *sc, size_t i, struct redis_pipe *p)
{
    key_head(sc, sc->q[sc->jobs[i].queue].name);
    buf_puts(&sc->key, sc->jobs[i].id);
    redis_pipe_addv(p, "HMGET", sc->key.data, "timestamp", "processedOn", "attemptsMade", NULL);
}

/* bullmq_cluster_follow's callbacks: a command of round 2 or 3 again, by its index. */
static void add_round2(void *arg, size_t index, struct redis_pipe *p)
{
    struct scrape *sc = arg;
    const struct queue *q = &sc->q[sc->q_base + index / ROUND2_PER_QUEUE];
    key_head(sc, q->name);
    round2_cmd(sc, q, index % ROUND2_PER_QUEUE, p);
}

static void add_round3(void *arg, size_t index, struct redis_pipe *p)
{
    struct scrape *sc = arg;
    round3_cmd(sc, sc->job_base + index, p);
}

/* The commands of the last pipeline that met ASK, asked again where their keys are. */
static int follow_asks(struct scrape *sc, void (*add)(void *, size_t, struct redis_pipe *),
                       redis_reply_fn fn, const struct deadline *dl, struct err *e)
{
    if (!sc->asks.n)
        return 0;
    sc->asking = 1;
    int rc = bullmq_cluster_follow(&sc->st->cl, sc->source, &sc->st->job.rs, &sc->asks, add, fn, sc,
                                   dl, e);
    sc->asking = 0;
    return rc;
}

/* Rounds 2 and 3 a window at a time (redis_pipe_exec_stream): Redis answers one window while
 * the next is formatted. next and end are queues of sc->q (round 2) or jobs of sc->jobs (3). */
struct fill {
    struct scrape *sc;
    size_t next, end;
    int client_list; /* round 2 ends with CLIENT LIST */
};

static int fill_round2(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct fill *f = ctx;
    for (; f->next < f->end && !redis_pipe_window_full(p); f->next++) {
        const struct queue *q = &f->sc->q[f->next];
        key_head(f->sc, q->name);
        for (size_t k = 0; k < ROUND2_PER_QUEUE; k++)
            round2_cmd(f->sc, q, k, p);
    }
    if (f->next < f->end)
        return 1;
    if (f->client_list)
        redis_pipe_addv(p, "CLIENT", "LIST", NULL);
    return 0;
}

static int fill_round3(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct fill *f = ctx;
    for (; f->next < f->end && !redis_pipe_window_full(p); f->next++)
        round3_cmd(f->sc, f->next, p);
    return f->next < f->end;
}

/* The three rounds on one server (conn), its queues appended to sc's. */
static int read_server(struct scrape *sc, struct redis_conn *conn,
                       const struct redis_cluster_map *map, size_t node, char **only,
                       const struct deadline *dl, struct err *e)
{
    struct state *st = sc->st;
    struct redis_pipe *p = st->job.pipe;
    size_t max = st->job.rs.max_response_bytes;
    struct scan s = {0};
    s.prefix = st->prefix;
    s.exclude = &st->job.exclude;
    char *match = bullmq_discovery_match(st->prefix);
    int rc = -1;
    char **names = NULL;
    int scan = !only && !st->job.queues;
    sc->q_base = sc->n;
    sc->job_base = sc->njobs;
    struct entry_skips keep = sc->skips; /* this part's skips apart, merged when it succeeds */
    memset(&sc->skips, 0, sizeof sc->skips);
    size_t dropped = st->job.exclude.dropped; /* a failed part's exclusions are dropped too */
    /* Round 1: TIME, and the SCAN pages when queues are not named. */
    do {
        redis_pipe_reset(p);
        if (!s.cursor)
            redis_pipe_addv(p, "TIME", NULL);
        if (scan)
            redis_pipe_addv(p, "SCAN", s.cursor ? s.cursor : "0", "MATCH", match, "COUNT", "1000",
                            NULL);
        if (redis_pipe_exec_each(conn, p, dl, max, on_scan, &s, e))
            goto out;
        if (!s.cursor)
            s.cursor = xstrdup("0");
    } while (scan && strcmp(s.cursor, "0") != 0 && s.n < (size_t)st->max_queues);
    sc->now_ms = s.now_ms;

    size_t nhere;
    if (only) { /* put aside for this master by another: read as they are */
        nhere = 0;
        while (only[nhere])
            nhere++;
        names = xcalloc(nhere + 1, sizeof *names);
        memcpy(names, only, nhere * sizeof *names);
    } else {
        nhere = queues_here(sc, st->job.queues ? st->job.queues : s.names,
                            st->job.queues ? st->job.nqueues : s.n, scan, map, node, &names);
    }
    sc->n += nhere;
    sc->q = xrealloc(sc->q, (sc->n ? sc->n : 1) * sizeof *sc->q);
    memset(sc->q + sc->q_base, 0, nhere * sizeof *sc->q);
    redis_pipe_reset(p);
    /* Every cursor first, then pointers to them: bullmq_cursor_for may move the table as it
     * grows, so a pointer taken before the last new queue was added would dangle. The index is
     * built for this part and freed after it: kept between scrapes, it would hold 80 KiB of the
     * exporter's heap at 10,000 queues for nothing. */
    struct hashtab index = {0};
    bullmq_cursors_index(&st->cursors, &index);
    bullmq_cursors_reserve(&st->cursors, nhere);
    for (size_t i = 0; i < nhere; i++)
        bullmq_cursor_for(&st->cursors, &index, names[i]);
    for (size_t i = 0; i < nhere; i++) {
        struct queue *q = &sc->q[sc->q_base + i];
        q->name = xstrdup(names[i]);
        q->cur = bullmq_cursor_for(&st->cursors, &index, names[i]);
        q->now_ms = sc->now_ms;
    }
    hashtab_free(&index);
    sc->nround2 = nhere * ROUND2_PER_QUEUE;
    /* one server: its clients are all the workers */
    struct fill f = {sc, sc->q_base, sc->n, !map && st->count_workers};
    if (nhere && (redis_pipe_exec_stream(conn, p, dl, max, fill_round2, &f, on_round2, sc, e) ||
                  follow_asks(sc, add_round2, on_round2, dl, e)))
        goto out;

    redis_pipe_reset(p);
    f = (struct fill){sc, sc->job_base, sc->njobs, 0};
    if (sc->njobs > sc->job_base &&
        (redis_pipe_exec_stream(conn, p, dl, max, fill_round3, &f, on_round3, sc, e) ||
         follow_asks(sc, add_round3, on_round3, dl, e)))
        goto out;
    rc = 0;
out:
    if (rc) {
        drop_part(sc);
        st->job.exclude.dropped = dropped;
    }
    skips_merge(sc, &keep); /* after drop_part: a failed part's skips are dropped with it */
    free(names);
    free(match);
    free(s.cursor);
    cfg_strv_free(s.names);
    for (size_t i = 0; i < s.nseen; i++)
        free(s.seen[i]);
    free(s.seen);
    hashtab_free(&s.seen_index);
    return rc;
}

/* A single server's scrape: redis_job_collect's callback. */
static int run(void *arg, const struct deadline *dl, struct err *e)
{
    struct scrape *sc = arg;
    return read_server(sc, sc->st->job.conn, NULL, 0, NULL, dl, e);
}

/* One master's part of a cluster's scrape: cluster.c's callback. */
static int run_master(void *arg, struct redis_conn *conn, const struct redis_cluster_map *map,
                      size_t node, const struct deadline *dl, int *redirected, struct err *e)
{
    struct scrape *sc = arg;
    sc->redirected = 0;
    sc->map = map;
    int rc = read_server(sc, conn, map, node, NULL, dl, e);
    bullmq_asks_free(&sc->asks); /* none left after a failure either */
    *redirected = sc->redirected;
    /* The queues put aside for other masters, each read on the master of its slot now (its
     * keys followed by ASK or MOVED where they moved). This master's part is kept already: a
     * failure now fails the scrape rather than have cluster.c read this master again. */
    while (rc == 0 && sc->nforeign) {
        size_t owner = sc->foreign_owner[0], k = 0, kept = 0;
        char **only = xcalloc(sc->nforeign + 1, sizeof *only);
        for (size_t i = 0; i < sc->nforeign; i++) {
            if (sc->foreign_owner[i] == owner) {
                only[k++] = sc->foreign[i];
                continue;
            }
            sc->foreign_owner[kept] = sc->foreign_owner[i];
            sc->foreign[kept++] = sc->foreign[i];
        }
        sc->nforeign = kept;
        sc->foreign[kept] = NULL;
        struct redis_conn *oc =
            redis_cluster_conn(&sc->st->cl, owner, sc->source, &sc->st->job.rs, dl, e);
        rc = oc ? read_server(sc, oc, map, owner, only, dl, e) : -1;
        bullmq_asks_free(&sc->asks);
        cfg_strv_free(only);
        *redirected = 0;
    }
    if (rc) { /* what this part put aside goes with it (its owners are the old map's) */
        cfg_strv_free(sc->foreign);
        sc->foreign = NULL;
        sc->nforeign = 0;
    }
    return rc;
}

static void emit(const struct scrape *sc, struct metric_set *out)
{
    double lock = sc->st->lock_duration;
    exclude_emit(&sc->st->job.exclude, out, "queue");
    for (size_t i = 0; i < sc->n; i++) {
        const struct queue *q = &sc->q[i];
        const char *n = q->name;
        metric_set_add(out, "qrel_queue_messages", q->wait + q->paused + q->prioritized, "queue", n,
                       "state", "ready", NULL);
        metric_set_add(out, "qrel_queue_messages", q->active, "queue", n, "state", "in_flight",
                       NULL);
        metric_set_add(out, "qrel_queue_messages", q->delayed, "queue", n, "state", "delayed",
                       NULL);
        metric_set_add(out, "qrel_dead_letter_messages", q->failed, "queue", n, "dead_letter_queue",
                       DEAD_LETTER_LABEL, NULL);
        metric_set_add(out, "qrel_lease_timeout_seconds", lock, "queue", n, NULL);
        metric_set_add(out, "qrel_lease_expiries_total", sc->st->cursors.c[q->cur].stalled_total,
                       "queue", n, NULL);
        metric_set_add(out, "qrel_messages_redelivered", q->retried_active, "queue", n, NULL);
        if (q->has_head_age)
            metric_set_add(out, "qrel_queue_oldest_message_age_seconds", q->head_age, "queue", n,
                           NULL);
        if (q->has_hold)
            metric_set_add(out, "qrel_lease_oldest_age_seconds", q->hold, "queue", n, NULL);
        if (sc->has_workers)
            metric_set_add(out, "qrel_queue_consumers",
                           (double)bullmq_workers_of(sc->workers, sc->nworkers, n), "queue", n,
                           NULL);
        if (q->has_flow & 1)
            metric_set_add(out, "qrel_messages_consumed_total", q->completed, "queue", n, NULL);
        if (q->has_flow & 2)
            metric_set_add(out, "qrel_messages_dead_lettered_total", q->dead_lettered, "queue", n,
                           NULL);
        double first = q->now_ms > q->failed_first ? (q->now_ms - q->failed_first) / 1000 : 0;
        double last = q->now_ms > q->failed_last ? (q->now_ms - q->failed_last) / 1000 : 0;
        if (q->has_failed & 1)
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", first, "queue", n,
                           "dead_letter_queue", DEAD_LETTER_LABEL, NULL);
        if (q->has_failed & 2)
            metric_set_add(out, "qrel_dead_letter_newest_age_seconds", last, "queue", n,
                           "dead_letter_queue", DEAD_LETTER_LABEL, NULL);
    }
    entry_skips_emit(&sc->skips, out);
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc = {0};
    sc.st = st;
    sc.source = c->name;
    snprintf(sc.active_stop, sizeof sc.active_stop, "%lld", st->max_active - 1);
    st->job.exclude.dropped = 0; /* redis_job_collect does it on a single server */
    int rc = st->job.rs.cluster ? bullmq_cluster_collect(&st->cl, c->name, &st->job.rs, dl,
                                                         run_master, &sc, &st->job.round_trips, e)
                                : redis_job_collect(&st->job, c->name, dl, run, &sc, e);
    if (sc.stale) /* a slot moved between masters: the map is learnt again next time */
        redis_cluster_forget(&st->cl);
    if (rc == 0) {
        /* The events were counted; remember where they end for the next scrape. */
        for (size_t i = 0; i < sc.n; i++) {
            struct queue *q = &sc.q[i];
            struct bullmq_cursor *cur = &st->cursors.c[q->cur];
            cur->stalled_total += q->new_stalled;
            if (q->has_new_last)
                cur->last = q->new_last;
            else if (!cur->has_last)
                cur->last = (struct bullmq_stream_id){0, 0}; /* no stream yet: from its start */
            cur->has_last = 1;
        }
        emit(&sc, out);
        redis_job_log_done(&st->job, "bullmq collection done", c->name, sc.n);
    }
    scrape_free(&sc);
    return rc;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "keep failed jobs (removeOnFail: false)"},
    {"backlog_without_consumer", "start a Worker for this queue (BullMQ's new Worker(name, "
                                 "...), Bull's queue.process)"},
    {NULL, NULL}};

const struct collector_kind bullmq_kind = {
    .name = "bullmq",
    .state_size = sizeof(struct state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
    .audit_hints = hints,
    .dead_letter_validate = bullmq_dlq_validate,
    /* The exporter's join reads the dead letters as `qrel dlq inspect` does (nothing changes). */
    .dead_letter_ids = dlq_dead_letter_ids,
    .dlq = &bullmq_dlq,
};
