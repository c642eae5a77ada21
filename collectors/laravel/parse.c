/* parse.c: Laravel's job payloads, the queue of a discovered key and the lease figures of the
 * reserved jobs (see laravel.h).
 *
 * A scrape reads a job of every queue and only three top-level numbers of each (attempts,
 * timeout, createdAt). Building the ~600-byte payload with jansson took 209.4M of 287.0M
 * instructions of a scrape at 2,000 queues, so a payload is first read by the scanner of
 * top-level members (common/json_members.h), which skips the values it does not want. It answers
 * only the plain case: every key free of escapes and non-ASCII bytes and met once, no value
 * nested deeper than MAX_FAST_DEPTH, every top-level number or literal spelt as JSON spells it,
 * "attempts" a number and the other two numbers or null. Everything else, every error included,
 * goes to jansson, whose answer, skip reason and message stay the reference. What the scanner
 * does not look into (the text of strings and of nested values) it does not validate, as in
 * sidekiq's fast path. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/json_members.h"
#include "laravel.h"

/* ---- the fast path ---- */

/* Far past what Laravel writes (data.command: 2) and far below jansson's own limit. */
#define MAX_FAST_DEPTH 64
/* A Laravel 8.83 payload has 13 top-level members; more is no payload this path needs to hurry. */
#define MAX_FAST_MEMBERS 32

struct fast {
    struct json_member kept[MAX_FAST_MEMBERS];
    size_t n;
    const struct json_member *attempts, *timeout, *created_at;
};

static int is_literal(const char *v, size_t n, const char *word)
{
    return n == strlen(word) && memcmp(v, word, n) == 0;
}

/* 1 when [v, end) is a JSON number as RFC 8259 spells it; *integer when it has neither a
 * fraction nor an exponent (jansson then reads it as an integer). */
static int json_number_spelling(const char *v, const char *end, int *integer)
{
    const char *p = v;
    *integer = 1;
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return 0;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        *integer = 0;
        const char *d = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == d)
            return 0;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == d)
            return 0;
    }
    return p == end;
}

/* A number's value exactly as jansson reads it: an integer by strtoll then as a double (so -0 is
 * 0), any other by strtod. 1, or 0 when unsure (jansson would refuse it or this cannot tell). */
static int number_as_jansson(const char *v, const char *end, double *out)
{
    char num[64];
    size_t n = (size_t)(end - v);
    int integer;
    if (n >= sizeof num || !json_number_spelling(v, end, &integer))
        return 0;
    if (integer) {
        /* 18 digits always fit a long long: longer ones are jansson's to judge (too big). The
         * digits are summed here as strtoll would (its call was a tenth of a payload's scan). */
        if (n - (*v == '-') > 18)
            return 0;
        long long x = 0;
        for (const char *p = v + (*v == '-'); p < end; p++)
            x = x * 10 + (*p - '0');
        *out = (double)(*v == '-' ? -x : x);
        return 1;
    }
    memcpy(num, v, n);
    num[n] = '\0';
    errno = 0;
    double d = strtod(num, NULL);
    if (errno || !isfinite(d)) /* jansson refuses an overflow; an underflow is left to it too */
        return 0;
    *out = d;
    return 1;
}

/* A top-level number or literal must be spelt right, or jansson refuses the document. */
static int scalar_ok(const struct json_member *m)
{
    size_t n = (size_t)(m->v_end - m->v);
    double ignored;
    if (*m->v == '"' || *m->v == '{' || *m->v == '[')
        return 1;
    return is_literal(m->v, n, "null") || is_literal(m->v, n, "true") ||
           is_literal(m->v, n, "false") || number_as_jansson(m->v, m->v_end, &ignored);
}

static int take_member(void *ctx, const struct json_member *m)
{
    struct fast *f = ctx;
    if (m->escaped || m->depth > MAX_FAST_DEPTH || f->n == MAX_FAST_MEMBERS || !scalar_ok(m))
        return -1;
    for (size_t i = 0; i < m->klen; i++)
        if ((unsigned char)m->key[i] >= 0x80) /* jansson checks its UTF-8 */
            return -1;
    for (size_t i = 0; i < f->n; i++)
        if (f->kept[i].klen == m->klen && memcmp(f->kept[i].key, m->key, m->klen) == 0)
            return -1; /* a member twice: jansson refuses the document */
    struct json_member *k = &f->kept[f->n++];
    *k = *m;
    if (is_literal(m->key, m->klen, "attempts"))
        f->attempts = k;
    else if (is_literal(m->key, m->klen, "timeout"))
        f->timeout = k;
    else if (is_literal(m->key, m->klen, "createdAt"))
        f->created_at = k;
    return 0;
}

