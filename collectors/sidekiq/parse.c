/* parse.c: Sidekiq's job and work JSON (see sidekiq.h).
 *
 * A scrape reads one job per queue (its oldest) and every job of the schedule, retry and dead
 * sets, and only two top-level members of each are wanted. Building the whole document with
 * jansson took 70% of a scrape's instructions at 1,000 queues, so a job is first read by a scanner
 * that walks the top-level members and skips their values without building them
 * (common/json_members.h, laravel's too). Anything it
 * does not take as plainly well-formed (an escape in a wanted member, a member twice, a top level
 * that is not an object) goes to jansson, whose answer and message stay the reference. */
#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/json_members.h"
#include "config.h"
#include "sidekiq.h"

static json_t *load(const char *json, size_t len, const char *what, enum entry_skip *why,
                    struct err *e)
{
    json_error_t je;
    json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        *why = json_error_code(&je) == json_error_stack_overflow ? ENTRY_TOO_DEEP : ENTRY_NOT_JSON;
        err_set(e, ERR_PROTOCOL, "%s: not JSON (%s at byte %d)", what, je.text, je.position);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        *why = ENTRY_NOT_JSON;
        err_set(e, ERR_PROTOCOL, "%s: want a JSON object", what);
        return NULL;
    }
    return v;
}

static int queue_of(json_t *obj, const char *what, char **queue, enum entry_skip *why,
                    struct err *e)
{
    json_t *q = json_object_get(obj, "queue");
    if (!json_is_string(q) || json_string_length(q) == 0) {
        *why = ENTRY_MISSING_FIELD;
        return err_set(e, ERR_PROTOCOL, "%s: want a \"queue\" string", what);
    }
    *queue = xstrndup(json_string_value(q), json_string_length(q));
    return 0;
}

/* ---- the fast path: common/json_members.h ---- */

struct member {
    const char *name;
    size_t len;            /* strlen(name) */
    const char *v, *v_end; /* the value's text, NULL when absent */
};

struct wanted {
    struct member *want;
    size_t n;
};

static int take_wanted(void *ctx, const struct json_member *m)
{
    struct wanted *w = ctx;
    for (size_t i = 0; i < w->n; i++)
        if (w->want[i].len == m->klen && memcmp(w->want[i].name, m->key, m->klen) == 0) {
            if (m->escaped || w->want[i].v)
                return -1;
            w->want[i].v = m->v;
            w->want[i].v_end = m->v_end;
        }
    return 0;
}

/* 1 when json is an object whose members were walked and each wanted member met once at most
 * with a name free of escapes; 0 otherwise (then jansson decides). */
static int scan_members(const char *json, size_t len, struct member *want, size_t n)
{
    struct wanted w = {want, n};
    return json_members(json, len, take_wanted, &w);
}

/* 1 when a member's value is a non-empty string without escapes, else 0. */
static int plain_string_at(const struct member *m)
{
    return m->v && *m->v == '"' && m->v_end - m->v >= 3 &&
           !memchr(m->v, '\\', (size_t)(m->v_end - m->v));
}

#if defined(__SIZEOF_INT128__)
typedef unsigned __int128 wide;

/* 1 when d is the double nearest to m / 10^k (ties to even), checked in integers: the midpoints
 * (2M +- 1) * 2^(E-1) to d = M * 2^E's neighbours against m / 10^k, both sides times 10^k and
 * 2^(1-E). *step is -1 or +1 when a neighbour is nearer; 0 with a return of 0 when the check
 * cannot tell here (an exponent out of its range, M at a power of two). */
