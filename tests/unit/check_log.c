/* check_log.c: the one rate limit of repeated log lines, on a test's clock: a new key passes at
 * once, the same key once per window (and at once after a reset), a burst lets that many through
 * and then counts what it held back, and a zeroed limit with its two settings is ready to use. */
#include <check.h>

#include "log.h"
#include "support/check_run.h"

/* The scheduler's policy: a new message at once, the same one once a minute. */
START_TEST(test_same_key_once_per_window)
{
    struct log_limit l = {.every_ms = 60000};
    ck_assert_int_eq(log_limit_pass(&l, "refused", 1000, NULL), 1);
    ck_assert_int_eq(log_limit_pass(&l, "refused", 2000, NULL), 0);
    ck_assert_int_eq(log_limit_pass(&l, "refused", 60999, NULL), 0);
    ck_assert_int_eq(log_limit_pass(&l, "timed out", 61000, NULL), 1); /* new: at once */
    ck_assert_int_eq(log_limit_pass(&l, "refused", 61001, NULL), 1);   /* changed again */
    ck_assert_int_eq(log_limit_pass(&l, "refused", 121000, NULL), 0);
    long held = -1;
    ck_assert_int_eq(log_limit_pass(&l, "refused", 121001, &held), 1); /* a minute later */
    ck_assert_int_eq(held, 1);
    /* A success in between: the same failure again is news. */
    ck_assert_int_eq(log_limit_pass(&l, "refused", 121002, NULL), 0);
    log_limit_reset(&l);
    ck_assert_int_eq(log_limit_pass(&l, "refused", 121003, NULL), 1);
}
END_TEST

/* The HTTP server's policy: five lines per window whatever they say, then a count of the rest. */
START_TEST(test_burst_then_count)
{
    struct log_limit l = {.every_ms = 10000, .burst = 5};
    long held = -1;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(log_limit_pass(&l, NULL, 100 + i, &held), 1);
        ck_assert_int_eq(held, 0);
    }
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(log_limit_pass(&l, NULL, 200 + i, &held), 0);
        ck_assert_int_eq(held, 0);
    }
    ck_assert_int_eq(log_limit_pass(&l, NULL, 10100, &held), 1);
    ck_assert_int_eq(held, 7);
    ck_assert_int_eq(log_limit_pass(&l, NULL, 10101, &held), 1);
    ck_assert_int_eq(held, 0);
}
END_TEST

/* log_kv_limited logs either way (held lines at debug level): it must not crash or leak when
 * the line is held. The level it chose is not observable here without capturing stderr. */
START_TEST(test_log_kv_limited)
{
    log_setup(LOG_ERROR, 0); /* keep the test's output quiet */
    struct log_limit l = {.every_ms = 60000};
    log_kv_limited(&l, LOG_WARN, "e1", "collection failed", "source", "cache", NULL);
    log_kv_limited(&l, LOG_WARN, "e1", "collection failed", "source", "cache", NULL);
    ck_assert_int_eq(l.passed, 1);
    ck_assert_int_eq(l.held, 1);
    log_setup(LOG_INFO, 0);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_same_key_once_per_window, 0},
        {test_burst_then_count, 0},
        {test_log_kv_limited, 0},
    };
    return check_run_tests("log", tests, CHECK_ROWS(tests), 0);
}
