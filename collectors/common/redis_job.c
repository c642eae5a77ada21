/* redis_job.c: the configure() tail and collect() frame of the Redis job kinds (redis_job.h). */
#include "redis_job.h"

#include <stdio.h>

#include "log.h"

int redis_job_finish(struct cfg_node *map, const char *source, struct redis_settings *rs,
                     struct err *e)
{
    char where[200];
    snprintf(where, sizeof where, "source \"%s\"", source);
    return cfg_finish(map, where, e) || redis_settings_check(map, rs, e) ? -1 : 0;
}

int redis_job_check_queues(struct cfg_node *map, char *const *queues, size_t nqueues, struct err *e)
{
    if (queues && nqueues == 0)
        return cfg_error(e, cfg_at(map, "queues"),
                         "queues: want at least one queue, or leave the key out for all");
    return 0;
}

void redis_job_free(struct redis_conn *conn, struct redis_pipe *pipe, struct redis_settings *rs)
{
    redis_conn_close(conn);
    redis_pipe_free(pipe);
    redis_settings_free(rs);
}

int redis_job_collect(struct redis_conn **conn, const char *source, const struct redis_settings *rs,
                      const struct deadline *dl,
                      int (*scrape)(void *arg, const struct deadline *dl, struct err *e), void *arg,
                      unsigned long long *round_trips, struct err *e)
{
    if (!*conn &&
        !(*conn = redis_conn_open(source, rs->address, rs->username, rs->password, rs->db, dl, e)))
        return -1;
    unsigned long long before = redis_conn_stats(*conn)->round_trips;
    if (scrape(arg, dl, e) != 0) {
        /* The connection may be mid-reply or dead: start afresh next time. */
        redis_conn_close(*conn);
        *conn = NULL;
        return -1;
    }
    *round_trips = redis_conn_stats(*conn)->round_trips - before;
    return 0;
}

void redis_job_log_done(const char *msg, const char *source, size_t nqueues,
                        unsigned long long round_trips)
{
    if (!log_enabled(LOG_DEBUG))
        return;
    char queues[32], rts[32];
    snprintf(queues, sizeof queues, "%zu", nqueues);
    snprintf(rts, sizeof rts, "%llu", round_trips);
    log_kv(LOG_DEBUG, msg, "source", source, "queues", queues, "round_trips", rts, NULL);
}

int redis_job_want(const redisReply *r, int type, const char *what, struct err *e)
{
    if (r->type == type)
        return 0;
    static const char *const names[] = {[REDIS_REPLY_STRING] = "a string",
                                        [REDIS_REPLY_ARRAY] = "a list",
                                        [REDIS_REPLY_INTEGER] = "an integer"};
    return err_set(e, ERR_PROTOCOL, "%s: want %s, got %s%s%s", what, names[type],
                   redis_reply_type_name(r), r->type == REDIS_REPLY_ERROR ? ": " : "",
                   r->type == REDIS_REPLY_ERROR ? r->str : "");
}
