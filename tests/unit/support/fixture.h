/* fixture.h: the text of a file recorded under tests/fixtures (QREL_FIXTURES, which
 * tests/CMakeLists.txt defines), read one way for every test: a fixture that cannot be read fails
 * the test with its path. Included by one test file each (static function). */
#ifndef QREL_TESTS_FIXTURE_H
#define QREL_TESTS_FIXTURE_H

#include <check.h>
#include <errno.h>
#include <stdio.h>

#include "text.h"

/* name: the path below tests/fixtures, like "nats/jsz-2.9.10.json". Returns the text (the caller
 * frees it), its length in *len. */
static inline char *fixture_text(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", QREL_FIXTURES, name);
    char *text = text_read_file(path, 1 << 20, len);
    ck_assert_msg(text != NULL, "fixture %s: %s", path, text_read_error(errno));
    return text;
}

#endif
