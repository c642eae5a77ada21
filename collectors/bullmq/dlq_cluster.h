/* bullmq/dlq_cluster.h: `qrel dlq` on a bullmq source with cluster: true (dlq_cluster.c, and its
 * pure part dlq_cluster_reply.c), private to the folder and the unit test's. */
#ifndef QREL_BULLMQ_DLQ_CLUSTER_H
#define QREL_BULLMQ_DLQ_CLUSTER_H

#include <stddef.h>

#include "common/redis.h"
#include "common/redis_job.h"
#include "deadline.h"
#include "err.h"

/* What a cluster's error reply to a dead-letter command means. */
enum bullmq_dlq_cluster_reply {
    BULLMQ_DLQ_CLUSTER_OTHER,       /* no cluster error: the command's own reply */
    BULLMQ_DLQ_CLUSTER_MOVED,       /* MOVED <slot> <node>: the slot lives elsewhere now */
    BULLMQ_DLQ_CLUSTER_ASK,         /* ASK: the slot is migrating */
    BULLMQ_DLQ_CLUSTER_CROSSSLOT,   /* the command's keys are in different slots */
    BULLMQ_DLQ_CLUSTER_CLUSTERDOWN, /* the cluster (or the slot) is not served */
    BULLMQ_DLQ_CLUSTER_TRYAGAIN,    /* a multi-key command while its slot is being resharded */
};

/* dlq_cluster_reply.c: which of the above the len bytes of an error reply at msg are; for every
 * kind but OTHER, why (cap bytes) is a sentence saying what happened and that the command did
 * nothing, the reply's own text cut at 200 bytes. */
enum bullmq_dlq_cluster_reply bullmq_dlq_cluster_reply(const char *msg, size_t len, char *why,
                                                       size_t cap);

/* Makes j->conn the connection to the master that serves queue's keys (the slot of
 * <prefix>:<queue>:failed, which every key of the queue and the replay lock share), learning the
 * map from the seeds when there is no connection; a connection already open is kept (a MOVED says
 * when it is no longer the right one). 0, or -1 with e. */
int bullmq_dlq_cluster_route(struct redis_job *j, const char *source, const char *prefix,
                             const char *queue, const struct deadline *dl, struct err *e);

/* Runs p on j->conn (routed before) with fn on each reply, as redis_job_run_pipe does on a single
 * server, but a cluster's refusal (MOVED, ASK, CROSSSLOT, CLUSTERDOWN, TRYAGAIN) is an error
 * saying so and fn never sees it. When every reply was MOVED (nothing ran, fn saw nothing) and
 * moved is not NULL, *moved = 1: the caller may route again (the map learnt afresh) and rebuild
 * and run its commands once more. After any failure the connection is closed. 0 or -1 + e. */
int bullmq_dlq_cluster_run(struct redis_job *j, const char *source, struct redis_pipe *p,
                           redis_reply_fn fn, void *ctx, const struct deadline *dl, int *moved,
                           struct err *e);

#endif
