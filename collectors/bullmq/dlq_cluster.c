/* bullmq/dlq_cluster.c: `qrel dlq` on a bullmq source with cluster: true (dlq_cluster.h).
 *
 * Every key a replay of one queue touches is in one hash slot: BullMQ's own keys
 * (<prefix>:<queue>:failed, wait, meta, the job hashes, ...) because the prefix or the queue name
 * carries a hash tag (configure and dead_letter_validate refuse a queue without one), and the
 * replay lock qrel:replay-lock:<prefix>:<queue>:failed because "qrel:replay-lock:" holds no "{",
 * so its hash tag is the failed set's. So the dead-letter hooks talk to one node, the master of
 * that slot, found as the scrape finds masters (CLUSTER SLOTS asked of the seeds), and each
 * command, the move's EVAL included, runs there whole. The connection is the source's redis_job
 * connection, which the scrape does not use on a cluster (it keeps one per master in its own
 * state); it is kept across the hooks of one run and across the exporter's join reads, and a
 * MOVED (a failover, a slot moved, another queue's slot) closes it, so the next route learns the
 * map again. Anything else a cluster refuses with (ASK while a slot migrates, CROSSSLOT,
 * CLUSTERDOWN, TRYAGAIN) ends the hook with a message saying what and that the command did
 * nothing: qrel dlq does not follow a migration half-way. */
#include "dlq_cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/redis_cluster.h"
#include "log.h"

int bullmq_dlq_cluster_route(struct redis_job *j, const char *source, const char *prefix,
                             const char *queue, const struct deadline *dl, struct err *e)
{
    if (j->conn)
        return 0;
    struct redis_cluster cl;
    memset(&cl, 0, sizeof cl);
    if (redis_cluster_refresh(&cl, source, &j->rs, dl, e)) {
        redis_cluster_free(&cl);
        return -1;
    }
    char *failed = xasprintf("%s:%s:failed", prefix, queue);
    unsigned slot = redis_cluster_key_slot(failed, strlen(failed));
    unsigned node = cl.map.owner[slot];
    int rc = 0;
    if (node == REDIS_CLUSTER_NO_NODE) {
        rc = err_set(e, ERR_QUERY,
                     "redis \"%s\": no master serves slot %u of queue \"%.200s\" (the cluster's "
                     "map has a hole): nothing was read or moved",
                     source, slot, queue);
    } else {
        j->conn = redis_conn_open_tls(source, cl.map.nodes[node], j->rs.username, j->rs.password, 0,
                                      j->rs.tls, dl, e);
        if (!j->conn)
            rc = -1;
        else if (log_enabled(LOG_DEBUG)) {
            char s[16];
            snprintf(s, sizeof s, "%u", slot);
            log_kv(LOG_DEBUG, "qrel dlq: the queue's slot is on this master", "source", source,
                   "queue", queue, "slot", s, "node", cl.map.nodes[node], NULL);
        }
    }
    free(failed);
    redis_cluster_free(&cl);
    return rc;
}

struct guard {
    redis_reply_fn fn;
    void *ctx;
    size_t seen, moved; /* replies handed to fn; MOVED replies */
    char why[400];      /* the first MOVED's sentence */
};

static int guard_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct guard *g = ctx;
    char why[400];
    enum bullmq_dlq_cluster_reply k =
        r->type == REDIS_REPLY_ERROR ? bullmq_dlq_cluster_reply(r->str, r->len, why, sizeof why)
                                     : BULLMQ_DLQ_CLUSTER_OTHER;
    if (k == BULLMQ_DLQ_CLUSTER_MOVED) {
        if (!g->moved++)
            memcpy(g->why, why, sizeof why);
        return 0; /* read on: the rest of a MOVED pipeline says MOVED too */
    }
    if (k != BULLMQ_DLQ_CLUSTER_OTHER)
        return err_set(e, ERR_QUERY, "%s", why);
    if (g->moved)
        return 0; /* after a MOVED nothing reaches fn: the pipeline fails below */
    g->seen++;
    return g->fn(g->ctx, i, r, e);
}

int bullmq_dlq_cluster_run(struct redis_job *j, const char *source, struct redis_pipe *p,
                           redis_reply_fn fn, void *ctx, const struct deadline *dl, int *moved,
                           struct err *e)
{
    if (!j->conn)
        return err_set(e, ERR_INTERNAL, "redis \"%s\": a dead-letter command before its route",
                       source);
    struct guard g = {.fn = fn, .ctx = ctx};
    int rc = redis_pipe_exec_each(j->conn, p, dl, j->rs.max_response_bytes, guard_reply, &g, e);
    if (rc == 0 && g.moved) {
        rc = err_set(e, ERR_QUERY, "%s", g.why);
        if (moved && g.seen == 0)
            *moved = 1;
    }
    return rc == 0 ? 0 : redis_job_drop(j, e);
}
