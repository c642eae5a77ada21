/* redis_arena.h: where the Redis client (common/redis.c) has hiredis's reader build reply trees:
 * an arena emptied after each reply, instead of one allocation per element (redis_arena.c says
 * why). Private to the redis helper. */
#ifndef QREL_REDIS_ARENA_H
#define QREL_REDIS_ARENA_H

#include <hiredis.h>

struct redis_arena;

/* An empty arena; redis_arena_free frees it and every block (NULL is fine). */
struct redis_arena *redis_arena_new(void);
/* Empties the arena, keeping one standard block for the next reply: every reply tree built in
 * it is gone. */
void redis_arena_reset(struct redis_arena *a);
void redis_arena_free(struct redis_arena *a);

/* The reader's object functions (reader->fn), with the arena as reader->privdata. */
extern redisReplyObjectFunctions redis_arena_reply_fns;

#endif
