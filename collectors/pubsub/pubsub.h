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
    double topic_retention;          /* the topic's messageRetentionDuration; 0: none (set by
                                      * the caller from topics.get, not by pubsub_sub_parse) */
    int topic_unreadable;            /* the caller could not read the topic (HTTP 403): the
                                      * retention is unknown and its series left out */
    const char *dead_letter_topic;   /* NULL without a deadLetterPolicy */
    long long max_delivery_attempts; /* deadLetterPolicy.maxDeliveryAttempts (default 5) */
    int has_retry_policy;
    double min_backoff, max_backoff; /* retryPolicy (defaults 10 s and 600 s) */
    int exactly_once, ordered;
};

/* Parses a Subscription object; ctx is its JSON path for messages. */
int pubsub_sub_parse(const json_t *sub, const char *ctx, struct pubsub_sub *out, struct err *e);

/* How long the subscription keeps an unacknowledged message after its publication: its own
 * messageRetentionDuration, or the topic's where that is longer (a topic's retention is the
 * minimum for which a message published to it stays available to every subscription). */
double pubsub_sub_retention(const struct pubsub_sub *s);

/* The messageRetentionDuration of a Topic object (topics.get), seconds; 0 when it has none. */
int pubsub_topic_retention(const json_t *topic, const char *ctx, double *out, struct err *e);

/* How long a dead letter is kept: Pub/Sub publishes it anew to the dead-letter topic, so it
 * lives as long as the longest of sub_retentions (the topic's subscriptions, each as
 * pubsub_sub_retention gives it, n of them) keeps it; without a subscription, as long as the
 * topic's own retention (0: none), so 0 when neither: nothing keeps what is forwarded there. */
double pubsub_dead_letter_retention(double topic_retention, const double *sub_retentions, size_t n);

/* A protobuf Duration in JSON ("10s", "3.5s", "0.000001s") to seconds; -1 when it is not one. */
double pubsub_duration(const char *s);

/* The time from the first delivery to the moment Pub/Sub gives a message up: with a dead-letter
 * policy, every attempt's ack deadline plus the backoff before each retry (retryPolicy: the delay
 * doubles from minimumBackoff up to maximumBackoff; without one, redelivery is immediate),
 * capped by the retention; without one, the retention (Pub/Sub retries until the message
 * expires). */
double pubsub_retry_horizon(const struct pubsub_sub *s);

/* 1 when s names a subscription as the config may: an id (no "/") or
 * projects/PROJECT/subscriptions/ID. */
int pubsub_sub_ref_ok(const char *s);

/* The last segment of a resource name ("projects/p/topics/orders" -> "orders"). */
const char *pubsub_topic_id(const char *topic);

/* Adds the configuration series of one subscription (lease, max deliveries, retry horizon,
 * retention and the qrel_queue_info series). */
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

/* ---- dead letters, for `qrel dlq` (collectors/pubsub/message.c) ----
 * A pull reply's receivedMessages, what a replay publishes again, and the bodies of acknowledge
 * and modifyAckDeadline. */

#define PUBSUB_ATTRIBUTE_PREFIX "attribute:" /* id_field form for a message attribute */
/* The attributes Pub/Sub adds when it dead-letters a message (…SourceDeliveryCount,
 * …SourceSubscription, …SourceSubscriptionProject, …SourceTopicPublishTime): a replay leaves them
 * out, so the message goes back as it was first published. */
#define PUBSUB_DEAD_LETTER_ATTRIBUTES "CloudPubSubDeadLetter"
#define PUBSUB_DELIVERY_COUNT_ATTRIBUTE "CloudPubSubDeadLetterSourceDeliveryCount"

/* One received message. Strings are malloc'd. */
struct pubsub_received {
    char *ack_id;
    char *message_id;
    char *data;                  /* base64 as received; "" when the message has none */
    char *ordering_key;          /* NULL: none */
    json_t *attributes;          /* an object of strings, a reference held here; NULL: none */
    double publish_time;         /* epoch seconds; 0: unknown */
    long long source_deliveries; /* the CloudPubSubDeadLetterSourceDeliveryCount attribute; -1 */
    long long replays;           /* the replay stamp, attribute DLQ_STAMP: 0 without one, -1 when
                                  * it holds no whole number (dlq_message.replays) */
    int removed;                 /* acknowledged (set by the caller) */
};

/* The receivedMessages list of a pull reply (NULL when the reply has none: nothing to pull). */
int pubsub_pull_list(const json_t *doc, json_t **list, struct err *e);
/* One item of that list (ctx: its JSON path). On error out holds nothing. */
int pubsub_received_parse(const json_t *item, const char *ctx, struct pubsub_received *out,
                          struct err *e);
void pubsub_received_free(struct pubsub_received *r); /* the members; NULL is fine */

/* The work id at id_field ("attribute:NAME", or a dotted key of the data as JSON), malloc'd; NULL
 * when absent, not a string or integer, holding a NUL, or when data is not base64. *body_bytes is
 * the decoded data's size (0 when it is not base64). */
char *pubsub_work_id(const struct pubsub_received *r, const char *id_field, size_t *body_bytes);

/* The body of topics.publish that puts r back: its data, its attributes without the
 * CloudPubSubDeadLetter* ones and with the replay stamp DLQ_STAMP set to r's replays + 1 (1 when
 * it had none; replacing the one it had), its orderingKey. malloc'd. */
char *pubsub_publish_body(const struct pubsub_received *r);

/* {"ackIds": [...]} for acknowledge, with "ackDeadlineSeconds": deadline when deadline >= 0
 * (modifyAckDeadline). malloc'd. */
char *pubsub_ack_body(const char *const *ack_ids, size_t n, int deadline);

#endif
