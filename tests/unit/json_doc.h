/* json_doc.h: a test's JSON text as a document, parsed by the json_parse_body the kinds use, so
 * that the tests of JSON answers share one fixture; a text that is not JSON fails the test with
 * the parser's message. Included by one test file each (static function). */
#ifndef QREL_TESTS_JSON_DOC_H
#define QREL_TESTS_JSON_DOC_H

#include <check.h>
#include <string.h>

#include "common/json.h"
#include "err.h"

/* The parsed text; the caller frees it with json_decref. */
static json_t *json_doc(const char *text)
{
    struct err e;
    err_clear(&e);
    json_t *d = json_parse_body(text, strlen(text), "the test's JSON", &e);
    ck_assert_msg(d != NULL, "%s", e.msg);
    return d;
}

#endif
