/* redis_stream/client.c: what the files of the `redis_stream` kind share to talk to Redis
 * (client.h): the source's connection, kept between scrapes and opened under a deadline when
 * there is none, and the read of a dead-letter stream (XLEN, then XRANGE a page at a time) that
 * the dead-letter join (redis_stream.c) and `qrel dlq` (dlq.c) both make. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/redis_sentinel.h"

struct redis_conn *redis_stream_client_conn(struct collector *c, const struct deadline *dl,
                                            struct err *e)
{
    struct state *st = c->priv;
    if (st->rs.cluster) { /* qrel dlq moves entries between keys of one server */
        err_set(e, ERR_CONFIG,
                "redis \"%s\": qrel dlq does not run on a Redis Cluster (cluster: "
                "true)",
                c->name);
        return NULL;
    }
    if (!st->conn)
        st->conn = redis_sentinel_connect(c->name, &st->rs, dl, e);
    return st->conn;
}

struct dl_run {
    size_t *total;
    redis_stream_range_fn add; /* gets the XRANGE reply */
    const char *id_field;
    void *out;
    size_t got;    /* entries of the last page */
    char last[64]; /* the id of its last entry: the next page starts after it */
};

/* The XLEN reply (first page only), then one page of the dead-letter stream's XRANGE. */
static int dl_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct dl_run *run = ctx;
    int is_len = i == 0 && !run->last[0];
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > 300 ? 300 : r->len);
        return err_set(e, ERR_QUERY, "%s: %.*s", is_len ? "XLEN" : "XRANGE", n, r->str);
    }
    if (is_len) {
        long long len;
        if (redis_stream_parse_len(r, &len, e))
            return err_prefix(e, "XLEN");
        *run->total = (size_t)len;
        return 0;
    }
    if (run->add(r, run->id_field, run->out, e))
        return err_prefix(e, "XRANGE");
    run->got = r->elements;
    const redisReply *x = r->elements ? r->element[r->elements - 1] : NULL;
    const redisReply *id = x && x->type == REDIS_REPLY_ARRAY && x->elements ? x->element[0] : NULL;
    if (x && (!id || id->type != REDIS_REPLY_STRING))
        return err_set(e, ERR_PROTOCOL, "XRANGE: want [id, [field, value, ...]] entries");
    if (id && id->len + 2 > sizeof run->last)
        return err_set(e, ERR_PROTOCOL, "XRANGE: an entry id of %zu bytes", id->len);
    if (id)
        snprintf(run->last, sizeof run->last, "(%s", id->str);
    return 0;
}

/* One XRANGE reply per page, so that the reply tree held while its entries are copied is at most
 * this many entries, however many are read. */
#define DEAD_PAGE 1000

/* Reads the pages of dlq up to max entries, the first with XLEN. 0, or -1 with e set. */
static int read_pages(struct redis_conn *conn, const char *dlq, size_t max, size_t max_bytes,
                      const struct deadline *dl, struct dl_run *run, struct err *e)
{
    struct redis_pipe *p = redis_pipe_new();
    int rc = 0;
    for (size_t read = 0; rc == 0 && read < max;) {
        size_t want = max - read < DEAD_PAGE ? max - read : DEAD_PAGE;
        char count[24];
        snprintf(count, sizeof count, "%zu", want);
        redis_pipe_reset(p);
        if (!run->last[0])
            redis_pipe_addv(p, "XLEN", dlq, NULL);
        redis_pipe_addv(p, "XRANGE", dlq, run->last[0] ? run->last : "-", "+", "COUNT", count,
                        NULL);
        run->got = 0;
        rc = redis_pipe_exec_each(conn, p, dl, max_bytes, dl_reply, run, e);
        if (run->got < want)
            break; /* the stream's end */
        read += run->got;
    }
    redis_pipe_free(p);
    return rc;
}

char *redis_stream_client_read_dead(struct collector *c, const char *queue, const char *id_field,
                                    size_t max, const struct deadline *dl,
                                    redis_stream_range_fn add, void *out, size_t *total,
                                    struct err *e)
{
    struct state *st = c->priv;
    const struct stream_spec *sp = redis_stream_spec_of(st, queue);
    if (!sp || !sp->dlq_tmpl) {
        err_set(e, ERR_CONFIG, "stream \"%.200s\" has no dead_letter_stream", queue);
        return NULL;
    }
    char *dlq = redis_stream_dlq_name(sp->dlq_tmpl, queue);
    /* On a cluster, the dead-letter stream is read on the master of its slot. */
    struct redis_conn *conn = st->rs.cluster ? redis_stream_cluster_conn_for(c, dlq, dl, e)
                                             : redis_stream_client_conn(c, dl, e);
    if (!conn) {
        free(dlq);
        return NULL;
    }
    struct dl_run run = {total, add, id_field, out, 0, ""};
    int rc = read_pages(conn, dlq, max, st->rs.max_response_bytes, dl, &run, e);
    if (rc) {
        err_prefix(e, "%s: dead-letter stream \"%.200s\"", redis_conn_label(conn), dlq);
        if (st->rs.cluster) {
            redis_cluster_forget(&st->cl);
        } else {
            redis_conn_close(st->conn);
            st->conn = NULL;
        }
        free(dlq);
        return NULL;
    }
    return dlq;
}
