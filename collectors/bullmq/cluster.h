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

/* ASK: while a slot migrates, a key already moved is answered with ASK <slot> <node>; the command
 * goes once to that node after ASKING, and the map is kept. The ASKs of one pipeline, by the
 * index of the command that met each: */
struct bullmq_ask {
    size_t index;
    char address[300];
};
struct bullmq_asks {
    struct bullmq_ask *v;
    size_t n;
};

/* 1 when r is an ASK, or a MOVED naming a master of map (the slot moved to a master that may
 * have been read already: then *stale = 1, the map is to be learnt again after the scrape),
 * noted in a; else 0. */
int bullmq_cluster_ask_note(struct bullmq_asks *a, const struct redis_cluster_map *map,
                            size_t index, const redisReply *r, int *stale);
/* Sends every noted command again (add(arg, index, p) adds command index to p) to the node its
 * ASK names, ASKING in front, one pipeline per node, and hands fn(arg, index, reply, e) the
 * replies by the commands' own indexes; then empties a. 0, or -1 with e set (an ASK to a node
 * that is no master of the map: ERR_QUERY). */
int bullmq_cluster_follow(struct redis_cluster *cl, const char *source,
                          const struct redis_settings *rs, struct bullmq_asks *a,
                          void (*add)(void *arg, size_t index, struct redis_pipe *p),
                          redis_reply_fn fn, void *arg, const struct deadline *dl, struct err *e);
void bullmq_asks_free(struct bullmq_asks *a); /* empties it */

#endif
