/* rq/dlq.h: `qrel dlq`'s hooks for RQ (collectors/rq/dlq.c), named by the top (rq.c). Private to
 * the folder. */
#ifndef QREL_RQ_DLQ_H
#define QREL_RQ_DLQ_H

#include "collector.h"
#include "dlq_kind.h"

extern const struct dlq_kind rq_dlq;

/* collector_kind.dead_letter_validate: the queue is one the source watches (any, without a
 * queues key), and id_field is job_id or description (rq.h). */
int rq_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                    const char *id_field, struct err *e);

#endif
