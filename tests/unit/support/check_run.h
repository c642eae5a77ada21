/* check_run.h: the one way every unit test binary runs its suite and turns the result into an
 * exit status, so that each check_*.c main() states only which suite it runs and how verbosely
 * (CK_ENV lets CK_VERBOSITY choose; CK_NORMAL fixes it). */
#ifndef QREL_TESTS_CHECK_RUN_H
#define QREL_TESTS_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

/* Runs every test of suite s (the runner takes ownership of it) and returns EXIT_SUCCESS when none
 * failed, EXIT_FAILURE otherwise. */
static inline int check_run(Suite *s, enum print_output mode)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, mode);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* One row of a table test that feeds one text in and holds what comes out to one text: an error
 * message, a label, an output (NULL where the test's table says so). The one row type of such
 * tables, so that each table states only its rows. */
struct check_case {
    const char *in;
    const char *want;
};

/* How many rows a test table has: the count a loop test runs over. */
#define CHECK_ROWS(table) ((int)(sizeof(table) / sizeof((table)[0])))

/* One test of a list that check_run_tests runs: a loop test runs once per row of its table
 * (rows > 0, usually CHECK_ROWS(table)), a plain test once (rows 0). */
struct check_test {
    const TTest *test;
    int rows;
};

/* The whole main() of a check_*.c whose tests form one test case without fixtures: runs the n
 * tests in order in a suite named name, each allowed timeout seconds (0 keeps Check's default),
 * so that a test file lists its tests once instead of restating the suite-building calls.
 * CK_VERBOSITY chooses how much it prints. */
static inline int check_run_tests(const char *name, const struct check_test *tests, size_t n,
                                  double timeout)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);
    if (timeout > 0)
        tcase_set_timeout(tc, timeout);
    for (size_t i = 0; i < n; i++) {
        if (tests[i].rows > 0)
            tcase_add_loop_test(tc, tests[i].test, 0, tests[i].rows);
        else
            tcase_add_test(tc, tests[i].test);
    }
    suite_add_tcase(s, tc);
    return check_run(s, CK_ENV);
}

#endif
