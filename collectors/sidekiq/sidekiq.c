/* sidekiq.c: `kind: sidekiq`, the reliability of Sidekiq (Ruby) queues in Redis.
 *
 * Sidekiq keeps each queue as a list of job JSON (`queue:<q>`, pushed at the left and taken from
 * the right, so the oldest job is at index -1), the names of the queues in the set `queues`, jobs
 * waiting for a time in the sorted sets `schedule` (scheduled ahead) and `retry` (failed, retried
 * later), given-up jobs in `dead`, and for each running process (`processes`) a hash with its
 * heartbeat (`beat`, every 5 s) and a hash of the jobs it is working on (`<identity>:workers` in
 * 6.x, `<identity>:work` in 7.x) with when each started (`run_at`). Every key may carry a
 * namespace prefix (redis-namespace).
 *
 * Sidekiq OSS takes jobs with BRPOP and has no lease: a job held by a process that dies is lost,
 * not delivered again. So there is no lease margin; instead the jobs held by a process whose
 * heartbeat stopped (older than stale_after, before Sidekiq's 60 s expiry removes its keys) are
 * counted as orphaned.
 *
 * A job qrel cannot read (not JSON, no queue, a time that is none) is passed over and counted
 * (qrel_skipped_entries, common/entries.h): one bad job never takes the source down.
 *
 * A scrape is two pipelined round trips whatever the number of queues and processes:
 *   1. TIME, SMEMBERS queues (unless named) and processes, ZCARD and ZRANGE (at most
 *      max_set_entries) of schedule, retry and dead;
 *   2. per process HGET of beat, quiet and info, and HGETALL of both work hashes; then per
 *      queue LLEN and LINDEX -1. The processes come first so that a queue's figures are whole
 *      when its LINDEX reply comes: its series are added then, while Redis answers the next
 *      window, instead of in a pass over every queue after the last reply (45 % of a
 *      collection at 30,000 queues, all of it while Redis sat idle). Likewise the queues set's
 *      names are looked up in the table as their commands are formatted, not all between the
 *      rounds (670 instructions a queue that Redis used to wait out).
 * A queue's consumers are the processes serving it: those whose heartbeat is at most stale_after
 * old, not quiet (a quiet process fetches no more jobs), and whose info names the queue. A
 * process whose info or heartbeat cannot be read leaves the count out (of every queue, or of the
 * queues its info names): a count that may miss a process is no count, and a false 0 pages.
 * A queue `exclude` matches, met in the queues set or in a job of the sets or work hashes, gets
 * no request of round 2 and no series; the sets, shared by every queue, are still read whole. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "collector.h"
#include "common/entries.h"
#include "common/exclude.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "common/redis_settings.h"
#include "config.h"
#include "dlq.h"
#include "hashtab.h"
#include "log.h"
#include "sidekiq.h"
#include "alloc.h"
#include "buf.h"

#define DEFAULT_MAX_SET_ENTRIES 10000
#define DEFAULT_STALE_AFTER 20.0 /* four missed heartbeats */
#define DEAD_LETTER_LABEL "dead"
#define PER_PROCESS 5 /* round 2's commands per process: HGET beat, quiet, info; two HGETALLs */

struct queue {
    char *name;
    int excluded; /* matched by exclude: kept only so it is counted once, never read or emitted */
    int queued;   /* its round-2 commands are formatted (it is in read[]) */
    double ready, scheduled, retrying, dead, in_flight, orphaned, consumers;
    int has_head, has_dead_range, has_hold;
    int consumers_unknown; /* served by a process whose heartbeat is no time */
    double head_age, dead_min, dead_max, hold;
};

/* A queue's series, their families and label names checked once a collection and the values
 * they share found once (core/metrics.h's shapes): adding them through metric_set_add_family
 * read, checked and looked up every label of every series again, 4,600 instructions a queue, the
 * largest part of a collection at 10,000 queues. */
