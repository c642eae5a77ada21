/* nats/dlq.h: `qrel dlq`'s hooks for JetStream dead-letter streams (collectors/nats/dlq.c), named
 * by the top (nats.c). Private to the folder. */
#ifndef QREL_NATS_DLQ_H
#define QREL_NATS_DLQ_H

#include "dlq_kind.h"

extern const struct dlq_kind nats_dlq;

#endif
