/* client.c: the plumbing sidekiq.c and dlq.c share (client.h). */
#include "client.h"

#include <string.h>

#include "alloc.h"

char *sidekiq_key(const struct state *st, const char *a, const char *b)
{
    return xstrjoin(st->ns, a, b ? b : "", (char *)NULL);
}

int sidekiq_run_pipe(struct collector *c, struct redis_pipe *p, redis_reply_fn fn, void *ctx,
                     const struct deadline *dl, struct err *e)
{
    struct state *st = c->priv;
    return redis_job_run_pipe(&st->job, c->name, p, fn, ctx, dl, e);
}