struct series {
    struct metric_shape messages; /* qrel_queue_messages{queue, state} */
    struct metric_shape redelivered, dead, head_age, dead_oldest, dead_newest, hold, orphaned,
        consumers;
    metric_value state[3]; /* ready, in_flight, delayed */
    metric_value dead_letter_queue;
};

static void series_prepare(struct series *f, struct metric_set *out)
{
    static const char *const states[] = {"ready", "in_flight", "delayed"};
#define SHAPE(field, name, ...)                                                                    \
    metric_set_shape(out, metric_catalog_find(name), &f->field, "queue", __VA_ARGS__)
    SHAPE(messages, "qrel_queue_messages", "state", NULL);
    SHAPE(redelivered, "qrel_messages_redelivered", NULL);
    SHAPE(dead, "qrel_dead_letter_messages", "dead_letter_queue", NULL);
    SHAPE(head_age, "qrel_queue_oldest_message_age_seconds", NULL);
    SHAPE(dead_oldest, "qrel_dead_letter_oldest_age_seconds", "dead_letter_queue", NULL);
    SHAPE(dead_newest, "qrel_dead_letter_newest_age_seconds", "dead_letter_queue", NULL);
    SHAPE(hold, "qrel_lease_oldest_age_seconds", NULL);
    SHAPE(orphaned, "qrel_lease_orphaned_messages", NULL);
    SHAPE(consumers, "qrel_queue_consumers", NULL);
#undef SHAPE
    for (int i = 0; i < 3; i++)
        metric_set_value(out, states[i], &f->state[i]);
    metric_set_value(out, DEAD_LETTER_LABEL, &f->dead_letter_queue);
}

struct scrape {
    struct state *st;
    struct metric_set *out; /* each queue's series are added as its last reply is read */
    struct series fam;
    double now;
    struct queue *q; /* in the order met, the excluded ones too */
    size_t n, cap;
    size_t *read; /* the positions in q of the queues whose round-2 commands are formatted, in
                   * that order, nread of them */
    size_t nread;
    /* The names of SMEMBERS queues, NUL-separated, npending of them: each is looked up or added
     * as its commands are formatted in round 2, not all before it (a second pass over 30,000
     * names, most of round 1's work, while Redis sat idle); nmet: the queues met before. */
    struct buf pending;
    size_t npending, nmet;
    struct hashtab index; /* name -> position in q */
    char **processes;
    size_t nprocesses;
    double set_totals[3]; /* ZCARD schedule, retry, dead */
    double set_read[3];
    int process_stale; /* of the process whose replies are being read */
    enum sidekiq_beat process_beat;
    int process_serving;      /* it has a heartbeat within stale_after and is not quiet */
    int consumers_unknown;    /* a process's info could not be read: no queue's count is known */
    struct entry_skips skips; /* the jobs that could not be read, passed over */
};

static void destroy(struct collector *c)
{
    struct state *st = c->priv;
    redis_job_free(&st->job);
    free(st->ns);
}

static int configure(struct collector *c, struct cfg_node *map, struct err *e)
{
    struct state *st = c->priv;
    char *ns = NULL;
    st->job.rs.no_cluster =
        "Sidekiq does not support Redis Cluster (the Sidekiq wiki, Using Redis)";
    st->job.discovery = "the queues set and in the jobs of the sets and work hashes";
    if (redis_job_read(map, &st->job, e) || cfg_get_str(map, "namespace", 0, &ns, e) ||
        cfg_get_int(map, "max_set_entries", DEFAULT_MAX_SET_ENTRIES, 1, 10000000,
                    &st->max_set_entries, e) ||
        cfg_get_positive_duration(map, "stale_after", DEFAULT_STALE_AFTER, &st->stale_after, e) ||
        redis_job_finish(c, map, &st->job, e)) {
        free(ns);
        return -1;
    }
    st->ns = ns && *ns ? xasprintf("%s:", ns) : xstrdup("");
    free(ns);
    if (redis_job_check_queues(map, &st->job, e))
        return -1;
    return 0;
}

/* ---- queues by name: an array in the order met, indexed by the core's hash helper ---- */

