/* promtext.c: see promtext.h. One pass over the text, one scratch buffer for unescaped label
 * values, reused from sample to sample. */
#include "promtext.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"

struct reader {
    const char *p, *end;
    size_t line;
    const char *what;
};

static int fail(const struct reader *r, struct err *e, const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    return err_set(e, ERR_PROTOCOL, "%s: line %zu: %s", r->what, r->line, msg);
}

/* Metric and label name bytes, looked up rather than compared: names are most of the bytes of
 * a large exposition. 1: may start a name ([a-zA-Z_:]), 2: may follow ([a-zA-Z0-9_:]). */
static const unsigned char name_class[256] = {
    [':'] = 3, ['_'] = 3, ['0'] = 2, ['1'] = 2, ['2'] = 2, ['3'] = 2, ['4'] = 2, ['5'] = 2,
    ['6'] = 2, ['7'] = 2, ['8'] = 2, ['9'] = 2, ['a'] = 3, ['b'] = 3, ['c'] = 3, ['d'] = 3,
    ['e'] = 3, ['f'] = 3, ['g'] = 3, ['h'] = 3, ['i'] = 3, ['j'] = 3, ['k'] = 3, ['l'] = 3,
    ['m'] = 3, ['n'] = 3, ['o'] = 3, ['p'] = 3, ['q'] = 3, ['r'] = 3, ['s'] = 3, ['t'] = 3,
    ['u'] = 3, ['v'] = 3, ['w'] = 3, ['x'] = 3, ['y'] = 3, ['z'] = 3, ['A'] = 3, ['B'] = 3,
    ['C'] = 3, ['D'] = 3, ['E'] = 3, ['F'] = 3, ['G'] = 3, ['H'] = 3, ['I'] = 3, ['J'] = 3,
    ['K'] = 3, ['L'] = 3, ['M'] = 3, ['N'] = 3, ['O'] = 3, ['P'] = 3, ['Q'] = 3, ['R'] = 3,
    ['S'] = 3, ['T'] = 3, ['U'] = 3, ['V'] = 3, ['W'] = 3, ['X'] = 3, ['Y'] = 3, ['Z'] = 3,
};

static int is_name_start(char c)
{
    return name_class[(unsigned char)c] & 1;
}

static int is_name_char(char c)
{
    return name_class[(unsigned char)c] != 0;
}

static void skip_blanks(struct reader *r, const char *eol)
{
    while (r->p < eol && (*r->p == ' ' || *r->p == '\t'))
        r->p++;
}

/* A value token: NaN, +Inf, -Inf (any case, as Go and Prometheus accept) or a strtod number
 * that uses the whole token. */
