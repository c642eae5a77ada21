/* bullmq/cluster.c: a `bullmq` source with cluster: true (cluster.h). BullMQ on a cluster keeps
 * every key of one queue in one hash slot (a hash-tagged prefix or queue name), so a queue is
 * read whole on the master of that slot, exactly as on a single server: every master in turn
 * finds its queues (SCAN on its own keys) and reads them with its own TIME. A master whose reply
 * is MOVED or ASK (a replica took over, a slot moved) ends its part before anything of it is
 * kept; the map is learnt again and the masters not read yet are read by it within the same
 * deadline, so a failover between two scrapes costs nothing and one during a scrape costs at
 * most that scrape. */
#include "cluster.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static int was_read(char **done, size_t ndone, const char *node)
{
    for (size_t i = 0; i < ndone; i++)
        if (strcmp(done[i], node) == 0)
            return 1;
    return 0;
}

int bullmq_cluster_collect(struct redis_cluster *cl, const char *source,
                           const struct redis_settings *rs, const struct deadline *dl,
                           bullmq_node_fn fn, void *arg, unsigned long long *round_trips,
                           struct err *e)
{
    char **done = NULL; /* the masters read, by address: a new map may number them anew */
    size_t ndone = 0;
    unsigned long long trips = 0;
    int rc = -1;
    /* Twice at most: the map as it was, then once learnt again after a redirect. */
    for (int round = 0; round < 2; round++) {
        if (redis_cluster_refresh(cl, source, rs, dl, e))
            goto out;
        int redirected = 0;
        for (size_t i = 0; i < cl->map.nnodes; i++) {
            if (was_read(done, ndone, cl->map.nodes[i]))
                continue;
            struct redis_conn *conn = redis_cluster_conn(cl, i, source, rs, dl, e);
            if (!conn)
                goto out;
            unsigned long long before = redis_conn_stats(conn)->round_trips;
            int redir = 0;
            int failed = fn(arg, conn, &cl->map, i, dl, &redir, e);
            trips += redis_conn_stats(conn)->round_trips - before;
            if (failed) {
                if (!redir || round == 1)
                    goto out;
                redirected = 1;
                break;
            }
            done = xrealloc(done, (ndone + 1) * sizeof *done);
            done[ndone++] = xstrdup(cl->map.nodes[i]);
        }
        if (!redirected) {
            rc = 0;
            break;
        }
        redis_cluster_forget(cl);
    }
out:
    if (rc)
        redis_cluster_forget(cl); /* a node may hold half a reply: afresh next time */
    else
        *round_trips = trips;
    for (size_t i = 0; i < ndone; i++)
        free(done[i]);
    free(done);
    return rc;
}
