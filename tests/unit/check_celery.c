/* check_celery.c: unit tests for collectors/celery/parse.c on entries of kombu's `unacked` hash as
 * Celery 5.2 wrote them (recorded from the integration test's Redis, bodies shortened), one that
 * kombu restored after its visibility timeout, and what must be refused. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "celery/celery.h"
#include "support/check_run.h"

static const char eta_task[] =
    "[{\"body\": \"W1tdLCB7fV0=\", \"content-encoding\": \"utf-8\", \"content-type\": "
    "\"application/json\", \"headers\": {\"lang\": \"py\", \"task\": \"tasks.ok\", \"id\": "
    "\"6de687cf-a58b-4716-b255-55150d42d6da\", \"shadow\": null, \"eta\": "
    "\"2026-12-01T16:37:50.453358+00:00\", \"expires\": null, \"retries\": 0}, \"properties\": "
    "{\"priority\": 0, \"delivery_tag\": \"8f3278b0-75a0-4219-9a42-87ef84c161d5\", "
    "\"delivery_info\": {\"exchange\": \"\", \"routing_key\": \"celery\"}}}, \"\", \"celery\"]";

static const char restored[] =
    "[{\"body\": \"W1tdLCB7fV0=\", \"headers\": {\"task\": \"tasks.hang\", \"eta\": null, "
    "\"redelivered\": true}, \"properties\": {\"delivery_info\": {\"routing_key\": "
    "\"reports\", \"redelivered\": true}}}, \"reports\", \"reports\"]";

START_TEST(test_recorded)
{
    struct celery_unacked u;
    enum entry_skip why;
    struct err e;
    ck_assert_int_eq(celery_parse_unacked(eta_task, strlen(eta_task), &u, &why, &e), 0);
    ck_assert_str_eq(u.routing_key, "celery");
    ck_assert_double_eq_tol(u.eta, 1796143070.453358, 1e-6);
    ck_assert_int_eq(u.redelivered, 0);
    celery_unacked_free(&u);
    ck_assert_int_eq(celery_parse_unacked(restored, strlen(restored), &u, &why, &e), 0);
    ck_assert_str_eq(u.routing_key, "reports");
    ck_assert_double_eq(u.eta, -1);
    ck_assert_int_eq(u.redelivered, 1);
    celery_unacked_free(&u);
}
END_TEST

START_TEST(test_naive_eta_is_utc)
{
    const char naive[] = "[{\"headers\": {\"eta\": \"2026-12-01T16:37:50\"}}, \"\", \"q\"]";
    struct celery_unacked u;
    enum entry_skip why;
    struct err e;
    ck_assert_int_eq(celery_parse_unacked(naive, strlen(naive), &u, &why, &e), 0);
    ck_assert_double_eq(u.eta, 1796143070);
    celery_unacked_free(&u);
}
END_TEST

/* What an entry no kombu wrote gives: -1 and the reason it is skipped and counted for. */
static char deep[2 * 3000 + 1];
static const struct {
    const char *in;
    enum entry_skip why;
    const char *want;
} bad[] = {
    {"{\"a\": 1}", ENTRY_NOT_JSON, "unacked: want [message, exchange, routing_key]"},
    {"[{}, \"\"]", ENTRY_NOT_JSON, "unacked: want [message, exchange, routing_key]"},
    {"[{}, \"\", 5]", ENTRY_NOT_JSON, "unacked: want [message, exchange, routing_key]"},
    {"[{\"headers\": []}, \"\", \"q\"]", ENTRY_BAD_VALUE,
     "unacked: want the message's headers as an object"},
    {"not json", ENTRY_NOT_JSON, NULL},
    {"[1,", ENTRY_NOT_JSON, NULL},
    {NULL, ENTRY_TOO_DEEP, NULL}, /* deep: [[[...]]] 3,000 levels */
};

START_TEST(test_refused)
{
    struct celery_unacked u;
    enum entry_skip why = ENTRY_SKIP_COUNT;
    struct err e;
    memset(deep, '[', 3000);
    memset(deep + 3000, ']', 3000);
    const char *in = bad[_i].in ? bad[_i].in : deep;
    ck_assert_int_eq(celery_parse_unacked(in, strlen(in), &u, &why, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_int_eq(why, bad[_i].why);
    if (bad[_i].want)
        ck_assert_str_eq(e.msg, bad[_i].want);
    else
        ck_assert_ptr_nonnull(strstr(e.msg, "unacked: not JSON"));
    ck_assert_ptr_null(u.routing_key);
}
END_TEST

/* An eta that is no time leaves the entry readable (it is in flight all the same), with eta NAN
 * for the collector to count as a bad timestamp. */
START_TEST(test_bad_eta)
{
    static const char *const etas[] = {"[{\"headers\": {\"eta\": \"soon\"}}, \"\", \"q\"]",
                                       "[{\"headers\": {\"eta\": 17}}, \"\", \"q\"]"};
    for (size_t i = 0; i < 2; i++) {
        struct celery_unacked u;
        enum entry_skip why;
        struct err e;
        ck_assert_int_eq(celery_parse_unacked(etas[i], strlen(etas[i]), &u, &why, &e), 0);
        ck_assert_str_eq(u.routing_key, "q");
        ck_assert(isnan(u.eta));
        celery_unacked_free(&u);
    }
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded, 0},
        {test_naive_eta_is_utc, 0},
        {test_refused, CHECK_ROWS(bad)},
        {test_bad_eta, 0},
    };
    return check_run_tests("celery", tests, CHECK_ROWS(tests), 0);
}
