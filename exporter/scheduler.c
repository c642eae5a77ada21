/* scheduler.c: see scheduler.h for the guarantees.
 *
 * Each collection is a job of the process' collection pool (pool.h) and a small
 * reference-counted object shared by the scrapes waiting for it. A scrape waits on the source's
 * condition variable until the collection is done or the scrape's deadline for that source
 * passes; it never waits longer, which is what keeps a hung broker, or a queue of collections
 * behind busy pool threads, from holding the HTTP response past Prometheus's timeout. A job not
 * started by that deadline is taken out of the queue and reported as not started; a healthy
 * source does not back off for that, since it did nothing wrong. Jobs hold a reference on the
 * scheduler, so a reload never frees a collector under them. */
#include "scheduler.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "log.h"
#include "pool.h"
#include "alloc.h"

struct collection {
    int refs; /* guarded by the source's mutex */
    int done;
    int rc;
    int timeout_counted; /* a scrape already counted this one as a timeout */
    int started;         /* a pool thread took it */
    int keep;            /* kept as the source's cached success when it succeeds (see below) */
    uint64_t job_id;     /* for pool_cancel while it waits */
    struct worker_arg *arg;
    int64_t deadline_ms; /* monotonic; the source's own deadline for this collection */
    struct err err;
    struct metric_set *set;
    double duration;
    size_t queues;       /* distinct `queue` values of set: qrel_source_queues */
    int user_families;   /* set holds families of the user's own (SQL queries) */
    int64_t queued_ms;   /* monotonic; when handed to the pool */
    int64_t finished_ms; /* monotonic; when done */
};

struct source_state {
    struct collector *c;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct collection *running;
    struct collection *cached; /* the last success, when kept (collection.keep) */
    int last_up;
    int has_success;
    double last_success;
    double last_duration;
    double errors[ERR_CODE_COUNT];
    int failures;
    int64_t backoff_until_ms;
    char last_error[512];
    struct log_limit
        log_limit; /* "collection failed": a new error at once, the same once a minute */
};

struct scheduler {
    pthread_mutex_t ref_mu;
    int refs;
    struct pool *pool;
    size_t pool_threads; /* its size, for messages */
    struct sources *src;
    struct source_state *st;
    size_t n;
};

struct worker_arg {
    struct scheduler *s;
    struct source_state *st;
    struct collection *col;
    struct deadline dl;
    int64_t start_by_ms; /* later than this, starting could only time out */
};

struct scrape_entry {
    struct source_state *st;
    struct collection *col; /* NULL when skipped for back-off */
    int submitted;
    struct deadline dl;
    int64_t started_ms;
    struct metric_set *meta; /* this scrape's meta series for the source */
};

struct scheduler_scrape {
    struct scheduler *s;
    struct scrape_entry *entries;
    size_t n;
    struct metric_set **sets;
    size_t nsets;
    size_t failed;
};

double scheduler_budget(double source_timeout, double scrape_timeout, double offset)
{
    if (scrape_timeout <= 0)
        return source_timeout;
    if (scrape_timeout < SCHEDULER_SCRAPE_TIMEOUT_FLOOR)
        scrape_timeout = SCHEDULER_SCRAPE_TIMEOUT_FLOOR;
    double budget = scrape_timeout - offset;
    /* An offset as large as the timeout itself would leave nothing; keep a fair share instead. */
    if (budget < scrape_timeout * 0.5)
        budget = scrape_timeout * 0.5;
    return budget < source_timeout ? budget : source_timeout;
}

struct scheduler *scheduler_new(struct sources *src, struct pool *pool)
{
    struct scheduler *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->ref_mu, NULL);
    s->refs = 1;
    s->pool = pool;
    struct pool_stats ps;
    pool_get_stats(pool, &ps);
    s->pool_threads = ps.max_threads;
    s->src = src;
    s->n = src->n;
    s->st = xcalloc(s->n ? s->n : 1, sizeof *s->st);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (size_t i = 0; i < s->n; i++) {
        struct source_state *st = &s->st[i];
        st->c = src->items[i];
        st->last_up = -1;
        st->log_limit.every_ms = 60000;
        pthread_mutex_init(&st->mu, NULL);
        pthread_cond_init(&st->cv, &ca);
    }
    pthread_condattr_destroy(&ca);
    return s;
}

static void collection_unref_locked(struct collection *col);

void scheduler_ref(struct scheduler *s)
{
    pthread_mutex_lock(&s->ref_mu);
    s->refs++;
    pthread_mutex_unlock(&s->ref_mu);
}

