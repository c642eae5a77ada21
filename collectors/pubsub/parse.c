/* pubsub/parse.c: the pure parts of `kind: pubsub` (pubsub.h): a subscription as the Pub/Sub
 * REST API returns it, the series it gives, and Cloud Monitoring timeSeries.list pages. No I/O:
 * tests/unit/check_pubsub.c feeds it replies recorded from the emulator (tests/fixtures/pubsub/)
 * and hand-made documents. */
#include "pubsub/pubsub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "alloc.h"

#define DEFAULT_ACK_DEADLINE 10.0
#define DEFAULT_RETENTION (7 * 86400.0)
#define DEFAULT_MAX_DELIVERY_ATTEMPTS 5
#define DEFAULT_MIN_BACKOFF 10.0
#define DEFAULT_MAX_BACKOFF 600.0

const char *const pubsub_metric_types[PUBSUB_METRIC_COUNT] = {
    "pubsub.googleapis.com/subscription/num_undelivered_messages",
    "pubsub.googleapis.com/subscription/oldest_unacked_message_age",
    "pubsub.googleapis.com/subscription/expired_ack_deadlines_count",
};

double pubsub_duration(const char *s)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || strcmp(end, "s") != 0 || !(v >= 0) || v > 1e12)
        return -1;
    return v;
}

static int duration_field(const json_t *obj, const char *ctx, const char *key, double def,
                          double *out, struct err *e)
{
    const char *s = NULL;
    int rc = json_get_string(obj, ctx, key, &s, e);
    if (rc < 0)
        return -1;
    *out = def;
    if (rc == 0)
        return 0;
    *out = pubsub_duration(s);
    if (*out < 0) {
        char path[300];
        json_path_key(path, sizeof path, ctx, key);
        return err_set(e, ERR_PROTOCOL, "%s: want a duration like \"10s\", got \"%.40s\"", path, s);
    }
    return 0;
}

int pubsub_sub_parse(const json_t *sub, const char *ctx, struct pubsub_sub *out, struct err *e)
{
    memset(out, 0, sizeof *out);
    char path[300];
    json_t *dlp = NULL, *rp = NULL;
    double v;
    if (json_expect_object(sub, ctx, e) || json_need_string(sub, ctx, "name", &out->name, e) ||
        json_get_string(sub, ctx, "topic", &out->topic, e) < 0)
        return -1;
    const char *slash = strrchr(out->name, '/');
    out->id = slash ? slash + 1 : out->name;
    out->ack_deadline = DEFAULT_ACK_DEADLINE;
    int has = json_get_numeric(sub, ctx, "ackDeadlineSeconds", &v, e);
    if (has < 0)
        return -1;
    if (has)
        out->ack_deadline = v;
    if (duration_field(sub, ctx, "messageRetentionDuration", DEFAULT_RETENTION, &out->retention,
                       e) ||
        json_get_bool(sub, ctx, "enableExactlyOnceDelivery", &out->exactly_once, e) < 0 ||
        json_get_bool(sub, ctx, "enableMessageOrdering", &out->ordered, e) < 0 ||
        json_get_object(sub, ctx, "deadLetterPolicy", &dlp, e) < 0 ||
        json_get_object(sub, ctx, "retryPolicy", &rp, e) < 0)
        return -1;
    if (dlp) {
        json_path_key(path, sizeof path, ctx, "deadLetterPolicy");
        has = json_get_numeric(dlp, path, "maxDeliveryAttempts", &v, e);
        if (has < 0 ||
            json_get_string(dlp, path, "deadLetterTopic", &out->dead_letter_topic, e) < 0)
            return -1;
        /* The API leaves maxDeliveryAttempts out when it is the default, 5. */
        out->max_delivery_attempts = has ? (long long)v : DEFAULT_MAX_DELIVERY_ATTEMPTS;
        if (out->dead_letter_topic && !*out->dead_letter_topic)
            out->dead_letter_topic = NULL;
    }
    if (rp) {
        json_path_key(path, sizeof path, ctx, "retryPolicy");
        out->has_retry_policy = 1;
        if (duration_field(rp, path, "minimumBackoff", DEFAULT_MIN_BACKOFF, &out->min_backoff, e) ||
            duration_field(rp, path, "maximumBackoff", DEFAULT_MAX_BACKOFF, &out->max_backoff, e))
            return -1;
    }
    return 0;
}

double pubsub_sub_retention(const struct pubsub_sub *s)
{
    return s->topic_retention > s->retention ? s->topic_retention : s->retention;
}

int pubsub_topic_retention(const json_t *topic, const char *ctx, double *out, struct err *e)
{
    /* The API leaves the field out when the topic retains nothing beyond its subscriptions. */
    if (json_expect_object(topic, ctx, e))
        return -1;
    return duration_field(topic, ctx, "messageRetentionDuration", 0, out, e);
}

double pubsub_dead_letter_retention(double topic_retention, const double *sub_retentions, size_t n)
{
    double keep = topic_retention;
    for (size_t i = 0; i < n; i++)
        if (sub_retentions[i] > keep)
            keep = sub_retentions[i];
    return keep;
}

double pubsub_retry_horizon(const struct pubsub_sub *s)
{
    double retention = pubsub_sub_retention(s);
    if (!s->dead_letter_topic)
        return retention;
    double t = 0, backoff = s->min_backoff;
    for (long long k = 1; k <= s->max_delivery_attempts; k++) {
        t += s->ack_deadline;
        if (k < s->max_delivery_attempts && s->has_retry_policy) {
            t += backoff < s->max_backoff ? backoff : s->max_backoff;
            backoff *= 2;
        }
    }
    return t < retention ? t : retention;
}

