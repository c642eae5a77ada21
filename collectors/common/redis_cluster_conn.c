/* redis_cluster_conn.c: a source's connections to a Redis Cluster (redis_cluster.h): the slot map
 * learnt with CLUSTER SLOTS from a seed, or from a master known before (the seeds may have gone
 * since), and one connection per master, kept across scrapes like a single server's. */
#include "redis_cluster.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static void close_all(struct redis_cluster *cl)
{
    for (size_t i = 0; cl->conns && i < cl->map.nnodes; i++)
        redis_conn_close(cl->conns[i]);
    free(cl->conns);
    cl->conns = NULL;
}

void redis_cluster_forget(struct redis_cluster *cl)
{
    close_all(cl);
    cl->have_map = 0; /* the nodes stay: refresh asks them when no seed answers */
}

void redis_cluster_free(struct redis_cluster *cl)
{
    close_all(cl);
    redis_cluster_map_free(&cl->map);
    cl->have_map = 0;
}

struct slots_run {
    const char *host;
    struct redis_cluster_map *map;
};

static int slots_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    struct slots_run *run = ctx;
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > 300 ? 300 : r->len);
        return err_set(e, ERR_QUERY, "CLUSTER SLOTS: %.*s (is cluster mode on?)", n, r->str);
    }
    return redis_cluster_parse_slots(r, run->host, run->map, e);
}

/* The map as address tells it, into *m. */
static int ask_slots(const char *address, const char *source, const struct redis_settings *rs,
                     const struct deadline *dl, struct redis_cluster_map *m, struct err *e)
{
    struct redis_address a;
    if (redis_address_parse(address, &a, e))
        return -1;
    struct redis_conn *c =
        redis_conn_open_tls(source, address, rs->username, rs->password, 0, rs->tls, dl, e);
    int rc = -1;
    if (c) {
        struct redis_pipe *p = redis_pipe_new();
        redis_pipe_addv(p, "CLUSTER", "SLOTS", NULL);
        struct slots_run run = {a.host ? a.host : "", m};
        rc = redis_pipe_exec_each(c, p, dl, rs->max_response_bytes, slots_reply, &run, e);
        if (rc && e->code != ERR_CONNECT && e->code != ERR_TIMEOUT)
            err_prefix(e, "%s", redis_conn_label(c));
        redis_pipe_free(p);
        redis_conn_close(c);
    }
    redis_address_free(&a);
    return rc;
}

int redis_cluster_refresh(struct redis_cluster *cl, const char *source,
                          const struct redis_settings *rs, const struct deadline *dl, struct err *e)
{
    if (cl->have_map)
        return 0;
    close_all(cl);
    struct redis_cluster_map fresh;
    memset(&fresh, 0, sizeof fresh);
    size_t nseeds = rs->addresses ? rs->naddresses : 1;
    size_t ntry = nseeds + cl->map.nnodes;
    int rc = -1;
    for (size_t i = 0; i < ntry && rc; i++) {
        const char *addr = i < nseeds ? (rs->addresses ? rs->addresses[i] : rs->address)
                                      : cl->map.nodes[i - nseeds];
        rc = ask_slots(addr, source, rs, dl, &fresh, e);
        if (rc && (e->code == ERR_AUTH || deadline_expired(dl)))
            break; /* the same credentials go to every node; no time left for another */
    }
    if (rc) {
        redis_cluster_map_free(&fresh);
        return -1;
    }
    if (fresh.nnodes == 0) {
        redis_cluster_map_free(&fresh);
        return err_set(e, ERR_QUERY, "redis \"%s\": CLUSTER SLOTS: no slot is served", source);
    }
    redis_cluster_map_free(&cl->map);
    cl->map = fresh;
    cl->conns = xcalloc(cl->map.nnodes, sizeof *cl->conns);
    cl->have_map = 1;
    return 0;
}

struct redis_conn *redis_cluster_conn(struct redis_cluster *cl, size_t i, const char *source,
                                      const struct redis_settings *rs, const struct deadline *dl,
                                      struct err *e)
{
    if (!cl->conns[i])
        cl->conns[i] = redis_conn_open_tls(source, cl->map.nodes[i], rs->username, rs->password, 0,
                                           rs->tls, dl, e);
    return cl->conns[i];
}

void redis_cluster_pipe_asking(struct redis_pipe *p, int asking)
{
    if (asking)
        redis_pipe_addv(p, "ASKING", NULL);
}

struct asking_run {
    redis_reply_fn fn;
    void *ctx;
};

/* Replies 0, 2, 4, ... are ASKING's (+OK), 1, 3, 5, ... the commands'. */
static int asking_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct asking_run *run = ctx;
    if (i % 2 == 1)
        return run->fn(run->ctx, i / 2, r, e);
    if (r->type == REDIS_REPLY_STATUS)
        return 0;
    return err_set(e, ERR_QUERY, "ASKING: %.300s",
                   r->type == REDIS_REPLY_ERROR ? r->str : redis_reply_type_name(r));
}

int redis_cluster_exec_each(struct redis_conn *c, struct redis_pipe *p, int asking,
                            const struct deadline *dl, size_t max_bytes, redis_reply_fn fn,
                            void *ctx, struct err *e)
{
    if (!asking)
        return redis_pipe_exec_each(c, p, dl, max_bytes, fn, ctx, e);
    struct asking_run run = {fn, ctx};
    return redis_pipe_exec_each(c, p, dl, max_bytes, asking_reply, &run, e);
}
