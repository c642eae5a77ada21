/* redis_stream/scrape.c: one scrape's tables (scrape.h): the names it met, stored once in
 * blocks that never move and found again through the core's hash index, and the streams it
 * collects. Nothing is kept between scrapes. */
#include "scrape.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static const char *arena_copy(struct names *t, const char *s, size_t len)
{
    struct arena_block *b = t->blocks;
    if (!b || b->cap - b->used < len + 1) {
        /* A long string gets a block of its own behind the current one, which stays in use. */
        int own = len + 1 > ARENA_BLOCK_BYTES / 4;
        size_t cap = own ? len + 1 : ARENA_BLOCK_BYTES;
        struct arena_block *nb = xmalloc(sizeof *nb + cap);
        nb->used = 0;
        nb->cap = cap;
        if (own && b) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            t->blocks = nb;
        }
        b = nb;
    }
    char *p = b->data + b->used;
    memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    return p;
}

static uint64_t name_hash_of(const void *ctx, uint32_t id)
{
    const struct names *t = ctx;
    return hashtab_hash(t->v[id].s, t->v[id].len, 0);
}

size_t redis_stream_names_intern(struct names *t, const char *s, size_t len, int *added)
{
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(&t->index, hashtab_hash(s, len, 0), &p); id != HASHTAB_END;
         id = hashtab_next(&t->index, &p))
        if (t->v[id].len == len && memcmp(t->v[id].s, s, len) == 0) {
            if (added)
                *added = 0;
            return id;
        }
    if (added)
        *added = 1;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->v = xrealloc(t->v, t->cap * sizeof *t->v);
    }
    struct name *nm = &t->v[t->n];
    nm->s = arena_copy(t, s, len);
    nm->len = len;
    nm->pat = nm->dlq = NONE;
    nm->chosen = nm->is_dlq = nm->excluded = 0;
    hashtab_add(&t->index, &p, (uint32_t)t->n, name_hash_of, t);
    return t->n++;
}

void redis_stream_names_drop_index(struct names *t)
{
    hashtab_free(&t->index);
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}

static void names_free(struct names *t)
{
    redis_stream_names_drop_index(t);
    while (t->blocks) {
        struct arena_block *b = t->blocks;
        t->blocks = b->next;
        free(b);
    }
}

void redis_stream_scrape_free(struct scrape *sc)
{
    names_free(&sc->names);
    free(sc->t);
    free(sc->groups);
    free(sc->dlqs);
    entry_skips_free(&sc->skips);
    memset(sc, 0, sizeof *sc);
}

void redis_stream_target_add(struct scrape *sc, size_t name_id, size_t spec, int from_pattern)
{
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 16;
        sc->t = xrealloc(sc->t, sc->cap * sizeof *sc->t);
    }
    struct target *t = &sc->t[sc->n++];
    memset(t, 0, sizeof *t);
    t->name = sc->names.v[name_id].s;
    t->name_id = name_id;
    t->dlq_id = t->dlq_slot = NONE;
    t->spec = (unsigned)spec;
    t->from_pattern = (unsigned char)from_pattern;
    sc->names.v[name_id].chosen = 1;
}