void scheduler_unref(struct scheduler *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->ref_mu);
    int left = --s->refs;
    pthread_mutex_unlock(&s->ref_mu);
    if (left > 0)
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (s->st[i].cached) {
            pthread_mutex_lock(&s->st[i].mu);
            collection_unref_locked(s->st[i].cached);
            pthread_mutex_unlock(&s->st[i].mu);
        }
        pthread_mutex_destroy(&s->st[i].mu);
        pthread_cond_destroy(&s->st[i].cv);
    }
    free(s->st);
    sources_free(s->src);
    pthread_mutex_destroy(&s->ref_mu);
    free(s);
}

void scheduler_inherit(struct scheduler *s, struct scheduler *old)
{
    for (size_t i = 0; i < s->n; i++) {
        struct source_state *st = &s->st[i];
        for (size_t j = 0; old && j < old->n; j++) {
            struct source_state *o = &old->st[j];
            if (strcmp(o->c->name, st->c->name) != 0 || o->c->kind != st->c->kind)
                continue;
            pthread_mutex_lock(&o->mu);
            memcpy(st->errors, o->errors, sizeof st->errors);
            st->has_success = o->has_success;
            st->last_success = o->last_success;
            pthread_mutex_unlock(&o->mu);
            break;
        }
    }
}

const struct sources *scheduler_sources(const struct scheduler *s)
{
    return s->src;
}

/* Called with st->mu held. */
static void collection_unref_locked(struct collection *col)
{
    if (--col->refs > 0)
        return;
    metric_set_free(col->set);
    free(col);
}

/* Called with st->mu held: the source failed this attempt. backoff is 0 for an attempt that
 * never started (the pool was busy): that is no reason to ask a healthy source less often, but a
 * source already failing keeps the back-off it had reached, else the sources that hang would
 * take the pool's threads again at every scrape. */
static void note_failure_locked(struct source_state *st, enum err_code code, const char *msg,
                                int count, int backoff)
{
    /* An attempt a scrape already counted as a timeout only updates the message when it ends. */
    if (count) {
        st->errors[code]++;
        if (backoff)
            st->failures++;
    }
    if (backoff || st->failures > 0) {
        double wait = SCHEDULER_BACKOFF_BASE * pow(2.0, st->failures - 1);
        if (wait > SCHEDULER_BACKOFF_CAP)
            wait = SCHEDULER_BACKOFF_CAP;
        st->backoff_until_ms = deadline_now_ms() + (int64_t)(wait * 1000);
    }
    st->last_up = 0;
    snprintf(st->last_error, sizeof st->last_error, "%s", msg);

    char failures[32];
    snprintf(failures, sizeof failures, "%d", st->failures);
    log_kv_limited(&st->log_limit, LOG_WARN, msg, "collection failed", "source", st->c->name,
                   "kind", st->c->kind->name, "reason", err_reason(code), "failures", failures,
                   "err", msg, NULL);
}

static void note_success_locked(struct source_state *st, double duration)
{
    if (st->failures > 0)
        log_kv(LOG_INFO, "source recovered", "source", st->c->name, "kind", st->c->kind->name,
               NULL);
    st->failures = 0;
    st->backoff_until_ms = 0;
    st->last_up = 1;
    st->has_success = 1;
    st->last_success = deadline_wall_now();
    st->last_duration = duration;
    st->last_error[0] = '\0';
    log_limit_reset(&st->log_limit);
}

/* Called with st->mu held: the collection ends without having run. Drops the job's reference;
 * the caller then drops the job's scheduler reference and frees its argument. */
static void end_unstarted_locked(struct scheduler *s, struct source_state *st,
                                 struct collection *col)
{
    col->done = 1;
    col->rc = -1;
    col->finished_ms = deadline_now_ms();
    col->duration = (double)(col->finished_ms - col->queued_ms) / 1000.0; /* all of it waiting */
    err_set(&col->err, ERR_TIMEOUT,
            "collection not started before the deadline: all %zu collection threads were busy "
            "(--collector.concurrency)",
            s->pool_threads);
    if (!col->timeout_counted) {
        col->timeout_counted = 1;
        note_failure_locked(st, ERR_TIMEOUT, col->err.msg, 1, 0);
    }
    if (st->running == col)
        st->running = NULL;
    pthread_cond_broadcast(&st->cv);
    collection_unref_locked(col);
}

