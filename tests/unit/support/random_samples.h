/* random_samples.h: how many random values a test that compares against a reference draws, and
 * how many items a test of a large set makes.
 * Under valgrind (scripts/test.sh sets QREL_UNDER_VALGRIND=1) a test draws 1/100 of them, and
 * under the sanitizers (QREL_UNDER_SANITIZER=1) 1/10: the plain pass compares every value, and
 * what valgrind and ASan look for (reads of uninitialised or freed memory, overflows, leaks) shows
 * on the same code paths with far fewer values. The 200,000 values of check_expfmt's reference
 * test took 26 s of valgrind's CPU, and 28 s of the ASan pass's, where the plain pass takes 4. */
#ifndef QREL_TESTS_RANDOM_SAMPLES_H
#define QREL_TESTS_RANDOM_SAMPLES_H

#include <stdlib.h>
#include <string.h>

static inline int random_samples(int n)
{
    const char *v = getenv("QREL_UNDER_VALGRIND");
    if (v && strcmp(v, "1") == 0)
        return n / 100 > 0 ? n / 100 : 1;
    v = getenv("QREL_UNDER_SANITIZER");
    if (v && strcmp(v, "1") == 0)
        return n / 10 > 0 ? n / 10 : 1;
    return n;
}

/* large_count(n): a test of a large set or a large write makes n items, a tenth of them under
 * valgrind or the sanitizers. The tenth still crosses every boundary the full count does (the
 * sets' 64 KiB string chunks, several growths of their hash tables, a streamed write in many
 * buffers): the large set of check_metrics (100,000 samples) and the large write of check_expfmt
 * (200,000) took 25 s of valgrind's CPU each, repeating the same paths. The plain pass makes all
 * n. */
static inline int large_count(int n)
{
    const char *v = getenv("QREL_UNDER_VALGRIND");
    const char *s = getenv("QREL_UNDER_SANITIZER");
    if ((v && strcmp(v, "1") == 0) || (s && strcmp(s, "1") == 0))
        return n / 10 > 0 ? n / 10 : 1;
    return n;
}

#endif
