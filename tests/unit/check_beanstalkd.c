/* check_beanstalkd.c: unit tests for collectors/beanstalkd/parse.c, the reader of beanstalkd's
 * YAML replies, on bodies recorded from beanstalkd 1.12 (tests/fixtures/beanstalkd/) and
 * hand-made variants, and for the tube names the kind will put on a command line. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beanstalkd/beanstalkd.h"
#include "common/beanstalk.h"
#include "config.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/fixture.h"

/* The body of a recorded reply (the framing is check_common_beanstalk's). */
static char *body_of(const char *name, char **whole)
{
    char path[256];
    size_t len, used;
    snprintf(path, sizeof path, "beanstalkd/%s", name);
    *whole = fixture_text(path, &len);
    struct beanstalk_reply r;
    struct err e;
    ck_assert_int_eq(beanstalk_frame(*whole, len, 1024, &used, &r, &e), 1);
    return (char *)r.body;
}

START_TEST(test_list_tubes)
{
    char *whole, **v;
    size_t n;
    struct err e;
    ck_assert_int_eq(beanstalkd_parse_list(body_of("list-tubes-1.12.txt", &whole), &v, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(v[0], "default");
    ck_assert_str_eq(v[1], "emails");
    ck_assert_ptr_null(v[2]);
    cfg_strv_free(v);
    free(whole);
    ck_assert_int_eq(beanstalkd_parse_list("---\n", &v, &n, &e), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(v[0]);
    cfg_strv_free(v);
    ck_assert_int_eq(beanstalkd_parse_list("---\nemails\n", &v, &n, &e), -1);
    ck_assert_str_eq(e.msg, "a list line that is not \"- item\": \"emails\"");
    ck_assert_int_eq(beanstalkd_parse_list("- emails\n", &v, &n, &e), -1);
    ck_assert_str_eq(e.msg, "a stats body that does not start with \"---\"");
}
END_TEST

START_TEST(test_stats)
{
    char *whole;
    struct err e;
    static const char *const tube_keys[] = {"current-jobs-ready", "current-jobs-buried",
                                            "total-jobs"};
    double v[3] = {-1, -1, -1};
    ck_assert_int_eq(
        beanstalkd_parse_stats(body_of("stats-tube-emails-1.12.txt", &whole), tube_keys, v, 3, &e),
        0);
    ck_assert_double_eq(v[0], 1);
    ck_assert_double_eq(v[1], 1);
    ck_assert_double_eq(v[2], 2);
    free(whole);

    /* Recorded after a worker deleted 3 of 5 jobs and buried 1: cmd-delete is the tube's
     * qrel_messages_consumed_total. */
    static const char *const flow_keys[] = {"cmd-delete", "total-jobs", "current-jobs-buried"};
    ck_assert_int_eq(
        beanstalkd_parse_stats(body_of("stats-tube-flow-1.12.txt", &whole), flow_keys, v, 3, &e),
        0);
    ck_assert_double_eq(v[0], 3);
    ck_assert_double_eq(v[1], 5);
    ck_assert_double_eq(v[2], 1);
    free(whole);

    static const char *const job_keys[] = {"age", "ttr", "timeouts"};
    ck_assert_int_eq(
        beanstalkd_parse_stats(body_of("stats-job-1.12.txt", &whole), job_keys, v, 3, &e), 0);
    ck_assert_double_eq(v[1], 60);
    ck_assert_double_eq(v[2], 0);
    free(whole);

    static const char *const server_keys[] = {"job-timeouts"};
    ck_assert_int_eq(
        beanstalkd_parse_stats(body_of("stats-1.12.txt", &whole), server_keys, v, 1, &e), 0);
    ck_assert_double_eq(v[0], 0);
    free(whole);
}
END_TEST

static const struct check_case bad_stats[] = {
    {"---\nage: 3\n", "stats without ttr"},
    {"---\nage: 3\nttr: -1\n", "ttr: want a number, got \"-1\""},
    {"---\nage: 3\nttr: 6x\n", "ttr: want a number, got \"6x\""},
    {"---\nage: 3\nttr:\n", "a stats line that is not \"key: value\": \"ttr:\""},
    {"---\nage 3\n", "a stats line that is not \"key: value\": \"age 3\""},
    {"age: 3\nttr: 4\n", "a stats body that does not start with \"---\""},
};

START_TEST(test_bad_stats)
{
    static const char *const keys[] = {"age", "ttr"};
    double v[2];
    struct err e;
    check_failed(beanstalkd_parse_stats(bad_stats[_i].in, keys, v, 2, &e), &e, ERR_PROTOCOL,
                 bad_stats[_i].want);
}
END_TEST

START_TEST(test_tube_names)
{
    ck_assert(beanstalkd_tube_name_valid("emails"));
    ck_assert(beanstalkd_tube_name_valid("a-b+c/d;e.f$g_h(i)"));
    ck_assert(!beanstalkd_tube_name_valid(""));
    ck_assert(!beanstalkd_tube_name_valid("-x"));
    ck_assert(!beanstalkd_tube_name_valid("a b"));
    ck_assert(!beanstalkd_tube_name_valid("a\r\nstats"));
    char longname[202];
    memset(longname, 'a', 201);
    longname[201] = '\0';
    ck_assert(!beanstalkd_tube_name_valid(longname));
    longname[200] = '\0';
    ck_assert(beanstalkd_tube_name_valid(longname));
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_list_tubes, 0},
        {test_stats, 0},
        {test_bad_stats, CHECK_ROWS(bad_stats)},
        {test_tube_names, 0},
    };
    return check_run_tests("beanstalkd", tests, CHECK_ROWS(tests), 0);
}
