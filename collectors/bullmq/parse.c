/* parse.c: BullMQ's (and Bull 3/4's) key names, events, workers' connection names and metrics
 * counts (see bullmq.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bullmq.h"
#include "number.h"
#include "text.h"

char *bullmq_queue_of_meta_key(const char *key, size_t len, const char *prefix)
{
    static const char suffix[] = ":meta";
    size_t plen = strlen(prefix), slen = sizeof suffix - 1;
    if (len <= plen + 1 + slen || memcmp(key, prefix, plen) != 0 || key[plen] != ':' ||
        memcmp(key + len - slen, suffix, slen) != 0)
        return NULL;
    return xstrndup(key + plen + 1, len - plen - 1 - slen);
}

char *bullmq_queue_of_found_key(const char *key, size_t len, const char *prefix)
{
    static const char id[] = ":id";
    size_t plen = strlen(prefix), slen = sizeof id - 1;
    if (len > plen + 1 + slen && memcmp(key, prefix, plen) == 0 && key[plen] == ':' &&
        memcmp(key + len - slen, id, slen) == 0)
        return xstrndup(key + plen + 1, len - plen - 1 - slen);
    return bullmq_queue_of_meta_key(key, len, prefix);
}

char *bullmq_discovery_match(const char *prefix)
{
    return xasprintf("%s:*:[im][de]*", prefix);
}

int bullmq_is_stalled_event(const char *const *names, const char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] && values[i] && strcmp(names[i], "event") == 0)
            return strcmp(values[i], "stalled") == 0;
    return 0;
}

int bullmq_queue_tagged(const char *prefix, const char *queue)
{
    char *base = xasprintf("%s:%s:", prefix, queue);
    const char *open = strchr(base, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    int tagged = close && close > open + 1;
    free(base);
    return tagged;
}

/* The queue a worker connection's name stands for: name is `<prefix>:<base64(queue)>`, or that
 * followed by `:w:<worker name>` (base64 has no ':'). malloc'd, or NULL for any other name (a
 * QueueEvents' `:qe`, another prefix's, a name that is no base64 or decodes to a NUL). */
static char *worker_queue(const char *name, size_t len, const char *prefix)
{
    size_t plen = strlen(prefix);
    if (len <= plen + 1 || memcmp(name, prefix, plen) != 0 || name[plen] != ':')
        return NULL;
    const char *b64 = name + plen + 1, *end = name + len;
    const char *colon = memchr(b64, ':', (size_t)(end - b64));
    if (colon && ((size_t)(end - colon) < 3 || memcmp(colon, ":w:", 3) != 0))
        return NULL;
    size_t blen = (size_t)((colon ? colon : end) - b64);
    char *out = xmalloc(blen / 4 * 3 + 3);
    long n = blen ? text_base64_decode(b64, blen, 1, (unsigned char *)out) : -1;
    if (n <= 0 || memchr(out, '\0', (size_t)n)) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    return out;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t bullmq_worker_queues(const char *list, size_t len, const char *prefix, char ***queues)
{
    size_t n = 0, cap = 0;
    char **out = NULL;
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        /* the fields are "key=value" separated by single spaces; name= is never the first */
        for (const char *f = p; f < line_end;) {
            const char *sp = memchr(f, ' ', (size_t)(line_end - f));
            const char *f_end = sp ? sp : line_end;
            if (f_end > f && f_end[-1] == '\r')
                f_end--;
            if ((size_t)(f_end - f) > 5 && memcmp(f, "name=", 5) == 0) {
                char *q = worker_queue(f + 5, (size_t)(f_end - f - 5), prefix);
                if (q) {
                    if (n == cap) {
                        cap = cap ? 2 * cap : 16;
                        out = xrealloc(out, cap * sizeof *out);
                    }
                    out[n++] = q;
                }
                break;
            }
            f = sp ? sp + 1 : line_end;
        }
        p = eol ? eol + 1 : end;
    }
    if (n)
        qsort(out, n, sizeof *out, by_name);
    *queues = out;
    return n;
}

size_t bullmq_workers_of(char *const *queues, size_t n, const char *queue)
{
    size_t lo = 0, hi = n; /* the first position whose name is not below queue */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(queues[mid], queue) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = lo;
    while (k < n && strcmp(queues[k], queue) == 0)
        k++;
    return k - lo;
}

int bullmq_metrics_count(const char *s, double *count)
{
    long long v;
    if (!s || num_parse_int(s, 0, 9007199254740992LL, &v)) /* 2^53: exact as a double */
        return -1;
    *count = (double)v;
    return 0;
}