static uint64_t queue_hash(const void *ctx, uint32_t k)
{
    const struct scrape *sc = ctx;
    return hashtab_hash(sc->q[k].name, strlen(sc->q[k].name), 0);
}

/* The queue called name; added when add is set, else NULL when it is not known. The pointer is
 * good until the next add. */
static struct queue *lookup_queue(struct scrape *sc, const char *name, int add)
{
    uint64_t h = hashtab_hash(name, strlen(name), 0);
    struct hashtab_probe p;
    for (uint32_t k = hashtab_first(&sc->index, h, &p); k != HASHTAB_END;
         k = hashtab_next(&sc->index, &p))
        if (strcmp(sc->q[k].name, name) == 0)
            return &sc->q[k];
    if (!add)
        return NULL;
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 64;
        sc->q = xrealloc(sc->q, sc->cap * sizeof *sc->q);
    }
    struct queue *q = &sc->q[sc->n];
    memset(q, 0, sizeof *q);
    q->name = xstrdup(name);
    q->excluded = exclude_drop(&sc->st->job.exclude, name); /* once per queue met */
    hashtab_add(&sc->index, &p, (uint32_t)sc->n++, queue_hash, sc);
    return q;
}

static struct queue *add_queue(struct scrape *sc, const char *name)
{
    return lookup_queue(sc, name, 1);
}

static struct queue *find_queue(struct scrape *sc, const char *name)
{
    return lookup_queue(sc, name, 0);
}

/* The queue a job of a set belongs to: an unnamed queue when queues are named, or an excluded
 * one, is passed over. */
static struct queue *queue_for(struct scrape *sc, const char *name)
{
    struct queue *q = sc->st->job.queues ? find_queue(sc, name) : add_queue(sc, name);
    return q && !q->excluded ? q : NULL;
}

/* ---- round 1 ---- */

enum { R1_TIME, R1_PROCESSES, R1_ZCARD, R1_SETS = R1_ZCARD + 3, R1_QUEUES = R1_SETS + 3 };

static int on_set_entry(struct scrape *sc, int set, const redisReply *job, const redisReply *score,
                        struct err *e)
{
    static const char *const names[] = {"schedule", "retry", "dead"};
    char *queue;
    double enqueued;
    enum entry_skip why;
    if (job->type != REDIS_REPLY_STRING)
        return err_set(e, ERR_PROTOCOL, "%s: want job strings", names[set]);
    if (sidekiq_parse_job(job->str, job->len, &queue, &enqueued, &why, e)) {
        entry_skips_add(&sc->skips, "", why); /* no queue could be read from it */
        return 0;
    }
    struct queue *q = queue_for(sc, queue);
    free(queue);
    if (!q)
        return 0;
    if (set == 0) {
        q->scheduled++;
    } else if (set == 1) {
        q->scheduled++;
        q->retrying++;
    } else {
        double died = score && score->type == REDIS_REPLY_STRING ? strtod(score->str, NULL) : NAN;
        double age;
        q->dead++;
        if (entry_skips_age(&sc->skips, q->name, sc->now, died, &age))
            return 0; /* counted, but no time to range over */
        if (!q->has_dead_range || died < q->dead_min)
            q->dead_min = died;
        if (!q->has_dead_range || died > q->dead_max)
            q->dead_max = died;
        q->has_dead_range = 1;
    }
    return 0;
}