static int nearest(unsigned long long m, int k, double d, int *step)
{
    int e;
    double f = frexp(d, &e); /* d = f * 2^e, f in [0.5, 1) */
    unsigned long long mant = (unsigned long long)ldexp(f, 53);
    int shift = 53 - e + 1; /* 1 - E with E = e - 53 */
    *step = 0;
    if (shift < 0 || shift > 63 || mant == 1ULL << 52)
        return 0;
    wide p10 = 1;
    for (int i = 0; i < k; i++)
        p10 *= 10;
    wide x = (wide)m << shift, hi = (wide)(2 * mant + 1) * p10, lo = (wide)(2 * mant - 1) * p10;
    if (x > hi || (x == hi && (mant & 1)))
        *step = 1;
    else if (x < lo || (x == lo && (mant & 1)))
        *step = -1;
    return *step == 0;
}
#endif

/* Plain decimal text (digits, optionally a point and digits) of at most 19 digits, at most 22 of
 * them after the point, read as the very double strtod gives, at a fraction of its cost (some
 * 1,100 instructions a job in glibc). Digits that make at most 2^53: the integer and the power of
 * ten are exact doubles and one division rounds once (Clinger's fast path). Up to 19 digits, as
 * Ruby writes a Time (17 significant digits): that quotient is within an ulp or two, and the
 * nearest double is settled in 128-bit integers (nearest). 1 with *out, or 0 when the text is
 * anything else (then strtod decides). */
static int exact_decimal(const char *p, const char *end, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    unsigned long long m = 0;
    int frac = 0, point = 0, digits = 0;
    for (; p < end; p++) {
        if (*p == '.' && !point && digits) {
            point = 1;
            continue;
        }
        if (*p < '0' || *p > '9' || digits == 19)
            return 0;
        m = m * 10 + (unsigned long long)(*p - '0');
        digits++;
        frac += point;
    }
    /* one rounding a division only where doubles are evaluated as doubles (not x87's 80 bits) */
    if (!digits || (point && !frac) || frac >= (int)(sizeof pow10 / sizeof pow10[0]) ||
        FLT_EVAL_METHOD != 0)
        return 0;
    double d = (double)m / pow10[frac];
    if (m <= 1ULL << 53) {
        *out = d;
        return 1;
    }
#if defined(__SIZEOF_INT128__)
    for (int tries = 0; tries < 4 && d > 0; tries++) {
        int step;
        if (nearest(m, frac, d, &step)) {
            *out = d;
            return 1;
        }
        if (!step)
            return 0;
        d = nextafter(d, step > 0 ? INFINITY : 0);
    }
#endif
    return 0;
}

