/* check_sidekiq.c: unit tests for collectors/sidekiq/parse.c on job and work JSON as Sidekiq 6.4
 * wrote it (recorded from the integration test's Redis) and 7.x's work entry, whose payload is an
 * object, on a process's info (6.4 recorded, 7.x's shape), and on what must be refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
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
    enum entry_skip why;
    struct err e;
    ck_assert_int_eq(sidekiq_parse_job(job64, strlen(job64), &q, &at, &why, &e), 0);
    ck_assert_str_eq(q, "emails");
    ck_assert_double_eq_tol(at, 1796138815.1540854, 1e-6);
    free(q);
    /* A scheduled job has not been enqueued yet. */
    const char sched[] = "{\"queue\":\"q\",\"class\":\"OkJob\",\"at\":1796142415.2}";
    ck_assert_int_eq(sidekiq_parse_job(sched, strlen(sched), &q, &at, &why, &e), 0);
    ck_assert(isnan(at));
    free(q);
}
END_TEST

/* The scanner reads top-level members only, and hands anything unusual to jansson. */
START_TEST(test_top_level_only)
{
    char *q;
    double at;
    enum entry_skip why;
    struct err e;
    const char nested[] = "{\"args\":[{\"enqueued_at\":5,\"queue\":\"x\"}, \"a]}\"],"
                          "\"queue\":\"q\",\"enqueued_at\":7.5}";
    ck_assert_int_eq(sidekiq_parse_job(nested, strlen(nested), &q, &at, &why, &e), 0);
    ck_assert_str_eq(q, "q");
    ck_assert_double_eq(at, 7.5);
    free(q);
    const char escaped[] = "{\"queue\":\"a\\\"b\",\"enqueued_at\":1}";
    ck_assert_int_eq(sidekiq_parse_job(escaped, strlen(escaped), &q, &at, &why, &e), 0);
    check_str_free(q, "a\"b");
    const char null_at[] = "{\"queue\":\"q\",\"enqueued_at\":null}";
    ck_assert_int_eq(sidekiq_parse_job(null_at, strlen(null_at), &q, &at, &why, &e), -1);
    ck_assert_str_eq(e.msg, "job: want \"enqueued_at\" as epoch seconds");
    ck_assert_int_eq(why, ENTRY_BAD_VALUE);
    const char trailing[] = "{\"queue\":\"q\"} x";
    ck_assert_int_eq(sidekiq_parse_job(trailing, strlen(trailing), &q, &at, &why, &e), -1);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
}
END_TEST

START_TEST(test_work)
{
    char *q;
    double at = 0;
    enum entry_skip why;
    struct err e;
    ck_assert_int_eq(sidekiq_parse_work(work64, strlen(work64), &q, &at, &why, &e), 0);
    ck_assert_str_eq(q, "emails");
    ck_assert_double_eq(at, 1796138787);
    free(q);
    ck_assert_int_eq(sidekiq_parse_work(work7, strlen(work7), &q, &at, &why, &e), 0);
    ck_assert_str_eq(q, "critical");
    ck_assert_double_eq(at, 1796138787.5);
    free(q);
}
END_TEST

/* What a job or work entry no Sidekiq wrote gives: -1, no queue, and the reason it is skipped
 * and counted for (entries.h). */
static char deep[2 * 3000 + 1];
static const struct {
    const char *json;
    int work;
    enum entry_skip why;
    const char *msg;
} bad[] = {
    {"[1]", 0, ENTRY_NOT_JSON, "job: want a JSON object"},
    {"{\"queue\":\"\"}", 0, ENTRY_MISSING_FIELD, "job: want a \"queue\" string"},
    {"{\"class\":\"X\"}", 0, ENTRY_MISSING_FIELD, "job: want a \"queue\" string"},
    {"{\"class\":\"X\",\"at\":1796142415.2}", 0, ENTRY_MISSING_FIELD,
     "job: want a \"queue\" string"}, /* a scheduled job without its queue */
    {"{\"queue\":\"q\",\"enqueued_at\":\"yesterday\"}", 0, ENTRY_BAD_VALUE,
     "job: want \"enqueued_at\" as epoch seconds"},
    {"{\"queue\":\"q\",\"queue\":\"r\"}", 0, ENTRY_NOT_JSON, NULL},
    {"{\"queue\":\"q\",\"enqueued_at\":NaN}", 0, ENTRY_NOT_JSON, NULL},
    {"not json", 0, ENTRY_NOT_JSON, NULL},
    {NULL, 0, ENTRY_TOO_DEEP, NULL}, /* deep: [[[...]]] 3,000 levels */
    {"{\"queue\":\"q\"}", 1, ENTRY_MISSING_FIELD, "work: want \"run_at\" as epoch seconds"},
    {"{\"queue\":\"q\",\"run_at\":\"now\"}", 1, ENTRY_BAD_VALUE,
     "work: want \"run_at\" as epoch seconds"},
    {"not json", 1, ENTRY_NOT_JSON, NULL},
    {NULL, 1, ENTRY_TOO_DEEP, NULL},
};