static int on_round1(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct scrape *sc = ctx;
    if (index == R1_TIME)
        return redis_job_time(r, &sc->now, e);
    if (index == R1_PROCESSES || index == R1_QUEUES) {
        const char *what = index == R1_QUEUES ? "SMEMBERS queues" : "SMEMBERS processes";
        if (redis_job_want(r, REDIS_REPLY_ARRAY, what, e))
            return -1;
        for (size_t i = 0; i < r->elements; i++) {
            if (r->element[i]->type != REDIS_REPLY_STRING)
                return err_set(e, ERR_PROTOCOL, "%s: want strings", what);
            if (index == R1_QUEUES) {
                buf_append(&sc->pending, r->element[i]->str, strlen(r->element[i]->str) + 1);
                sc->npending++;
            } else {
                sc->processes = xrealloc(sc->processes, (sc->nprocesses + 2) * sizeof(char *));
                sc->processes[sc->nprocesses++] = xstrdup(r->element[i]->str);
                sc->processes[sc->nprocesses] = NULL;
            }
        }
        return 0;
    }
    if (index < R1_SETS) {
        if (r->type != REDIS_REPLY_INTEGER)
            return err_set(e, ERR_PROTOCOL, "ZCARD: want an integer, got %s",
                           redis_reply_type_name(r));
        sc->set_totals[index - R1_ZCARD] = (double)r->integer;
        return 0;
    }
    int set = (int)(index - R1_SETS);
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "ZRANGE", e))
        return -1;
    size_t step = set == 2 ? 2 : 1; /* the dead set is read WITHSCORES */
    for (size_t i = 0; i + step <= r->elements; i += step) {
        if (on_set_entry(sc, set, r->element[i], step == 2 ? r->element[i + 1] : NULL, e))
            return -1;
        sc->set_read[set]++;
    }
    return 0;
}

/* ---- round 2 ---- */

struct r2 {
    struct scrape *sc;
    size_t nprocess_cmds; /* PER_PROCESS per process, then 2 per queue */
};

static int on_work_hash(struct scrape *sc, const redisReply *r, struct err *e)
{
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "HGETALL work", e))
        return -1;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *v = r->element[i + 1];
        char *queue;
        double run_at, hold;
        enum entry_skip why;
        if (v->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "HGETALL work: want strings");
        if (sidekiq_parse_work(v->str, v->len, &queue, &run_at, &why, e)) {
            entry_skips_add(&sc->skips, "", why);
            continue;
        }
        struct queue *q = queue_for(sc, queue);
        free(queue);
        if (!q)
            continue;
        q->in_flight++;
        if (sc->process_stale)
            q->orphaned++;
        if (entry_skips_age(&sc->skips, q->name, sc->now, run_at, &hold))
            continue; /* held, but since when is unknown */
        if (!q->has_hold || hold > q->hold)
            q->hold = hold;
        q->has_hold = 1;
    }
    return 0;
}

/* The queues a process serves, from its info (HGET <identity> info). */
static void on_process_info(struct scrape *sc, const redisReply *r)
{
    if (r->type != REDIS_REPLY_STRING ||
        !(sc->process_serving || sc->process_beat == SIDEKIQ_BEAT_BAD))
        return; /* stopped, quiet or gone: it serves nothing */
    char **queues;
    enum entry_skip why;
    struct err ignored = {0};
    if (sidekiq_parse_process(r->str, r->len, &queues, &why, &ignored)) {
        entry_skips_add(&sc->skips, "", why);
        sc->consumers_unknown = 1;
        return;
    }
    for (char **n = queues; *n; n++) {
        struct queue *q = queue_for(sc, *n);
        if (!q)
            continue;
        if (sc->process_beat == SIDEKIQ_BEAT_BAD)
            q->consumers_unknown = 1; /* alive or not, nobody can tell */
        else
            q->consumers++;
    }
    cfg_strv_free(queues);
}

/* A queue's series, added as soon as its figures are whole (its LINDEX reply, the last of
 * round 2 about it: the sets came in round 1, the processes earlier in round 2). The exposition
 * groups a family's samples in the order added, so the queues keep their order in each. */
