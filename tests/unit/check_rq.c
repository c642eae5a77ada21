/* check_rq.c: unit tests for collectors/rq/parse.c: RQ 1.13's timestamps (as recorded from a job
 * hash written by RQ itself), its job timeout field, and the lease figures of running jobs. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "rq/rq.h"
#include "support/check_run.h"

START_TEST(test_time)
{
    double t;
    /* enqueued_at of a job RQ 1.13 wrote (tests/integration/rq.sh shows the layout). */
    ck_assert_int_eq(rq_parse_time("2026-12-01T15:16:50.421338Z", &t), 0);
    ck_assert_double_eq_tol(t, 1796138210.421338, 1e-6);
    ck_assert_int_eq(rq_parse_time("2026-12-01T15:16:50Z", &t), 0);
    ck_assert_double_eq(t, 1796138210);
    ck_assert_int_eq(rq_parse_time("", &t), -1);
    ck_assert_int_eq(rq_parse_time(NULL, &t), -1);
    ck_assert_int_eq(rq_parse_time("1796138210", &t), -1);
    ck_assert_int_eq(rq_parse_time("2026-12-01 15:16:50", &t), -1);
}
END_TEST

START_TEST(test_timeout)
{
    double s = -5;
    ck_assert_int_eq(rq_job_timeout("30", 180, &s), 1);
    ck_assert_double_eq(s, 30);
    ck_assert_int_eq(rq_job_timeout(NULL, 180, &s), 1);
    ck_assert_double_eq(s, 180);
    ck_assert_int_eq(rq_job_timeout("", 90, &s), 1);
    ck_assert_double_eq(s, 90);
    ck_assert_int_eq(rq_job_timeout("-1", 180, &s), 0);
    ck_assert_int_eq(rq_job_timeout("3m", 180, &s), -1);
    ck_assert_int_eq(rq_job_timeout("nan", 180, &s), -1);
}
END_TEST

START_TEST(test_lease)
{
    double oldest = -1, margin = -1, timeout = -1;
    ck_assert_int_eq(rq_lease(NULL, 0, &oldest, &margin, &timeout), 0);
    ck_assert_double_eq(oldest, 0);

    /* The smallest ratio wins, with its own job's timeout: 60/50 < 30/20. */
    struct rq_hold h[] = {{30, 20}, {60, 50}, {0, 500}, {45, 0}};
    ck_assert_int_eq(rq_lease(h, 4, &oldest, &margin, &timeout), 1);
    ck_assert_double_eq(oldest, 500); /* the job without a limit is still the longest hold */
    ck_assert_double_eq(margin, 1.2);
    ck_assert_double_eq(timeout, 60);

    /* Only jobs without a limit or not yet held: no margin. */
    struct rq_hold none[] = {{0, 12}, {30, 0}};
    ck_assert_int_eq(rq_lease(none, 2, &oldest, &margin, &timeout), 0);
    ck_assert_double_eq(oldest, 12);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_time, 0},
        {test_timeout, 0},
        {test_lease, 0},
    };
    return check_run_tests("rq", tests, CHECK_ROWS(tests), 0);
}
