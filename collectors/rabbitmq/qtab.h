/* qtab.h: the queue tables a scrape of `kind: rabbitmq` builds (collectors/rabbitmq/qtab.c): one
 * record a queue, by (vhost, name), with a hash index. The depth read of every scrape fills one,
 * a refresh of the slow part another, before it is compacted into the cache (cache.h). Private
 * to the folder. */
#ifndef QREL_RABBITMQ_QTAB_H
#define QREL_RABBITMQ_QTAB_H

#include <stddef.h>

#include "hashtab.h"

struct qrec {
    char *vhost, *name;
    int has_stats;
    double ready, unacked;
    int has_consumers; /* consumers: from the same read as the depth */
    double consumers;
    /* the slow part */
    int has_head_ts;
    double head_ts;
    double redeliver, consumed;
    char *dlx, *dlrk;
    double delivery_limit, consumer_timeout_ms, message_ttl_ms;
    size_t dlq0, ndlq; /* this queue's dead-letter queues: meta.dlqs[dlq0 .. dlq0 + ndlq) */
};

struct qtab {
    struct qrec *v;
    size_t n, cap;
    struct hashtab index; /* records by (vhost, name) */
};

/* The index of (vhost, name), or SIZE_MAX. */
size_t rabbitmq_qtab_find(const struct qtab *t, const char *vhost, const char *name);
/* The record of (vhost, name), added (zeroed, strings copied, no limits) when new. */
struct qrec *rabbitmq_qtab_get(struct qtab *t, const char *vhost, const char *name);
void rabbitmq_qtab_free(struct qtab *t); /* zeroes it */

#endif
