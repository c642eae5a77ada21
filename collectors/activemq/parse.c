/* parse.c: the pure parsers of the `activemq` kind: a bulk Jolokia reply into series, the
 * delivery limit from a dead letter's dlqDeliveryFailureCause, and the dead-letter naming
 * policy. No I/O; declared in activemq.h and tested on recorded replies. */
#include "activemq.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "common/glob.h"
#include "common/json.h"
#include "common/json_id.h"
#include "hashtab.h"
#include "number.h"

int activemq_is_dlq(const char *pattern, const char *name)
{
    const char *tok = strstr(pattern, ACTIVEMQ_QUEUE_TOKEN);
    if (!tok)
        return strcmp(pattern, name) == 0;
    size_t pre = (size_t)(tok - pattern), n = strlen(name);
    const char *suf = tok + strlen(ACTIVEMQ_QUEUE_TOKEN);
    size_t sl = strlen(suf);
    return n > pre + sl && strncmp(name, pattern, pre) == 0 && strcmp(name + n - sl, suf) == 0;
}

char *activemq_dlq_name(const char *pattern, const char *queue)
{
    const char *tok = strstr(pattern, ACTIVEMQ_QUEUE_TOKEN);
    if (!tok)
        return xstrdup(pattern);
    return xasprintf("%.*s%s%s", (int)(tok - pattern), pattern, queue,
                     tok + strlen(ACTIVEMQ_QUEUE_TOKEN));
}

int activemq_cause_max_deliveries(const char *cause, double *out)
{
    static const char key[] = "maximumRedeliveries = ";
    if (!cause || !strstr(cause, "exceeds redelivery policy limit"))
        return 0;
    const char *p = strstr(cause, key);
    if (!p)
        return 0;
    p += sizeof key - 1;
    char digits[16];
    size_t n = 0;
    if (*p == '-')
        return 0; /* -1: unlimited, the client never gives up */
    while (p[n] >= '0' && p[n] <= '9' && n < sizeof digits - 1) {
        digits[n] = p[n];
        n++;
    }
    if (n == 0 || (p[n] >= '0' && p[n] <= '9'))
        return 0;
    digits[n] = '\0';
    long long v;
    if (num_parse_int(digits, 0, 1000000000, &v))
        return 0;
    *out = (double)v + 1;
    return 1;
}

/* ---- the bulk reply ---- */

struct queue_row {
    const char *name;
    double size, in_flight;
    double consumers;      /* ConsumerCount: the queue's subscriptions now */
    const char *strategy;  /* the SlowConsumerStrategy MBean's name, or NULL */
    int watched;           /* a work queue this source exports */
    double dead;           /* dead letters from it */
    double oldest, newest; /* JMSTimestamp range of its dead letters (epoch s); 0: none */
    double max_deliveries; /* 0: unknown */
};

struct rows {
    struct queue_row *v;
    size_t n;
    struct hashtab ix; /* by name */
};

static uint64_t row_hash(const void *ctx, uint32_t id)
{
    const struct rows *r = ctx;
    return hashtab_hash(r->v[id].name, strlen(r->v[id].name), 0);
}

static struct queue_row *row_find(struct rows *r, const char *name, int add)
{
    uint64_t h = hashtab_hash(name, strlen(name), 0);
    struct hashtab_probe p;
    for (uint32_t id = hashtab_first(&r->ix, h, &p); id != HASHTAB_END;
         id = hashtab_next(&r->ix, &p))
        if (strcmp(r->v[id].name, name) == 0)
            return &r->v[id];
    if (!add)
        return NULL;
    r->v = xrealloc(r->v, (r->n + 1) * sizeof *r->v);
    struct queue_row *q = &r->v[r->n];
    memset(q, 0, sizeof *q);
    q->name = name;
    hashtab_add(&r->ix, &p, (uint32_t)r->n++, row_hash, r);
    return q;
}

/* The value of reply i: 1 with *value, 0 when Jolokia answered 404 (no such MBean), -1 on any
 * other status or shape. */
