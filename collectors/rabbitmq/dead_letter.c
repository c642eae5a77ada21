/* dead_letter.c: the pure parts of `qrel dlq` on RabbitMQ (declared in rabbitmq.h): the amqp_url
 * key (amqp:// or amqps://), where a dead letter carries its work id, what its x-death header says
 * (origin, count, time), its replay stamp, and the headers a replayed message goes back with.
 * Tables in, values out; no I/O, so the unit tests reach all of it with tables built by hand. */
#include "rabbitmq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_id.h"
#include "dlq_kind.h"
#include "alloc.h"

#define HEADER_PREFIX "header:"
#define PROPERTY_PREFIX "property:"

int rabbitmq_amqp_url_parse(const char *url, char **host, int *port, char **vhost, int *tls,
                            char *why, size_t cap)
{
    *host = *vhost = NULL;
    *tls = strncmp(url, "amqps://", 8) == 0;
    if (!*tls && strncmp(url, "amqp://", 7) != 0) {
        snprintf(why, cap, "want amqp[s]://host[:port][/vhost]");
        return -1;
    }
    const char *rest = url + (*tls ? 8 : 7);
    const char *auth_end = rest + strcspn(rest, "/");
    const char *at = memchr(rest, '@', (size_t)(auth_end - rest));
    if (at) {
        snprintf(why, cap,
                 "want no user or password in the URL: qrel logs in with the source's username "
                 "and password_file or password_env");
        return -1;
    }
    char *copy = xstrdup(url);
    struct amqp_connection_info ci;
    if (amqp_parse_url(copy, &ci) != AMQP_STATUS_OK || !*ci.host) {
        free(copy);
        snprintf(why, cap,
                 "want amqp[s]://host[:port][/vhost] (the vhost %%-encoded: %%2F for \"/\")");
        return -1;
    }
    *host = xstrdup(ci.host);
    *port = ci.port; /* rabbitmq-c's default: 5672, or 5671 for amqps */
    /* rabbitmq-c reads "amqp://h/" as the vhost "": RabbitMQ's own reading (the URI spec) */
    *vhost = xstrdup(ci.vhost);
    free(copy);
    return 0;
}

int rabbitmq_dlq_id_field_check(const char *id_field, char *why, size_t cap)
{
    const char *p = json_id_field_name(id_field, PROPERTY_PREFIX);
    if (p) {
        if (strcmp(p, "message_id") == 0 || strcmp(p, "correlation_id") == 0)
            return 0;
        snprintf(why, cap, "want property:message_id or property:correlation_id, got \"%s\"",
                 id_field);
        return -1;
    }
    char shared[200];
    if (json_id_field_check(id_field, HEADER_PREFIX, shared, sizeof shared) != 0) {
        snprintf(why, cap,
                 "want a JSON key of the message body with dots between nested keys (order.id), "
                 "header:NAME for a header, or property:message_id, got \"%s\"",
                 id_field);
        return -1;
    }
    return 0;
}

static int bytes_is(amqp_bytes_t b, const char *s)
{
    size_t n = strlen(s);
    return b.len == n && memcmp(b.bytes, s, n) == 0;
}

static const amqp_field_value_t *header(const amqp_table_t *h, const char *key)
{
    for (int i = 0; h && i < h->num_entries; i++)
        if (bytes_is(h->entries[i].key, key))
            return &h->entries[i].value;
    return NULL;
}

int rabbitmq_field_int(const amqp_field_value_t *v, int64_t *out)
{
    if (!v)
        return -1;
    switch (v->kind) {
    case AMQP_FIELD_KIND_I8:
        *out = v->value.i8;
        return 0;
    case AMQP_FIELD_KIND_U8:
        *out = v->value.u8;
        return 0;
    case AMQP_FIELD_KIND_I16:
        *out = v->value.i16;
        return 0;
    case AMQP_FIELD_KIND_U16:
        *out = v->value.u16;
        return 0;
    case AMQP_FIELD_KIND_I32:
        *out = v->value.i32;
        return 0;
    case AMQP_FIELD_KIND_U32:
        *out = v->value.u32;
        return 0;
    case AMQP_FIELD_KIND_I64:
        *out = v->value.i64;
        return 0;
    case AMQP_FIELD_KIND_U64:
        if (v->value.u64 > INT64_MAX)
            return -1;
        *out = (int64_t)v->value.u64;
        return 0;
    case AMQP_FIELD_KIND_TIMESTAMP:
        *out = (int64_t)v->value.u64;
        return 0;
    default:
        return -1;
    }
}

static void take_bytes(amqp_bytes_t b, char **out, size_t *len)
{
    *out = xstrndup(b.bytes ? b.bytes : "", b.len);
    *len = b.len;
}

