/* parse.c: an entry of kombu's `unacked` hash (see celery.h), read with jansson. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "celery.h"
#include "alloc.h"
#include "text.h"

int celery_parse_unacked(const char *json, size_t len, struct celery_unacked *out,
                         enum entry_skip *why, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->eta = -1;
    json_error_t je;
    json_t *v = json_loadb(json, len, 0, &je);
    if (!v) {
        *why = json_error_code(&je) == json_error_stack_overflow ? ENTRY_TOO_DEEP : ENTRY_NOT_JSON;
        return err_set(e, ERR_PROTOCOL, "unacked: not JSON (%s at byte %d)", je.text, je.position);
    }
    int rc = -1;
    json_t *msg = json_array_get(v, 0), *rk = json_array_get(v, 2);
    if (!json_is_array(v) || json_array_size(v) != 3 || !json_is_object(msg) ||
        !json_is_string(rk)) {
        *why = ENTRY_NOT_JSON;
        err_set(e, ERR_PROTOCOL, "unacked: want [message, exchange, routing_key]");
        goto out;
    }
    json_t *headers = json_object_get(msg, "headers");
    if (headers && !json_is_object(headers)) {
        *why = ENTRY_BAD_VALUE;
        err_set(e, ERR_PROTOCOL, "unacked: want the message's headers as an object");
        goto out;
    }
    json_t *eta = json_object_get(headers, "eta");
    if (eta && !json_is_null(eta)) {
        /* Celery sends the ETA with its offset; one without (enable_utc off in old setups) is
         * taken as UTC. */
        char naive[64];
        const char *s = json_string_value(eta);
        int bad = !s || (text_parse_rfc3339(s, &out->eta) &&
                         (snprintf(naive, sizeof naive, "%sZ", s) >= (int)sizeof naive ||
                          text_parse_rfc3339(naive, &out->eta)));
        if (bad)
            out->eta = NAN;
    }
    out->redelivered = json_is_true(json_object_get(headers, "redelivered"));
    out->routing_key = xstrndup(json_string_value(rk), json_string_length(rk));
    rc = 0;
out:
    json_decref(v);
    return rc;
}

void celery_unacked_free(struct celery_unacked *u)
{
    if (u)
        free(u->routing_key);
}
