/* redis_stream/dlq.c: `qrel dlq`'s hooks for Redis streams (core/dlq_kind.h).
 *
 * A dead-letter stream is read with XLEN and XRANGE, which change nothing (no group reads it),
 * so there is no read_effect and nothing to release. A replay puts an entry back with XADD on
 * the stream it came from (the queue), carrying the dead-letter entry's fields in their order,
 * and only then removes it with XDEL. The entry gets a new id: Redis refuses ids below the
 * stream's last one, and consumers read by group position, not by id. */
#include "client.h"
#include "dlq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static int add_entries(const redisReply *r, const char *id_field, void *out, struct err *e)
{
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return err_set(e, ERR_PROTOCOL, "want an array of entries, got %s",
                       redis_reply_type_name(r));
    for (size_t k = 0; k < r->elements; k++)
        if (redis_stream_dlq_entry(r->element[k], id_field, dlq_batch_push(out), e))
            return err_prefix(e, "entry %zu", k + 1);
    return 0;
}

static int dlq_read(struct collector *c, const char *queue, const char *id_field, size_t max,
                    enum dlq_purpose purpose, const struct deadline *dl, struct dlq_batch *out,
                    struct err *e)
{
    (void)purpose; /* a removed entry is gone: a rerun cannot see it again */
    out->dead_letter_queue = redis_stream_client_read_dead(c, queue, id_field, max, dl, add_entries,
                                                           out, &out->total, e);
    if (!out->dead_letter_queue)
        return -1;
    out->origin = xstrdup(queue);
    return 0;
}

struct one_reply {
    const char *cmd;
    int want;
};

static int check_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    struct one_reply *o = ctx;
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > 300 ? 300 : r->len);
        return err_set(e, ERR_QUERY, "%s: %.*s", o->cmd, n, r->str);
    }
    if (!r || r->type != o->want)
        return err_set(e, ERR_PROTOCOL, "%s: unexpected reply (%s)", o->cmd,
                       redis_reply_type_name(r));
    return 0;
}

/* One command on the source's connection; its reply must be of type want. The connection is
 * dropped after any failure, as collect() does. */
static int run_one(struct collector *c, int argc, const char *const *argv, const size_t *argvlen,
                   int want, const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    if (!redis_stream_client_conn(c, dl, e))
        return -1;
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_add(p, argc, argv, argvlen);
    struct one_reply o = {argv[0], want};
    int rc = redis_pipe_exec_each(st->conn, p, dl, st->rs.max_response_bytes, check_reply, &o, e);
    redis_pipe_free(p);
    if (rc) {
        err_prefix(e, "%s", redis_conn_label(st->conn));
        redis_conn_close(st->conn);
        st->conn = NULL;
        return -1;
    }
    return 0;
}

static int dlq_requeue(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                       const struct deadline *dl, struct err *e)
{
    const struct redis_stream_fields *f = m->kind_data;
    if (!f || f->n == 0)
        return err_set(e, ERR_INTERNAL, "entry %s has no fields to put back", m->message_id);
    size_t argc = 3 + f->n;
    const char **argv = xcalloc(argc, sizeof *argv);
    size_t *argvlen = xcalloc(argc, sizeof *argvlen);
    argv[0] = "XADD";
    argv[1] = b->origin;
    argv[2] = "*";
    for (size_t i = 0; i < 3; i++)
        argvlen[i] = strlen(argv[i]);
    for (size_t i = 0; i < f->n; i++) {
        argv[3 + i] = f->v[i];
        argvlen[3 + i] = f->len[i];
    }
    int rc = run_one(c, (int)argc, argv, argvlen, REDIS_REPLY_STRING, dl, e);
    free(argv);
    free(argvlen);
    return rc ? err_prefix(e, "stream \"%.200s\"", b->origin) : 0;
}

static int dlq_remove(struct collector *c, struct dlq_batch *b, struct dlq_message *m,
                      const struct deadline *dl, struct err *e)
{
    const char *argv[] = {"XDEL", b->dead_letter_queue, m->message_id};
    /* Its count is not looked at: 0 means someone removed it meanwhile, which leaves it where
     * the replay wants it. */
    if (run_one(c, 3, argv, NULL, REDIS_REPLY_INTEGER, dl, e))
        return err_prefix(e, "dead-letter stream \"%.200s\"", b->dead_letter_queue);
    return 0;
}

/* No release, read_effect or cannot_replay: reading changes nothing and every entry can go back. */
const struct dlq_kind redis_stream_dlq = {.read = dlq_read,
                                          .requeue = dlq_requeue,
                                          .remove = dlq_remove,
                                          .message_free = redis_stream_fields_free};
