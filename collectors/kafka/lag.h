/* kafka/lag.h: the collection of a `kafka` source (collectors/kafka/lag.c): consumer-group lag
 * in messages and in seconds, and the size and ages of the dead-letter topics. Private to the
 * folder: the top (kafka.c) names it as its collect hook. */
#ifndef QREL_KAFKA_LAG_H
#define QREL_KAFKA_LAG_H

#include "collector.h"
#include "deadline.h"
#include "err.h"
#include "metrics.h"

/* collect() of collector.h, on c's struct kafka_state. */
int kafka_lag_collect(struct collector *c, const struct deadline *dl, struct metric_set *out,
                      struct err *e);

#endif
