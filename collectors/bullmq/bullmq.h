/* bullmq.h: the pure parts of `kind: bullmq` (parse.c), apart from the Redis I/O so the unit
 * tests can feed them recorded keys and stream entries. */
#ifndef QREL_BULLMQ_H
#define QREL_BULLMQ_H

#include <stddef.h>

/* The queue of a `<prefix>:<queue>:meta` key found by SCAN (a queue name may hold ':'), as a
 * malloc'd string, or NULL when key is not such a key of prefix. */
char *bullmq_queue_of_meta_key(const char *key, size_t len, const char *prefix);

/* Is the entry of a queue's `events` stream with these n field/value strings (names[i] =
 * values[i]) a `stalled` event, the one BullMQ adds when a job's lock ran out? */
int bullmq_is_stalled_event(const char *const *names, const char *const *values, size_t n);

/* On a Redis Cluster every key of a queue must be in one hash slot: is there a hash tag (a
 * non-empty "{...}", the first "{" and the next "}") within `<prefix>:<queue>:`, so that every
 * key `<prefix>:<queue>:<suffix>` hashes by it whatever the suffix? */
int bullmq_queue_tagged(const char *prefix, const char *queue);

#endif
