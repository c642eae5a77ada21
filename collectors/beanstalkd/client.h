/* client.h: what beanstalkd.c and dlq.c share (client.c): the source's state and the pipeline
 * runner that opens the connection when there is none and drops it after an error. Private to the
 * folder. */
#ifndef QREL_BEANSTALKD_CLIENT_H
#define QREL_BEANSTALKD_CLIENT_H

#include <stddef.h>

#include "collector.h"
#include "common/beanstalk.h"
#include "common/exclude.h"
#include "deadline.h"
#include "err.h"

struct state {
    char *address;
    char **tubes; /* configured names, NULL: every tube */
    size_t ntubes;
    struct exclude exclude; /* listed tubes left out */
    long long max_response_bytes;
    struct beanstalk_conn *conn;
};

/* beanstalk_exec on the source's connection (opened first when there is none); after a failure
 * the connection is closed, so the next call reconnects. */
int beanstalkd_run(struct collector *c, const char *const *cmds, size_t n,
                   const struct deadline *dl, beanstalk_reply_fn fn, void *ctx, struct err *e);

#endif
