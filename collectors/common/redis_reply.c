/* common/redis_reply.c: the reply trees of the Redis client (redis_reply.h, used by redis.c).
 *
 * hiredis's default reader allocates every element of a reply separately (a redisReply, then
 * its string or element array: an XINFO GROUPS reply is some 26 allocations) and freeReplyObject
 * walks the tree to free them one by one; at 10,000 streams that was a quarter of a scrape's
 * CPU. Since a reply here lives only until the callback returns, the reader is given object
 * functions that carve the tree out of an arena instead, which is emptied after each reply.
 * The objects are ordinary redisReply structs (strings NUL-terminated, element arrays filled in
 * order), so the callbacks read them as any hiredis reply; they must never reach
 * freeReplyObject. Allocation failure returns NULL, which the reader reports as out of memory,
 * as it would with its own functions. */

/* MAP_ANONYMOUS for the large blocks: not in POSIX 2008, which the build asks for elsewhere. */
#define _DEFAULT_SOURCE
#include "common/redis_reply.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc.h"

/* Most reply trees fit in one block (an XINFO GROUPS reply takes about 1 KiB, a SCAN page of
 * 1000 keys about 80 KiB); the first block is kept across replies, the others are freed.
 * Later blocks double in size up to REPLY_BLOCK_MAX, and those of REPLY_MAP_BYTES or more are
 * mapped directly: a huge reply (XPENDING of 1,000,000 entries builds ~330 MB of tree) then goes
 * back to the system when it is freed, where malloc'd blocks would stay in the process's heap
 * for good (measured: 322 MB still resident after such a scrape, 10 MB with mapped blocks). */
#define REPLY_BLOCK_BYTES ((size_t)32 * 1024)
#define REPLY_BLOCK_MAX ((size_t)8 * 1024 * 1024)
#define REPLY_MAP_BYTES ((size_t)256 * 1024)

struct reply_block {
    struct reply_block *next;
    size_t used, cap;
    size_t mapped; /* bytes mmap'd for this block, 0 when malloc'd */
    max_align_t data[];
};

struct redis_reply_arena {
    struct reply_block *head;
    size_t grow; /* the size of the next extra block */
};

static void block_free(struct reply_block *b)
{
    if (b->mapped)
        munmap(b, b->mapped);
    else
        free(b);
}

static void *arena_alloc(struct redis_reply_arena *a, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + align - 1) / align * align;
    struct reply_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t want = b ? (a->grow ? a->grow : REPLY_BLOCK_BYTES) : REPLY_BLOCK_BYTES;
        size_t cap = n > want ? n : want;
        if (b && a->grow < REPLY_BLOCK_MAX)
            a->grow = want * 2;
        struct reply_block *nb;
        size_t mapped = 0;
        if (cap >= REPLY_MAP_BYTES) {
            mapped = sizeof *nb + cap;
            nb = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (nb == MAP_FAILED)
                return NULL;
        } else {
            nb = malloc(sizeof *nb + cap);
            if (!nb)
                return NULL;
        }
        nb->used = 0;
        nb->cap = cap;
        nb->mapped = mapped;
        nb->next = b;
        a->head = b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    return p;
}

/* Empties the arena, keeping one standard block for the next reply. */
void redis_reply_arena_reset(struct redis_reply_arena *a)
{
    struct reply_block *keep = NULL;
    while (a->head) {
        struct reply_block *b = a->head;
        a->head = b->next;
        if (!keep && b->cap == REPLY_BLOCK_BYTES && !b->mapped) {
            keep = b;
            continue;
        }
        block_free(b);
    }
    a->grow = 0;
    if (keep) {
        keep->used = 0;
        keep->next = NULL;
    }
    a->head = keep;
}

void redis_reply_arena_free(struct redis_reply_arena *a)
{
    if (!a)
        return;
    redis_reply_arena_reset(a);
    if (a->head)
        block_free(a->head);
    free(a);
}

/* A reply object with extra bytes behind it, linked into its parent array as hiredis does. */
static redisReply *reply_new(const redisReadTask *task, int type, size_t extra)
{
    if (extra > SIZE_MAX / 2)
        return NULL;
    redisReply *r = arena_alloc(task->privdata, sizeof *r + extra);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->type = type;
    if (task->parent) {
        redisReply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static void *reply_string(const redisReadTask *task, char *str, size_t len)
{
    redisReply *r = reply_new(task, task->type, len + 1);
    if (!r)
        return NULL;
    r->str = (char *)(r + 1);
    memcpy(r->str, str, len);
    r->str[len] = '\0';
    r->len = len;
    return r;
}

static void *reply_array(const redisReadTask *task, int elements)
{
    size_t n = elements > 0 ? (size_t)elements : 0;
    if (n > SIZE_MAX / 2 / sizeof(redisReply *))
        return NULL;
    /* Not zeroed: the reader fills every slot before it hands the reply out. */
    redisReply *r = reply_new(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *));
    if (!r)
        return NULL;
    r->elements = n;
    r->element = n ? (redisReply **)(r + 1) : NULL;
    return r;
}

static void *reply_integer(const redisReadTask *task, long long value)
{
    redisReply *r = reply_new(task, REDIS_REPLY_INTEGER, 0);
    if (r)
        r->integer = value;
    return r;
}

static void *reply_nil(const redisReadTask *task)
{
    return reply_new(task, REDIS_REPLY_NIL, 0);
}

/* The reader calls this for a half-built reply it drops (on a protocol error, or when the
 * connection is freed): the arena owns that memory already. */
static void reply_free(void *obj)
{
    (void)obj;
}

redisReplyObjectFunctions redis_reply_arena_fns = {
    .createString = reply_string,
    .createArray = reply_array,
    .createInteger = reply_integer,
    .createNil = reply_nil,
    .freeObject = reply_free,
};

struct redis_reply_arena *redis_reply_arena_new(void)
{
    return xcalloc(1, sizeof(struct redis_reply_arena));
}
