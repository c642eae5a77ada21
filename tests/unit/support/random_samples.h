/* random_samples.h: how many random values a test that compares against a reference draws.
 * Under valgrind (scripts/test.sh sets QREL_UNDER_VALGRIND=1) a test draws 1/100 of them: the
 * plain and ASan passes compare every value, and what valgrind looks for (reads of uninitialised
 * or freed memory, leaks) shows on the same code paths with far fewer values. The 200,000 values of
 * check_expfmt's reference test took 26 s of valgrind's CPU. */
#ifndef QREL_TESTS_RANDOM_SAMPLES_H
#define QREL_TESTS_RANDOM_SAMPLES_H

#include <stdlib.h>
#include <string.h>

static inline int random_samples(int n)
{
    const char *v = getenv("QREL_UNDER_VALGRIND");
    if (v && strcmp(v, "1") == 0)
        return n / 100 > 0 ? n / 100 : 1;
    return n;
}

#endif
