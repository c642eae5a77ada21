/* dlq_parse.c: the pure parts of `qrel dlq` for BullMQ (see bullmq.h): which id_field forms a
 * failed job answers and its work id, and what its hash says of its attempts, its failure time
 * and its replay stamp. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bullmq.h"
#include "common/json_id.h"

#define Y2000 946684800.0 /* 2000-01-01T00:00:00Z */

int bullmq_dlq_id_field(const char *id_field, enum bullmq_id_field *out, char *why, size_t cap)
{
    if (id_field && strcmp(id_field, "job_id") == 0) {
        *out = BULLMQ_ID_JOB_ID;
        return 0;
    }
    if (id_field && strcmp(id_field, "name") == 0) {
        *out = BULLMQ_ID_NAME;
        return 0;
    }
    /* Every dot separates two keys of the data: none may be empty. */
    size_t len = id_field ? strlen(id_field) : 0;
    if (len == 0 || id_field[0] == '.' || id_field[len - 1] == '.' || strstr(id_field, "..")) {
        snprintf(why, cap,
                 "want job_id (the job id), name (the job's name) or a key of the job's data "
                 "with dots between nested keys (order.id), got \"%s\"",
                 id_field ? id_field : "");
        return -1;
    }
    *out = BULLMQ_ID_DATA;
    return 0;
}

char *bullmq_dlq_work_id(enum bullmq_id_field f, const char *id_field, const char *job_id,
                         const char *name, const char *data, size_t data_len)
{
    if (f == BULLMQ_ID_JOB_ID)
        return job_id && *job_id ? xstrdup(job_id) : NULL;
    if (f == BULLMQ_ID_NAME)
        return name && *name ? xstrdup(name) : NULL;
    char *id = NULL;
    size_t len = 0;
    json_id_at(data, data_len, id_field, &id, &len);
    if (id && (len == 0 || memchr(id, '\0', len))) { /* empty, or no text a table holds */
        free(id);
        return NULL;
    }
    return id;
}

/* A whole number from 0 on, in decimal digits only; -1 otherwise. */
static long long count_of(const char *s)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return *end || errno ? -1 : v;
}

long long bullmq_dlq_deliveries(const char *atm, const char *attempts_made)
{
    long long n = count_of(atm);
    return n >= 0 ? n : count_of(attempts_made);
}

long long bullmq_dlq_replays(const char *stamp)
{
    long long n = count_of(stamp);
    return n > 0 ? n : 0;
}

static double seconds_of(const char *ms)
{
    if (!ms || !*ms)
        return 0;
    char *end;
    double v = strtod(ms, &end);
    if (*end || !isfinite(v) || v / 1000 < Y2000)
        return 0;
    return v / 1000;
}

double bullmq_dlq_dead_since(const char *finished_on, const char *score)
{
    double t = seconds_of(finished_on);
    return t > 0 ? t : seconds_of(score);
}