static void emit_queue(const struct scrape *sc, const struct queue *q)
{
    const struct series *f = &sc->fam;
    struct metric_set *out = sc->out;
    metric_value n;
    if (metric_set_value(out, q->name, &n))
        return; /* the set's error fails the collection */
    const metric_value one[1] = {n};
    const metric_value dlq[2] = {n, f->dead_letter_queue};
    metric_set_add_shaped(out, &f->messages, q->ready, (const metric_value[2]){n, f->state[0]});
    metric_set_add_shaped(out, &f->messages, q->in_flight, (const metric_value[2]){n, f->state[1]});
    metric_set_add_shaped(out, &f->messages, q->scheduled, (const metric_value[2]){n, f->state[2]});
    metric_set_add_shaped(out, &f->redelivered, q->retrying, one);
    metric_set_add_shaped(out, &f->dead, q->dead, dlq);
    if (q->has_head)
        metric_set_add_shaped(out, &f->head_age, q->head_age, one);
    if (q->has_dead_range) { /* scores judged by entry_age when read */
        double oldest = sc->now > q->dead_min ? sc->now - q->dead_min : 0;
        double newest = sc->now > q->dead_max ? sc->now - q->dead_max : 0;
        metric_set_add_shaped(out, &f->dead_oldest, oldest, dlq);
        metric_set_add_shaped(out, &f->dead_newest, newest, dlq);
    }
    if (q->has_hold)
        metric_set_add_shaped(out, &f->hold, q->hold, one);
    metric_set_add_shaped(out, &f->orphaned, q->orphaned, one);
    if (!sc->consumers_unknown && !q->consumers_unknown)
        metric_set_add_shaped(out, &f->consumers, q->consumers, one);
}

/* Reply i of the queues' part of round 2: LLEN (even) and LINDEX -1 (odd) of queue i / 2. */
static int on_queue_reply(struct scrape *sc, size_t i, const redisReply *r, struct err *e)
{
    struct queue *q = &sc->q[sc->read[i / 2]];
    if (i % 2 == 0) {
        if (r->type != REDIS_REPLY_INTEGER)
            return err_set(e, ERR_PROTOCOL, "queue %s: LLEN: want an integer", q->name);
        q->ready = (double)r->integer;
        return 0;
    }
    if (r->type != REDIS_REPLY_NIL) {
        double enqueued;
        enum entry_skip why;
        if (r->type != REDIS_REPLY_STRING)
            return err_set(e, ERR_PROTOCOL, "queue %s: LINDEX: want a job", q->name);
        if (sidekiq_parse_job(r->str, r->len, NULL, &enqueued, &why, e))
            entry_skips_add(&sc->skips, q->name, why);
        else if (!isnan(enqueued) &&
                 entry_skips_age(&sc->skips, q->name, sc->now, enqueued, &q->head_age) == 0)
            q->has_head = 1;
    }
    emit_queue(sc, q);
    return 0;
}

static int on_round2(void *ctx, size_t index, const redisReply *r, struct err *e)
{
    struct r2 *x = ctx;
    struct scrape *sc = x->sc;
    if (index >= x->nprocess_cmds)
        return on_queue_reply(sc, index - x->nprocess_cmds, r, e);
    size_t k = index % PER_PROCESS;
    if (k == 0) { /* HGET <identity> beat: absent once the process's keys expired */
        sc->process_stale = 0;
        sc->process_serving = 0;
        sc->process_beat = SIDEKIQ_STOPPED;
        if (r->type != REDIS_REPLY_STRING)
            return 0;
        enum sidekiq_beat b = sidekiq_judge_beat(r->str, r->len, sc->now, sc->st->stale_after);
        if (b == SIDEKIQ_BEAT_BAD) /* neither alive nor stopped: its jobs are not orphaned */
            entry_skips_add(&sc->skips, "", ENTRY_BAD_TIMESTAMP);
        sc->process_beat = b;
        sc->process_stale = b == SIDEKIQ_STOPPED;
        sc->process_serving = b == SIDEKIQ_ALIVE;
        return 0;
    }
    if (k == 1) { /* HGET <identity> quiet: "true" once told to stop fetching (TSTP) */
        if (r->type == REDIS_REPLY_STRING && r->len == 4 && memcmp(r->str, "true", 4) == 0)
            sc->process_serving = 0;
        return 0;
    }
    if (k == 2) {
        on_process_info(sc, r);
        return 0;
    }
    return on_work_hash(sc, r, e);
}

