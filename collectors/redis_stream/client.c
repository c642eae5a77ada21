/* redis_stream/client.c: what the files of the `redis_stream` kind share to talk to Redis
 * (client.h): the source's connection, kept between scrapes and opened under a deadline when
 * there is none, and the read of a dead-letter stream (XLEN, then XRANGE a page at a time) that
 * the dead-letter join (redis_stream.c) and `qrel dlq` (dlq.c) both make. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

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

/* The connection a dead-letter stream is read on: on a cluster, the master of its slot. */
static struct redis_conn *dead_conn(struct collector *c, const char *dlq, const struct deadline *dl,
                                    struct err *e)
{
    struct state *st = c->priv;
    return st->rs.cluster ? redis_stream_cluster_conn_for(c, dlq, dl, e)
                          : redis_stream_client_conn(c, dl, e);
}

/* After a failed read of dlq on conn: e names both, and the connection is dropped. */
static void dead_failed(struct collector *c, struct redis_conn *conn, const char *dlq,
                        struct err *e)
{
    struct state *st = c->priv;
    err_prefix(e, "%s: dead-letter stream \"%.200s\"", redis_conn_label(conn), dlq);
    if (st->rs.cluster) {
        redis_cluster_forget(&st->cl);
    } else {
        redis_conn_close(st->conn);
        st->conn = NULL;
    }
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
    struct redis_conn *conn = dead_conn(c, dlq, dl, e);
    if (!conn) {
        free(dlq);
        return NULL;
    }
    struct dl_run run = {total, add, id_field, out, 0, ""};
    if (read_pages(conn, dlq, max, st->rs.max_response_bytes, dl, &run, e)) {
        dead_failed(c, conn, dlq, e);
        free(dlq);
        return NULL;
    }
    return dlq;
}

/* ---- a page at a time, for `qrel dlq` ---- */

/* Where a paged read is: "(<id>" of the last entry read ("" before the first page), and how
 * many entries the run may still read: the stream's length as it began (XLEN), less those read.
 * Entries are added at the stream's end, so what dies during the run (a replayed entry dead
 * again) is beyond what was there and left for the next run; the length, not the last id,
 * bounds the run, since XLEN and XRANGE are all a reading user needs (docs/dlq.md). */
struct dead_cursor {
    char last[64];
    size_t left;
};

int redis_stream_client_read_dead_page(struct collector *c, const char *queue, const char *id_field,
                                       size_t max, const struct deadline *dl,
                                       redis_stream_range_fn add, void *out, struct dlq_batch *b,
                                       struct err *e)
{
    struct state *st = c->priv;
    if (!b->dead_letter_queue) {
        const struct stream_spec *sp = redis_stream_spec_of(st, queue);
        if (!sp || !sp->dlq_tmpl)
            return err_set(e, ERR_CONFIG, "stream \"%.200s\" has no dead_letter_stream", queue);
        b->dead_letter_queue = redis_stream_dlq_name(sp->dlq_tmpl, queue);
    }
    if (!b->cursor)
        b->cursor = xcalloc(1, sizeof(struct dead_cursor));
    struct dead_cursor *cur = b->cursor;
    int first = !cur->last[0];
    if (!first && max > cur->left)
        max = cur->left;
    if (max == 0) {
        b->end = 1;
        return 0;
    }
    const char *dlq = b->dead_letter_queue;
    struct redis_conn *conn = dead_conn(c, dlq, dl, e);
    if (!conn)
        return -1;
    /* The first page goes with XLEN, as read_pages does it. */
    struct dl_run run = {&b->total, add, id_field, out, 0, ""};
    memcpy(run.last, cur->last, sizeof run.last);
    struct redis_pipe *p = redis_pipe_new();
    char count[24];
    snprintf(count, sizeof count, "%zu", max);
    if (first)
        redis_pipe_addv(p, "XLEN", dlq, NULL);
    redis_pipe_addv(p, "XRANGE", dlq, first ? "-" : cur->last, "+", "COUNT", count, NULL);
    int rc = redis_pipe_exec_each(conn, p, dl, st->rs.max_response_bytes, dl_reply, &run, e);
    redis_pipe_free(p);
    if (rc) {
        dead_failed(c, conn, dlq, e);
        return -1;
    }
    if (first)
        cur->left = b->total;
    cur->left = run.got < cur->left ? cur->left - run.got : 0;
    if (run.got)
        memcpy(cur->last, run.last, sizeof cur->last);
    else
        memcpy(cur->last, "(0-0", 5); /* started: an empty stream */
    if (run.got < max || cur->left == 0)
        b->end = 1;
    return 0;
}
