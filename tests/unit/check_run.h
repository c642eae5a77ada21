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

#endif
