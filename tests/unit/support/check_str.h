/* check_str.h: the one way a unit test holds a string that a call returned in an allocation of its
 * own to the text it must be, then frees it, so that a test of such a function states one line per
 * case (the call and its text) instead of a variable, an assertion and a free. */
#ifndef QREL_TESTS_CHECK_STR_H
#define QREL_TESTS_CHECK_STR_H

#include <check.h>
#include <stdlib.h>

/* got: what the call returned (freed here); want: the text it must be. */
static inline void check_str_free(char *got, const char *want)
{
    ck_assert_str_eq(got, want);
    free(got);
}

#endif
