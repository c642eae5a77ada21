/* redis_stream/dlq.h: `qrel dlq`'s hooks for Redis streams (collectors/redis_stream/dlq.c),
 * named by the top (redis_stream.c). Private to the folder. */
#ifndef QREL_REDIS_STREAM_DLQ_H
#define QREL_REDIS_STREAM_DLQ_H

#include "dlq_kind.h"

extern const struct dlq_kind redis_stream_dlq;

#endif
