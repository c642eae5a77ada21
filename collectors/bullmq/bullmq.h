/* bullmq.h: the pure parts of `kind: bullmq` (parse.c), apart from the Redis I/O so the unit
 * tests can feed them recorded keys and stream entries. */
#ifndef QREL_BULLMQ_H
#define QREL_BULLMQ_H

#include <stddef.h>

/* The queue of a `<prefix>:<queue>:meta` key found by SCAN (a queue name may hold ':'), as a
 * malloc'd string, or NULL when key is not such a key of prefix. */
char *bullmq_queue_of_meta_key(const char *key, size_t len, const char *prefix);

/* The queue of a key discovery's SCAN found: `<prefix>:<queue>:meta` (BullMQ) or
 * `<prefix>:<queue>:id` (the job counter, which BullMQ and Bull 3/4 both INCR on every add;
 * Bull writes no `:meta`). malloc'd, or NULL for any other key, `:meta-paused` included. */
char *bullmq_queue_of_found_key(const char *key, size_t len, const char *prefix);
/* The SCAN MATCH glob (malloc'd) that finds both: one glob has no "or", so it is a superset
 * (`<prefix>:*:[im][de]*`) whose keys are then judged by bullmq_queue_of_found_key. */
char *bullmq_discovery_match(const char *prefix);

/* Is the entry of a queue's `events` stream with these n field/value strings (names[i] =
 * values[i]) a `stalled` event, the one BullMQ adds when a job's lock ran out? */
int bullmq_is_stalled_event(const char *const *names, const char *const *values, size_t n);

/* On a Redis Cluster every key of a queue must be in one hash slot: is there a hash tag (a
 * non-empty "{...}", the first "{" and the next "}") within `<prefix>:<queue>:`, so that every
 * key `<prefix>:<queue>:<suffix>` hashes by it whatever the suffix? */
int bullmq_queue_tagged(const char *prefix, const char *queue);

/* The workers of CLIENT LIST's reply (list, len bytes: a line per connection, "key=value" fields
 * apart by spaces), as BullMQ's Queue.getWorkers() and Bull 3/4's find them: each connection
 * named `<prefix>:<base64(queue)>` (BullMQ's Worker without a name; Bull's Queue#process, which
 * names its blocking connection so) or `<prefix>:<base64(queue)>:w:<name>` (a named Worker).
 * Into *queues the decoded queue of each such connection (malloc'd, sorted; free each and the
 * list), once per connection; returns how many. A QueueEvents connection (`...:qe`) and names
 * that are no base64 are none. */
size_t bullmq_worker_queues(const char *list, size_t len, const char *prefix, char ***queues);

/* How many of the n sorted queues of bullmq_worker_queues are queue. */
size_t bullmq_workers_of(char *const *queues, size_t n, const char *queue);

/* The `count` field of `<prefix>:<queue>:metrics:completed` or `:failed` (the HINCRBY of
 * BullMQ's and Bull 4's collectMetrics): 0 with *count set when s is a whole number from 0 to
 * 2^53, else -1 (NULL: the hash or field is absent). */
int bullmq_metrics_count(const char *s, double *count);

/* ---- `qrel dlq` (dlq_parse.c) ---- */

/* Where a failed job carries its work id (a dead_letters entry's id_field): the job id
 * (`job_id`: applications that add with { jobId: order } name the work), the job's `name`, or
 * a key of its `data` parsed as JSON, with dots for nesting (`order.id`). */
enum bullmq_id_field { BULLMQ_ID_JOB_ID, BULLMQ_ID_NAME, BULLMQ_ID_DATA };

/* 0 with *out set for a form above; -1 with why (a sentence naming the forms) otherwise. */
int bullmq_dlq_id_field(const char *id_field, enum bullmq_id_field *out, char *why, size_t cap);

/* The work id of a failed job (malloc'd), or NULL when it carries none: the job id, its name,
 * or the value at the dotted key id_field of its data (data_len bytes; a string or an integer;
 * a string holding a NUL is no id). */
char *bullmq_dlq_work_id(enum bullmq_id_field f, const char *id_field, const char *job_id,
                         const char *name, const char *data, size_t data_len);

/* How often a failed job was attempted: BullMQ 5 and 6 count attempts in the hash field `atm`
 * (moveToFinished's HINCRBY), older releases in `attemptsMade`; -1 when neither is a count. */
long long bullmq_dlq_deliveries(const char *atm, const char *attempts_made);

/* The replay stamp of a job hash (its DLQ_STAMP field): the count qrel wrote, 0 when the field is
 * absent or is not a whole number qrel could have written. */
long long bullmq_dlq_replays(const char *stamp);

/* When a job failed, in unix seconds, from its finishedOn (epoch milliseconds), else from its
 * score in the failed set (the same milliseconds, BullMQ's ZADD); 0 when neither is a time from
 * 2000-01-01 on. */
double bullmq_dlq_dead_since(const char *finished_on, const char *score);

#endif
