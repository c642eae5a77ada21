/* split_check.h: the two checks every reader with a split_peer test makes, written once. A test
 * gives a function that reads the recorded replies through a split_peer (pieces of step bytes,
 * or two pieces cut at cut) and returns a dump of what the reader handed over (NULL and e set on
 * failure), with the number of pieces the peer wrote. */
#ifndef QREL_TESTS_SPLIT_CHECK_H
#define QREL_TESTS_SPLIT_CHECK_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

typedef char *split_exec_fn(const char *reply, size_t len, size_t step, size_t cut, struct err *e,
                            size_t *pieces);

/* The replies read whole, one byte at a time and seven at a time give the same dump; returns the
 * whole read's dump (the caller checks what it holds, then frees it). */
static inline char *split_check_pieces(split_exec_fn *exec, const char *reply, size_t len)
{
    size_t pieces;
    struct err e;
    char *whole = exec(reply, len, len, 0, &e, &pieces);
    ck_assert_msg(whole != NULL, "whole: %s", e.msg);
    ck_assert_uint_eq(pieces, 1);
    char *bytes = exec(reply, len, 1, 0, &e, &pieces);
    ck_assert_msg(bytes != NULL, "one byte at a time: %s", e.msg);
    ck_assert_uint_eq(pieces, len); /* each byte was read alone */
    ck_assert_str_eq(bytes, whole);
    free(bytes);
    bytes = exec(reply, len, 7, 0, &e, &pieces);
    ck_assert_msg(bytes != NULL, "seven bytes at a time: %s", e.msg);
    ck_assert_str_eq(bytes, whole);
    free(bytes);
    return whole;
}

/* The replies cut in two at every byte give the same dump as read whole. */
static inline void split_check_every_cut(split_exec_fn *exec, const char *reply, size_t len)
{
    size_t pieces;
    struct err e;
    char *whole = exec(reply, len, len, 0, &e, &pieces);
    ck_assert_msg(whole != NULL, "whole: %s", e.msg);
    for (size_t cut = 1; cut < len; cut++) {
        char *got = exec(reply, len, 0, cut, &e, &pieces);
        ck_assert_msg(got != NULL, "cut at byte %zu of %zu: %s", cut, len, e.msg);
        ck_assert_uint_eq(pieces, 2);
        ck_assert_msg(strcmp(got, whole) == 0, "cut at byte %zu: other replies", cut);
        free(got);
    }
    free(whole);
}

#endif
