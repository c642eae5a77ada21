/* check_laravel.c: unit tests for collectors/laravel/parse.c: Laravel 8.83's job payloads (as its
 * Redis driver writes them, recorded from tests/integration/laravel.sh), the queue of a key found
 * by SCAN, and the lease figures of a reserved job's score; and the kind's configuration errors.
 * The payload reader has two paths (a scanner of top-level members, jansson behind it): every
 * payload here must read the same through laravel_parse_job as through jansson alone. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "laravel/laravel.h"
#include "support/check_run.h"
#include "support/fixture.h"
#include "support/kind_config.h"

extern const struct collector_kind laravel_kind;

/* A job of the reserved set, as Laravel 8.83 wrote it (the command shortened), with the
 * createdAt an application's createPayloadUsing hook added. */
static const char reserved_job[] =
    "{\"uuid\":\"010fde76-5ee9-4456-b557-6a63708d8a76\",\"displayName\":\"SlowJob\",\"job\":"
    "\"Illuminate\\\\Queue\\\\CallQueuedHandler@call\",\"maxTries\":null,\"maxExceptions\":null,"
    "\"failOnTimeout\":false,\"backoff\":null,\"timeout\":30,\"retryUntil\":null,\"data\":{"
    "\"commandName\":\"SlowJob\",\"command\":\"O:7:\\\"SlowJob\\\":0:{}\"},\"createdAt\":"
    "1796511481,\"id\":\"b20eSMHenh3txP\",\"attempts\":2}";