static void scrape_free(struct scrape *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->q[i].name);
    free(sc->q);
    free(sc->read);
    buf_free(&sc->pending);
    hashtab_free(&sc->index);
    cfg_strv_free(sc->processes);
    entry_skips_free(&sc->skips);
}

static char *key(const struct state *st, const char *a, const char *b)
{
    return sidekiq_key(st, a, b);
}

/* Round 2's commands, a window at a time (redis_pipe_exec_stream): Redis answers one window
 * while the next is formatted: LLEN and LINDEX a queue, after the processes' commands. */
struct fill2 {
    struct scrape *sc;
    size_t next;    /* the next of the queues met in round 1 (sc->q[0..nmet)) */
    size_t pending; /* then the next name's offset in sc->pending */
    /* Each queue's key is written into one buffer after the stem, with its length: a key
     * malloc'd, measured and freed per queue cost a tenth of the requests' instructions at
     * 10,000 queues. */
    struct buf key;
    size_t stem;
};

/* The next queue to read, in the order met: those met in round 1 (the configured ones, those of
 * the sets' jobs), then the queues set's names, each looked up now (one the processes' replies
 * added meanwhile is found, one met twice read once). Excluded ones are passed over. NULL: none
 * left. */
static struct queue *next_to_read(struct fill2 *f)
{
    struct scrape *sc = f->sc;
    while (f->next < sc->nmet) {
        struct queue *q = &sc->q[f->next++];
        if (!q->excluded && !q->queued)
            return q;
    }
    while (f->pending < sc->pending.len) {
        const char *name = sc->pending.data + f->pending;
        f->pending += strlen(name) + 1;
        struct queue *q = add_queue(sc, name);
        if (!q->excluded && !q->queued)
            return q;
    }
    return NULL;
}

static int fill_round2(void *ctx, struct redis_pipe *p, struct err *e)
{
    (void)e;
    struct fill2 *f = ctx;
    struct scrape *sc = f->sc;
    struct queue *q = NULL;
    while (!redis_pipe_window_full(p) && (q = next_to_read(f))) {
        q->queued = 1;
        sc->read[sc->nread++] = (size_t)(q - sc->q);
        f->key.len = f->stem;
        buf_puts(&f->key, q->name);
        const char *llen[] = {"LLEN", f->key.data}, *lindex[] = {"LINDEX", f->key.data, "-1"};
        const size_t llen_n[] = {4, f->key.len}, lindex_n[] = {6, f->key.len, 2};
        redis_pipe_add(p, 2, llen, llen_n);
        redis_pipe_add(p, 3, lindex, lindex_n);
    }
    return q != NULL;
}

/* Round 2's process commands, PER_PROCESS a process, sent before the queues' (see the top). */
static void add_process_cmds(struct scrape *sc, struct redis_pipe *p)
{
    char *k;
    for (size_t i = 0; i < sc->nprocesses; i++) {
        k = key(sc->st, sc->processes[i], NULL);
        redis_pipe_addv(p, "HGET", k, "beat", NULL);
        redis_pipe_addv(p, "HGET", k, "quiet", NULL);
        redis_pipe_addv(p, "HGET", k, "info", NULL);
        free(k);
        redis_pipe_addv(p, "HGETALL", k = key(sc->st, sc->processes[i], ":workers"), NULL);
        free(k);
        redis_pipe_addv(p, "HGETALL", k = key(sc->st, sc->processes[i], ":work"), NULL);
        free(k);
    }
}

