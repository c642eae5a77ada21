/* sqs/dlq_parse.c: the pure parts of `qrel dlq` for SQS (sqs.h): the request bodies it sends and
 * the answers it reads, as AWS JSON 1.0 documents. No I/O, so every shape a server may send is
 * tested without one (tests/unit/check_sqs_dlq.c).
 *
 * SQS sends every system attribute as a string ("ApproximateReceiveCount": "5", "SentTimestamp":
 * "1700000000123", epoch milliseconds). Message attributes are kept as SendMessage takes them back
 * (DataType and StringValue or BinaryValue): the list members SQS reserves but does not use are
 * left out, since a replay must send what the producer sent and nothing SQS may refuse. */
#include "sqs/sqs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/json_id.h"
#include "alloc.h"
#include "dlq_kind.h"

#define ATTRIBUTE_PREFIX "attribute:"
#define DEDUP_ID_MESSAGE_ID_MAX 100 /* of SQS's 128 characters */

void sqs_dead_letter_free(void *p)
{
    struct sqs_dead_letter *m = p;
    if (!m)
        return;
    free(m->message_id);
    free(m->receipt_handle);
    free(m->body);
    free(m->md5_of_body);
    json_decref(m->attributes);
    free(m->group_id);
    free(m);
}

/* The message attributes at ctx, reduced to what SendMessage takes. *out is NULL for none. */
static int parse_message_attributes(const json_t *obj, const char *ctx, json_t **out, struct err *e)
{
    *out = NULL;
    json_t *attrs = NULL;
    int got = json_get_object(obj, ctx, "MessageAttributes", &attrs, e);
    if (got <= 0)
        return got;
    char actx[300];
    json_path_key(actx, sizeof actx, ctx, "MessageAttributes");
    json_t *kept = json_object();
    const char *name;
    json_t *a;
    json_object_foreach(attrs, name, a)
    {
        char nctx[400];
        json_path_key(nctx, sizeof nctx, actx, name);
        const char *type = NULL, *sv = NULL, *bv = NULL;
        if (json_expect_object(a, nctx, e) || json_need_string(a, nctx, "DataType", &type, e) ||
            json_get_string(a, nctx, "StringValue", &sv, e) < 0 ||
            json_get_string(a, nctx, "BinaryValue", &bv, e) < 0) {
            json_decref(kept);
            return -1;
        }
        json_t *k = json_pack("{s:s}", "DataType", type);
        if (sv)
            json_object_set_new(k, "StringValue", json_string(sv));
        if (bv)
            json_object_set_new(k, "BinaryValue", json_string(bv));
        json_object_set_new(kept, name, k);
    }
    if (json_object_size(kept) == 0)
        json_decref(kept);
    else
        *out = kept;
    return 0;
}

/* The replay stamp among attrs (NULL: none): 0 without one; its count; -1 when it is no whole
 * number (or binary). */
