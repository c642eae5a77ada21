/* redis_stream/cluster.c: a `redis_stream` source with cluster: true (scrape.h). Every master is
 * read as a single server would be, with its own three pipelines: its SCAN rounds find the
 * streams of its slots, a named stream is read on the master serving its slot, and its TIME
 * dates its own entries. A master that answers XINFO GROUPS with MOVED or ASK (it failed over to
 * a replica, or a slot moved) ends its pass before anything of it was emitted; the map is then
 * learnt again and the masters not read yet are read by it, within the same deadline, so a
 * failover between two scrapes costs nothing and one during a scrape costs at most that scrape.
 *
 * While a slot migrates, a named stream already moved is answered with ASK, and the importing
 * master's SCAN finds the streams moved to it in a slot the map still gives the old one: after
 * the master's pass, those are read where they are, after ASKING, once each, and the map is kept
 * (ask.c keeps the list). Their dead-letter streams are not read in that scrape. */
#include "scrape.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log.h"

/* The streams of st->asks that are on the node of the first, read there after ASKING (steps 2
 * and 3; a stream's dead-letter stream is not read so), then moved to st->asked. */
static int ask_pass(struct collector *c, struct state *st, const struct deadline *dl,
                    struct metric_set *out, size_t *truncated, struct err *e)
{
    const char *address = st->asks[0].address;
    unsigned node = redis_cluster_node_at(&st->cl.map, address);
    if (node == REDIS_CLUSTER_NO_NODE) /* the next scrape learns the map again */
        return err_set(e, ERR_QUERY, "redis \"%s\": ASK to %s, which is no master of the map",
                       c->name, address);
    st->conn = redis_cluster_conn(&st->cl, node, c->name, &st->rs, dl, e);
    if (!st->conn)
        return -1;
    st->cl_node = node;
    struct scrape sc;
    memset(&sc, 0, sizeof sc);
    for (size_t i = 0; i < st->nasks; i++) {
        const struct ask *a = &st->asks[i];
        if (strcmp(a->address, address) != 0)
            continue;
        size_t id = redis_stream_names_intern(&sc.names, a->name, strlen(a->name), NULL);
        redis_stream_target_add(&sc, id, a->spec, a->from_pattern);
        log_kv(LOG_DEBUG, "reading a stream after ASKING", "source", c->name, "stream", a->name,
               "node", address, NULL);
    }
    int64_t now_ms = 0;
    struct redis_pipe *p = redis_pipe_new();
    st->asking = 1;
    int rc = -1;
    if (redis_stream_read_groups(st, p, dl, &sc, &now_ms, e) ||
        redis_stream_read_details(st, p, dl, &sc, now_ms, out, truncated, e))
        goto out;
    entry_skips_emit(&sc.skips, out);
    /* done: into asked, out of asks */
    size_t kept = 0;
    char *addr = xstrdup(address);
    for (size_t i = 0; i < st->nasks; i++) {
        struct ask *a = &st->asks[i];
        if (strcmp(a->address, addr) != 0) {
            st->asks[kept++] = *a;
            continue;
        }
        st->asked = xrealloc(st->asked, (st->nasked + 1) * sizeof *st->asked);
        st->asked[st->nasked++] = a->name;
        free(a->address);
    }
    free(addr);
    st->nasks = kept;
    rc = 0;
out:
    st->asking = 0;
    redis_pipe_free(p);
    redis_stream_scrape_free(&sc);
    st->conn = NULL;
    return rc;
}

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
    redis_stream_asks_clear(st);
    if (redis_stream_resolve_targets(c, st, p, dl, &sc, e) ||
        redis_stream_read_groups(st, p, dl, &sc, &now_ms, e) ||
        redis_stream_read_details(st, p, dl, &sc, now_ms, out, truncated, e))
        goto out;
    entry_skips_emit(&sc.skips, out);
    st->cl_excluded += sc.excluded;
    while (st->nasks) /* what this master's pass met in migrating slots */
        if (ask_pass(c, st, dl, out, truncated, e)) {
            st->redirected = 0; /* the master's series are out: fail, do not read it again */
            goto out;
        }
    rc = 0;
out:
    redis_stream_asks_clear(st);
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
    st->cl_stale = 0;
    redis_stream_asked_clear(st);
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
    if (rc || st->cl_stale)
        redis_cluster_forget(&st->cl); /* a node may hold half a reply: afresh next time */
    for (size_t i = 0; i < ndone; i++)
        free(done[i]);
    free(done);
    redis_stream_asked_clear(st);
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
