/* redis_job.c: the common state, configure() steps and collect() frame of the Redis job kinds
 * (redis_job.h). */
#include "redis_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redis_sentinel.h"
#include "log.h"

int redis_job_read(struct cfg_node *map, struct redis_job *j, struct err *e)
{
    if (redis_settings_read(map, &j->rs, e) ||
        cfg_get_strlist(map, "queues", &j->queues, &j->nqueues, e))
        return -1;
    return j->discovery ? exclude_read(&j->exclude, map, "exclude", NULL, e) : 0;
}

int redis_job_finish(const struct collector *c, struct cfg_node *map, struct redis_job *j,
                     struct err *e)
{
    if (collector_finish(c, map, e) || redis_settings_check(map, &j->rs, e))
        return -1;
    j->pipe = redis_pipe_new();
    return 0;
}

int redis_job_check_queues(struct cfg_node *map, struct redis_job *j, struct err *e)
{
    if (j->queues && j->nqueues == 0)
        return cfg_error(e, cfg_at(map, "queues"),
                         "queues: want at least one queue, or leave the key out for all");
    if (exclude_check(&j->exclude, map, e))
        return -1;
    if (j->queues && exclude_any(&j->exclude)) /* it could only hide a queue asked for by name */
        return cfg_error(e, cfg_at(map, "exclude"),
                         "exclude: only without queues (it leaves out queues found in %s)",
                         j->discovery);
    return 0;
}

void redis_job_free(struct redis_job *j)
{
    redis_conn_close(j->conn);
    redis_pipe_free(j->pipe);
    redis_settings_free(&j->rs);
    cfg_strv_free(j->queues);
    exclude_free(&j->exclude);
}

/* One scrape; *retry as redis_sentinel_master_gone says. */
static int collect_once(struct redis_job *j, const char *source, const struct deadline *dl,
                        int (*scrape)(void *arg, const struct deadline *dl, struct err *e),
                        void *arg, int *retry, struct err *e)
{
    *retry = 0;
    int reused = j->conn != NULL;
    if (!j->conn && !(j->conn = redis_sentinel_connect(source, &j->rs, dl, e)))
        return -1;
    struct redis_stats before = *redis_conn_stats(j->conn);
    j->exclude.dropped = 0; /* a scrape that failed may have counted some */
    if (scrape(arg, dl, e) != 0) {
        *retry = reused && redis_sentinel_master_gone(&j->rs, &before, j->conn, dl, e);
        /* The connection may be mid-reply or dead: start afresh next time. */
        redis_conn_close(j->conn);
        j->conn = NULL;
        return -1;
    }
    j->round_trips = redis_conn_stats(j->conn)->round_trips - before.round_trips;
    return 0;
}

int redis_job_collect(struct redis_job *j, const char *source, const struct deadline *dl,
                      int (*scrape)(void *arg, const struct deadline *dl, struct err *e), void *arg,
                      struct err *e)
{
    int retry = 0;
    if (collect_once(j, source, dl, scrape, arg, &retry, e) == 0)
        return 0;
    if (!retry)
        return -1;
    log_kv(LOG_DEBUG, "redis master gone, asking the sentinels again", "source", source, "err",
           e->msg, NULL);
    err_clear(e);
    return collect_once(j, source, dl, scrape, arg, &retry, e);
}

int redis_job_time(const redisReply *r, double *now, struct err *e)
{
    if (redis_job_want(r, REDIS_REPLY_ARRAY, "TIME", e))
        return -1;
    if (r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return err_set(e, ERR_PROTOCOL, "TIME: want two strings");
    *now = strtod(r->element[0]->str, NULL) + strtod(r->element[1]->str, NULL) / 1e6;
    return 0;
}

void redis_job_log_done(const struct redis_job *j, const char *msg, const char *source,
                        size_t nqueues)
{
    if (!log_enabled(LOG_DEBUG))
        return;
    char queues[32], rts[32];
    snprintf(queues, sizeof queues, "%zu", nqueues);
    snprintf(rts, sizeof rts, "%llu", j->round_trips);
    log_kv(LOG_DEBUG, msg, "source", source, "queues", queues, "round_trips", rts, NULL);
}

int redis_job_run_pipe(struct redis_job *j, const char *source, struct redis_pipe *p,
                       redis_reply_fn fn, void *ctx, const struct deadline *dl, struct err *e)
{
    if (!j->conn && !(j->conn = redis_sentinel_connect(source, &j->rs, dl, e)))
        return -1;
    if (redis_pipe_exec_each(j->conn, p, dl, j->rs.max_response_bytes, fn, ctx, e) == 0)
        return 0;
    return redis_job_drop(j, e);
}

int redis_job_drop(struct redis_job *j, struct err *e)
{
    const char *label = redis_conn_label(j->conn);
    if (strncmp(e->msg, label, strlen(label)) != 0)
        err_prefix(e, "%s", label);
    redis_conn_close(j->conn);
    j->conn = NULL;
    return -1;
}

/* A broker's error text is cut, so that a huge one cannot flood a message or a log line. */
#define MAX_REPLY_TEXT 300

int redis_job_reply_error(const redisReply *r, const char *what, struct err *e)
{
    int n = (int)(r->len > MAX_REPLY_TEXT ? MAX_REPLY_TEXT : r->len);
    return err_set(e, ERR_QUERY, "%s: %.*s", what, n, r->str);
}

int redis_job_eval_int(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)i;
    if (redis_reply_is_error(r, NULL))
        return redis_job_reply_error(r, "EVAL", e);
    if (redis_job_want(r, REDIS_REPLY_INTEGER, "EVAL", e))
        return -1;
    *(long long *)ctx = r->integer;
    return 0;
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
