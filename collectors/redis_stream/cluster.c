/* redis_stream/cluster.c: a `redis_stream` source with cluster: true (scrape.h). Every master is
 * read as a single server would be, with its own three pipelines: its SCAN rounds find the
 * streams of its slots, a named stream is read on the master serving its slot, and its TIME
 * dates its own entries. A master that answers XINFO GROUPS with MOVED or ASK (it failed over to
 * a replica, or a slot moved) ends its pass before anything of it was emitted; the map is then
 * learnt again and the masters not read yet are read by it, within the same deadline, so a
 * failover between two scrapes costs nothing and one during a scrape costs at most that scrape. */
#include "scrape.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* The three steps on master i of the map. */
static int scrape_master(struct collector *c, struct state *st, size_t i, const struct deadline *dl,
                         struct metric_set *out, size_t *truncated, struct err *e)
{
    st->conn = redis_cluster_conn(&st->cl, i, c->name, &st->rs, dl, e);
    if (!st->conn)
        return -1;
    st->cl_node = i;
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    int64_t now_ms = 0;
    struct redis_pipe *p = redis_pipe_new();
    int rc = -1;
    if (redis_stream_resolve_targets(c, st, p, dl, &sc, e) ||
        redis_stream_read_groups(st, p, dl, &sc, &now_ms, e) ||
        redis_stream_read_details(st, p, dl, &sc, now_ms, out, truncated, e))
        goto out;
    entry_skips_emit(&sc.skips, out);
    st->cl_excluded += sc.excluded;
    rc = 0;
out:
    redis_pipe_free(p);
    redis_stream_scrape_free(&sc);
    st->conn = NULL; /* the cluster's, not the source's */
    return rc;
}

static int was_read(char **done, size_t ndone, const char *node)
{
    for (size_t i = 0; i < ndone; i++)
        if (strcmp(done[i], node) == 0)
            return 1;
    return 0;
}

int redis_stream_cluster_scrape(struct collector *c, const struct deadline *dl,
                                struct metric_set *out, size_t *truncated, struct err *e)
{
    struct state *st = c->priv;
    char **done = NULL; /* the masters read, by address */
    size_t ndone = 0;
    int rc = -1;
    st->cl_excluded = 0;
    /* Twice at most: the map as it was, then once learnt again after a redirect. */
    for (int round = 0; round < 2; round++) {
        if (redis_cluster_refresh(&st->cl, c->name, &st->rs, dl, e))
            goto out;
        int redirected = 0;
        for (size_t i = 0; i < st->cl.map.nnodes; i++) {
            if (was_read(done, ndone, st->cl.map.nodes[i]))
                continue;
            st->redirected = 0;
            if (scrape_master(c, st, i, dl, out, truncated, e)) {
                if (!st->redirected || round == 1)
                    goto out;
                redirected = 1;
                break;
            }
            done = xrealloc(done, (ndone + 1) * sizeof *done);
            done[ndone++] = xstrdup(st->cl.map.nodes[i]);
        }
        if (!redirected) {
            rc = 0;
            break;
        }
        redis_cluster_forget(&st->cl);
    }
out:
    if (rc)
        redis_cluster_forget(&st->cl); /* a node may hold half a reply: afresh next time */
    for (size_t i = 0; i < ndone; i++)
        free(done[i]);
    free(done);
    return rc;
}

struct redis_conn *redis_stream_cluster_conn_for(struct collector *c, const char *key,
                                                 const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    if (redis_cluster_refresh(&st->cl, c->name, &st->rs, dl, e))
        return NULL;
    unsigned n = redis_cluster_node_of(&st->cl.map, key, strlen(key));
    if (n == REDIS_CLUSTER_NO_NODE) {
        err_set(e, ERR_QUERY, "redis \"%s\": no master serves the slot of \"%.200s\"", c->name,
                key);
        return NULL;
    }
    return redis_cluster_conn(&st->cl, n, c->name, &st->rs, dl, e);
}
