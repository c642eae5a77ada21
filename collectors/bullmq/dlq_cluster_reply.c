/* bullmq/dlq_cluster_reply.c: the pure part of `qrel dlq` on a Redis Cluster (dlq_cluster.h):
 * what a cluster's error reply to a dead-letter command means, and the sentence that says so. No
 * I/O. */
#include "dlq_cluster.h"

#include <stdio.h>
#include <string.h>

#define REPLY_TEXT 200 /* of a server's error text in a message */

enum bullmq_dlq_cluster_reply bullmq_dlq_cluster_reply(const char *msg, size_t len, char *why,
                                                       size_t cap)
{
    static const struct {
        const char *prefix;
        enum bullmq_dlq_cluster_reply kind;
        const char *what;
    } known[] = {
        {"MOVED ", BULLMQ_DLQ_CLUSTER_MOVED,
         "the queue's slot is served by another master now (a failover or a resharding)"},
        {"ASK ", BULLMQ_DLQ_CLUSTER_ASK,
         "the queue's slot is migrating to another master: run it again once the migration "
         "ends"},
        {"CROSSSLOT", BULLMQ_DLQ_CLUSTER_CROSSSLOT,
         "the keys of one command are in different hash slots: the prefix or the queue name "
         "needs a hash tag"},
        {"CLUSTERDOWN", BULLMQ_DLQ_CLUSTER_CLUSTERDOWN,
         "the cluster does not serve the queue's slot now"},
        {"TRYAGAIN", BULLMQ_DLQ_CLUSTER_TRYAGAIN,
         "the queue's slot is being resharded: run it again once that ends"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        size_t n = strlen(known[i].prefix);
        if (len < n || memcmp(msg, known[i].prefix, n) != 0)
            continue;
        int shown = (int)(len > REPLY_TEXT ? REPLY_TEXT : len);
        snprintf(why, cap, "%.*s: %s; the command did nothing", shown, msg, known[i].what);
        return known[i].kind;
    }
    return BULLMQ_DLQ_CLUSTER_OTHER;
}
