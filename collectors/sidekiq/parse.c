/* parse.c: Sidekiq's job and work JSON (see sidekiq.h), read with jansson. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sidekiq.h"
#include "util.h"

static json_t *load(const char *json, size_t len, const char *what, struct err *e)
{
    json_error_t je;
    json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        err_set(e, ERR_PROTOCOL, "%s: not JSON (%s at byte %d)", what, je.text, je.position);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        err_set(e, ERR_PROTOCOL, "%s: want a JSON object", what);
        return NULL;
    }
    return v;
}

static int queue_of(json_t *obj, const char *what, char **queue, struct err *e)
{
    json_t *q = json_object_get(obj, "queue");
    if (!json_is_string(q) || json_string_length(q) == 0)
        return err_set(e, ERR_PROTOCOL, "%s: want a \"queue\" string", what);
    *queue = xstrndup(json_string_value(q), json_string_length(q));
    return 0;
}

int sidekiq_parse_job(const char *json, size_t len, char **queue, double *enqueued_at,
                      struct err *e)
{
    *queue = NULL;
    *enqueued_at = -1;
    json_t *v = load(json, len, "job", e);
    if (!v)
        return -1;
    int rc = queue_of(v, "job", queue, e);
    json_t *at = json_object_get(v, "enqueued_at");
    if (rc == 0 && at) {
        if (!json_is_number(at) || json_number_value(at) < 0)
            rc = err_set(e, ERR_PROTOCOL, "job: want \"enqueued_at\" as epoch seconds");
        else
            *enqueued_at = json_number_value(at);
    }
    json_decref(v);
    if (rc) {
        free(*queue);
        *queue = NULL;
    }
    return rc;
}

int sidekiq_parse_work(const char *json, size_t len, char **queue, double *run_at, struct err *e)
{
    *queue = NULL;
    json_t *v = load(json, len, "work", e);
    if (!v)
        return -1;
    int rc = queue_of(v, "work", queue, e);
    json_t *at = json_object_get(v, "run_at");
    if (rc == 0 && (!json_is_number(at) || json_number_value(at) < 0))
        rc = err_set(e, ERR_PROTOCOL, "work: want \"run_at\" as epoch seconds");
    else if (rc == 0)
        *run_at = json_number_value(at);
    json_decref(v);
    if (rc) {
        free(*queue);
        *queue = NULL;
    }
    return rc;
}
