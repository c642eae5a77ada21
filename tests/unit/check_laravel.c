/* check_laravel.c: unit tests for collectors/laravel/parse.c: Laravel 8.83's job payloads (as its
 * Redis driver writes them, recorded from tests/integration/laravel.sh), the queue of a key found
 * by SCAN, and the lease figures of a reserved job's score; and the kind's configuration errors. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "laravel/laravel.h"
#include "support/check_run.h"
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
        {test_parse_job, 0},
        {test_queue_of_key, 0},
        {test_lease, 0},
        {test_configure, 0},
    };
    return check_run_tests("laravel", tests, CHECK_ROWS(tests), 0);
}