static int run(void *arg, const struct deadline *dl, struct err *e)
{
    struct scrape *sc = arg;
    struct state *st = sc->st;
    struct redis_pipe *p = st->job.pipe;
    size_t max = st->job.rs.max_response_bytes;
    char stop[32];
    snprintf(stop, sizeof stop, "%lld", st->max_set_entries - 1);
    static const char *const sets[] = {"schedule", "retry", "dead"};
    char *k;

    for (size_t i = 0; i < st->job.nqueues; i++)
        add_queue(sc, st->job.queues[i]);
    buf_free(&sc->pending);
    buf_init(&sc->pending);
    sc->npending = 0;
    redis_pipe_reset(p);
    redis_pipe_addv(p, "TIME", NULL);
    redis_pipe_addv(p, "SMEMBERS", k = key(st, "processes", NULL), NULL);
    free(k);
    for (int s = 0; s < 3; s++) {
        redis_pipe_addv(p, "ZCARD", k = key(st, sets[s], NULL), NULL);
        free(k);
    }
    for (int s = 0; s < 3; s++) {
        k = key(st, sets[s], NULL);
        if (s == 2)
            redis_pipe_addv(p, "ZRANGE", k, "0", stop, "WITHSCORES", NULL);
        else
            redis_pipe_addv(p, "ZRANGE", k, "0", stop, NULL);
        free(k);
    }
    if (!st->job.queues) {
        redis_pipe_addv(p, "SMEMBERS", k = key(st, "queues", NULL), NULL);
        free(k);
    }
    if (redis_pipe_exec_each(st->job.conn, p, dl, max, on_round1, sc, e))
        return -1;

    redis_pipe_reset(p);
    /* no key of an excluded queue is asked for; each queue is read once */
    sc->nmet = sc->n;
    free(sc->read);
    sc->read = xcalloc(sc->nmet + sc->npending + 1, sizeof *sc->read);
    sc->nread = 0;
    for (size_t i = 0; i < sc->n; i++)
        sc->q[i].queued = 0;
    struct fill2 f = {.sc = sc};
    buf_init(&f.key);
    buf_puts(&f.key, st->ns);
    buf_puts(&f.key, "queue:");
    f.stem = f.key.len;
    add_process_cmds(sc, p);
    struct r2 x = {sc, sc->nprocesses * PER_PROCESS};
    int rc = redis_pipe_exec_stream(st->job.conn, p, dl, max, fill_round2, &f, on_round2, &x, e);
    buf_free(&f.key);
    return rc;
}

static int collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                   struct err *e)
{
    struct state *st = c->priv;
    struct scrape sc = {0};
    sc.st = st;
    /* Series go into out during the read. A collection that fails has its set dropped, and
     * redis_job_collect tries again only when no byte of a reply came back, so none was added. */
    sc.out = out;
    series_prepare(&sc.fam, out);
    int rc = redis_job_collect(&st->job, c->name, dl, run, &sc, e);
    if (rc == 0) {
        exclude_emit(&st->job.exclude, out, "queue");
        entry_skips_emit(&sc.skips, out);
        for (int s = 0; s < 3; s++)
            if (sc.set_read[s] < sc.set_totals[s]) {
                char read[32], total[32];
                snprintf(read, sizeof read, "%.0f", sc.set_read[s]);
                snprintf(total, sizeof total, "%.0f", sc.set_totals[s]);
                log_kv(LOG_WARN, "sidekiq set larger than max_set_entries: counts are partial",
                       "source", c->name, "set",
                       s == 0   ? "schedule"
                       : s == 1 ? "retry"
                                : "dead",
                       "read", read, "total", total, NULL);
            }
        redis_job_log_done(&st->job, "sidekiq collection done", c->name, sc.nread);
    }
    scrape_free(&sc);
    return rc;
}

/* What audit rules tell to change on a queue of this kind (collector.h). */
static const struct audit_hint hints[] = {
    {"no_dead_letter_queue", "keep the dead set enabled"},
    {"backlog_without_consumer", "start a Sidekiq process that fetches from this queue (-q, or "
                                 "the queues of its config file)"},
    {NULL, NULL}};

const struct collector_kind sidekiq_kind = {
    .name = "sidekiq",
    .state_size = sizeof(struct state),
    .configure = configure,
    .collect = collect,
    .destroy = destroy,
    .audit_hints = hints,
    .dead_letter_validate = sidekiq_dlq_validate,
    /* The exporter's join reads the dead letters as `qrel dlq inspect` does (nothing changes). */
    .dead_letter_ids = dlq_dead_letter_ids,
    .dlq = &sidekiq_dlq,
};
