/* check_common_json.c: the path-naming JSON getters and the RFC 3339 parser of collectors/common.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "common/json.h"
#include "support/check_refused.h"
#include "support/check_run.h"
#include "support/json_doc.h"

START_TEST(test_malformed_and_truncated)
{
    struct err e;
    err_clear(&e);
    const char *trunc = "{\"queues\": [{\"name\": \"a\"";
    ck_assert_ptr_null(json_parse_body(trunc, strlen(trunc), "GET /api/queues", &e));
    ck_assert_int_eq(e.code, ERR_PROTOCOL);
    ck_assert_msg(strncmp(e.msg, "GET /api/queues: malformed JSON at line 1 column ", 49) == 0,
                  "%s", e.msg);
    err_clear(&e);
    ck_assert_ptr_null(json_parse_body("", 0, "GET /jsz", &e));
    ck_assert_str_eq(e.msg, "GET /jsz: empty response where JSON was expected");
}
END_TEST

START_TEST(test_typed_getters)
{
    json_t *d = json_doc("{\"n\": 3, \"s\": \"7.5\", \"b\": true, \"nul\": null, \"o\": {}, "
                         "\"a\": [1], \"bad\": \"x\"}");
    struct err e;
    err_clear(&e);
    double v = -1;
    ck_assert_int_eq(json_get_number(d, "$", "n", &v, &e), 1);
    ck_assert_double_eq(v, 3);
    ck_assert_int_eq(json_get_numeric(d, "$", "s", &v, &e), 1);
    ck_assert_double_eq(v, 7.5);
    int b = 0;
    ck_assert_int_eq(json_get_bool(d, "$", "b", &b, &e), 1);
    ck_assert_int_eq(b, 1);
    /* absent and null are "the broker does not have it": 0, no error */
    v = -1;
    ck_assert_int_eq(json_get_number(d, "$", "missing", &v, &e), 0);
    ck_assert_int_eq(json_get_number(d, "$", "nul", &v, &e), 0);
    ck_assert_double_eq(v, -1);
    ck_assert_int_eq(e.code, ERR_NONE);
    json_t *o = NULL;
    ck_assert_int_eq(json_get_object(d, "$", "o", &o, &e), 1);
    ck_assert_int_eq(json_get_array(d, "$", "a", &o, &e), 1);
    const char *s = NULL;
    ck_assert_int_eq(json_get_string(d, "$", "s", &s, &e), 1);
    ck_assert_str_eq(s, "7.5");
    json_decref(d);
}
END_TEST

START_TEST(test_errors_name_the_path)
{
    json_t *d = json_doc("{\"queues\": [{\"name\": 5, \"messages\": \"many\"}]}");
    struct err e;
    err_clear(&e);
    json_t *qs = NULL;
    ck_assert_int_eq(json_need_array(d, "$", "queues", &qs, &e), 0);
    char path[64];
    json_path_index(path, sizeof path, "$.queues", 0);
    ck_assert_str_eq(path, "$.queues[0]");
    json_t *q = json_array_get(qs, 0);
    const char *name = NULL;
    check_failed(json_get_string(q, path, "name", &name, &e), &e, ERR_PROTOCOL,
                 "$.queues[0].name: want a string, got a number");
    double v;
    ck_assert_int_eq(json_get_numeric(q, path, "messages", &v, &e), -1);
    ck_assert_str_eq(e.msg, "$.queues[0].messages: want a number, got the string \"many\"");
    ck_assert_int_eq(json_need_number(q, path, "consumers", &v, &e), -1);
    ck_assert_str_eq(e.msg, "$.queues[0].consumers: missing");
    ck_assert_int_eq(json_expect_object(qs, "$.queues", &e), -1);
    ck_assert_str_eq(e.msg, "$.queues: want an object, got a list");
    json_path_key(path, sizeof path, "$.queues[0]", "arguments");
    ck_assert_str_eq(path, "$.queues[0].arguments");
    json_decref(d);
}
END_TEST

START_TEST(test_rfc3339)
{
    double t = 0;
    ck_assert_int_eq(json_parse_rfc3339("1970-01-01T00:00:00Z", &t), 0);
    ck_assert_double_eq(t, 0);
    /* date -d 2026-11-29T15:04:05Z +%s = 1795964645 */
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T15:04:05.250Z", &t), 0);
    ck_assert_double_eq_tol(t, 1795964645.25, 1e-6);
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T16:04:05.123456789+01:00", &t), 0);
    ck_assert_double_eq_tol(t, 1795964645.123456789, 1e-6);
    ck_assert_int_eq(json_parse_rfc3339("2000-02-29T00:00:00Z", &t), 0);
    ck_assert_double_eq(t, 951782400);
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29 15:04:05Z", &t), 0);
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T15:04:05", &t), -1);  /* no zone */
    ck_assert_int_eq(json_parse_rfc3339("2026-13-29T15:04:05Z", &t), -1); /* month 13 */
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T15:04:05.Z", &t), -1);
    ck_assert_int_eq(json_parse_rfc3339("0001-01-01T00:00:00Z", &t), 0); /* Go's zero time */
    ck_assert_double_eq(t, -62135596800.0);
    ck_assert_int_eq(json_parse_rfc3339("2026-11-29T15:04:05Zjunk", &t), -1);
}
END_TEST

START_TEST(test_time_getters)
{
    json_t *d =
        json_doc("{\"at\": \"2026-11-29T15:04:05.250Z\", \"bad\": \"yesterday\", \"n\": 5}");
    struct err e;
    double t = 0;
    ck_assert_int_eq(json_get_time(d, "$", "at", &t, &e), 1);
    ck_assert_double_eq_tol(t, 1795964645.25, 1e-6);
    ck_assert_int_eq(json_need_time(d, "$", "at", &t, &e), 0);
    ck_assert_int_eq(json_get_time(d, "$", "none", &t, &e), 0);
    ck_assert_int_eq(json_need_time(d, "$.x", "none", &t, &e), -1);
    ck_assert_str_eq(e.msg, "$.x.none: missing");
    check_failed(json_get_time(d, "$", "bad", &t, &e), &e, ERR_PROTOCOL,
                 "$.bad: want an RFC 3339 time, got \"yesterday\"");
    ck_assert_int_eq(json_get_time(d, "$", "n", &t, &e), -1);
    ck_assert_str_eq(e.msg, "$.n: want a string, got a number");
    json_decref(d);
}
END_TEST

int main(void)
{
    const struct check_test tests[] = {
        {test_malformed_and_truncated, 0},
        {test_typed_getters, 0},
        {test_errors_name_the_path, 0},
        {test_rfc3339, 0},
        {test_time_getters, 0},
    };
    return check_run_tests("json", tests, CHECK_ROWS(tests), 0);
}
