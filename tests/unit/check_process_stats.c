/* check_process_stats.c: the /proc parsers behind the process_* families (process_stats.h) on
 * recorded text, a command name with spaces and parentheses, and text that is not what it should
 * be; the live reader against getrlimit and an opened descriptor; and the request counters behind
 * qrel_http_requests_total (http_requests.h). */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "http_requests.h"
#include "process_stats.h"
#include "support/check_run.h"

/* /proc/1/stat recorded on a Linux test machine (fields 14, 15, 22, 23, 24: 6979 19054 17
 * 57008128 3648). */
#define STAT_TAIL                                                                                  \
    " S 0 0 0 0 -1 4194560 121301 590050270 0 74685 6979 19054 2711612 1586607 10 -10 19 0 17 "    \
    "57008128 3648 18446744073709551615 1 1 0 0 0 0 0 4096 1256 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 "   \
    "0 0 0\n"

static void expect_recorded(const char *text)
{
    struct process_stat st;
    ck_assert_int_eq(process_stat_parse(text, &st), 0);
    ck_assert_uint_eq(st.utime, 6979);
    ck_assert_uint_eq(st.stime, 19054);
    ck_assert_uint_eq(st.starttime, 17);
    ck_assert_uint_eq(st.vsize, 57008128);
    ck_assert_int_eq(st.rss, 3648);
}

START_TEST(test_stat_recorded)
{
    expect_recorded("1 (process_api)" STAT_TAIL);
}
END_TEST

/* A process may name itself anything (prctl PR_SET_NAME): fields count from the last ')'. */
START_TEST(test_stat_name_with_spaces_and_parentheses)
{
    expect_recorded("4242 (a) 1 2 (b c)" STAT_TAIL);
}
END_TEST

START_TEST(test_stat_refused)
{
    struct process_stat st;
    ck_assert_int_eq(process_stat_parse(NULL, &st), -1);
    ck_assert_int_eq(process_stat_parse("", &st), -1);
    ck_assert_int_eq(process_stat_parse("1 no parentheses S 0 0", &st), -1);
    /* Cut before field 24 (rss). */
    ck_assert_int_eq(process_stat_parse("1 (x) S 0 0 0 0 -1 4194560 1 2 0 3 6979 19054 2 1 10 -10 "
                                        "19 0 17 57008128",
                                        &st),
                     -1);
    /* utime not a number. */
    ck_assert_int_eq(process_stat_parse("1 (x) S 0 0 0 0 -1 4194560 1 2 0 3 x 19054 2 1 10 -10 19 "
                                        "0 17 57008128 3648 0\n",
                                        &st),
                     -1);
}
END_TEST

START_TEST(test_boot_time)
{
    unsigned long long b = 0;
    /* /proc/stat recorded on the same machine, shortened to its first lines and btime. */
    ck_assert_int_eq(
        process_boot_time_parse("cpu  2595536 252729 1666206 723596 12551 0 9622 0 0 0\n"
                                "cpu0 1288665 123303 822018 390848 2121 0 3162 0 0 0\n"
                                "intr 0\nctxt 1234\nbtime 1796454899\nprocesses 9\n",
                                &b),
        0);
    ck_assert_uint_eq(b, 1796454899ULL);
    ck_assert_int_eq(process_boot_time_parse("ctxt 1\nbtime 1700000000", &b), 0); /* no last \n */
    ck_assert_uint_eq(b, 1700000000ULL);
    ck_assert_int_eq(process_boot_time_parse("cpu 1 2 3\nprocesses 9\n", &b), -1);
    ck_assert_int_eq(process_boot_time_parse("xbtime 5\nbtime x\n", &b), -1);
    ck_assert_int_eq(process_boot_time_parse("", &b), -1);
}
END_TEST

/* The live figures: one more descriptor opened shows as one more; the limit is getrlimit's; the
 * start lies between boot and now. */
START_TEST(test_read_self)
{
    struct process_stats a, b;
    process_stats_read(&a);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    process_stats_read(&b);
    close(fd);
    ck_assert(a.have_stat && a.have_start && a.have_fds);
    ck_assert_double_eq(b.open_fds, a.open_fds + 1);
    ck_assert_double_gt(a.resident_bytes, 0);
    ck_assert_double_ge(a.virtual_bytes, a.resident_bytes);
    ck_assert_double_ge(b.cpu_seconds, a.cpu_seconds);
    ck_assert_double_gt(a.start_time, 1e9);
    ck_assert_double_le(a.start_time, (double)time(NULL) + 1);
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur != RLIM_INFINITY) {
        ck_assert(a.have_max_fds);
        ck_assert_double_eq(a.max_fds, (double)rl.rlim_cur);
    }
}
END_TEST

START_TEST(test_requests)
{
    struct http_requests *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    http_requests_count(r, HTTP_HANDLER_METRICS, 200);
    http_requests_count(r, HTTP_HANDLER_METRICS, 200);
    http_requests_count(r, HTTP_HANDLER_METRICS, 503);
    http_requests_count(r, HTTP_HANDLER_OTHER, 404);
    http_requests_count(r, HTTP_HANDLER_OTHER, 99);  /* not a status: not counted */
    http_requests_count(r, HTTP_HANDLER_OTHER, 600); /* nor this */
    http_requests_count(r, HTTP_HANDLER_COUNT, 200); /* nor a handler out of range */
    ck_assert_uint_eq(http_requests_get(r, HTTP_HANDLER_METRICS, 200), 2);
    ck_assert_uint_eq(http_requests_get(r, HTTP_HANDLER_METRICS, 503), 1);
    ck_assert_uint_eq(http_requests_get(r, HTTP_HANDLER_PROBE, 200), 0);
    ck_assert_uint_eq(http_requests_get(r, HTTP_HANDLER_OTHER, 404), 1);
    ck_assert_uint_eq(http_requests_get(r, HTTP_HANDLER_OTHER, 600), 0);
    ck_assert_str_eq(http_handler_label(r, HTTP_HANDLER_METRICS), "/metrics");
    r->metrics_label = "/qrel/metrics";
    ck_assert_str_eq(http_handler_label(r, HTTP_HANDLER_METRICS), "/qrel/metrics");
    ck_assert_str_eq(http_handler_label(r, HTTP_HANDLER_HEALTHY), "/-/healthy");
    ck_assert_str_eq(http_handler_label(r, HTTP_HANDLER_ROOT), "/");
    ck_assert_str_eq(http_handler_label(r, HTTP_HANDLER_OTHER), "other");
    free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("process_stats");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_stat_recorded);
    tcase_add_test(tc, test_stat_name_with_spaces_and_parentheses);
    tcase_add_test(tc, test_stat_refused);
    tcase_add_test(tc, test_boot_time);
    tcase_add_test(tc, test_read_self);
    tcase_add_test(tc, test_requests);
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}
