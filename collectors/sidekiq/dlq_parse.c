/* dlq_parse.c: the pure parts of `qrel dlq` for Sidekiq (see sidekiq.h): the id_field forms, what
 * a job of the dead set says (queue, jid, work id, deliveries, replay stamp), and the payload a
 * replay pushes back, edited as Sidekiq's own retry edits it plus the stamp. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "buf.h"
#include "common/json_id.h"
#include "common/json_members.h"
#include "dlq_kind.h"
#include "sidekiq.h"

int sidekiq_dlq_id_field(const char *id_field, char *why, size_t cap)
{
    size_t len = id_field ? strlen(id_field) : 0;
    if (len == 0 || id_field[0] == '.' || id_field[len - 1] == '.' || strstr(id_field, "..")) {
        snprintf(why, cap,
                 "want a key of the job payload with dots between nested keys and digits for an "
                 "array position (jid, args.0, args.0.order_id), got \"%s\"",
                 id_field ? id_field : "");
        return -1;
    }
    return 0;
}

static json_t *load_object(const char *json, size_t len, enum entry_skip *why, struct err *e)
{
    json_error_t je;
    json_t *v = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!v) {
        if (why)
            *why =
                json_error_code(&je) == json_error_stack_overflow ? ENTRY_TOO_DEEP : ENTRY_NOT_JSON;
        err_set(e, ERR_PROTOCOL, "dead job: not JSON (%s at byte %d)", je.text, je.position);
        return NULL;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        if (why)
            *why = ENTRY_NOT_JSON;
        err_set(e, ERR_PROTOCOL, "dead job: want a JSON object");
        return NULL;
    }
    return v;
}

static char *string_at(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        strlen(json_string_value(v)) != json_string_length(v))
        return NULL;
    return xstrdup(json_string_value(v));
}

int sidekiq_dlq_job(const char *json, size_t len, const char *id_field, struct sidekiq_dead *out,
                    enum entry_skip *why, struct err *e)
{
    memset(out, 0, sizeof *out);
    out->deliveries = -1;
    json_t *v = load_object(json, len, why, e);
    if (!v)
        return -1;
    if (!(out->queue = string_at(v, "queue"))) {
        json_decref(v);
        *why = ENTRY_MISSING_FIELD;
        return err_set(e, ERR_PROTOCOL, "dead job: want a \"queue\" string");
    }
    out->jid = string_at(v, "jid");
    json_t *rc = json_object_get(v, "retry_count");
    if (json_is_integer(rc) && json_integer_value(rc) >= 0 && json_integer_value(rc) < LLONG_MAX)
        out->deliveries = (long long)json_integer_value(rc) + 1;
    json_t *st = json_object_get(v, DLQ_STAMP);
    if (json_is_integer(st) && json_integer_value(st) > 0)
        out->replays = (long long)json_integer_value(st);
    json_decref(v);
    char *id;
    size_t idlen;
    json_id_at(json, len, id_field, &id, &idlen);
    if (id && strlen(id) == idlen && idlen)
        out->work_id = id; /* an id holding a NUL is no id: the class is unknown */
    else
        free(id);
    return 0;
}

void sidekiq_dead_free(struct sidekiq_dead *d)
{
    free(d->queue);
    free(d->jid);
    free(d->work_id);
    memset(d, 0, sizeof *d);
}

/* ---- the payload a replay pushes ---- */

struct rewrite {
    struct buf out;
    int drop_count; /* retry_count is an integer: written below, one less */
    int kept, refused;
};

static int is_key(const struct json_member *m, const char *name)
{
    return m->klen == strlen(name) && memcmp(m->key, name, m->klen) == 0;
}

static int keep_member(void *ctx, const struct json_member *m)
{
    struct rewrite *r = ctx;
    if (m->escaped) { /* it could spell one of the keys written below */
        r->refused = 1;
        return -1;
    }
    if (is_key(m, "enqueued_at") || is_key(m, DLQ_STAMP) ||
        (r->drop_count && is_key(m, "retry_count")))
        return 0;
    if (r->kept++)
        buf_putc(&r->out, ',');
    buf_append(&r->out, m->member, (size_t)(m->v_end - m->member));
    return 0;
}

int sidekiq_dlq_requeue_payload(const char *json, size_t len, double now, long long stamp,
                                char **out, size_t *outlen, struct err *e)
{
    *out = NULL;
    *outlen = 0;
    if (!isfinite(now) || now < 0)
        return err_set(e, ERR_INTERNAL, "the clock says no time Sidekiq can read");
    json_t *v = load_object(json, len, NULL, e);
    if (!v)
        return -1;
    json_t *rc = json_object_get(v, "retry_count");
    struct rewrite r = {0};
    r.drop_count = json_is_integer(rc) && json_integer_value(rc) > LLONG_MIN;
    long long count = r.drop_count ? (long long)json_integer_value(rc) - 1 : 0;
    json_decref(v);
    buf_putc(&r.out, '{');
    if (!json_members(json, len, keep_member, &r)) {
        buf_free(&r.out);
        if (r.refused)
            return err_set(e, ERR_PROTOCOL,
                           "dead job: a top-level key with an escape (no payload Sidekiq writes): "
                           "not rewritten");
        return err_set(e, ERR_PROTOCOL, "dead job: not a JSON object qrel can rewrite");
    }
    if (r.drop_count)
        buf_printf(&r.out, "%s\"retry_count\":%lld", r.kept++ ? "," : "", count);
    buf_printf(&r.out, "%s\"enqueued_at\":%.6f,\"%s\":%lld}", r.kept ? "," : "", now, DLQ_STAMP,
               stamp);
    *outlen = r.out.len;
    *out = buf_steal(&r.out);
    return 0;
}
