/* check_celery.c: unit tests for collectors/celery/parse.c on entries of kombu's `unacked` hash as
 * Celery 5.2 wrote them (recorded from the integration test's Redis, bodies shortened), one that
 * kombu restored after its visibility timeout, and what must be refused. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "celery/celery.h"
#include "support/check_refused.h"
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
    struct err e;
    ck_assert_int_eq(celery_parse_unacked(eta_task, strlen(eta_task), &u, &e), 0);
    ck_assert_str_eq(u.routing_key, "celery");
    ck_assert_double_eq_tol(u.eta, 1796143070.453358, 1e-6);
    ck_assert_int_eq(u.redelivered, 0);
    celery_unacked_free(&u);
    ck_assert_int_eq(celery_parse_unacked(restored, strlen(restored), &u, &e), 0);
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
    struct err e;
    ck_assert_int_eq(celery_parse_unacked(naive, strlen(naive), &u, &e), 0);
    ck_assert_double_eq(u.eta, 1796143070);
    celery_unacked_free(&u);
}
END_TEST

static const struct check_case bad[] = {
    {"{\"a\": 1}", "unacked: want [message, exchange, routing_key]"},
    {"[{}, \"\"]", "unacked: want [message, exchange, routing_key]"},
    {"[{}, \"\", 5]", "unacked: want [message, exchange, routing_key]"},
    {"[{\"headers\": []}, \"\", \"q\"]", "unacked: want the message's headers as an object"},
    {"[{\"headers\": {\"eta\": \"soon\"}}, \"\", \"q\"]",
     "unacked: want headers.eta as an ISO 8601 time"},
    {"[{\"headers\": {\"eta\": 17}}, \"\", \"q\"]",
     "unacked: want headers.eta as an ISO 8601 time"},
};

START_TEST(test_refused)
{
    struct celery_unacked u;
    struct err e;
    check_failed(celery_parse_unacked(bad[_i].in, strlen(bad[_i].in), &u, &e), &e, ERR_PROTOCOL,
                 bad[_i].want);
    ck_assert_ptr_null(u.routing_key);
}
END_TEST

START_TEST(test_not_json)
{
    struct celery_unacked u;
    struct err e;
    ck_assert_int_eq(celery_parse_unacked("[1,", 3, &u, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_ptr_nonnull(strstr(e.msg, "unacked: not JSON"));
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_recorded, 0},
        {test_naive_eta_is_utc, 0},
        {test_refused, CHECK_ROWS(bad)},
        {test_not_json, 0},
    };
    return check_run_tests("celery", tests, CHECK_ROWS(tests), 0);
}