int pubsub_sub_ref_ok(const char *s)
{
    int full = strncmp(s, "projects/", 9) == 0;
    const char *id = full ? strrchr(s, '/') + 1 : s;
    return *s && (full ? strstr(s, "/subscriptions/") != NULL && *id : strchr(s, '/') == NULL);
}

const char *pubsub_topic_id(const char *topic)
{
    const char *slash = strrchr(topic, '/');
    return slash ? slash + 1 : topic;
}

void pubsub_sub_series(const struct pubsub_sub *s, struct metric_set *out)
{
    metric_set_add(out, "qrel_lease_timeout_seconds", s->ack_deadline, "queue", s->id, NULL);
    if (s->dead_letter_topic)
        metric_set_add(out, "qrel_max_deliveries", (double)s->max_delivery_attempts, "queue", s->id,
                       NULL);
    metric_set_add(out, "qrel_retry_horizon_seconds", pubsub_retry_horizon(s), "queue", s->id,
                   NULL);
    if (!s->topic_unreadable)
        metric_set_add(out, "qrel_queue_retention_seconds", pubsub_sub_retention(s), "queue", s->id,
                       NULL);
    metric_set_add(out, "qrel_queue_info", 1.0, "queue", s->id, "dead_letter_queue",
                   s->dead_letter_topic ? pubsub_topic_id(s->dead_letter_topic) : "",
                   "exactly_once", s->exactly_once ? "true" : "false", "ordered",
                   s->ordered ? "true" : "false", NULL);
}

void pubsub_monitoring_free(struct pubsub_monitoring *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].subscription);
        free(m->v[i].points);
    }
    free(m->v);
    free(m->next_page_token);
    memset(m, 0, sizeof *m);
}

const struct pubsub_series *pubsub_monitoring_find(const struct pubsub_monitoring *m,
                                                   const char *subscription,
                                                   enum pubsub_metric metric)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].metric == metric && strcmp(m->v[i].subscription, subscription) == 0)
            return &m->v[i];
    return NULL;
}

static int parse_point(const json_t *p, const char *ctx, struct pubsub_point *out, struct err *e)
{
    char ipath[300], vpath[300];
    json_t *interval, *value;
    double v;
    json_path_key(ipath, sizeof ipath, ctx, "interval");
    json_path_key(vpath, sizeof vpath, ctx, "value");
    if (json_expect_object(p, ctx, e) || json_need_object(p, ctx, "interval", &interval, e) ||
        json_need_time(interval, ipath, "endTime", &out->end, e) ||
        json_need_object(p, ctx, "value", &value, e))
        return -1;
    /* int64Value comes as a decimal string (protobuf JSON), doubleValue as a number. */
    int rc = json_get_numeric(value, vpath, "int64Value", &v, e);
    if (rc == 0)
        rc = json_get_number(value, vpath, "doubleValue", &v, e);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return err_set(e, ERR_PROTOCOL, "%s: want int64Value or doubleValue", vpath);
    out->value = v;
    return 0;
}

int pubsub_monitoring_parse(const json_t *doc, struct pubsub_monitoring *m, struct err *e)
{
    json_t *list = NULL;
    const char *token = NULL;
    free(m->next_page_token);
    m->next_page_token = NULL;
    if (json_expect_object(doc, "$", e) || json_get_array(doc, "$", "timeSeries", &list, e) < 0 ||
        json_get_string(doc, "$", "nextPageToken", &token, e) < 0)
        return -1;
    if (token && *token)
        m->next_page_token = xstrdup(token);
    char ctx[64], mpath[96], rpath[96], lpath[128], ppath[96], ipath[128];
    for (size_t i = 0; list && i < json_array_size(list); i++) {
        const json_t *ts = json_array_get(list, i);
        json_t *metric, *resource, *labels, *points;
        const char *type, *sub;
        json_path_index(ctx, sizeof ctx, "$.timeSeries", i);
        json_path_key(mpath, sizeof mpath, ctx, "metric");
        json_path_key(rpath, sizeof rpath, ctx, "resource");
        json_path_key(lpath, sizeof lpath, rpath, "labels");
        json_path_key(ppath, sizeof ppath, ctx, "points");
        if (json_expect_object(ts, ctx, e) || json_need_object(ts, ctx, "metric", &metric, e) ||
            json_need_string(metric, mpath, "type", &type, e))
            return -1;
        int which = -1;
        for (int k = 0; k < PUBSUB_METRIC_COUNT; k++)
            if (strcmp(type, pubsub_metric_types[k]) == 0)
                which = k;
        if (which < 0)
            continue;
        if (json_need_object(ts, ctx, "resource", &resource, e) ||
            json_need_object(resource, rpath, "labels", &labels, e) ||
            json_need_string(labels, lpath, "subscription_id", &sub, e) ||
            json_need_array(ts, ctx, "points", &points, e))
            return -1;
        size_t n = json_array_size(points);
        struct pubsub_point *pts = n ? xcalloc(n, sizeof *pts) : NULL;
        for (size_t k = 0; k < n; k++) {
            json_path_index(ipath, sizeof ipath, ppath, k);
            if (parse_point(json_array_get(points, k), ipath, &pts[k], e)) {
                free(pts);
                return -1;
            }
        }
        m->v = xrealloc(m->v, (m->n + 1) * sizeof *m->v);
        m->v[m->n++] = (struct pubsub_series){.subscription = xstrdup(sub),
                                              .metric = (enum pubsub_metric)which,
                                              .points = pts,
                                              .n = n};
    }
    return 0;
}
