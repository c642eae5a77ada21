/* redis_stream/client.c: what the files of the `redis_stream` kind share to talk to Redis
 * (client.h): the source's connection, kept between scrapes and opened under a deadline when
 * there is none, and the read of a dead-letter stream (XLEN and XRANGE in one round trip) that
 * the dead-letter join (redis_stream.c) and `qrel dlq` (dlq.c) both make. */
#include "client.h"

#include <stdio.h>
#include <stdlib.h>

struct redis_conn *redis_stream_client_conn(struct collector *c, const struct deadline *dl,
                                            struct err *e)
{
    struct state *st = c->priv;
    if (!st->conn)
        st->conn = redis_conn_open_tls(c->name, st->rs.address, st->rs.username, st->rs.password,
                                       st->rs.db, st->rs.tls, dl, e);
    return st->conn;
}

struct dl_run {
    size_t *total;
    redis_stream_range_fn add; /* gets the XRANGE reply */
    const char *id_field;
    void *out;
};

/* Reply 0 is XLEN, reply 1 the XRANGE of the dead-letter stream. */
static int dl_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct dl_run *run = ctx;
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > 300 ? 300 : r->len);
        return err_set(e, ERR_QUERY, "%s: %.*s", i == 0 ? "XLEN" : "XRANGE", n, r->str);
    }
    if (i == 0) {
        long long len;
        if (redis_stream_parse_len(r, &len, e))
            return err_prefix(e, "XLEN");
        *run->total = (size_t)len;
        return 0;
    }
    if (run->add(r, run->id_field, run->out, e))
        return err_prefix(e, "XRANGE");
    return 0;
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
    if (!redis_stream_client_conn(c, dl, e))
        return NULL;
    char *dlq = redis_stream_dlq_name(sp->dlq_tmpl, queue);
    char count[24];
    snprintf(count, sizeof count, "%zu", max);
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "XLEN", dlq, NULL);
    redis_pipe_addv(p, "XRANGE", dlq, "-", "+", "COUNT", count, NULL);
    struct dl_run run = {total, add, id_field, out};
    int rc = redis_pipe_exec_each(st->conn, p, dl, st->rs.max_response_bytes, dl_reply, &run, e);
    redis_pipe_free(p);
    if (rc) {
        err_prefix(e, "%s: dead-letter stream \"%.200s\"", redis_conn_label(st->conn), dlq);
        redis_conn_close(st->conn);
        st->conn = NULL;
        free(dlq);
        return NULL;
    }
    return dlq;
}
