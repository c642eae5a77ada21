/* laravel_redis.c: the Redis side of Laravel's failed_jobs (laravel_redis.h). */
#include "laravel_redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* Laravel 8's LuaScripts::push(), command for command: the job, then the notify list's token. */
static const char PUSH_SCRIPT[] = "redis.call('rpush', KEYS[1], ARGV[1])\n"
                                  "redis.call('rpush', KEYS[2], 1)\n";

struct laravel_redis *laravel_redis_configure(struct cfg_node *map, const char *source,
                                              struct err *e)
{
    struct laravel_redis *r = xcalloc(1, sizeof *r);
    char where[300];
    snprintf(where, sizeof where, "the redis block of preset \"laravel\" of source \"%s\"", source);
    r->source = xstrdup(source);
    /* Laravel's two keys go in one script: on a cluster both would need one slot. */
    r->j.rs.no_cluster = "qrel dlq pushes a Laravel job with one script over two keys, which "
                         "Redis Cluster runs only when they share a slot";
    struct cfg_node *cnode = NULL;
    if (redis_settings_read(map, &r->j.rs, e) ||
        cfg_get_node(map, "connection", CFG_SCALAR, &cnode, e) ||
        cfg_get_str(map, "connection", 0, &r->connection, e) ||
        cfg_get_str(map, "prefix", 0, &r->prefix, e) || cfg_finish(map, where, e) ||
        redis_settings_check(map, &r->j.rs, e))
        goto fail;
    if (!r->connection)
        r->connection = xstrdup(LARAVEL_REDIS_CONNECTION);
    if (!*r->connection) {
        cfg_error(e, cnode, "connection: want the name of the Redis queue connection");
        goto fail;
    }
    if (!r->prefix)
        r->prefix = xstrdup(LARAVEL_REDIS_PREFIX);
    r->pipe = redis_pipe_new();
    return r;
fail:
    laravel_redis_free(r);
    return NULL;
}

void laravel_redis_free(struct laravel_redis *r)
{
    if (!r)
        return;
    redis_job_free(&r->j);
    redis_pipe_free(r->pipe);
    free(r->connection);
    free(r->prefix);
    free(r->source);
    free(r);
}

/* The script returns nothing: a nil reply is success, an error reply (a refused ACL, OOM) is
 * the push's failure. */
static int push_reply(void *ctx, size_t i, const redisReply *rep, struct err *e)
{
    (void)ctx;
    (void)i;
    if (rep->type == REDIS_REPLY_ERROR)
        return redis_job_reply_error(rep, "EVAL (Laravel's push)", e);
    return 0;
}

int laravel_redis_push(struct laravel_redis *r, const char *queue, const char *payload,
                       const struct deadline *dl, struct err *e)
{
    char *key = xasprintf("%squeues:%s", r->prefix, queue);
    char *notify = xasprintf("%s:notify", key);
    redis_pipe_reset(r->pipe);
    redis_pipe_addv(r->pipe, "EVAL", PUSH_SCRIPT, "2", key, notify, payload, (char *)NULL);
    int rc = redis_job_run_pipe(&r->j, r->source, r->pipe, push_reply, NULL, dl, e);
    free(key);
    free(notify);
    return rc;
}
