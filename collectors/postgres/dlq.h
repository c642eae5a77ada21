/* postgres/dlq.h: `qrel dlq`'s hooks for the job runners of a postgres source's `queues`
 * (collectors/postgres/dlq.c), named by the top (postgres.c). Private to the folder. */
#ifndef QREL_POSTGRES_DLQ_H
#define QREL_POSTGRES_DLQ_H

#include "collector.h"
#include "dlq_kind.h"

extern const struct dlq_kind postgres_dlq;

/* collector_kind.dead_letter_validate: exactly one job runner's entry of `queues` (any preset but
 * pgmq) watches the queue, and id_field is job:id, job:key or a data key (postgres.h). */
int postgres_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                          const char *id_field, struct err *e);

#endif