static int parse_value(const char *tok, size_t n, double *out)
{
    /* A plain count of up to 15 digits, most values of a broker's page, is exact in a double:
     * read here, without strtod's copy and locale-aware parse. */
    if (n && n <= 15) {
        double v = 0;
        size_t i = 0;
        while (i < n && tok[i] >= '0' && tok[i] <= '9')
            v = v * 10 + (tok[i++] - '0');
        if (i == n) {
            *out = v;
            return 0;
        }
    }
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, tok, n);
    buf[n] = '\0';
    if (!(buf[0] >= '0' && buf[0] <= '9')) { /* a digit, the usual case, is none of these */
        if (strcasecmp(buf, "nan") == 0) {
            *out = NAN;
            return 0;
        }
        if (strcasecmp(buf, "+inf") == 0 || strcasecmp(buf, "inf") == 0) {
            *out = INFINITY;
            return 0;
        }
        if (strcasecmp(buf, "-inf") == 0) {
            *out = -INFINITY;
            return 0;
        }
    }
    /* strtod would also take hex floats and "infinity"; the format has neither. */
    for (size_t i = 0; i < n; i++)
        if (!((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '+' || buf[i] == '-' || buf[i] == '.' ||
              buf[i] == 'e' || buf[i] == 'E'))
            return -1;
    char *endp = NULL;
    errno = 0;
    double v = strtod(buf, &endp);
    if (endp != buf + n || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

/* The label values of one sample, unescaped, back to back in scratch (offsets, because the
 * buffer may move while it grows). */
static int parse_labels(struct reader *r, const char *eol, struct promtext_sample *s,
                        struct buf *scratch, size_t *offs, struct err *e)
{
    r->p++; /* '{' */
    buf_reset(scratch);
    for (;;) {
        skip_blanks(r, eol);
        if (r->p < eol && *r->p == '}') {
            r->p++;
            break;
        }
        if (r->p >= eol || !is_name_start(*r->p) || *r->p == ':')
            return fail(r, e, "want a label name or '}'%s", NULL);
        if (s->nlabels == PROMTEXT_MAX_LABELS)
            return fail(r, e, "more than 32 labels%s", NULL);
        struct promtext_label *l = &s->labels[s->nlabels];
        l->name = r->p;
        while (r->p < eol && is_name_char(*r->p) && *r->p != ':')
            r->p++;
        l->name_len = (size_t)(r->p - l->name);
        skip_blanks(r, eol);
        if (r->p >= eol || *r->p != '=')
            return fail(r, e, "want '=' after a label name%s", NULL);
        r->p++;
        skip_blanks(r, eol);
        if (r->p >= eol || *r->p != '"')
            return fail(r, e, "want '\"' to open a label value%s", NULL);
        r->p++;
        offs[s->nlabels] = scratch->len;
        for (;;) {
            /* runs without an escape are copied whole: most values have none */
            const char *run = r->p;
            while (r->p < eol && *r->p != '"' && *r->p != '\\')
                r->p++;
            buf_append(scratch, run, (size_t)(r->p - run));
            if (r->p >= eol)
                return fail(r, e, "label value not closed by '\"'%s", NULL);
            char c = *r->p++;
            if (c == '"')
                break;
            if (r->p >= eol)
                return fail(r, e, "label value not closed by '\"'%s", NULL);
            char x = *r->p++;
            if (x == 'n')
                c = '\n';
            else if (x == '\\' || x == '"')
                c = x;
            else
                return fail(r, e, "unknown escape in a label value%s", NULL);
            buf_putc(scratch, c);
        }
        buf_putc(scratch, '\0');
        s->nlabels++;
        skip_blanks(r, eol);
        if (r->p < eol && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < eol && *r->p == '}') {
            r->p++;
            break;
        }
        return fail(r, e, "want ',' or '}' after a label value%s", NULL);
    }
    for (size_t i = 0; i < s->nlabels; i++) {
        s->labels[i].value = scratch->data + offs[i];
        s->labels[i].value_len = strlen(s->labels[i].value);
    }
    return 0;
}

static int parse_sample(struct reader *r, const char *eol, struct promtext_sample *s,
                        struct buf *scratch, struct err *e)
{
    size_t offs[PROMTEXT_MAX_LABELS];
    /* not memset: the label array is a kilobyte, and only the first nlabels are read */
    s->nlabels = 0;
    s->value = 0;
    s->name = r->p;
    if (!is_name_start(*r->p))
        return fail(r, e, "want a metric name, a comment or an empty line%s", NULL);
    while (r->p < eol && is_name_char(*r->p))
        r->p++;
    s->name_len = (size_t)(r->p - s->name);
    skip_blanks(r, eol);
    if (r->p < eol && *r->p == '{' && parse_labels(r, eol, s, scratch, offs, e))
        return -1;
    skip_blanks(r, eol);
    const char *tok = r->p;
    while (r->p < eol && *r->p != ' ' && *r->p != '\t')
        r->p++;
    if (parse_value(tok, (size_t)(r->p - tok), &s->value))
        return fail(r, e, "want a sample value (a number, NaN, +Inf or -Inf)%s", NULL);
    skip_blanks(r, eol);
    if (r->p < eol) { /* an optional timestamp in ms: an integer */
        const char *ts = r->p;
        if (*r->p == '-')
            r->p++;
        while (r->p < eol && *r->p >= '0' && *r->p <= '9')
            r->p++;
        if (r->p == ts || (r->p == ts + 1 && *ts == '-'))
            return fail(r, e, "want a timestamp or the end of the line after the value%s", NULL);
        skip_blanks(r, eol);
        if (r->p < eol)
            return fail(r, e, "want the end of the line after the timestamp%s", NULL);
    }
    return 0;
}

/* The sample name at r->p, which the caller does not want: 1 when want refuses it. A line that
 * does not start with a name is left to parse_sample, which says what is wrong. */
static int unwanted(const struct reader *r, const char *eol, promtext_want_fn want, void *ctx)
{
    const char *p = r->p;
    if (!want || !is_name_start(*p))
        return 0;
    while (p < eol && is_name_char(*p))
        p++;
    return !want(ctx, r->p, (size_t)(p - r->p));
}

int promtext_parse_some(const char *text, size_t len, const char *what, promtext_want_fn want,
                        promtext_sample_fn fn, void *ctx, struct err *e)
{
    struct reader r = {text, text + len, 0, what};
    struct buf scratch;
    struct promtext_sample s;
    int rc = 0;
    buf_init(&scratch);
    while (r.p < r.end) {
        r.line++;
        const char *eol = memchr(r.p, '\n', (size_t)(r.end - r.p));
        if (!eol)
            eol = r.end;
        if (memchr(r.p, '\0', (size_t)(eol - r.p))) {
            rc = fail(&r, e, "a NUL byte%s", NULL);
            break;
        }
        skip_blanks(&r, eol);
        if (r.p < eol && *r.p != '#' && !unwanted(&r, eol, want, ctx)) {
            if (parse_sample(&r, eol, &s, &scratch, e) || fn(ctx, &s, e)) {
                rc = -1;
                break;
            }
        }
        r.p = eol < r.end ? eol + 1 : eol;
    }
    buf_free(&scratch);
    return rc;
}

int promtext_parse(const char *text, size_t len, const char *what, promtext_sample_fn fn, void *ctx,
                   struct err *e)
{
    return promtext_parse_some(text, len, what, NULL, fn, ctx, e);
}

const struct promtext_label *promtext_label(const struct promtext_sample *s, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].name_len == n && memcmp(s->labels[i].name, name, n) == 0)
            return &s->labels[i];
    return NULL;
}

int promtext_name_is(const struct promtext_sample *s, const char *name)
{
    size_t n = strlen(name);
    return s->name_len == n && memcmp(s->name, name, n) == 0;
}
