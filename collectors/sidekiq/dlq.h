/* sidekiq/dlq.h: `qrel dlq`'s hooks for Sidekiq (collectors/sidekiq/dlq.c), named by the top
 * (sidekiq.c). Private to the folder. */
#ifndef QREL_SIDEKIQ_DLQ_H
#define QREL_SIDEKIQ_DLQ_H

#include "collector.h"
#include "dlq_kind.h"

extern const struct dlq_kind sidekiq_dlq;

/* collector_kind.dead_letter_validate: the queue is one the source watches (any, without a
 * queues key), and id_field is a key of the job payload (sidekiq.h). */
int sidekiq_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                         const char *id_field, struct err *e);

#endif
