/* json.c: typed, path-naming getters over jansson. See json.h. */
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int json_get_object(const json_t *obj, const char *ctx, const char *key, json_t **out,
                    struct err *e)
{
    json_t *v = member(obj, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_object(v))
        return wrong(ctx, key, "an object", v, e);
    *out = v;
    return 1;
}

int json_get_array(const json_t *obj, const char *ctx, const char *key, json_t **out, struct err *e)
{
    json_t *v = member(obj, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_array(v))
        return wrong(ctx, key, "a list", v, e);
    *out = v;
    return 1;
}

int json_get_string(const json_t *obj, const char *ctx, const char *key, const char **out,
                    struct err *e)
{
    json_t *v = member(obj, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return wrong(ctx, key, "a string", v, e);
    *out = json_string_value(v);
    return 1;
}

int json_get_number(const json_t *obj, const char *ctx, const char *key, double *out, struct err *e)
{
    json_t *v = member(obj, key);
    if (!v)
        return 0;
    if (!json_is_number(v))
        return wrong(ctx, key, "a number", v, e);
    *out = json_number_value(v);
    return 1;
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
    json_t *v = member(obj, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return wrong(ctx, key, "a boolean", v, e);
    *out = json_is_true(v);
    return 1;
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

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm):
 * timegm() is not POSIX. */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

int json_parse_rfc3339(const char *s, double *epoch)
{
    int Y, M, D, h, m, sec;
    const char *p = s;
    if (!s || digits(&p, 4, &Y) || *p++ != '-' || digits(&p, 2, &M) || *p++ != '-' ||
        digits(&p, 2, &D) || (*p != 'T' && *p != 't' && *p != ' '))
        return -1;
    p++;
    if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &m) || *p++ != ':' || digits(&p, 2, &sec))
        return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -1;
    double frac = 0, scale = 0.1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om))
            return -1;
        offset = sign * (oh * 3600L + om * 60L);
    } else {
        return -1;
    }
    if (*p)
        return -1;
    long long days = days_from_civil(Y, (unsigned)M, (unsigned)D);
    *epoch = (double)(days * 86400 + h * 3600LL + m * 60LL + sec - offset) + frac;
    return 0;
}
