/* client.h: what sidekiq.c and dlq.c share (client.c): the source's state, its key names under
 * the namespace, and the pipeline runner of `qrel dlq`. Private to the folder. */
#ifndef QREL_SIDEKIQ_CLIENT_H
#define QREL_SIDEKIQ_CLIENT_H

#include "collector.h"
#include "common/redis.h"
#include "common/redis_job.h"
#include "deadline.h"
#include "err.h"

struct state {
    struct redis_job job; /* the connection keys, queues, connection and pipeline */
    char *ns;             /* "" or "<namespace>:" */
    long long max_set_entries;
    double stale_after;
};

/* The key a followed by b (b may be NULL) under the namespace, malloc'd. */
char *sidekiq_key(const struct state *st, const char *a, const char *b);

/* Runs p on the source's connection (opened when there is none); after a failure the
 * connection is dropped, as collect() does, and e names it. The runner of the replay lock
 * (common/redis_lock.h) too. */
int sidekiq_run_pipe(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                     const struct deadline *dl, struct err *e);

#endif
