/* parse.c: RQ's timestamps, the lease figures of a queue's running jobs and a worker's queues (see
 * rq.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rq.h"
#include "text.h"

int rq_parse_time(const char *s, double *epoch)
{
    if (!s || !*s)
        return -1;
    return text_parse_rfc3339(s, epoch);
}

int rq_job_timeout(const char *field, double default_timeout, double *seconds)
{
    if (!field || !*field) {
        *seconds = default_timeout;
        return 1;
    }
    char *end;
    errno = 0;
    double v = strtod(field, &end);
    if (errno || *end || end == field || !isfinite(v))
        return -1;
    if (v < 0)
        return 0; /* RQ's -1: the job may run forever */
    *seconds = v;
    return 1;
}

int rq_lease(const struct rq_hold *h, size_t n, double *oldest, double *margin, double *timeout)
{
    *oldest = 0;
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (h[i].held > *oldest)
            *oldest = h[i].held;
        if (h[i].timeout <= 0 || h[i].held <= 0)
            continue;
        double r = h[i].timeout / h[i].held;
        if (!found || r < *margin) {
            *margin = r;
            *timeout = h[i].timeout;
            found = 1;
        }
    }
    return found;
}

int rq_worker_serves(const char *queues, size_t len, const char *name)
{
    size_t nlen = strlen(name);
    const char *p = queues, *end = queues + len;
    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if ((size_t)(stop - p) == nlen && memcmp(p, name, nlen) == 0)
            return 1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}