/* The pool's expire callback: the job waited past its deadline. */
static void worker_expire(void *p)
{
    struct worker_arg *a = p;
    pthread_mutex_lock(&a->st->mu);
    end_unstarted_locked(a->s, a->st, a->col);
    pthread_mutex_unlock(&a->st->mu);
    scheduler_unref(a->s);
    free(a);
}

static void worker_run(void *p)
{
    struct worker_arg *a = p;
    struct collection *col = a->col;
    struct collector *c = a->st->c;
    pthread_mutex_lock(&a->st->mu);
    if (deadline_now_ms() >= a->start_by_ms) {
        /* Taken by a thread just as its start-by passed: starting now could only time out. */
        pthread_mutex_unlock(&a->st->mu);
        worker_expire(a);
        return;
    }
    col->started = 1;
    pthread_mutex_unlock(&a->st->mu);
    int64_t t0 = deadline_now_ms();
    struct metric_set *set = metric_set_new(c->name, c->kind->name);
    struct err e;
    err_clear(&e);
    /* A dead-letter join may be using the instance's connection: collect() waits for it, no
     * later than its own deadline. */
    int rc = collector_lock(c, &a->dl, &e);
    if (rc == 0) {
        rc = c->kind->collect(c, &a->dl, set, &e);
        collector_unlock(c);
    }
    if (metric_set_error(set)) {
        /* A bad sample is a programming error, and the set remembers the first one: kinds do not
         * check metric_set_add, the collection fails here, named as internal, instead of being
         * half-served. It wins over the kind's own error, which may only be a consequence. */
        err_set(&e, ERR_INTERNAL, "%s", metric_set_error(set));
        rc = -1;
    }
    if (rc != 0 && e.code == ERR_NONE)
        err_set(&e, ERR_INTERNAL, "collector failed without saying why");
    double duration = (double)(deadline_now_ms() - t0) / 1000.0;
    /* Counted here, for every kind alike and outside the lock: a source whose discovery or
     * pattern found nothing is up with no series, which qrel_source_queues 0 makes visible. */
    size_t queues = rc == 0 ? metric_set_distinct_values(set, "queue") : 0;
    int user_families = metric_set_dynamic_count(set) > 0;

    struct source_state *st = a->st;
    pthread_mutex_lock(&st->mu);
    col->done = 1;
    col->rc = rc;
    col->err = e;
    col->duration = duration;
    col->finished_ms = deadline_now_ms();
    if (rc == 0) {
        col->set = set;
        col->queues = queues;
        col->user_families = user_families;
        set = NULL;
        note_success_locked(st, duration);
        /* An older success must not be served after this one, kept or not. */
        if (st->cached)
            collection_unref_locked(st->cached);
        st->cached = NULL;
        if (col->keep) {
            col->refs++;
            st->cached = col;
        }
    } else {
        st->last_duration = duration;
        note_failure_locked(st, e.code, e.msg, !col->timeout_counted, 1);
    }
    if (st->running == col)
        st->running = NULL;
    pthread_cond_broadcast(&st->cv);
    collection_unref_locked(col);
    pthread_mutex_unlock(&st->mu);

    metric_set_free(set);
    scheduler_unref(a->s);
    free(a);
}

/* Called with st->mu held: the last attempt failed, so this one may hang until its deadline.
 * Not `last_up == 0`: a source that was merely not started (the pool was full) is no suspect. */
static int failing_locked(const struct source_state *st)
{
    return st->failures > 0;
}

