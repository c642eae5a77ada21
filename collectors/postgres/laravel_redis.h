/* laravel_redis.h: the Redis side of a Laravel failed_jobs table, for qrel dlq: the `redis:` block
 * of a `preset: laravel` entry (which failed_jobs connection runs on Redis, how to reach that
 * Redis, Laravel's key prefix) and the push of one job back onto its queue as Laravel 8's
 * RedisQueue::pushRaw does it. The connection keys are the other Redis kinds' (redis_settings.h).
 */
#ifndef QREL_PG_LARAVEL_REDIS_H
#define QREL_PG_LARAVEL_REDIS_H

#include "common/redis_job.h"
#include "config.h"
#include "deadline.h"
#include "err.h"

#define LARAVEL_REDIS_CONNECTION "redis"         /* config/queue.php's Redis connection */
#define LARAVEL_REDIS_PREFIX "laravel_database_" /* config/database.php's redis.options.prefix */

struct laravel_redis {
    char *connection;   /* the queue connection's name, as failed_jobs.connection holds it */
    char *prefix;       /* Laravel's key prefix, "" for none */
    char *source;       /* the source's name, for messages */
    struct redis_job j; /* the connection keys and, once opened, the connection */
    struct redis_pipe *pipe;
};

/* Reads and judges the `redis:` mapping map of source's laravel entry (every key known first:
 * unknown ones are refused with the list). NULL + e (ERR_CONFIG, pointing at the key). */
struct laravel_redis *laravel_redis_configure(struct cfg_node *map, const char *source,
                                              struct err *e);
void laravel_redis_free(struct laravel_redis *r); /* closes, wipes the password; NULL is fine */

/* One script, as RedisQueue::pushRaw: RPUSH <prefix>queues:<queue> payload, then RPUSH
 * <prefix>queues:<queue>:notify 1, which a worker's blocking pop waits on. 0, or -1 + e (the
 * connection is dropped and the next push connects again). */
int laravel_redis_push(struct laravel_redis *r, const char *queue, const char *payload,
                       const struct deadline *dl, struct err *e);

#endif
