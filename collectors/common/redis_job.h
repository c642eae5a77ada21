/* redis_job.h: what the Redis job-framework kinds (rq, sidekiq, celery, bullmq) do alike around
 * their own scrape: the tail of configure() (unknown keys, then the connection keys judged), the
 * queue list check, and the collect() frame that keeps one connection across scrapes, drops it
 * after an error so the next scrape reconnects, and counts the round trips a scrape took. Each
 * kind keeps its own keys, scrape and log message. */
#ifndef QREL_REDIS_JOB_H
#define QREL_REDIS_JOB_H

#include <stddef.h>

#include "common/redis.h"
#include "common/redis_settings.h"
#include "config.h"
#include "err.h"

/* After the kind has read its own keys: cfg_finish for source SOURCE, then redis_settings_check. */
int redis_job_finish(struct cfg_node *map, const char *source, struct redis_settings *rs,
                     struct err *e);
/* A queues key that is present must name at least one queue (absent: every queue). */
int redis_job_check_queues(struct cfg_node *map, char *const *queues, size_t nqueues,
                           struct err *e);

/* destroy()'s part: closes conn, frees pipe and the settings (wiping the password); NULLs are fine.
 */
void redis_job_free(struct redis_conn *conn, struct redis_pipe *pipe, struct redis_settings *rs);

/* Opens *conn when it is NULL, then runs scrape(arg, dl, e) on it; when either fails, *conn is
 * closed and set to NULL. On success *round_trips is how many the scrape took. 0 or -1 + e. */
int redis_job_collect(struct redis_conn **conn, const char *source, const struct redis_settings *rs,
                      const struct deadline *dl,
                      int (*scrape)(void *arg, const struct deadline *dl, struct err *e), void *arg,
                      unsigned long long *round_trips, struct err *e);
/* 0 when reply r is of type (REDIS_REPLY_STRING, _ARRAY or _INTEGER); else -1 with a protocol
 * error "WHAT: want a list, got an error: MSG" (what was wanted, what came, an error's text). */
int redis_job_want(const redisReply *r, int type, const char *what, struct err *e);

/* At debug level: MSG source=SOURCE queues=NQUEUES round_trips=ROUND_TRIPS (the integration
 * tests read round_trips from this line). */
void redis_job_log_done(const char *msg, const char *source, size_t nqueues,
                        unsigned long long round_trips);

#endif
