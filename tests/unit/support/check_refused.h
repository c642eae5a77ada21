/* check_refused.h: the one way a unit test asserts that a call failed: it returned -1 with an
 * error of the expected code whose message is exactly the expected one (for configurations,
 * file:line:col and what was expected), so that every such test holds errors to the same three
 * checks. */
#ifndef QREL_TESTS_CHECK_REFUSED_H
#define QREL_TESTS_CHECK_REFUSED_H

#include <check.h>

#include "err.h"

/* rc and e: what the failing call returned and set; code and msg: the error it must give. */
static inline void check_failed(int rc, const struct err *e, enum err_code code, const char *msg)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(e->code, code);
    ck_assert_str_eq(e->msg, msg);
}

/* check_failed for a configuration that was refused. */
static inline void check_refused(int rc, const struct err *e, const char *msg)
{
    check_failed(rc, e, ERR_CONFIG, msg);
}

#endif