/* Called with st->mu held. Starts a collection, or returns the running one. */
static struct collection *start_or_join_locked(struct scheduler *s, struct source_state *st,
                                               struct deadline dl, double max_age)
{
    if (st->running) {
        st->running->refs++;
        return st->running;
    }
    /* min_interval: a recent enough success is served again instead of asking the server. The
     * landing page's max_age does the same, but only while that success is the last word. */
    double reuse = st->c->min_interval;
    if (max_age > reuse && st->last_up == 1)
        reuse = max_age;
    if (st->cached && deadline_now_ms() - st->cached->finished_ms < (int64_t)(reuse * 1000.0)) {
        st->cached->refs++;
        return st->cached;
    }
    if (st->backoff_until_ms > deadline_now_ms())
        return NULL;
    struct collection *col = xcalloc(1, sizeof *col);
    col->refs = 2; /* the worker and this scrape */
    /* Kept after it is served only when something may serve it again: min_interval, or the
     * landing page that started it (its next views within max_age). A Prometheus scrape's set
     * is freed once served: at 11,000 RabbitMQ queues it is 1.8 MB held between scrapes for
     * nothing (issue 14); a landing view after such a scrape collects once. */
    col->keep = st->c->min_interval > 0 || max_age > 0;
    col->deadline_ms = dl.at_ms;
    struct worker_arg *a = xcalloc(1, sizeof *a);
    a->s = s;
    a->st = st;
    a->col = col;
    a->dl = dl;
    /* A collection that starts just before its deadline fails and backs off a healthy source:
     * it must have a tenth of its budget, or 50 ms, left to be started at all. */
    int64_t margin = (dl.at_ms - deadline_now_ms()) / 10;
    if (margin < 0)
        margin = 0;
    a->start_by_ms =
        dl.at_ms - (margin < SCHEDULER_START_MARGIN_MS ? margin : SCHEDULER_START_MARGIN_MS);
    col->arg = a;
    col->queued_ms = deadline_now_ms();
    scheduler_ref(s);
    /* A source that failed last time may hang until its deadline: healthy ones go first. */
    struct pool_job job = {.run = worker_run,
                           .expire = worker_expire,
                           .arg = a,
                           .start_by_ms = a->start_by_ms,
                           .priority = failing_locked(st)};
    if (pool_submit(s->pool, &job, &col->job_id, &col->err) != 0) {
        scheduler_unref(s);
        free(a);
        col->arg = NULL;
        col->refs = 1;
        col->done = 1;
        col->rc = -1;
        note_failure_locked(st, ERR_INTERNAL, col->err.msg, 1, 1);
        return col;
    }
    st->running = col;
    return col;
}

static void wait_locked(struct source_state *st, struct collection *col, struct deadline dl)
{
    while (!col->done && !deadline_expired(&dl)) {
        struct timespec ts = deadline_timespec(&dl);
        pthread_cond_timedwait(&st->cv, &st->mu, &ts);
    }
}

static void add_meta(struct metric_set *m, struct source_state *st, struct scrape_entry *en, int up,
                     int64_t now_ms)
{
    metric_set_add(m, "qrel_collector_up", up ? 1.0 : 0.0, NULL);
    if (en->col) {
        double d = en->col->done ? en->col->duration : (double)(now_ms - en->started_ms) / 1000.0;
        metric_set_add(m, "qrel_collector_duration_seconds", d, NULL);
    }
    if (st->has_success)
        metric_set_add(m, "qrel_collector_last_success_timestamp_seconds", st->last_success, NULL);
    /* Not for a source that exports only its own SQL families: it watches rows, not queues. */
    if (up && (en->col->queues || !en->col->user_families))
        metric_set_add(m, "qrel_source_queues", (double)en->col->queues, NULL);
    if (up && st->c->min_interval > 0)
        metric_set_add(m, "qrel_sample_age_seconds",
                       (double)(now_ms - en->col->finished_ms) / 1000.0, NULL);
    for (int code = ERR_NONE + 1; code < ERR_CODE_COUNT; code++)
        metric_set_add(m, "qrel_collector_errors_total", st->errors[code], "reason",
                       err_reason((enum err_code)code), NULL);
}

struct scheduler_scrape *scheduler_scrape(struct scheduler *s, const struct scheduler_opts *o)
{
    struct scheduler_scrape *sc = xcalloc(1, sizeof *sc);
    scheduler_ref(s);
    sc->s = s;
    sc->entries = xcalloc(s->n ? s->n : 1, sizeof *sc->entries);
    sc->sets = xcalloc(2 * s->n + 1, sizeof *sc->sets);
    int64_t now = deadline_now_ms();

