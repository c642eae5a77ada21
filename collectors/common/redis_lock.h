/* redis_lock.h: the lock that keeps `qrel dlq replay` to one run per dead-letter queue on Redis
 * (the dlq_kind lock and unlock hooks of redis_stream and rq). The key is
 * qrel:replay-lock:<dead-letter queue>, its value a random token of this run, set with NX and an
 * expiry (PX the hold), so that a killed replay blocks the next one only until it expires. Only
 * the holder renews it (the kinds' move scripts compare the token) or deletes it. */
#ifndef QREL_REDIS_LOCK_H
#define QREL_REDIS_LOCK_H

#include "collector.h"
#include "common/redis.h"
#include "deadline.h"
#include "dlq_kind.h"
#include "err.h"

struct redis_replay_lock {
    char *key;      /* qrel:replay-lock:<dead-letter queue> */
    char token[33]; /* this run's random value */
    char hold_ms[24];
};

/* Runs p on the kind's connection (connecting first, dropping it after an error): each kind
 * keeps its own connection, and the lock goes through it. */
typedef int (*redis_lock_runner)(struct collector *c, struct redis_pipe *p, redis_reply_fn fn,
                                 void *ctx, const struct deadline *dl, struct err *e);

/* Takes the lock of dead-letter queue dlq for hold seconds. what names it in the refusal
 * ("dead-letter stream ", or ""). 0 with *out, or -1 with e (another replay holds it: ERR_QUERY,
 * with the key and when it expires). */
int redis_replay_lock_take(struct collector *c, redis_lock_runner run, const char *dlq,
                           const char *what, double hold, const struct deadline *dl,
                           struct redis_replay_lock **out, struct err *e);
/* Deletes the key if it still holds this run's token, then frees l. */
int redis_replay_lock_release(struct collector *c, redis_lock_runner run,
                              struct redis_replay_lock *l, const struct deadline *dl,
                              struct err *e);
void redis_replay_lock_free(void *l); /* NULL is fine; a dlq_batch's batch_free */

/* The dlq_kind lock and unlock hooks' bodies: take the lock of dead-letter queue name (NULL:
 * b->dead_letter_queue) into b->kind_data, and release the one there. */
int redis_replay_lock_batch(struct collector *c, redis_lock_runner run, struct dlq_batch *b,
                            const char *name, const char *what, double hold,
                            const struct deadline *dl, struct err *e);
int redis_replay_unlock_batch(struct collector *c, redis_lock_runner run, struct dlq_batch *b,
                              const struct deadline *dl, struct err *e);

#endif
