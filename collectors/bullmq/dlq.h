/* bullmq/dlq.h: `qrel dlq`'s hooks for BullMQ (collectors/bullmq/dlq.c), named by the top
 * (bullmq.c). Private to the folder. */
#ifndef QREL_BULLMQ_DLQ_H
#define QREL_BULLMQ_DLQ_H

#include "collector.h"
#include "common/redis_job.h"
#include "dlq_kind.h"

extern const struct dlq_kind bullmq_dlq;

/* What dlq.c reads of bullmq.c's state: its first two members, in this order (asserted there),
 * so that this file needs neither the rest of the state nor bullmq.c. */
struct bullmq_dlq_view {
    struct redis_job job; /* the connection keys and the connection */
    char *prefix;         /* the key prefix, "bull" by default */
};

/* collector_kind.dead_letter_validate: the queue is one the source watches (any, without a
 * queues key), id_field is a form bullmq.h names, and on a cluster the queue has a hash tag. */
int bullmq_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                        const char *id_field, struct err *e);

#endif
