/* kafka/dlq.h: `qrel dlq`'s hooks for Kafka dead-letter topics (collectors/kafka/dlq.c), named
 * by the top (kafka.c). Private to the folder. */
#ifndef QREL_KAFKA_DLQ_H
#define QREL_KAFKA_DLQ_H

#include "dlq_kind.h"

extern const struct dlq_kind kafka_dlq;

#endif
