/* hashtab.c: the growing and freeing half of the hash index (hashtab.h); the probes are inline
 * in the header because they run for every label of every sample. */
#include "hashtab.h"

#include <stdlib.h>

#include "alloc.h"

static void slots_alloc(struct hashtab *t, size_t nslots)
{
    t->nslots = nslots;
    t->slots = xcalloc(nslots, sizeof *t->slots);
    t->tags = xmalloc(nslots);
}

/* Doubles the table (or makes the first one), putting every stored id back by its hash. */
static void grow(struct hashtab *t, uint64_t (*hash_of)(const void *ctx, uint32_t id),
                 const void *ctx)
{
    uint32_t *old = t->slots;
    size_t nold = t->nslots;
    free(t->tags);
    slots_alloc(t, nold ? nold * 2 : 64);
    size_t mask = t->nslots - 1;
    for (size_t k = 0; k < nold; k++) {
        if (!old[k])
            continue;
        uint64_t h = hash_of(ctx, old[k] - 1);
        size_t i = (size_t)h & mask;
        while (t->slots[i])
            i = (i + 1) & mask;
        t->slots[i] = old[k];
        t->tags[i] = (unsigned char)(h >> 56);
    }
    free(old);
}

void hashtab_add(struct hashtab *t, const struct hashtab_probe *p, uint32_t id,
                 uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx)
{
    size_t i = p->i;
    if (t->n + 1 > t->nslots / 4 * 3) {
        /* The probe's slot is of the old table: find the new key's free slot again. */
        grow(t, hash_of, ctx);
        i = (size_t)p->h & (t->nslots - 1);
        while (t->slots[i])
            i = (i + 1) & (t->nslots - 1);
    }
    t->slots[i] = id + 1;
    t->tags[i] = p->tag;
    t->n++;
}

void hashtab_free(struct hashtab *t)
{
    free(t->slots);
    free(t->tags);
    t->slots = NULL;
    t->tags = NULL;
    t->nslots = t->n = 0;
}
