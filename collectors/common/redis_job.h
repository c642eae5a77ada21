/* redis_job.h: what the Redis job-framework kinds (rq, sidekiq, celery, bullmq) do alike around
 * their own scrape: the state they all keep (struct redis_job), configure()'s common keys and its
 * tail (unknown keys, then the connection keys judged), the queue list check, the collect() frame
 * that keeps one connection across scrapes, drops it after an error so the next scrape
 * reconnects, and counts the round trips a scrape took, and the TIME reply. Each kind keeps its
 * own keys, scrape and log message. */
#ifndef QREL_REDIS_JOB_H
#define QREL_REDIS_JOB_H

#include <stddef.h>

#include "collector.h"
#include "common/exclude.h"
#include "common/redis.h"
#include "common/redis_settings.h"
#include "config.h"
#include "err.h"

/* What each of these kinds keeps, as a member of its state. */
struct redis_job {
    struct redis_settings rs;
    char **queues; /* the queues key; NULL when absent */
    size_t nqueues;
    struct redis_conn *conn; /* kept across scrapes; NULL after an error */
    struct redis_pipe *pipe;
    unsigned long long round_trips; /* of the last scrape that succeeded */
    /* Set by a kind that finds its queues when `queues` is absent, before redis_job_read: where
     * it finds them, for the message refusing `exclude` beside `queues`. NULL: no `exclude` key
     * (celery names its queues). */
    const char *discovery;
    struct exclude exclude; /* the queues discovery found that are left out */
};

/* configure()'s first step: the connection keys, the queues key and, when j->discovery is set,
 * the exclude key. */
int redis_job_read(struct cfg_node *map, struct redis_job *j, struct err *e);

/* After the kind has read its own keys: collector_finish, then redis_settings_check; on success
 * the pipeline is made. */
int redis_job_finish(const struct collector *c, struct cfg_node *map, struct redis_job *j,
                     struct err *e);

/* A queues key that is present must name at least one queue (absent: every queue); exclude is
 * judged (exclude_check) and refused beside queues. */
int redis_job_check_queues(struct cfg_node *map, struct redis_job *j, struct err *e);

/* destroy()'s part: closes the connection, frees the pipeline, the queues and the settings
 * (wiping the password); fine on a zeroed or half-configured j. */
void redis_job_free(struct redis_job *j);

/* Opens j's connection when it has none, then runs scrape(arg, dl, e) on it (j->exclude.dropped
 * at 0 before it); when either fails, the connection is closed. On success j->round_trips is how
 * many the scrape took. 0 or -1 + e. */
int redis_job_collect(struct redis_job *j, const char *source, const struct deadline *dl,
                      int (*scrape)(void *arg, const struct deadline *dl, struct err *e), void *arg,
                      struct err *e);

/* The reply to TIME as epoch seconds in *now; else -1 with a protocol error. */
int redis_job_time(const redisReply *r, double *now, struct err *e);

/* 0 when reply r is of type (REDIS_REPLY_STRING, _ARRAY or _INTEGER); else -1 with a protocol
 * error "WHAT: want a list, got an error: MSG" (what was wanted, what came, an error's text). */
int redis_job_want(const redisReply *r, int type, const char *what, struct err *e);

/* For `qrel dlq` on a job framework: runs p on j's connection (opened when there is none), fn
 * called on each reply; after a failure the connection is dropped, as a collection drops it, and
 * e starts with the connection's label. 0 or -1 + e. */
int redis_job_run_pipe(struct redis_job *j, const char *source, struct redis_pipe *p,
                       redis_reply_fn fn, void *ctx, const struct deadline *dl, struct err *e);
/* After a failed command: the error names the connection (once) and the connection is closed,
 * so that the next command connects again. Returns -1. */
int redis_job_drop(struct redis_job *j, struct err *e);

/* An error reply r to WHAT as a query error "WHAT: <its text, at most 300 bytes>"; -1. */
int redis_job_reply_error(const redisReply *r, const char *what, struct err *e);

/* A redis_reply_fn for a script's integer reply (EVAL): kept in *(long long *)ctx; an error
 * reply as redis_job_reply_error "EVAL: …". */
int redis_job_eval_int(void *ctx, size_t i, const redisReply *r, struct err *e);

/* At debug level: MSG source=SOURCE queues=NQUEUES round_trips=ROUND_TRIPS, the last from j
 * (the integration tests read round_trips from this line). */
void redis_job_log_done(const struct redis_job *j, const char *msg, const char *source,
                        size_t nqueues);

#endif
