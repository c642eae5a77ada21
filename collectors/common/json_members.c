/* json_members.c: the top-level members of a JSON object, values skipped (see json_members.h).
 * Part of the json helper (common/json_*.c). */
#include "json_members.h"

#include <stdint.h>
#include <string.h>

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* What a byte is to the scanner, by table: one load a byte instead of four comparisons in the
 * loops that cross a string or a number (most of a job payload's bytes). 1: it ends a run of
 * plain string bytes (a control character, '"', '\\'); 2: it may be part of a number or literal
 * (0-9, a-z, '-', '+', '.', 'E'). Bytes from 0x80 are 0. */
enum { STRING_STOP = 1, SCALAR = 2 };
/* clang-format off */
static const unsigned char byte_class[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x00 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 2, 0, /* 0x20: '"' '+' '-' '.' */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, /* 0x30: 0-9 */
    0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40: 'E' */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: '\\' */
    0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x60: a-o */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, /* 0x70: p-z */
};
/* clang-format on */

/* The bytes of w a string's walk stops at (a quote, a backslash or a control character), as the
 * high bit of each: the zero-byte test of each, whose lowest flagged byte is always a true one
 * (a false flag only ever sits above a true one, carried up by the subtraction), so it is exact
 * as a whole and at its lowest byte. */
static uint64_t word_stops(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w)) & highs;
}

/* p at the opening quote: past the closing one, or NULL. *escaped tells whether it had any. The
 * bytes are taken 8 at a time: most of a document's bytes are in its strings. Where a word holds
 * a stopping byte, the walk goes straight to the first one (on a little-endian machine; else
 * byte by byte): testing the word again at each byte before it cost a Sidekiq job's walk half
 * its instructions, its strings being short. */
static const char *skip_string(const char *p, const char *end, int *escaped)
{
    *escaped = 0;
    for (p++; p < end; p++) {
        uint64_t w, stops = 0;
        while (end - p >= 8 && (memcpy(&w, p, 8), !(stops = word_stops(w))))
            p += 8;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (stops)
            p += __builtin_ctzll(stops) >> 3;
#endif
        if (p >= end)
            break;
        if (!(byte_class[(unsigned char)*p] & STRING_STOP))
            continue;
        if (*p == '\\') {
            *escaped = 1;
            p++;
        } else if (*p == '"') {
            return p + 1;
        } else {
            return NULL; /* a control character */
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
    while (p < end && (byte_class[(unsigned char)*p] & SCALAR))
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

const char *json_skip_value(const char *p, const char *end)
{
    int depth;
    return skip_value(p, end, &depth);
}
