/* hashtab.h: the project's one hash function and one hash index; nothing else in qrel writes its
 * own. The index maps a 64-bit hash to the ids (0 .. UINT32_MAX - 1) of records the caller keeps
 * wherever suits it (an array, an arena of strings): it stores only id + 1 and one byte of the
 * hash per slot, so the caller's own equality test runs only when that byte matches, and it
 * never holds a pointer that the caller's storage could move. Open addressing with linear
 * probing, at most 3/4 full; it grows by doubling, asking the caller for the hash of each id
 * again (a scrape-sized table grows a few times, and storing hashes would cost more memory than
 * recomputing them).
 *
 * Lookup and insertion are one probe, so a missing key is added where the search ended:
 *
 *     uint64_t h = hashtab_hash(key, len, 0);
 *     struct hashtab_probe p;
 *     for (uint32_t id = hashtab_first(&t, h, &p); id != HASHTAB_END; id = hashtab_next(&t, &p))
 *         if (same(id, key, len))
 *             return id;
 *     id = store(key, len);          (the caller's storage)
 *     hashtab_add(&t, &p, id, hash_of, ctx);
 *
 * The probe functions are inline: they run for every label of every sample of a scrape. */
#ifndef QREL_HASHTAB_H
#define QREL_HASHTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HASHTAB_END UINT32_MAX /* no (more) candidate: the key is not in the table */

/* Zeroed, it is an empty table that allocates on its first add. */
struct hashtab {
    uint32_t *slots;     /* id + 1; 0 when free */
    unsigned char *tags; /* the top byte of each slot's hash */
    size_t nslots;       /* 0 or a power of two */
    size_t n;            /* ids stored */
};

/* Where a search is, and where hashtab_add puts a key the search did not find. */
struct hashtab_probe {
    uint64_t h;
    size_t i;
    unsigned char tag;
};

/* Word-at-a-time multiplicative hash with a final mix, for short strings (label values, queue
 * and stream names). seed chains keys of several parts: hash the first part with seed 0 and
 * pass its hash as the seed of the next. The last 1-7 bytes are read as two overlapping 4-byte
 * words (or three single bytes) rather than copied to a zeroed word, which would stall on store
 * forwarding. */
static inline uint64_t hashtab_hash(const void *key, size_t n, uint64_t seed)
{
    const char *p = key;
    /* The length is mixed in before the bytes: xored in as is, it cancelled the last byte of
     * short keys ("ab" and "abc" hashed alike). */
    uint64_t h = (0x9E3779B97F4A7C15ULL ^ seed ^ n) * 0xC4CEB9FE1A85EC53ULL;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        w = (uint64_t)hi << 32 | lo;
    } else if (n) {
        const unsigned char *u = (const unsigned char *)p;
        w = (uint64_t)u[0] << 16 | (uint64_t)u[n / 2] << 8 | u[n - 1];
    }
    h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return h;
}

/* For the two below. The id in the probe's slot when its tag matches, else the next such id, or
 * HASHTAB_END at the first free slot (where p->i then stays). */
static inline uint32_t hashtab_scan(const struct hashtab *t, struct hashtab_probe *p)
{
    size_t mask = t->nslots - 1;
    for (; t->slots[p->i]; p->i = (p->i + 1) & mask)
        if (t->tags[p->i] == p->tag)
            return t->slots[p->i] - 1;
    return HASHTAB_END;
}

/* The first id stored under a hash like h (the caller compares the keys), or HASHTAB_END. */
static inline uint32_t hashtab_first(const struct hashtab *t, uint64_t h, struct hashtab_probe *p)
{
    p->h = h;
    p->tag = (unsigned char)(h >> 56);
    p->i = 0;
    if (!t->nslots)
        return HASHTAB_END;
    p->i = (size_t)h & (t->nslots - 1);
    return hashtab_scan(t, p);
}

/* The next candidate after the one hashtab_first or hashtab_next returned, or HASHTAB_END. */
static inline uint32_t hashtab_next(const struct hashtab *t, struct hashtab_probe *p)
{
    p->i = (p->i + 1) & (t->nslots - 1);
    return hashtab_scan(t, p);
}

/* Stores id (< HASHTAB_END) where the search p ended with HASHTAB_END; the table must not have
 * changed since. When the table grows, hash_of(ctx, id) must return the hash each stored id was
 * added with. */
void hashtab_add(struct hashtab *t, const struct hashtab_probe *p, uint32_t id,
                 uint64_t (*hash_of)(const void *ctx, uint32_t id), const void *ctx);

/* Frees the index (not the caller's records) and leaves an empty table; NULL-safe fields. */
void hashtab_free(struct hashtab *t);

#endif
