/* metric_arena.c: the arenas of a metric set (see metric_arena.h): placing blocks, freeing. */
#include "metric_arena.h"

#include <stdlib.h>

#include "alloc.h"

int metric_arena_alloc_slow(struct metric_arena *a, size_t n, uint32_t *off)
{
    size_t k = a->top >> ARENA_SHIFT, pos = a->top & (ARENA_CHUNK - 1);
    if (pos && pos + n > ARENA_CHUNK) {
        k++;
        pos = 0;
    }
    size_t slots = n > ARENA_CHUNK ? (n + ARENA_CHUNK - 1) >> ARENA_SHIFT : 1;
    size_t start = k << ARENA_SHIFT;
    if (k > ARENA_LIMIT >> ARENA_SHIFT || n > ARENA_LIMIT - start - pos)
        return -1;
    size_t top = n > ARENA_CHUNK ? start + (slots << ARENA_SHIFT) : start + pos + n;
    if (top > ARENA_LIMIT)
        return -1;
    if (pos == 0) { /* a new chunk: here k == nchunks, since a full chunk ends at a boundary */
        if (k + slots > a->chunks_cap) {
            size_t cap = a->chunks_cap ? a->chunks_cap * 2 : 4;
            while (cap < k + slots)
                cap *= 2;
            a->chunks = xrealloc(a->chunks, cap * sizeof *a->chunks);
            a->chunks_cap = cap;
        }
        size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        if (k == 0 && n <= ARENA_CHUNK) {
            for (size = ARENA_FIRST; size < n; size *= 2)
                ;
            a->first_cap = size;
        }
        a->chunks[k] = xmalloc(size);
        for (size_t i = 1; i < slots; i++)
            a->chunks[k + i] = NULL;
        a->nchunks = k + slots;
        a->bytes += size;
    } else if (k == 0 && pos + n > a->first_cap) {
        size_t size = a->first_cap * 2;
        while (size < pos + n)
            size *= 2; /* stops at ARENA_CHUNK at the latest: both are powers of two */
        a->chunks[0] = xrealloc(a->chunks[0], size);
        a->bytes += size - a->first_cap;
        a->first_cap = size;
    }
    *off = (uint32_t)(start + pos);
    a->top = top;
    return 0;
}

void metric_arena_free(struct metric_arena *a)
{
    for (size_t i = 0; i < a->nchunks; i++)
        free(a->chunks[i]);
    free(a->chunks);
}

size_t metric_arena_bytes(const struct metric_arena *a)
{
    return a->bytes + a->chunks_cap * sizeof *a->chunks;
}
