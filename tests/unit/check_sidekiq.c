/* check_sidekiq.c: unit tests for collectors/sidekiq/parse.c on job and work JSON as Sidekiq 6.4
 * wrote it (recorded from the integration test's Redis) and 7.x's work entry, whose payload is an
 * object, and on what must be refused. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "sidekiq/sidekiq.h"
#include "support/check_run.h"
#include "support/check_str.h"

static const char job64[] =
    "{\"retry\":0,\"queue\":\"emails\",\"args\":[],\"class\":\"DeadJob\",\"jid\":"
    "\"10fb9e141ed0ca026e3f59eb\",\"created_at\":1796138815.1538267,\"enqueued_at\":"
    "1796138815.1540854,\"error_message\":\"the provider said no\",\"error_class\":"
    "\"RuntimeError\",\"failed_at\":1796138822.4,\"retry_count\":0}";

static const char work64[] =
    "{\"queue\":\"emails\",\"payload\":\"{\\\"retry\\\":true,\\\"queue\\\":\\\"emails\\\","
    "\\\"class\\"
    "\":\\\"HangJob\\\",\\\"args\\\":[\\\"60\\\"],\\\"jid\\\":\\\"7e8b020aaedd00a5644bb3d7\\\"}\","
    "\"run_at\":1796138787}";

static const char work7[] = "{\"queue\":\"critical\",\"payload\":{\"class\":\"X\",\"jid\":\"a\"},"
                            "\"run_at\":1796138787.5}";

START_TEST(test_job)
{
    char *q;
    double at;
    struct err e;
    ck_assert_int_eq(sidekiq_parse_job(job64, strlen(job64), &q, &at, &e), 0);
    ck_assert_str_eq(q, "emails");
    ck_assert_double_eq_tol(at, 1796138815.1540854, 1e-6);
    free(q);
    /* A scheduled job has not been enqueued yet. */
    const char sched[] = "{\"queue\":\"q\",\"class\":\"OkJob\",\"at\":1796142415.2}";
    ck_assert_int_eq(sidekiq_parse_job(sched, strlen(sched), &q, &at, &e), 0);
    ck_assert_double_eq(at, -1);
    free(q);
}
END_TEST

/* The scanner reads top-level members only, and hands anything unusual to jansson. */
START_TEST(test_top_level_only)
{
    char *q;
    double at;
    struct err e;
    const char nested[] = "{\"args\":[{\"enqueued_at\":5,\"queue\":\"x\"}, \"a]}\"],"
                          "\"queue\":\"q\",\"enqueued_at\":7.5}";
    ck_assert_int_eq(sidekiq_parse_job(nested, strlen(nested), &q, &at, &e), 0);
    ck_assert_str_eq(q, "q");
    ck_assert_double_eq(at, 7.5);
    free(q);
    const char escaped[] = "{\"queue\":\"a\\\"b\",\"enqueued_at\":1}";
    ck_assert_int_eq(sidekiq_parse_job(escaped, strlen(escaped), &q, &at, &e), 0);
    check_str_free(q, "a\"b");
    const char null_at[] = "{\"queue\":\"q\",\"enqueued_at\":null}";
    ck_assert_int_eq(sidekiq_parse_job(null_at, strlen(null_at), &q, &at, &e), -1);
    ck_assert_str_eq(e.msg, "job: want \"enqueued_at\" as epoch seconds");
    const char trailing[] = "{\"queue\":\"q\"} x";
    ck_assert_int_eq(sidekiq_parse_job(trailing, strlen(trailing), &q, &at, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
}
END_TEST

START_TEST(test_work)
{
    char *q;
    double at = 0;
    struct err e;
    ck_assert_int_eq(sidekiq_parse_work(work64, strlen(work64), &q, &at, &e), 0);
    ck_assert_str_eq(q, "emails");
    ck_assert_double_eq(at, 1796138787);
    free(q);
    ck_assert_int_eq(sidekiq_parse_work(work7, strlen(work7), &q, &at, &e), 0);
    ck_assert_str_eq(q, "critical");
    ck_assert_double_eq(at, 1796138787.5);
    free(q);
}
END_TEST

static const struct {
    const char *json;
    int work;
    const char *msg;
} bad[] = {
    {"[1]", 0, "job: want a JSON object"},
    {"{\"queue\":\"\"}", 0, "job: want a \"queue\" string"},
    {"{\"class\":\"X\"}", 0, "job: want a \"queue\" string"},
    {"{\"queue\":\"q\",\"enqueued_at\":\"yesterday\"}", 0,
     "job: want \"enqueued_at\" as epoch seconds"},
    {"{\"queue\":\"q\",\"queue\":\"r\"}", 0, NULL},
    {"{\"queue\":\"q\"}", 1, "work: want \"run_at\" as epoch seconds"},
    {"{\"queue\":\"q\",\"run_at\":-3}", 1, "work: want \"run_at\" as epoch seconds"},
    {"not json", 1, NULL},
};

START_TEST(test_refused)
{
    char *q = (char *)"x";
    double at;
    struct err e;
    size_t len = strlen(bad[_i].json);
    int rc = bad[_i].work ? sidekiq_parse_work(bad[_i].json, len, &q, &at, &e)
                          : sidekiq_parse_job(bad[_i].json, len, &q, &at, &e);
    ck_assert_int_eq(rc, -1);
    ck_assert_ptr_null(q);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    if (bad[_i].msg)
        ck_assert_str_eq(e.msg, bad[_i].msg);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_job, 0},
        {test_top_level_only, 0},
        {test_work, 0},
        {test_refused, CHECK_ROWS(bad)},
    };
    return check_run_tests("sidekiq", tests, CHECK_ROWS(tests), 0);
}
