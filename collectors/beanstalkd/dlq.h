/* beanstalkd/dlq.h: `qrel dlq`'s hooks for beanstalkd (collectors/beanstalkd/dlq.c), named by the
 * top (beanstalkd.c). Private to the folder. */
#ifndef QREL_BEANSTALKD_DLQ_H
#define QREL_BEANSTALKD_DLQ_H

#include "collector.h"
#include "dlq_kind.h"

extern const struct dlq_kind beanstalkd_dlq;

/* collector_kind.dead_letter_validate: the queue is a tube name the source watches (any,
 * without a tubes key), and id_field a key of the JSON body (beanstalkd.h). */
int beanstalkd_dlq_validate(struct collector *c, struct cfg_node *entry, const char *queue,
                            const char *id_field, struct err *e);

#endif
