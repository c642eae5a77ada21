/* json_doc.h: a test's JSON text as a document, parsed by the json_parse_body the kinds use, so
 * that the tests of JSON answers share one fixture; a text that is not JSON fails the test with
 * the parser's message. Included by one test file each (static functions). */
#ifndef QREL_TESTS_JSON_DOC_H
#define QREL_TESTS_JSON_DOC_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "err.h"
#include "fixture.h"

/* The parsed text; the caller frees it with json_decref. */
static inline json_t *json_doc(const char *text)
{
    struct err e;
    err_clear(&e);
    json_t *d = json_parse_body(text, strlen(text), "the test's JSON", &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    return d;
}

/* The parsed fixture name (a path below tests/fixtures); the caller frees it with json_decref. */
static inline json_t *json_doc_fixture(const char *name)
{
    size_t len;
    char *text = fixture_text(name, &len);
    json_t *d = json_doc(text);
    free(text);
    return d;
}

#endif
