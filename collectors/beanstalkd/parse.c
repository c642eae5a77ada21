/* parse.c: beanstalkd's YAML replies (list-tubes, stats, stats-tube, stats-job), read without a
 * YAML library: beanstalkd writes one flat level, one "- item" or "key: value" per line, after a
 * "---" line, and nothing else. Anything else is not beanstalkd and is refused. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beanstalkd.h"
#include "config.h"
#include "alloc.h"

/* Calls line_fn for each line after the "---" header. */
static int each_line(const char *body, int (*line_fn)(void *, const char *, size_t, struct err *),
                     void *ctx, struct err *e)
{
    if (strncmp(body, "---\n", 4) != 0)
        return err_set(e, ERR_PROTOCOL, "a stats body that does not start with \"---\"");
    const char *p = body + 4;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len && line_fn(ctx, p, len, e))
            return -1;
        p += len + (nl ? 1 : 0);
    }
    return 0;
}

struct list_ctx {
    char **v;
    size_t n;
};

static int list_line(void *vctx, const char *line, size_t len, struct err *e)
{
    struct list_ctx *l = vctx;
    if (len < 3 || line[0] != '-' || line[1] != ' ')
        return err_set(e, ERR_PROTOCOL, "a list line that is not \"- item\": \"%.*s\"",
                       (int)(len > 80 ? 80 : len), line);
    l->v = xrealloc(l->v, (l->n + 2) * sizeof *l->v);
    l->v[l->n++] = xstrndup(line + 2, len - 2);
    l->v[l->n] = NULL;
    return 0;
}

int beanstalkd_parse_list(const char *body, char ***out, size_t *n, struct err *e)
{
    struct list_ctx l = {NULL, 0};
    *out = NULL;
    *n = 0;
    if (each_line(body, list_line, &l, e)) {
        cfg_strv_free(l.v);
        return -1;
    }
    if (!l.v)
        l.v = xcalloc(1, sizeof *l.v);
    *out = l.v;
    *n = l.n;
    return 0;
}

struct stats_ctx {
    const char *const *keys;
    double *vals;
    size_t n;
    unsigned char *seen;
};

static int stats_line(void *vctx, const char *line, size_t len, struct err *e)
{
    struct stats_ctx *s = vctx;
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line || (size_t)(colon - line) + 1 >= len || colon[1] != ' ')
        return err_set(e, ERR_PROTOCOL, "a stats line that is not \"key: value\": \"%.*s\"",
                       (int)(len > 80 ? 80 : len), line);
    size_t klen = (size_t)(colon - line);
    for (size_t i = 0; i < s->n; i++) {
        if (strlen(s->keys[i]) != klen || memcmp(line, s->keys[i], klen) != 0)
            continue;
        char num[64];
        size_t vlen = len - klen - 2;
        if (vlen == 0 || vlen >= sizeof num)
            return err_set(e, ERR_PROTOCOL, "%s: want a number", s->keys[i]);
        memcpy(num, colon + 2, vlen);
        num[vlen] = '\0';
        char *end;
        errno = 0;
        double v = strtod(num, &end);
        if (errno || *end || end == num || !(v >= 0) || num[0] == '-' || num[0] == '+')
            return err_set(e, ERR_PROTOCOL, "%s: want a number, got \"%s\"", s->keys[i], num);
        s->vals[i] = v;
        s->seen[i] = 1;
    }
    return 0;
}

int beanstalkd_parse_stats(const char *body, const char *const *keys, double *vals, size_t n,
                           struct err *e)
{
    unsigned char seen[64] = {0};
    if (n > sizeof seen)
        return err_set(e, ERR_INTERNAL, "too many stats keys");
    struct stats_ctx s = {keys, vals, n, seen};
    if (each_line(body, stats_line, &s, e))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!seen[i])
            return err_set(e, ERR_PROTOCOL, "stats without %s", keys[i]);
    return 0;
}

int beanstalkd_tube_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > 200 || name[0] == '-')
        return 0;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("-+/;.$_()", c)))
            return 0;
    }
    return 1;
}

/* ---- stats-job, for `qrel dlq` ---- */

static int job_line(void *vctx, const char *line, size_t len, struct err *e)
{
    struct beanstalkd_job *j = vctx;
    (void)e;
    static const struct {
        const char *key;
        size_t off, cap;
    } words[] = {{"tube: ", offsetof(struct beanstalkd_job, tube), sizeof j->tube},
                 {"state: ", offsetof(struct beanstalkd_job, state), sizeof j->state}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t k = strlen(words[i].key);
        if (len > k && memcmp(line, words[i].key, k) == 0) {
            if (len - k >= words[i].cap)
                return err_set(e, ERR_PROTOCOL, "stats-job: a %.*s too long", (int)(k - 2),
                               words[i].key);
            char *dst = (char *)j + words[i].off;
            memcpy(dst, line + k, len - k);
            dst[len - k] = '\0';
        }
    }
    return 0;
}

int beanstalkd_parse_job(const char *body, struct beanstalkd_job *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    static const char *const keys[] = {"id", "age", "reserves", "releases"};
    double v[4];
    if (each_line(body, job_line, out, e) || beanstalkd_parse_stats(body, keys, v, 4, e))
        return err_prefix(e, "stats-job");
    if (!out->tube[0] || !out->state[0])
        return err_set(e, ERR_PROTOCOL, "stats-job: without tube or state");
    out->id = (unsigned long long)v[0];
    out->age = v[1];
    out->reserves = (long long)v[2];
    out->releases = (long long)v[3];
    return 0;
}

int beanstalkd_dlq_id_field(const char *id_field, char *why, size_t cap)
{
    size_t len = id_field ? strlen(id_field) : 0;
    if (len == 0 || id_field[0] == '.' || id_field[len - 1] == '.' || strstr(id_field, "..")) {
        snprintf(why, cap,
                 "want a key of the job body parsed as JSON, with dots between nested keys "
                 "(order.id), got \"%s\"",
                 id_field ? id_field : "");
        return -1;
    }
    return 0;
}
