/* check_common_json_members.c: unit tests for common/json_members.h, the walk of an object's
 * top-level members. Strings are walked 8 bytes at a time and the walk jumps to the first byte of
 * a word that stops it, so every place a stopping byte can take in a word is tried here, and
 * every prefix of a document is read from a buffer of exactly its size (valgrind and ASan see a
 * read past it). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_members.h"
#include "support/check_run.h"

struct seen {
    struct json_member m[4];
    size_t n;
};

static int keep(void *ctx, const struct json_member *m)
{
    struct seen *s = ctx;
    if (s->n < 4)
        s->m[s->n] = *m;
    s->n++;
    return 0;
}

/* json_members over a copy of doc[0, len) in a buffer of exactly len bytes. */
static int walk(const char *doc, size_t len, struct seen *s)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, doc, len);
    memset(s, 0, sizeof *s);
    int rc = json_members(copy, len, keep, s);
    /* the members point into the copy: turn them into offsets into doc before it goes */
    for (size_t i = 0; i < s->n && i < 4; i++) {
        s->m[i].key = doc + (s->m[i].key - copy);
        s->m[i].v = doc + (s->m[i].v - copy);
        s->m[i].v_end = doc + (s->m[i].v_end - copy);
    }
    free(copy);
    return rc;
}

/* What is put into a string at each place: its text, whether it is an escape, whether the
 * document stays valid. */
static const struct {
    const char *text;
    int escape;
    int valid;
} stops[] = {
    {"\\\"", 1, 1}, {"\\\\", 1, 1}, {"\\n", 1, 1},      {"\\u00e9", 1, 1},
    {"\x01", 0, 0}, {"\x1f", 0, 0}, {"\xc3\xa9", 0, 1}, {" ", 0, 1},
};

/* A key and a value of len 'a's with stops[_i] at position at, for every len up to 24 and every
 * position: the member's name and value end exactly where they should. */
START_TEST(test_stop_at_every_place)
{
    const char *stop = stops[_i].text;
    for (size_t len = 0; len <= 24; len++) {
        for (size_t at = 0; at <= len; at++) {
            char s[64], doc[256];
            memset(s, 'a', at);
            memcpy(s + at, stop, strlen(stop)); /* the terminator is written below */
            memset(s + at + strlen(stop), 'a', len - at);
            s[len + strlen(stop)] = '\0';
            size_t n = (size_t)snprintf(doc, sizeof doc, "{\"%s\":\"%s\",\"n\":12}", s, s);
            struct seen seen;
            int rc = walk(doc, n, &seen);
            ck_assert_int_eq(rc, stops[_i].valid);
            if (!stops[_i].valid)
                continue;
            ck_assert_uint_eq(seen.n, 2);
            ck_assert_uint_eq(seen.m[0].klen, strlen(s));
            ck_assert_int_eq(memcmp(seen.m[0].key, s, strlen(s)), 0);
            ck_assert_int_eq(seen.m[0].escaped, stops[_i].escape);
            ck_assert_uint_eq((size_t)(seen.m[0].v_end - seen.m[0].v), strlen(s) + 2);
            ck_assert_int_eq(memcmp(seen.m[0].v + 1, s, strlen(s)), 0);
            ck_assert_uint_eq(seen.m[1].klen, 1);
            ck_assert_uint_eq((size_t)(seen.m[1].v_end - seen.m[1].v), 2);
        }
    }
}
END_TEST

/* Every prefix of a document is no object walked to its end, and is read within its bytes. */
START_TEST(test_every_prefix)
{
    static const char doc[] =
        "{\"retry\":true,\"queue\":\"q1\",\"class\":\"OkJob\",\"args\":[{\"a\":\"x\\\"]\"}],"
        "\"jid\":\"d3d7184a0538eceba9878761\",\"enqueued_at\":1796561742.9272227}";
    struct seen seen;
    ck_assert_int_eq(walk(doc, sizeof doc - 1, &seen), 1);
    ck_assert_uint_eq(seen.n, 6);
    for (size_t len = 0; len < sizeof doc - 1; len++)
        ck_assert_int_eq(walk(doc, len, &seen), 0);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_stop_at_every_place, CHECK_ROWS(stops)},
        {test_every_prefix, 0},
    };
    return check_run_tests("json_members", tests, CHECK_ROWS(tests), 0);
}
