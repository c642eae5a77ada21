/* json.c: typed, path-naming getters over jansson. See json.h. */
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

json_t *json_parse_body(const char *body, size_t len, const char *what, struct err *e)
{
    json_error_t je;
    if (!body || len == 0) {
        err_set(e, ERR_PROTOCOL, "%s: empty response where JSON was expected", what);
        return NULL;
    }
    /* JSON_ALLOW_NUL keeps a stray NUL from cutting a document short silently */
    json_t *doc = json_loadb(body, len, JSON_ALLOW_NUL, &je);
    /* An integer beyond 64 signed bits (nats-server's /jsz sends reserved_memory as
     * 18446744073709551615 for "no reservation") is refused by jansson: parse such a document
     * again with every integer as a double, which the getters read alike. */
    if (!doc && json_error_code(&je) == json_error_numeric_overflow)
        doc = json_loadb(body, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je);
    if (!doc)
        err_set(e, ERR_PROTOCOL, "%s: malformed JSON at line %d column %d: %s", what, je.line,
                je.column, je.text);
    return doc;
}

const char *json_type_word(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

void json_path_key(char *out, size_t cap, const char *ctx, const char *key)
{
    snprintf(out, cap, "%s.%s", ctx, key);
}

void json_path_index(char *out, size_t cap, const char *ctx, size_t i)
{
    snprintf(out, cap, "%s[%zu]", ctx, i);
}

static int wrong(const char *ctx, const char *key, const char *want, const json_t *got,
                 struct err *e)
{
    if (key)
        return err_set(e, ERR_PROTOCOL, "%s.%s: want %s, got %s", ctx, key, want,
                       json_type_word(got));
    return err_set(e, ERR_PROTOCOL, "%s: want %s, got %s", ctx, want, json_type_word(got));
}

/* The value at key, or NULL when obj is not an object, the key is absent or its value null. */
static json_t *member(const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return json_is_null(v) ? NULL : v;
}

/* The value at key when json_type_word calls it want: 1 with *out set; 0 when it is absent or
 * null, -1 with e set when it is of another type (*out NULL in both). One check for every getter,
 * so each type is told and refused alike. */
static int typed(const json_t *obj, const char *ctx, const char *key, const char *want,
                 json_t **out, struct err *e)
{
    json_t *v = member(obj, key);
    *out = NULL;
    if (!v)
        return 0;
    if (strcmp(json_type_word(v), want) != 0)
        return wrong(ctx, key, want, v, e);
    *out = v;
    return 1;
}

int json_get_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
                    struct err *e)
{
    return typed(obj, ctx, key, "an object", out, e);
}

int json_get_array(const json_t *obj, const char *ctx, const char *key, json_t **out, struct err *e)
{
    return typed(obj, ctx, key, "a list", out, e);
}

int json_get_string(const json_t *obj, const char *ctx, const char *key, const char **out,
                    struct err *e)
{
    json_t *v;
    int rc = typed(obj, ctx, key, "a string", &v, e);
    *out = rc > 0 ? json_string_value(v) : NULL;
    return rc;
}

int json_get_number(const json_t *obj, const char *ctx, const char *key, double *out, struct err *e)
{
    json_t *v;
    int rc = typed(obj, ctx, key, "a number", &v, e);
    if (rc > 0)
        *out = json_number_value(v);
    return rc;
}

int json_get_numeric(const json_t *obj, const char *ctx, const char *key, double *out,
                     struct err *e)
{
    json_t *v = member(obj, key);
    if (!v)
        return 0;
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 1;
    }
    if (!json_is_string(v))
        return wrong(ctx, key, "a number", v, e);
    const char *s = json_string_value(v);
    char *end = NULL;
    errno = 0;
    double d = strtod(s, &end);
    while (end && isspace((unsigned char)*end))
        end++;
    if (!*s || errno || !end || *end || !isfinite(d))
        return err_set(e, ERR_PROTOCOL, "%s.%s: want a number, got the string \"%.40s\"", ctx, key,
                       s);
    *out = d;
    return 1;
}

int json_get_bool(const json_t *obj, const char *ctx, const char *key, int *out, struct err *e)
{
    json_t *v;
    int rc = typed(obj, ctx, key, "a boolean", &v, e);
    if (rc > 0)
        *out = json_is_true(v);
    return rc;
}

static int need(int r, const char *ctx, const char *key, struct err *e)
{
    if (r == 0)
        return err_set(e, ERR_PROTOCOL, "%s.%s: missing", ctx, key);
    return r < 0 ? -1 : 0;
}

int json_need_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
                     struct err *e)
{
    return need(json_get_object(obj, ctx, key, out, e), ctx, key, e);
}

int json_need_array(const json_t *obj, const char *ctx, const char *key, json_t **out,
                    struct err *e)
{
    return need(json_get_array(obj, ctx, key, out, e), ctx, key, e);
}

int json_need_string(const json_t *obj, const char *ctx, const char *key, const char **out,
                     struct err *e)
{
    return need(json_get_string(obj, ctx, key, out, e), ctx, key, e);
}

int json_need_number(const json_t *obj, const char *ctx, const char *key, double *out,
                     struct err *e)
{
    return need(json_get_number(obj, ctx, key, out, e), ctx, key, e);
}

int json_expect_object(const json_t *v, const char *ctx, struct err *e)
{
    return json_is_object(v) ? 0 : wrong(ctx, NULL, "an object", v, e);
}

int json_expect_array(const json_t *v, const char *ctx, struct err *e)
{
    return json_is_array(v) ? 0 : wrong(ctx, NULL, "a list", v, e);
}

int json_get_time(const json_t *obj, const char *ctx, const char *key, double *out, struct err *e)
{
    const char *s = NULL;
    int rc = json_get_string(obj, ctx, key, &s, e);
    if (rc <= 0)
        return rc;
    if (json_parse_rfc3339(s, out))
        return err_set(e, ERR_PROTOCOL, "%s.%s: want an RFC 3339 time, got \"%.40s\"", ctx, key, s);
    return 1;
}

int json_need_time(const json_t *obj, const char *ctx, const char *key, double *out, struct err *e)
{
    return need(json_get_time(obj, ctx, key, out, e), ctx, key, e);
}

int json_parse_rfc3339(const char *s, double *epoch)
{
    return text_parse_rfc3339(s, epoch);
}
