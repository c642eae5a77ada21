/* json_members.c: the top-level members of a JSON object, values skipped (see json_members.h).
 * Part of the json helper (common/json_*.c). */
#include "json_members.h"

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* The bytes a string's scan stops at: its end, an escape, and the control bytes JSON wants
 * escaped (0x00-0x1f). */
static const unsigned char string_stop[256] = {1, 1, 1, 1, 1, 1, 1, 1, 1,         1,         1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1,         1,         1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, ['"'] = 1, ['\\'] = 1};

/* p at the opening quote: past the closing one, or NULL. *escaped tells whether it had any. The
 * plain bytes between stops are passed over by a table, one load and test each: strings are most
 * of a payload's bytes (laravel's serialized command), and three comparisons a byte were most
 * of the scan's instructions. */
static const char *skip_string(const char *p, const char *end, int *escaped)
{
    *escaped = 0;
    for (p++; p < end; p++) {
        while (p < end && !string_stop[(unsigned char)*p])
            p++;
        if (p >= end)
            break;
        if (*p == '\\') {
            *escaped = 1;
            p++;
        } else if (*p == '"') {
            return p + 1;
        } else if ((unsigned char)*p < 0x20) {
            return NULL;
        }
    }
    return NULL;
}

/* Past one value, or NULL; *deepest is how deep it nests. Nested values are skipped by their
 * brackets, strings included. */
static const char *skip_value(const char *p, const char *end, int *deepest)
{
    int esc;
    *deepest = 0;
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end, &esc);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                if (!(p = skip_string(p, end, &esc)))
                    return NULL;
                continue;
            }
            if (*p == '{' || *p == '[') {
                if (++depth > *deepest)
                    *deepest = depth;
            } else if ((*p == '}' || *p == ']') && --depth == 0) {
                return p + 1;
            }
            p++;
        }
        return NULL;
    }
    const char *s = p;
    while (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-' ||
                       *p == '+' || *p == '.' || *p == 'E'))
        p++;
    return p > s ? p : NULL;
}

int json_members(const char *json, size_t len, json_member_fn fn, void *ctx)
{
    const char *p = skip_ws(json, json + len), *end = json + len;
    if (p >= end || *p != '{')
        return 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return skip_ws(p + 1, end) == end;
    for (;;) {
        int esc, depth;
        if (p >= end || *p != '"')
            return 0;
        const char *k = p, *k_end = skip_string(p, end, &esc);
        if (!k_end)
            return 0;
        p = skip_ws(k_end, end);
        if (p >= end || *p != ':')
            return 0;
        p = skip_ws(p + 1, end);
        const char *v = p, *v_end = skip_value(p, end, &depth);
        if (!v_end)
            return 0;
        struct json_member m = {k + 1, (size_t)(k_end - 1 - (k + 1)), esc, k, v, v_end, depth};
        if (fn(ctx, &m))
            return 0;
        p = skip_ws(v_end, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        return p < end && *p == '}' && skip_ws(p + 1, end) == end;
    }
}