static int reply_value(const json_t *doc, size_t i, const char *what, json_t **value, struct err *e)
{
    char ctx[32];
    json_path_index(ctx, sizeof ctx, "$", i);
    const json_t *r = json_array_get(doc, i);
    double status;
    if (!r)
        return err_set(e, ERR_PROTOCOL, "$: want %zu replies, got %zu", i + 1,
                       json_array_size(doc));
    if (json_expect_object(r, ctx, e) || json_need_number(r, ctx, "status", &status, e))
        return -1;
    if (status == 404)
        return 0;
    if (status != 200) {
        const char *type = NULL;
        if (json_get_string(r, ctx, "error_type", &type, e) < 0)
            return -1;
        return err_set(e, ERR_QUERY, "%s: Jolokia answered status %.0f (%s)", what, status,
                       type ? type : "no error_type");
    }
    *value = json_object_get(r, "value");
    if (!*value)
        return err_set(e, ERR_PROTOCOL, "%s.value: missing", ctx);
    return 1;
}

static int watched(struct activemq_filter *f, const char *name)
{
    if (activemq_is_dlq(f->dead_letter_queue, name))
        return 0;
    int in = !f->queues;
    for (size_t i = 0; !in && i < f->nqueues; i++)
        in = glob_match(f->queues[i], name);
    return in && !(f->exclude && exclude_drop(f->exclude, name));
}

static int read_queues(const json_t *v, struct activemq_filter *f, struct rows *rows, struct err *e)
{
    if (json_expect_object(v, "$[1].value", e))
        return -1;
    const char *key;
    json_t *q;
    json_object_foreach((json_t *)v, key, q)
    {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "$[1].value[%zu]", rows->n);
        const char *name;
        double size, fl, consumers;
        json_t *strat = NULL;
        if (json_expect_object(q, ctx, e) || json_need_string(q, ctx, "Name", &name, e) ||
            json_need_number(q, ctx, "QueueSize", &size, e) ||
            json_need_number(q, ctx, "InFlightCount", &fl, e) ||
            json_need_number(q, ctx, "ConsumerCount", &consumers, e) ||
            json_get_object(q, ctx, "SlowConsumerStrategy", &strat, e) < 0)
            return -1;
        struct queue_row *r = row_find(rows, name, 1);
        r->size = size;
        r->in_flight = fl;
        r->consumers = consumers;
        r->watched = watched(f, name);
        if (strat && json_get_string(strat, ctx, "objectName", &r->strategy, e) < 0)
            return -1;
    }
    (void)key;
    return 0;
}

/* The ack lease of a strategy MBean in seconds; 0 when it has none (a plain
 * AbortSlowConsumerStrategy, or maxTimeSinceLastAck unset). */
static int strategy_lease(const json_t *strategies, const char *name, double *lease, struct err *e)
{
    *lease = 0;
    const json_t *s = strategies && name ? json_object_get(strategies, name) : NULL;
    double ms = 0;
    if (!s)
        return 0;
    if (json_expect_object(s, "$[2].value", e) ||
        json_get_number(s, "$[2].value", "MaxTimeSinceLastAck", &ms, e) < 0)
        return -1;
    if (ms > 0 && isfinite(ms))
        *lease = ms / 1000;
    return 0;
}

/* One dead letter of the shared queue: counted against the queue of its OriginalDestination. */
static void read_dead_letter(const json_t *m, struct rows *rows, double now,
                             struct entry_skips *skips)
{
    const json_t *od = json_is_object(m) ? json_object_get(m, "OriginalDestination") : NULL;
    const char *dest = json_is_string(od) ? json_string_value(od) : NULL;
    if (!dest || !*dest) {
        entry_skips_add(skips, "", json_is_object(m) ? ENTRY_MISSING_FIELD : ENTRY_BAD_VALUE);
        return;
    }
    if (strncmp(dest, "queue://", 8) != 0)
        return; /* a topic's: this kind watches queues */
    struct queue_row *r = row_find(rows, dest + 8, 0);
    if (!r || !r->watched)
        return;
    r->dead++;
    const json_t *ts = json_object_get(m, "JMSTimestamp");
    double t, age;
    if (json_is_string(ts)) {
        if (json_parse_rfc3339(json_string_value(ts), &t))
            entry_skips_add(skips, r->name, ENTRY_BAD_TIMESTAMP);
        else if (entry_skips_age(skips, r->name, now, t, &age) == 0) {
            if (r->oldest == 0 || t < r->oldest)
                r->oldest = t;
            if (t > r->newest)
                r->newest = t;
        }
    }
    const json_t *sp = json_object_get(m, "StringProperties");
    const json_t *c = json_is_object(sp) ? json_object_get(sp, "dlqDeliveryFailureCause") : NULL;
    double md;
    if (json_is_string(c) && activemq_cause_max_deliveries(json_string_value(c), &md) &&
        md > r->max_deliveries)
        r->max_deliveries = md;
}

