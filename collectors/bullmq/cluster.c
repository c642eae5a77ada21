/* bullmq/cluster.c: a `bullmq` source with cluster: true (cluster.h). BullMQ on a cluster keeps
 * every key of one queue in one hash slot (a hash-tagged prefix or queue name), so a queue is
 * read whole on the master of that slot, exactly as on a single server: every master in turn
 * finds its queues (SCAN on its own keys) and reads them with its own TIME. A master whose reply
 * is MOVED or ASK (a replica took over, a slot moved) ends its part before anything of it is
 * kept; the map is learnt again and the masters not read yet are read by it within the same
 * deadline, so a failover between two scrapes costs nothing and one during a scrape costs at
 * most that scrape. */
#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"

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

int bullmq_cluster_ask_note(struct bullmq_asks *a, const struct redis_cluster_map *map,
                            size_t index, const redisReply *r, int *stale)
{
    struct redis_redirect rd;
    if (!(redis_reply_is_error(r, "ASK ") || redis_reply_is_error(r, "MOVED ")) ||
        !redis_cluster_parse_redirect(r->str, r->len, &rd))
        return 0;
    if (!rd.ask) {
        if (redis_cluster_node_at(map, rd.address) == REDIS_CLUSTER_NO_NODE)
            return 0; /* a node new to the map (a failover): cluster.c learns it again */
        *stale = 1;
    }
    a->v = xrealloc(a->v, (a->n + 1) * sizeof *a->v);
    a->v[a->n].index = index;
    memcpy(a->v[a->n].address, rd.address, sizeof rd.address);
    a->n++;
    return 1;
}

void bullmq_asks_free(struct bullmq_asks *a)
{
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

struct follow_run {
    const size_t *index; /* the commands' own indexes, in the order sent */
    redis_reply_fn fn;
    void *arg;
};

static int follow_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct follow_run *run = ctx;
    return run->fn(run->arg, run->index[i], r, e);
}

int bullmq_cluster_follow(struct redis_cluster *cl, const char *source,
                          const struct redis_settings *rs, struct bullmq_asks *a,
                          void (*add)(void *arg, size_t index, struct redis_pipe *p),
                          redis_reply_fn fn, void *arg, const struct deadline *dl, struct err *e)
{
    size_t *index = xcalloc(a->n ? a->n : 1, sizeof *index);
    struct redis_pipe *p = redis_pipe_new();
    int rc = 0;
    /* One node at a time: the first ASK not followed yet names it. */
    unsigned char *done = xcalloc(a->n ? a->n : 1, 1);
    for (size_t first = 0; first < a->n && rc == 0; first++) {
        if (done[first])
            continue;
        const char *address = a->v[first].address;
        unsigned node = redis_cluster_node_at(&cl->map, address);
        if (node == REDIS_CLUSTER_NO_NODE) {
            rc = err_set(e, ERR_QUERY, "redis \"%s\": ASK to %s, which is no master of the map",
                         source, address);
            break;
        }
        struct redis_conn *conn = redis_cluster_conn(cl, node, source, rs, dl, e);
        if (!conn) {
            rc = -1;
            break;
        }
        redis_pipe_reset(p);
        size_t n = 0;
        for (size_t i = first; i < a->n; i++) {
            if (done[i] || strcmp(a->v[i].address, address) != 0)
                continue;
            done[i] = 1;
            index[n++] = a->v[i].index;
            redis_cluster_pipe_asking(p, 1);
            add(arg, a->v[i].index, p);
        }
        if (log_enabled(LOG_DEBUG)) {
            char cmds[32];
            snprintf(cmds, sizeof cmds, "%zu", n);
            log_kv(LOG_DEBUG, "following ASK", "source", source, "node", address, "commands", cmds,
                   NULL);
        }
        struct follow_run run = {index, fn, arg};
        rc = redis_cluster_exec_each(conn, p, 1, dl, rs->max_response_bytes, follow_reply, &run, e);
    }
    free(done);
    free(index);
    redis_pipe_free(p);
    bullmq_asks_free(a);
    return rc;
}