START_TEST(test_refused)
{
    char *q = (char *)"x";
    double at;
    enum entry_skip why = ENTRY_SKIP_COUNT;
    struct err e;
    memset(deep, '[', 3000);
    memset(deep + 3000, ']', 3000);
    const char *json = bad[_i].json ? bad[_i].json : deep;
    size_t len = strlen(json);
    int rc = bad[_i].work ? sidekiq_parse_work(json, len, &q, &at, &why, &e)
                          : sidekiq_parse_job(json, len, &q, &at, &why, &e);
    ck_assert_int_eq(rc, -1);
    ck_assert_ptr_null(q);
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_int_eq(why, bad[_i].why);
    if (bad[_i].msg)
        ck_assert_str_eq(e.msg, bad[_i].msg);
}
END_TEST

/* Times as written, whatever their sign: the collector judges them (entry_age) and counts a bad
 * one, so a job enqueued at -5 still names its queue. */
START_TEST(test_times_as_written)
{
    char *q;
    double at;
    enum entry_skip why;
    struct err e;
    const char neg[] = "{\"queue\":\"q\",\"enqueued_at\":-5}";
    ck_assert_int_eq(sidekiq_parse_job(neg, strlen(neg), &q, &at, &why, &e), 0);
    check_str_free(q, "q");
    ck_assert_double_eq(at, -5);
    const char work[] = "{\"queue\":\"q\",\"run_at\":-3}";
    ck_assert_int_eq(sidekiq_parse_work(work, strlen(work), &q, &at, &why, &e), 0);
    check_str_free(q, "q");
    ck_assert_double_eq(at, -3);
}
END_TEST

/* enqueued_at as the parser's own decimal reading gives it (digits and a point, at most 2^53 as
 * an integer) and as strtod gives it otherwise: the very same double for every text, short,
 * 17 digits, a trailing point, an exponent; and a NULL queue checks the job without a copy. */
START_TEST(test_enqueued_at_exact)
{
    static const char *const fixed[] = {"0",
                                        "1.",
                                        "007.50",
                                        "1796541877.17724",
                                        "1796541877.1770961",
                                        "9007199254740992",
                                        "9007199254740993",
                                        "9007199254740995",
                                        "1796541877.177096123",
                                        "18446744073709551615",
                                        "0.1",
                                        "0.0000000000000000000001",
                                        "0.00000000000000000000001",
                                        "123456789012345678901234",
                                        "1.5e9",
                                        "1700000000.000001"};
    unsigned long long x = 88172645463325252ULL; /* xorshift: the same texts every run */
    for (size_t i = 0; i < 50000 + sizeof fixed / sizeof fixed[0]; i++) {
        char num[48], job[96];
        if (i < sizeof fixed / sizeof fixed[0]) {
            snprintf(num, sizeof num, "%s", fixed[i]);
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* an epoch of Ruby's (10 digits) every other text, else 1 to 12 digits; 1 to 9 after
             * the point: up to 19 digits in all, most of them past 2^53 */
            int frac = 1 + (int)(x % 9), wdigits = (x >> 4) % 2 ? 10 : 1 + (int)((x >> 5) % 12);
            unsigned long long wmod = 1, mod = 1;
            for (int d = 0; d < wdigits; d++)
                wmod *= 10;
            for (int d = 0; d < frac; d++)
                mod *= 10;
            unsigned long long whole = (x >> 20) % wmod;
            snprintf(num, sizeof num, "%llu.%0*llu", whole, frac, (x >> 8) % mod);
        }
        snprintf(job, sizeof job, "{\"queue\":\"q\",\"enqueued_at\":%s}", num);
        double at, want = strtod(num, NULL);
        enum entry_skip why;
        struct err e;
        ck_assert_int_eq(sidekiq_parse_job(job, strlen(job), NULL, &at, &why, &e), 0);
        ck_assert_msg(memcmp(&at, &want, sizeof at) == 0, "%s: %.17g, strtod %.17g", num, at, want);
    }
}
END_TEST

/* A process's heartbeat: alive within stale_after, stopped after it, and neither when the beat is
 * no time (not a number, not finite, before 2000, far ahead): then its jobs are not orphaned. */