static void emit(struct rows *rows, const json_t *strategies, struct activemq_filter *f, int shared,
                 double now, struct metric_set *out, struct activemq_result *res)
{
    for (size_t i = 0; i < rows->n; i++) {
        struct queue_row *r = &rows->v[i];
        if (!r->watched)
            continue;
        res->queues++;
        double ready = r->size > r->in_flight ? r->size - r->in_flight : 0;
        metric_set_add(out, "qrel_queue_messages", ready, "queue", r->name, "state", "ready", NULL);
        metric_set_add(out, "qrel_queue_messages", r->in_flight, "queue", r->name, "state",
                       "in_flight", NULL);
        metric_set_add(out, "qrel_queue_consumers", r->consumers, "queue", r->name, NULL);
        double lease;
        struct err ignored; /* every strategy was read once before: no error here */
        if (strategy_lease(strategies, r->strategy, &lease, &ignored) == 0 && lease > 0)
            metric_set_add(out, "qrel_lease_timeout_seconds", lease, "queue", r->name, NULL);
        char *dlq = activemq_dlq_name(f->dead_letter_queue, r->name);
        double dead = r->dead;
        if (!shared) {
            struct queue_row *d = row_find(rows, dlq, 0);
            dead = d ? d->size : 0;
        }
        metric_set_add(out, "qrel_dead_letter_messages", dead, "queue", r->name,
                       "dead_letter_queue", dlq, NULL);
        if (r->oldest > 0) {
            metric_set_add(out, "qrel_dead_letter_oldest_age_seconds", fmax(0, now - r->oldest),
                           "queue", r->name, "dead_letter_queue", dlq, NULL);
            metric_set_add(out, "qrel_dead_letter_newest_age_seconds", fmax(0, now - r->newest),
                           "queue", r->name, "dead_letter_queue", dlq, NULL);
        }
        if (r->max_deliveries > 0)
            metric_set_add(out, "qrel_max_deliveries", r->max_deliveries, "queue", r->name, NULL);
        free(dlq);
    }
}

int activemq_bulk_collect(const json_t *doc, struct activemq_filter *f, double now,
                          struct metric_set *out, struct entry_skips *skips,
                          struct activemq_result *res, struct err *e)
{
    memset(res, 0, sizeof *res);
    int shared = strstr(f->dead_letter_queue, ACTIVEMQ_QUEUE_TOKEN) == NULL;
    json_t *broker, *queues = NULL, *strategies = NULL, *browse = NULL;
    if (json_expect_array(doc, "$", e))
        return -1;
    int rc = reply_value(doc, 0, "read Broker", &broker, e);
    if (rc == 0)
        return err_set(e, ERR_QUERY,
                       "no broker with brokerName \"%s\" (set broker_name to the broker's "
                       "brokerName)",
                       f->broker_name);
    if (rc < 0 || reply_value(doc, 1, "read queues", &queues, e) < 0 ||
        reply_value(doc, 2, "read SlowConsumerStrategy", &strategies, e) < 0 ||
        (shared && reply_value(doc, 3, "browse dead-letter queue", &browse, e) < 0))
        return -1;
    if (strategies && json_expect_object(strategies, "$[2].value", e))
        return -1;
    struct rows rows = {0};
    rc = -1;
    if (queues && read_queues(queues, f, &rows, e))
        goto out;
    /* every strategy the queues name is read here, so a wrong shape fails the collection */
    for (size_t i = 0; i < rows.n; i++) {
        double lease;
        if (rows.v[i].watched && strategy_lease(strategies, rows.v[i].strategy, &lease, e))
            goto out;
    }
    if (browse) {
        if (json_expect_array(browse, "$[3].value", e))
            goto out;
        res->browsed = json_array_size(browse);
        for (size_t i = 0; i < res->browsed; i++)
            read_dead_letter(json_array_get(browse, i), &rows, now, skips);
    }
    if (shared) {
        struct queue_row *d = row_find(&rows, f->dead_letter_queue, 0);
        /* A size past 2^53 is no exact count (and past SIZE_MAX no size_t at all): a broker
         * answering one is held to 2^53 rather than converted out of range. */
        double size = d && d->size > 0 ? d->size : 0;
        res->dlq_size = size < 9007199254740992.0 ? (size_t)size : (size_t)9007199254740992ULL;
        res->unread = res->dlq_size > res->browsed ? res->dlq_size - res->browsed : 0;
    }
    emit(&rows, strategies, f, shared, now, out, res);
    if (res->unread)
        metric_set_add(out, "qrel_dead_letter_messages", (double)res->unread, "queue", "",
                       "dead_letter_queue", f->dead_letter_queue, NULL);
    rc = 0;
out:
    hashtab_free(&rows.ix);
    free(rows.v);
    return rc;
}

