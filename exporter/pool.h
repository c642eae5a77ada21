/* pool.h: a bounded pool of collection threads shared by every scrape of the process.
 *
 * Without it each scrape started one thread per source: with 1,000 sources that is 1,000
 * threads (and their stacks) at once, per scrape. The pool runs at most `max_threads` jobs at a
 * time, started lazily (a small configuration never makes more threads than it has sources) and
 * kept for the life of the pool so the next scrape does not pay for thread creation.
 *
 * Every job carries the time by which it must have started (the scrape's deadline for that
 * source). Waiting jobs run in order of (priority, start_by): priority 0 first, so a source that
 * failed last time (which may hang until its deadline) never delays a healthy one of the same
 * scrape. A job still waiting at its start_by is not run: its `expire` callback is called
 * instead, so its owner can report it as not started and release what it holds.
 *
 * Ownership: the pool copies nothing from a job but the callbacks and the argument; `run` or
 * `expire` is called exactly once per accepted job, on a pool thread or in pool_free. */
#ifndef QREL_POOL_H
#define QREL_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define POOL_DEFAULT_THREADS 64
#define POOL_MAX_THREADS 10000

struct pool;

struct pool_job {
    void (*run)(void *arg);
    void (*expire)(void *arg); /* called instead of run when start_by passed while waiting */
    void *arg;
    int64_t start_by_ms; /* monotonic (deadline_now_ms); run at once when 0 */
    int priority;        /* 0 before 1: lower runs first */
};

/* max_threads from 1 to POOL_MAX_THREADS. */
struct pool *pool_new(size_t max_threads, struct err *e);
/* Queues a copy of *job and sets *id (never 0) for pool_cancel; -1 (ERR_INTERNAL) when the pool
 * is shutting down or cannot start any thread at all, in which case neither callback is called. */
int pool_submit(struct pool *p, const struct pool_job *job, uint64_t *id, struct err *e);
/* Takes a job that has not started out of the queue: 0 when it was waiting (neither callback
 * will be called: the caller releases what the job holds), -1 when it already started or ended.
 * Lets a caller whose deadline passed free its slot in the queue at once. */
int pool_cancel(struct pool *p, uint64_t id);
/* Expires every waiting job, waits for the running ones (each bounded by its own deadline),
 * joins the threads and frees the pool. NULL is fine. */
void pool_free(struct pool *p);
/* For a program about to exit: pool_free when no job runs; otherwise nothing, so exiting is not
 * held up by a collection stuck until its own deadline (the process' exit ends it, as a scrape
 * already answered without it). NULL is fine. */
void pool_exit(struct pool *p);

struct pool_stats {
    size_t max_threads;
    size_t threads;   /* started so far (they stay until pool_free) */
    size_t running;   /* jobs running now */
    size_t waiting;   /* jobs queued now */
    uint64_t expired; /* jobs that never started, since pool_new */
};
void pool_get_stats(struct pool *p, struct pool_stats *out);

#endif
