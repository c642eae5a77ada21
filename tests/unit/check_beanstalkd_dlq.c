/* check_beanstalkd_dlq.c: unit tests for the pure parts of `qrel dlq` for beanstalkd
 * (collectors/beanstalkd/parse.c): a stats-job body as beanstalkd 1.12 writes it (recorded), what
 * it must refuse, and the id_field forms. */
#include <check.h>
#include <string.h>

#include "beanstalkd/beanstalkd.h"
#include "support/check_run.h"

static const char buried[] = "---\nid: 17\ntube: emails\nstate: buried\npri: 100\nage: 42\n"
                             "delay: 0\nttr: 60\ntime-left: 0\nfile: 0\nreserves: 2\ntimeouts: 0\n"
                             "releases: 1\nburies: 1\nkicks: 0\n";

START_TEST(test_job)
{
    struct beanstalkd_job j;
    struct err e = {0};
    ck_assert_int_eq(beanstalkd_parse_job(buried, &j, &e), 0);
    ck_assert_uint_eq(j.id, 17);
    ck_assert_str_eq(j.tube, "emails");
    ck_assert_str_eq(j.state, "buried");
    ck_assert_double_eq(j.age, 42);
    ck_assert_int_eq(j.reserves, 2);
    ck_assert_int_eq(j.releases, 1);
}
END_TEST

static const char *const bad[] = {
    "id: 1\ntube: a\n",                                                       /* no "---" */
    "---\nid: 1\nstate: buried\nage: 1\nreserves: 0\nreleases: 0\n",          /* no tube */
    "---\nid: 1\ntube: a\nstate: buried\nage: x\nreserves: 0\nreleases: 0\n", /* age no number */
    "---\nid: 1\ntube: a\nstate: buried\nreserves: 0\nreleases: 0\n",         /* no age */
    "---\nid: 1\ntube: a\nstate: a-state-longer-than-any\nage: 1\nreserves: 0\nreleases: 0\n",
};

START_TEST(test_job_refused)
{
    struct beanstalkd_job j;
    struct err e = {0};
    ck_assert_int_eq(beanstalkd_parse_job(bad[_i], &j, &e), -1);
    ck_assert_ptr_nonnull(strstr(e.msg, "stats-job"));
}
END_TEST

START_TEST(test_id_field)
{
    char why[300];
    ck_assert_int_eq(beanstalkd_dlq_id_field("order.id", why, sizeof why), 0);
    ck_assert_int_eq(beanstalkd_dlq_id_field("id", why, sizeof why), 0);
    const char *refused[] = {"", ".id", "order.", "order..id"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        ck_assert_int_eq(beanstalkd_dlq_id_field(refused[i], why, sizeof why), -1);
    ck_assert_ptr_nonnull(strstr(why, "want a key of the job body parsed as JSON"));
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_job, 0},
        {test_job_refused, CHECK_ROWS(bad)},
        {test_id_field, 0},
    };
    return check_run_tests("beanstalkd_dlq", tests, CHECK_ROWS(tests), 0);
}
