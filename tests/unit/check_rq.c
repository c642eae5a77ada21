/* check_rq.c: unit tests for collectors/rq/parse.c: RQ 1.13's timestamps (as recorded from a job
 * hash written by RQ itself), its job timeout field, and the lease figures of running jobs; and
 * collectors/rq/dlq_parse.c: the id_field forms of `qrel dlq`, the enqueued_at a replay writes in
 * RQ's own format, and the deliveries a failed job's hash tells. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

START_TEST(test_dlq_id_field)
{
    enum rq_id_field f = RQ_ID_DESCRIPTION;
    char why[300] = "";
    ck_assert_int_eq(rq_dlq_id_field("job_id", &f, why, sizeof why), 0);
    ck_assert_int_eq(f, RQ_ID_JOB_ID);
    ck_assert_int_eq(rq_dlq_id_field("description", &f, why, sizeof why), 0);
    ck_assert_int_eq(f, RQ_ID_DESCRIPTION);
    /* The pickled parts are refused with the reason, not read. */
    const char *refused[] = {"order_id", "meta:order", "kwargs.order", "Job_Id", "", NULL};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        why[0] = 0;
        ck_assert_int_eq(rq_dlq_id_field(refused[i], &f, why, sizeof why), -1);
        ck_assert_str_eq(why, "want job_id (the job id) or description (the job's description): "
                              "RQ pickles a job's arguments and meta, and qrel does not unpickle "
                              "them");
    }
}
END_TEST

START_TEST(test_utcformat)
{
    char out[40];
    /* What RQ 1.13's utcformat() gave for this instant (test_time's recorded enqueued_at). */
    ck_assert_int_eq(rq_utcformat(1796138210.421338, out, sizeof out), 0);
    ck_assert_str_eq(out, "2026-12-01T15:16:50.421338Z");
    double back;
    ck_assert_int_eq(rq_parse_time(out, &back), 0);
    ck_assert_double_eq_tol(back, 1796138210.421338, 1e-6);
    ck_assert_int_eq(rq_utcformat(1796138210.9999998, out, sizeof out), 0);
    ck_assert_str_eq(out, "2026-12-01T15:16:51.000000Z");
    ck_assert_int_eq(rq_utcformat(0, out, sizeof out), 0);
    ck_assert_str_eq(out, "1970-01-01T00:00:00.000000Z");
    ck_assert_int_eq(rq_utcformat(-1, out, sizeof out), -1);
    ck_assert_int_eq(rq_utcformat(NAN, out, sizeof out), -1);
    ck_assert_int_eq(rq_utcformat(INFINITY, out, sizeof out), -1);
    ck_assert_int_eq(rq_utcformat(253402300800.0, out, sizeof out), -1);
    ck_assert_int_eq(rq_utcformat(1796138210, out, 10), -1); /* does not fit */
}
END_TEST

START_TEST(test_dlq_deliveries)
{
    ck_assert_int_eq(rq_dlq_deliveries(NULL), 1); /* no Retry: ran once */
    ck_assert_int_eq(rq_dlq_deliveries("0"), -1); /* Retry(max=N) used up: N unknown */
    ck_assert_int_eq(rq_dlq_deliveries("2"), -1);
}
END_TEST

/* The replay stamp of a job hash: none is 0 (never replayed), a count is itself, else unknown. */
START_TEST(test_dlq_replays)
{
    ck_assert_int_eq(rq_dlq_replays(NULL), 0);
    ck_assert_int_eq(rq_dlq_replays("1"), 1);
    ck_assert_int_eq(rq_dlq_replays("12"), 12);
    ck_assert_int_eq(rq_dlq_replays(""), -1);
    ck_assert_int_eq(rq_dlq_replays("-1"), -1);
    ck_assert_int_eq(rq_dlq_replays("2x"), -1);
    ck_assert_int_eq(rq_dlq_replays("1234567890123456789"), -1);
}
END_TEST

/* A worker hash's queues field, as register_birth joins the names: whole names only. */
START_TEST(test_worker_serves)
{
    const char *f = "emails,q1,default";
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), "emails"), 1);
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), "q1"), 1);
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), "default"), 1);
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), "email"), 0);
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), "q"), 0);
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), "emails,q1"), 0);
    ck_assert_int_eq(rq_worker_serves(f, strlen(f), ""), 0);
    ck_assert_int_eq(rq_worker_serves("emails", 6, "emails"), 1);
    ck_assert_int_eq(rq_worker_serves("emails,q1", 6, "q1"), 0); /* only len bytes are read */
    ck_assert_int_eq(rq_worker_serves("a,,b", 4, ""), 1);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_time, 0},         {test_timeout, 0},       {test_lease, 0},
        {test_dlq_id_field, 0}, {test_utcformat, 0},     {test_dlq_deliveries, 0},
        {test_dlq_replays, 0},  {test_worker_serves, 0},
    };
    return check_run_tests("rq", tests, CHECK_ROWS(tests), 0);
}
