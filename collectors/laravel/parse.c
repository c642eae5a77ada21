/* parse.c: Laravel's job payloads, the queue of a discovered key and the lease figures of the
 * reserved jobs (see laravel.h). */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "laravel.h"
#include "alloc.h"

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

int laravel_parse_job(const char *json, size_t len, struct laravel_job *out, enum entry_skip *why,
                      struct err *e)
{
    json_error_t je;
    json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
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
