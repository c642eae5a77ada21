/* dlq_parse.c: the pure parts of `qrel dlq` for RQ (see rq.h): which id_field forms a failed job
 * can answer, RQ's own time format for the enqueued_at a replay writes, and what the job hash
 * says of how often the job ran and how often qrel replayed it. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rq.h"

int rq_dlq_id_field(const char *id_field, enum rq_id_field *out, char *why, size_t whylen)
{
    if (id_field && strcmp(id_field, "job_id") == 0) {
        *out = RQ_ID_JOB_ID;
        return 0;
    }
    if (id_field && strcmp(id_field, "description") == 0) {
        *out = RQ_ID_DESCRIPTION;
        return 0;
    }
    snprintf(why, whylen,
             "want job_id (the job id) or description (the job's description): RQ pickles a "
             "job's arguments and meta, and qrel does not unpickle them");
    return -1;
}

int rq_utcformat(double t, char *out, size_t outlen)
{
    /* 253402300800: 10000-01-01T00:00:00Z */
    if (!isfinite(t) || t < 0 || t >= 253402300800.0)
        return -1;
    time_t secs = (time_t)floor(t);
    long usec = (long)floor((t - (double)secs) * 1e6 + 0.5);
    if (usec >= 1000000) { /* rounding reached the next second */
        secs++;
        usec -= 1000000;
    }
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        return -1;
    int n = snprintf(out, outlen, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
    return n > 0 && (size_t)n < outlen ? 0 : -1;
}

long long rq_dlq_deliveries(const char *retries_left)
{
    return retries_left ? -1 : 1;
}

long long rq_dlq_replays(const char *stamp)
{
    if (!stamp)
        return 0;
    long long n = 0;
    size_t len = strlen(stamp);
    if (len == 0 || len > 18) /* 18 digits fit in a long long */
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (stamp[i] < '0' || stamp[i] > '9')
            return -1;
        n = n * 10 + (stamp[i] - '0');
    }
    return n;
}