/* A member's value as a number >= 0: 1, or 0 when it is not one (absent is the caller's). */
static int plain_number(const struct member *m, double *out)
{
    char num[64];
    size_t n = (size_t)(m->v_end - m->v);
    if (n == 0 || n >= sizeof num || *m->v == '"' || *m->v == '-')
        return 0;
    if (exact_decimal(m->v, m->v_end, out))
        return 1;
    memcpy(num, m->v, n);
    num[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (errno || *end || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* The fast path of sidekiq_parse_job: 1 when it could answer, 0 to ask jansson. A NULL queue
 * asks only that the job has one, as a plain string, without a copy of it. */
static int job_fast(const char *json, size_t len, char **queue, double *enqueued_at)
{
    struct member m[] = {{"queue", 5, NULL, NULL}, {"enqueued_at", 11, NULL, NULL}};
    if (!scan_members(json, len, m, 2) || !plain_string_at(&m[0]))
        return 0;
    *enqueued_at = NAN;
    if (m[1].v && !plain_number(&m[1], enqueued_at))
        return 0;
    if (queue)
        *queue = xstrndup(m[0].v + 1, (size_t)(m[0].v_end - m[0].v - 2));
    return 1;
}

/* ---- jansson: the reference ---- */

/* The number at key of obj into *out (left alone when absent): 0, or -1 with *why when it is
 * there and not a number. */
static int number_at(json_t *obj, const char *key, const char *what, double *out,
                     enum entry_skip *why, struct err *e)
{
    json_t *at = json_object_get(obj, key);
    if (!at)
        return 0;
    if (!json_is_number(at)) {
        *why = ENTRY_BAD_VALUE;
        return err_set(e, ERR_PROTOCOL, "%s: want \"%s\" as epoch seconds", what, key);
    }
    *out = json_number_value(at);
    return 0;
}

int sidekiq_parse_job(const char *json, size_t len, char **queue, double *enqueued_at,
                      enum entry_skip *why, struct err *e)
{
    char *name = NULL;
    if (job_fast(json, len, queue ? &name : NULL, enqueued_at)) {
        if (queue)
            *queue = name;
        return 0;
    }
    if (queue)
        *queue = NULL;
    *enqueued_at = NAN;
    json_t *v = load(json, len, "job", why, e);
    if (!v)
        return -1;
    int rc = queue_of(v, "job", &name, why, e);
    if (rc == 0)
        rc = number_at(v, "enqueued_at", "job", enqueued_at, why, e);
    json_decref(v);
    if (rc == 0 && queue)
        *queue = name;
    else
        free(name);
    return rc;
}

int sidekiq_parse_work(const char *json, size_t len, char **queue, double *run_at,
                       enum entry_skip *why, struct err *e)
{
    *queue = NULL;
    *run_at = NAN;
    json_t *v = load(json, len, "work", why, e);
    if (!v)
        return -1;
    int rc = queue_of(v, "work", queue, why, e);
    if (rc == 0)
        rc = number_at(v, "run_at", "work", run_at, why, e);
    if (rc == 0 && isnan(*run_at)) {
        *why = ENTRY_MISSING_FIELD;
        rc = err_set(e, ERR_PROTOCOL, "work: want \"run_at\" as epoch seconds");
    }
    json_decref(v);
    if (rc) {
        free(*queue);
        *queue = NULL;
    }
    return rc;
}

int sidekiq_parse_process(const char *json, size_t len, char ***queues, enum entry_skip *why,
                          struct err *e)
{
    *queues = NULL;
    json_t *v = load(json, len, "process info", why, e);
    if (!v)
        return -1;
    json_t *list = json_object_get(v, "queues");
    size_t n = json_is_array(list) ? json_array_size(list) : 0, k = 0;
    if (!json_is_array(list)) {
        json_decref(v);
        *why = ENTRY_MISSING_FIELD;
        return err_set(e, ERR_PROTOCOL, "process info: want a \"queues\" array");
    }
    char **out = xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        json_t *name = json_array_get(list, i);
        if (!json_is_string(name) || json_string_length(name) == 0) {
            cfg_strv_free(out);
            json_decref(v);
            *why = ENTRY_BAD_VALUE;
            return err_set(e, ERR_PROTOCOL, "process info: want queue names in \"queues\"");
        }
        const char *s = json_string_value(name);
        size_t j = 0; /* a weighted queue may be listed more than once: counted once */
        while (j < k && strcmp(out[j], s) != 0)
            j++;
        if (j == k)
            out[k++] = xstrndup(s, json_string_length(name));
    }
    json_decref(v);
    *queues = out;
    return 0;
}

enum sidekiq_beat sidekiq_judge_beat(const char *s, size_t len, double now, double stale_after)
{
    char buf[64]; /* a beat is some 20 characters: a longer one is no beat */
    if (len == 0 || len >= sizeof buf || memchr(s, '\0', len))
        return SIDEKIQ_BEAT_BAD;
    memcpy(buf, s, len);
    buf[len] = '\0';
    /* strtod skips leading space and stops at junk: the whole text must be the number. */
    if (!(buf[0] == '-' || buf[0] == '.' || (buf[0] >= '0' && buf[0] <= '9')))
        return SIDEKIQ_BEAT_BAD;
    char *end;
    double beat = strtod(buf, &end), age;
    if (*end != '\0' || entry_age(now, beat, &age)) /* entry_age refuses inf and NaN too */
        return SIDEKIQ_BEAT_BAD;
    return age > stale_after ? SIDEKIQ_STOPPED : SIDEKIQ_ALIVE;
}
