/* rq.h: the pure parts of `kind: rq` (parse.c): RQ's timestamps and what one queue's figures
 * become, kept apart from the Redis I/O so the unit tests can feed them recorded values. */
#ifndef QREL_RQ_H
#define QREL_RQ_H

#include <stddef.h>

/* RQ 1.x writes times as utcformat(): "2026-12-01T15:07:16.512345Z". Returns 0 with *epoch set,
 * -1 when s is empty or not such a time. */
int rq_parse_time(const char *s, double *epoch);

/* RQ's job timeout field: seconds; absent (NULL or "") means the queue's default, which RQ keeps
 * in the worker process, not in Redis (180 s unless the application changed it); "-1" means no
 * limit. Returns 1 with *seconds set, 0 for no limit, -1 when the field is not a number. */
int rq_job_timeout(const char *field, double default_timeout, double *seconds);

/* One job held by a worker: its timeout (<= 0: none) and how long it has been held. */
struct rq_hold {
    double timeout, held;
};

/* The lease figures of a queue's in-flight jobs: the longest hold, and the smallest ratio of a
 * job's timeout to its hold with that job's timeout. Jobs without a timeout or not yet held for
 * any time do not bound the margin. Returns 1 when a margin exists, 0 when none does (then only
 * *oldest is set), and 0 with *oldest = 0 for n == 0. */
int rq_lease(const struct rq_hold *h, size_t n, double *oldest, double *margin, double *timeout);

/* A worker hash's queues field, the names of the queues it listens on joined by commas (RQ's
 * register_birth: ','.join(queue_names())), len bytes: 1 when it names name, else 0. */
int rq_worker_serves(const char *queues, size_t len, const char *name);

/* ---- `qrel dlq` (dlq_parse.c) ---- */

/* Where a failed job carries its work id (a dead_letters entry's id_field). RQ pickles a job's
 * arguments and meta by default, and qrel never unpickles what others wrote, so only what RQ
 * keeps as plain text can name the work: the job id (`job_id`, which applications set with
 * enqueue(..., job_id=...)) or the job's `description`. */
enum rq_id_field { RQ_ID_JOB_ID, RQ_ID_DESCRIPTION };

/* 0 with *out set for a form above; -1 with why (a sentence naming the forms) otherwise. */
int rq_dlq_id_field(const char *id_field, enum rq_id_field *out, char *why, size_t whylen);

/* RQ's utcformat() of unix seconds t ("2026-12-01T15:16:50.421338Z", microseconds), as RQ writes
 * enqueued_at when it enqueues. -1 when t is not finite, before 1970 or after 9999. */
int rq_utcformat(double t, char *out, size_t outlen);

/* How often a failed job ran since it was last enqueued, from its retries_left field: a job
 * without a Retry (no field) runs once; with one, RQ keeps only what is left, not how many it
 * had, so the count is unknown (-1). */
long long rq_dlq_deliveries(const char *retries_left);

/* A failed job's replay stamp, from its hash field DLQ_STAMP (NULL: absent): 0 without one, the
 * count it holds, or -1 (unknown) when it holds no whole number. */
long long rq_dlq_replays(const char *stamp);

#endif
