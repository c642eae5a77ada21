/* rabbitmq.h: the pure parts of `kind: rabbitmq` (collectors/rabbitmq/parse.c), exposed for unit
 * tests: reading one queue object of the management API, the dead-letter settings a queue ends up
 * with (queue arguments over policy), and which queues a dead-letter exchange routes to. */
#ifndef QREL_RABBITMQ_H
#define QREL_RABBITMQ_H

#include <amqp.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* One queue as GET /api/queues reported it. Strings point into the JSON document. */
struct rabbitmq_queue {
    const char *vhost;
    const char *name;
    /* depth: absent for a few seconds after a queue is declared (no stats emitted yet) */
    int has_stats;
    double ready, unacked;
    /* consumers: the queue's basic.consume subscriptions (absent from a reply without the column)
     */
    int has_consumers;
    double consumers;
    /* the slow part (present when the columns were asked for) */
    int has_head_ts;
    double head_ts;   /* epoch seconds: the basic.timestamp property of the head message */
    double redeliver; /* message_stats.redeliver; 0 when the queue has stats but no such count */
    const char *dlx;  /* dead-letter exchange ("" is the default exchange), or NULL */
    const char *dlrk; /* dead-letter routing key, or NULL (the message's own key is kept) */
    double delivery_limit;      /* x-delivery-limit / delivery-limit, or -1 */
    double consumer_timeout_ms; /* x-consumer-timeout / consumer-timeout, or -1 */
    double message_ttl_ms;      /* x-message-ttl / message-ttl, the lower of both, or -1 */
    /* message_stats.ack + deliver_no_ack + get_no_ack: the messages consumers acknowledged and
     * those the broker sent to auto-ack consumers, done as they left; 0 as redeliver */
    double consumed;
};

/* Reads queue i of a /api/queues reply. ctx is its JSON path for messages ("$[12]"). with_meta:
 * the reply has the slow columns (arguments, effective_policy_definition, ...). Returns 0, or -1
 * with ERR_PROTOCOL naming the path of a value of the wrong type. */
int rabbitmq_queue_parse(const json_t *obj, const char *ctx, int with_meta,
                         struct rabbitmq_queue *out, struct err *e);

/* Calls each(elem, ctx, arg, e) for every element of the JSON list in body, in order, with ctx
 * its path ("$[12]"), decoding one element at a time and freeing it before the next: the list of
 * 10,000 queues with their slow columns (1.7 MB) is a 17 MB jansson tree when decoded whole, one
 * queue a few hundred bytes. Every element must be an object. 0, or -1 with ERR_PROTOCOL on
 * malformed or truncated JSON, a body that is no list or an element that is no object (what
 * names the request), or whatever each failed with (each returns -1). */
int rabbitmq_each_object(const char *body, size_t len, const char *what,
                         int (*each)(const json_t *elem, const char *ctx, void *arg, struct err *e),
                         void *arg, struct err *e);

/* Deliveries a message gets before it is dead-lettered, from a quorum queue's delivery-limit:
 * the limit counts returns after the first delivery, so limit 4 allows 5 deliveries (measured on
 * 3.10.8). -1 when there is no limit. */
double rabbitmq_max_deliveries(double delivery_limit);

/* AMQP topic matching: '*' is exactly one word, '#' zero or more, words split on '.'. */
int rabbitmq_topic_match(const char *pattern, const char *key);

/* Whether a binding with binding_key of an exchange of type type routes a message dead-lettered
 * with routing key key. fanout and headers route everything (headers cannot be evaluated without
 * the message: reported as routed, documented), direct needs equal keys, topic matches. */
int rabbitmq_binding_routes(const char *type, const char *binding_key, const char *key);

/* ---- qrel dlq (dead_letter.c) ---- */

/* The amqp_url key: amqp[s]://host[:port][/vhost] into malloc'd *host and *vhost (port 5672 by
 * default, 5671 for amqps; "/" without a path, the path %-decoded), *tls 1 for amqps. -1 with a
 * reason in why (cap bytes) for a user or password in the URL (they come from the source's
 * username and password_file) or anything else. */
int rabbitmq_amqp_url_parse(const char *url, char **host, int *port, char **vhost, int *tls,
                            char *why, size_t cap);

/* id_field of a dead_letters entry: a dotted JSON key of the body, header:NAME, or
 * property:message_id / property:correlation_id. 0, or -1 with a reason in why. */
int rabbitmq_dlq_id_field_check(const char *id_field, char *why, size_t cap);

/* The work id of m as id_field names it (checked): malloc'd into *out with its length, a
 * header's integer in decimal; NULL when absent or of another type. */
void rabbitmq_dlq_work_id(const amqp_message_t *m, const char *id_field, char **out, size_t *len);

/* An integer field value (any integer kind, or a timestamp) into *out; -1 for any other. */
int rabbitmq_field_int(const amqp_field_value_t *v, int64_t *out);

/* What the headers of a dead letter say. */
struct rabbitmq_death {
    char *queue;            /* malloc'd: the queue it died in (its origin), NULL: no x-death */
    char *reason;           /* malloc'd: rejected, expired, delivery_limit or maxlen */
    int64_t count;          /* that x-death entry's count, -1 when absent */
    double time;            /* its time (unix seconds), 0 when absent */
    int64_t delivery_count; /* x-delivery-count, -1 when absent */
    int64_t replays;        /* the DLQ_STAMP header, 0 when absent or not a whole number */
};
/* Reads the most recent x-death entry whose reason is one above, x-delivery-count and the
 * stamp. Free with rabbitmq_death_free. */
void rabbitmq_death_read(const amqp_basic_properties_t *p, struct rabbitmq_death *out);
void rabbitmq_death_free(struct rabbitmq_death *d);

/* The headers a replay publishes: p's headers (shallow copies, in their order) without x-death,
 * x-first-death-*, x-last-death-*, x-delivery-count and the old stamp, then DLQ_STAMP = stamp
 * (a long). out holds at least p->headers.num_entries + 1 entries; returns how many it filled. */
int rabbitmq_replay_headers(const amqp_basic_properties_t *p, int64_t stamp,
                            amqp_table_entry_t *out);

#endif
