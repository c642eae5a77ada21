/* pool.c: see pool.h.
 *
 * The queue is a doubly linked list kept in (priority, start_by, arrival) order. A new job is
 * placed by walking back from the tail, which is one step in the usual case (the jobs of one
 * scrape share a deadline) and a few more when failing sources wait at the back. A thread is
 * started only when more jobs wait than threads sit idle, so a pool never holds more threads
 * than it ever had jobs at once. Callbacks run without the pool's lock held: they take their
 * owners' locks, and the scheduler calls pool_submit and pool_cancel with those held. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "deadline.h"
#include "log.h"
#include "alloc.h"

struct node {
    struct pool_job job;
    uint64_t id;
    struct node *prev, *next;
};

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job arrived, or the pool is stopping */
    struct node *head, *tail;
    size_t waiting, running, idle, max;
    size_t nthreads;
    pthread_t *threads;
    uint64_t next_id;
    uint64_t expired;
    int stopping;
};

static int job_before(const struct pool_job *a, const struct pool_job *b)
{
    if (a->priority != b->priority)
        return a->priority < b->priority;
    int64_t sa = a->start_by_ms ? a->start_by_ms : INT64_MAX;
    int64_t sb = b->start_by_ms ? b->start_by_ms : INT64_MAX;
    return sa < sb;
}

/* Called with p->mu held. */
static void unlink_node(struct pool *p, struct node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        p->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        p->tail = n->prev;
    p->waiting--;
}

static void *worker_main(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping) {
            p->idle++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->idle--;
        }
        if (!p->head)
            break; /* stopping, and pool_free took what was waiting */
        struct node *n = p->head;
        unlink_node(p, n);
        int late = n->job.start_by_ms && deadline_now_ms() >= n->job.start_by_ms;
        if (late)
            p->expired++;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        if (late)
            n->job.expire(n->job.arg);
        else
            n->job.run(n->job.arg);
        free(n);
        pthread_mutex_lock(&p->mu);
        p->running--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct pool *pool_new(size_t max_threads, struct err *e)
{
    if (max_threads < 1 || max_threads > POOL_MAX_THREADS) {
        err_set(e, ERR_CONFIG, "collection pool: want 1 to %d threads, got %zu", POOL_MAX_THREADS,
                max_threads);
        return NULL;
    }
    struct pool *p = xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->max = max_threads;
    p->threads = xcalloc(max_threads, sizeof *p->threads);
    p->next_id = 1;
    return p;
}

int pool_submit(struct pool *p, const struct pool_job *job, uint64_t *id, struct err *e)
{
    struct node *n = xcalloc(1, sizeof *n);
    n->job = *job;
    pthread_mutex_lock(&p->mu);
    if (p->stopping) {
        pthread_mutex_unlock(&p->mu);
        free(n);
        return err_set(e, ERR_INTERNAL, "the collection pool is shutting down");
    }
    n->id = p->next_id++;
    /* After the last job that goes before it or ties with it: FIFO among equals. */
    struct node *after = p->tail;
    while (after && job_before(&n->job, &after->job))
        after = after->prev;
    n->prev = after;
    n->next = after ? after->next : p->head;
    if (n->next)
        n->next->prev = n;
    else
        p->tail = n;
    if (after)
        after->next = n;
    else
        p->head = n;
    p->waiting++;

    if (p->waiting > p->idle && p->nthreads < p->max) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        int rc = pthread_create(&p->threads[p->nthreads], &attr, worker_main, p);
        pthread_attr_destroy(&attr);
        if (rc == 0) {
            p->nthreads++;
        } else if (p->nthreads == 0) {
            /* No thread at all would ever run it: refuse instead of queueing forever. */
            unlink_node(p, n);
            pthread_mutex_unlock(&p->mu);
            free(n);
            return err_set(e, ERR_INTERNAL, "cannot start a collection thread");
        } else {
            log_kv(LOG_WARN, "cannot start another collection thread, queueing", NULL);
        }
    }
    *id = n->id;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int pool_cancel(struct pool *p, uint64_t id)
{
    pthread_mutex_lock(&p->mu);
    struct node *n = p->head;
    while (n && n->id != id)
        n = n->next;
    if (n) {
        unlink_node(p, n);
        p->expired++;
    }
    pthread_mutex_unlock(&p->mu);
    free(n);
    return n ? 0 : -1;
}

void pool_free(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    struct node *n = p->head;
    p->head = p->tail = NULL;
    p->waiting = 0;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    while (n) {
        struct node *next = n->next;
        n->job.expire(n->job.arg);
        free(n);
        n = next;
    }
    for (size_t i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void pool_exit(struct pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    int busy = p->running > 0;
    pthread_mutex_unlock(&p->mu);
    if (!busy)
        pool_free(p);
}

void pool_get_stats(struct pool *p, struct pool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    out->max_threads = p->max;
    out->threads = p->nthreads;
    out->running = p->running;
    out->waiting = p->waiting;
    out->expired = p->expired;
    pthread_mutex_unlock(&p->mu);
}
