/* check_hashtab.c: the one hash index: an empty table finds nothing, ids come back after many
 * growths, keys that share a whole hash are told apart by the caller's comparison, a free
 * starts over; and the hash: every tail length of a key hashes apart, equal bytes hash alike,
 * and the seed chains parts so that the split between them counts. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "hashtab.h"
#include "support/check_run.h"

/* The caller's storage of the tests: keys by id. */
struct keys {
    char v[20000][16];
    size_t n;
    uint64_t fixed; /* when not 0, every key's hash: all of them collide */
};

static uint64_t key_hash(const struct keys *k, const char *s)
{
    return k->fixed ? k->fixed : hashtab_hash(s, strlen(s), 0);
}

static uint64_t hash_of(const void *ctx, uint32_t id)
{
    const struct keys *k = ctx;
    return key_hash(k, k->v[id]);
}

/* The id of s, added when add is set; HASHTAB_END when absent and not added. */
static uint32_t lookup(struct hashtab *t, struct keys *k, const char *s, int add)
{
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(t, key_hash(k, s), &p); id != HASHTAB_END;
         id = hashtab_next(t, &p))
        if (strcmp(k->v[id], s) == 0)
            return id;
    if (!add)
        return HASHTAB_END;
    snprintf(k->v[k->n], sizeof k->v[k->n], "%s", s);
    hashtab_add(t, &p, (uint32_t)k->n, hash_of, k);
    return (uint32_t)k->n++;
}

static struct keys keys; /* too large for the stack */

START_TEST(test_empty_table_finds_nothing)
{
    struct hashtab t = {0};
    struct hashtab_probe p;
    ck_assert_uint_eq(hashtab_first(&t, 12345, &p), HASHTAB_END);
    hashtab_free(&t); /* an empty table frees */
    ck_assert_uint_eq(t.nslots, 0);
}
END_TEST

START_TEST(test_ids_survive_growth)
{
    struct hashtab t = {0};
    memset(&keys, 0, sizeof keys);
    char s[16];
    for (int i = 0; i < 20000; i++) {
        snprintf(s, sizeof s, "q%d", i);
        ck_assert_uint_eq(lookup(&t, &keys, s, 1), (uint32_t)i);
        ck_assert_uint_le(t.n * 4, t.nslots * 3); /* never more than 3/4 full */
    }
    ck_assert_uint_eq(t.n, 20000);
    ck_assert_uint_eq(t.nslots, 32768);
    for (int i = 0; i < 20000; i++) { /* found again, not added twice */
        snprintf(s, sizeof s, "q%d", i);
        ck_assert_uint_eq(lookup(&t, &keys, s, 1), (uint32_t)i);
    }
    ck_assert_uint_eq(keys.n, 20000);
    ck_assert_uint_eq(lookup(&t, &keys, "q20000", 0), HASHTAB_END);
    ck_assert_uint_eq(lookup(&t, &keys, "", 0), HASHTAB_END);
    hashtab_free(&t);
    ck_assert_uint_eq(t.n, 0);
    ck_assert_ptr_null(t.slots);
    /* Free leaves a table that starts over. */
    keys.n = 0;
    ck_assert_uint_eq(lookup(&t, &keys, "again", 1), 0);
    ck_assert_uint_eq(lookup(&t, &keys, "again", 0), 0);
    hashtab_free(&t);
}
END_TEST

START_TEST(test_colliding_keys_are_told_apart)
{
    struct hashtab t = {0};
    memset(&keys, 0, sizeof keys);
    keys.fixed = 0xAB00000000000007ULL; /* one slot and one tag for every key */
    char s[16];
    for (int i = 0; i < 100; i++) { /* across one growth (64 -> 128 slots) */
        snprintf(s, sizeof s, "c%d", i);
        ck_assert_uint_eq(lookup(&t, &keys, s, 1), (uint32_t)i);
    }
    ck_assert_uint_eq(t.nslots, 256);
    for (int i = 0; i < 100; i++) {
        snprintf(s, sizeof s, "c%d", i);
        ck_assert_uint_eq(lookup(&t, &keys, s, 0), (uint32_t)i);
    }
    ck_assert_uint_eq(lookup(&t, &keys, "c100", 0), HASHTAB_END);
    hashtab_free(&t);
}
END_TEST

START_TEST(test_hash)
{
    /* Every length up to 24 bytes of one key (the word loop and each tail) hashes apart. */
    const char *k = "abcdefghijklmnopqrstuvwx";
    uint64_t h[25];
    for (size_t n = 0; n <= 24; n++) {
        h[n] = hashtab_hash(k, n, 0);
        for (size_t m = 0; m < n; m++)
            ck_assert_msg(h[m] != h[n], "lengths %zu and %zu hash alike", m, n);
    }
    /* Equal bytes at another address hash alike; one changed byte, wherever, does not. */
    char copy[25];
    memcpy(copy, k, sizeof copy);
    ck_assert_uint_eq(hashtab_hash(copy, 24, 0), h[24]);
    for (size_t i = 0; i < 24; i++) {
        copy[i] ^= 1;
        ck_assert_msg(hashtab_hash(copy, 24, 0) != h[24], "byte %zu ignored", i);
        copy[i] ^= 1;
    }
    /* The seed counts, so chained parts keep their split. */
    ck_assert_uint_ne(hashtab_hash("x", 1, 1), hashtab_hash("x", 1, 0));
    ck_assert_uint_ne(hashtab_hash("c", 1, hashtab_hash("ab", 2, 0)),
                      hashtab_hash("bc", 2, hashtab_hash("a", 1, 0)));
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_empty_table_finds_nothing, 0},
        {test_ids_survive_growth, 0},
        {test_colliding_keys_are_told_apart, 0},
        {test_hash, 0},
    };
    return check_run_tests("hashtab", tests, CHECK_ROWS(tests), 0);
}