static long long stamp_of(const json_t *attrs)
{
    const json_t *a = attrs ? json_object_get(attrs, DLQ_STAMP) : NULL;
    if (!a)
        return 0;
    const char *v = json_string_value(json_object_get(a, "StringValue"));
    size_t len = v ? strlen(v) : 0;
    if (len == 0 || len > 18)
        return -1;
    long long n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

static int parse_message(const json_t *msg, const char *ctx, struct sqs_dead_letter *m,
                         struct err *e)
{
    const char *id = NULL, *handle = NULL, *body = NULL, *md5 = NULL, *group = NULL;
    json_t *attrs = NULL;
    if (json_expect_object(msg, ctx, e) || json_need_string(msg, ctx, "MessageId", &id, e) ||
        json_need_string(msg, ctx, "ReceiptHandle", &handle, e) ||
        json_need_string(msg, ctx, "Body", &body, e) ||
        json_get_string(msg, ctx, "MD5OfBody", &md5, e) < 0 ||
        json_get_object(msg, ctx, "Attributes", &attrs, e) < 0)
        return -1;
    m->message_id = xstrdup(id);
    m->receipt_handle = xstrdup(handle);
    m->body_len = json_string_length(json_object_get(msg, "Body"));
    m->body = xstrndup(body, m->body_len);
    m->md5_of_body = xstrdup(md5);
    m->receive_count = -1;
    m->held = 1;
    if (attrs) {
        char actx[300];
        json_path_key(actx, sizeof actx, ctx, "Attributes");
        double sent = 0;
        int got = json_get_numeric(attrs, actx, "SentTimestamp", &sent, e);
        if (got < 0 ||
            json_get_numeric(attrs, actx, "ApproximateReceiveCount", &m->receive_count, e) < 0 ||
            json_get_string(attrs, actx, "MessageGroupId", &group, e) < 0)
            return -1;
        if (got > 0)
            m->sent = sent / 1000.0;
        m->group_id = xstrdup(group);
    }
    if (parse_message_attributes(msg, ctx, &m->attributes, e))
        return -1;
    m->replays = stamp_of(m->attributes);
    return 0;
}

int sqs_dlq_parse_receive(const json_t *doc, const char *what, struct sqs_dead_letter ***v,
                          size_t *n, struct err *e)
{
    *v = NULL;
    *n = 0;
    char ctx[256];
    snprintf(ctx, sizeof ctx, "%s: $", what);
    json_t *msgs = NULL;
    if (json_expect_object(doc, ctx, e) || json_get_array(doc, ctx, "Messages", &msgs, e) < 0)
        return -1;
    size_t count = msgs ? json_array_size(msgs) : 0;
    if (count == 0)
        return 0;
    struct sqs_dead_letter **out = xcalloc(count, sizeof *out);
    for (size_t i = 0; i < count; i++) {
        char mctx[320];
        snprintf(mctx, sizeof mctx, "%s.Messages[%zu]", ctx, i);
        out[i] = xcalloc(1, sizeof *out[i]);
        if (parse_message(json_array_get(msgs, i), mctx, out[i], e)) {
            for (size_t k = 0; k <= i; k++)
                sqs_dead_letter_free(out[k]);
            free(out);
            return -1;
        }
    }
    *v = out;
    *n = count;
    return 0;
}

static const char *attribute_name(const char *id_field)
{
    return json_id_field_name(id_field, ATTRIBUTE_PREFIX);
}

int sqs_dlq_id_field_check(const char *id_field, char *why, size_t cap)
{
    /* The forms are the shared ones (common/json_id.h); the message names SQS's words. */
    char shared[200];
    if (json_id_field_check(id_field, ATTRIBUTE_PREFIX, shared, sizeof shared) != 0) {
        snprintf(why, cap,
                 "want a JSON key of the message body with dots between nested keys (order.id) "
                 "or attribute:NAME for a message attribute, got \"%s\"",
                 id_field);
        return -1;
    }
    return 0;
}

void sqs_dlq_work_id(const struct sqs_dead_letter *m, const char *id_field, char **id, size_t *len)
{
    *id = NULL;
    *len = 0;
    const char *a = attribute_name(id_field);
    if (!a) {
        json_id_at(m->body, m->body_len, id_field, id, len);
        return;
    }
    /* String and Number attributes (custom types "Number.int" included) hold text; a Binary one
     * is base64 of bytes, which no work table keys by */
    const json_t *attr = m->attributes ? json_object_get(m->attributes, a) : NULL;
    const char *type = json_string_value(json_object_get(attr, "DataType"));
    const json_t *sv = json_object_get(attr, "StringValue");
    if (!type || !json_is_string(sv) || strncmp(type, "Binary", 6) == 0)
        return;
    *len = json_string_length(sv);
    *id = xstrndup(json_string_value(sv), *len);
}

static char *dump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

char *sqs_dlq_receive_body(const char *url, int max, int visibility, int wait)
{
    /* AttributeNames is the older name of MessageSystemAttributeNames: some servers (and
     * emulators) honour only one of them, and SQS accepts both */
    return dump(json_pack("{s:s, s:i, s:i, s:i, s:[s], s:[s], s:[s]}", "QueueUrl", url,
                          "MaxNumberOfMessages", max, "VisibilityTimeout", visibility,
                          "WaitTimeSeconds", wait, "AttributeNames", "All",
                          "MessageSystemAttributeNames", "All", "MessageAttributeNames", "All"));
}

char *sqs_dlq_send_body(const char *url, const struct sqs_dead_letter *m, const char *dedup_id,
                        int *stamped)
{
    json_t *o = json_pack("{s:s, s:s%}", "QueueUrl", url, "MessageBody", m->body, m->body_len);
    json_t *attrs = m->attributes ? json_deep_copy(m->attributes) : json_object();
    json_object_del(attrs, DLQ_STAMP);
    int stamp = json_object_size(attrs) < SQS_MAX_MESSAGE_ATTRIBUTES;
    if (stamp) {
        char n[24];
        snprintf(n, sizeof n, "%lld", m->replays > 0 ? m->replays + 1 : 1);
        json_object_set_new(attrs, DLQ_STAMP,
                            json_pack("{s:s, s:s}", "DataType", "Number", "StringValue", n));
    } else if (m->attributes) { /* as read: an earlier stamp is not dropped either */
        json_decref(attrs);
        attrs = json_incref(m->attributes);
    }
    if (stamped)
        *stamped = stamp;
    if (json_object_size(attrs))
        json_object_set(o, "MessageAttributes", attrs);
    json_decref(attrs);
    if (dedup_id) {
        if (m->group_id)
            json_object_set_new(o, "MessageGroupId", json_string(m->group_id));
        json_object_set_new(o, "MessageDeduplicationId", json_string(dedup_id));
    }
    return dump(o);
}

char *sqs_dlq_dedup_id(const struct sqs_dead_letter *m, long long now_ms)
{
    return xasprintf("qrel-%.*s-%lld", DEDUP_ID_MESSAGE_ID_MAX, m->message_id, now_ms);
}

int sqs_dlq_check_sent(const json_t *doc, const char *what, const struct sqs_dead_letter *m,
                       struct err *e)
{
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: $", what);
    const char *id = NULL, *md5 = NULL;
    if (json_expect_object(doc, ctx, e) || json_need_string(doc, ctx, "MessageId", &id, e) ||
        json_get_string(doc, ctx, "MD5OfMessageBody", &md5, e) < 0)
        return -1;
    if (md5 && m->md5_of_body && strcmp(md5, m->md5_of_body) != 0)
        return err_set(e, ERR_PROTOCOL,
                       "%s: the body SQS stored (MD5 %.40s) is not the body read (MD5 %.40s)", what,
                       md5, m->md5_of_body);
    return 0;
}

char *sqs_dlq_visibility_body(const char *url, struct sqs_dead_letter *const *v, size_t n,
                              int timeout)
{
    json_t *entries = json_array();
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "m%zu", i);
        json_array_append_new(entries,
                              json_pack("{s:s, s:s, s:i}", "Id", id, "ReceiptHandle",
                                        v[i]->receipt_handle, "VisibilityTimeout", timeout));
    }
    return dump(json_pack("{s:s, s:o}", "QueueUrl", url, "Entries", entries));
}