    for (size_t i = 0; i < s->n; i++) {
        struct source_state *st = &s->st[i];
        if (o && o->only && strcmp(o->only, st->c->name) != 0)
            continue;
        double budget = scheduler_budget(st->c->timeout, o ? o->scrape_timeout : 0,
                                         s->src->scrape_timeout_offset);
        struct scrape_entry *en = &sc->entries[sc->n++];
        en->st = st;
        en->started_ms = now;
        en->dl.at_ms = now + (int64_t)(budget * 1000.0);
    }
    /* Healthy sources are handed to the pool first: an idle thread takes the first job it is
     * given, so a source that may hang must not be that job. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sc->n; i++) {
            struct scrape_entry *en = &sc->entries[i];
            pthread_mutex_lock(&en->st->mu);
            if (!en->submitted && (pass == 1 || !failing_locked(en->st))) {
                /* The collection runs under the source's own timeout whatever this scrape's
                 * header says: the header bounds how long this scrape waits, never what the
                 * source may take, so one client asking for 1 ns cannot fail the source for
                 * everyone. */
                struct deadline own = {en->started_ms + (int64_t)(en->st->c->timeout * 1000.0)};
                en->col = start_or_join_locked(s, en->st, own, o ? o->max_age : 0);
                en->submitted = 1;
            }
            pthread_mutex_unlock(&en->st->mu);
        }
    }

    for (size_t i = 0; i < sc->n; i++) {
        struct scrape_entry *en = &sc->entries[i];
        struct source_state *st = en->st;
        pthread_mutex_lock(&st->mu);
        int up = 0;
        if (en->col) {
            wait_locked(st, en->col, en->dl);
            if (!en->col->done && !en->col->started && deadline_now_ms() >= en->col->deadline_ms &&
                pool_cancel(s->pool, en->col->job_id) == 0) {
                /* Still queued at its own deadline: out of the queue now, so the slot is not held
                 * for nothing (queued only past a short header, it stays: the next scrape may
                 * use it). */
                struct worker_arg *a = en->col->arg;
                end_unstarted_locked(s, st, en->col);
                scheduler_unref(a->s); /* never the last: this scrape holds one */
                free(a);
            }
            /* Late by the source's own timeout: a source failure. Late only because this
             * scrape's header left less time: up 0 in this answer, but no error counted and
             * no back-off, since the collection may well finish in time for the next one. (Not
             * started yet but no longer queued: a thread took it just now.) */
            if (!en->col->done && !en->col->timeout_counted &&
                deadline_now_ms() >= en->col->deadline_ms) {
                int ran = en->col->started;
                char msg[200];
                snprintf(msg, sizeof msg, "collection did not %s within %.3fs",
                         ran ? "finish" : "start",
                         (double)(en->dl.at_ms - en->started_ms) / 1000.0);
                en->col->timeout_counted = 1;
                note_failure_locked(st, ERR_TIMEOUT, msg, 1, ran);
            }
            up = en->col->done && en->col->rc == 0;
        }
        struct metric_set *meta = metric_set_new(st->c->name, st->c->kind->name);
        add_meta(meta, st, en, up, deadline_now_ms());
        en->meta = meta;
        if (up)
            sc->sets[sc->nsets++] = en->col->set;
        else
            sc->failed++;
        sc->sets[sc->nsets++] = meta;
        pthread_mutex_unlock(&st->mu);
    }
    return sc;
}

struct metric_set *const *scheduler_scrape_sets(const struct scheduler_scrape *sc, size_t *n)
{
    *n = sc->nsets;
    return sc->sets;
}

size_t scheduler_scrape_failed(const struct scheduler_scrape *sc)
{
    return sc->failed;
}

size_t scheduler_scrape_matched(const struct scheduler_scrape *sc)
{
    return sc->n;
}

int scheduler_scrape_up(const struct scheduler_scrape *sc, const struct collector *c,
                        struct deadline *dl)
{
    for (size_t i = 0; i < sc->n; i++) {
        struct scrape_entry *en = &sc->entries[i];
        if (en->st->c != c)
            continue;
        if (!en->col)
            return 0;
        pthread_mutex_lock(&en->st->mu);
        int up = en->col->done && en->col->rc == 0;
        pthread_mutex_unlock(&en->st->mu);
        *dl = en->dl;
        return up;
    }
    return 0;
}

void scheduler_scrape_free(struct scheduler_scrape *sc)
{
    if (!sc)
        return;
    /* Meta sets are ours; collection sets belong to their collections. */
    for (size_t i = 0; i < sc->n; i++) {
        struct scrape_entry *en = &sc->entries[i];
        metric_set_free(en->meta);
        if (!en->col)
            continue;
        pthread_mutex_lock(&en->st->mu);
        collection_unref_locked(en->col);
        pthread_mutex_unlock(&en->st->mu);
    }
    free(sc->sets);
    free(sc->entries);
    scheduler_unref(sc->s);
    free(sc);
}

size_t scheduler_source_count(const struct scheduler *s)
{
    return s->n;
}

void scheduler_status_at(struct scheduler *s, size_t i, struct scheduler_status *out)
{
    struct source_state *st = &s->st[i];
    pthread_mutex_lock(&st->mu);
    out->name = st->c->name;
    out->kind = st->c->kind->name;
    out->up = st->last_up;
    out->last_success = st->has_success ? st->last_success : 0;
    out->last_duration = st->last_duration;
    snprintf(out->last_error, sizeof out->last_error, "%s", st->last_error);
    pthread_mutex_unlock(&st->mu);
}