void rabbitmq_dlq_work_id(const amqp_message_t *m, const char *id_field, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    const amqp_basic_properties_t *p = &m->properties;
    const char *prop = json_id_field_name(id_field, PROPERTY_PREFIX);
    if (prop) {
        int mid = strcmp(prop, "message_id") == 0;
        amqp_flags_t flag = mid ? AMQP_BASIC_MESSAGE_ID_FLAG : AMQP_BASIC_CORRELATION_ID_FLAG;
        if (p->_flags & flag)
            take_bytes(mid ? p->message_id : p->correlation_id, out, len);
        return;
    }
    const char *name = json_id_field_name(id_field, HEADER_PREFIX);
    if (!name) {
        json_id_at(m->body.bytes, m->body.len, id_field, out, len);
        return;
    }
    const amqp_field_value_t *v =
        (p->_flags & AMQP_BASIC_HEADERS_FLAG) ? header(&p->headers, name) : NULL;
    int64_t n;
    if (v && (v->kind == AMQP_FIELD_KIND_UTF8 || v->kind == AMQP_FIELD_KIND_BYTES))
        take_bytes(v->value.bytes, out, len);
    else if (v && v->kind != AMQP_FIELD_KIND_TIMESTAMP && rabbitmq_field_int(v, &n) == 0) {
        *out = xasprintf("%lld", (long long)n);
        *len = strlen(*out);
    }
}

/* A dead-lettering reason qrel replays: the broker's rejected (a consumer's reject or nack
 * without requeue), expired (a TTL) and delivery_limit (a quorum queue's); maxlen (an overflow)
 * is one too, since the message was never handled. */
static int death_reason(amqp_bytes_t r)
{
    return bytes_is(r, "rejected") || bytes_is(r, "expired") || bytes_is(r, "delivery_limit") ||
           bytes_is(r, "maxlen");
}

void rabbitmq_death_read(const amqp_basic_properties_t *p, struct rabbitmq_death *out)
{
    memset(out, 0, sizeof *out);
    out->count = -1;
    out->delivery_count = -1;
    out->replays = 0;
    if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG))
        return;
    const amqp_table_t *h = &p->headers;
    int64_t n;
    if (rabbitmq_field_int(header(h, "x-delivery-count"), &n) == 0 && n >= 0)
        out->delivery_count = n;
    const amqp_field_value_t *stamp = header(h, DLQ_STAMP);
    if (stamp && rabbitmq_field_int(stamp, &n) == 0 && n >= 0)
        out->replays = n;
    const amqp_field_value_t *xd = header(h, "x-death");
    if (!xd || xd->kind != AMQP_FIELD_KIND_ARRAY)
        return;
    /* The broker keeps the most recent death first. */
    for (int i = 0; i < xd->value.array.num_entries; i++) {
        const amqp_field_value_t *ev = &xd->value.array.entries[i];
        if (ev->kind != AMQP_FIELD_KIND_TABLE)
            continue;
        const amqp_table_t *t = &ev->value.table;
        const amqp_field_value_t *reason = header(t, "reason"), *queue = header(t, "queue");
        if (!reason || !queue || reason->kind != AMQP_FIELD_KIND_UTF8 ||
            queue->kind != AMQP_FIELD_KIND_UTF8 || !death_reason(reason->value.bytes))
            continue;
        out->queue = xstrndup(queue->value.bytes.bytes ? queue->value.bytes.bytes : "",
                              queue->value.bytes.len);
        out->reason = xstrndup(reason->value.bytes.bytes, reason->value.bytes.len);
        if (rabbitmq_field_int(header(t, "count"), &n) == 0 && n >= 1)
            out->count = n;
        const amqp_field_value_t *time = header(t, "time");
        if (time && time->kind == AMQP_FIELD_KIND_TIMESTAMP)
            out->time = (double)time->value.u64;
        return;
    }
}

void rabbitmq_death_free(struct rabbitmq_death *d)
{
    free(d->queue);
    free(d->reason);
    memset(d, 0, sizeof *d);
}

/* The headers the broker adds when it dead-letters or redelivers a message: a replayed message
 * that kept x-death would be taken for dead at once (3.13 stopped reading client-set x-death,
 * earlier ones did not), and x-delivery-count would carry the old deliveries into the new life. */
static int dropped(amqp_bytes_t k)
{
    static const char *prefixes[] = {"x-first-death-", "x-last-death-"};
    if (bytes_is(k, "x-death") || bytes_is(k, "x-delivery-count") || bytes_is(k, DLQ_STAMP))
        return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        size_t n = strlen(prefixes[i]);
        if (k.len >= n && memcmp(k.bytes, prefixes[i], n) == 0)
            return 1;
    }
    return 0;
}

int rabbitmq_replay_headers(const amqp_basic_properties_t *p, int64_t stamp,
                            amqp_table_entry_t *out)
{
    int n = 0;
    if (p->_flags & AMQP_BASIC_HEADERS_FLAG)
        for (int i = 0; i < p->headers.num_entries; i++)
            if (!dropped(p->headers.entries[i].key))
                out[n++] = p->headers.entries[i];
    out[n].key = amqp_cstring_bytes(DLQ_STAMP);
    out[n].value.kind = AMQP_FIELD_KIND_I64;
    out[n].value.value.i64 = stamp;
    return n + 1;
}
