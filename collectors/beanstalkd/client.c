/* client.c: the plumbing beanstalkd.c and dlq.c share (client.h). */
#include "client.h"

int beanstalkd_run(struct collector *c, const char *const *cmds, size_t n,
                   const struct deadline *dl, beanstalk_reply_fn fn, void *ctx, struct err *e)
{
    struct state *st = c->priv;
    if (!st->conn && !(st->conn = beanstalk_conn_open(c->name, st->address, dl, e)))
        return -1;
    if (beanstalk_exec(st->conn, cmds, n, dl, (size_t)st->max_response_bytes, fn, ctx, e) == 0)
        return 0;
    beanstalk_conn_close(st->conn);
    st->conn = NULL;
    return -1;
}
