/* check_text.c: unit tests for core/text.c's base64 decoder, the one that HTTP Basic
 * credentials (strict) and Pub/Sub message data (protobuf's lenient JSON form) both go through:
 * every case is decoded both ways and must give the bytes, or be refused, as the table says.
 * Also its escaping loop, buf_escaped, with the tables of a format and JSON's own, and
 * text_substitute, which names a dead-letter queue per queue from one pattern. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "text.h"
#include "support/check_run.h"

static const struct {
    const char *in;
    const char *lenient; /* NULL: refused */
    const char *strict;  /* NULL: refused */
    long len;            /* of the decoded bytes */
} b64[] = {
    {"", "", NULL, 0}, /* no credentials are no credentials */
    {"eyJvcmRlcl9pZCI6MX0=", "{\"order_id\":1}", "{\"order_id\":1}", 14},
    {"eyJvcmRlcl9pZCI6MX0", "{\"order_id\":1}", NULL, 14}, /* padding left out */
    {"YQ==", "a", "a", 1},
    {"YWI=", "ab", "ab", 2},
    {"YWJj", "abc", "abc", 3},
    {"dXNlcjpwYXNz", "user:pass", "user:pass", 9},
    {"-_8=", "\xfb\xff", NULL, 2}, /* the URL-safe alphabet */
    {"+/8=", "\xfb\xff", "\xfb\xff", 2},
    {"YQBi", "a\0b", "a\0b", 3}, /* a NUL inside is data too */
    {"Y", NULL, NULL, 0},        /* one digit holds no byte */
    {"YQ=", NULL, NULL, 0},      /* padding that does not end a group of 4 */
    {"YQ===", NULL, NULL, 0},
    {"Y Q==", NULL, NULL, 0},
    {"YQ=a", NULL, NULL, 0},
    {"=YQ=", NULL, NULL, 0},
};

START_TEST(test_base64)
{
    for (int strict = 0; strict <= 1; strict++) {
        const char *want = strict ? b64[_i].strict : b64[_i].lenient;
        size_t len = strlen(b64[_i].in);
        unsigned char *out = malloc(len / 4 * 3 + 2);
        long n = text_base64_decode(b64[_i].in, len, strict, out);
        if (!want) {
            ck_assert_msg(n == -1, "\"%s\" (strict %d): want refused, got %ld bytes", b64[_i].in,
                          strict, n);
        } else {
            ck_assert_msg(n == b64[_i].len, "\"%s\" (strict %d): got %ld bytes", b64[_i].in, strict,
                          n);
            ck_assert_int_eq(memcmp(out, want, (size_t)n), 0);
        }
        free(out);
    }
}
END_TEST

/* Tables built the way landing.c builds its HTML one. */
static const struct buf_escape amp_lt = {.rep = {['&'] = "&amp;", ['<'] = "&lt;"}};
static const struct buf_escape amp_hex = {.rep = {['&'] = "&amp;"}, .hex_controls = 1};

static const struct {
    const char *in;
    const struct buf_escape *how; /* NULL: buf_json_string */
    const char *want;
} escapes[] = {
    {"a<b & c", &amp_lt, "a&lt;b &amp; c"},
    {"", &amp_lt, ""},
    {"tab\there\x01", &amp_lt, "tab\there\x01"}, /* control bytes kept without hex_controls */
    {"tab\there\x01&", &amp_hex, "tab\\u0009here\\u0001&amp;"},
    {"caf\xc3\xa9", &amp_hex, "caf\xc3\xa9"}, /* bytes above 0x7f are UTF-8: kept */
    {"q\"b\\n\nr\r\t\x1f<", NULL, "\"q\\\"b\\\\n\\nr\\r\\t\\u001f<\""},
    {NULL, NULL, "null"},
};

START_TEST(test_escape)
{
    struct buf b;
    buf_init(&b);
    if (escapes[_i].how)
        buf_escaped(&b, escapes[_i].in, escapes[_i].how);
    else
        buf_json_string(&b, escapes[_i].in);
    ck_assert_str_eq(b.data ? b.data : "", escapes[_i].want);
    buf_free(&b);
}
END_TEST

static const struct {
    const char *tmpl, *placeholder, *value, *want;
} substitutions[] = {
    {"{topic}.dlq", "{topic}", "orders", "orders.dlq"},
    {"dlq:{stream}:{stream}", "{stream}", "a", "dlq:a:a"}, /* every occurrence */
    {"all.dlq", "{stream}", "a", "all.dlq"},               /* none: the pattern itself */
    {"{strea}{stream", "{stream}", "a", "{strea}{stream"}, /* near misses are kept */
    {"{topic}", "{topic}", "", ""},
    {"{topic}{topic}", "{topic}", "{topic}", "{topic}{topic}"}, /* the value is not re-read */
    {"x", "", "v", "x"},                                        /* an empty placeholder: none */
};

START_TEST(test_substitute)
{
    char *got = text_substitute(substitutions[_i].tmpl, substitutions[_i].placeholder,
                                substitutions[_i].value);
    ck_assert_str_eq(got, substitutions[_i].want);
    free(got);
}
END_TEST

/* xstrjoin: the keys of the Redis kinds, built without a format. */
START_TEST(test_strjoin)
{
    char *got = xstrjoin("bull", ":", "orders", ":", "wait", (char *)NULL);
    ck_assert_str_eq(got, "bull:orders:wait");
    free(got);
    got = xstrjoin("", "queue:", "", (char *)NULL);
    ck_assert_str_eq(got, "queue:");
    free(got);
    got = xstrjoin("only", (char *)NULL);
    ck_assert_str_eq(got, "only");
    free(got);
    got = xstrjoin("", (char *)NULL);
    ck_assert_str_eq(got, "");
    free(got);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

int main(void)
{
    Suite *s = suite_create("util");
    TCase *tc = tcase_create("base64");
    tcase_add_loop_test(tc, test_base64, 0, N(b64));
    suite_add_tcase(s, tc);
    tc = tcase_create("escape");
    tcase_add_loop_test(tc, test_escape, 0, N(escapes));
    suite_add_tcase(s, tc);
    tc = tcase_create("substitute");
    tcase_add_loop_test(tc, test_substitute, 0, N(substitutions));
    suite_add_tcase(s, tc);
    tc = tcase_create("strjoin");
    tcase_add_test(tc, test_strjoin);
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}
