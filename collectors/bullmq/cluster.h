/* bullmq/cluster.h: the part of `kind: bullmq` that reads a Redis Cluster (cluster.c), private to
 * the folder. bullmq.c hands it the reading of one master as a callback, so cluster.c never calls
 * up into it. */
#ifndef QREL_BULLMQ_CLUSTER_H
#define QREL_BULLMQ_CLUSTER_H

#include <stddef.h>

#include "common/redis.h"
#include "common/redis_cluster.h"
#include "common/redis_settings.h"
#include "deadline.h"
#include "err.h"

/* Reads the queues that master `node` of map serves, on conn (that master's connection). 0, or
 * -1 with e set, and then *redirected = 1 when the failure was a reply of MOVED or ASK (the map
 * is stale). On failure nothing of this master's part may be kept. */
typedef int (*bullmq_node_fn)(void *arg, struct redis_conn *conn,
                              const struct redis_cluster_map *map, size_t node,
                              const struct deadline *dl, int *redirected, struct err *e);

/* Every master of the cluster once, each through fn; after a redirect the map is learnt again and
 * the masters not read yet are read by it, within the same deadline (twice at most). On success
 * *round_trips is the round trips the masters took. */
int bullmq_cluster_collect(struct redis_cluster *cl, const char *source,
                           const struct redis_settings *rs, const struct deadline *dl,
                           bullmq_node_fn fn, void *arg, unsigned long long *round_trips,
                           struct err *e);

#endif
