/* pubsub/message.c: the pure parts of `qrel dlq` for Pub/Sub (pubsub.h): a pull reply's messages,
 * the work id (in the data, which comes as base64), the replay stamp, and the bodies of publish,
 * acknowledge and modifyAckDeadline. No I/O:
 * tests/unit/check_pubsub_message.c feeds it replies recorded from the emulator. */
#include "pubsub/pubsub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/json_id.h"
#include "alloc.h"
#include "dlq_kind.h"
#include "text.h"

int pubsub_pull_list(const json_t *doc, json_t **list, struct err *e)
{
    *list = NULL;
    /* An empty pull is "{}": receivedMessages is left out. */
    if (json_expect_object(doc, "$", e) ||
        json_get_array(doc, "$", "receivedMessages", list, e) < 0)
        return -1;
    return 0;
}

void pubsub_received_free(struct pubsub_received *r)
{
    if (!r)
        return;
    free(r->ack_id);
    free(r->message_id);
    free(r->data);
    free(r->ordering_key);
    json_decref(r->attributes);
    memset(r, 0, sizeof *r);
}

static int parse_attributes(json_t *attrs, const char *ctx, struct pubsub_received *out,
                            struct err *e)
{
    const char *key;
    json_t *v;
    json_object_foreach(attrs, key, v)
    {
        if (!json_is_string(v))
            return err_set(e, ERR_PROTOCOL, "%s.%.100s: want a string, got %s", ctx, key,
                           json_type_word(v));
    }
    out->attributes = json_incref(attrs);
    out->replays = 0;
    const char *stamp = json_string_value(json_object_get(attrs, DLQ_STAMP));
    if (stamp) { /* a whole number of at most 18 digits, else unknown */
        size_t len = strlen(stamp);
        out->replays = len == 0 || len > 18 ? -1 : 0;
        for (size_t i = 0; i < len && out->replays >= 0; i++)
            out->replays =
                stamp[i] >= '0' && stamp[i] <= '9' ? out->replays * 10 + (stamp[i] - '0') : -1;
    }
    json_t *count = json_object_get(attrs, PUBSUB_DELIVERY_COUNT_ATTRIBUTE);
    if (count) {
        char *end = NULL;
        long long n = strtoll(json_string_value(count), &end, 10);
        if (end != json_string_value(count) && *end == '\0' && n >= 0)
            out->source_deliveries = n;
    }
    return 0;
}

int pubsub_received_parse(const json_t *item, const char *ctx, struct pubsub_received *out,
                          struct err *e)
{
    memset(out, 0, sizeof *out);
    out->source_deliveries = -1;
    char mpath[300], apath[320];
    json_t *msg = NULL, *attrs = NULL;
    const char *ack, *id, *data = NULL, *okey = NULL;
    json_path_key(mpath, sizeof mpath, ctx, "message");
    json_path_key(apath, sizeof apath, mpath, "attributes");
    if (json_expect_object(item, ctx, e) || json_need_string(item, ctx, "ackId", &ack, e) ||
        json_need_object(item, ctx, "message", &msg, e) ||
        json_need_string(msg, mpath, "messageId", &id, e) ||
        json_get_string(msg, mpath, "data", &data, e) < 0 ||
        json_get_string(msg, mpath, "orderingKey", &okey, e) < 0 ||
        json_get_time(msg, mpath, "publishTime", &out->publish_time, e) < 0 ||
        json_get_object(msg, mpath, "attributes", &attrs, e) < 0)
        return -1;
    if (attrs && parse_attributes(attrs, apath, out, e))
        return -1;
    out->ack_id = xstrdup(ack);
    out->message_id = xstrdup(id);
    out->data = xstrdup(data ? data : "");
    out->ordering_key = okey && *okey ? xstrdup(okey) : NULL;
    return 0;
}

char *pubsub_work_id(const struct pubsub_received *r, const char *id_field, size_t *body_bytes)
{
    size_t dlen = strlen(r->data);
    unsigned char *body = xmalloc(dlen / 4 * 3 + 3);
    long n = text_base64_decode(r->data, dlen, 0, body);
    size_t blen = n < 0 ? 0 : (size_t)n;
    body[blen] = '\0';
    *body_bytes = blen;
    char *id = NULL;
    size_t len = 0;
    const char *attr = json_id_field_name(id_field, PUBSUB_ATTRIBUTE_PREFIX);
    if (attr) {
        json_t *v = r->attributes ? json_object_get(r->attributes, attr) : NULL;
        if (json_is_string(v)) {
            len = json_string_length(v);
            id = xstrndup(json_string_value(v), len);
        }
    } else if (n >= 0) {
        json_id_at((const char *)body, blen, id_field, &id, &len);
    }
    free(body);
    /* an empty id or one holding a NUL names no row: the message's class is unknown */
    if (id && (len == 0 || memchr(id, '\0', len))) {
        free(id);
        id = NULL;
    }
    return id;
}

char *pubsub_publish_body(const struct pubsub_received *r)
{
    json_t *m = json_pack("{s:s}", "data", r->data);
    json_t *attrs = json_object();
    const char *key;
    json_t *v;
    size_t skip = strlen(PUBSUB_DEAD_LETTER_ATTRIBUTES);
    if (r->attributes)
        json_object_foreach(r->attributes, key, v)
        {
            if (strncmp(key, PUBSUB_DEAD_LETTER_ATTRIBUTES, skip) != 0 && strcmp(key, DLQ_STAMP))
                json_object_set(attrs, key, v);
        }
    char stamp[24];
    snprintf(stamp, sizeof stamp, "%lld", r->replays > 0 ? r->replays + 1 : 1);
    json_object_set_new(attrs, DLQ_STAMP, json_string(stamp));
    if (json_object_size(attrs) > 0)
        json_object_set(m, "attributes", attrs);
    json_decref(attrs);
    if (r->ordering_key)
        json_object_set_new(m, "orderingKey", json_string(r->ordering_key));
    json_t *doc = json_pack("{s:[o]}", "messages", m);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return text;
}

char *pubsub_ack_body(const char *const *ack_ids, size_t n, int deadline)
{
    json_t *ids = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(ids, json_string(ack_ids[i]));
    json_t *doc = json_pack("{s:o}", "ackIds", ids);
    if (deadline >= 0)
        json_object_set_new(doc, "ackDeadlineSeconds", json_integer(deadline));
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(doc);
    return text;
}
