/* client.c: the plumbing sidekiq.c and dlq.c share (client.h). */
#include "client.h"

#include <string.h>

#include "alloc.h"
#include "common/redis_sentinel.h"

char *sidekiq_key(const struct state *st, const char *a, const char *b)
{
    return xasprintf("%s%s%s", st->ns, a, b ? b : "");
}

int sidekiq_run_pipe(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                     const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    struct redis_job *j = &st->job;
    if (!j->conn && !(j->conn = redis_sentinel_connect(c->name, &j->rs, dl, e)))
        return -1;
    if (redis_pipe_exec_each(j->conn, p, dl, j->rs.max_response_bytes, fn, ctx, e) == 0)
        return 0;
    const char *label = redis_conn_label(j->conn);
    if (strncmp(e->msg, label, strlen(label)) != 0)
        err_prefix(e, "%s", label);
    redis_conn_close(j->conn);
    j->conn = NULL;
    return -1;
}