/* Absent or null: NAN; a number: its value; 0 for anything else (jansson's to judge). */
static int fast_number_or_null(const struct json_member *m, double *out)
{
    *out = NAN;
    if (!m || is_literal(m->v, (size_t)(m->v_end - m->v), "null"))
        return 1;
    return number_as_jansson(m->v, m->v_end, out);
}

int laravel_parse_job_fast(const char *json, size_t len, struct laravel_job *out)
{
    struct fast f;
    f.n = 0;
    f.attempts = f.timeout = f.created_at = NULL;
    struct laravel_job j;
    if (!json_members(json, len, take_member, &f) || !f.attempts ||
        !number_as_jansson(f.attempts->v, f.attempts->v_end, &j.attempts) ||
        !fast_number_or_null(f.timeout, &j.timeout) ||
        !fast_number_or_null(f.created_at, &j.created_at))
        return 0;
    *out = j;
    return 1;
}

/* ---- jansson: the reference ---- */

/* A member that may be absent or null (NAN) or a number; 0, or -1 for any other type. */
static int number_or_null(const json_t *obj, const char *key, double *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = NAN;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

int laravel_parse_job_jansson(const char *json, size_t len, struct laravel_job *out,
                              enum entry_skip *why, struct err *e)
{
    json_error_t je;
    /* JSON_ALLOW_NUL: a command's protected and private properties are serialized with NUL bytes
     * around their names ("\u0000*\u0000orderId"), which is valid JSON and every such job's. */
    json_t *v = json_loadb(json, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        *why = json_error_code(&je) == json_error_stack_overflow ? ENTRY_TOO_DEEP : ENTRY_NOT_JSON;
        return err_set(e, ERR_PROTOCOL, "job: not JSON (%s at byte %d)", je.text, je.position);
    }
    int rc = -1;
    if (!json_is_object(v)) {
        *why = ENTRY_NOT_JSON;
        err_set(e, ERR_PROTOCOL, "job: want a JSON object");
    } else if (number_or_null(v, "attempts", &out->attempts) || isnan(out->attempts)) {
        /* Every payload of the Redis driver has it: its pop script adds one to it. */
        *why = json_object_get(v, "attempts") ? ENTRY_BAD_VALUE : ENTRY_MISSING_FIELD;
        err_set(e, ERR_PROTOCOL, "job: want a number \"attempts\"");
    } else if (number_or_null(v, "timeout", &out->timeout) ||
               number_or_null(v, "createdAt", &out->created_at)) {
        *why = ENTRY_BAD_VALUE;
        err_set(e, ERR_PROTOCOL, "job: want numbers or null in \"timeout\" and \"createdAt\"");
    } else {
        rc = 0;
    }
    json_decref(v);
    return rc;
}

int laravel_parse_job(const char *json, size_t len, struct laravel_job *out, enum entry_skip *why,
                      struct err *e)
{
    if (laravel_parse_job_fast(json, len, out))
        return 0;
    return laravel_parse_job_jansson(json, len, out, why, e);
}

char *laravel_queue_of_key(const char *key, size_t len, const char *prefix)
{
    size_t pl = strlen(prefix), ql = strlen("queues:");
    if (len < pl + ql || memcmp(key, prefix, pl) != 0 || memcmp(key + pl, "queues:", ql) != 0)
        return NULL;
    const char *name = key + pl + ql;
    size_t n = len - pl - ql;
    static const char *const suffixes[] = {":delayed", ":reserved", ":notify"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t sl = strlen(suffixes[i]);
        if (n > sl && memcmp(name + n - sl, suffixes[i], sl) == 0) {
            n -= sl;
            break;
        }
    }
    return n ? xstrndup(name, n) : NULL;
}

int laravel_lease(double now, double min_score, double retry_after, double *hold, double *margin)
{
    double age;
    if (entry_age(now, min_score - retry_after, &age) != 0)
        return -1;
    *hold = age;
    if (!(age > 0))
        return 0;
    *margin = retry_after / age;
    return 1;
}
