/* pubsub.h: the pure parts of the `pubsub` kind (collectors/pubsub/parse.c), exposed for unit
 * tests.
 *
 * The collector is `pubsub_kind` (registry.c). What is declared here does no I/O: it reads a
 * subscription as the Pub/Sub REST API (v1) returns it and a Cloud Monitoring timeSeries.list
 * page (v3), so tests can feed recorded and hand-made documents. */
#ifndef QREL_PUBSUB_H
#define QREL_PUBSUB_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"
#include "metrics.h"

/* One subscription's delivery settings (subscriptions.get). Strings point into the document. */
struct pubsub_sub {
    const char *name;                /* projects/P/subscriptions/S */
    const char *id;                  /* S: the queue label */
    const char *topic;               /* projects/P/topics/T */
    double ack_deadline;             /* ackDeadlineSeconds (the API's default is 10) */
    double retention;                /* messageRetentionDuration, seconds (default 7 days) */
    const char *dead_letter_topic;   /* NULL without a deadLetterPolicy */
    long long max_delivery_attempts; /* deadLetterPolicy.maxDeliveryAttempts (default 5) */
    int has_retry_policy;
    double min_backoff, max_backoff; /* retryPolicy (defaults 10 s and 600 s) */
    int exactly_once, ordered;
};

/* Parses a Subscription object; ctx is its JSON path for messages. */
int pubsub_sub_parse(const json_t *sub, const char *ctx, struct pubsub_sub *out, struct err *e);

/* A protobuf Duration in JSON ("10s", "3.5s", "0.000001s") to seconds; -1 when it is not one. */
double pubsub_duration(const char *s);

/* The time from the first delivery to the moment Pub/Sub gives a message up: with a dead-letter
 * policy, every attempt's ack deadline plus the backoff before each retry (retryPolicy: the delay
 * doubles from minimumBackoff up to maximumBackoff; without one, redelivery is immediate),
 * capped by the retention; without one, the retention (Pub/Sub retries until the message
 * expires). */
double pubsub_retry_horizon(const struct pubsub_sub *s);

/* The last segment of a resource name ("projects/p/topics/orders" -> "orders"). */
const char *pubsub_topic_id(const char *topic);

/* Adds the configuration series of one subscription (lease, max deliveries, retry horizon and
 * the qrel_queue_info series). */
void pubsub_sub_series(const struct pubsub_sub *s, struct metric_set *out);

/* Cloud Monitoring metrics read, by index. */
enum pubsub_metric {
    PUBSUB_UNDELIVERED,    /* num_undelivered_messages (gauge) */
    PUBSUB_OLDEST_UNACKED, /* oldest_unacked_message_age (gauge, seconds) */
    PUBSUB_EXPIRED_ACKS,   /* expired_ack_deadlines_count (delta) */
    PUBSUB_METRIC_COUNT
};
extern const char *const pubsub_metric_types[PUBSUB_METRIC_COUNT];

struct pubsub_point {
    double end; /* interval.endTime, epoch seconds */
    double value;
};

/* The points of one (subscription, metric) series, newest first. */
struct pubsub_series {
    char *subscription; /* resource.labels.subscription_id */
    enum pubsub_metric metric;
    struct pubsub_point *points;
    size_t n;
};

struct pubsub_monitoring {
    struct pubsub_series *v;
    size_t n;
    char *next_page_token; /* NULL on the last page */
};

/* Adds one timeSeries.list page to m (series of other metric types are skipped). Errors name the
 * JSON path. */
int pubsub_monitoring_parse(const json_t *doc, struct pubsub_monitoring *m, struct err *e);
void pubsub_monitoring_free(struct pubsub_monitoring *m);
/* The series of subscription and metric in m, or NULL. */
const struct pubsub_series *pubsub_monitoring_find(const struct pubsub_monitoring *m,
                                                   const char *subscription,
                                                   enum pubsub_metric metric);

#endif
