/* common/redis_reply.h: where the Redis client's reader builds reply trees
 * (collectors/common/redis_reply.c): an arena, emptied after each reply, and the hiredis object
 * functions that carve replies out of it. Private to the client (redis.c); a kind never sees
 * it: the trees it gets are ordinary redisReply structs that must not reach freeReplyObject. */
#ifndef QREL_COMMON_REDIS_REPLY_H
#define QREL_COMMON_REDIS_REPLY_H

#include <hiredis.h>

struct redis_reply_arena;

struct redis_reply_arena *redis_reply_arena_new(void);
/* Empties the arena: every reply built in it is gone; its first block is kept for the next. */
void redis_reply_arena_reset(struct redis_reply_arena *a);
void redis_reply_arena_free(struct redis_reply_arena *a); /* NULL is fine */

/* The object functions of a reader (redisReader.fn) whose privdata is an arena. */
extern redisReplyObjectFunctions redis_reply_arena_fns;

#endif