/* ---- `qrel dlq`: one dead letter of a browse() ---- */

int activemq_dlq_id_field_check(const char *id_field, char *why, size_t cap)
{
    char shared[200];
    if (json_id_field_check(id_field, ACTIVEMQ_PROPERTY_PREFIX, shared, sizeof shared) == 0)
        return 0;
    snprintf(why, cap,
             "want a JSON key of the text message's body with dots between nested keys "
             "(order.id) or property:NAME for a JMS property, got \"%s\"",
             id_field);
    return -1;
}

int activemq_cause_deliveries(const char *cause, long long *out)
{
    static const char key[] = "Delivery[";
    const char *p = cause ? strstr(cause, key) : NULL;
    if (!p || !strstr(p, "] exceeds redelivery policy limit"))
        return 0;
    p += sizeof key - 1;
    char digits[16];
    size_t n = 0;
    while (p[n] >= '0' && p[n] <= '9' && n < sizeof digits - 1) {
        digits[n] = p[n];
        n++;
    }
    if (n == 0 || p[n] != ']')
        return 0;
    digits[n] = '\0';
    return num_parse_int(digits, 0, 1000000000, out) == 0;
}

/* A JMS property by name: Jolokia lists them by type; strings as they are, integers in decimal
 * (a float or a boolean is no id). */
static char *property(const json_t *m, const char *name)
{
    static const char *const groups[] = {"StringProperties", "LongProperties", "IntProperties",
                                         "ShortProperties", "ByteProperties"};
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++) {
        const json_t *v = json_object_get(json_object_get(m, groups[i]), name);
        if (json_is_string(v)) {
            const char *s = json_string_value(v);
            /* an id with a NUL byte matches no row: counted as without one */
            return strlen(s) == json_string_length(v) ? xstrdup(s) : NULL;
        }
        if (json_is_integer(v))
            return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    }
    return NULL;
}

int activemq_dlq_letter(const json_t *m, const char *queue, const char *id_field,
                        struct activemq_letter *out)
{
    memset(out, 0, sizeof *out);
    out->deliveries = -1;
    const char *od = json_string_value(json_object_get(m, "OriginalDestination"));
    const char *id = json_string_value(json_object_get(m, "JMSMessageID"));
    if (!od || !id || !*id || strncmp(od, "queue://", 8) != 0 || strcmp(od + 8, queue) != 0)
        return 0;
    out->message_id = id;
    const json_t *text = json_object_get(m, "Text");
    if (json_is_string(text))
        out->body_bytes = json_string_length(text);
    const char *prop = json_id_field_name(id_field, ACTIVEMQ_PROPERTY_PREFIX);
    if (prop)
        out->work_id = property(m, prop);
    else if (json_is_string(text)) {
        size_t len = 0;
        json_id_at(json_string_value(text), json_string_length(text), id_field, &out->work_id,
                   &len);
        if (out->work_id && strlen(out->work_id) != len) {
            free(out->work_id);
            out->work_id = NULL;
        }
    }
    const char *cause = json_string_value(
        json_object_get(json_object_get(m, "StringProperties"), "dlqDeliveryFailureCause"));
    long long d;
    if (activemq_cause_deliveries(cause, &d))
        out->deliveries = d;
    const char *ts = json_string_value(json_object_get(m, "JMSTimestamp"));
    double t;
    if (ts && json_parse_rfc3339(ts, &t) == 0 && isfinite(t) && t > 946684800)
        out->sent = t;
    return 1;
}