static const struct {
    const char *beat;
    enum sidekiq_beat want;
} beats[] = {
    {"1700000095.5", SIDEKIQ_ALIVE},   /* 4.5 s ago */
    {"1700000080", SIDEKIQ_ALIVE},     /* exactly stale_after */
    {"1700000130", SIDEKIQ_ALIVE},     /* 30 s ahead: a clock a little ahead */
    {"1700000079.9", SIDEKIQ_STOPPED}, /* 20.1 s ago */
    {"1699990000", SIDEKIQ_STOPPED},
    {"soon", SIDEKIQ_BEAT_BAD},
    {"", SIDEKIQ_BEAT_BAD},
    {"1700000095x", SIDEKIQ_BEAT_BAD},
    {" 1700000095", SIDEKIQ_BEAT_BAD},
    {"nan", SIDEKIQ_BEAT_BAD},
    {"inf", SIDEKIQ_BEAT_BAD},
    {"-inf", SIDEKIQ_BEAT_BAD},
    {"1e999", SIDEKIQ_BEAT_BAD},
    {"0", SIDEKIQ_BEAT_BAD},
    {"-5", SIDEKIQ_BEAT_BAD},
    {"1700086400", SIDEKIQ_BEAT_BAD}, /* a day ahead */
};

/* A process's info as Sidekiq 6.4 wrote it (recorded: `sidekiq -q critical,2 -q emails -q
 * default`, the weight written as the queue once), and 7.x's shape with capsules and weights. */
static const char info64[] =
    "{\"hostname\":\"vm\",\"started_at\":1796532369.0345905,\"pid\":15064,\"tag\":\"\","
    "\"concurrency\":1,\"queues\":[\"critical\",\"emails\",\"default\"],\"labels\":[],"
    "\"identity\":\"vm:15064:15f5149bc593\"}";
static const char info7[] =
    "{\"hostname\":\"vm\",\"pid\":1,\"queues\":[\"a\",\"b\",\"a\"],\"weights\":[{\"a\":2,"
    "\"b\":1}],\"version\":\"7.2.4\",\"embedded\":false}";

START_TEST(test_process)
{
    char **q;
    enum entry_skip why;
    struct err e = {0};
    ck_assert_int_eq(sidekiq_parse_process(info64, strlen(info64), &q, &why, &e), 0);
    ck_assert_str_eq(q[0], "critical");
    ck_assert_str_eq(q[1], "emails");
    ck_assert_str_eq(q[2], "default");
    ck_assert_ptr_null(q[3]);
    cfg_strv_free(q);
    ck_assert_int_eq(sidekiq_parse_process(info7, strlen(info7), &q, &why, &e), 0);
    ck_assert_str_eq(q[0], "a"); /* a queue listed twice counts once */
    ck_assert_str_eq(q[1], "b");
    ck_assert_ptr_null(q[2]);
    cfg_strv_free(q);
    static const struct {
        const char *info;
        enum entry_skip why;
        const char *msg;
    } refused[] = {
        {"not json", ENTRY_NOT_JSON, "process info: not JSON"},
        {"[1]", ENTRY_NOT_JSON, "process info: want a JSON object"},
        {"{\"pid\":1}", ENTRY_MISSING_FIELD, "process info: want a \"queues\" array"},
        {"{\"queues\":\"a\"}", ENTRY_MISSING_FIELD, "process info: want a \"queues\" array"},
        {"{\"queues\":[\"a\",7]}", ENTRY_BAD_VALUE, "process info: want queue names"},
        {"{\"queues\":[\"\"]}", ENTRY_BAD_VALUE, "process info: want queue names"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        q = (char **)1;
        ck_assert_int_eq(
            sidekiq_parse_process(refused[i].info, strlen(refused[i].info), &q, &why, &e), -1);
        ck_assert_ptr_null(q);
        ck_assert_int_eq(why, refused[i].why);
        ck_assert_msg(strncmp(e.msg, refused[i].msg, strlen(refused[i].msg)) == 0, "%s: %s",
                      refused[i].info, e.msg);
    }
}
END_TEST

START_TEST(test_beat)
{
    const char *b = beats[_i].beat;
    ck_assert_msg(sidekiq_judge_beat(b, strlen(b), 1700000100.0, 20.0) == beats[_i].want,
                  "beat \"%s\"", b);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_job, 0},
        {test_top_level_only, 0},
        {test_work, 0},
        {test_refused, CHECK_ROWS(bad)},
        {test_times_as_written, 0},
        {test_enqueued_at_exact, 0},
        {test_beat, CHECK_ROWS(beats)},
        {test_process, 0},
    };
    return check_run_tests("sidekiq", tests, CHECK_ROWS(tests), 0);
}