int sqs_dlq_check_batch(const json_t *doc, const char *what, struct sqs_dead_letter *const *v,
                        size_t n, struct err *e)
{
    char ctx[300];
    snprintf(ctx, sizeof ctx, "%s: $", what);
    json_t *failed = NULL;
    if (json_expect_object(doc, ctx, e) || json_get_array(doc, ctx, "Failed", &failed, e) < 0)
        return -1;
    if (!failed || json_array_size(failed) == 0)
        return 0;
    char fctx[320];
    snprintf(fctx, sizeof fctx, "%s.Failed[0]", ctx);
    const json_t *f = json_array_get(failed, 0);
    const char *id = NULL, *code = NULL, *message = NULL;
    if (json_expect_object(f, fctx, e) || json_need_string(f, fctx, "Id", &id, e) ||
        json_get_string(f, fctx, "Code", &code, e) < 0 ||
        json_get_string(f, fctx, "Message", &message, e) < 0)
        return -1;
    size_t i = n;
    if (id[0] == 'm') {
        char *end = NULL;
        unsigned long k = strtoul(id + 1, &end, 10);
        if (end != id + 1 && *end == '\0' && k < n)
            i = k;
    }
    return err_set(e, ERR_QUERY, "%s: %zu of %zu entries failed, first: message %s: %s%s%.200s",
                   what, json_array_size(failed), n, i < n ? v[i]->message_id : id,
                   code ? code : "error", message ? ": " : "", message ? message : "");
}
