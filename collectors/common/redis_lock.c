/* redis_lock.c: the replay lock of the Redis kinds' `qrel dlq` (redis_lock.h). */
#include "common/redis_lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#include "alloc.h"

#define MAX_REPLY_TEXT 300

struct lock_run {
    int taken;
    long long pttl;
};

static int lock_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    struct lock_run *run = ctx;
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > MAX_REPLY_TEXT ? MAX_REPLY_TEXT : r->len);
        return err_set(e, ERR_QUERY, "%s: %.*s", i == 0 ? "SET" : "PTTL", n, r->str);
    }
    if (i == 0)
        run->taken = r && r->type == REDIS_REPLY_STATUS;
    else if (r && r->type == REDIS_REPLY_INTEGER)
        run->pttl = r->integer;
    return 0;
}

int redis_replay_lock_take(struct collector *c, redis_lock_runner run, const char *dlq,
                           const char *what, double hold, const struct deadline *dl,
                           struct redis_replay_lock **out, struct err *e)
{
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return err_set(e, ERR_INTERNAL, "replay lock: no random bytes for its token");
    struct redis_replay_lock *l = xcalloc(1, sizeof *l);
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(l->token + 2 * i, 3, "%02x", raw[i]);
    snprintf(l->hold_ms, sizeof l->hold_ms, "%lld", (long long)(hold * 1000.0) + 1);
    l->key = xasprintf("qrel:replay-lock:%s", dlq);
    struct lock_run got = {0, -2};
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "SET", l->key, l->token, "NX", "PX", l->hold_ms, NULL);
    redis_pipe_addv(p, "PTTL", l->key, NULL);
    int rc = run(c, p, lock_reply, &got, dl, e);
    redis_pipe_free(p);
    if (rc == 0 && !got.taken)
        rc = err_set(e, ERR_QUERY,
                     "another replay of %s\"%.200s\" is running (its lock, key %.250s, expires in "
                     "%lld ms; delete the key if you know none runs)",
                     what, dlq, l->key, got.pttl);
    if (rc) {
        redis_replay_lock_free(l);
        return err_prefix(e, "replay lock");
    }
    *out = l;
    return 0;
}

static int unlock_reply(void *ctx, size_t i, const redisReply *r, struct err *e)
{
    (void)ctx;
    (void)i;
    if (redis_reply_is_error(r, NULL)) {
        int n = (int)(r->len > MAX_REPLY_TEXT ? MAX_REPLY_TEXT : r->len);
        return err_set(e, ERR_QUERY, "EVAL (unlock): %.*s", n, r->str);
    }
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return err_set(e, ERR_PROTOCOL, "EVAL (unlock): want an integer, got %s",
                       redis_reply_type_name(r));
    return 0;
}

static const char unlock_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";

int redis_replay_lock_release(struct collector *c, redis_lock_runner run,
                              struct redis_replay_lock *l, const struct deadline *dl, struct err *e)
{
    if (!l)
        return 0;
    struct redis_pipe *p = redis_pipe_new();
    redis_pipe_addv(p, "EVAL", unlock_script, "1", l->key, l->token, NULL);
    int rc = run(c, p, unlock_reply, NULL, dl, e);
    redis_pipe_free(p);
    if (rc)
        err_prefix(e, "replay lock %s (it expires after %s ms)", l->key, l->hold_ms);
    redis_replay_lock_free(l);
    return rc;
}

void redis_replay_lock_free(void *p)
{
    struct redis_replay_lock *l = p;
    if (l)
        free(l->key);
    free(l);
}

int redis_replay_lock_batch(struct collector *c, redis_lock_runner run, struct dlq_batch *b,
                            const char *name, const char *what, double hold,
                            const struct deadline *dl, struct err *e)
{
    struct redis_replay_lock *l = NULL;
    if (redis_replay_lock_take(c, run, name ? name : b->dead_letter_queue, what, hold, dl, &l, e))
        return -1;
    b->kind_data = l;
    return 0;
}

int redis_replay_unlock_batch(struct collector *c, redis_lock_runner run, struct dlq_batch *b,
                              const struct deadline *dl, struct err *e)
{
    int rc = redis_replay_lock_release(c, run, b->kind_data, dl, e);
    b->kind_data = NULL;
    return rc;
}
