/* sidekiq.h: the pure parts of `kind: sidekiq` (parse.c): what qrel reads out of the JSON that
 * Sidekiq 6 and 7 keep in Redis, apart from the Redis I/O so the unit tests can feed recorded
 * values. */
#ifndef QREL_SIDEKIQ_H
#define QREL_SIDEKIQ_H

#include <stddef.h>

#include "common/entries.h"
#include "err.h"

/* A job as Sidekiq serialises it (queue lists, the schedule, retry and dead sets, and the
 * payload of a job being worked on): its queue and, where present, enqueued_at (epoch seconds as
 * written, whatever their sign: the caller judges them with entry_age; NAN when absent, as for a
 * job that was never enqueued yet). *queue is malloc'd. -1 with *why (entries.h) and a message
 * when the job cannot be read: the caller skips that one entry and counts it. */
int sidekiq_parse_job(const char *json, size_t len, char **queue, double *enqueued_at,
                      enum entry_skip *why, struct err *e);

/* One entry of a process's work hash (`<identity>:workers` in 6.x, `<identity>:work` in 7.x):
 * {"queue": "...", "payload": <the job, as a JSON string (6.x) or object>, "run_at": epoch}.
 * *queue is malloc'd; *run_at is when the job started, as written (the caller judges it). */
int sidekiq_parse_work(const char *json, size_t len, char **queue, double *run_at,
                       enum entry_skip *why, struct err *e);

/* What a process's heartbeat (`HGET <identity> beat`, epoch seconds as Sidekiq writes them) says
 * at now: alive when at most stale_after old, stopped when older, and neither when it is no time
 * (not a plain number, not finite, or refused by entry_age): the caller counts that as a skipped
 * bad_timestamp entry and judges the process's jobs neither way (in flight, not orphaned), so a
 * beat it cannot read raises no false "orphaned" alarm. */
enum sidekiq_beat { SIDEKIQ_ALIVE, SIDEKIQ_STOPPED, SIDEKIQ_BEAT_BAD };
enum sidekiq_beat sidekiq_judge_beat(const char *s, size_t len, double now, double stale_after);

#endif
