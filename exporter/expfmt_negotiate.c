/* expfmt_negotiate.c: which exposition format a scraper asked for, from its HTTP Accept header
 * (expfmt.h), and the Content-Type that names it. Parsed by hand, case-insensitively and with q
 * values, because a wrong guess serves a format the scraper then fails to parse. */
#include "expfmt.h"

#include <stdlib.h>
#include <string.h>

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static int span_ieq(const char *p, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n != m)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (ascii_lower(p[i]) != lit[i])
            return 0;
    }
    return 1;
}

static int is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 9110 qvalue, leniently: digits, optionally a dot and more digits, then clamped to [0, 1].
 * Returns -1 when it is not a number at all, so the caller can ignore the range. */
static double parse_qvalue(const char *p, size_t n)
{
    double q = 0;
    size_t i = 0;
    if (n == 0 || !(p[0] >= '0' && p[0] <= '9'))
        return -1;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++)
        q = q * 10 + (p[i] - '0');
    if (i < n && p[i] == '.') {
        double scale = 0.1;
        for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++, scale /= 10)
            q += (p[i] - '0') * scale;
    }
    if (i != n)
        return -1;
    return q > 1 ? 1 : q;
}

/* Which of our two formats one media range speaks for. The text matches are in ascending RFC 9110
 * precedence: for text/plain, a more specific range overrides a less specific one whatever their
 * q, so text/plain;q=0.1 next to a q=1 wildcard ranks text at 0.1, not 1. */
enum range_match { MATCH_NONE, MATCH_ANY, MATCH_TEXT_ANY, MATCH_TEXT_PLAIN, MATCH_OPENMETRICS };

struct media_range {
    enum range_match match;
    double q;
};

/* Parses "type/subtype *( OWS ; OWS name=value )" in [p, end). Malformed ranges match nothing:
 * falling back to the text format is always safe, guessing OpenMetrics is not. */
static struct media_range parse_range(const char *p, const char *end)
{
    struct media_range r = {MATCH_NONE, 1.0};
    while (p < end && is_ows(*p))
        p++;
    const char *type = p;
    while (p < end && *p != ';' && !is_ows(*p))
        p++;
    size_t type_len = (size_t)(p - type);
    const char *version = NULL;
    size_t version_len = 0;

    for (;;) {
        while (p < end && is_ows(*p))
            p++;
        if (p == end)
            break;
        if (*p != ';')
            return (struct media_range){MATCH_NONE, 0};
        p++;
        while (p < end && is_ows(*p))
            p++;
        const char *name = p;
        while (p < end && *p != '=' && *p != ';' && !is_ows(*p))
            p++;
        size_t name_len = (size_t)(p - name);
        while (p < end && is_ows(*p))
            p++;
        if (p == end || *p != '=') {
            if (name_len == 0)
                continue; /* a stray ';' is harmless */
            return (struct media_range){MATCH_NONE, 0};
        }
        p++;
        while (p < end && is_ows(*p))
            p++;
        const char *val = p;
        size_t val_len;
        if (p < end && *p == '"') {
            /* quoted-string; the values we look at never need the backslash escapes decoded */
            val = ++p;
            while (p < end && *p != '"') {
                if (*p == '\\' && p + 1 < end)
                    p++;
                p++;
            }
            if (p == end)
                return (struct media_range){MATCH_NONE, 0};
            val_len = (size_t)(p - val);
            p++;
        } else {
            while (p < end && *p != ';' && !is_ows(*p))
                p++;
            val_len = (size_t)(p - val);
        }
        if (span_ieq(name, name_len, "q")) {
            r.q = parse_qvalue(val, val_len);
            if (r.q < 0)
                return (struct media_range){MATCH_NONE, 0};
        } else if (span_ieq(name, name_len, "version")) {
            version = val;
            version_len = val_len;
        }
    }

    if (span_ieq(type, type_len, "application/openmetrics-text")) {
        /* 0.0.1 and 1.0.0 are the same wire format; a version we do not know is not ours. */
        if (!version || span_ieq(version, version_len, "1.0.0") ||
            span_ieq(version, version_len, "0.0.1"))
            r.match = MATCH_OPENMETRICS;
    } else if (span_ieq(type, type_len, "text/plain")) {
        /* Any version: our 0.0.4 output is also valid text 1.0.0 (all our names are legacy). */
        r.match = MATCH_TEXT_PLAIN;
    } else if (span_ieq(type, type_len, "text/*")) {
        r.match = MATCH_TEXT_ANY;
    } else if (span_ieq(type, type_len, "*/*")) {
        r.match = MATCH_ANY;
    }
    return r;
}

enum expfmt_format expfmt_negotiate(const char *accept)
{
    if (!accept)
        return EXPFMT_TEXT;
    double om_q = 0;
    double text_q = 0;
    enum range_match text_precedence = MATCH_NONE;
    const char *p = accept;
    while (*p) {
        /* A range ends at a comma outside a quoted string. */
        const char *end = p;
        int quoted = 0;
        while (*end && (quoted || *end != ',')) {
            if (*end == '"')
                quoted = !quoted;
            else if (quoted && *end == '\\' && end[1])
                end++;
            end++;
        }
        struct media_range r = parse_range(p, end);
        if (r.match == MATCH_OPENMETRICS) {
            if (r.q > om_q)
                om_q = r.q;
        } else if (r.match != MATCH_NONE) {
            if (r.match > text_precedence) {
                text_precedence = r.match;
                text_q = r.q;
            } else if (r.match == text_precedence && r.q > text_q) {
                text_q = r.q;
            }
        }
        p = *end ? end + 1 : end;
    }
    return om_q > 0 && om_q >= text_q ? EXPFMT_OPENMETRICS : EXPFMT_TEXT;
}

const char *expfmt_content_type(enum expfmt_format f)
{
    return f == EXPFMT_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                   : "text/plain; version=0.0.4; charset=utf-8";
}
