/* metric_arena.h: the arenas of a metric set (metrics.c), private to it: blocks addressed by a
 * 32-bit logical offset in chunks of 64 KiB that never move once full, so a set of hundreds of
 * thousands of samples is built with no per-sample malloc and no copy of the whole set (the first
 * chunk grows from 256 bytes, so that small sets stay small). Apart from metrics.c so that each
 * file keeps one purpose: this one places bytes, metrics.c decides what they mean. */
#ifndef QREL_METRIC_ARENA_H
#define QREL_METRIC_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_SHIFT 16
#define ARENA_CHUNK ((size_t)1 << ARENA_SHIFT)
#define ARENA_FIRST ((size_t)256)
#define ARENA_LIMIT ((size_t)UINT32_MAX) /* offsets are uint32 */

/* Logical offset off lives in chunks[off >> ARENA_SHIFT] at (off & (ARENA_CHUNK - 1)). A block
 * larger than a chunk gets an allocation of its own that spans several chunk slots (the ones
 * after the first stay NULL), so every block is contiguous and its offset is stable. A zeroed
 * struct is an empty arena. */
struct metric_arena {
    char **chunks;
    size_t nchunks; /* slots in use */
    size_t chunks_cap;
    size_t first_cap; /* size of chunks[0] while it is the growing first chunk */
    size_t top;       /* next free logical offset */
    size_t bytes;     /* allocated for chunks */
};

static inline char *metric_arena_at(const struct metric_arena *a, uint32_t off)
{
    return a->chunks[off >> ARENA_SHIFT] + (off & (ARENA_CHUNK - 1));
}

/* Reserves n contiguous bytes and stores their offset in *off; -1 past ARENA_LIMIT. Blocks do not
 * straddle chunks: one that does not fit in the rest of the current chunk starts the next. */
int metric_arena_alloc_slow(struct metric_arena *a, size_t n, uint32_t *off);

/* metric_arena_alloc_slow's common case inline, a block that fits in the current chunk as
 * allocated: two allocations per sample (its record and its value offsets) and one per new
 * string, where the call and its general checks were 60 instructions each. It takes exactly the
 * blocks the slow path would place at top, with the same limit. */
static inline __attribute__((always_inline)) int metric_arena_alloc(struct metric_arena *a,
                                                                    size_t n, uint32_t *off)
{
    size_t pos = a->top & (ARENA_CHUNK - 1);
    size_t room = a->top < ARENA_CHUNK ? a->first_cap : ARENA_CHUNK;
    if (pos && n <= room - pos && n <= ARENA_LIMIT - a->top) {
        *off = (uint32_t)a->top;
        a->top += n;
        return 0;
    }
    return metric_arena_alloc_slow(a, n, off);
}

void metric_arena_free(struct metric_arena *a);
/* Bytes allocated for the chunks and their table. */
size_t metric_arena_bytes(const struct metric_arena *a);

#endif
