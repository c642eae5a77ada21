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
 * job that was never enqueued yet). *queue is malloc'd; a NULL queue checks that the job has one
 * without copying it (a queue list's head, whose queue is known). -1 with *why (entries.h) and a
 * message when the job cannot be read: the caller skips that one entry and counts it. */
int sidekiq_parse_job(const char *json, size_t len, char **queue, double *enqueued_at,
                      enum entry_skip *why, struct err *e);

/* One entry of a process's work hash (`<identity>:workers` in 6.x, `<identity>:work` in 7.x):
 * {"queue": "...", "payload": <the job, as a JSON string (6.x) or object>, "run_at": epoch}.
 * *queue is malloc'd; *run_at is when the job started, as written (the caller judges it). */
int sidekiq_parse_work(const char *json, size_t len, char **queue, double *run_at,
                       enum entry_skip *why, struct err *e);

/* A process's `info` (`HGET <identity> info`), the JSON Sidekiq writes when the process starts:
 * its "queues" are the queues it fetches from (6.x: its -q options; 7.x: every capsule's). Into
 * *queues a malloc'd NULL-terminated list (cfg_strv_free), each name once, however often a
 * weight repeats it. -1 with *why (entries.h) and e when info is no JSON object or has no
 * "queues" array of names: the caller cannot tell which queues the process serves. */
int sidekiq_parse_process(const char *json, size_t len, char ***queues, enum entry_skip *why,
                          struct err *e);

/* What a process's heartbeat (`HGET <identity> beat`, epoch seconds as Sidekiq writes them) says
 * at now: alive when at most stale_after old, stopped when older, and neither when it is no time
 * (not a plain number, not finite, or refused by entry_age): the caller counts that as a skipped
 * bad_timestamp entry and judges the process's jobs neither way (in flight, not orphaned), so a
 * beat it cannot read raises no false "orphaned" alarm. */
enum sidekiq_beat { SIDEKIQ_ALIVE, SIDEKIQ_STOPPED, SIDEKIQ_BEAT_BAD };
enum sidekiq_beat sidekiq_judge_beat(const char *s, size_t len, double now, double stale_after);

/* ---- `qrel dlq` (dlq_parse.c) ---- */

/* A dead_letters entry's id_field: a key of the job payload with dots for nesting and digits for
 * a position in an array (common/json_id.h): `jid`, `args.0`, `args.0.order_id`. 0, or -1 with
 * a reason in why. */
int sidekiq_dlq_id_field(const char *id_field, char *why, size_t cap);

/* What qrel dlq reads from a job of the dead set. Strings malloc'd (sidekiq_dead_free). */
struct sidekiq_dead {
    char *queue;          /* its "queue" */
    char *jid;            /* its "jid"; NULL when it has none */
    char *work_id;        /* the value at id_field; NULL when absent or not a string/integer */
    long long deliveries; /* retry_count + 1 (Sidekiq's count of failures less one); -1: none */
    long long replays;    /* its DLQ_STAMP key ("qrel-replayed"); 0 when absent */
};

/* Reads a dead job's payload. -1 with *why (entries.h) and e when it is no JSON object or has
 * no "queue" string: the caller counts it as skipped. */
int sidekiq_dlq_job(const char *json, size_t len, const char *id_field, struct sidekiq_dead *out,
                    enum entry_skip *why, struct err *e);
void sidekiq_dead_free(struct sidekiq_dead *d);

/* The payload a replay pushes onto the job's queue, as Sidekiq's own SortedEntry#retry makes it
 * (api.rb, 6.4): retry_count one less when it is an integer (Sidekiq's retry gives the job one
 * more try), enqueued_at now (Client#atomic_push), and, qrel's own, DLQ_STAMP = stamp. Every
 * other member, error_message, failed_at and args included, is kept byte for byte and in its
 * place; the three are written last. malloc'd into *out (*outlen bytes, NUL-terminated). -1 with
 * e when json is no JSON object, has a member twice, or a top-level name with an escape. */
int sidekiq_dlq_requeue_payload(const char *json, size_t len, double now, long long stamp,
                                char **out, size_t *outlen, struct err *e);

#endif