START_TEST(test_parse_job)
{
    struct laravel_job j;
    enum entry_skip why;
    struct err e = {0};
    ck_assert_int_eq(laravel_parse_job(reserved_job, strlen(reserved_job), &j, &why, &e), 0);
    ck_assert_double_eq(j.attempts, 2);
    ck_assert_double_eq(j.timeout, 30);
    ck_assert_double_eq(j.created_at, 1796511481);

    /* Laravel 8 without the hook: no createdAt; a job without $timeout has null. */
    const char *plain = "{\"timeout\":null,\"id\":\"x\",\"attempts\":0}";
    ck_assert_int_eq(laravel_parse_job(plain, strlen(plain), &j, &why, &e), 0);
    ck_assert_double_eq(j.attempts, 0);
    ck_assert(isnan(j.timeout));
    ck_assert(isnan(j.created_at));

    static const struct {
        const char *json;
        enum entry_skip why;
        const char *msg;
    } bad[] = {
        {"not json", ENTRY_NOT_JSON, "job: not JSON"},
        {"[1]", ENTRY_NOT_JSON, "job: want a JSON object"},
        {"{\"id\":\"x\"}", ENTRY_MISSING_FIELD, "job: want a number \"attempts\""},
        {"{\"attempts\":\"2\"}", ENTRY_BAD_VALUE, "job: want a number \"attempts\""},
        {"{\"attempts\":1,\"timeout\":\"60\"}", ENTRY_BAD_VALUE,
         "job: want numbers or null in \"timeout\" and \"createdAt\""},
        {"{\"attempts\":1,\"createdAt\":\"yesterday\"}", ENTRY_BAD_VALUE,
         "job: want numbers or null in \"timeout\" and \"createdAt\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err_clear(&e);
        ck_assert_int_eq(laravel_parse_job(bad[i].json, strlen(bad[i].json), &j, &why, &e), -1);
        ck_assert_int_eq(why, bad[i].why);
        ck_assert_msg(strncmp(e.msg, bad[i].msg, strlen(bad[i].msg)) == 0, "%s", e.msg);
    }
    /* Nested past jansson's depth: too deep, not merely not JSON. */
    size_t n = 5000;
    char *deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = 0;
    ck_assert_int_eq(laravel_parse_job(deep, 2 * n, &j, &why, &e), -1);
    ck_assert_int_eq(why, ENTRY_TOO_DEEP);
    free(deep);
}
END_TEST

/* Same figure, bit for bit in what matters: both NaN, or equal with the same sign (-0 is not 0). */
static int same_figure(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* laravel_parse_job against jansson alone on one payload: the same result, figures, skip reason
 * and message. fast: 1 when the fast path must answer it, 0 when it must leave it to jansson,
 * -1 either way. */
static void check_same(const char *json, size_t len, int fast, const char *label)
{
    struct laravel_job got = {-1, -1, -1}, want = {-1, -1, -1}, fj;
    enum entry_skip got_why = ENTRY_NOT_JSON, want_why = ENTRY_NOT_JSON;
    struct err ge = {0}, we = {0};
    int rc = laravel_parse_job(json, len, &got, &got_why, &ge);
    int want_rc = laravel_parse_job_jansson(json, len, &want, &want_why, &we);
    ck_assert_msg(rc == want_rc, "%s: %d, jansson %d (%s)", label, rc, want_rc, we.msg);
    if (rc == 0) {
        ck_assert_msg(same_figure(got.attempts, want.attempts) &&
                          same_figure(got.timeout, want.timeout) &&
                          same_figure(got.created_at, want.created_at),
                      "%s: %g %g %g, jansson %g %g %g", label, got.attempts, got.timeout,
                      got.created_at, want.attempts, want.timeout, want.created_at);
    } else {
        ck_assert_msg(got_why == want_why, "%s: reason %d, jansson %d", label, got_why, want_why);
        ck_assert_str_eq(ge.msg, we.msg);
    }
    if (fast >= 0)
        ck_assert_msg(laravel_parse_job_fast(json, len, &fj) == fast, "%s: fast path %s", label,
                      fast ? "did not answer" : "answered");
}

START_TEST(test_parse_job_paths)
{
    /* Recorded payloads of Laravel 8.83: the Redis driver's, with a protected property's NUL
     * bytes (\u0000*\u0000orderId) in data.command, is the fast path's; the database driver's
     * keeps attempts in a column, not in the payload: missing, jansson's to say. */
    static const struct {
        const char *name;
        int fast;
    } recorded[] = {{"postgres/laravel_failed_redis.json", 1},
                    {"postgres/laravel_failed_database.json", 0}};
    for (size_t i = 0; i < sizeof recorded / sizeof *recorded; i++) {
        size_t len;
        char *text = fixture_text(recorded[i].name, &len);
        check_same(text, len, recorded[i].fast, recorded[i].name);
        free(text);
    }
    check_same(reserved_job, strlen(reserved_job), 1, "reserved_job");

    static const struct {
        const char *json;
        int fast;
    } cases[] = {
        /* numbers read as jansson reads them: an integer through long long (-0 is 0) */
        {"{\"attempts\":1,\"timeout\":1e3,\"createdAt\":-0}", 1},
        {"{\"attempts\":-0.0,\"timeout\":3.5E+2,\"createdAt\":1796511481.25}", 1},
        {"{\"attempts\":123456789012345678}", 1},
        {"{\"attempts\":-123456789012345678}", 1},
        {"{\"attempts\":9007199254740993}", 1},
        {"{\"attempts\":1.7976931348623157e308}", 1},
        {"{\"attempts\":99999999999999999999}", 0},  /* too big an integer: not JSON */
        {"{\"attempts\":-99999999999999999999}", 0}, /* too big a negative one */
        {"{\"attempts\":1234567890123456789}", 0},   /* 19 digits: jansson's to judge */
        {"{\"attempts\":1,\"timeout\":1e400}", 0},   /* real overflow: not JSON */
        {"{\"attempts\":1e-400}", 0},                /* underflow: jansson takes it */
        {"{\"attempts\":5e-324}", -1},
        {"{\"attempts\":01}", 0},
        {"{\"attempts\":1.}", 0},
        {"{\"attempts\":.5}", 0},
        {"{\"attempts\":+1}", 0},
        {"{\"attempts\":0x10}", 0},
        {"{\"attempts\":1e}", 0},
        {"{\"attempts\":inf}", 0},
        {"{\"attempts\":nan}", 0},
        {"{\"attempts\":-}", 0},
        /* null, literals and types */
        {"{\"attempts\":1,\"timeout\":null,\"createdAt\":null}", 1},
        {"{\"attempts\":null}", 0},
        {"{\"attempts\":true}", 0},
        {"{\"attempts\":\"2\"}", 0},
        {"{\"attempts\":[2]}", 0},
        {"{\"attempts\":2,\"timeout\":\"60\"}", 0},
        {"{\"attempts\":2,\"createdAt\":{}}", 0},
        {"{\"attempts\":2,\"timeout\":nul}", 0},
        {"{\"attempts\":2,\"maxTries\":nul}", 0},
        {"{\"attempts\":2,\"maxTries\":True}", 0},
        {"{\"attempts\":2,\"failOnTimeout\":false,\"maxTries\":null,\"x\":true}", 1},
        /* duplicate keys, wanted or not: jansson refuses the document */
        {"{\"attempts\":1,\"attempts\":2}", 0},
        {"{\"attempts\":1,\"id\":\"a\",\"id\":\"b\"}", 0},
        {"{\"timeout\":1,\"attempts\":1,\"timeout\":2}", 0},
        /* escapes: in a key (it may spell a wanted one), in a value (skipped) */
        {"{\"att\\u0065mpts\":3}", 0},
        {"{\"attempts\":1,\"k\\u00e9y\":1}", 0},
        {"{\"attempts\":1,\"job\":\"Illuminate\\\\Queue\\\\CallQueuedHandler@call\"}", 1},
        {"{\"attempts\":1,\"\xc3\xa9\":1}", 0}, /* a key jansson checks for UTF-8 */
        {"{\"attempts\":1,\"x\":\"a\x01"
         "b\"}",
         0}, /* a control character: not JSON */
        /* nested objects, brackets inside strings */
        {"{\"attempts\":1,\"data\":{\"a\":{\"b\":[1,2,{\"c\":\"}]\"}]}},\"timeout\":5}", 1},
        {"{\"data\":{\"attempts\":9},\"attempts\":4}", 1},
        {"{\"data\":{\"attempts\":9}}", 0},
        /* whitespace, trailing garbage, truncation, other top levels */
        {" \n\t{ \"attempts\" : 2 , \"timeout\" : 3 }\r\n ", 1},
        {"{\"attempts\":1} x", 0},
        {"{\"attempts\":1},", 0},
        {"{\"attempts\":1}}", 0},
        {"{\"attempts\":1", 0},
        {"{\"attempts\":1,}", 0},
        {"{\"attempts\" 1}", 0},
        {"{}", 0},
        {"[]", 0},
        {"[{\"attempts\":1}]", 0},
        {"\"attempts\"", 0},
        {"1", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_same(cases[i].json, strlen(cases[i].json), cases[i].fast, cases[i].json);

    /* Deep nesting: past the fast path's depth (jansson reads it), and past jansson's (too deep).
     * A NUL inside the text: not JSON either way. */
    static const size_t depths[] = {64, 65, 3000};
    for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
        size_t n = depths[d];
        char *deep = malloc(2 * n + 32);
        size_t len = (size_t)snprintf(deep, 2 * n + 32, "{\"attempts\":1,\"x\":");
        memset(deep + len, '[', n);
        memset(deep + len + n, ']', n);
        len += 2 * n;
        deep[len++] = '}';
        deep[len] = '\0';
        check_same(deep, len, n <= 64, "deep");
        free(deep);
    }
    static const char nul[] = "{\"attempts\":1,\"x\":\"a\0b\"}";
    check_same(nul, sizeof nul - 1, 0, "NUL in a string");
    static const char nul_after[] = "{\"attempts\":1}\0";
    check_same(nul_after, sizeof nul_after - 1, 0, "NUL after the object");
}
END_TEST

START_TEST(test_queue_of_key)
{
    static const struct {
        const char *key, *prefix, *want;
    } cases[] = {
        {"laravel_database_queues:emails", "laravel_database_", "emails"},
        {"laravel_database_queues:emails:delayed", "laravel_database_", "emails"},
        {"laravel_database_queues:emails:reserved", "laravel_database_", "emails"},
        {"laravel_database_queues:emails:notify", "laravel_database_", "emails"},
        {"laravel_database_queues:{orders}:reserved", "laravel_database_", "{orders}"},
        {"queues:default", "", "default"},
        {"queues:a:b", "", "a:b"},
        {"other_queues:emails", "laravel_database_", NULL},
        {"laravel_database_queues:", "laravel_database_", NULL},
        {"laravel_database_queues::delayed", "laravel_database_", ":delayed"},
        {"laravel_database_cache:x", "laravel_database_", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *q = laravel_queue_of_key(cases[i].key, strlen(cases[i].key), cases[i].prefix);
        if (!cases[i].want)
            ck_assert_msg(q == NULL, "%s: got %s", cases[i].key, q);
        else
            ck_assert_str_eq(q, cases[i].want);
        free(q);
    }
}
END_TEST

START_TEST(test_lease)
{
    double hold = -1, margin = -1;
    /* Popped at 1796511500 with retry_after 2: scored 1796511502; at ...505 held 5 s. */
    ck_assert_int_eq(laravel_lease(1796511505, 1796511502, 2, &hold, &margin), 1);
    ck_assert_double_eq(hold, 5);
    ck_assert_double_eq(margin, 0.4);
    /* Popped this very second: no hold to divide by. */
    ck_assert_int_eq(laravel_lease(1796511500, 1796511590, 90, &hold, &margin), 0);
    ck_assert_double_eq(hold, 0);
    /* A score no pop gives (5, or far ahead of the server's clock): no age. */
    ck_assert_int_eq(laravel_lease(1796511500, 5, 90, &hold, &margin), -1);
    ck_assert_int_eq(laravel_lease(1796511500, 1796611500, 90, &hold, &margin), -1);
    ck_assert_int_eq(laravel_lease(1796511500, NAN, 90, &hold, &margin), -1);
}
END_TEST

START_TEST(test_configure)
{
    struct err e;
    ck_assert_int_eq(configure_kind_text(&laravel_kind,
                                         "sources:\n  - name: l\n    kind: laravel\n"
                                         "    address: 127.0.0.1\n    retry_after: 90s\n"
                                         "    job_timeout: 60s\n    prefix: app_\n",
                                         &e),
                     0);
    static const struct {
        const char *extra, *msg;
    } bad[] = {
        {"retry_after: 0s", "x.yml:5:18: retry_after: want a duration above 0"},
        {"job_timeout: soon", "x.yml:5:18: job_timeout: want a duration like \"5s\", got \"soon\""},
        {"queues: []", "x.yml:5:13: queues: want at least one queue, or leave the key out for all"},
        {"retry_afer: 90s", "x.yml:5:5: unknown key \"retry_afer\" in source \"l\""},
        {"cluster: true", "the laravel kind does not read a Redis Cluster yet"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[300];
        snprintf(text, sizeof text,
                 "sources:\n  - name: l\n    kind: laravel\n    address: 127.0.0.1\n    %s\n",
                 bad[i].extra);
        ck_assert_int_eq(configure_kind_text(&laravel_kind, text, &e), -1);
        ck_assert_msg(strstr(e.msg, bad[i].msg) != NULL, "%s: %s", bad[i].extra, e.msg);
    }
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_parse_job, 0}, {test_parse_job_paths, 0}, {test_queue_of_key, 0},
        {test_lease, 0},     {test_configure, 0},
    };
    return check_run_tests("laravel", tests, CHECK_ROWS(tests), 0);
}
