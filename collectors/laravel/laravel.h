/* laravel.h: the pure parts of `kind: laravel` (parse.c): what qrel reads out of the job JSON
 * Laravel's Redis queue driver keeps, the queue a key found by discovery belongs to, and the
 * lease figures of a queue's reserved jobs, apart from the Redis I/O so the unit tests can feed
 * recorded values. */
#ifndef QREL_LARAVEL_H
#define QREL_LARAVEL_H

#include <stddef.h>

#include "common/entries.h"
#include "err.h"

/* What qrel reads of one job payload (Illuminate\Queue\Queue::createPayloadArray plus the Redis
 * driver's id and attempts). Numbers as written, NAN when absent or null: the caller judges
 * times with entry_age. */
struct laravel_job {
    double attempts;   /* deliveries so far: 0 while ready, raised by one at each pop */
    double timeout;    /* the job's own timeout (seconds), which overrides the worker's --timeout */
    double created_at; /* createdAt (recent Laravel, e.g. 13.x, or a createPayloadUsing hook) */
};

/* Reads a payload: -1 with *why (entries.h) and a message when it is no JSON object, has no
 * numeric "attempts", or a "timeout" or "createdAt" that is neither a number nor null. */
int laravel_parse_job(const char *json, size_t len, struct laravel_job *out, enum entry_skip *why,
                      struct err *e);

/* laravel_parse_job's two paths, apart for the differential test: the scanner of top-level
 * members, 1 with *out set when it can answer a plainly well-formed payload and 0 (out untouched)
 * when jansson must; and jansson, the reference, which answers any payload. */
int laravel_parse_job_fast(const char *json, size_t len, struct laravel_job *out);
int laravel_parse_job_jansson(const char *json, size_t len, struct laravel_job *out,
                              enum entry_skip *why, struct err *e);

/* The queue of a key that SCAN <prefix>queues:* found: the key less prefix "queues:" and, for
 * the sorted sets and the notify list, less ":delayed", ":reserved" or ":notify". malloc'd;
 * NULL when the key is not under the prefix or leaves no name. */
char *laravel_queue_of_key(const char *key, size_t len, const char *prefix);

/* The lease figures of a queue's reserved jobs from the smallest score (Laravel scores a reserved
 * job with its lease's expiry, pop time + retry_after): the longest hold now - (score -
 * retry_after), at least 0, and the margin retry_after / hold. 1 with both set when the hold is
 * above 0, 0 when it is 0 (no margin), -1 when the score is no sane time (entry_age). */
int laravel_lease(double now, double min_score, double retry_after, double *hold, double *margin);

#endif
