/* check_refused.h: the one way a unit test asserts that a configuration was refused: the call
 * returned -1 with a configuration error whose message is exactly the expected one (file:line:col
 * and what was expected), so that every such test holds messages to the same three checks. */
#ifndef QREL_TESTS_CHECK_REFUSED_H
#define QREL_TESTS_CHECK_REFUSED_H

#include <check.h>

#include "err.h"

/* rc and e: what the refusing call returned and set; msg: the message it must give. */
static inline void check_refused(int rc, const struct err *e, const char *msg)
{
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(e->code, ERR_CONFIG);
    ck_assert_str_eq(e->msg, msg);
}

#endif
